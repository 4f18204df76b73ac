"""The SR-IOV Network Operator and its `default` SriovOperatorConfig (every RDMA method needs the
operator: its config daemon waits for the DOCA driver, and SR-IOV legacy uses its policies)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import sriov

from .base import EVERYWHERE, Operator, Step, install_timeout

OPERATOR = Operator(
    key="sriov_network_operator",
    namespace="openshift-sriov-network-operator",
    package="sriov-network-operator",
    operator_group="sriov-network-operators",
    subscription="sriov-network-operator-subscription",
    channel="stable",
    source="redhat-operators",
    namespace_annotations=lambda namespace: {"workload.openshift.io/allowed": "management"},
)

STEP = Step(
    name="sriov-network-operator",
    title="SR-IOV Network Operator",
    role="sriov_network_operator",
    operator=OPERATOR,
    operand=lambda plan, csv: [sriov.sriov_operator_config(plan)],
    kinds=((sriov.API_VERSION, "SriovOperatorConfig"),),
    settings=(install_timeout("sriov_network_operator"),),
    wave=1,
    # The NICs the operator found on each node, and how far it has configured them.
    diagnostics=((sriov.API_VERSION, "SriovNetworkNodeState", EVERYWHERE),),
)
