"""The NICs' firmware settings for GPUDirect RDMA (opt-in, gpudirect_rdma_nic_configuration): one
NicConfigurationTemplate per node group and NIC type, which the NIC Configuration Operator (run
by the NicClusterPolicy) applies node by node under the Maintenance Operator's budgets."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    group_plans,
    owned_by_collection,
)

from .base import EVERYWHERE, Disruption, Setting, Step, selected_nodes
from .checks import NODE_READS, Check, Facts, Read, finding, matching, variable, which


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    """Each NicConfigurationTemplate is applied: every NicDevice it lists has it in its spec and
    ConfigUpdateInProgress reason UpdateSuccessful at its current generation (the NIC
    configuration check, k8s/nic_configuration.py: device errors and a paused Maintenance
    Operator fail the gate, a node in maintenance or rebooting is progress)."""
    return [gate.template_applied(t) for t in nic_configuration.nic_configuration_templates(plan)]


def reset_done(template: dict) -> list[dict]:
    """Once a live template asks for resetToDefault, each of its devices is back at the
    firmware's defaults (the same check: the devices hold the reset in their spec)."""
    return [gate.template_applied(template, "reset to the firmware defaults")]


def check_nic_types(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """NIC types no NicDevice of a group's nodes has, and somebody else's template that would
    select the same devices as one of the plan's (the NIC Configuration Operator then applies
    neither)."""
    found = []
    devices = [
        {
            "name": d["metadata"]["name"],
            "node": (d.get("status") or {}).get("node"),
            "type": (d.get("status") or {}).get("type"),
        }
        for d in facts.all(nic_configuration.API_VERSION, "NicDevice")
    ]
    for view in group_plans(plan):
        nodes = {n["name"] for n in matching(view["node_selector"], facts.nodes)}
        on_nodes = [d for d in devices if d["node"] in nodes]
        if not view["nic_types"]:
            continue
        types = ", ".join(map(nic_configuration.nic_type, view["nic_types"]))
        if not on_nodes:
            found.append(
                finding(
                    "nic-configuration",
                    "skipped",
                    f"{which(view)}no NicDevice on the selected nodes yet: the NIC types "
                    f"{types} are checked once the NIC configuration daemon runs",
                )
            )
            continue
        present = sorted({d["type"] for d in on_nodes if d["type"]})
        have = ", ".join(map(nic_configuration.nic_type, present))
        for device_id in view["nic_types"]:
            if device_id not in present:
                found.append(
                    finding(
                        "nic-configuration",
                        "error",
                        f"{which(view)}{variable(view, 'nic_type')} "
                        f"{nic_configuration.nic_type(device_id)}: no NicDevice of that type on "
                        f"the selected nodes (they have {have}); its template would configure "
                        "nothing",
                    )
                )
    found += _overlapping_templates(objects, facts)
    if not found:
        found.append(finding("nic-configuration", "ok", "NIC types found, no template overlaps"))
    return found


def _overlapping_templates(objects: list[dict], facts: Facts) -> list[dict]:
    found = []
    planned = [o for o in objects if o["kind"] == "NicConfigurationTemplate"]
    for theirs in facts.all(nic_configuration.API_VERSION, "NicConfigurationTemplate"):
        if owned_by_collection(theirs):
            continue
        spec = theirs.get("spec") or {}
        selector = spec.get("nicSelector") or {}
        for ours in planned:
            if selector.get("nicType") != ours["spec"]["nicSelector"]["nicType"]:
                continue
            mine = {n["name"] for n in matching(ours["spec"]["nodeSelector"], facts.nodes)}
            both = sorted(
                n["name"]
                for n in matching(spec.get("nodeSelector") or {}, facts.nodes)
                if n["name"] in mine
            )
            if not both:
                continue
            narrowed = any(
                selector.get(k) for k in ("pciAddresses", "serialNumbers", "partNumbers")
            )
            metadata = theirs["metadata"]
            found.append(
                finding(
                    "nic-configuration",
                    "warning" if narrowed else "error",
                    f"NicConfigurationTemplate {metadata.get('namespace')}/{metadata['name']} (not "
                    f"gpudirect.rdma's) selects nicType {selector.get('nicType')} on "
                    f"{', '.join(both[:5])}{' ...' if len(both) > 5 else ''}, as "
                    f"{ours['metadata']['name']} does: a device two templates match gets neither "
                    "(the NIC Configuration Operator clears its configuration)"
                    + (
                        "; its nicSelector narrows it to some devices: check they differ"
                        if narrowed
                        else "; remove it, or narrow its nodeSelector or nicSelector.pciAddresses"
                    ),
                )
            )
    return found


STEP = Step(
    name="nic-configuration",
    title="NIC firmware configuration (opt-in: gpudirect_rdma_nic_configuration)",
    role="nic_configuration",
    operator=None,
    operand=lambda plan, csv: nic_configuration.nic_configuration_templates(plan),
    kinds=((nic_configuration.API_VERSION, "NicConfigurationTemplate"),),
    gates=gates,
    settings=(
        Setting(
            "ready_timeout",
            "nic_configuration_timeout",
            3600,
            (
                "Seconds to wait until every NicDevice of every template reports "
                "C(UpdateSuccessful) (nodes drain and reboot one maintenance budget at a time), "
                "and, without C(gpudirect_rdma_nic_type), for the NicDevices to appear.",
            ),
        ),
    ),
    # Once the DOCA driver is ready (the NicClusterPolicy's or the NicNodePolicies'), as NVIDIA
    # requires, after the MachineConfigs' reboots, beside the GPU Operator's wave, and before
    # the RDMA method's objects, which use the configured NICs.
    wave=4,
    prunes=True,
    enabled=nic_configuration.enabled,
    opt_in="nic_configuration",
    discover=nic_configuration.with_discovered_types,
    # resetToDefault: every device goes back to its firmware defaults (a reboot each).
    reset=({"spec": {"resetToDefault": True}}, reset_done),
    # A template removed leaves the firmware as it is (uninstall's reset puts it back).
    disruptions=(
        Disruption(
            "NIC firmware template",
            "nic-firmware",
            ((nic_configuration.API_VERSION, "NicConfigurationTemplate"),),
            "spec.template",
            selected_nodes,
            on_remove=False,
        ),
    ),
    namespaces=lambda plan: [plan["operators"]["maintenance_operator"]["namespace"]],
    # Anybody's templates (two on one device apply neither), and the devices with their
    # conditions.
    diagnostics=(
        (nic_configuration.API_VERSION, "NicConfigurationTemplate", EVERYWHERE),
        (nic_configuration.API_VERSION, "NicDevice", EVERYWHERE),
    ),
    preflight=(
        Check(
            "nic-configuration",
            check_nic_types,
            lambda plan, objects: (
                *NODE_READS,
                Read(nic_configuration.API_VERSION, "NicDevice"),
                Read(nic_configuration.API_VERSION, "NicConfigurationTemplate"),
            ),
        ),
    ),
)
