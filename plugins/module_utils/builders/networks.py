"""The Network Operator's secondary networks, one per rail: MacvlanNetwork (shared device over
RoCE), IPoIBNetwork (shared device over InfiniBand), HostDeviceNetwork (host device), and the
nv-ipam IPPools they draw addresses from when ipam_type is nv-ipam."""

from __future__ import annotations

import ipaddress

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    new_object,
    rail_ipam,
)

API_VERSION = "mellanox.com/v1alpha1"


def _network(view: dict, rail: dict) -> dict:
    spec: dict = {"networkNamespace": view["network_namespace"]}
    if view["method"] == "host_device":
        kind = "HostDeviceNetwork"
        spec["resourceName"] = rail["resource_name"]
    elif view["fabric"] == "infiniband":
        kind = "IPoIBNetwork"
        spec["master"] = rail["interface"]
    else:
        kind = "MacvlanNetwork"
        spec.update({"master": rail["interface"], "mode": "bridge", "mtu": view["mtu"]})
    spec["ipam"] = rail_ipam(view, rail)
    return new_object(API_VERSION, kind, rail["network_name"], spec=spec)


def secondary_networks(view: dict) -> list[dict]:
    """The method's network objects; SR-IOV legacy has its own (see sriov.networks)."""
    if view["method"] == "sriov_legacy":
        return []
    return [_network(view, rail) for rail in view["rails"]]


def _exclusion(cidr: str) -> dict:
    network = ipaddress.ip_network(cidr, strict=False)
    return {"startIP": str(network[0]), "endIP": str(network[-1])}


def ip_pools(view: dict) -> list[dict]:
    """nv-ipam IPPools (in the Network Operator's namespace), one per rail's network."""
    if view["ipam"]["type"] != "nv-ipam":
        return []
    pools = []
    for rail in view["rails"]:
        ipam = rail["ipam"]
        spec: dict = {
            "subnet": ipam["network"],
            "perNodeBlockSize": view["ipam"]["per_node_block_size"],
        }
        if ipam.get("gateway"):
            spec["gateway"] = ipam["gateway"]
        if ipam["exclude"]:
            spec["exclusions"] = [_exclusion(cidr) for cidr in ipam["exclude"]]
        pools.append(
            new_object(
                "nv-ipam.nvidia.com/v1alpha1",
                "IPPool",
                rail["network_name"],
                namespace=view["operators"]["network_operator"]["namespace"],
                spec=spec,
            )
        )
    return pools
