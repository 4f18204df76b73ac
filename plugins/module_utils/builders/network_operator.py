"""The NicClusterPolicy: the DOCA driver for every method, plus the method's device plugin."""

from __future__ import annotations

import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    NETWORK_OPERATOR,
    NVIDIA_VENDOR,
    image,
    new_object,
)

NAME = "nic-cluster-policy"


def _ofed_driver(plan: dict) -> dict:
    """Red Hat's driver settings; image and version from the Network Operator release."""
    return {
        **image(plan, "ofedDriver"),
        "forcePrecompiled": False,
        "terminationGracePeriodSeconds": 300,
        "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
        "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
        "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
        "upgradePolicy": {
            "autoUpgrade": True,
            "maxParallelUpgrades": 1,
            "safeLoad": False,
            "drain": {
                "enable": True,
                "force": True,
                "podSelector": "",
                "timeoutSeconds": 300,
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


def shared_device_config(plan: dict) -> str:
    """rdmaSharedDevicePlugin.config: one resource per rail, selected by interface name."""
    config_list = [
        {
            "resourceName": rail["resource_name"],
            "rdmaHcaMax": plan["shared_device"]["rdma_hca_max"],
            "selectors": {"ifNames": [rail["interface"]]},
        }
        for rail in plan["rails"]
    ]
    return json.dumps({"configList": config_list}, indent=2) + "\n"


def host_device_config(plan: dict) -> str:
    """sriovDevicePlugin.config in host-device mode: one resource per rail.

    One RoCE rail keeps Red Hat's selector (any RDMA-capable NVIDIA PF); InfiniBand adds
    linkTypes so the pool holds IB ports only; several rails select their PF by name."""
    multi = len(plan["rails"]) > 1
    resources = []
    for rail in plan["rails"]:
        selectors: dict = {"vendors": [NVIDIA_VENDOR], "isRdma": True}
        if plan["fabric"] == "infiniband":
            selectors["linkTypes"] = ["infiniband"]
        if multi:
            selectors["pfNames"] = [rail["interface"]]
        resources.append(
            {
                "resourcePrefix": "nvidia.com",
                "resourceName": rail["resource_name"],
                "selectors": selectors,
            }
        )
    return json.dumps({"resourceList": resources}, indent=2) + "\n"


def nic_cluster_policy(plan: dict) -> dict:
    spec: dict = {"ofedDriver": _ofed_driver(plan)}
    if plan["method"] == "shared_device":
        spec["rdmaSharedDevicePlugin"] = {
            **image(plan, "rdmaSharedDevicePlugin"),
            "config": shared_device_config(plan),
        }
        if plan["fabric"] == "infiniband":
            spec["secondaryNetwork"] = {"ipoib": image(plan, "ipoib")}
    elif plan["method"] == "host_device":
        spec["sriovDevicePlugin"] = {
            **image(plan, "sriovDevicePlugin"),
            "config": host_device_config(plan),
        }
    if plan["ipam"]["type"] == "nv-ipam":
        spec["nvIpam"] = {**image(plan, "nvIpam"), "enableWebhook": False}
    return new_object(
        "mellanox.com/v1alpha1", "NicClusterPolicy", NAME, NETWORK_OPERATOR, spec=spec
    )
