"""Node groups: sets of nodes that differ (their NICs, their interface names, their fabric, their
DOCA driver), each with a node selector and its own network. `groups(inputs, driver)` returns
the plan's groups: the inventory's `gpudirect_rdma_node_groups`, each entry's keys over the
global variables of the same name, or, without them, one implicit group of the global variables
(whose objects are named as they always were). The NIC policy model (one NicClusterPolicy, or a
NicNodePolicy per group) and the DOCA driver pin are decided here too."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

from . import checks, nic_configuration, rails, unused
from .checks import PlanError
from .inputs import Inputs, node_selector

# The keys a node group may set; what it leaves out comes from the global variable of the name.
GROUP_KEYS = (
    "name",
    "node_selector",
    "interfaces",
    "method",
    "fabric",
    "sriov_num_vfs",
    "mtu",
    "ipam_range",
    "doca_driver_version",
    "nic_type",
)
# The Network Operator's admission webhook refuses longer NicNodePolicy names (v26.4.1:
# maxNicNodePolicyNameLength; its message says 50, the rule is 30).
MAX_NIC_NODE_POLICY_NAME = 30
# The DOCA driver versions the Network Operator's admission webhook takes (isValidOFEDVersion,
# the same from 26.1 to 26.7): a DOCA release, docaX.Y[.Z]-YY.MM- then exactly four dotted
# numbers and -N (doca3.5.0-26.07-0.7.7.0-0; a fifth number, as in doca3.3.1-26.01-1.0.0.0.305-0,
# is refused); a release without the prefix (24.10-0.7.0.0-0); either with suffixes (a
# precompiled image's kernel); or an image digest.
_DOCA_VERSION = re.compile(
    r"^doca[0-9]+\.[0-9]+(\.[0-9]+)?-[0-9]+\.[0-9]+-[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+-[0-9]+(-[\w.\-]+)*$"
    r"|^[0-9]+\.[0-9]+-[0-9]+(\.[0-9]+)*(-[0-9]+)?(-[\w.\-]+)*$"
    r"|^sha256:[0-9a-fA-F]{64}$"
)
DOCA_VERSION_FORMS = (
    "a DOCA driver version as the Network Operator's webhook takes it: "
    "docaX.Y[.Z]-YY.MM-a.b.c.d-N with exactly four numbers a.b.c.d (doca3.5.0-26.07-0.7.7.0-0), "
    "a release without the prefix (24.10-0.7.0.0-0), either with a precompiled kernel suffix, "
    "or sha256:<64 hex>"
)
MODELS = ("cluster", "node")


def doca_driver_version(inputs: Inputs, default: str) -> str:
    """The DOCA driver version of a set of nodes: its doca_driver_version, else the release's."""
    given = inputs["doca_driver_version"]
    if given in (None, ""):
        return default
    return checks.string(
        inputs.name("doca_driver_version"), given, _DOCA_VERSION, DOCA_VERSION_FORMS
    )


def _entries(inputs: Inputs) -> list[Mapping]:
    name, given = inputs.name("node_groups"), inputs["node_groups"]
    if not isinstance(given, (list, tuple)):
        raise PlanError(
            name, given, "a list of node groups, each a mapping with name and node_selector"
        )
    seen: dict[str, int] = {}
    for index, entry in enumerate(given):
        where = f"{name}[{index}]"
        if not isinstance(entry, Mapping):
            raise PlanError(where, entry, "a mapping with at least name and node_selector")
        checks.known_keys(where, entry, GROUP_KEYS)
        group = entry.get("name")
        checks.dns_label(f"{where}.name", group)
        if len(group) > MAX_NIC_NODE_POLICY_NAME:
            raise PlanError(
                f"{where}.name",
                group,
                f"at most {MAX_NIC_NODE_POLICY_NAME} characters (it names the group's "
                "NicNodePolicy, which the Network Operator's webhook refuses longer)",
            )
        if group in seen:
            raise PlanError(
                f"{where}.name", group, f"a name not already used by {name}[{seen[group]}]"
            )
        seen[group] = index
        if "node_selector" not in entry and len(given) > 1:
            raise PlanError(
                f"{where}.node_selector",
                None,
                "the labels of this group's nodes: with several groups, each needs its own (the "
                "global gpudirect_rdma_node_selector would select the other groups' nodes too)",
            )
    return list(given)


def model(inputs: Inputs, count: int) -> str:
    """cluster (one NicClusterPolicy holds the DOCA driver and the device plugins) or node (a
    NicNodePolicy per group holds them); node when there are several groups."""
    name, given = inputs.name("nic_policy_model"), inputs["nic_policy_model"]
    if given in (None, ""):
        return "node" if count > 1 else "cluster"
    checks.choice(name, given, MODELS)
    if given == "cluster" and count > 1:
        raise PlanError(
            name,
            given,
            f"node with {count} node groups (one NicClusterPolicy cannot give groups different "
            "interfaces, device plugins or DOCA drivers; each group gets a NicNodePolicy)",
        )
    return given


def _group(
    inputs: Inputs,
    name: str | None,
    default_driver: str,
    several: bool = False,
    shared: rails.SharedRange | None = None,
) -> dict:
    network = rails.network(inputs, name if several else None, shared)
    return {
        "name": name,
        "node_selector": node_selector(inputs),
        **network,
        "doca_driver_version": doca_driver_version(inputs, default_driver),
        # The NicConfigurationTemplates' NIC types (PCI device IDs); empty: the NicDevices'.
        "nic_types": nic_configuration.nic_types(inputs),
    }


