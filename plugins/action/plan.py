"""gpudirect.rdma.plan: read the gpudirect_rdma_* variables, validate, return the plan."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (
    DEFAULTS,
    PlanError,
    build_plan,
    unknown_variables,
    variable,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        unknown = sorted(set(args) - set(DEFAULTS))
        if unknown:
            result.update(
                failed=True,
                msg=(
                    f"gpudirect.rdma.plan: unknown option {unknown[0]}; "
                    f"known options: {', '.join(DEFAULTS)}"
                ),
            )
            return result

        misspelt = unknown_variables(task_vars)
        if misspelt:
            name, meant = misspelt[0]
            result.update(
                failed=True,
                msg=(f"{name}: not a variable of gpudirect.rdma; did you mean {meant}?"),
            )
            return result

        inputs = {}
        for name in DEFAULTS:
            if name in args:
                inputs[name] = args[name]
            elif variable(name) in task_vars:
                inputs[name] = self._templar.template(task_vars[variable(name)])
        try:
            plan = build_plan(inputs)
        except PlanError as error:
            result.update(failed=True, msg=str(error), variable=error.variable)
            return result
        result.update(changed=False, plan=plan)
        return result
