"""The cluster connection as role variables: gpudirect_rdma_kubeconfig, _context, _host, _api_key,
_validate_certs, _ca_cert, _client_cert and _client_key give kubernetes.core's connection options
of the same names to the collection's modules, unless the task (or module_defaults) sets them.

The action plugins of the modules that talk to the cluster are ConnectionAction; without these
variables, the options come from module_defaults or the K8S_AUTH_* environment variables, as with
kubernetes.core.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

PREFIX = "gpudirect_rdma_"
CONNECTION_OPTIONS = (
    "kubeconfig",
    "context",
    "host",
    "api_key",
    "validate_certs",
    "ca_cert",
    "client_cert",
    "client_key",
)


def connection_args(args: dict, task_vars: dict, template) -> dict:
    """args with the connection options the gpudirect_rdma_* variables give and args lack."""
    found = dict(args)
    for option in CONNECTION_OPTIONS:
        variable = PREFIX + option
        if option not in found and task_vars.get(variable) is not None:
            found[option] = template(task_vars[variable])
    return found


class ConnectionAction(ActionBase):
    """Run the module of the task's name with the connection options of the variables."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = connection_args(self._task.args, task_vars, self._templar.template)
        result.update(
            self._execute_module(
                module_name=self._task.resolved_action or self._task.action,
                module_args=args,
                task_vars=task_vars,
            )
        )
        return result
