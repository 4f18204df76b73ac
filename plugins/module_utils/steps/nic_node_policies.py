"""The node groups' NicNodePolicies (the node NIC policy model: several node groups, or
gpudirect_rdma_nic_policy_model node): each group's DOCA driver and device plugin, applied once
the NicClusterPolicy is ready, as NVIDIA orders them. Nothing with the cluster model."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import network_operator

from .base import Step
from .network_operator import (
    DRIVER_STUCK_SECONDS,
    OPERATOR,
    READY_TIMEOUT,
    STABLE_SECONDS,
    doca_rolled_out,
)


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    """Each node group's NicNodePolicy reports status.state ready, and their DOCA driver runs on
    every node they select (none with the cluster model)."""
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    found = []
    policies = network_operator.nic_node_policies(plan)
    for policy in policies:
        name = policy["metadata"]["name"]
        ready = gate.nic_policy_ready(
            f"NicNodePolicy {name} ready",
            policy,
            f"oc get nicnodepolicy {name} -o yaml (status.conditions, status.appliedStates, "
            f"status.reason); oc -n {namespace} get pods -o wide",
        )
        ready["fail_on"] = ["error"]  # an overlap with another NicNodePolicy's nodes
        found.append(ready)
    if found:
        found.append(doca_rolled_out(plan, settings, policies))
    return found


STEP = Step(
    name="nic-node-policies",
    title="NicNodePolicies (the node groups' DOCA driver and device plugins)",
    role="network_operator",
    operator=None,
    operand=lambda plan, csv: network_operator.nic_node_policies(plan),
    kinds=((network_operator.API_VERSION, "NicNodePolicy"),),
    gates=gates,
    settings=(READY_TIMEOUT, STABLE_SECONDS, DRIVER_STUCK_SECONDS),
    # After the NicClusterPolicy's wave, beside the MachineConfigs' (neither needs the other),
    # before the GPU Operator's driver.
    wave=3,
)
