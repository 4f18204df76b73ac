"""The gates of the steps: what must hold on the cluster before the next step runs.

Pure functions from a plan to gates in the options format of the gpudirect.rdma.wait module
(wait.GATE_OPTIONS); the step table (steps.py) names each step's gates, the engine waits on them
(or, checking whether the cluster is converged, reads them once), and uninstall waits on the
ones that say a removal has been rolled out.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_plans
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.machine_config import (
    machine_configs,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.network_operator import (
    nic_cluster_policies,
    nic_node_policies,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nfd import (
    GPU_LABEL,
    NIC_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (
    nic_configuration_templates,
)


def nfd_gates(plan: dict, min_nodes: int = 1) -> list[dict]:
    namespace = plan["operators"]["nfd"]["namespace"]
    return [
        {
            "gate": "NFD labels NVIDIA GPU + NIC nodes",
            "api_version": "v1",
            "kind": "Node",
            "label_selector": f"{GPU_LABEL}=true,{NIC_LABEL}=true",
            "min_count": min_nodes,
            "path": f'metadata.labels."{NIC_LABEL}"',
            "equals": "true",
            "hint": (
                f"oc -n {namespace} get pods,nodefeaturediscovery; "
                f"oc get nodes -L {GPU_LABEL},{NIC_LABEL}"
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
        "path": "status.state",
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
            policy["apiVersion"],
            policy["kind"],
            policy["metadata"]["name"],
            hint,
        )
        for policy in nic_cluster_policies(plan)
    ]


def nic_node_policy_gates(plan: dict) -> list[dict]:
    """Each node group's NicNodePolicy reports status.state ready (none with the cluster model)."""
    namespace = plan["operators"]["network_operator"]["namespace"]
    found = []
    for policy in nic_node_policies(plan):
        name = policy["metadata"]["name"]
        gate = _policy_ready(
            f"NicNodePolicy {name} ready",
            policy["apiVersion"],
            "NicNodePolicy",
            name,
            f"oc get nicnodepolicy {name} -o yaml (status.appliedStates, status.reason); "
            f"oc -n {namespace} get pods -o wide",
        )
        # What the message shows of a policy not ready: its reason (an overlap, say) and the
        # first of its states (state-OFED, state-RDMA-device-plugin, ...) that is not ready.
        gate["detail"] = (
            "{reason: status.reason, "
            "state: status.appliedStates[?state!='ready' && state!='ignore'] | [0]}"
        )
        gate["fail_on"] = ["error"]
        found.append(gate)
    return found


def nic_configuration_gates(plan: dict) -> list[dict]:
    """Each NicConfigurationTemplate is applied: every NicDevice it lists has it in its spec and
    ConfigUpdateInProgress reason UpdateSuccessful at its current generation (the NIC
    configuration check, k8s/nic_configuration.py: device errors and a paused Maintenance
    Operator fail the gate, a node in maintenance or rebooting is progress)."""
    return [_template_applied(t) for t in nic_configuration_templates(plan)]


def nic_configuration_reset_gates(template: dict) -> list[dict]:
    """Once a live template asks for resetToDefault, each of its devices is back at the
    firmware's defaults (the same check: the devices hold the reset in their spec)."""
    return [_template_applied(template, "reset to the firmware defaults")]


def _template_applied(template: dict, what: str = "applied") -> dict:
    name = template["metadata"]["name"]
    namespace = template["metadata"]["namespace"]
    return {
        "gate": f"NicConfigurationTemplate {name} {what}",
        "api_version": template["apiVersion"],
        "kind": "NicConfigurationTemplate",
        "name": name,
        "namespace": namespace,
        "check": "nic_configuration",
        "path": "status.nicDevices",
        "equals": "every NicDevice it lists at ConfigUpdateInProgress reason UpdateSuccessful",
        "hint": (
            f"oc -n {namespace} get nicdevices -o yaml (status.conditions); "
            f"oc -n {namespace} get nodemaintenances; oc get nodes; oc -n {namespace} "
            "logs ds/nic-configuration-daemon"
        ),
    }


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
    if not names and not removed:
        return []
    return pool_gates(plan["machine_configs"]["role"], names, removed or [])


def pool_gates(pool: str | None, names: list[str], removed: list[str]) -> list[dict]:
    """A MachineConfigPool (every pool when pool is None) renders names and none of removed,
    then reports Updated."""
    which = f"MachineConfigPool {pool}" if pool else "MachineConfigPools"
    hint = (
        (f"oc get mcp {pool}; oc get nodes -l node-role.kubernetes.io/{pool}; " if pool else "")
        + ("" if pool else "oc get mcp; ")
        + "oc -n openshift-machine-config-operator logs deploy/machine-config-controller"
    )
    where = {"api_version": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool"}
    if pool:
        where["name"] = pool
    renders = "renders the MachineConfigs" if names else "no longer render the MachineConfigs"
    return [
        {
            "gate": f"{which} {renders}",
            **where,
            "path": "status.configuration.source",
            "includes": list(names),
            "excludes": list(removed),
            "hint": hint,
        },
        {
            "gate": f"{which} updated",
            **where,
            "path": "status.conditions[?type=='Updated'] | [0].status",
            "equals": "True",
            "hint": hint,
        },
    ]


def node_states_synced(namespace: str, while_: str = "VFs are created", min_count: int = 1) -> dict:
    """Every SR-IOV node state in namespace has synced its node to the policies (Failed stops
    the wait); at least min_count of them exist."""
    return {
        "gate": "SR-IOV node states synced",
        "api_version": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkNodeState",
        "namespace": namespace,
        "path": "status.syncStatus",
        "equals": "Succeeded",
        "fail_on": ["Failed"],
        "min_count": min_count,
        "hint": (
            f"oc -n {namespace} get sriovnetworknodestates -o yaml (status.lastSyncError); "
            f"nodes drain and reboot while {while_}"
        ),
    }


def method_gates(plan: dict, method: str) -> list[dict]:
    """The nodes of every node group on this RDMA method advertise each of its rails'
    resources, each rail's network is rendered, and with SR-IOV every node state has synced
    (Failed stops the wait)."""
    gates = []
    for view in group_plans(plan):
        if view["method"] == method:
            gates.extend(_group_gates(view, len(plan["groups"]) > 1))
    if gates and method == "sriov_legacy":
        sriov = plan["operators"]["sriov_network_operator"]["namespace"]
        gates.append(node_states_synced(sriov))
    return gates


def _group_gates(view: dict, several: bool) -> list[dict]:
    nodes = ",".join(f"{key}={value}" for key, value in view["node_selector"].items())
    namespace = view["network_namespace"]
    where = f"group {view['name']}: " if several else ""
    gates = []
    for rail in view["rails"]:
        gates.append(
            {
                "gate": f"{where}nodes advertise {rail['node_resource']}",
                "api_version": "v1",
                "kind": "Node",
                "label_selector": nodes,
                "path": f'status.allocatable."{rail["node_resource"]}"',
                "at_least": 1,
                "hint": (
                    f"oc describe nodes -l {nodes} (Allocatable); the device plugin pods of the "
                    + (
                        "group's NicNodePolicy"
                        if view["nic_policy_model"] == "node"
                        else "NicClusterPolicy"
                    )
                    + " or the SR-IOV operator"
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
                "path": "metadata.name",
                "equals": rail["network_name"],
                "hint": f"oc -n {namespace} get network-attachment-definitions",
            }
        )
    return gates
