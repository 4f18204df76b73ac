"""SR-IOV Network Operator objects: its configuration and the SR-IOV legacy method's policies
and networks (one per rail)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    NVIDIA_VENDOR,
    new_object,
    rail_ipam,
)

API_VERSION = "sriovnetwork.openshift.io/v1"
# The SR-IOV Network Operator allows at most this many VFs per PF on InfiniBand.
MAX_VFS_INFINIBAND = 16
# The node label the NIC configuration daemon holds "true" while it configures a node's NICs.
NIC_CONFIGURATION_WAIT_LABEL = "network.nvidia.com/operator.nic-configuration.wait"


def sriov_operator_config(plan: dict) -> dict:
    """`default` SriovOperatorConfig; the config daemon waits for the DOCA driver. With the NIC
    configuration opt-in it also waits for the NIC Configuration Operator, and its Mellanox
    plugin (which would write the same firmware settings) is off, as NVIDIA documents."""
    selector = {
        "network.nvidia.com/operator.mofed.wait": "false",
        "node-role.kubernetes.io/worker": "",
        "feature.node.kubernetes.io/pci-15b3.sriov.capable": "true",
    }
    spec = {
        "enableInjector": True,
        "enableOperatorWebhook": True,
        "logLevel": 2,
        "disableDrain": False,
        "configDaemonNodeSelector": selector,
    }
    if (plan.get("nic_configuration") or {}).get("enabled"):
        selector[NIC_CONFIGURATION_WAIT_LABEL] = "false"
        spec["disablePlugins"] = ["mellanox"]
    return new_object(
        API_VERSION,
        "SriovOperatorConfig",
        "default",
        namespace=plan["operators"]["sriov_network_operator"]["namespace"],
        spec=spec,
    )


def _policy_name(view: dict, rail: dict) -> str:
    """The node policy of a rail: sriov-legacy-policy, with -<group> among several node groups
    and -rail<N> among several rails."""
    name = view["sriov"]["policy_name"]
    if len(view["groups"]) > 1:
        name += f"-{view['name']}"
    return name if len(view["rails"]) == 1 else f"{name}-rail{rail['index']}"


def node_policies(view: dict) -> list[dict]:
    sriov = view["sriov"]
    namespace = view["operators"]["sriov_network_operator"]["namespace"]
    return [
        new_object(
            API_VERSION,
            "SriovNetworkNodePolicy",
            _policy_name(view, rail),
            namespace=namespace,
            spec={
                "deviceType": "netdevice",
                "mtu": view["mtu"],
                "nicSelector": {
                    "vendor": NVIDIA_VENDOR,
                    "pfNames": [f"{rail['interface']}#0-{sriov['num_vfs'] - 1}"],
                },
                "nodeSelector": dict(view["node_selector"]),
                "numVfs": sriov["num_vfs"],
                "priority": sriov["priority"],
                "isRdma": True,
                "resourceName": rail["resource_name"],
                "linkType": view["link_type"],
            },
        )
        for rail in view["rails"]
    ]


def networks(view: dict) -> list[dict]:
    """SriovNetwork per rail on RoCE, SriovIBNetwork per rail on InfiniBand (no vlan there)."""
    namespace = view["operators"]["sriov_network_operator"]["namespace"]
    result = []
    for rail in view["rails"]:
        spec: dict = {
            "networkNamespace": view["network_namespace"],
            "resourceName": rail["resource_name"],
            "ipam": rail_ipam(view, rail),
        }
        if view["fabric"] == "infiniband":
            kind = "SriovIBNetwork"
            if view["sriov"]["link_state"]:
                spec["linkState"] = view["sriov"]["link_state"]
        else:
            kind = "SriovNetwork"
            spec = {"vlan": view["sriov"]["vlan"] or 0, **spec}
        result.append(
            new_object(
                API_VERSION,
                kind,
                rail["network_name"],
                namespace=namespace,
                spec=spec,
            )
        )
    return result
