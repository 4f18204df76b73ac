"""What every module of the collection that talks to the cluster shares: kubernetes.core's
connection options, the connection itself, and one way to end on an error.

    def main():
        run_module({"objects": {...}}, body, supports_check_mode=True)

    def body(module, cluster, done):
        done["results"] = applier.results   # reported as they stand if the body fails
        ...
        return {"changed": ..., ...}          # exit_json(**result)

body raises ModuleFailure for a failure of its own (its message and result entries). A refused
request (403), an API server that does not answer, and an API answer nothing handled end the
module with a message naming the request and the server (client.failing_clearly) instead of a
traceback; `done` is reported with either.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    Cluster,
    argument_spec,
    failing_clearly,
)


class ModuleFailure(Exception):
    """End the module with msg and these result entries."""

    def __init__(self, msg: str, **result):
        super().__init__(msg)
        self.result = result


def run_module(options: dict, body, **module_kwargs) -> None:
    """Make the module (kubernetes.core's connection options plus options), connect, run
    body(module, cluster, done) and exit with the result it returns."""
    module = AnsibleModule(argument_spec=argument_spec(**options), **module_kwargs)
    done: dict = {}
    with failing_clearly(module):
        cluster = Cluster(module)
    try:
        with failing_clearly(module, cluster, so_far=lambda: dict(done)):
            result = body(module, cluster, done)
    except ModuleFailure as failure:
        module.fail_json(msg=str(failure), **{**done, **failure.result})
    module.exit_json(**result)
