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
  - "Stages and their kinds, in uninstall order: C(test-pods) (the bandwidth test's Pods);
    C(networks) (MacvlanNetwork, IPoIBNetwork, HostDeviceNetwork, SriovNetwork, SriovIBNetwork,
    IPPool); C(node-policies) (SriovNetworkNodePolicy); C(cluster-policy) (ClusterPolicy);
    C(nic-cluster-policy) (NicClusterPolicy); C(sriov-operator-config) (SriovOperatorConfig);
    C(nfd-instance) (NodeFeatureDiscovery); C(operators) (Subscription, then the
    ClusterServiceVersions they installed, then OperatorGroup); C(machine-configs)
    (MachineConfig); C(namespaces) (Namespace)."
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
    choices: [test-pods, networks, node-policies, cluster-policy, nic-cluster-policy,
              sriov-operator-config, nfd-instance, operators, machine-configs, namespaces]
  label_selector:
    description: Only objects that also match this selector (e.g. C(gpudirect.rdma/component=nfd)).
    type: str
    default: ""
  timeout:
    description: Seconds to wait for each stage's objects to be gone.
    type: int
    default: 600
"""

EXAMPLES = r"""
- name: Remove the RDMA networks and the SR-IOV node policies of the collection
  gpudirect.rdma.remove:
    stages: [networks, node-policies]

- name: Remove the GPU Operator (Subscription, its CSV, OperatorGroup)
  gpudirect.rdma.remove:
    stages: [operators]
    label_selector: gpudirect.rdma/component=gpu-operator
"""

RETURN = r"""
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
      description: C(deleted) or C(kept).
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

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Cluster,
    argument_spec,
    failing_clearly,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import (  # noqa: E402
    STAGES,
    Remover,
)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            stages={"type": "list", "elements": "str", "required": True, "choices": list(STAGES)},
            label_selector={"type": "str", "default": ""},
            timeout={"type": "int", "default": 600},
        ),
        supports_check_mode=True,
    )
    with failing_clearly(module):
        cluster = Cluster(module)
    remover = Remover(cluster, module.check_mode)
    try:
        with failing_clearly(module, cluster, results=lambda: remover.results):
            for stage in module.params["stages"]:
                remover.remove(stage, module.params["label_selector"], module.params["timeout"])
    except TimeoutError as error:
        module.fail_json(msg=str(error), results=remover.results)
    result = {
        "changed": remover.changed,
        "results": remover.results,
        "deleted": sum(1 for r in remover.results if r["action"] == "deleted"),
    }
    if module._diff:
        result["diff"] = remover.diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
