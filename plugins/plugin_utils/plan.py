"""The one validation and normalisation step: inventory values in, a plan out.

`build_plan(inputs)` takes the inputs by their short names (`method`, `ipam_range`, ...; the
inventory variables are the same names with the `gpudirect_rdma_` prefix) and returns a new
dict that every builder reads. Every bad value raises `PlanError` naming the variable, the value
and what is allowed, before anything is written anywhere.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.sriov import (
    MAX_VFS_INFINIBAND,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.releases import (
    GPU_OPERATOR_RELEASES,
    LATEST_GPU_OPERATOR,
    LATEST_NETWORK_OPERATOR,
    NETWORK_OPERATOR_RELEASES,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import REGISTRY_SECRET_NAME

PREFIX = "gpudirect_rdma_"

METHODS = ("shared_device", "host_device", "sriov_legacy")
FABRICS = ("roce", "infiniband")
IPAM_TYPES = ("whereabouts", "nv-ipam")
GPU_MEMORY_MODES = ("dmabuf", "peermem")
APPROVALS = ("Automatic", "Manual")
IB_LINK_STATES = ("enable", "disable", "auto")
OPERATORS = ("nfd", "sriov_network_operator", "network_operator", "gpu_operator")
OPERATOR_KEYS = ("namespace", "channel", "source", "source_namespace", "approval", "starting_csv")
INTERFACE_KEYS = (
    "name",
    "network_name",
    "resource_name",
    "ipam_range",
    "ipam_gateway",
    "ipam_exclude",
)
MAX_RAILS = 32
MAX_VFS = 127
MTU_LIMITS = {"roce": (576, 9216), "infiniband": (576, 65520)}
# One udev rule is about 135 bytes once base64-encoded; the MachineConfig carrying them must stay
# well under the API server's 1.5 MiB request limit.
MAX_PERSISTENT_NIC_NAMES = 10000

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
# The prefix under which each method's device plugin advertises its resource on nodes.
NODE_RESOURCE_PREFIXES = {
    "shared_device": "rdma/",
    "host_device": "nvidia.com/",
    "sriov_legacy": "openshift.io/",
}

OPERATOR_DEFAULTS = {
    "nfd": {
        "namespace": "openshift-nfd",
        "package": "nfd",
        "operator_group": "openshift-nfd",
        "subscription": "nfd",
        "channel": "stable",
        "source": "redhat-operators",
    },
    "sriov_network_operator": {
        "namespace": "openshift-sriov-network-operator",
        "package": "sriov-network-operator",
        "operator_group": "sriov-network-operators",
        "subscription": "sriov-network-operator-subscription",
        "channel": "stable",
        "source": "redhat-operators",
    },
    "network_operator": {
        "namespace": "nvidia-network-operator",
        "package": "nvidia-network-operator",
        "operator_group": "nvidia-network-operator",
        "subscription": "nvidia-network-operator",
        "channel": "stable",
        "source": "certified-operators",
    },
    "gpu_operator": {
        "namespace": "nvidia-gpu-operator",
        "package": "gpu-operator-certified",
        "operator_group": "nvidia-gpu-operator-group",
        "subscription": "gpu-operator-certified",
        "channel": None,  # the release's version channel, e.g. v26.7
        "source": "certified-operators",
    },
}

DEFAULTS: dict[str, Any] = {
    "method": None,
    "fabric": None,
    "interfaces": None,
    "network_name": None,
    "network_namespace": "default",
    "ipam_type": "whereabouts",
    "ipam_range": None,
    "ipam_gateway": None,
    "ipam_exclude": [],
    "ipam_per_node_block_size": 16,
    "mtu": 1500,
    "rdma_hca_max": 63,
    "shared_device_resource_name": None,
    "host_device_resource_name": "hostdev",
    "sriov_num_vfs": 8,
    "sriov_resource_name": "sriovlegacy",
    "sriov_policy_name": "sriov-legacy-policy",
    "sriov_priority": 90,
    "vlan": None,
    "ib_link_state": None,
    "node_selector": {"feature.node.kubernetes.io/pci-15b3.present": "true"},
    "gpu_memory": "dmabuf",
    "gpu_gds": True,
    "gpu_gdrcopy": True,
    "operators": {},
    "catalog_source": None,
    "catalog_source_namespace": "openshift-marketplace",
    "network_operator_release": LATEST_NETWORK_OPERATOR,
    "gpu_operator_release": LATEST_GPU_OPERATOR,
    "image_registry": None,
    "image_pull_secrets": [],
    "image_registry_username": None,
    "image_registry_password": None,
    "openshift_version": "4.20",
    "nfd_operand_image": None,
    "machine_config_role": "worker",
    "blacklist_irdma": False,
    "persistent_nic_names": [],
    "crio_memlock": False,
}

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_KEY_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_MAC_6 = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_MAC_20 = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){19}$")
_REGISTRY = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9._-]+)*$")
_OPENSHIFT_VERSION = re.compile(r"^4\.[0-9]{1,2}$")
_INTERFACE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
# The OpenShift releases whose documentation (the GPUDirect RDMA chapter) this collection follows.
SUPPORTED_OPENSHIFT = ("4.17", "4.22")


class PlanError(ValueError):
    """A bad input: which variable, what arrived, what is allowed. A secret's value is never
    repeated: `shown` then says what arrived instead (its type, that it is empty)."""

    def __init__(self, variable: str, value: Any, expected: str, shown: str | None = None):
        self.variable = variable
        self.value = value if shown is None else shown
        self.expected = expected
        super().__init__(f"{variable}: got {shown or repr(value)}; expected {expected}")


def variable(name: str) -> str:
    return PREFIX + name


# -- primitive checks ------------------------------------------------------------------------
def _choice(name: str, value: Any, choices: tuple) -> str:
    if value not in choices:
        raise PlanError(name, value, "one of " + ", ".join(choices))
    return value


def _between(low: str, high: str | None) -> str:
    return f"of {low} or more" if high is None else f"from {low} to {high}"


def check_integer(name: str, value: Any, low: int, high: int | None, why: str = "") -> int:
    """value as a whole number from low to high (no upper bound when high is None), or
    PlanError naming name."""
    expected = f"a whole number {_between(str(low), None if high is None else str(high))}"
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            raise PlanError(name, value, expected)
    if not low <= value <= (value if high is None else high):
        raise PlanError(name, value, expected + why)
    return value


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "yes", "false", "no"):
        return value.lower() in ("true", "yes")
    raise PlanError(name, value, "true or false")


def _string(
    name: str,
    value: Any,
    pattern: re.Pattern | None = None,
    expected: str = "",
    max_length: int = 253,
) -> str:
    if not isinstance(value, str) or not value:
        raise PlanError(name, value, expected or "a non-empty string")
    if len(value) > max_length or (pattern is not None and not pattern.match(value)):
        raise PlanError(name, value, expected)
    return value


def _dns_label(name: str, value: Any) -> str:
    return _string(
        name,
        value,
        _DNS_LABEL,
        "a DNS-1123 label: lower-case letters, digits and '-', at most 63 characters",
        max_length=63,
    )


def _dns_subdomain(name: str, value: Any) -> str:
    return _string(
        name,
        value,
        _DNS_SUBDOMAIN,
        "a DNS-1123 name: lower-case letters, digits, '-' and '.', at most 253 characters",
    )


def _resource_name(name: str, value: Any) -> str:
    return _string(
        name,
        value,
        _RESOURCE_NAME,
        "a resource name: letters, digits, '-', '_' and '.', starting and ending with "
        "a letter or digit, at most 63 characters",
        max_length=63,
    )


def _items(value: str) -> list[str]:
    """A list given as one string, the form an AAP survey's text answer has: items separated by
    commas or white space. No CIDR or Secret name holds either; an interface name never holds
    white space, and one with a comma (the kernel allows it) has to be given in a YAML list."""
    return [item for item in re.split(r"[,\s]+", value) if item]


def _list(name: str, value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return _items(value)
    if not isinstance(value, (list, tuple)):
        raise PlanError(name, value, "a list")
    return list(value)


def _mapping(name: str, value: Any) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PlanError(name, value, "a mapping")
    return value


def interface_name(name: str, value: Any) -> str:
    """A network interface name: what the Linux kernel accepts (dev_valid_name: at most 15
    characters, not '.' or '..'), narrowed to the characters of every naming scheme in use
    (ens8f0np0, enp65s0f1, ibs2f0, eth0, bond0.100). The operators read others: '#' selects VFs in
    the SR-IOV operator's pfNames, ',' separates names in a survey answer; brackets and quotes are
    a YAML list typed into a text answer."""
    expected = (
        "a Linux interface name: 1 to 15 characters, letters, digits, '-', '_' and '.' only "
        "(no '/', ':', '#', quotes, brackets or white space), not '.' or '..', e.g. ens8f0np0"
    )
    if not isinstance(value, str) or not value or len(value) > 15 or value in (".", ".."):
        raise PlanError(name, value, expected)
    if not _INTERFACE.match(value):
        raise PlanError(name, value, expected)
    return value


def _cidr(name: str, value: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    expected = "an IP range in CIDR notation, e.g. 192.168.2.0/24"
    if not isinstance(value, str) or "/" not in value:
        raise PlanError(name, value, expected)
    try:
        return ipaddress.ip_interface(value)
    except ValueError:
        raise PlanError(name, value, expected) from None


def _address(name: str, value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise PlanError(name, value, "an IP address, e.g. 192.168.2.1") from None


# -- composite parts -------------------------------------------------------------------------
def _ipam(label: str, range_value: Any, gateway: Any, exclude: Any) -> dict:
    """One rail's address range: range, optional gateway inside it, excludes inside it.
    label is the variable prefix the errors name, e.g. gpudirect_rdma_ipam_."""
    network = _cidr(label + "range", range_value).network
    result = {"range": str(range_value), "network": str(network), "exclude": []}
    if gateway not in (None, ""):
        address = _address(label + "gateway", gateway)
        if address.version != network.version or address not in network:
            raise PlanError(label + "gateway", gateway, f"an address inside {network}")
        if _reserved(network, address):
            raise PlanError(
                label + "gateway",
                gateway,
                f"a host address inside {network}, not its network or broadcast address",
            )
        result["gateway"] = str(address)
    for index, item in enumerate(_list(label + "exclude", exclude)):
        excluded = _cidr(f"{label}exclude[{index}]", item).network
        if excluded.version != network.version or not excluded.subnet_of(network):
            raise PlanError(f"{label}exclude[{index}]", item, f"a CIDR inside {network}")
        result["exclude"].append(str(item))
    return result


def _reserved(network, address) -> bool:
    """The network address, and on IPv4 the broadcast address, of a range wider than /31."""
    if network.num_addresses <= 2:
        return False
    return address == network.network_address or (
        network.version == 4 and address == network.broadcast_address
    )


def _split_range(range_value: str, parts: int) -> list[str]:
    """Split one range into `parts` equal consecutive subnets (rounded up to a power of two)."""
    network = _cidr(variable("ipam_range"), range_value).network
    extra_bits = max(parts - 1, 0).bit_length()
    if network.prefixlen + extra_bits > network.max_prefixlen - 2:
        raise PlanError(
            variable("ipam_range"),
            range_value,
            f"a range large enough to split into {parts} subnets of at least 4 addresses "
            f"(one per rail), or an ipam_range on each entry of {variable('interfaces')}",
        )
    return [str(s) for s in network.subnets(prefixlen_diff=extra_bits)][:parts]


def _rails(inputs: Mapping, method: str, fabric: str) -> list[dict]:
    name = variable("interfaces")
    entries = inputs["interfaces"]
    if isinstance(entries, str):
        entries = _items(entries)
    elif isinstance(entries, Mapping):
        entries = [entries]
    if not isinstance(entries, (list, tuple)) or not entries:
        raise PlanError(
            name,
            inputs["interfaces"],
            "a non-empty list of PF interface names, one per rail, e.g. [ens8f0np0] "
            "or 'ens8f0np0,ens8f1np0'",
        )
    if len(entries) > MAX_RAILS:
        raise PlanError(name, f"{len(entries)} interfaces", f"at most {MAX_RAILS} rails")
    multi = len(entries) > 1
    base_network = inputs["network_name"] or NETWORK_NAMES[(method, fabric)]
    base_network = _dns_subdomain(variable("network_name"), base_network)
    if method == "shared_device":
        base_resource = inputs["shared_device_resource_name"] or SHARED_DEVICE_RESOURCES[fabric]
        resource_variable = "shared_device_resource_name"
    elif method == "host_device":
        base_resource = inputs["host_device_resource_name"]
        resource_variable = "host_device_resource_name"
    else:
        base_resource = inputs["sriov_resource_name"]
        resource_variable = "sriov_resource_name"
    base_resource = _resource_name(variable(resource_variable), base_resource)

    # Names first: a duplicate interface is the root cause worth reporting before any IPAM.
    normalised: list[dict] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{name}[{index}]"
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, Mapping):
            raise PlanError(where, entry, "an interface name or a mapping with at least 'name'")
        unknown = sorted(set(entry) - set(INTERFACE_KEYS))
        if unknown:
            raise PlanError(
                f"{where}.{unknown[0]}",
                entry[unknown[0]],
                "no such key; allowed: " + ", ".join(INTERFACE_KEYS),
            )
        interface = interface_name(f"{where}.name" if "name" in entry else where, entry.get("name"))
        if interface in seen:
            raise PlanError(
                f"{where}.name", interface, f"a name not already used by {name}[{seen[interface]}]"
            )
        seen[interface] = index
        normalised.append(dict(entry))

    split = None
    rails = []
    for index, entry in enumerate(normalised):
        where = f"{name}[{index}]"
        interface = entry["name"]
        suffix = f"-rail{index}" if multi else ""
        network_name = entry.get("network_name") or base_network + suffix
        resource_name = entry.get("resource_name") or (
            base_resource + (f"_rail{index}" if multi else "")
        )
        range_variable, range_given = f"{where}.ipam_range", entry.get("ipam_range")
        if "ipam_range" in entry:
            ipam = _ipam(
                f"{where}.ipam_",
                entry["ipam_range"],
                entry.get("ipam_gateway"),
                entry.get("ipam_exclude"),
            )
        elif "ipam_gateway" in entry or "ipam_exclude" in entry:
            key = "ipam_gateway" if "ipam_gateway" in entry else "ipam_exclude"
            raise PlanError(f"{where}.{key}", entry[key], f"an ipam_range on {where} as well")
        elif inputs["ipam_range"] in (None, ""):
            raise PlanError(
                variable("ipam_range"),
                inputs["ipam_range"],
                "the IP range pods get addresses from on the RDMA network, e.g. 192.168.2.0/24 "
                f"(or an ipam_range on each entry of {name})",
            )
        elif multi:
            if inputs["ipam_gateway"] not in (None, "") or inputs["ipam_exclude"]:
                raise PlanError(
                    variable("ipam_gateway")
                    if inputs["ipam_gateway"]
                    else variable("ipam_exclude"),
                    inputs["ipam_gateway"] or inputs["ipam_exclude"],
                    "none with several rails sharing one ipam_range (each rail gets an equal "
                    f"part of it); give each entry of {name} its own ipam_range and ipam_gateway",
                )
            split = split or _split_range(inputs["ipam_range"], len(entries))
            ipam = _ipam(variable("ipam_"), split[index], None, None)
            range_variable, range_given = variable("ipam_range"), inputs["ipam_range"]
        else:
            range_variable, range_given = variable("ipam_range"), inputs["ipam_range"]
            ipam = _ipam(
                variable("ipam_"),
                inputs["ipam_range"],
                inputs["ipam_gateway"],
                inputs["ipam_exclude"],
            )
        rails.append(
            {
                "index": index,
                "interface": interface,
                "network_name": _dns_subdomain(f"{where}.network_name", network_name),
                "resource_name": _resource_name(f"{where}.resource_name", resource_name),
                "node_resource": NODE_RESOURCE_PREFIXES[method] + resource_name,
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


def _nv_ipam_blocks(rails: list[dict], block_size: int) -> None:
    """nv-ipam hands each node a block of block_size addresses of the rail's subnet (IPPool
    perNodeBlockSize), which must be smaller than the addresses the subnet has for hosts."""
    for rail in rails:
        network = ipaddress.ip_network(rail["ipam"]["network"])
        hosts = max(network.num_addresses - (2 if network.version == 4 else 1), 0)
        if block_size >= hosts:
            raise PlanError(
                variable("ipam_per_node_block_size"),
                block_size,
                f"fewer addresses than the {hosts} for hosts in rail {rail['index']}'s "
                f"{rail['ipam']['range']} (nv-ipam gives each node a block of this size)",
            )


def _operators(inputs: Mapping) -> dict:
    name = variable("operators")
    given = _mapping(name, inputs["operators"])
    unknown = sorted(set(given) - set(OPERATORS))
    if unknown:
        raise PlanError(
            f"{name}.{unknown[0]}",
            given[unknown[0]],
            "no such operator; allowed: " + ", ".join(OPERATORS),
        )
    catalog_source = inputs["catalog_source"]
    if catalog_source is not None:
        catalog_source = _dns_subdomain(variable("catalog_source"), catalog_source)
    catalog_namespace = _dns_label(
        variable("catalog_source_namespace"), inputs["catalog_source_namespace"]
    )
    network_release = NETWORK_OPERATOR_RELEASES[inputs["network_operator_release"]]
    gpu_release = GPU_OPERATOR_RELEASES[inputs["gpu_operator_release"]]
    release_csvs = {
        "network_operator": network_release["csv_name"],
        "gpu_operator": gpu_release["csv_name"],
    }
    operators = {}
    for operator in OPERATORS:
        where = f"{name}.{operator}"
        override = _mapping(where, given.get(operator))
        unknown = sorted(set(override) - set(OPERATOR_KEYS))
        if unknown:
            raise PlanError(
                f"{where}.{unknown[0]}",
                override[unknown[0]],
                "no such key; allowed: " + ", ".join(OPERATOR_KEYS),
            )
        defaults = OPERATOR_DEFAULTS[operator]
        channel = override.get("channel") or defaults["channel"]
        if operator == "gpu_operator" and not channel:
            channel = gpu_release["channel"]
        approval = _choice(f"{where}.approval", override.get("approval", "Automatic"), APPROVALS)
        starting_csv = override.get("starting_csv")
        if approval == "Manual" and not starting_csv:
            starting_csv = release_csvs.get(operator)
            if not starting_csv:
                raise PlanError(
                    f"{where}.starting_csv",
                    None,
                    "the CSV to install (e.g. nfd.v4.20.0) when approval is Manual: "
                    "only the InstallPlan of that CSV is approved",
                )
        operators[operator] = {
            "namespace": _dns_label(
                f"{where}.namespace", override.get("namespace", defaults["namespace"])
            ),
            "package": defaults["package"],
            "operator_group": defaults["operator_group"],
            "subscription": defaults["subscription"],
            "channel": _string(f"{where}.channel", channel, expected="an OLM channel name"),
            "source": _dns_subdomain(
                f"{where}.source",
                override.get("source") or catalog_source or defaults["source"],
            ),
            "source_namespace": _dns_label(
                f"{where}.source_namespace",
                override.get("source_namespace") or catalog_namespace,
            ),
            "approval": approval,
            "starting_csv": starting_csv and _dns_subdomain(f"{where}.starting_csv", starting_csv),
        }
    return operators


def _registry_secret(inputs: Mapping, operators: dict) -> dict | None:
    """Where the pull Secret made from the registry credentials goes, or None without them.
    The credentials themselves stay out of the plan (it is printed and registered): only
    their presence is checked here, and no message ever repeats them."""
    username = inputs["image_registry_username"]
    password = inputs["image_registry_password"]
    if username in (None, "") and password in (None, ""):
        return None
    user_variable, password_variable = (
        variable("image_registry_username"),
        variable("image_registry_password"),
    )
    if not isinstance(password, str) or not password:
        raise PlanError(
            password_variable,
            None,
            f"a non-empty string when {user_variable} is set",
            shown="nothing"
            if password in (None, "")
            else f"a value of type {type(password).__name__}",
        )
    if not isinstance(username, str) or not username:
        raise PlanError(
            user_variable,
            username,
            f"a non-empty user name when {password_variable} is set",
        )
    if ":" in username or any(c.isspace() for c in username):
        raise PlanError(
            user_variable,
            username,
            "a user name without ':' or white space (a registry login joins them as user:password)",
        )
    if inputs["image_registry"] in (None, ""):
        raise PlanError(
            variable("image_registry"),
            inputs["image_registry"],
            f"the mirror registry the credentials of {user_variable} are for "
            "(host, optional port and path)",
        )
    registry = str(inputs["image_registry"]).split("/", 1)[0]
    return {
        "name": REGISTRY_SECRET_NAME,
        "namespace": operators["network_operator"]["namespace"],
        "registry": registry,
    }


def _images(inputs: Mapping) -> dict:
    release = NETWORK_OPERATOR_RELEASES[inputs["network_operator_release"]]
    registry = inputs["image_registry"]
    if registry is not None:
        registry = _string(
            variable("image_registry"),
            registry,
            _REGISTRY,
            "a registry host with optional port and path, e.g. mirror.example.com:5000/nvidia",
        )
    images = {}
    for component, image in release["components"].items():
        repository = image["repository"]
        if registry:
            # Keep the path below the host: nvcr.io/nvidia/mellanox -> <mirror>/nvidia/mellanox
            repository = registry.rstrip("/") + "/" + repository.split("/", 1)[1]
        images[component] = {**image, "repository": repository}
    return images


def _persistent_nic_names(inputs: Mapping) -> list[dict]:
    name = variable("persistent_nic_names")
    entries = _list(name, inputs["persistent_nic_names"])
    if len(entries) > MAX_PERSISTENT_NIC_NAMES:
        raise PlanError(
            name,
            f"{len(entries)} entries",
            f"at most {MAX_PERSISTENT_NIC_NAMES} (they share one MachineConfig, which "
            "must stay under the API server's 1.5 MiB request limit)",
        )
    rules = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{name}[{index}]"
        if not isinstance(entry, Mapping) or set(entry) != {"mac", "name"}:
            raise PlanError(where, entry, "a mapping with exactly 'mac' and 'name'")
        mac = entry["mac"]
        normalised = mac.lower() if isinstance(mac, str) else mac
        if isinstance(normalised, str) and _MAC_6.match(normalised):
            link_type = 1  # ARPHRD_ETHER
        elif isinstance(normalised, str) and _MAC_20.match(normalised):
            link_type = 32  # ARPHRD_INFINIBAND (IPoIB hardware address, 20 bytes)
        else:
            raise PlanError(
                f"{where}.mac",
                mac,
                "a MAC address: 6 bytes for Ethernet "
                "(b8:3f:d2:3b:51:29) or 20 bytes for IPoIB, hex pairs joined by ':'",
            )
        if normalised in seen:
            raise PlanError(
                f"{where}.mac", mac, f"an address not already in {name}[{seen[normalised]}]"
            )
        seen[normalised] = index
        # One name for many addresses is the point: every node's NIC of a rail gets the rail's
        # name (the MachineConfig goes to every node of the pool, each has its own addresses).
        nic_name = interface_name(f"{where}.name", entry["name"])
        rules.append({"mac": normalised, "name": nic_name, "type": link_type})
    return rules


def _node_selector(inputs: Mapping) -> dict:
    name = variable("node_selector")
    selector = _mapping(name, inputs["node_selector"])
    if not selector:
        raise PlanError(
            name,
            selector,
            "at least one label, e.g. {'feature.node.kubernetes.io/pci-15b3.present': 'true'}",
        )
    result = {}
    for key, value in selector.items():
        key_name = key.rsplit("/", 1)[-1] if isinstance(key, str) else key
        if (
            not isinstance(key, str)
            or not _LABEL_KEY_NAME.match(key_name or "")
            or len(key_name) > 63
        ):
            raise PlanError(f"{name} key", key, "a label key, e.g. node-role.kubernetes.io/worker")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise PlanError(f"{name}[{key}]", value, "a label value string (quote 'true')")
        result[key] = value
    return result


def _unknown_inputs(inputs: Mapping) -> None:
    for key in inputs:
        if key not in DEFAULTS:
            close = difflib.get_close_matches(key, DEFAULTS, n=1, cutoff=0.8)
            hint = f"did you mean {variable(close[0])}?" if close else "a known variable"
            raise PlanError(variable(key), inputs[key], hint)


def unknown_variables(names, known=None) -> list[tuple[str, str]]:
    """Prefixed variable names that look like misspelt known ones (the plan's inputs and the
    settings, unless `known` names others): (name, suggestion)."""
    known = tuple(known if known is not None else KNOWN_VARIABLES)
    found = []
    for name in names:
        if not name.startswith(PREFIX) or name[len(PREFIX) :] in known:
            continue
        if name.startswith(PREFIX + "aap_"):  # aap_configure.yml's own settings
            continue
        close = difflib.get_close_matches(name[len(PREFIX) :], known, n=1, cutoff=0.85)
        if close:
            found.append((name, variable(close[0])))
    return found


def _release_range(versions: str) -> tuple[str, str]:
    low, _dash, high = versions.partition("-")
    return low.lstrip("v"), (high or low).lstrip("v")


def _openshift_support(inputs: Mapping) -> list[dict]:
    """Which OpenShift minor versions the collection and the chosen operator releases support."""
    network = inputs["network_operator_release"]
    gpu = inputs["gpu_operator_release"]
    ranges = [
        ("gpudirect.rdma", SUPPORTED_OPENSHIFT),
        (
            f"NVIDIA Network Operator {network}",
            _release_range(NETWORK_OPERATOR_RELEASES[network]["openshift_versions"]),
        ),
        (
            f"NVIDIA GPU Operator {gpu}",
            _release_range(GPU_OPERATOR_RELEASES[gpu]["openshift_versions"]),
        ),
    ]
    return [{"component": name, "minimum": low, "maximum": high} for name, (low, high) in ranges]


# -- settings: the other inventory variables the playbooks read ----------------------------------
# Read by roles, not by the builders; validated here too, so a bad one fails at the plan, the
# first task of every playbook that reads it, before anything is written.
SETTINGS: dict[str, Any] = {
    "take_over": False,
    "render_dir": None,
    "verify_min_gbps": 100,
    "verify_nodes": [],
    "verify_image": None,
    "verify_keep_pods": False,
    "verify_report_dir": None,
    "verify_diagnostics": True,
    "uninstall_namespaces": False,
    "uninstall_machine_configs": False,
    "uninstall_timeout": 1800,
    "diagnostics_dir": None,
    "diagnostics_log_lines": 200,
    "diagnostics_namespaces": [],
}
# Set by the playbooks themselves (site.yml's plan, its rescue's failure): known, not validated.
INTERNAL_VARIABLES = ("plan", "diagnostics_failure")
KNOWN_VARIABLES = (*DEFAULTS, *SETTINGS, *INTERNAL_VARIABLES)
MAX_VERIFY_GBPS = 3200
MAX_UNINSTALL_TIMEOUT = 86400
MAX_LOG_LINES = 100000
SCOPES = ("all", "settings")
_IMAGE = re.compile(r"^[^\s]+$")


def check_number(name: str, value: Any, low: float, high: float | None, unit: str) -> float:
    """value as a number of unit from low to high (no upper bound when high is None), or
    PlanError naming name."""
    expected = f"a number of {unit} {_between(f'{low:g}', None if high is None else f'{high:g}')}"
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise PlanError(name, value, expected) from None
    if (
        isinstance(number, bool)
        or not isinstance(number, (int, float))
        or not low <= number <= (number if high is None else high)
    ):
        raise PlanError(name, value, expected)
    return number


def check_settings(given: Mapping) -> dict:
    """Validate the settings given (short names, see SETTINGS); return them with the defaults."""
    settings = {**SETTINGS, **{k: v for k, v in given.items() if v is not None}}
    for key in ("take_over", "verify_keep_pods", "verify_diagnostics"):
        settings[key] = _boolean(variable(key), settings[key])
    for key in ("uninstall_namespaces", "uninstall_machine_configs"):
        settings[key] = _boolean(variable(key), settings[key])
    for key in ("render_dir", "verify_report_dir", "diagnostics_dir"):
        if settings[key] is not None:
            settings[key] = _string(variable(key), settings[key], expected="a folder path")
    if settings["verify_image"] is not None:
        settings["verify_image"] = _string(
            variable("verify_image"),
            settings["verify_image"],
            _IMAGE,
            "a container image reference without white space, e.g. "
            "quay.io/edge-infrastructure/nvidia-tools:0.1.5",
        )
    settings["verify_min_gbps"] = check_number(
        variable("verify_min_gbps"), settings["verify_min_gbps"], 0, MAX_VERIFY_GBPS, "Gb/s"
    )
    name = variable("verify_nodes")
    settings["verify_nodes"] = [
        _dns_subdomain(f"{name}[{i}]", node)
        for i, node in enumerate(_list(name, settings["verify_nodes"]))
    ]
    settings["uninstall_timeout"] = check_integer(
        variable("uninstall_timeout"),
        settings["uninstall_timeout"],
        1,
        MAX_UNINSTALL_TIMEOUT,
        " (seconds each uninstall step may take)",
    )
    settings["diagnostics_log_lines"] = check_integer(
        variable("diagnostics_log_lines"),
        settings["diagnostics_log_lines"],
        0,
        MAX_LOG_LINES,
        " (0 reads no logs)",
    )
    name = variable("diagnostics_namespaces")
    settings["diagnostics_namespaces"] = [
        _dns_label(f"{name}[{i}]", namespace)
        for i, namespace in enumerate(_list(name, settings["diagnostics_namespaces"]))
    ]
    return settings


class MisspeltVariable(PlanError):
    """A prefixed variable that is no variable of the collection but looks like one."""

    def __init__(self, name: str, meant: str):
        super().__init__(name, None, f"{meant}?")
        self.meant = meant
        ValueError.__init__(
            self, f"{name}: not a variable of gpudirect.rdma; did you mean {meant}?"
        )


def check_inventory(
    variables: Mapping, overrides: Mapping | None = None, scope: str = "all"
) -> dict:
    """The validation a playbook runs first, over its variables (prefixed names; others are
    ignored): a misspelt name, then the plan's inputs (scope 'all'; overrides, short names, win
    over the variables), then the settings. Returns {'plan': ..., 'settings': ...}."""
    _choice("scope", scope, SCOPES)
    known = KNOWN_VARIABLES if scope == "all" else (*SETTINGS, *INTERNAL_VARIABLES)
    misspelt = unknown_variables(variables, known)
    if misspelt:
        raise MisspeltVariable(*misspelt[0])
    given = {
        key[len(PREFIX) :]: value for key, value in variables.items() if key.startswith(PREFIX)
    }
    result = {}
    if scope == "all":
        inputs = {key: value for key, value in given.items() if key in DEFAULTS}
        inputs.update(overrides or {})
        result["plan"] = build_plan(inputs)
    result["settings"] = check_settings({k: v for k, v in given.items() if k in SETTINGS})
    return result


# -- the plan ----------------------------------------------------------------------------------
def build_plan(given: Mapping) -> dict:
    """Validate the inputs (short names) and return the normalised plan (a new dict)."""
    _unknown_inputs(given)
    inputs = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    for required in ("method", "fabric", "interfaces"):
        if inputs[required] in (None, "", []):
            allowed = {
                "method": "one of " + ", ".join(METHODS),
                "fabric": "one of " + ", ".join(FABRICS),
                "interfaces": "a non-empty list of PF interface names, e.g. [ens8f0np0] "
                "or 'ens8f0np0,ens8f1np0'",
            }[required]
            raise PlanError(variable(required), inputs[required], allowed)
    method = _choice(variable("method"), inputs["method"], METHODS)
    fabric = _choice(variable("fabric"), inputs["fabric"], FABRICS)
    _choice(
        variable("network_operator_release"),
        str(inputs["network_operator_release"]),
        tuple(NETWORK_OPERATOR_RELEASES),
    )
    _choice(
        variable("gpu_operator_release"),
        str(inputs["gpu_operator_release"]),
        tuple(GPU_OPERATOR_RELEASES),
    )
    inputs["network_operator_release"] = str(inputs["network_operator_release"])
    inputs["gpu_operator_release"] = str(inputs["gpu_operator_release"])

    low, high = MTU_LIMITS[fabric]
    mtu = check_integer(variable("mtu"), inputs["mtu"], low, high, f" on {fabric}")
    num_vfs = check_integer(variable("sriov_num_vfs"), inputs["sriov_num_vfs"], 1, MAX_VFS)
    if fabric == "infiniband" and num_vfs > MAX_VFS_INFINIBAND and method == "sriov_legacy":
        raise PlanError(
            variable("sriov_num_vfs"),
            num_vfs,
            f"at most {MAX_VFS_INFINIBAND} VFs per PF on InfiniBand",
        )
    vlan = inputs["vlan"]
    if vlan is not None:
        if fabric == "infiniband":
            raise PlanError(
                variable("vlan"),
                vlan,
                "no vlan on InfiniBand (SriovIBNetwork has none): leave it unset",
            )
        if method != "sriov_legacy":
            raise PlanError(
                variable("vlan"),
                vlan,
                "no vlan with method " + method + ": only sriov_legacy over roce "
                "tags VF traffic (SriovNetwork.vlan)",
            )
        vlan = check_integer(variable("vlan"), vlan, 0, 4094)
    link_state = inputs["ib_link_state"]
    if link_state is not None:
        if not (fabric == "infiniband" and method == "sriov_legacy"):
            raise PlanError(
                variable("ib_link_state"),
                link_state,
                "unset unless method is sriov_legacy over infiniband (SriovIBNetwork)",
            )
        link_state = _choice(variable("ib_link_state"), link_state, IB_LINK_STATES)

    ipam_type = _choice(variable("ipam_type"), inputs["ipam_type"], IPAM_TYPES)
    rails = _rails(inputs, method, fabric)
    block_size = check_integer(
        variable("ipam_per_node_block_size"), inputs["ipam_per_node_block_size"], 1, 65536
    )
    if ipam_type == "nv-ipam":
        _nv_ipam_blocks(rails, block_size)
    operators = _operators(inputs)
    if isinstance(inputs["openshift_version"], float):
        raise PlanError(
            variable("openshift_version"),
            inputs["openshift_version"],
            "a quoted string such as '4.20' (YAML reads 4.20 unquoted as the number 4.2)",
        )
    openshift_version = _string(
        variable("openshift_version"),
        str(inputs["openshift_version"]),
        _OPENSHIFT_VERSION,
        "an OpenShift minor version such as 4.20",
    )
    nfd_image = inputs["nfd_operand_image"]
    if nfd_image is not None:
        nfd_image = _string(
            variable("nfd_operand_image"), nfd_image, expected="a container image reference"
        )
    secrets = [
        _dns_subdomain(f"{variable('image_pull_secrets')}[{i}]", s)
        for i, s in enumerate(_list(variable("image_pull_secrets"), inputs["image_pull_secrets"]))
    ]
    registry_secret = _registry_secret(inputs, operators)
    if registry_secret and registry_secret["name"] not in secrets:
        secrets.append(registry_secret["name"])

    return {
        "method": method,
        "fabric": fabric,
        "link_type": "ib" if fabric == "infiniband" else "eth",
        "rails": rails,
        "network_namespace": _dns_label(variable("network_namespace"), inputs["network_namespace"]),
        "ipam": {
            "type": ipam_type,
            "per_node_block_size": block_size,
        },
        "mtu": mtu,
        "shared_device": {
            "rdma_hca_max": check_integer(
                variable("rdma_hca_max"), inputs["rdma_hca_max"], 1, 1000
            ),
        },
        "sriov": {
            "num_vfs": num_vfs,
            "policy_name": _dns_subdomain(
                variable("sriov_policy_name"), inputs["sriov_policy_name"]
            ),
            "priority": check_integer(variable("sriov_priority"), inputs["sriov_priority"], 0, 99),
            "vlan": vlan,
            "link_state": link_state,
        },
        "node_selector": _node_selector(inputs),
        "gpu": {
            "memory": _choice(variable("gpu_memory"), inputs["gpu_memory"], GPU_MEMORY_MODES),
            "gds": _boolean(variable("gpu_gds"), inputs["gpu_gds"]),
            "gdrcopy": _boolean(variable("gpu_gdrcopy"), inputs["gpu_gdrcopy"]),
            "release": inputs["gpu_operator_release"],
        },
        "operators": operators,
        "network_operator_release": inputs["network_operator_release"],
        "images": _images(inputs),
        "image_pull_secrets": secrets,
        "image_registry_secret": registry_secret,
        "openshift_version": openshift_version,
        "openshift_support": _openshift_support(inputs),
        "nfd": {
            # An explicit image wins; else the installed CSV's; else the OpenShift release's.
            "operand_image": nfd_image,
            "default_operand_image": (
                "registry.redhat.io/openshift4/ose-node-feature-discovery-rhel9:v"
                + openshift_version
            ),
        },
        "machine_configs": {
            "role": _dns_label(variable("machine_config_role"), inputs["machine_config_role"]),
            "blacklist_irdma": _boolean(variable("blacklist_irdma"), inputs["blacklist_irdma"]),
            "crio_memlock": _boolean(variable("crio_memlock"), inputs["crio_memlock"]),
            "persistent_nic_names": _persistent_nic_names(inputs),
        },
    }
