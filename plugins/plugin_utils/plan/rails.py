"""The network of a set of nodes: method, fabric, MTU, SR-IOV VFs and the rails (one per PF) with
their names and address ranges, and the rules between them. `network(inputs)` takes the inputs of
one set of nodes, so a node group is the same call with the group's values over the globals."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.sriov import (
    MAX_VFS_INFINIBAND,
)

from . import checks
from .checks import PlanError
from .inputs import Inputs, check_required

MAX_RAILS = 32
MTU_LIMITS = {"roce": (576, 9216), "infiniband": (576, 65520)}
INTERFACE_KEYS = (
    "name",
    "network_name",
    "resource_name",
    "ipam_range",
    "ipam_gateway",
    "ipam_exclude",
)
# Red Hat's names where Red Hat gives one (OpenShift "NVIDIA GPUDirect RDMA" chapter).
NETWORK_NAMES = {
    ("shared_device", "roce"): "rdmashared-net",
    ("shared_device", "infiniband"): "example-ipoibnetwork",
    ("host_device", "roce"): "hostdev-net",
    ("host_device", "infiniband"): "hostdev-net",
    ("sriov_legacy", "roce"): "sriov-network",
    ("sriov_legacy", "infiniband"): "sriov-ib-network",
}
SHARED_DEVICE_RESOURCES = {"roce": "rdma_shared_device_eth", "infiniband": "rdma_shared_device_ib"}
# The option naming each method's resource, and the prefix under which its device plugin
# advertises the resource on nodes.
RESOURCE_OPTIONS = {
    "shared_device": "shared_device_resource_name",
    "host_device": "host_device_resource_name",
    "sriov_legacy": "sriov_resource_name",
}
NODE_RESOURCE_PREFIXES = {
    "shared_device": "rdma/",
    "host_device": "nvidia.com/",
    "sriov_legacy": "openshift.io/",
}


def network(inputs: Inputs, group: str | None = None, shared: SharedRange | None = None) -> dict:
    """Method, fabric, MTU, the methods' settings and the rails, checked together; the rails'
    network names carry the group's name when one is given (one of several node groups).
    shared: this group's parts of the one ipam_range several rails take (shared_ranges)."""
    check_required(inputs)
    method, fabric = inputs.checked("method"), inputs.checked("fabric")
    low, high = MTU_LIMITS[fabric]
    mtu = checks.check_integer(inputs.name("mtu"), inputs["mtu"], low, high, f" on {fabric}")
    num_vfs = inputs.checked("sriov_num_vfs")
    if fabric == "infiniband" and num_vfs > MAX_VFS_INFINIBAND and method == "sriov_legacy":
        raise PlanError(
            inputs.name("sriov_num_vfs"),
            num_vfs,
            f"at most {MAX_VFS_INFINIBAND} VFs per PF on InfiniBand",
        )
    # Where this group does not use them they are None; a value no group uses is refused
    # (unused.py).
    sriov = method == "sriov_legacy"
    vlan = inputs.checked("vlan") if sriov and fabric == "roce" else None
    link_state = inputs.checked("ib_link_state") if sriov and fabric == "infiniband" else None
    ipam_type = inputs.checked("ipam_type")
    rails = _rails(inputs, method, fabric, group, shared)
    block_size = inputs.checked("ipam_per_node_block_size")
    if ipam_type == "nv-ipam":
        _nv_ipam_blocks(inputs, rails, block_size)
    return {
        "method": method,
        "fabric": fabric,
        "link_type": "ib" if fabric == "infiniband" else "eth",
        "rails": rails,
        "ipam": {"type": ipam_type, "per_node_block_size": block_size},
        "mtu": mtu,
        "shared_device": {"rdma_hca_max": inputs.checked("rdma_hca_max")},
        "sriov": {
            "num_vfs": num_vfs,
            "policy_name": inputs.checked("sriov_policy_name"),
            "priority": inputs.checked("sriov_priority"),
            "vlan": vlan,
            "link_state": link_state,
        },
    }


def _ipam(label: str, given: Mapping) -> dict:
    """One rail's address range: ipam_range, an optional ipam_gateway inside it, ipam_exclude
    inside it. label is the variable prefix the errors name, e.g. gpudirect_rdma_ipam_."""
    range_value, gateway = given["ipam_range"], given.get("ipam_gateway")
    subnet = checks.cidr(label + "range", range_value).network
    result = {"range": str(range_value), "network": str(subnet), "exclude": []}
    if gateway not in (None, ""):
        gateway_address = checks.address(label + "gateway", gateway)
        if gateway_address.version != subnet.version or gateway_address not in subnet:
            raise PlanError(label + "gateway", gateway, f"an address inside {subnet}")
        if _reserved(subnet, gateway_address):
            raise PlanError(
                label + "gateway",
                gateway,
                f"a host address inside {subnet}, not its network or broadcast address",
            )
        result["gateway"] = str(gateway_address)
    for index, item in enumerate(checks.as_list(label + "exclude", given.get("ipam_exclude"))):
        excluded = checks.cidr(f"{label}exclude[{index}]", item).network
        if excluded.version != subnet.version or not excluded.subnet_of(subnet):
            raise PlanError(f"{label}exclude[{index}]", item, f"a CIDR inside {subnet}")
        result["exclude"].append(str(item))
    return result


