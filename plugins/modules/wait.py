#!/usr/bin/python
"""gpudirect.rdma.wait: wait on gates, following status as it changes."""

from __future__ import annotations

DOCUMENTATION = r"""
module: wait
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Wait until objects reach a state (CSV Succeeded, policy ready, node resources)
description:
  - Polls every gate of O(gates) until all are met, 0.2 s after the first read, then with the
    pause doubling up to O(interval) (about once a second), so the play moves on within a second
    of the last status change, whatever the timeout, and a status that follows the previous
    step's write at once is seen at once.
  - Fails at once when a watched field reaches a value in C(fail_on) (a CSV in phase C(Failed)),
    and after O(timeout) seconds otherwise; the message names the gate, what was expected, the
    last state seen and where to look.
  - With O(stable_for), the gates must hold together in every read for that many seconds, so an
    operator whose status flaps between ready and not ready does not pass on a ready moment, and
    the timeout message says how long the gates held and what was seen when they last did not.
  - An API server that stops answering ends the wait at once with a message naming the server
    and the request; run the playbook again once it answers.
  - In check mode nothing was applied, so nothing is awaited; the module returns unchanged.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
  - gpudirect.rdma.gates
attributes:
  check_mode:
    support: full
    description: Waits for nothing.
  diff_mode:
    support: none
    description: Reads only.
options:
  timeout:
    description: Seconds to wait for all gates.
    type: int
    default: 600
  interval:
    description: Seconds between two reads, at most (the first pauses are shorter).
    type: float
    default: 1.0
  stable_for:
    description:
      - Seconds for which every gate must stay met, read after read, before the wait ends; a read
        with a gate not met starts the count again. C(0) ends the wait at the first read where all
        gates are met.
      - Each converged re-run waits this long too, so it is off by default.
    type: float
    default: 0
"""

EXAMPLES = r"""
- name: Wait for the Network Operator's driver
  gpudirect.rdma.wait:
    timeout: 1800
    gates:
      - gate: NicClusterPolicy ready
        api_version: mellanox.com/v1alpha1
        kind: NicClusterPolicy
        name: nic-cluster-policy
        path: status.state
        equals: ready
        hint: oc -n nvidia-network-operator get pods

- name: Wait until every GPU node advertises the shared RDMA device
  gpudirect.rdma.wait:
    gates:
      - gate: nodes advertise rdma/rdma_shared_device_eth
        api_version: v1
        kind: Node
        label_selector: feature.node.kubernetes.io/pci-15b3.present=true
        path: [status, allocatable, rdma/rdma_shared_device_eth]
        at_least: 1
"""

RETURN = r"""
seconds:
  description: Seconds each gate took to be met, by gate name.
  returned: always
  type: dict
  sample: {"NicClusterPolicy ready": 12.0}
gate:
  description:
    - On failure, the gate that was not met, as its options name it, with what was expected, what
      was seen at the last read and the objects read then (C(ansible_failed_result.gate) in a
      C(rescue); the M(gpudirect.rdma.diagnostics) module gathers exactly those objects).
  returned: failure
  type: dict
  contains:
    gate:
      description: Name of the gate.
      type: str
      sample: NicClusterPolicy ready
    api_version:
      description: apiVersion of its objects.
      type: str
      sample: mellanox.com/v1alpha1
    kind:
      description: Kind of its objects.
      type: str
      sample: NicClusterPolicy
    name:
      description: The one object's name, or null for a label selector.
      type: str
      sample: nic-cluster-policy
    namespace:
      description: Namespace of the objects (null when cluster-scoped or all namespaces).
      type: str
    label_selector:
      description: Label selector of the objects, or null for one object by name.
      type: str
    path:
      description: The field read, dotted.
      type: str
      sample: status.state
    expected:
      description: What the field had to be.
      type: str
      sample: "'ready'"
    seen:
      description: What the last read found.
      type: str
      sample: NicClusterPolicy nic-cluster-policy status.state is 'notReady'
    objects:
      description: apiVersion, kind, name (and namespace) of every object read at the last poll; empty when none existed.
      type: list
      elements: dict
      sample: [{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "name": "nic-cluster-policy"}]
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    ModuleFailure,
    progress_of,
    run_module,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (  # noqa: E402
    GATE_OPTIONS,
    incomplete_gates,
    to_gate,
    wait_for,
)

OPTIONS = {
    "gates": {"type": "list", "elements": "dict", "required": True, "options": GATE_OPTIONS},
    "timeout": {"type": "int", "default": 600},
    "interval": {"type": "float", "default": 1.0},
    "stable_for": {"type": "float", "default": 0},
}


def before(module) -> dict | None:
    incomplete = incomplete_gates([to_gate(spec) for spec in module.params["gates"]])
    if incomplete:
        raise ModuleFailure(incomplete)
    if module.params["stable_for"] < 0:
        raise ModuleFailure(
            f"stable_for: got {module.params['stable_for']}; expected 0 or more seconds"
        )
    if module.check_mode:
        return {"changed": False, "seconds": {}, "msg": "check mode: nothing to wait for"}
    return None


def body(module, cluster, done) -> dict:
    params = module.params
    seconds = wait_for(
        cluster,
        [to_gate(spec) for spec in params["gates"]],
        params["timeout"],
        params["interval"],
        stable_for=params["stable_for"],
        progress=progress_of(module),
    )
    return {"changed": False, "seconds": seconds}


def main():
    run_module(OPTIONS, body, before=before, supports_check_mode=True)


if __name__ == "__main__":
    main()
