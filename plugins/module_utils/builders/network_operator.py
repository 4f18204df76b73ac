"""The Network Operator's policies. With the `cluster` NIC policy model the NicClusterPolicy holds
the DOCA driver and the method's device plugin; with `node`, each node group's NicNodePolicy holds
its own (every section with its repository and version: a NicNodePolicy inherits nothing) and the
NicClusterPolicy keeps what is cluster-wide (IPoIB, nv-ipam). The same section is never in both
kinds, which the Network Operator's webhooks refuse."""

from __future__ import annotations

import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    monitoring,
    nfd,
    nic_configuration,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    NVIDIA_VENDOR,
    group_name,
    group_plans,
    image,
    new_object,
)

API_VERSION = "mellanox.com/v1alpha1"
NAME = "nic-cluster-policy"
# The sections a NicNodePolicy can hold, which the NicClusterPolicy then must not.
NODE_SECTIONS = ("ofedDriver", "rdmaSharedDevicePlugin", "sriovDevicePlugin")


def _ofed_driver(view: dict) -> dict:
    """Red Hat's driver settings; image from the Network Operator release, version the group's
    (the release's unless pinned); the upgrade budgets the inventory sets."""
    return {
        **image(view, "ofedDriver"),
        "version": view["doca_driver_version"],
        "forcePrecompiled": False,
        "terminationGracePeriodSeconds": 300,
        "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
        "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
        "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
        "upgradePolicy": {
            "autoUpgrade": True,
            "maxParallelUpgrades": view["driver_upgrades"]["max_parallel"],
            "safeLoad": False,
            "drain": {
                "enable": True,
                "force": True,
                "podSelector": "",
                "timeoutSeconds": view["driver_upgrades"]["drain_timeout_seconds"],
                "deleteEmptyDir": True,
            },
            "waitForCompletion": {"timeoutSeconds": 0},
        },
        "env": [
            {"name": "UNLOAD_STORAGE_MODULES", "value": "true"},
            {"name": "RESTORE_DRIVER_ON_POD_TERMINATION", "value": "true"},
            {"name": "CREATE_IFNAMES_UDEV", "value": "true"},
        ],
    }


def shared_device_config(view: dict) -> str:
    """rdmaSharedDevicePlugin.config: one resource per rail, selected by interface name."""
    config_list = [
        {
            "resourceName": rail["resource_name"],
            "rdmaHcaMax": view["shared_device"]["rdma_hca_max"],
            "selectors": {"ifNames": [rail["interface"]]},
        }
        for rail in view["rails"]
    ]
    return json.dumps({"configList": config_list}, indent=2) + "\n"


def host_device_config(view: dict) -> str:
    """sriovDevicePlugin.config in host-device mode: one resource per rail, its PF by name.

    Red Hat's selector (vendor and isRdma only) would put every RDMA-capable NVIDIA PF of the
    node in the pool, whatever the inventory names, a port the node needs for itself included;
    InfiniBand also gets linkTypes, so the pool holds IB ports only."""
    resources = []
    for rail in view["rails"]:
        selectors: dict = {"vendors": [NVIDIA_VENDOR], "isRdma": True}
        if view["fabric"] == "infiniband":
            selectors["linkTypes"] = ["infiniband"]
        selectors["pfNames"] = [rail["interface"]]
        resources.append(
            {
                "resourcePrefix": "nvidia.com",
                "resourceName": rail["resource_name"],
                "selectors": selectors,
            }
        )
    return json.dumps({"resourceList": resources}, indent=2) + "\n"


def node_sections(view: dict) -> dict:
    """The DOCA driver and the method's device plugin, for the nodes of one group (view: the
    group's view, builders.common.group_plans)."""
    sections: dict = {"ofedDriver": _ofed_driver(view)}
    if view["method"] == "shared_device":
        sections["rdmaSharedDevicePlugin"] = {
            **image(view, "rdmaSharedDevicePlugin"),
            "config": shared_device_config(view),
        }
    elif view["method"] == "host_device":
        sections["sriovDevicePlugin"] = {
            **image(view, "sriovDevicePlugin"),
            "config": host_device_config(view),
        }
    return sections


def node_affinity(selector: dict) -> dict:
    """A node selector as the NicClusterPolicy's nodeAffinity (which the Network Operator puts on
    the DaemonSets it renders): every label with its value."""
    expressions = [
        {"key": key, "operator": "In", "values": [value]} for key, value in selector.items()
    ]
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]
        }
    }


def affinity_matches(affinity: dict | None, labels: dict) -> bool:
    """A node's labels meet a nodeAffinity's required terms (In and Exists, as node_affinity
    writes them and people write them): one term whose every expression holds."""
    required = (affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True

    def holds(expression: dict) -> bool:
        key, operator = expression.get("key"), expression.get("operator")
        if operator == "Exists":
            return key in labels
        if operator == "DoesNotExist":
            return key not in labels
        if operator == "NotIn":
            return labels.get(key) not in (expression.get("values") or [])
        return labels.get(key) in (expression.get("values") or [])

    return any(all(holds(e) for e in term.get("matchExpressions") or []) for term in terms)


def nic_cluster_policies(plan: dict) -> list[dict]:
    """The NicClusterPolicy: with the cluster model the DOCA driver and the device plugin, and
    with either model the cluster-wide parts (IPoIB, nv-ipam, the NIC Configuration Operator,
    the DOCA Telemetry Service).
    The node model with nothing
    cluster-wide plans none: the Network Operator needs no NicClusterPolicy for NicNodePolicies,
    and an emptied one cannot be kept (server-side apply drops a spec it empties, and the CRD
    refuses a policy without one)."""
    views = group_plans(plan)
    spec: dict = node_sections(views[0]) if plan["nic_policy_model"] == "cluster" else {}
    if spec and views[0]["node_selector"] != {nfd.NIC_LABEL: "true"}:
        # The DaemonSets run on every node with an NVIDIA NIC; a narrower selector narrows them.
        spec["nodeAffinity"] = node_affinity(views[0]["node_selector"])
    if any(v["method"] == "shared_device" and v["fabric"] == "infiniband" for v in views):
        spec["secondaryNetwork"] = {"ipoib": image(plan, "ipoib")}
    if any(v["ipam"]["type"] == "nv-ipam" for v in views):
        spec["nvIpam"] = {**image(plan, "nvIpam"), "enableWebhook": False}
    if nic_configuration.enabled(plan):
        spec["nicConfigurationOperator"] = nic_configuration.nic_configuration_operator(plan)
    if monitoring.enabled(plan):
        spec["docaTelemetryService"] = monitoring.telemetry_service(plan)
    if not spec:
        return []
    return [new_object(API_VERSION, "NicClusterPolicy", NAME, spec=spec)]


def nic_node_policies(plan: dict) -> list[dict]:
    """One NicNodePolicy per node group with the node model; none with the cluster model."""
    if plan["nic_policy_model"] != "node":
        return []
    return [
        new_object(
            API_VERSION,
            "NicNodePolicy",
            group_name(view),
            spec={"nodeSelector": dict(view["node_selector"]), **node_sections(view)},
        )
        for view in group_plans(plan)
    ]
