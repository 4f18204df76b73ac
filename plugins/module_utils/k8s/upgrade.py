"""Upgrade an operator installed through OLM to the CSV the plan pins, one InstallPlan at a time.

way() reads what runs (the Subscription's installed CSV, the cluster's OpenShift minor) and finds
the way through that minor's catalog (upgrade/graph.py): the InstallPlans to approve, each with
the channel that resolves it; an installed CSV that is already the pin needs none, and a target
OLM cannot reach (or a downgrade) is refused before any write (UpgradeRefused).

walk() makes the way, each hop from what the cluster shows, so an interrupted run continues
where the cluster is:
  the Subscription holds (installPlanApproval Manual) while it steps -> an unapproved
  InstallPlan for another CSV is deleted (a pending plan freezes the Subscription) -> the
  Subscription moves to the hop's channel -> OLM plans the hop's CSV -> the installed CSV's
  OperatorCondition must not say Upgradeable False (its message stops the walk) -> the plan is
  approved, and no other -> the new CSV Succeeded and the one it replaced gone. At the end the
  Subscription is as the plan has it (channel, approval, startingCSV).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.disruption import (
    EFFECTS,
    SHOWN_NODES,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import (
    OLM,
    OlmError,
    approve,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import (
    SUBSCRIPTION,
    minor_of,
    running_operators,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import SILENT
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import poll_intervals
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.checks import (
    NODE,
    Check,
    Read,
    finding,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import (
    Downgrade,
    Hop,
    UpgradeRefused,
    channels_from_entries,
    upgrade_path,
)

CLUSTER_VERSION = ("config.openshift.io/v1", "ClusterVersion")
PACKAGE_MANIFEST = ("packages.operators.coreos.com/v1", "PackageManifest")
CHECK = "operator-versions"
TARGET_CHECK = "openshift-target"
DISRUPTION_CHECK = "upgrade-disruption"
# Resources whose pods a driver rollout evicts or leaves without their devices.
HELD_RESOURCES = ("nvidia.com/", "rdma/", "openshift.io/")
OPERATOR_CONDITION = ("operators.coreos.com/v2", "OperatorCondition")


class UpgradeHeld(OlmError):
    """The installed CSV's OperatorCondition says the operator is not upgradeable."""


@dataclass(frozen=True)
class Way:
    operator: str
    installed: str
    target: str
    minor: str
    hops: tuple[Hop, ...]

    def lines(self) -> list[str]:
        if not self.hops:
            return [f"{self.operator}: {self.installed}, as planned"]
        return [f"{self.operator}: {described(hop)}" for hop in self.hops]


def described(hop: Hop) -> str:
    return f"{hop.replaces} -> {hop.csv} (channel {hop.channel})"


def _subscription(cluster, operator: dict) -> dict:
    live = cluster.get(OLM, "Subscription", operator["subscription"], operator["namespace"])
    if live is None:
        raise UpgradeRefused(
            f"Subscription {operator['namespace']}/{operator['subscription']} does not exist: "
            "the operator is not installed by gpudirect.rdma here; run playbooks/site.yml"
        )
    return live


def openshift_minor(cluster) -> str:
    version = cluster.get(*CLUSTER_VERSION, "version")
    running = (((version or {}).get("status") or {}).get("desired") or {}).get("version")
    if not running:
        raise UpgradeRefused(
            "the cluster's OpenShift version is unknown (no ClusterVersion 'version'): the "
            "upgrade follows the certified catalog of the cluster's OpenShift minor"
        )
    return ".".join(str(running).split(".")[:2])


