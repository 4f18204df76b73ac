"""The driver rollout check: whether a driver's new version runs on every node of its DaemonSets.

The GPU Operator's and the Network Operator's driver DaemonSets update on delete only: a new
driver version changes the DaemonSet's template, and the operator's upgrade controller then moves
each node through its states (the node label the gate's path names: upgrade-required,
cordon-required, ..., upgrade-done) within its budget, deleting the node's driver pod so that the
DaemonSet creates it again at the new version. The rollout is done when every DaemonSet has seen
its template (observedGeneration), every node it schedules runs an updated, ready pod
(updatedNumberScheduled and numberReady equal desiredNumberScheduled), and no node is in a state
other than upgrade-done. Each read says how many nodes are done, which are in progress and in
which state, and which wait for a slot.

Right after a policy's driver version is written, the operator may not have rendered it into the
DaemonSet yet: its template, its pods and the nodes' states then all still tell of the last
version, done. Neither policy kind says which generation it has reconciled (the NicClusterPolicy's
status has no observedGeneration), so the gate is given the version each policy asks for and a
DaemonSet the policy owns is rendered once its template's image holds it (the DOCA driver's tag is
`<version>-<os><os version>-<arch>`, its digest form `@<version>`).

A node in upgrade-failed fails the gate at once, with its driver pod's last log lines: with the
default budget of one node it holds the only slot, so nothing else would move before the timeout.
A node that has been in one state longer than the gate's stuck_after seconds fails it too, with
what to do in that state; "since when" is the time the API server recorded for the write that set
the node's state label (its managedFields entry), so it needs no memory between reads.
"""

from __future__ import annotations

import datetime

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    MISSING,
    Gate,
    Observation,
    identity,
    lookup,
)

DONE = "upgrade-done"
WAITING = "upgrade-required"
FAILED = "upgrade-failed"
LOG_LINES = 5
# What to do about a node that stays in a state (k8s-operator-libs' states, as NVIDIA's GPU and
# Network Operator documents explain them).
ADVICE = {
    WAITING: (
        "it waits for a slot of the upgrade budget: another node holds it (upgrade-failed, or "
        "stuck), or cordoned nodes (somebody's, the Machine Config Operator's) use up "
        "maxUnavailable; with the Maintenance Operator on, oc get nodemaintenances"
    ),
    "cordon-required": "the controller could not cordon it: oc describe node",
    "wait-for-jobs-required": (
        "pods matching the upgrade policy's waitForCompletion.podSelector still run on it"
    ),
    "pod-deletion-required": (
        "pods using the GPU could not be deleted: oc get pods -A --field-selector "
        "spec.nodeName=<node>"
    ),
    "drain-required": (
        "the drain does not finish: a PodDisruptionBudget or an unmanaged pod blocks it "
        "(oc adm drain <node> --dry-run=server)"
    ),
    "node-maintenance-required": (
        "its NodeMaintenance is not Ready: the Maintenance Operator's budget, or a drain it "
        "cannot finish (oc get nodemaintenances -A)"
    ),
    "pod-restart-required": "its new driver pod does not become ready: read its log",
    "validation-required": (
        "the GPU Operator's validator does not pass on it: oc get pods -l "
        "app=nvidia-operator-validator -o wide"
    ),
    "uncordon-required": "the controller could not uncordon it: oc describe node",
}


def _label_key(path: str) -> str:
    """The label a path such as metadata.labels."nvidia.com/x" reads."""
    return path.split("labels.", 1)[-1].strip('"')


def state_since(node: dict, key: str) -> datetime.datetime | None:
    """When the node's label `key` was last written: the time of the managedFields entry that
    holds it (the API server stamps each manager's entry at its writes)."""
    for entry in (node.get("metadata") or {}).get("managedFields") or []:
        labels = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
        if f"f:{key}" in labels and entry.get("time"):
            return datetime.datetime.fromisoformat(entry["time"].replace("Z", "+00:00"))
    return None


