"""The NVIDIA Network Operator and its NicClusterPolicy: with the cluster NIC policy model the
DOCA driver and the device plugin of the method; with either model what is cluster-wide (IPoIB,
nv-ipam, the NIC Configuration Operator). The node groups' NicNodePolicies are the next step's
(nic_node_policies.py)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    network_operator,
    nic_configuration,
)

from .base import EVERYWHERE, Operator, Setting, Step, install_timeout, stable_seconds

# The mirror registry's pull Secret, made from gpudirect_rdma_image_registry_username/_password.
# It is read by its name, never by listing Secrets: rbac/ grants this one name only.
REGISTRY_SECRET_NAME = "gpudirect-rdma-image-registry"  # noqa: S105 - a name, not a password

OPERATOR = Operator(
    key="network_operator",
    namespace="nvidia-network-operator",
    package="nvidia-network-operator",
    operator_group="nvidia-network-operator",
    subscription="nvidia-network-operator",
    channel="stable",
    source="certified-operators",
    env=nic_configuration.network_operator_env,
)
READY_TIMEOUT = Setting(
    "ready_timeout",
    "network_operator_ready_timeout",
    1800,
    (
        "Seconds to wait for the NicClusterPolicy, and then for each NicNodePolicy, to report "
        "ready (driver build and load).",
    ),
)
STABLE_SECONDS = stable_seconds("network_operator", "NicClusterPolicy")


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    hint = (
        "oc get nicclusterpolicy nic-cluster-policy -o yaml (status.appliedStates); "
        f"oc -n {namespace} get pods"
    )
    return [
        gate.policy_ready(
            "NicClusterPolicy ready",
            policy["apiVersion"],
            policy["kind"],
            policy["metadata"]["name"],
            hint,
        )
        for policy in network_operator.nic_cluster_policies(plan)
    ]


STEP = Step(
    name="network-operator",
    title="NVIDIA Network Operator",
    role="network_operator",
    operator=OPERATOR,
    operand=lambda plan, csv: network_operator.nic_cluster_policies(plan),
    kinds=((network_operator.API_VERSION, "NicClusterPolicy"),),
    gates=gates,
    settings=(install_timeout("network_operator"), READY_TIMEOUT, STABLE_SECONDS),
    wave=2,
    named=(("v1", "Secret", REGISTRY_SECRET_NAME),),
    # Anybody's: the Network Operator honours one NicClusterPolicy.
    diagnostics=((network_operator.API_VERSION, "NicClusterPolicy", EVERYWHERE),),
    # The node model with nothing cluster-wide has no NicClusterPolicy: the cluster model's
    # leaves before the NicNodePolicies take its sections.
    prunes=True,
    clears=((network_operator.API_VERSION, "NicNodePolicy"),),
)
