"""gpudirect.rdma.gates: what must hold on the cluster once a step of the plan is applied."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gates
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The gates of one step of a GPUDirect RDMA plan
description:
  - The gates that must hold once a component of the plan is applied, in the format of the
    O(gpudirect.rdma.wait#module:gates) option. The roles wait on them; the converged check of
    C(site.yml) (M(gpudirect.rdma.converged)) observes all of them.
  - C(nfd), nodes carry NFD's NVIDIA GPU and NIC labels; C(network-operator), the
    NicClusterPolicy is ready; C(gpu-operator), the ClusterPolicy is ready; C(machine-config),
    the MachineConfigPool renders the plan's MachineConfigs (none when the plan has none and
    none were removed) and reports Updated; the plan's method component, every selected node
    advertises each rail's resource, each rail's NetworkAttachmentDefinition exists and, for
    C(sriov-legacy), every SriovNetworkNodeState has synced (C(Failed) stops the wait).
  - Another method's component, or C(sriov-network-operator), has no gates.
  - Nothing is read from or written to a cluster.
options:
  _input:
    description: The plan, as returned by M(gpudirect.rdma.plan) in its C(plan) key.
    type: dict
    required: true
  component:
    description: The step.
    type: str
    required: true
    choices: [nfd, sriov-network-operator, network-operator, gpu-operator, machine-config,
              shared-device, host-device, sriov-legacy]
  min_nodes:
    description: For C(nfd), how many nodes must carry the labels.
    type: int
    default: 1
  removed_machine_configs:
    description: For C(machine-config), names of MachineConfigs just removed, which the pool
      must no longer render.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Wait for the NicClusterPolicy
  gpudirect.rdma.wait:
    gates: "{{ rdma.plan | gpudirect.rdma.gates('network-operator') }}"

- name: Wait for two labelled nodes
  gpudirect.rdma.wait:
    gates: "{{ rdma.plan | gpudirect.rdma.gates('nfd', min_nodes=2) }}"
"""

RETURN = r"""
_value:
  description: Gates with the options of O(gpudirect.rdma.wait#module:gates).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.gates import gates_for  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402


def gates(plan, component, min_nodes=None, removed_machine_configs=None):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.gates",
        {
            "_input": plan,
            "component": component,
            "min_nodes": min_nodes,
            "removed_machine_configs": removed_machine_configs,
        },
    )
    if "rails" not in args["_input"] or "method" not in args["_input"]:
        raise AnsibleFilterError(
            "gpudirect.rdma.gates: expected the plan returned by gpudirect.rdma.plan "
            f"(with method and rails); got a dict with keys {sorted(args['_input'])}"
        )
    if args["min_nodes"] < 1:
        raise AnsibleFilterError(
            f"gpudirect.rdma.gates: min_nodes: got {args['min_nodes']}; expected 1 or more"
        )
    return gates_for(
        args["_input"],
        args["component"],
        min_nodes=args["min_nodes"],
        removed_machine_configs=args["removed_machine_configs"],
    )


class FilterModule:
    def filters(self):
        return {"gates": gates}
