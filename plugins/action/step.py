"""gpudirect.rdma.step: what the step module needs, from the play's variables.

A role's task names the role (every step of the table the role runs) or one step; this action
gives the module:
- the plan and the preflight verdict of the run so far, as every action of a module that runs
  the plan gives them (plugin_utils/plan_action.py). Where the play has no plan yet, the action
  plans from the inventory (every input and setting validated, as gpudirect.rdma.plan does) and
  returns it as `plan` unless the cluster already is as planned, with the plan's warnings, so
  that site.yml's first task both plans and checks; a bad value fails with `bad_input` set,
  before anything is read or written;
- each step's settings, under the engine's names, from the role variables the step declares
  (steps.base.Setting): the variable when set, else its declared default (which
  roles/<role>/defaults/main.yml repeats, written from it by make docs); bad values fail here,
  naming the variable;
- gpudirect_rdma_take_over, and the registry login gpudirect_rdma_image_registry_username and
  _password when the plan has a pull Secret;
- the connection options given to the task (or by module_defaults), else those of the
  gpudirect_rdma_kubeconfig, _context, ... variables (plugin_utils/connection.py).
The run of the whole table (name all) says its one-line message under the task.
"""

from __future__ import annotations

from ansible.utils.display import Display

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
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.variables import checked_inventory

MODULE = "gpudirect.rdma.step"
preload(MODULE)


class ActionModule(PlanAction):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        try:
            names = table.selected(args.get("name"), args.get("role"))
            given = self._given_plan(args, task_vars)
            plan = given or checked_inventory(self._templar, task_vars)["plan"]
            settings = self._step_settings(names, task_vars)
        except (PlanError, SettingError, ValueError) as error:
            return self._bad_input(result, error)
        options = {
            **{key: args[key] for key in ("name", "role") if args.get(key) is not None},
            **connection_args(args, task_vars, self._templar.template),
            "plan": plan,
            "settings": {**settings, **(args.get("settings") or {})},
            "take_over": args.get(
                "take_over", self._var(task_vars, "gpudirect_rdma_take_over", False)
            ),
            "preflight": self._verdict(args, task_vars),
        }
        if plan.get("image_registry_secret") and "registry_login" not in args:
            login = {
                key: self._var(task_vars, f"gpudirect_rdma_image_registry_{key}")
                for key in ("username", "password")
            }
            if not all(login.values()):
                result.update(
                    failed=True,
                    bad_input=True,
                    msg=(
                        "gpudirect_rdma_image_registry_username, "
                        "gpudirect_rdma_image_registry_password: the plan has a pull Secret "
                        f"({plan['image_registry_secret']['name']}); expected its login, got none"
                    ),
                )
                return result
            options["registry_login"] = login
        ran = self._run_module(MODULE, options, task_vars)
        # Without its arguments (the whole plan and the login).
        self._keep_verdict(result, ran)
        # The plan for the roles that run next (site.yml keeps it as a fact), and for the
        # diagnostics of a failure; a converged run ends here and carries none (0.5 MB at
        # 1,000 nodes x 8 rails).
        if not given and not ran.get("converged"):
            result["plan"] = plan
        if not given and plan.get("warnings"):
            result["warnings"] = [*plan["warnings"], *(ran.get("warnings") or [])]
        if args.get("name") == "all" and ran.get("msg"):
            host = task_vars.get("inventory_hostname", "localhost")
            Display().display(f"[{host}] {ran['msg']}")
        return result
