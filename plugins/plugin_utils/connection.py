"""How the collection's action plugins run their modules (docs/connecting.md).

The connection: gpudirect_rdma_kubeconfig, _context, _host, _api_key, _validate_certs, _ca_cert,
_client_cert and _client_key give kubernetes.core's options of those names to the modules, unless
the task or module_defaults sets them (else the K8S_AUTH_* variables, as with kubernetes.core);
gpudirect_rdma_request_timeout and _progress_interval give the collection's own.

Where: on a local connection without become or async, the module runs in the action's process
(same code, argument spec and result, the task's `environment` applied), without a Python of its
own to start (0.4 s a task); anywhere else it is shipped.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os

from ansible.module_utils.common.arg_spec import ModuleArgumentSpecValidator
from ansible.module_utils.common.json import Direction, get_module_encoder
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpudirect.rdma.plugins.doc_fragments.cluster import (
    ModuleDocFragment as ClusterOptions,
)
from ansible_collections.gpudirect.rdma.plugins.doc_fragments.role_options import (
    ModuleDocFragment as RoleOptions,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import yaml_cache

PREFIX = "gpudirect_rdma_"
# The collection's own options of every module that talks to the cluster (doc_fragments/cluster.py).
CLUSTER_OPTIONS = tuple(yaml_cache.load(ClusterOptions.DOCUMENTATION)["options"])
# kubernetes.core's options that the gpudirect_rdma_<option> variables give, as the roles declare
# them (doc_fragments/role_options.py).
CONNECTION_OPTIONS = tuple(
    option
    for option in (
        name.removeprefix(PREFIX) for name in yaml_cache.load(RoleOptions.DOCUMENTATION)["options"]
    )
    if option not in CLUSTER_OPTIONS
)
COLLECTION = "gpudirect.rdma."
MODULES_PACKAGE = "ansible_collections.gpudirect.rdma.plugins.modules."
# Imported for the modules that talk to the cluster only (a module that writes files,
# manifest_tree, needs none of it).
K8S = "ansible_collections.gpudirect.rdma.plugins.module_utils.k8s."


def preload(module_name: str) -> None:
    """Import the module's code now. Ansible's strategy loads a task's action plugin in its own
    process before it forks the worker that runs the task, so each worker finds the code already
    imported instead of compiling it again (Ansible's collection loader keeps no bytecode: about
    0.05 s for the engine's modules, in every task)."""
    code = importlib.import_module(MODULES_PACKAGE + module_name[len(COLLECTION) :])
    if hasattr(code, "body"):
        importlib.import_module(K8S + "module")


def connection_args(args: dict, task_vars: dict, template) -> dict:
    """args with the connection options (and the request timeout and progress interval) the
    gpudirect_rdma_* variables give and args lack."""
    found = dict(args)
    for option in CONNECTION_OPTIONS + CLUSTER_OPTIONS:
        variable = PREFIX + option
        if option not in found and task_vars.get(variable) is not None:
            found[option] = template(task_vars[variable])
    return found


class Exited(BaseException):
    """A module's end in this process; a BaseException as SystemExit is, past `except Exception`."""

    def __init__(self, result: dict):
        super().__init__(result.get("msg", ""))
        self.result = result


class ModuleHere:
    """What the modules use of AnsibleModule, for a run in the action's process: arguments
    validated by AnsibleModule's validator, a result as the module would print it (JSON, its
    invocation, no_log values masked)."""

    def __init__(
        self,
        name: str,
        argument_spec: dict,
        args: dict,
        check_mode: bool,
        diff: bool,
        progress=None,
    ):
        self.check_mode = check_mode
        # Where the module's progress lines go while it runs (module_utils/k8s/progress.py).
        self.progress = progress
        self._diff = diff
        self._warnings: list[str] = []
        validation = ModuleArgumentSpecValidator(argument_spec).validate(_as_shipped(args))
        self._no_log_values = validation._no_log_values
        self.params = validation.validated_parameters
        if validation.error_messages:
            msg = validation.errors.msg
            if isinstance(validation.errors[0], UnsupportedError):  # worded as AnsibleModule does
                msg = f"Unsupported parameters for ({name}) module: {msg}"
            self.fail_json(msg=msg)

    def warn(self, warning: str) -> None:
        self._warnings.append(warning)

    def exit_json(self, **result):
        result.setdefault("invocation", {"module_args": self.params})
        if self._warnings:
            result["warnings"] = list(self._warnings)
        printed = json.loads(json.dumps(result, default=_jsonable))
        if self._no_log_values:  # else masking would copy the plan and every object for nothing
            printed = remove_values(printed, self._no_log_values)
        raise Exited(printed)

    def fail_json(self, msg: str, **result):
        self.exit_json(**{**result, "failed": True, "msg": msg})


def _display_for(host: str):
    """A progress line as Ansible shows a task's host: `[host] waiting 30s of 600s for ...`."""
    display = Display()
    return lambda line: display.display(f"[{host}] {line}")


def _as_shipped(args: dict) -> dict:
    """The arguments as a shipped module receives them: encoded as Ansible encodes them
    (vaulted values decrypted, no tags on templated strings), decoded into plain data."""
    encoder = get_module_encoder("legacy", Direction.CONTROLLER_TO_MODULE)
    return json.loads(json.dumps(args, cls=encoder))


def _jsonable(value):
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


@contextlib.contextmanager
def _environment(values: dict):
    """os.environ with values, as the task's `environment` would give the module's process."""
    saved = dict(os.environ)
    os.environ.update({key: str(value) for key, value in values.items()})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class ModuleAction(ActionBase):
    """An action plugin that runs one of the collection's modules (_run_module)."""

    TRANSFERS_FILES = False
    _supports_async = True  # async ships the module, which runs as Ansible's async jobs do

    def _code_here(self, module_name: str):
        """The module's argument spec and its run(module), when it may run in this process;
        else None. Two shapes run here: an engine module (OPTIONS, body and maybe before, for
        module_utils/k8s/module.run_module) and a module with ARGUMENT_SPEC and run(module)."""
        local = getattr(self._connection, "transport", None) == "local"
        if not local or self._task.async_val or self._play_context.become:
            return None
        if not module_name.startswith(COLLECTION):
            return None
        code = importlib.import_module(MODULES_PACKAGE + module_name[len(COLLECTION) :])
        if hasattr(code, "body"):
            client = importlib.import_module(K8S + "client")
            module = importlib.import_module(K8S + "module")
            before = getattr(code, "before", None)
            return client.argument_spec(**code.OPTIONS), lambda here: module.run_module(
                code.OPTIONS, code.body, before=before, module=here
            )
        if hasattr(code, "ARGUMENT_SPEC") and hasattr(code, "run"):
            return code.ARGUMENT_SPEC, code.run
        return None

    def _run_module(self, module_name: str, args: dict, task_vars: dict) -> dict:
        """The module's result: run in this process where it may (see the top), else shipped."""
        code = self._code_here(module_name)
        if code is None:
            wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
            result = self._execute_module(
                module_name=module_name,
                module_args=args,
                task_vars=task_vars,
                wrap_async=wrap_async,
            )
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        argument_spec, run = code
        environment: dict = {}
        self._compute_environment_string(environment)
        try:
            with _environment(environment):
                run(
                    ModuleHere(
                        module_name,
                        argument_spec,
                        args,
                        check_mode=bool(self._task.check_mode),
                        diff=bool(self._task.diff),
                        progress=_display_for(task_vars.get("inventory_hostname", "localhost")),
                    )
                )
        except Exited as exited:
            return exited.result
        raise AssertionError(f"{module_name} ended without exit_json or fail_json")


class TaskAction(ModuleAction):
    """Run the module of the task's name with the task's arguments (_arguments): as they are for
    a module that does not talk to the cluster (manifest_tree)."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        module_name = self._task.resolved_action or self._task.action
        result.update(self._run_module(module_name, self._arguments(task_vars), task_vars))
        return result

    def _arguments(self, task_vars: dict) -> dict:
        return self._task.args


class ConnectionAction(TaskAction):
    """Run the module of the task's name with the connection options of the variables."""

    def _arguments(self, task_vars: dict) -> dict:
        return connection_args(self._task.args, task_vars, self._templar.template)