def plan_way(
    key: str, operator: dict, installed: str, minor: str, graphs: dict, name: str | None = None
) -> Way:
    """The InstallPlans from the installed CSV to the pinned one through OpenShift minor's
    catalog (graphs: {minor: {channel: entries}}), reading nothing; UpgradeRefused (Downgrade
    for an older target) when there is no way, naming the operator (name, else key), the
    installed CSV, the target and the channel."""
    name = name or key
    target = operator.get("pinned_csv")
    if not target or installed == target:
        return Way(key, installed, installed, minor, ())
    if minor not in graphs:
        raise UpgradeRefused(
            f"{name}: installed {installed}, target {target}: the release data holds the "
            f"certified catalog of OpenShift {', '.join(sorted(graphs))}, not {minor}"
        )
    channels = channels_from_entries(graphs[minor])
    try:
        hops = upgrade_path(channels, installed, target, operator["channel"])
    except Downgrade as error:
        raise Downgrade(f"{name}: {error}") from None
    except UpgradeRefused as error:
        raise UpgradeRefused(f"{name} (OpenShift {minor}'s catalog): {error}") from None
    if operator["approval"] == "Automatic":
        head = channels[operator["channel"]].head()
        if head is not None and head.name != target:
            raise UpgradeRefused(
                f"{name}: target {target} is not the newest CSV of channel {operator['channel']} "
                f"({head.name}): with Automatic approval OLM would go on to that one once the "
                "upgrade hands the Subscription back. Choose its release, or approval Manual"
            )
    return Way(key, installed, target, minor, tuple(hops))


def way(cluster, key: str, operator: dict, graphs: dict, minor: str | None = None) -> Way:
    """What runs (the Subscription's installed CSV, the cluster's OpenShift minor) and the
    InstallPlans from there to the pinned CSV (plan_way); reads only."""
    live = _subscription(cluster, operator)
    installed = (live.get("status") or {}).get("installedCSV")
    if not installed:
        raise UpgradeRefused(
            f"{key}: Subscription {operator['namespace']}/{operator['subscription']} has no "
            "installed CSV yet: run playbooks/site.yml first"
        )
    return plan_way(key, operator, installed, minor or openshift_minor(cluster), graphs)


def upgrade_check(graphs: dict) -> Check:
    """An upgrade run's operator-versions check (judged instead of site.yml's, which refuses any
    CSV but the pinned one): each operator the run installs runs the pinned CSV or has a way
    there through its catalog (graphs: {operator key: {minor: {channel: entries}}}); a downgrade,
    a target the channels cannot reach or an operator whose catalog the release data does not
    keep is an error, before any write."""

    def judge(plan: dict, objects: list[dict], facts, take_over: bool) -> list[dict]:
        version = facts.one(*CLUSTER_VERSION, "version")
        running = (((version or {}).get("status") or {}).get("desired") or {}).get("version")
        if not running:
            return []  # the openshift check says the cluster is not OpenShift
        minor = ".".join(str(running).split(".")[:2])
        found = []
        for key, title, operator, installed in running_operators(plan, objects, facts):
            pinned = operator["pinned_csv"]
            if installed == pinned:
                found.append(finding(CHECK, "ok", f"{title}: {installed}, as planned"))
                continue
            if key not in graphs:
                found.append(
                    finding(
                        CHECK,
                        "error",
                        f"{title}: the cluster runs {installed}; {operator['pinned_by']} plans "
                        f"{pinned}, and the release data keeps no upgrade graph of "
                        f"{operator['package']}: approve its InstallPlans with OLM (oc -n "
                        f"{operator['namespace']} get installplan), or set "
                        f"{operator['pinned_by']} to what runs",
                    )
                )
                continue
            # A downgrade first (nothing else matters then), then a release NVIDIA does not
            # support here, then no way.
            refusal = None
            try:
                planned = plan_way(key, operator, installed, minor, graphs[key], title)
            except Downgrade as error:
                found.append(finding(CHECK, "error", str(error)))
                continue
            except UpgradeRefused as error:
                refusal = str(error)
            unsupported = _unsupported(plan, title, pinned, str(running))
            if unsupported or refusal:
                found.append(finding(CHECK, "error", unsupported or refusal))
                continue
            manifest = facts.one(
                *PACKAGE_MANIFEST, operator["package"], operator["source_namespace"]
            )
            missing = _not_carried(planned, manifest)
            if missing:
                found.append(
                    finding(
                        CHECK,
                        "error",
                        f"{title}: the cluster's catalog (PackageManifest "
                        f"{operator['source_namespace']}/{operator['package']}, CatalogSource "
                        f"{operator['source']}) {missing}: the way follows the certified "
                        "catalog's graph, and the cluster's catalog differs (a mirror without "
                        "that CSV?). Mirror it, or pin a release the cluster's catalog carries",
                    )
                )
                continue
            steps = "; ".join(described(hop) for hop in planned.hops)
            found.append(
                finding(
                    CHECK,
                    "ok",
                    f"{title}: {installed} to {pinned} ({operator['pinned_by']}) in "
                    f"{len(planned.hops)} InstallPlan(s): {steps}",
                )
            )
            found += _disrupted(plan, key, title, objects, facts)
        return found + _target_findings(plan)

    def reads(plan: dict, objects: list[dict]) -> tuple[Read, ...]:
        subscriptions = (
            Read(*SUBSCRIPTION, o["metadata"]["name"], o["metadata"]["namespace"])
            for o in objects
            if o["kind"] == "Subscription"
        )
        manifests = (
            Read(*PACKAGE_MANIFEST, o["package"], o["source_namespace"])
            for o in plan["operators"].values()
        )
        return (
            Read(*CLUSTER_VERSION, "version"),
            *subscriptions,
            *manifests,
            Read(*NODE),
            Read("v1", "Pod"),
        )

    return Check(CHECK, judge, reads)


