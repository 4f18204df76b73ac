"""The gates of each step: what must hold on the cluster before site.yml moves on.

Pure functions from a plan to gates in the options format of the gpudirect.rdma.wait module.
The roles wait on them, and the converged check of site.yml observes all of them at once, so a
gate is written here once.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    GPU_OPERATOR,
    MACHINE_CONFIG,
    METHOD_COMPONENTS,
    NETWORK_OPERATOR,
    NFD,
    SRIOV_NETWORK_OPERATOR,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.machine_config import (
    machine_configs,
)

NFD_GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"
NFD_NIC_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
COMPONENTS = (
    NFD,
    SRIOV_NETWORK_OPERATOR,
    NETWORK_OPERATOR,
    MACHINE_CONFIG,
    GPU_OPERATOR,
    *METHOD_COMPONENTS.values(),
)


def nfd_gates(plan: dict, min_nodes: int = 1) -> list[dict]:
    namespace = plan["operators"]["nfd"]["namespace"]
    return [
        {
            "gate": "NFD labels NVIDIA GPU + NIC nodes",
            "api_version": "v1",
            "kind": "Node",
            "label_selector": f"{NFD_GPU_LABEL}=true,{NFD_NIC_LABEL}=true",
            "min_count": min_nodes,
            "path": ["metadata", "labels", NFD_NIC_LABEL],
            "equals": "true",
            "hint": (
                f"oc -n {namespace} get pods,nodefeaturediscovery; "
                f"oc get nodes -L {NFD_GPU_LABEL},{NFD_NIC_LABEL}"
            ),
        }
    ]


def _policy_ready(gate: str, api_version: str, kind: str, name: str, hint: str) -> dict:
    """An operator's policy object reports status.state ready."""
    return {
        "gate": gate,
        "api_version": api_version,
        "kind": kind,
        "name": name,
        "path": ["status", "state"],
        "equals": "ready",
        "hint": hint,
    }


def network_operator_gates(plan: dict) -> list[dict]:
    namespace = plan["operators"]["network_operator"]["namespace"]
    hint = (
        "oc get nicclusterpolicy nic-cluster-policy -o yaml (status.appliedStates); "
        f"oc -n {namespace} get pods"
    )
    return [
        _policy_ready(
            "NicClusterPolicy ready",
            "mellanox.com/v1alpha1",
            "NicClusterPolicy",
            "nic-cluster-policy",
            hint,
        )
    ]


def gpu_operator_gates(plan: dict) -> list[dict]:
    namespace = plan["operators"]["gpu_operator"]["namespace"]
    hint = f"oc get clusterpolicy gpu-cluster-policy -o yaml; oc -n {namespace} get pods"
    return [
        _policy_ready(
            "ClusterPolicy ready", "nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy", hint
        )
    ]


def machine_config_gates(plan: dict, removed: list[str] | None = None) -> list[dict]:
    """The pool renders the plan's MachineConfigs and none of the removed ones, then reports
    Updated; no gate when the plan has none and none were removed (the pool is not touched)."""
    names = [obj["metadata"]["name"] for obj in machine_configs(plan)]
    removed = list(removed or [])
    if not names and not removed:
        return []
    pool = plan["machine_configs"]["role"]
    hint = (
        f"oc get mcp {pool}; oc get nodes -l node-role.kubernetes.io/{pool}; "
        "oc -n openshift-machine-config-operator logs deploy/machine-config-controller"
    )
    where = {
        "api_version": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "name": pool,
    }
    return [
        {
            "gate": f"MachineConfigPool {pool} renders the MachineConfigs",
            **where,
            "path": ["status", "configuration", "source"],
            "includes": names,
            "excludes": removed,
            "hint": hint,
        },
        {
            "gate": f"MachineConfigPool {pool} updated",
            **where,
            "path": ["status", "conditions", "type=Updated", "status"],
            "equals": "True",
            "hint": hint,
        },
    ]


def method_gates(plan: dict) -> list[dict]:
    """Every selected node advertises each rail's resource, each rail's network is rendered,
    and with SR-IOV every node state has synced (Failed stops the wait)."""
    nodes = ",".join(f"{key}={value}" for key, value in plan["node_selector"].items())
    namespace = plan["network_namespace"]
    gates = []
    for rail in plan["rails"]:
        gates.append(
            {
                "gate": f"nodes advertise {rail['node_resource']}",
                "api_version": "v1",
                "kind": "Node",
                "label_selector": nodes,
                "path": ["status", "allocatable", rail["node_resource"]],
                "at_least": 1,
                "hint": (
                    f"oc describe nodes -l {nodes} (Allocatable); the device plugin pods of the "
                    "NicClusterPolicy or the SR-IOV operator"
                ),
            }
        )
        gates.append(
            {
                "gate": f"NetworkAttachmentDefinition {namespace}/{rail['network_name']} rendered",
                "api_version": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "name": rail["network_name"],
                "namespace": namespace,
                "path": ["metadata", "name"],
                "equals": rail["network_name"],
                "hint": f"oc -n {namespace} get network-attachment-definitions",
            }
        )
    if plan["method"] == "sriov_legacy":
        sriov_namespace = plan["operators"]["sriov_network_operator"]["namespace"]
        gates.append(
            {
                "gate": "SR-IOV node states synced",
                "api_version": "sriovnetwork.openshift.io/v1",
                "kind": "SriovNetworkNodeState",
                "namespace": sriov_namespace,
                "path": ["status", "syncStatus"],
                "equals": "Succeeded",
                "fail_on": ["Failed"],
                "hint": (
                    f"oc -n {sriov_namespace} get sriovnetworknodestates -o yaml "
                    "(status.lastSyncError); nodes drain and reboot while VFs are created"
                ),
            }
        )
    return gates


def gates_for(
    plan: dict, component: str, min_nodes: int = 1, removed_machine_configs: list | None = None
) -> list[dict]:
    """The gates that must hold once component is applied. The SR-IOV Network Operator's step
    has none of its own (its node states are the method's gate), nor has an RDMA method's
    component that the plan does not use."""
    if component == NFD:
        return nfd_gates(plan, min_nodes)
    if component == NETWORK_OPERATOR:
        return network_operator_gates(plan)
    if component == GPU_OPERATOR:
        return gpu_operator_gates(plan)
    if component == MACHINE_CONFIG:
        return machine_config_gates(plan, removed_machine_configs)
    if component == METHOD_COMPONENTS[plan["method"]]:
        return method_gates(plan)
    if component == SRIOV_NETWORK_OPERATOR or component in METHOD_COMPONENTS.values():
        return []
    raise ValueError(f"component: got {component!r}; expected one of {', '.join(COMPONENTS)}")
