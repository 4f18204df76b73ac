"""What differs between the plan and the cluster, and who changed it (playbooks/drift.yml).

Pure functions over what one read-only survey of the engine found (engine.Engine.survey: every
step in check mode, none stopping the others): the objects it compared with their live copies,
its results (created, updated, deleted), its operators, its gates, the preflight findings, and
the nodes. Each difference is one item:

  {"step", "kind", "object", "message"} and, where they apply, "field", "planned", "found",
  "changed_by" (the field managers of the live object that hold that field, from its
  managedFields, or the one that last wrote the object when nobody holds a field that was taken
  away) and "node".

The kinds (KINDS) are what a team reads first: a field changed by someone else, an object missing
or extra, an object that is not the collection's, an operator beside its pin or waiting, a gate
not met (a pool not rolled out, NIC firmware not as its template says, a policy not ready), a
node out of its group, a preflight finding, a step that could not be judged.
"""

from __future__ import annotations

import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY_LABEL,
    group_name,
    identity,
    owned_by_collection,
    selects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    FIELD_MANAGER,
    contains,
    stale_fields,
)

CHANGED = "changed"
STALE = "stale"
MISSING = "missing"
EXTRA = "extra"
FOREIGN = "not the collection's"
OPERATOR = "operator"
NOT_READY = "not ready"
NODE = "node"
PREFLIGHT = "preflight"
NOT_JUDGED = "not judged"
# In the order a report lists them.
KINDS = (CHANGED, STALE, MISSING, EXTRA, FOREIGN, OPERATOR, NOT_READY, NODE, PREFLIGHT, NOT_JUDGED)
# The step of what belongs to no step: the preflight checks of every run, the nodes.
CLUSTER = "cluster"


# -- fields ------------------------------------------------------------------------------------
def differences(desired, live, path: tuple = ()) -> list[tuple[tuple, object, object]]:
    """(path, planned, found) of each field desired sets that live lacks or holds otherwise: a
    map key by key, a list as a whole (an atomic list, or items the API server keyed)."""
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return [(path, desired, live)]
        found = []
        for key, value in desired.items():
            if key not in live:
                found.append(((*path, key), value, None))
            else:
                found.extend(differences(value, live[key], (*path, key)))
        return found
    if not contains(live, desired):
        return [(path, desired, live)]
    return []


def dotted(path: tuple) -> str:
    return ".".join(str(part) for part in path)


def _holds(fields: dict, path: tuple) -> bool:
    """A managedFields fieldsV1 set holds the field at path (or something inside it)."""
    node = fields
    for part in path:
        key = f"f:{part}"
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _entries(live: dict) -> list[dict]:
    return list((live.get("metadata") or {}).get("managedFields") or [])


def _who(entry: dict) -> dict:
    return {
        "manager": entry.get("manager") or "(none)",
        "operation": entry.get("operation") or "",
        "time": entry.get("time") or "",
    }


def holders(live: dict, path: tuple) -> list[dict]:
    """The field managers of live that hold the field at path, but the collection's own."""
    return [
        _who(entry)
        for entry in _entries(live)
        if entry.get("manager") != FIELD_MANAGER and _holds(entry.get("fieldsV1") or {}, path)
    ]


def last_writer(live: dict) -> list[dict]:
    """The field manager that wrote the object last, but the collection: who took a field away
    (a removed field is held by nobody)."""
    others = [e for e in _entries(live) if e.get("manager") != FIELD_MANAGER]
    if not others:
        return []
    return [_who(max(others, key=lambda e: e.get("time") or ""))]


