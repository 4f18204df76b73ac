"""gpudirect.rdma.manifest_tree: the module, run in the action's process on a local connection
(plugin_utils/connection.py), its result without the files it was given."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import ModuleAction


class ActionModule(ModuleAction):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        module_name = self._task.resolved_action or self._task.action
        ran = self._run_module(module_name, dict(self._task.args), task_vars or {})
        # Without its invocation, which would repeat every file written (1 MB at 1,000 nodes).
        result.update({key: value for key, value in ran.items() if key != "invocation"})
        return result