def groups(inputs: Inputs, default_driver: str, warnings: list[str]) -> list[dict]:
    """The plan's node groups, each with its network (rails.network) and its DOCA driver
    version; one implicit group (name None) without gpudirect_rdma_node_groups. A setting
    unused while an opt-in is off adds a warning to warnings (unused.py)."""
    entries = _entries(inputs)
    if not entries:
        result = [_group(inputs, None, default_driver)]
        warnings.extend(unused.refuse_unused(inputs, [inputs], result))
        return result
    if inputs["interfaces"] is not None and all("interfaces" in e for e in entries):
        # Never silently unused (an AAP survey's answer, say).
        raise PlanError(
            inputs.name("interfaces"),
            inputs["interfaces"],
            f"no value: every group of {inputs.name('node_groups')} names its own interfaces, "
            "so this one would be used by none (the AAP surveys, which ask for it, are for "
            "inventories without node groups)",
        )
    each = []
    for index, entry in enumerate(entries):
        where = f"{inputs.name('node_groups')}[{index}]"
        given = {key: value for key, value in entry.items() if key != "name"}
        each.append(
            Inputs(
                {**{k: v for k, v in inputs.items() if v is not None}, **given},
                names={**inputs.names, **{key: f"{where}.{key}" for key in given}},
            )
        )
    # The global ipam_range, split once over the rails of every group that takes it.
    takers = [
        (
            entry["name"],
            [False] * len(rails.entries(group_inputs))
            if "ipam_range" in entry
            else ["ipam_range" not in rail for rail in rails.entries(group_inputs)],
        )
        for entry, group_inputs in zip(entries, each, strict=True)
    ]
    shared = rails.shared_ranges(inputs, takers)
    result = [
        _group(group_inputs, entry["name"], default_driver, len(entries) > 1, part)
        for entry, group_inputs, part in zip(entries, each, shared, strict=True)
    ]
    _apart(inputs, result)
    warnings.extend(unused.refuse_unused(inputs, each, result))
    return result


def _apart(inputs: Inputs, found: list[dict]) -> None:
    """Two groups never select nodes by the same labels, and their networks' ranges are either
    one range (whereabouts then hands out each address once, whichever group's network asks) or
    apart; nv-ipam keeps a pool per network, so there every range must be apart."""
    name = inputs.name("node_groups")
    for index, group in enumerate(found):
        for other_index, other in enumerate(found[:index]):
            if group["node_selector"] == other["node_selector"]:
                raise PlanError(
                    f"{name}[{index}].node_selector",
                    group["node_selector"],
                    f"labels apart from {name}[{other_index}]'s ({other['name']}): a node matched "
                    "by two groups would get two NicNodePolicies, which the Network Operator "
                    "refuses",
                )
            for rail in group["rails"]:
                for other_rail in other["rails"]:
                    if rail["network_name"] == other_rail["network_name"]:
                        raise PlanError(
                            f"{name}[{index}].interfaces[{rail['index']}].network_name",
                            rail["network_name"],
                            f"a network name group {other['name']} does not use",
                        )
                    _ranges_apart(inputs, (index, group, rail), (other_index, other, other_rail))


def _ranges_apart(inputs: Inputs, this: tuple, that: tuple) -> None:
    index, group, rail = this
    other_index, other, other_rail = that
    mine = ipaddress.ip_network(rail["ipam"]["network"])
    theirs = ipaddress.ip_network(other_rail["ipam"]["network"])
    if mine.version != theirs.version or not mine.overlaps(theirs):
        return
    if mine == theirs and group["ipam"]["type"] == "whereabouts":
        return
    shared = "apart from" if group["ipam"]["type"] == "nv-ipam" else "the same as, or apart from,"
    variable, written, mine_shown = _range_source(inputs, index, group, rail)
    _other_variable, _other_written, theirs_shown = _range_source(
        inputs, other_index, other, other_rail
    )
    raise PlanError(
        variable,
        written,
        f"a range whose part for group {group['name']}'s rail {rail['index']} ({mine_shown}) is "
        f"{shared} group {other['name']}'s rail {other_rail['index']} ({theirs_shown}) "
        f"({group['ipam']['type']})",
    )


def _range_source(inputs: Inputs, index: int, group: dict, rail: dict) -> tuple[str, str, str]:
    """The variable a rail's range came from as the inventory names it, the value written
    there, and the rail's range said with where it came from."""
    part_of = rail["ipam"].get("part_of")
    if part_of:
        return (
            part_of["variable"],
            part_of["range"],
            f"{rail['ipam']['range']}, its part of {part_of['variable']} {part_of['range']}",
        )
    where = f"{inputs.name('node_groups')}[{index}]"
    own = f"{where}.interfaces[{rail['index']}].ipam_range"
    entry = (inputs["node_groups"] or [{}])[index]
    variable = f"{where}.ipam_range" if "ipam_range" in entry else inputs.name("ipam_range")
    for position, item in enumerate(entry.get("interfaces") or []):
        if position == rail["index"] and isinstance(item, Mapping) and "ipam_range" in item:
            variable = own
    return variable, rail["ipam"]["range"], f"{rail['ipam']['range']}, from {variable}"