def _not_carried(planned: Way, manifest: dict | None) -> str | None:
    """What of the way the cluster's package data (its PackageManifest: each channel's entries)
    lacks: a hop's channel, or its CSV in that channel. None when it carries all of it, or when
    there is no PackageManifest to tell (that API is not served, or an older OLM lists no
    entries)."""
    if manifest is None:
        return None
    channels = {c.get("name"): c for c in (manifest.get("status") or {}).get("channels") or []}
    for hop in planned.hops:
        channel = channels.get(hop.channel)
        if channel is None:
            return f"has no channel {hop.channel} (its channels: {', '.join(sorted(channels))})"
        entries = [entry.get("name") for entry in channel.get("entries") or []]
        if entries and hop.csv not in entries:
            return (
                f"does not carry {hop.csv} in channel {hop.channel} (it carries "
                f"{', '.join(entries)})"
            )
    return None


def _disrupted(plan: dict, key: str, title: str, objects: list[dict], facts) -> list[dict]:
    """What a new CSV does to the nodes where the step's operand takes its defaults from the CSV
    (the ClusterPolicy's GPU driver image): the step's disruptions, each with its nodes and the
    pods there that hold their devices, as warnings listed before any write."""
    step = next(s for s in table.STEPS if s.operator is not None and s.operator.key == key)
    if not step.needs_csv:
        return []
    nodes = facts.nodes
    pods = facts.all("v1", "Pod")
    found = []
    for disruption in step.disruptions:
        kinds = set(disruption.kinds)
        covered = sorted(
            {
                name
                for obj in objects
                if (obj["apiVersion"], obj["kind"]) in kinds
                for name in disruption.covers(obj, nodes, objects)
            }
        )
        if not covered:
            continue
        holding = sorted(
            f"{p['metadata'].get('namespace')}/{p['metadata']['name']}"
            for p in pods
            if (p.get("spec") or {}).get("nodeName") in covered and _holds_devices(p)
        )
        shown = ", ".join(covered[:SHOWN_NODES]) + (
            f" and {len(covered) - SHOWN_NODES} more" if len(covered) > SHOWN_NODES else ""
        )
        found.append(
            finding(
                DISRUPTION_CHECK,
                "warning",
                f"{title}: the new CSV brings its own {disruption.what}: "
                f"{EFFECTS[disruption.effect]}, on {len(covered)} node(s): {shown}, within the "
                "upgrade budget (gpudirect_rdma_driver_upgrade_max_parallel); pods holding their "
                f"GPUs or RDMA devices there: {', '.join(holding) or 'none'}",
            )
        )
    return found


