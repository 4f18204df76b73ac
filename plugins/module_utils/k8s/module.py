"""What every module of the collection that talks to the cluster shares: kubernetes.core's
connection options, the connection, and one way to end (run_module: a module's main() is
`run_module(OPTIONS, body)`, body(module, cluster, done) returns the result, `done` holds what
is reported if it fails). The engine's own failures (a gate, a foreign object, a refusal, a
preflight error, OLM, a kind not served, a deletion that does not end, an upgrade with no way)
end the module with their message and what they carry; a 403, a silent API server or an
unhandled API answer end it with the request and the server (client.failing_clearly), never a
traceback.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    ForeignObjects,
    Refused,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    Cluster,
    NotServed,
    argument_spec,
    failing_clearly,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import PreflightFailed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import OlmError
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import Progress
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import GateError
from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import UpgradeRefused


class ModuleFailure(Exception):
    """End the module with msg and these result entries."""

    def __init__(self, msg: str, **result):
        super().__init__(msg)
        self.result = result


def progress_of(module) -> Progress:
    """Where the module's long waits are told (k8s.progress): the display, when the module runs
    in the action's process (plugin_utils/connection.py gives it `progress`), every
    progress_interval seconds (0: never); nowhere for a shipped module."""
    return Progress(getattr(module, "progress", None), every=module.params.get("progress_interval"))


def say(module, line: str) -> None:
    """A line for the user now: under the task when the module runs in the action's process,
    else a warning of its result (a shipped module prints nothing else)."""
    emit = getattr(module, "progress", None)
    if emit:
        emit(line)
    else:
        module.warn(line)


def reported(error: Exception) -> dict | None:
    """What a failure the engine raises on purpose adds to the module's result; None for any
    other error."""
    if isinstance(error, ModuleFailure):
        return error.result
    if isinstance(error, GateError):
        return {"gate": error.report()}
    if isinstance(error, ForeignObjects):
        return {"foreign": error.names}
    if isinstance(error, PreflightFailed):
        # The message holds the summary already: once is enough in the task's output.
        return {"findings": error.findings}
    if isinstance(error, (Refused, OlmError, NotServed, TimeoutError, UpgradeRefused)):
        return {}
    return None


def run_module(options: dict, body, before=None, module=None, **module_kwargs) -> None:
    """Make the module (kubernetes.core's connection options plus options), run before(module)
    (checks of its options that need no cluster; a result it returns ends the module there),
    connect, run body(module, cluster, done) and exit with the result it returns. module, when
    given, stands in for the AnsibleModule (the action plugins' run in their own process,
    plugin_utils/connection.py)."""
    if module is None:
        module = AnsibleModule(argument_spec=argument_spec(**options), **module_kwargs)
    done: dict = {}
    try:
        early = before(module) if before else None
        if early is not None:
            module.exit_json(**early)
        with failing_clearly(module):
            cluster = Cluster(module)
        with failing_clearly(module, cluster, so_far=lambda: dict(done)):
            result = body(module, cluster, done)
    except Exception as error:
        extra = reported(error)
        if extra is None:
            raise
        module.fail_json(msg=str(error), **{**done, **extra})
    module.exit_json(**result)