def short(value, limit: int = 120) -> str:
    """A value as a report cell: JSON, cut at limit characters."""
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def object_items(step: str, desired: dict, live: dict | None) -> list[dict]:
    """How one planned object differs from its live copy."""
    name = identity(desired)
    if live is None:
        return [item(step, MISSING, name, "planned, not in the cluster")]
    found = []
    for path, planned, value in differences(_comparable(desired), live):
        who = holders(live, path)
        verb = "changed by"
        if not who and value is None:  # nobody holds a field taken away: who wrote last
            who, verb = last_writer(live), "last written by"
        field = dotted(path)
        what = "taken away" if value is None else f"{short(value)} instead of {short(planned)}"
        by = ", ".join(f"{w['manager']} ({w['operation']} {w['time']})".strip() for w in who)
        found.append(
            item(
                step,
                CHANGED,
                name,
                f"{field}: {what}" + (f"; {verb} {by}" if by else ""),
                field=field,
                planned=planned,
                found=value,
                changed_by=who,
            )
        )
    for field in sorted(stale_fields(live, desired)):
        found.append(
            item(
                step,
                STALE,
                name,
                f"{field.lstrip('.')}: set by an earlier plan, not by this one",
                field=field.lstrip("."),
            )
        )
    return found


def _comparable(desired: dict) -> dict:
    """What of desired a live object is compared on: all but apiVersion and kind."""
    return {key: value for key, value in desired.items() if key not in ("apiVersion", "kind")}


def item(step: str, kind: str, what: str, message: str, **more) -> dict:
    return {"step": step, "kind": kind, "object": what, "message": message, **more}


# -- the survey's records ----------------------------------------------------------------------
def step_items(record: dict, compared: dict[str, tuple[dict, dict | None]]) -> list[dict]:
    """One step record of the survey as drift items. compared: each planned object's identity ->
    (the object, its live copy) as the engine compared them."""
    step = record["step"]
    found = []
    for result in record.get("results") or []:
        name = result["object"]
        if result["action"] == "deleted":
            found.append(item(step, EXTRA, name, "the collection's, not in the plan"))
        elif result["action"] == "created":
            found.append(item(step, MISSING, name, "planned, not in the cluster"))
        elif result["action"] == "updated" and name in compared:
            desired, live = compared[name]
            changes = object_items(step, desired, live)
            if live is not None and not owned_by_collection(live):
                found.append(
                    item(step, FOREIGN, name, "exists without the collection's label: not its own")
                )
                label = dotted(("metadata", "labels", MANAGED_BY_LABEL))
                changes = [c for c in changes if c.get("field") != label]
            # An object that holds the planned content under another field manager (a GitOps
            # tool applied render.yml's tree) has no field to report.
            found.extend(changes)
    operator = record.get("operator") or {}
    if operator.get("waiting"):
        found.append(item(step, OPERATOR, operator.get("subscription", step), operator["waiting"]))
    for plan in operator.get("approved_install_plans") or []:
        found.append(
            item(
                step,
                OPERATOR,
                operator.get("subscription", step),
                f"InstallPlan {plan} waits for approval",
            )
        )
    for gate in record.get("gates") or []:
        if not gate.get("met", True):
            found.append(item(step, NOT_READY, gate["gate"], str(gate.get("seen", "not met"))))
    if record.get("error"):
        found.append(item(step, NOT_JUDGED, record.get("title", step), record["error"]))
    return found


def finding_items(findings: list[dict], steps_of_checks: dict[str, str]) -> list[dict]:
    """The preflight findings worth a team's reading (errors and warnings), each under the step
    whose check it is (steps_of_checks: check name -> step), else under the cluster."""
    return [
        item(steps_of_checks.get(f["check"], CLUSTER), PREFLIGHT, f["check"], f["message"])
        for f in findings
        if f["severity"] in ("error", "warning")
    ]


# -- NICs --------------------------------------------------------------------------------------
def nic_device_items(step: str, devices: list[dict]) -> list[dict]:
    """Each NicDevice given a configuration whose NIC does not hold it now: the daemon is
    configuring it again (its firmware settings changed since, a NIC reset to its defaults) or
    failed to."""
    found = []
    for device in sorted(devices, key=lambda d: d["metadata"]["name"]):
        if not ((device.get("spec") or {}).get("configuration")):
            continue
        state = nic_configuration.condition(device)
        reason = (state or {}).get("reason")
        if reason == nic_configuration.APPLIED:
            continue
        node = (device.get("status") or {}).get("node") or "?"
        why = nic_configuration.PROGRESS.get(reason) or (state or {}).get("message") or ""
        found.append(
            item(
                step,
                NOT_READY,
                f"NicDevice {device['metadata']['name']}",
                f"on node {node}: the NIC does not hold its template's settings: "
                f"{nic_configuration.CONDITION} {reason or 'not reported'}"
                + (f" ({why})" if why else ""),
                node=node,
            )
        )
    return found


