"""gpudirect.rdma.plan: read the gpudirect_rdma_* variables, validate, return the plan."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (
    DEFAULTS,
    PREFIX,
    SETTINGS,
    PlanError,
    check_inventory,
    variable,
)

TASK_ONLY = ("scope",)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        unknown = sorted(set(args) - set(DEFAULTS) - set(TASK_ONLY))
        if unknown:
            result.update(
                failed=True,
                msg=(
                    f"gpudirect.rdma.plan: unknown option {unknown[0]}; "
                    f"known options: {', '.join((*DEFAULTS, *TASK_ONLY))}"
                ),
            )
            return result
        scope = args.pop("scope", "all")

        # Only the collection's own variables are templated; the others are named, for the
        # check of misspelt names.
        readable = {variable(name) for name in (*DEFAULTS, *SETTINGS)}
        variables = {
            name: self._templar.template(value) if name in readable else None
            for name, value in task_vars.items()
            if name.startswith(PREFIX)
        }
        try:
            checked = check_inventory(variables, overrides=args, scope=scope)
        except PlanError as error:
            result.update(failed=True, msg=str(error), variable=error.variable)
            return result
        result.update(changed=False, **checked)
        return result
