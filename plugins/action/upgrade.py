"""gpudirect.rdma.upgrade: what the upgrade module needs, from the play's variables: the plan and
the run's preflight verdict (plugin_utils/plan_action.py; the module's verdict is set back as
gpudirect_rdma_preflight), gpudirect_rdma_take_over, the release data's upgrade graphs
(releases.json upgrade_graphs) and the connection options (plugin_utils/connection.py)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    connection_args,
    preload,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan_action import PlanAction
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import UPGRADE_GRAPHS

MODULE = "gpudirect.rdma.upgrade"
preload(MODULE)


class ActionModule(PlanAction):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        try:
            plan = self._plan(args, task_vars)
        except PlanError as error:
            result.update(failed=True, msg=str(error))
            return result
        options = {
            **args,
            **connection_args(args, task_vars, self._templar.template),
            "plan": plan,
            "graphs": args.get("graphs") or UPGRADE_GRAPHS,
            "take_over": args.get(
                "take_over", self._var(task_vars, "gpudirect_rdma_take_over", False)
            ),
            "preflight": self._verdict(args, task_vars),
        }
        self._keep_verdict(result, self._run_module(MODULE, options, task_vars))
        return result