# -- nodes -------------------------------------------------------------------------------------
def _advertised(node: dict, resource: str) -> int:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    try:
        return int(str(allocatable.get(resource, "0")))
    except ValueError:
        return 0


def node_items(plan: dict, nodes: list[dict]) -> list[dict]:
    """Each node against the node groups: in no group but advertising a group's RDMA resources
    (its labels took it out of the selection), in two groups at once, or in one group while it
    advertises another group's resources and not its own (relabelled into another group; the
    device plugins have not followed), or without one of its group's resources. Each item names
    the field managers that hold the labels the groups select on (who moved the node)."""
    groups = [
        (group_name(g), g["node_selector"], [r["node_resource"] for r in g["rails"]])
        for g in plan["groups"]
    ]
    owners: dict[str, list[str]] = {}
    for name, _selector, resources in groups:
        for resource in resources:
            owners.setdefault(resource, []).append(name)
    keys = sorted({key for _n, selector, _r in groups for key in selector})
    found = []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        node_name = node["metadata"]["name"]
        who = [w for key in keys for w in holders(node, ("metadata", "labels", key))]
        for message in _node_messages(node, groups, owners):
            found.append(
                item(CLUSTER, NODE, f"Node {node_name}", message, node=node_name, changed_by=who)
            )
    return found


def _node_messages(node: dict, groups: list[tuple], owners: dict[str, list[str]]) -> list[str]:
    labels = node["metadata"].get("labels") or {}
    member = [(n, r) for n, s, r in groups if s and selects(s, labels)]
    if not any(s for _n, s, _r in groups):  # no selector: every worker is the group's
        member = [(n, r) for n, s, r in groups]
    advertised = [res for res in owners if _advertised(node, res) > 0]
    if not member:
        if not advertised:
            return []  # not a node of the plan's
        of = ", ".join(sorted({g for res in advertised for g in owners[res]}))
        return [
            f"in no node group, yet advertises {', '.join(advertised)} (of {of}): its labels "
            "took it out of the selection"
        ]
    if len(member) > 1:
        return [f"in the node groups {', '.join(n for n, _r in member)} at once"]
    group, resources = member[0]
    messages = []
    others = [res for res in advertised if res not in resources]
    if others:
        previous = ", ".join(sorted({g for res in others for g in owners[res]} - {group}))
        messages.append(
            f"in node group {group} by its labels, yet advertises {', '.join(others)} of "
            f"{previous}: relabelled from {previous}"
        )
    missing = [res for res in resources if res not in advertised]
    if missing:
        messages.append(f"in node group {group}; does not advertise {', '.join(missing)}")
    return messages


# -- the report --------------------------------------------------------------------------------
def by_step(items: list[dict], steps: list[str]) -> list[dict]:
    """The items grouped by step, in the table's order (steps), the cluster's first; a step
    without drift is listed too, empty."""
    order = [CLUSTER, *steps]
    grouped = {name: [] for name in order}
    for found in items:
        grouped.setdefault(found["step"], []).append(found)
    rank = {kind: index for index, kind in enumerate(KINDS)}
    return [
        {
            "step": name,
            "differences": sorted(found, key=lambda i: (rank.get(i["kind"], 99), i["object"])),
        }
        for name, found in grouped.items()
    ]


def counts(items: list[dict]) -> dict[str, int]:
    found = {kind: 0 for kind in KINDS}
    for each in items:
        found[each["kind"]] = found.get(each["kind"], 0) + 1
    return found
