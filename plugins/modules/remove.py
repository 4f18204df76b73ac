#!/usr/bin/python
"""gpudirect.rdma.remove: remove the collection's objects, one stage at a time, and wait."""

from __future__ import annotations

DOCUMENTATION = r"""
module: remove
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Remove the collection's objects of one or more stages and wait until they are gone
description:
  - Deletes the objects of each stage in O(stages), in that order, that carry the label
    C(app.kubernetes.io/managed-by=gpudirect.rdma) (and match O(label_selector)); objects of the
    same kinds without that label belong to somebody else and stay.
  - Each stage's objects are deleted together, then the module waits until every one is gone
    before the next stage, so an operator that still runs cleans up after its operands.
  - "Stages, in uninstall order (the reverse of the steps of M(gpudirect.rdma.step)):
    C(test-pods) (verify.yml's Pods, the NCCL test's Service and its SSH key Secret, read by its
    name where the others are, and the NCCL settings' ConfigMaps); C(sriov-legacy) (the SR-IOV networks and node
    policies, then, when node policies went, the SR-IOV node states synced again, their VFs
    removed); C(host-device) (HostDeviceNetworks, IPPools); C(shared-device) (MacvlanNetworks,
    IPoIBNetworks, IPPools); C(gpu-operator) (ClusterPolicy); C(nic-configuration)
    (NicConfigurationTemplate; see O(reset)); C(machine-config) (MachineConfig,
    then every MachineConfigPool rendered without them and updated: their nodes reboot);
    C(nic-node-policies) (the node groups' NicNodePolicies);
    C(network-operator) (NicClusterPolicy and the registry pull Secret);
    C(maintenance-operator) (MaintenanceOperatorConfig);
    C(sriov-network-operator) (SriovOperatorConfig); C(nfd) (NodeFeatureDiscovery);
    C(operators) (for each operator in the same order: its Subscription, then the
    ClusterServiceVersions it installed, then its OperatorGroup); C(namespaces) (Namespace)."
  - "C(operands) stands for C(test-pods) and every step's stage but C(machine-config), in that
    order: uninstall removes the MachineConfigs only when asked."
  - "C(operators): OLM leaves an operator's ClusterServiceVersion behind when its Subscription
    goes, so the CSVs the Subscriptions name, and those OLM installed under the collection's
    OperatorGroup (annotation C(olm.operatorGroup)), are deleted after the Subscriptions."
  - "C(namespaces): a Namespace that existed before the collection adopted it (annotation
    C(gpudirect.rdma/adopted)) is kept, and so is one that holds objects of the managed kinds
    (other than Pods) that the collection did not create, since deleting a Namespace deletes
    everything in it; both are reported as C(kept), with the reason."
  - Kinds the API server does not serve have no objects; a second run finds nothing and
    changes nothing.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: Reads only; reports what would be deleted.
  diff_mode:
    support: full
    description: Shows each object that is (or would be) deleted.
options:
  stages:
    description: The stages to remove, in this order.
    type: list
    elements: str
    required: true
    choices: [operands, test-pods, monitoring, sriov-legacy, host-device, shared-device, gpu-operator,
              nic-configuration, machine-config,
              nic-node-policies, network-operator, maintenance-operator, sriov-network-operator,
              nfd, operators, namespaces]
  reset:
    description:
      - Stages whose objects first undo what they did, and are awaited until they have, before
        they are deleted. C(nic-configuration) sets C(resetToDefault) on each NicConfigurationTemplate
        and waits until every NicDevice it lists reports C(UpdateSuccessful) again - the NICs are
        back at their firmware defaults, and every node with such a NIC is drained and rebooted.
      - Without it, deleting a template never reverts a NIC (the NIC Configuration Operator leaves
        a device without a template as it is).
    type: list
    elements: str
    choices: [nic-configuration]
    default: []
  label_selector:
    description: Only objects that also match this selector (e.g. C(gpudirect.rdma/component=nfd)).
    type: str
    default: ""
  timeout:
    description: Seconds to wait for each stage's objects to be gone, and for what their removal
      sets off to be rolled out.
    type: int
    default: 600
"""

EXAMPLES = r"""
- name: Remove the RDMA methods' objects (networks, IPPools, SR-IOV node policies)
  gpudirect.rdma.remove:
    stages: [sriov-legacy, host-device, shared-device]

- name: Remove the test pods and every operand, in the reverse order of the steps
  gpudirect.rdma.remove:
    stages: [operands]

- name: Remove the GPU Operator (Subscription, its CSV, OperatorGroup)
  gpudirect.rdma.remove:
    stages: [operators]
    label_selector: gpudirect.rdma/component=gpu-operator
"""

RETURN = r"""
server:
  description: The API server it read and deleted through (its URL).
  returned: always
  type: str
results:
  description: One entry per object deleted (or, in check mode, that would be) or kept.
  returned: always
  type: list
  elements: dict
  contains:
    object:
      description: Kind, namespace and name, e.g. C(MacvlanNetwork rdma-shared).
      type: str
    kind:
      description: The object's kind.
      type: str
    name:
      description: The object's name.
      type: str
    namespace:
      description: The object's namespace (null for cluster-scoped objects).
      type: str
    action:
      description: C(deleted), C(kept), or C(reset) (asked to undo what it did first, O(reset)).
      type: str
    reasons:
      description: Why (the stage, or why it is kept).
      type: list
      elements: str
deleted:
  description: How many objects were (or would be) deleted.
  returned: always
  type: int
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    progress_of,
    run_module,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import (  # noqa: E402
    OPERANDS,
    RESETTABLE,
    STAGES,
    Remover,
)

OPTIONS = {
    "stages": {"type": "list", "elements": "str", "required": True, "choices": [OPERANDS, *STAGES]},
    "label_selector": {"type": "str", "default": ""},
    "timeout": {"type": "int", "default": 600},
    "reset": {"type": "list", "elements": "str", "default": [], "choices": RESETTABLE},
}


def body(module, cluster, done) -> dict:
    remover = Remover(cluster, module.check_mode, progress=progress_of(module))
    done["results"] = remover.results
    for stage in module.params["stages"]:
        remover.remove(
            stage,
            module.params["label_selector"],
            module.params["timeout"],
            tuple(module.params["reset"]),
        )
    result = {
        "changed": remover.changed,
        "results": remover.results,
        "deleted": sum(1 for r in remover.results if r["action"] == "deleted"),
        "server": cluster.server,
    }
    if module._diff:
        result["diff"] = remover.diffs
    return result


def main():
    run_module(OPTIONS, body, supports_check_mode=True)


if __name__ == "__main__":
    main()
