"""One rule for settings that nothing in the plan would use: each input that only some plans use
is listed once with what uses it, and a value the user set (anything but its default) that no node
group would use is refused, naming what would use it; one that is unused only because an opt-in
(the NIC firmware settings, monitoring) is off gets a warning instead (turning it off keeps its
settings). An AAP survey sends every answer, its defaults included: a value equal to the default is
never refused.

A value set in a node group must be used by that group; a global value must be used by at least
one group that takes it (one without its own value of that key)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.monitoring import THRESHOLDS

from .checks import PlanError
from .inputs import DEFAULTS, OPTIONS, PREFIX, Inputs

# The opt-ins, by their input: with one off, what only it would use is kept with a warning.
OPT_INS = ("nic_configuration", "monitoring")


@dataclass(frozen=True)
class Use:
    """What uses an input: a test of one built group (rails.network's result, with the inputs it
    came from and the opt-ins that are on), and the words that name it."""

    uses: Callable[[dict, Inputs, frozenset], bool]
    by: str


def _method(method: str, fabric: str | None = None) -> Callable[[dict, Inputs, frozenset], bool]:
    return lambda group, _inputs, _on: (
        group["method"] == method and (fabric is None or group["fabric"] == fabric)
    )


def _nic_configuration(group: dict, _inputs: Inputs, on: frozenset) -> bool:
    return "nic_configuration" in on


def _monitoring(group: dict, _inputs: Inputs, on: frozenset) -> bool:
    return "monitoring" in on


def _roce_qos(group: dict, _inputs: Inputs, on: frozenset) -> bool:
    return "nic_configuration" in on and group["fabric"] == "roce"


def _pfc_priority(group: dict, _inputs: Inputs, on: frozenset) -> bool:
    return group["fabric"] == "roce" and bool({"nic_configuration", "monitoring"} & on)


def _nv_ipam(group: dict, _inputs: Inputs, _on: frozenset) -> bool:
    return group["ipam"]["type"] == "nv-ipam"


_NIC = f"{PREFIX}nic_configuration: true (the NIC Configuration Operator's templates)"
_MAINTENANCE = f"{PREFIX}nic_configuration: true (the Maintenance Operator it installs)"
_SRIOV = "a node group with method sriov_legacy"
USES: dict[str, Use] = {
    "nic_type": Use(_nic_configuration, _NIC),
    "nic_firmware_reset": Use(_nic_configuration, _NIC),
    "roce_pfc_priority": Use(
        _pfc_priority,
        f"{_NIC} on a RoCE node group, or {PREFIX}monitoring: true on one (its PFC pause alert)",
    ),
    "maintenance_max_parallel": Use(_nic_configuration, _MAINTENANCE),
    "maintenance_max_unavailable": Use(_nic_configuration, _MAINTENANCE),
    "maintenance_timeout_seconds": Use(_nic_configuration, _MAINTENANCE),
    "rdma_hca_max": Use(_method("shared_device"), "a node group with method shared_device"),
    "shared_device_resource_name": Use(
        _method("shared_device"), "a node group with method shared_device"
    ),
    "host_device_resource_name": Use(
        _method("host_device"), "a node group with method host_device"
    ),
    "sriov_num_vfs": Use(_method("sriov_legacy"), _SRIOV),
    "sriov_resource_name": Use(_method("sriov_legacy"), _SRIOV),
    "sriov_policy_name": Use(_method("sriov_legacy"), _SRIOV),
    "sriov_priority": Use(_method("sriov_legacy"), _SRIOV),
    "vlan": Use(
        _method("sriov_legacy", "roce"),
        "a node group with method sriov_legacy over roce (SriovNetwork.vlan; InfiniBand and the "
        "other methods tag no VF traffic)",
    ),
    "ib_link_state": Use(
        _method("sriov_legacy", "infiniband"),
        "a node group with method sriov_legacy over infiniband (SriovIBNetwork.linkState)",
    ),
    "ipam_per_node_block_size": Use(
        _nv_ipam, f"{PREFIX}ipam_type: nv-ipam (IPPool perNodeBlockSize)"
    ),
}
for _key in ("roce_qos_trust", "roce_ecn", "roce_pause_frames", "roce_cable_length"):
    USES[_key] = Use(
        _roce_qos,
        f"{_NIC} on a RoCE node group: roceOptimized, the RoCE QoS, is for RoCE only, and the "
        "NIC Configuration Operator refuses it with linkType Infiniband (IncorrectSpec)",
    )
for _key in THRESHOLDS:
    USES[f"monitoring_{_key}"] = Use(_monitoring, f"{PREFIX}monitoring: true (its alerts)")


def _value(inputs: Inputs, key: str) -> Any:
    """A value as the plan reads it (a survey's 'true' is True, '3' is 3), text compared as
    written otherwise ('1' and 1 budgets alike); None when unset. Every value is checked already."""
    value = inputs[key]
    if value in (None, "") or value == []:
        return None
    if OPTIONS[key].get("type") in ("bool", "int"):
        return inputs.checked(key)
    return str(value).strip().lower()


def _set(inputs: Inputs, key: str) -> bool:
    return _value(inputs, key) not in (None, _value(Inputs({}), key))


def _unused(use: Use, default: Any, where: str) -> str:
    kept = "no value" if default in (None, "", []) else f"no value or its default {default!r}"
    return f"{kept}: only {use.by} uses it, and {where}"


def _kept_for_the_opt_ins(use: Use, group: dict, inputs: Inputs, on: frozenset) -> list[str]:
    """The opt-ins that are off and would make the group use it, each alone. Turning an opt-in
    off (docs/nic-configuration.md, docs/monitoring.md) keeps its settings for when it is on
    again, so that is a warning, not a refusal."""
    return [o for o in OPT_INS if o not in on and use.uses(group, inputs, on | {o})]


def opt_ins_on(inputs: Inputs) -> frozenset:
    """The opt-ins the inputs turn on."""
    return frozenset(o for o in OPT_INS if inputs.checked(o))


def refuse_unused(inputs: Inputs, each: list[Inputs], built: list[dict]) -> list[str]:
    """Raise PlanError for the first input set where no group would use it; return a warning
    for each one unused only while an opt-in is off. inputs: the global ones; each: every
    group's inputs (the global ones with the group's keys over them, naming those keys as the
    group's), in order; built: the groups rails.network made of them."""
    on = opt_ins_on(inputs)
    several = len(built) > 1
    warnings = []
    for key, use in USES.items():
        takers, kept = [], []
        for group_inputs, group in zip(each, built, strict=True):
            used = use.uses(group, group_inputs, on)
            own = group_inputs.name(key) != inputs.name(key)
            if own and not used and _value(group_inputs, key) is not None:
                off = _kept_for_the_opt_ins(use, group, group_inputs, on)
                if off:
                    warnings.append(_off(group_inputs.name(key), use, off))
                    continue
                raise PlanError(
                    group_inputs.name(key),
                    group_inputs[key],
                    _unused(use, None, f"group {group['name']} is not one"),
                )
            if not own:
                takers.append(used)
                kept.extend(_kept_for_the_opt_ins(use, group, group_inputs, on))
        if _set(inputs, key) and not any(takers):
            if kept:
                warnings.append(_off(inputs.name(key), use, [o for o in OPT_INS if o in kept]))
                continue
            where = (
                "no node group that takes this variable (sets no value of its own) is one"
                if several
                else "this plan has none"
            )
            raise PlanError(inputs.name(key), inputs[key], _unused(use, DEFAULTS[key], where))
    return warnings


def _off(name: str, use: Use, off: list[str]) -> str:
    which = " and ".join(PREFIX + o for o in off)
    return (
        f"{name} is set but unused while {which} {'is' if len(off) == 1 else 'are'} false: only "
        f"{use.by} uses it (kept for when it is turned on again)"
    )
