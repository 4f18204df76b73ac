"""The NICs' firmware settings for GPUDirect RDMA (opt-in, plan["nic_configuration"]): the
Maintenance Operator's `default` MaintenanceOperatorConfig, the NicClusterPolicy's
`nicConfigurationOperator` section, and one NicConfigurationTemplate per node group and NIC type.

Values from NVIDIA's recommendation for GPUDirect RDMA: `linkType` from the fabric, `numVfs` from
the SR-IOV plan (0 for the other methods), `pciPerformanceOptimized` (max read request 4096) and
`gpuDirectOptimized` (`Baremetal`: ATS off) on, and on RoCE only `roceOptimized` with its QoS
(DSCP trust, PFC on priority 3 unless the inventory says otherwise); the NIC Configuration
Operator refuses `roceOptimized` with `linkType: Infiniband`."""

from __future__ import annotations

import re

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    group_name,
    group_plans,
    image,
    new_object,
    selects,
)

API_VERSION = "configuration.net.nvidia.com/v1alpha1"
MAINTENANCE_API_VERSION = "maintenance.nvidia.com/v1alpha1"
# Only the MaintenanceOperatorConfig of this name, in the operator's namespace, is honoured.
MAINTENANCE_CONFIG_NAME = "default"
# The NIC types by name -> the PCI device ID a NicDevice reports in status.type (the Network
# Operator v26.4.1's supported-firmware ConfigMap).
NIC_TYPES = {
    "ConnectX-6 Dx": "101d",
    "ConnectX-6 Lx": "101f",
    "ConnectX-7": "1021",
    "ConnectX-8": "1023",
    "ConnectX-9": "1025",
    "BlueField-2": "a2d6",
    "BlueField-3": "a2dc",
}
NIC_TYPE_NAMES = {device_id: name for name, device_id in NIC_TYPES.items()}
LINK_TYPES = {"roce": "Ethernet", "infiniband": "Infiniband"}
MAX_READ_REQUEST = 4096


def enabled(plan: dict) -> bool:
    return bool((plan.get("nic_configuration") or {}).get("enabled"))


def maintenance_operator_config(plan: dict) -> list[dict]:
    """The `default` MaintenanceOperatorConfig with the inventory's budgets."""
    if not enabled(plan):
        return []
    budgets = plan["nic_configuration"]["maintenance"]
    spec: dict = {
        "maxParallelOperations": budgets["max_parallel"],
        "maxNodeMaintenanceTimeSeconds": budgets["timeout_seconds"],
    }
    if budgets["max_unavailable"] is not None:
        spec["maxUnavailable"] = budgets["max_unavailable"]
    return [
        new_object(
            MAINTENANCE_API_VERSION,
            "MaintenanceOperatorConfig",
            MAINTENANCE_CONFIG_NAME,
            namespace=plan["operators"]["maintenance_operator"]["namespace"],
            spec=spec,
        )
    ]


def nic_configuration_operator(plan: dict) -> dict:
    """NicClusterPolicy.spec.nicConfigurationOperator: the release's operator and daemon images;
    FW_RESET_AFTER_CONFIG_UPDATE where a warm reboot does not reload the NIC firmware."""
    section: dict = {
        "operator": image(plan, "nicConfigurationOperator"),
        "configurationDaemon": image(plan, "nicConfigurationDaemon"),
    }
    if plan["nic_configuration"]["firmware_reset"]:
        section["env"] = [{"name": "FW_RESET_AFTER_CONFIG_UPDATE", "value": "true"}]
    return section


# The requestor id the Network Operator's Helm chart gives its DOCA driver upgrades. The
# upgrade library has no default, and the NodeMaintenance CRD refuses an empty requestorID (2 to
# 63 characters), so without it no DOCA driver upgrade could ever start in requestor mode.
DOCA_DRIVER_REQUESTOR_ID = "nvidia.doca-driver-upgrade"


def network_operator_env(plan: dict) -> list[dict]:
    """The Network Operator Subscription's environment: DOCA driver upgrades ask the Maintenance
    Operator for their nodes too (the CSV leaves this off), as requestor
    DOCA_DRIVER_REQUESTOR_ID."""
    if not enabled(plan):
        return []
    return [
        {"name": "MAINTENANCE_OPERATOR_ENABLED", "value": "true"},
        {"name": "MAINTENANCE_OPERATOR_REQUESTOR_ID", "value": DOCA_DRIVER_REQUESTOR_ID},
        {
            "name": "MAINTENANCE_OPERATOR_REQUESTOR_NAMESPACE",
            "value": plan["operators"]["maintenance_operator"]["namespace"],
        },
    ]