def _holds_devices(pod: dict) -> bool:
    """Whether a pod asks for a GPU or an RDMA device (a device plugin's resource)."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        if any(name.startswith(HELD_RESOURCES) for name in limits):
            return True
    return False


def _target_findings(plan: dict) -> list[dict]:
    """The OpenShift minor the cluster moves to next (gpudirect_rdma_openshift_target_version)
    against the releases the upgrade goes to: each must support it and be in its certified
    catalog, or the operators cannot follow OpenShift there."""
    target = plan.get("openshift_target_version")
    if not target:
        return []
    wanted = minor_of(target)
    refused = []
    for support in plan["openshift_support"]:
        low, high = minor_of(support["minimum"]), minor_of(support["maximum"])
        judged = target in support.get("catalog_minors", ())
        if not low <= wanted <= high:
            refused.append(
                f"{support['component']} supports OpenShift {support['minimum']} to "
                f"{support['maximum']}"
            )
        elif judged and target not in support.get("catalogs", ()):
            refused.append(f"{support['component']} is not in the certified catalog of {target}")
    if refused:
        return [
            finding(
                TARGET_CHECK,
                "error",
                f"gpudirect_rdma_openshift_target_version {target}: "
                + "; ".join(refused)
                + ". Pin releases that support it, and upgrade them before OpenShift",
            )
        ]
    return [
        finding(
            TARGET_CHECK,
            "ok",
            f"the releases of this upgrade support OpenShift {target}: upgrade OpenShift after it",
        )
    ]


def _unsupported(plan: dict, title: str, target: str, running: str) -> str | None:
    """Why an upgrade to target is refused on OpenShift `running`: its release is documented
    for other minors (site.yml only warns of that for an install; an upgrade would take a
    cluster that works onto a release NVIDIA does not support there). None when it is."""
    support = next(
        (s for s in plan["openshift_support"][1:] if s["component"].startswith(f"{title} ")),
        None,
    )
    minor = minor_of(running)
    if support is None or minor is None:
        return None
    if minor_of(support["minimum"]) <= minor <= minor_of(support["maximum"]):
        return None
    instead = (support.get("covering") or {}).get(f"{minor[0]}.{minor[1]}")
    return (
        f"{title}: the upgrade to {target} is refused: NVIDIA supports {support['component']} "
        f"on OpenShift {support['minimum']} to {support['maximum']}, and the cluster runs "
        f"{running}. Pin a release that supports it"
        + (f" ({', '.join(instead)})" if instead else "")
        + ", or upgrade OpenShift first"
    )


def _pending(cluster, live: dict) -> dict | None:
    """The Subscription's InstallPlan while it is not Complete or Failed."""
    ref = (live.get("status") or {}).get("installPlanRef")
    if not ref:
        return None
    plan = cluster.get(OLM, "InstallPlan", ref["name"], ref["namespace"])
    phase = ((plan or {}).get("status") or {}).get("phase")
    return plan if plan is not None and phase not in ("Complete", "Failed") else None


def _not_upgradeable(cluster, csv: str, namespace: str) -> str | None:
    condition = cluster.get(*OPERATOR_CONDITION, csv, namespace)
    if condition is None:
        return None
    for source in (
        (condition.get("spec") or {}).get("overrides") or [],
        (condition.get("status") or {}).get("conditions") or [],
    ):
        upgradeable = next((c for c in source if c.get("type") == "Upgradeable"), None)
        if upgradeable is not None:
            if upgradeable.get("status") == "False":
                return upgradeable.get("message") or upgradeable.get("reason") or "no message"
            return None
    return None


