"""gpudirect.rdma.plan: read the inputs and the settings, validate, return the plan."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import DEFAULTS, OPTIONS
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.variables import checked_inventory


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # The task's own options: Ansible's validator says which are unknown and checks scope;
        # the values of the others are checked with the inventory's, by the plan.
        spec = {name: {"type": "raw"} for name in DEFAULTS}
        spec["scope"] = {key: OPTIONS["scope"][key] for key in ("type", "choices", "default")}
        scope = self.validate_argument_spec(spec)[1]["scope"]
        overrides = {name: value for name, value in self._task.args.items() if name != "scope"}
        try:
            checked = checked_inventory(self._templar, task_vars or {}, overrides, scope)
        except PlanError as error:
            result.update(failed=True, msg=str(error), variable=error.variable)
            return result
        result.update(changed=False, **checked)
        if checked.get("plan", {}).get("warnings"):
            result["warnings"] = list(checked["plan"]["warnings"])
        return result
