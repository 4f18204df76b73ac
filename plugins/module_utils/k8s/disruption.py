"""Disruption: what this run's changes do to nodes, said before the first write, and refused
unless the inventory agrees.

Each step declares the parts of its objects whose change acts on nodes (steps.base.Disruption: a
MachineConfig reboots its pool, a NIC policy's DOCA driver section reloads the driver, ...).
Preflight reads what the cluster holds of those kinds, and for every node compares what serves it
now (the live objects: the collection's, and any of a name the plan writes) with what will serve
it after the run (the planned objects): a part that changes, comes or goes is a disruption of
that node. Pure: the facts in, findings out.

A node that already has something of what the collection configures (a part of any declared kind)
is in service: a disruption there is an error unless gpudirect_rdma_allow_disruption names its
effect (or `all`), so site.yml stops before its first write and says how to agree. On a node with
none of it yet (a first install) the same changes are listed as warnings: nothing of the
collection's runs there to disrupt.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    owned_by_collection,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import contains
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import STEPS
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.checks import (
    NODE_READS,
    Facts,
    Read,
    finding,
)

CHECK = "disruption"
VARIABLE = "gpudirect_rdma_allow_disruption"
ALL = "all"
# Each effect a change can have on a node, and what it means there.
EFFECTS = {
    "reboot": "the MachineConfigPool drains and reboots these nodes, one at a time",
    "drain": (
        "the SR-IOV config daemon drains these nodes to set up the VFs, and reboots them when a "
        "NIC's VF count changes in its firmware"
    ),
    "driver-reload": (
        "the DOCA driver is loaded, reloaded or removed: every port of these nodes' NVIDIA NICs "
        "goes down meanwhile, and pods using them lose their RDMA devices"
    ),
    "device-plugin": (
        "the RDMA device plugin is replaced or removed: running pods keep their devices, new pods "
        "cannot get them until it is back"
    ),
    "nic-firmware": (
        "the NIC firmware settings change: the Maintenance Operator drains and reboots these "
        "nodes, one at a time"
    ),
    "gpu-driver": "the GPU driver is rolled: GPU pods are evicted while it reloads",
}
CHOICES = (ALL, *EFFECTS)
SHOWN_NODES = 8


def declared() -> list:
    """Every step's Disruption, in the table's order."""
    return [d for step in STEPS for d in step.disruptions]


def reads(plan: dict, objects: list[dict]) -> tuple[Read, ...]:
    selector = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
    found = dict.fromkeys(NODE_READS)
    for disruption in declared():
        for kind in disruption.kinds:
            found[Read(*kind, label_selector=selector if disruption.owned_only else None)] = None
    return tuple(found)


def allowed(plan: dict) -> set[str]:
    given = set(plan.get("allow_disruption") or [])
    return set(EFFECTS) if ALL in given else given


def _identity(obj: dict) -> str:
    metadata = obj["metadata"]
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{obj['kind']} {where}{metadata['name']}"


def _part(obj: dict, path: str | None):
    value = obj.get("spec")
    for key in (path or "spec").split(".")[1:]:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return value


def _serving(disruption, objects: list[dict], nodes: list[dict]) -> dict[str, dict[str, object]]:
    """node -> {the identity of each object whose part acts on it: that part}."""
    ofkind = [
        o
        for o in objects
        if (o["apiVersion"], o["kind"]) in disruption.kinds
        and _part(o, disruption.path) is not None
    ]
    served: dict[str, dict[str, object]] = {}
    for obj in ofkind:
        for node in disruption.covers(obj, nodes, ofkind):
            served.setdefault(node, {})[_identity(obj)] = _part(obj, disruption.path)
    return served


def _live(disruption, planned: list[dict], facts: Facts) -> list[dict]:
    """What the cluster holds of the kinds that the run keeps or removes: the collection's
    objects, and any other of a name the plan writes (taken over)."""
    names = {_identity(o) for o in planned}
    return [
        o
        for kind in disruption.kinds
        for o in facts.all(*kind)
        if owned_by_collection(o) or _identity(o) in names
    ]


def _change(disruption, before: dict, after: dict) -> str | None:
    """How a node's serving objects change, in words; None when they do not (or only in a way
    the declaration does not count)."""
    added = sorted(k for k in after if k not in before)
    removed = sorted(k for k in before if k not in after)
    changed = sorted(k for k in after if k in before and not contains(before[k], after[k]))
    if before and after and added and removed and not set(before) & set(after):
        return f"{disruption.what} moves from {', '.join(removed)} to {', '.join(added)}"
    parts = [
        f"{word} ({', '.join(keys)})"
        for word, keys, counted in (
            ("removed", removed, disruption.on_remove),
            ("added", added, disruption.on_create),
            ("changed", changed, True),
        )
        if keys and counted
    ]
    return f"{disruption.what} {', '.join(parts)}" if parts else None


def _nodes(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_NODES])
    more = len(names) - SHOWN_NODES
    return f"{len(names)} node(s): {shown}" + (f" and {more} more" if more > 0 else "")


def changes(objects: list[dict], facts: Facts) -> list[dict]:
    """Every disruption of the run: {effect, change, nodes, in_service}, one per effect and change,
    its nodes in name order. in_service: the nodes of it that already have something of the
    collection's."""
    nodes = facts.nodes
    configured: set[str] = set()
    found: dict[tuple[str, str], list[str]] = {}
    for disruption in declared():
        planned = [o for o in objects if (o["apiVersion"], o["kind"]) in disruption.kinds]
        before = _serving(disruption, _live(disruption, planned, facts), nodes)
        after = _serving(disruption, planned, nodes)
        configured |= set(before)
        for node in sorted(set(before) | set(after)):
            change = _change(disruption, before.get(node, {}), after.get(node, {}))
            if change:
                found.setdefault((disruption.effect, change), []).append(node)
    return [
        {
            "effect": effect,
            "change": change,
            "nodes": names,
            "in_service": [n for n in names if n in configured],
        }
        for (effect, change), names in found.items()
    ]


def check_disruption(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """Each disruption of the run as a finding: an error where it hits nodes in service and the
    inventory did not agree to its effect, else a warning that says why it may go on."""
    agreed = allowed(plan)
    found = []
    for item in changes(objects, facts):
        effect = item["effect"]
        message = f"{effect}: {item['change']} on {_nodes(item['nodes'])}: {EFFECTS[effect]}"
        if item["in_service"] and effect not in agreed:
            found.append(
                finding(
                    CHECK,
                    "error",
                    f"{message}. {len(item['in_service'])} of them already run the collection's "
                    f"configuration: to let this run do it, set {VARIABLE}: [{effect}] in the "
                    f"inventory or -e {VARIABLE}={effect} ({ALL}: every effect); or change the "
                    "inventory back",
                )
            )
        elif item["in_service"]:
            found.append(finding(CHECK, "warning", f"{message} (agreed: {VARIABLE})"))
        else:
            found.append(finding(CHECK, "warning", f"{message} (none of them is configured yet)"))
    if not found:
        found.append(
            finding(CHECK, "ok", "no change of this run reboots, drains or reloads a node")
        )
    return found
