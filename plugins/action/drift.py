"""gpudirect.rdma.drift: what the drift module needs, from the play's variables.

The plan (gpudirect_rdma_plan, else planned from the inventory: every input validated before
anything is read; a bad value fails with bad_input set), every step's settings from the role
variables it declares, and the connection options (plugin_utils/connection.py), as the step
action gives them. The module reads only.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    connection_args,
    preload,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan_action import (
    PlanAction,
    SettingError,
)

MODULE = "gpudirect.rdma.drift"
preload(MODULE)


class ActionModule(PlanAction):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        try:
            plan = self._plan(args, task_vars)
            settings = self._step_settings(list(table.NAMES), task_vars)
        except (PlanError, SettingError) as error:
            return self._bad_input(result, error)
        options = {
            **connection_args(args, task_vars, self._templar.template),
            "plan": plan,
            "settings": {**settings, **(args.get("settings") or {})},
        }
        ran = self._run_module(MODULE, options, task_vars)
        result.update({key: value for key, value in ran.items() if key != "invocation"})
        return result
