"""SR-IOV Network Operator objects: its configuration and the SR-IOV legacy method's policies
and networks (one per rail)."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    METHOD_COMPONENTS,
    NVIDIA_VENDOR,
    SRIOV_NETWORK_OPERATOR,
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
        SRIOV_NETWORK_OPERATOR,
        namespace=plan["operators"]["sriov_network_operator"]["namespace"],
        spec=spec,
    )


def _policy_name(plan: dict, rail: dict) -> str:
    """The node policy of a rail: sriov-legacy-policy, with -<group> among several node groups
    and -rail<N> among several rails."""
    name = plan["sriov"]["policy_name"]
    if len(plan["groups"]) > 1:
        name += f"-{plan['name']}"
    return name if len(plan["rails"]) == 1 else f"{name}-rail{rail['index']}"


def node_policies(plan: dict) -> list[dict]:
    sriov = plan["sriov"]
    namespace = plan["operators"]["sriov_network_operator"]["namespace"]
    return [
        new_object(
            API_VERSION,
            "SriovNetworkNodePolicy",
            _policy_name(plan, rail),
            METHOD_COMPONENTS["sriov_legacy"],
            namespace=namespace,
            spec={
                "deviceType": "netdevice",
                "mtu": plan["mtu"],
                "nicSelector": {
                    "vendor": NVIDIA_VENDOR,
                    "pfNames": [f"{rail['interface']}#0-{sriov['num_vfs'] - 1}"],
                },
                "nodeSelector": dict(plan["node_selector"]),
                "numVfs": sriov["num_vfs"],
                "priority": sriov["priority"],
                "isRdma": True,
                "resourceName": rail["resource_name"],
                "linkType": plan["link_type"],
            },
        )
        for rail in plan["rails"]
    ]


def networks(plan: dict) -> list[dict]:
    """SriovNetwork per rail on RoCE, SriovIBNetwork per rail on InfiniBand (no vlan there)."""
    namespace = plan["operators"]["sriov_network_operator"]["namespace"]
    result = []
    for rail in plan["rails"]:
        spec: dict = {
            "networkNamespace": plan["network_namespace"],
            "resourceName": rail["resource_name"],
            "ipam": rail_ipam(plan, rail),
        }
        if plan["fabric"] == "infiniband":
            kind = "SriovIBNetwork"
            if plan["sriov"]["link_state"]:
                spec["linkState"] = plan["sriov"]["link_state"]
        else:
            kind = "SriovNetwork"
            spec = {"vlan": plan["sriov"]["vlan"] or 0, **spec}
        result.append(
            new_object(
                API_VERSION,
                kind,
                rail["network_name"],
                METHOD_COMPONENTS["sriov_legacy"],
                namespace=namespace,
                spec=spec,
            )
        )
    return result
