"""The gate vocabulary the steps share: what must hold on the cluster before the next step runs.

Pure functions that make gates in the options format of the gpudirect.rdma.wait module
(wait.GATE_OPTIONS): a policy object ready, a NicConfigurationTemplate applied, a
MachineConfigPool rolled out, the SR-IOV node states synced, a driver rolled out to every node.
Each step's file (module_utils/steps/<step>.py) says which of them it waits on; the engine waits
on them (or, checking whether the cluster is converged, reads them once), and uninstall waits on
the ones that say a removal has been rolled out.
"""

from __future__ import annotations


def policy_ready(gate: str, api_version: str, kind: str, name: str, hint: str) -> dict:
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


def nic_policy_ready(gate: str, policy: dict, hint: str) -> dict:
    """A NicClusterPolicy or NicNodePolicy is ready: status.state, and from 26.7 its Ready
    condition; a component not ready is named with its reason and message (k8s/nic_policy.py)."""
    return {
        **policy_ready(
            gate, policy["apiVersion"], policy["kind"], policy["metadata"]["name"], hint
        ),
        "check": "nic_policy",
        "equals": "status.state ready and, from 26.7, condition Ready True",
    }


def driver_rolled_out(
    gate: str,
    namespace: str,
    daemonsets: str,
    state_label: str,
    stuck_after: int,
    hint: str,
    versions: dict | None = None,
) -> dict:
    """A driver's DaemonSets (label selector daemonsets, in namespace) run their template on every
    node they schedule, and the upgrade controller's state label of each node is upgrade-done
    (k8s/driver_rollout.py); a node upgrade-failed, or in one state for stuck_after seconds,
    fails it. versions: the driver version each policy ("<Kind>/<name>") asks for, which the
    template of a DaemonSet it owns must hold before its pods say anything."""
    return {
        "gate": gate,
        "api_version": "apps/v1",
        "kind": "DaemonSet",
        "namespace": namespace,
        "label_selector": daemonsets,
        "check": "driver_rollout",
        # None is nothing to roll out: the driver is preinstalled, or off (driver.enabled false).
        "min_count": 0,
        "path": ["metadata", "labels", state_label],
        "equals": "every DaemonSet's pods updated and ready, every node upgrade-done",
        "stuck_after": stuck_after,
        "versions": dict(versions or {}),
        "hint": hint,
    }


def template_applied(template: dict, what: str = "applied") -> dict:
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