def _hop(cluster, operator: dict, hop: Hop, timeout: float, sleep, progress) -> str | None:
    """One InstallPlan of the way, from what the cluster shows; the approved plan's name (None
    when the hop had been made already)."""
    name, namespace = operator["subscription"], operator["namespace"]
    live = _subscription(cluster, operator)
    if (live.get("status") or {}).get("installedCSV") == hop.csv:
        return None
    spec = live.get("spec") or {}
    if spec.get("installPlanApproval") != "Manual":
        cluster.patch(
            OLM, "Subscription", name, namespace, {"spec": {"installPlanApproval": "Manual"}}
        )
    pending = _pending(cluster, live)
    names = ((pending or {}).get("spec") or {}).get("clusterServiceVersionNames") or []
    if pending is not None and names != [hop.csv] and not pending["spec"].get("approved"):
        cluster.delete(OLM, "InstallPlan", pending["metadata"]["name"], namespace)
    if spec.get("channel") != hop.channel:
        cluster.patch(OLM, "Subscription", name, namespace, {"spec": {"channel": hop.channel}})
    began = time.monotonic()
    deadline = began + timeout
    pauses = poll_intervals()
    approved = None
    seen = "no InstallPlan yet"
    while True:
        live = _subscription(cluster, operator)
        status = live.get("status") or {}
        if status.get("installedCSV") == hop.csv:
            csv = cluster.get(OLM, "ClusterServiceVersion", hop.csv, namespace)
            phase = ((csv or {}).get("status") or {}).get("phase")
            replaced = cluster.get(OLM, "ClusterServiceVersion", hop.replaces, namespace)
            if phase == "Succeeded" and replaced is None:
                return approved
            seen = f"CSV {hop.csv} phase {phase!r}" + (
                f", {hop.replaces} still there" if replaced is not None else ""
            )
            if phase == "Failed":
                raise OlmError(
                    f"{operator['subscription']}: CSV {namespace}/{hop.csv} Failed "
                    f"({(csv.get('status') or {}).get('message')}); {hop.replaces} keeps running. "
                    f"Look at: oc -n {namespace} describe csv {hop.csv}"
                )
        else:
            pending = _pending(cluster, live)
            names = ((pending or {}).get("spec") or {}).get("clusterServiceVersionNames") or []
            if pending is not None and names == [hop.csv]:
                if not pending["spec"].get("approved"):
                    held = _not_upgradeable(cluster, hop.replaces, namespace)
                    if held is not None:
                        raise UpgradeHeld(
                            f"{operator['subscription']}: {hop.replaces} is not upgradeable "
                            f"(its OperatorCondition: {held}); nothing was approved. Lift the "
                            "hold (oc -n "
                            f"{namespace} edit operatorcondition {hop.replaces}) and run again"
                        )
                    approve(cluster, pending["metadata"]["name"], namespace)
                    approved = pending["metadata"]["name"]
                seen = f"InstallPlan {pending['metadata']['name']} for {hop.csv} approved"
            elif pending is not None:
                raise OlmError(
                    f"{operator['subscription']}: on channel {hop.channel} OLM planned "
                    f"{', '.join(names)}, not {hop.csv}: the cluster's catalog differs from the "
                    f"release data. Nothing was approved; look at: oc -n {namespace} get "
                    "installplan,subscription"
                )
            else:
                seen = f"Subscription {status.get('state') or 'resolving'} on channel {hop.channel}"
        if time.monotonic() >= deadline:
            raise OlmError(
                f"{operator['subscription']}: {hop.replaces} -> {hop.csv} not done in time; last "
                f"seen: {seen}. Look at: oc -n {namespace} get subscription,installplan,csv"
            )
        progress.waiting(began, timeout, f"{hop.replaces} -> {hop.csv}: {seen}")
        sleep(next(pauses))


def walk(
    cluster,
    operator: dict,
    subscription: dict,
    planned: Way,
    check_mode: bool,
    timeout: float,
    sleep=time.sleep,
    progress=SILENT,
) -> list[dict]:
    """Make the way's hops (none in check mode), then give the Subscription back as the plan has
    it (subscription: the plan's object). Each hop's result: channel, csv, replaces, and the
    InstallPlan approved (None when the cluster had made that hop already)."""
    results = []
    for hop in planned.hops:
        result = {"channel": hop.channel, "csv": hop.csv, "replaces": hop.replaces}
        if not check_mode:
            result["install_plan"] = _hop(cluster, operator, hop, timeout, sleep, progress)
        results.append(result)
    if not check_mode and planned.hops:
        cluster.patch(
            OLM,
            "Subscription",
            operator["subscription"],
            operator["namespace"],
            {
                "spec": {
                    key: subscription["spec"].get(key)
                    for key in ("channel", "installPlanApproval", "startingCSV")
                }
            },
        )
    return results
