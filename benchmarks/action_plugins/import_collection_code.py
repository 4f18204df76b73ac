"""For benchmarks/cluster.py's floor of the converged re-run: an action that does nothing but
import the collection's code as site.yml's converged run imports it (the step action plugin, and
through it the plan, the step table, the builders and the engine): what that import costs, from
Python's bytecode cache once it is written (plugins/module_utils/bytecode_cache.py)."""

from __future__ import annotations

import importlib

from ansible.plugins.action import ActionBase

for plugin in ("step",):
    importlib.import_module(f"ansible_collections.gpudirect.rdma.plugins.action.{plugin}")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return {"changed": False}
