"""RDMA SR-IOV legacy: the SR-IOV Network Operator makes VFs on each rail's PF
(SriovNetworkNodePolicy) and a pod takes one over a SriovNetwork or SriovIBNetwork per rail."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import sriov

from .base import Disruption, deleted, selected_nodes
from .rdma_methods import method_step


def _operator_namespace(plan: dict) -> str:
    return plan["operators"]["sriov_network_operator"]["namespace"]


def vfs_removed(results: list[dict]) -> list[dict]:
    """Once SR-IOV node policies are deleted, their node states remove the VFs. A cluster with
    no node state (no node left with an SR-IOV NIC, or the operator gone) has no VF to wait for,
    so none is needed."""
    namespaces = sorted({r["namespace"] for r in deleted(results, "SriovNetworkNodePolicy")})
    return [gate.node_states_synced(ns, "VFs are removed", min_count=0) for ns in namespaces]


STEP = method_step(
    "sriov_legacy",
    "sriov-legacy",
    "RDMA SR-IOV legacy",
    (
        (sriov.API_VERSION, "SriovNetwork"),
        (sriov.API_VERSION, "SriovIBNetwork"),
        (sriov.API_VERSION, "SriovNetworkNodePolicy"),
    ),
    # Every SR-IOV node state has synced its node to the policies (Failed stops the wait).
    gates=lambda plan: [gate.node_states_synced(_operator_namespace(plan))],
    namespaces=lambda plan: [plan["network_namespace"], _operator_namespace(plan)],
    uninstall_gates=vfs_removed,
    disruptions=(
        Disruption(
            "SR-IOV VFs",
            "drain",
            ((sriov.API_VERSION, "SriovNetworkNodePolicy"),),
            None,
            selected_nodes,
        ),
    ),
)