def _reserved(subnet, host) -> bool:
    """The network address, and on IPv4 the broadcast address, of a range wider than /31."""
    if subnet.num_addresses <= 2:
        return False
    return host == subnet.network_address or (
        subnet.version == 4 and host == subnet.broadcast_address
    )


class SharedRange:
    """One group's parts of the ipam_range that several rails take (the global one, or a
    group's own across its rails): parts[i] is rail i's, None where the rail names its own
    ipam_range; takers says which groups' rails share the range, for the errors."""

    def __init__(self, parts: list[str | None], takers: str):
        self.parts = parts
        self.takers = takers


def split_range(variable: str, given: str, parts: int, takers: str) -> list[str]:
    """Split one range into `parts` equal consecutive subnets (rounded up to a power of two)."""
    subnet = checks.cidr(variable, given).network
    extra_bits = max(parts - 1, 0).bit_length()
    if subnet.prefixlen + extra_bits > subnet.max_prefixlen - 2:
        raise PlanError(
            variable,
            given,
            f"a range large enough to split into {parts} subnets of at least 4 addresses "
            f"(one per rail that takes it: {takers}), or an ipam_range of their own",
        )
    return [str(s) for s in subnet.subnets(prefixlen_diff=extra_bits)][:parts]


def shared_ranges(inputs: Inputs, takers: list[tuple[str | None, list[bool]]]) -> list:
    """The global ipam_range split once over every rail that takes it: takers, per group in the
    inventory's order, its name and per rail whether it takes the global range (a group with
    its own ipam_range takes none). Consecutive equal parts, group by group, rail by rail; each
    group's rails keep their places (a rail with its own range leaves its part unused, as one
    group's rails always did). None for every group when there is one place only (one rail: it
    gets the whole range, gateway and exclusions included), no rail takes the range, or it is
    unset."""
    counts = [len(rails) if any(rails) else 0 for _name, rails in takers]
    if sum(counts) <= 1 or inputs["ipam_range"] in (None, ""):
        return [None] * len(takers)
    who = ", ".join(
        f"{name or 'the nodes'} {sum(rails)} rail(s)" for name, rails in takers if any(rails)
    )
    parts = split_range(inputs.name("ipam_range"), inputs["ipam_range"], sum(counts), who)
    result, at = [], 0
    for (_name, rails), count in zip(takers, counts, strict=True):
        mine = parts[at : at + count]
        at += count
        result.append(
            SharedRange([p if t else None for p, t in zip(mine, rails, strict=True)], who)
            if count
            else None
        )
    return result


def _entries(inputs: Inputs) -> list[dict]:
    """The interfaces as one mapping per rail, each name valid and used once."""
    name, given = inputs.name("interfaces"), inputs["interfaces"]
    entries = checks.items(given) if isinstance(given, str) else given
    if isinstance(entries, Mapping):
        entries = [entries]
    if not isinstance(entries, (list, tuple)) or not entries:
        raise PlanError(
            name,
            given,
            "a non-empty list of PF interface names, one per rail, e.g. [ens8f0np0] "
            "or 'ens8f0np0,ens8f1np0'",
        )
    if len(entries) > MAX_RAILS:
        raise PlanError(name, f"{len(entries)} interfaces", f"at most {MAX_RAILS} rails")
    normalised: list[dict] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{name}[{index}]"
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, Mapping):
            raise PlanError(where, entry, "an interface name or a mapping with at least 'name'")
        checks.known_keys(where, entry, INTERFACE_KEYS)
        interface = checks.interface_name(
            f"{where}.name" if "name" in entry else where, entry.get("name")
        )
        if interface in seen:
            raise PlanError(
                f"{where}.name", interface, f"a name not already used by {name}[{seen[interface]}]"
            )
        seen[interface] = index
        normalised.append(dict(entry))
    return normalised


def entries(inputs: Inputs) -> list[dict]:
    """The interfaces as one mapping per rail (checked: names valid and used once)."""
    return _entries(inputs)