def _selector(daemonset: dict) -> str:
    labels = ((daemonset.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" if v else k for k, v in sorted(labels.items()))


def _last_lines(cluster, daemonset: dict, node: str) -> str:
    """The last lines of the log of the DaemonSet's pod on the node, or why there are none."""
    namespace = daemonset["metadata"].get("namespace")
    try:
        pods = cluster.list("v1", "Pod", namespace, _selector(daemonset))
    except NotServed:
        return "no pods readable"
    pod = next((p for p in pods if (p.get("spec") or {}).get("nodeName") == node), None)
    if pod is None:
        return f"no driver pod of {daemonset['metadata']['name']} on it"
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    name = pod["metadata"]["name"]
    log = cluster.log(name, namespace, containers[0].get("name", ""), tail_lines=LOG_LINES)
    lines = [line for line in log.splitlines() if line.strip()][-LOG_LINES:]
    return f"driver pod {namespace}/{name}: " + (" | ".join(lines) or "an empty log")


def _incomplete(daemonset: dict) -> str | None:
    """What a DaemonSet's status says is not rolled out yet, or None."""
    metadata, status = daemonset["metadata"], daemonset.get("status") or {}
    name = metadata["name"]
    if (status.get("observedGeneration") or 0) < (metadata.get("generation") or 0):
        return f"DaemonSet {name} has not seen its new template yet"
    desired = status.get("desiredNumberScheduled") or 0
    updated = status.get("updatedNumberScheduled") or 0
    ready = status.get("numberReady") or 0
    if updated < desired or ready < desired:
        return f"DaemonSet {name}: {updated} of {desired} pods updated, {ready} ready"
    return None


def _unrendered(daemonset: dict, versions: dict) -> str | None:
    """What says the DaemonSet's template is not yet the version its owning policy asks for."""
    image = _template_image(daemonset)
    for owner in daemonset["metadata"].get("ownerReferences") or []:
        policy = f"{owner.get('kind')}/{owner.get('name')}"
        version = versions.get(policy)
        if version and version not in image:
            return (
                f"DaemonSet {daemonset['metadata']['name']} runs {image or 'no image'}; "
                f"{policy} asks for {version}: the operator has not rendered it yet"
            )
    return None


def _template_image(daemonset: dict) -> str:
    template = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = template.get("containers") or [{}]
    return containers[0].get("image") or ""


def observe(cluster, gate: Gate, now: datetime.datetime | None = None) -> Observation:
    """Read the driver DaemonSets and the nodes once: met, failed for good (a node
    upgrade-failed, or stuck beyond stuck_after), or waiting, with each node's state."""
    try:
        daemonsets = cluster.list(gate.api_version, gate.kind, gate.namespace, gate.label_selector)
        nodes = cluster.list("v1", "Node")
    except NotServed as error:
        return Observation(False, False, str(error))
    read = [identity(gate, daemonset) for daemonset in daemonsets]
    if len(daemonsets) < gate.min_count:
        return Observation(
            False, False, f"no driver DaemonSet matching {gate.label_selector} yet", read
        )
    states = {}
    for node in nodes:
        state = lookup(node, gate.path)
        if state is not MISSING and state is not None:
            states[node["metadata"]["name"]] = (state, node)
    key = _label_key(gate.path)
    for name, (state, _node) in sorted(states.items()):
        if state == FAILED:
            lines = "; ".join(_last_lines(cluster, d, name) for d in daemonsets) or "no DaemonSet"
            return Observation(
                False,
                True,
                f"node {name} is {FAILED} ({key}): {lines}. It holds a slot of the upgrade "
                "budget, so the other nodes wait. Fix the cause, then retry it: oc label node "
                f"{name} {key}={WAITING} --overwrite",
                read,
            )
    if gate.stuck_after:
        now = now or datetime.datetime.now(datetime.UTC)
        for name, (state, node) in sorted(states.items()):
            since = state_since(node, key)
            if state == DONE or since is None:
                continue
            held = (now - since).total_seconds()
            if held > gate.stuck_after:
                return Observation(
                    False,
                    True,
                    f"node {name} has been {state} for {held:.0f}s (more than "
                    f"{gate.stuck_after}s): {ADVICE.get(state, 'read its driver pod log')}",
                    read,
                )
    unfinished = [
        problem
        for daemonset in daemonsets
        for problem in (_unrendered(daemonset, gate.versions), _incomplete(daemonset))
        if problem
    ]
    state_of = {name: state for name, (state, _node) in states.items()}
    done = sorted(n for n, s in state_of.items() if s == DONE)
    waiting = sorted(n for n, s in state_of.items() if s == WAITING)
    moving = sorted(f"{n} {s}" for n, s in state_of.items() if s not in (DONE, WAITING))
    nodes_seen = (
        f"{len(done)} node(s) done"
        + (f", in progress: {', '.join(moving)}" if moving else "")
        + (f", waiting: {', '.join(waiting)}" if waiting else "")
    )
    if unfinished or moving or waiting:
        return Observation(False, False, "; ".join([nodes_seen, *unfinished]), read)
    return Observation(
        True, False, f"{len(daemonsets)} driver DaemonSet(s) rolled out; {nodes_seen}", read
    )
