"""What the actions of the modules that run the plan share: the plan, the steps' settings and the
run's preflight verdict from the play's variables.

- the plan: gpudirect_rdma_plan when the play has one (site.yml and upgrade.yml plan once), else
  the plan of the gpudirect_rdma_* variables (a role used alone);
- the preflight verdict of the run so far (gpudirect_rdma_preflight), so that the cluster is
  judged once a run; a module's new verdict is set back as that fact.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import plain
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import ModuleAction
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.variables import (
    checked_inventory,
    templated,
)

# The run's preflight verdict: set by each step task, read by the next.
PREFLIGHT_FACT = "gpudirect_rdma_preflight"
TYPES = {"int": int, "float": float}


class SettingError(ValueError):
    pass


def check_setting(setting: table.Setting, value):
    """value as the step's setting declares it, or SettingError naming its variable."""
    kind, low = TYPES[setting.type], setting.minimum
    expected = (
        f"a whole number of {low} or more"
        if kind is int
        else f"a number of {setting.unit} of {low} or more"
    )
    try:
        number = kind(str(value).strip()) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or number < low:
        raise SettingError(f"{setting.variable}: got {value!r}; expected {expected}")
    return number


class PlanAction(ModuleAction):
    def _var(self, task_vars: dict, name: str, default=None):
        if name not in task_vars:
            return default
        return templated(self._templar, task_vars[name])

    def _plan(self, args: dict, task_vars: dict) -> dict:
        """The task's plan, else the play's, else the plan of the inventory (PlanError)."""
        return (
            self._given_plan(args, task_vars) or checked_inventory(self._templar, task_vars)["plan"]
        )

    def _given_plan(self, args: dict, task_vars: dict) -> dict | None:
        """The task's plan, else the play's, else None."""
        if args.get("plan"):
            return plain(args["plan"])
        plan = self._var(task_vars, "gpudirect_rdma_plan")
        return plain(plan) if plan else None

    def _step_settings(self, names: list[str], task_vars: dict) -> dict:
        """Each step's settings from the role variables it declares (steps.base.Setting), by the
        engine's names; SettingError names a bad one's variable."""
        found = {}
        for name in names:
            values = {}
            for setting in table.step(name).settings:
                if setting.variable in task_vars:
                    value = self._var(task_vars, setting.variable)
                    if value is not None:
                        values[setting.key] = check_setting(setting, value)
            found[name] = values
        return found

    @staticmethod
    def _bad_input(result: dict, error: Exception) -> dict:
        """result failed with error's message before anything was read (bad_input, so that
        site.yml gathers no diagnostics), naming the variable of a PlanError."""
        result.update(failed=True, msg=str(error), bad_input=True)
        if isinstance(error, PlanError):
            result["variable"] = error.variable
        return result

    def _verdict(self, args: dict, task_vars: dict):
        return args.get("preflight", self._var(task_vars, PREFLIGHT_FACT))

    @staticmethod
    def _keep_verdict(result: dict, ran: dict) -> None:
        """The module's result without its arguments; its verdict as the play's fact."""
        result.update({key: value for key, value in ran.items() if key != "invocation"})
        if ran.get("preflight"):
            result["ansible_facts"] = {PREFLIGHT_FACT: ran["preflight"]}