def nic_type(device_id: str) -> str:
    """A NIC type for a message: its name and PCI device ID, or the ID alone."""
    name = NIC_TYPE_NAMES.get(device_id)
    return f"{name} ({device_id})" if name else device_id


def type_slug(device_id: str) -> str:
    """The NIC type in an object name: connectx-7, or the device ID for one not named here."""
    name = NIC_TYPE_NAMES.get(device_id, device_id)
    return re.sub(r"[^a-z0-9-]", "-", name.lower())


def template_name(group: dict, device_id: str) -> str:
    return f"{group_name(group)}-{type_slug(device_id)}"


def template_spec(view: dict, device_id: str) -> dict:
    """The NicConfigurationTemplate of one node group (its plan view) and NIC type."""
    settings = view["nic_configuration"]
    template: dict = {
        "numVfs": view["sriov"]["num_vfs"] if view["method"] == "sriov_legacy" else 0,
        "linkType": LINK_TYPES[view["fabric"]],
        "pciPerformanceOptimized": {"enabled": True, "maxReadRequest": MAX_READ_REQUEST},
        "gpuDirectOptimized": {"enabled": True, "env": "Baremetal"},
    }
    if view["fabric"] == "roce":
        qos = {"trust": settings["trust"], "pfc": settings["pfc"]}
        # 26.7's fields, only when the inventory sets them (plan/nic_configuration.py).
        if settings.get("ecn") is not None:
            qos["ecn"] = {"enabled": settings["ecn"], "priority": settings["priority"]}
        if settings.get("pause_frames") is not None:
            qos["pauseFrames"] = {"enabled": settings["pause_frames"]}
        if settings.get("cable_length") is not None:
            qos["cableLen"] = settings["cable_length"]
        template["roceOptimized"] = {"enabled": True, "qos": qos}
    return {
        "nodeSelector": dict(view["node_selector"]),
        "nicSelector": {"nicType": device_id},
        "resetToDefault": False,
        "template": template,
    }


def nic_configuration_templates(plan: dict) -> list[dict]:
    """One NicConfigurationTemplate per node group and NIC type, in the Network Operator's
    namespace (where the NIC configuration daemon keeps the NicDevices); none when the opt-in is
    off. A group with no NIC type (to be discovered) gets none here: see
    steps/nic_configuration.py."""
    if not enabled(plan):
        return []
    namespace = plan["operators"]["network_operator"]["namespace"]
    return [
        new_object(
            API_VERSION,
            "NicConfigurationTemplate",
            template_name(view, device_id),
            namespace=namespace,
            spec=template_spec(view, device_id),
        )
        for view in group_plans(plan)
        for device_id in view["nic_types"]
    ]


def reset_to_default(template: dict) -> dict:
    """The same template asking its devices to go back to the firmware's defaults (the NIC
    Configuration Operator ignores `template` then; the CRD still requires it)."""
    return {**template, "spec": {**template["spec"], "resetToDefault": True}}


def undiscovered(plan: dict) -> list[str]:
    """The node groups (their objects' names) without a NIC type, which site.yml takes from the
    NicDevices on their nodes."""
    if not enabled(plan):
        return []
    return [group_name(group) for group in plan["groups"] if not group["nic_types"]]


def with_discovered_types(plan: dict, list_objects) -> tuple[dict, str | None]:
    """The plan with each group that names no NIC type given the types of the NicDevices on its
    nodes (list_objects(api_version, kind, namespace) reads them), and what is still unknown: a
    group whose nodes have no NicDevice yet (None once every group has a type). A new plan; the
    given one is not changed."""
    if not undiscovered(plan):
        return plan, None
    namespace = plan["operators"]["network_operator"]["namespace"]
    devices = list_objects(API_VERSION, "NicDevice", namespace)
    labels = {
        node["metadata"]["name"]: node["metadata"].get("labels") or {}
        for node in list_objects("v1", "Node", None)
    }
    groups = []
    for group in plan["groups"]:
        if not group["nic_types"]:
            nodes = {
                name for name, found in labels.items() if selects(group["node_selector"], found)
            }
            types = sorted(
                {
                    (device.get("status") or {}).get("type")
                    for device in devices
                    if (device.get("status") or {}).get("node") in nodes
                }
                - {None, ""}
            )
            group = {**group, "nic_types": types}
        groups.append(group)
    found = {**plan, "groups": groups}
    missing = undiscovered(found)
    if not missing:
        return found, None
    return found, (
        f"no NicDevice in {namespace} on the nodes of {', '.join(missing)} yet, so no NIC type to "
        "configure: the NIC configuration daemon lists each node's NICs once it runs on the node "
        "(after the DOCA driver); or name the types with gpudirect_rdma_nic_type"
    )
