"""Install an operator through OLM the way that works for all four operators.

CatalogSource READY -> (PackageManifest channel, when that API is served) -> Namespace ->
OperatorGroup (a foreign one fails) -> Subscription -> with Manual approval, approve only the
InstallPlan of startingCSV (the next CSV's, once that is installed, stays unapproved) -> the CSV
reaches Succeeded (Failed fails at once) -> the CSV is returned, for its alm-examples.
"""

from __future__ import annotations

import time

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.olm import (
    subscription_elsewhere,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    contains,
    identity,
    owned_by_collection,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import SILENT
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import poll_intervals

OLM = "operators.coreos.com/v1alpha1"


class OlmError(Exception):
    pass


def _one(objects: list[dict], kind: str) -> dict:
    found = [o for o in objects if o.get("kind") == kind]
    if len(found) != 1:
        raise OlmError(f"objects: expected exactly one {kind}; got {len(found)}")
    return found[0]


def check_catalog(
    cluster, subscription: dict, deadline: float, sleep=time.sleep, progress=SILENT, timeout=0.0
) -> None:
    """The Subscription's CatalogSource exists and reports READY (waits while it connects;
    progress hears of it now and then, the wait having begun `timeout` before the deadline)."""
    spec = subscription["spec"]
    where = f"{spec['sourceNamespace']}/{spec['source']}"
    state = None
    pauses = poll_intervals()
    while True:
        source = cluster.get(OLM, "CatalogSource", spec["source"], spec["sourceNamespace"])
        if source is None:
            raise OlmError(
                f"CatalogSource {where} does not exist: the {spec['name']} operator cannot be "
                "installed from it. On a disconnected cluster set gpudirect_rdma_catalog_source "
                "to the mirrored catalog (oc get catalogsource -A)."
            )
        state = ((source.get("status") or {}).get("connectionState") or {}).get("lastObservedState")
        if state == "READY":
            return
        if time.monotonic() >= deadline:
            raise OlmError(
                f"CatalogSource {where} is not READY (last state {state!r}). "
                f"Look at: oc -n {spec['sourceNamespace']} get catalogsource,pods"
            )
        progress.waiting(
            deadline - timeout, timeout, f"CatalogSource {where} READY (state {state!r})"
        )
        sleep(next(pauses))


def check_channel(cluster, subscription: dict) -> None:
    """When PackageManifests are served, the channel must exist in the package."""
    spec = subscription["spec"]
    try:
        manifest = cluster.get(
            "packages.operators.coreos.com/v1",
            "PackageManifest",
            spec["name"],
            spec["sourceNamespace"],
        )
    except NotServed:
        return  # aggregated API absent: OLM itself will say so in the Subscription status
    if manifest is None:
        return
    channels = [c.get("name") for c in (manifest.get("status") or {}).get("channels") or []]
    if channels and spec.get("channel") not in channels:
        raise OlmError(
            f"Subscription {spec['name']}: channel {spec.get('channel')!r} is not in "
            f"package {spec['name']}; its channels: {', '.join(channels)}"
        )


def check_operator_groups(cluster, operator_group: dict, take_over: bool) -> None:
    """OLM allows one OperatorGroup per namespace: another one, not ours, stops the install."""
    namespace = operator_group["metadata"]["namespace"]
    try:
        groups = cluster.list("operators.coreos.com/v1", "OperatorGroup", namespace)
    except NotServed as error:
        raise OlmError(f"OLM is not installed on this cluster: {error}") from None
    for group in groups:
        same = group["metadata"]["name"] == operator_group["metadata"]["name"]
        if same and (owned_by_collection(group) or take_over):
            continue
        if not same or not take_over:
            raise OlmError(
                f"namespace {namespace} already has OperatorGroup {group['metadata']['name']}, "
                "not created by gpudirect.rdma; OLM allows one OperatorGroup per namespace. "
                "Remove it, or set gpudirect_rdma_take_over=true to replace its content "
                "(same name only). Nothing was changed."
            )


def approve_install_plan(cluster, subscription: dict, check_mode: bool) -> str | None:
    """With Manual approval, approve the InstallPlan of startingCSV (and no other one).
    Returns the approved InstallPlan's name when this call approved it. Once a CSV is installed,
    OLM plans the channel's next CSV and waits for its approval: that upgrade is left waiting,
    without an error. After startingCSV that is what the pin says; after another CSV it is an
    upgrade on its way (upgrade.yml's walk approves each hop; interrupted, OLM plans the next
    one), and which CSV runs is preflight's to judge (operator-versions refuses anything but
    the pin in site.yml before any write). Only an operator not installed yet whose InstallPlan
    is for another CSV than startingCSV is an error."""
    spec = subscription["spec"]
    if spec.get("installPlanApproval") != "Manual":
        return None
    live = (
        cluster.get(
            OLM,
            "Subscription",
            subscription["metadata"]["name"],
            subscription["metadata"]["namespace"],
        )
        or {}
    )
    ref = (live.get("status") or {}).get("installPlanRef")
    if not ref:
        return None
    plan = cluster.get(OLM, "InstallPlan", ref["name"], ref["namespace"])
    if plan is None or plan["spec"].get("approved"):
        return None
    names = plan["spec"].get("clusterServiceVersionNames") or []
    if spec.get("startingCSV") not in names:
        if (live.get("status") or {}).get("installedCSV"):
            return None
        raise OlmError(
            f"InstallPlan {ref['namespace']}/{ref['name']} would install {', '.join(names)}, not "
            f"startingCSV {spec.get('startingCSV')}; it was not approved. Look at: oc -n "
            f"{ref['namespace']} get installplan,subscription"
        )
    if not check_mode:
        approve(cluster, ref["name"], ref["namespace"])
    return ref["name"]


def approve(cluster, name: str, namespace: str) -> None:
    """Approve one InstallPlan (spec.approved), as Manual approval asks."""
    cluster.patch(OLM, "InstallPlan", name, namespace, {"spec": {"approved": True}})


def _subscription_state(live: dict) -> str:
    status = live.get("status") or {}
    conditions = [
        f"{c.get('type')}: {c.get('message') or c.get('reason') or c.get('status')}"
        for c in status.get("conditions") or []
        if c.get("status") == "True"
    ]
    state = status.get("state") or "no state yet"
    return state + (f" ({'; '.join(conditions)})" if conditions else "")


def wait_for_csv(
    cluster,
    subscription: dict,
    check_mode: bool,
    deadline: float,
    approved: list,
    sleep=time.sleep,
    progress=SILENT,
    timeout=0.0,
) -> dict | None:
    """Follow the Subscription to its CSV and wait for phase Succeeded; return the CSV (progress
    hears of the wait now and then, as in check_catalog)."""
    name = subscription["metadata"]["name"]
    namespace = subscription["metadata"]["namespace"]
    seen = "the Subscription does not exist yet"
    pauses = poll_intervals()
    while True:
        live = cluster.get(OLM, "Subscription", name, namespace)
        if live is not None:
            plan = approve_install_plan(cluster, subscription, check_mode)
            if plan:
                approved.append(plan)
            status = live.get("status") or {}
            csv_name = status.get("installedCSV") or status.get("currentCSV")
            seen = f"Subscription {namespace}/{name} {_subscription_state(live)}"
            csv = (
                cluster.get(OLM, "ClusterServiceVersion", csv_name, namespace) if csv_name else None
            )
            if csv is not None:
                csv_status = csv.get("status") or {}
                phase = csv_status.get("phase")
                if phase == "Succeeded":
                    return csv
                seen = (
                    f"CSV {namespace}/{csv_name} phase {phase!r}"
                    f" ({csv_status.get('reason')}: {csv_status.get('message')})"
                )
                if phase == "Failed" and csv_status.get("reason") not in (
                    "NoOperatorGroup",
                    "TooManyOperatorGroups",
                    "UnsupportedOperatorGroup",
                ):
                    raise OlmError(f"{seen}. Look at: oc -n {namespace} describe csv {csv_name}")
        if check_mode:
            return None
        if time.monotonic() >= deadline:
            raise OlmError(
                f"gate 'CSV Succeeded' not reached for Subscription {namespace}/{name}; last "
                f"seen: {seen}. Look at: oc -n {namespace} get subscription,installplan,csv"
            )
        progress.waiting(deadline - timeout, timeout, f"gate 'CSV Succeeded': {seen}")
        sleep(next(pauses))


def install(
    cluster,
    applier,
    objects: list[dict],
    timeout: float,
    take_over: bool,
    check_mode: bool,
    progress=SILENT,
) -> dict:
    """Install one operator from its Namespace, OperatorGroup and Subscription objects. In check
    mode nothing waits: a CatalogSource that is not READY, or a CSV not Succeeded yet, is
    reported as `waiting`, the work a real run would wait for. progress hears of long waits."""
    deadline = time.monotonic() + (0 if check_mode else timeout)
    _one(objects, "Namespace")
    operator_group = _one(objects, "OperatorGroup")
    subscription = _one(objects, "Subscription")
    result = {
        "csv": None,
        "csv_name": None,
        "approved_install_plans": [],
        "subscription": identity(subscription),
        "waiting": None,
    }
    metadata = subscription["metadata"]
    live = cluster.get(OLM, "Subscription", metadata["name"], metadata["namespace"])
    if live is None or not contains(live, subscription):
        # The catalog and the channel matter to a Subscription that is created or changed.
        try:
            check_catalog(cluster, subscription, deadline, progress=progress, timeout=timeout)
        except OlmError as error:
            if not check_mode or "does not exist" in str(error):
                raise
            result["waiting"] = str(error)
        check_channel(cluster, subscription)
    check_operator_groups(cluster, operator_group, take_over)
    applier.apply(objects)
    csv = wait_for_csv(
        cluster,
        subscription,
        check_mode,
        deadline,
        result["approved_install_plans"],
        progress=progress,
        timeout=timeout,
    )
    if csv is None and result["waiting"] is None:
        result["waiting"] = (
            f"{identity(subscription)} has no ClusterServiceVersion in phase Succeeded"
        )
    result.update(csv=csv, csv_name=(csv or {}).get("metadata", {}).get("name"))
    return result


def csv_lists(objects: list[dict]) -> tuple[tuple, ...]:
    """The lists of the Subscriptions' namespaces' CSVs among objects, which answer the reads of
    the CSVs that wait_for_csv makes (a get of a CSV lists its namespace once: Reads), for a
    prefetch: they need no Subscription read first, so they go beside the preflight's."""
    namespaces = dict.fromkeys(
        o["metadata"]["namespace"] for o in objects if o["kind"] == "Subscription"
    )
    return tuple((OLM, "ClusterServiceVersion", None, n, None) for n in namespaces)


def installed_elsewhere(cluster, settings: dict) -> str | None:
    """A Subscription to the operator's package that the collection did not create, in any
    namespace (somebody installed the operator already): what it is, or None. Such an operator
    is used as it is, never replaced by a second install."""
    try:
        subscriptions = cluster.list(OLM, "Subscription")
    except NotServed:
        return None
    return subscription_elsewhere(subscriptions, settings["package"])
