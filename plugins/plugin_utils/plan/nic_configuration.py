"""The NICs' firmware settings (opt-in): the NIC types the NicConfigurationTemplates select, the
RoCE QoS they set, the NIC Configuration Operator's firmware reset, and the Maintenance
Operator's budgets. Facts: the Network Operator v26.4.1's supported-firmware ConfigMap (the PCI
device IDs) and the NIC Configuration Operator's template validation."""

from __future__ import annotations

import re

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (
    NIC_TYPES,
)

from .checks import PlanError, minor_version
from .inputs import Inputs

_DEVICE_ID = re.compile(r"^[0-9a-f]{4}$")
_BUDGET = re.compile(r"^([0-9]+)%?$")
PRIORITIES = 8


def nic_types(inputs: Inputs) -> list[str]:
    """The PCI device IDs of the inventory's NIC types (names or IDs), each once, in order."""
    name, given = inputs.name("nic_type"), inputs["nic_type"]
    if isinstance(given, str):
        given = [item.strip() for item in given.split(",") if item.strip()]
    if not isinstance(given, (list, tuple)):
        raise PlanError(name, given, "a list of NIC types, e.g. [ConnectX-7] or ['1021']")
    found: list[str] = []
    lowered = {key.lower(): value for key, value in NIC_TYPES.items()}
    for index, entry in enumerate(given):
        where = f"{name}[{index}]"
        if isinstance(entry, int):
            raise PlanError(
                where, entry, "the PCI device ID as a quoted string ('1021'; YAML read a number)"
            )
        text = entry.strip() if isinstance(entry, str) else entry
        device_id = lowered.get(text.lower()) if isinstance(text, str) else None
        if device_id is None and isinstance(text, str) and _DEVICE_ID.match(text.lower()):
            device_id = text.lower()
        if device_id is None:
            raise PlanError(
                where,
                entry,
                "a NIC type: one of " + ", ".join(NIC_TYPES) + ", or a PCI device ID of four hex "
                "digits such as '1021' (ConnectX-7)",
            )
        if device_id in found:
            raise PlanError(where, entry, f"a NIC type not already in {name}")
        found.append(device_id)
    return found


def node_budget(inputs: Inputs, key: str, low: int) -> int | str | None:
    """A budget of nodes (the Maintenance Operator's, a driver upgrade's): a whole number, or a
    percentage ('25%')."""
    name, given = inputs.name(key), inputs[key]
    if given in (None, ""):
        return None
    expected = f"a whole number of nodes (at least {low}) or a percentage of nodes such as '25%'"
    if isinstance(given, bool) or not isinstance(given, (int, str)):
        raise PlanError(name, given, expected)
    match = _BUDGET.match(str(given).strip())
    if not match or int(match.group(1)) < low:
        raise PlanError(name, given, expected)
    if str(given).strip().endswith("%"):
        if int(match.group(1)) > 100:
            raise PlanError(name, given, "a percentage from 0% to 100%")
        return str(given).strip()
    return int(match.group(1))


# The RoCE QoS settings the NIC Configuration Operator takes from Network Operator 26.7 on
# (nicconfigurationtemplate_types.go: qos.ecn, qos.pauseFrames, qos.cableLen).
QOS_SINCE = (26, 7)
NEWER_QOS = ("roce_ecn", "roce_pause_frames", "roce_cable_length")


def _newer_qos(inputs: Inputs, network_release: str) -> dict:
    """ecn, pause_frames, cable_length: each None when unset; set, a Network Operator release
    whose templates take it."""
    # An AAP survey sends an empty answer for a setting left unset.
    found = {key: None if inputs[key] == "" else inputs.checked(key) for key in NEWER_QOS}
    for key, value in found.items():
        if value is not None and minor_version(network_release) < QOS_SINCE:
            raise PlanError(
                inputs.name(key),
                value,
                "it unset with "
                f"{inputs.name('network_operator_release')} {network_release}: the NIC "
                "Configuration Operator takes it from Network Operator 26.7 on",
            )
    return {
        "ecn": found["roce_ecn"],
        "pause_frames": found["roce_pause_frames"],
        "cable_length": found["roce_cable_length"],
    }


def settings(inputs: Inputs, groups: list[dict], network_release: str) -> dict:
    """plan['nic_configuration']: on or off, the RoCE QoS, the firmware reset, the Maintenance
    Operator's budgets. The NIC types are per node group (groups.py)."""
    priority = inputs.checked("roce_pfc_priority")
    return {
        "enabled": inputs.checked("nic_configuration"),
        "priority": priority,
        "pfc": ",".join("1" if p == priority else "0" for p in range(PRIORITIES)),
        "trust": inputs.checked("roce_qos_trust"),
        **_newer_qos(inputs, network_release),
        "firmware_reset": inputs.checked("nic_firmware_reset"),
        "maintenance": {
            # An empty survey answer is the default.
            "max_parallel": node_budget(inputs, "maintenance_max_parallel", 1) or 1,
            "max_unavailable": node_budget(inputs, "maintenance_max_unavailable", 0),
            "timeout_seconds": inputs.checked("maintenance_timeout_seconds"),
        },
    }
