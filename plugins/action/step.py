"""gpudirect.rdma.step: what the step module needs, from the play's variables.

A role's task names its step and nothing else; this action gives the module:
- the plan: gpudirect_rdma_plan when the play has one (site.yml plans once), else the plan of
  the gpudirect_rdma_* variables (a role used alone);
- each step's settings, under the engine's names, from the role variables the step table names
  (steps.Step.settings): the variable when set, else the default in the role's
  defaults/main.yml, the one place it is written; bad values fail here, naming the variable;
- gpudirect_rdma_take_over, and the registry login gpudirect_rdma_image_registry_username and
  _password when the plan has a pull Secret;
- the connection options given to the task (or by module_defaults), else those of the
  gpudirect_rdma_kubeconfig, _context, ... variables (plugin_utils/connection.py).
"""

from __future__ import annotations

from pathlib import Path

from ansible.module_utils.common.yaml import yaml_load

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import plain
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.connection import (
    ModuleAction,
    connection_args,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.variables import (
    checked_inventory,
    templated,
)

ROLES = Path(__file__).resolve().parents[2] / "roles"
MODULE = "gpudirect.rdma.step"
# The engine's settings: (type, lowest value, what it is).
SETTING_KINDS = {
    "install_timeout": (int, 1, "seconds"),
    "ready_timeout": (int, 1, "seconds"),
    "stable_seconds": (float, 0, "seconds"),
    "min_nodes": (int, 1, "nodes"),
}


class SettingError(ValueError):
    pass


def check_setting(variable: str, key: str, value):
    """value as the engine's setting key wants it, or SettingError naming variable."""
    kind, low, unit = SETTING_KINDS[key]
    expected = (
        f"a whole number of {low} or more"
        if kind is int
        else f"a number of {unit} of {low} or more"
    )
    try:
        number = kind(str(value).strip()) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or number < low:
        raise SettingError(f"{variable}: got {value!r}; expected {expected}")
    return number


def role_defaults(role: str) -> dict:
    path = ROLES / role / "defaults" / "main.yml"
    return (yaml_load(path.read_text()) or {}) if path.exists() else {}


class ActionModule(ModuleAction):
    def _var(self, task_vars: dict, name: str, default=None):
        if name not in task_vars:
            return default
        return templated(self._templar, task_vars[name])

    def _plan(self, task_vars: dict) -> dict:
        plan = self._var(task_vars, "gpudirect_rdma_plan")
        if plan:
            return plain(plan)
        return checked_inventory(self._templar, task_vars)["plan"]

    def _settings(self, plan: dict, names: list[str], task_vars: dict) -> dict:
        found = {}
        for name in names:
            step = table.step(name)
            role = step.role
            defaults = None
            values = {}
            for key, variable in step.settings.items():
                if variable in task_vars:
                    value = self._var(task_vars, variable)
                else:
                    defaults = role_defaults(role) if defaults is None else defaults
                    value = self._templar.template(defaults.get(variable))
                if value is not None:
                    values[key] = check_setting(variable, key, value)
            found[name] = values
        return found

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        name = args.get("name")
        if name not in ("all", *table.NAMES):
            result.update(
                failed=True,
                msg=f"name: got {name!r}; expected all or one of {', '.join(table.NAMES)}",
            )
            return result
        names = list(table.NAMES) if name == "all" else [name]
        try:
            plan = plain(args["plan"]) if args.get("plan") else self._plan(task_vars)
            settings = self._settings(plan, names, task_vars)
        except (PlanError, SettingError) as error:
            result.update(failed=True, msg=str(error))
            return result
        options = {
            **connection_args(args, task_vars, self._templar.template),
            "plan": plan,
            "settings": {**settings, **(args.get("settings") or {})},
            "take_over": args.get(
                "take_over", self._var(task_vars, "gpudirect_rdma_take_over", False)
            ),
        }
        if plan.get("image_registry_secret") and "registry_login" not in args:
            login = {
                key: self._var(task_vars, f"gpudirect_rdma_image_registry_{key}")
                for key in ("username", "password")
            }
            if not all(login.values()):
                result.update(
                    failed=True,
                    msg=(
                        "gpudirect_rdma_image_registry_username, "
                        "gpudirect_rdma_image_registry_password: the plan has a pull Secret "
                        f"({plan['image_registry_secret']['name']}); expected its login, got none"
                    ),
                )
                return result
            options["registry_login"] = login
        ran = self._run_module(MODULE, options, task_vars)
        # The module's result without its arguments (the whole plan and the login).
        result.update({key: value for key, value in ran.items() if key != "invocation"})
        return result