def _rails(
    inputs: Inputs, method: str, fabric: str, group: str | None, shared: SharedRange | None
) -> list[dict]:
    # Names first: a duplicate interface is the root cause worth reporting before any IPAM.
    entries = _entries(inputs)
    name, multi = inputs.name("interfaces"), len(entries) > 1
    base_network = checks.dns_subdomain(
        inputs.name("network_name"), inputs["network_name"] or NETWORK_NAMES[(method, fabric)]
    ) + (f"-{group}" if group else "")
    resource_option = RESOURCE_OPTIONS[method]
    base_resource = inputs[resource_option]
    if method == "shared_device":
        base_resource = base_resource or SHARED_DEVICE_RESOURCES[fabric]
    base_resource = checks.resource_name(inputs.name(resource_option), base_resource)
    range_name, shared_range = inputs.name("ipam_range"), inputs["ipam_range"]
    if shared is None:
        # The group's own range (or the only group's): split over its rails, as shared_ranges
        # splits the global one over the groups that take it.
        (shared,) = shared_ranges(inputs, [(group, ["ipam_range" not in e for e in entries])])
    rails = []
    for index, entry in enumerate(entries):
        where = f"{name}[{index}]"
        suffix = f"rail{index}" if multi else ""
        network_name = entry.get("network_name") or base_network + (suffix and "-" + suffix)
        rail_resource = entry.get("resource_name") or base_resource + (suffix and "_" + suffix)
        range_variable, range_given = range_name, shared_range
        if "ipam_range" in entry:
            range_variable, range_given = f"{where}.ipam_range", entry["ipam_range"]
            ipam = _ipam(f"{where}.ipam_", entry)
        elif "ipam_gateway" in entry or "ipam_exclude" in entry:
            key = "ipam_gateway" if "ipam_gateway" in entry else "ipam_exclude"
            raise PlanError(f"{where}.{key}", entry[key], f"an ipam_range on {where} as well")
        elif shared_range in (None, ""):
            raise PlanError(
                range_name,
                shared_range,
                "the IP range pods get addresses from on the RDMA network, e.g. 192.168.2.0/24 "
                f"(or an ipam_range on each entry of {name})",
            )
        elif shared is not None:
            if inputs["ipam_gateway"] not in (None, "") or inputs["ipam_exclude"]:
                key = "ipam_gateway" if inputs["ipam_gateway"] else "ipam_exclude"
                raise PlanError(
                    inputs.name(key),
                    inputs["ipam_gateway"] or inputs["ipam_exclude"],
                    f"none with several rails sharing one ipam_range ({shared.takers}; each "
                    f"rail gets an equal part of it); give each entry of {name} its own "
                    "ipam_range and ipam_gateway",
                )
            ipam = _ipam(range_name.removesuffix("range"), {"ipam_range": shared.parts[index]})
            ipam["part_of"] = {"variable": range_name, "range": str(shared_range)}
        else:
            ipam = _ipam(range_name.removesuffix("range"), inputs)
        rails.append(
            {
                "index": index,
                "interface": entry["name"],
                "network_name": checks.dns_subdomain(f"{where}.network_name", network_name),
                "resource_name": checks.resource_name(f"{where}.resource_name", rail_resource),
                "node_resource": NODE_RESOURCE_PREFIXES[method] + rail_resource,
                "ipam": ipam,
            }
        )
        _no_overlap(rails, range_variable, range_given)
    for key in ("network_name", "resource_name"):
        names = [rail[key] for rail in rails]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate:
            raise PlanError(
                f"{name}[{names.index(duplicate)}].{key}",
                duplicate,
                f"a {key.replace('_', ' ')} used by one rail only",
            )
    return rails


def _no_overlap(rails: list[dict], range_variable: str, given: str) -> None:
    """The last rail's range shares no address with an earlier rail's: a pod on two rails would
    have two routes to one subnet, and the traffic of one rail would leave on the other."""
    last = ipaddress.ip_network(rails[-1]["ipam"]["network"])
    for rail in rails[:-1]:
        other = ipaddress.ip_network(rail["ipam"]["network"])
        if other.version == last.version and other.overlaps(last):
            raise PlanError(
                range_variable,
                given,
                f"a range apart from rail {rail['index']}'s {rail['ipam']['range']} "
                f"({rail['interface']}): each rail needs a subnet of its own",
            )


def _nv_ipam_blocks(inputs: Inputs, rails: list[dict], block_size: int) -> None:
    """nv-ipam hands each node a block of block_size addresses of the rail's subnet (IPPool
    perNodeBlockSize), which must be smaller than the addresses the subnet has for hosts."""
    for rail in rails:
        subnet = ipaddress.ip_network(rail["ipam"]["network"])
        hosts = max(subnet.num_addresses - (2 if subnet.version == 4 else 1), 0)
        if block_size >= hosts:
            raise PlanError(
                inputs.name("ipam_per_node_block_size"),
                block_size,
                f"fewer addresses than the {hosts} for hosts in rail {rail['index']}'s "
                f"{rail['ipam']['range']} (nv-ipam gives each node a block of this size)",
            )
