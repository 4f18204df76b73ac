#!/usr/bin/python
"""gpudirect.rdma.read: read objects of one kind, or pods' logs, in the play's process."""

from __future__ import annotations

DOCUMENTATION = r"""
module: read
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Read objects of one kind, or the logs of pods
description:
  - Lists the objects of O(kind) (in O(namespace), matching O(label_selectors)), or reads the log
    of each pod of O(logs), and returns them; writes nothing.
  - What the verify role reads (its nodes, its test pods and their logs, the NicDevices, the
    Subscriptions) with the connection of the C(gpudirect_rdma_*) variables. On the playbooks'
    local connection it runs in the action's process, as the collection's other modules do, where
    M(kubernetes.core.k8s_info) and M(kubernetes.core.k8s_log) start a Python and import the
    kubernetes client for every read (about 0.4 s each).
  - A kind the API server does not serve reads as no objects; a pod that does not exist fails,
    naming it.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: Reads in check mode too; it writes nothing in any mode.
  diff_mode:
    support: none
    description: Reads only.
options:
  api_version:
    description: apiVersion of O(kind).
    type: str
    default: v1
  kind:
    description: Kind of the objects to list. One of O(kind) and O(logs).
    type: str
  namespace:
    description:
      - Namespace of the objects (all namespaces when omitted, for a namespaced kind), or of the
        pods of O(logs) (required with O(logs)).
    type: str
  label_selectors:
    description: Label selector requirements the objects must all match (C(key=value)).
    type: list
    elements: str
    default: []
  logs:
    description:
      - Names of pods in O(namespace) whose log to read (each pod's only container, as
        C(oc logs <pod>) reads it). One of O(kind) and O(logs).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Read the GPU nodes
  gpudirect.rdma.read:
    kind: Node
    label_selectors: [feature.node.kubernetes.io/pci-10de.present=true]
  register: gpu_nodes

- name: Read two pods' logs
  gpudirect.rdma.read:
    namespace: gpudirect-rdma
    logs: [verify-server-worker-0, verify-client-worker-1]
  register: test_logs
"""

RETURN = r"""
resources:
  description: The objects of O(kind), as the API server returns them (empty with O(logs)).
  returned: always
  type: list
  elements: dict
logs:
  description: Each pod's log by pod name (empty with O(kind)).
  returned: always
  type: dict
  sample: {"verify-server-worker-0": "RDMA_Write BW Test\n..."}
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    ModuleFailure,
    run_module,
)

OPTIONS = {
    "api_version": {"type": "str", "default": "v1"},
    "kind": {"type": "str"},
    "namespace": {"type": "str"},
    "label_selectors": {"type": "list", "elements": "str", "default": []},
    "logs": {"type": "list", "elements": "str"},
}


def before(module) -> None:
    params = module.params
    if (params["kind"] is None) == (params["logs"] is None):
        raise ModuleFailure(
            f"kind: got {params['kind']!r} and logs: got {params['logs']!r}; expected exactly "
            "one of them (the kind of objects to list, or the pods whose logs to read)"
        )
    if params["logs"] is not None and not params["namespace"]:
        raise ModuleFailure("namespace: got none; expected the namespace of the pods of logs")


def body(module, cluster, done) -> dict:
    params = module.params
    if params["logs"] is not None:
        logs = {name: cluster.log(name, params["namespace"]) for name in params["logs"]}
        return {"changed": False, "resources": [], "logs": logs}
    resources = list_if_served(
        cluster,
        params["api_version"],
        params["kind"],
        params["namespace"],
        ",".join(params["label_selectors"]) or None,
    )
    if resources is None:  # not served: its operator is not installed, so there are none
        resources = []
    return {"changed": False, "resources": resources, "logs": {}}


def main():
    run_module(OPTIONS, body, before=before, supports_check_mode=True)


if __name__ == "__main__":
    main()
