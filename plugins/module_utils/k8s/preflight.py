"""Preflight: can this cluster take the planned configuration? Read-only.

The checks are the steps' (module_utils/steps/<step>.py, each with what it reads) and the few
every run has, here: the API server answers, it is an OpenShift the operator releases support,
OLM and the catalogs are there, and no object of the plan belongs to somebody else. `gather`
makes the reads of every check of a run once; `evaluate` is pure: the plan, the objects that will
be applied and the gathered facts in, a list of findings out (steps/checks.py says what a
finding is).

A run decides once: `verdict` says which checks are decided and which are still skipped
(waiting for an operator that an earlier step installs, for NFD's labels), for the plan it
judged. site.yml's first, read-only run of every step returns it, and each role's step after
it judges only the checks still skipped, reading only what those read; a role run alone, with
no verdict, judges everything.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    identity,
    owned_by_collection,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import disruption
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import ADOPTED_KINDS
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    Forbidden,
    get_if_served,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import STEPS
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.checks import (
    CLUSTER_VERSION,
    SEVERITIES,
    Check,
    Facts,
    Read,
    finding,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import (
    semver,
    version_of,
)

CATALOG_SOURCE = ("operators.coreos.com/v1alpha1", "CatalogSource")
OPERATOR_GROUP = ("operators.coreos.com/v1", "OperatorGroup")
SUBSCRIPTION = ("operators.coreos.com/v1alpha1", "Subscription")
MARKETPLACE_NAMESPACE = "openshift-marketplace"

__all__ = [
    "SEVERITIES",
    "Facts",
    "checks_of",
    "evaluate",
    "gather",
    "judge",
    "summary",
    "verdict",
]


# -- the checks of every run ---------------------------------------------------------------------
def minor_of(version: str | None) -> tuple[int, int] | None:
    try:
        major, minor = str(version).split(".")[:2]
        return int(major), int(minor)
    except (TypeError, ValueError):
        return None


def _release_findings(cluster_version: str, running: str, support: dict, own: bool) -> list:
    """The collection's range (an error outside it); an operator release that the cluster's
    certified catalog does not carry (an error: OLM cannot install it), or whose range does not
    cover the cluster (a warning); each naming the releases that would do."""
    covered = minor_of(support["minimum"]) <= minor_of(running) <= minor_of(support["maximum"])
    judged = running in support.get("catalog_minors", ())
    carried = running in support.get("catalogs", ())
    if covered and (carried or not judged):
        return []

    def instead(releases: list[str] | None) -> str:
        if releases:
            return f"; releases that would do: {', '.join(releases)}"
        return "; no release the collection knows does" if judged else ""

    if own:
        return [
            finding(
                "openshift-version",
                "error",
                f"OpenShift {cluster_version} is not supported by {support['component']}: it "
                f"supports {support['minimum']} to {support['maximum']}",
            )
        ]
    if judged and not carried:
        return [
            finding(
                "openshift-version",
                "error",
                f"{support['component']} is not in the certified catalog of OpenShift {running} "
                f"(its catalogs: {', '.join(support['catalogs']) or 'none'}): OLM cannot "
                f"install it on this cluster" + instead(support.get("carried", {}).get(running)),
            )
        ]
    return [
        finding(
            "openshift-version",
            "warning",
            f"OpenShift {cluster_version} is not supported by {support['component']}: it "
            f"supports {support['minimum']} to {support['maximum']}"
            + instead(support.get("covering", {}).get(running)),
        )
    ]


def check_openshift(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    version = facts.one(*CLUSTER_VERSION, "version")
    if version is None:
        return [
            finding(
                "openshift",
                "error",
                "this is not an OpenShift cluster: the API server serves no ClusterVersion "
                "'version' (config.openshift.io/v1). gpudirect.rdma configures OpenShift "
                f"{plan['openshift_support'][0]['minimum']} to "
                f"{plan['openshift_support'][0]['maximum']}.",
            )
        ]
    cluster_version = ((version.get("status") or {}).get("desired") or {}).get("version")
    found = [finding("openshift", "ok", f"OpenShift {cluster_version}")]
    minor = minor_of(cluster_version)
    if minor is None:
        return [
            *found,
            finding(
                "openshift-version",
                "warning",
                f"cannot read the OpenShift version from ClusterVersion version "
                f"(status.desired.version is {cluster_version!r})",
            ),
        ]
    running = f"{minor[0]}.{minor[1]}"
    for index, support in enumerate(plan["openshift_support"]):
        found += _release_findings(cluster_version, running, support, index == 0)
    if plan["openshift_version"] != running:
        found.append(
            finding(
                "openshift-version",
                "warning",
                f"gpudirect_rdma_openshift_version is {plan['openshift_version']} but the cluster "
                f"runs {cluster_version}: set it to {running}, the version the "
                "inventory is written for",
            )
        )
    if len(found) == 1:
        found.append(
            finding(
                "openshift-version",
                "ok",
                f"{running} is within "
                + ", ".join(
                    f"{s['component']} ({s['minimum']}-{s['maximum']})"
                    for s in plan["openshift_support"]
                ),
            )
        )
    return found


def check_catalogs(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    if not facts.served(*CATALOG_SOURCE):
        return [
            finding(
                "olm",
                "error",
                "OLM is not installed: the API server serves no CatalogSource "
                "(operators.coreos.com/v1alpha1); the operators are installed through OLM",
            )
        ]
    catalogs = {}
    for sub in (o for o in objects if o["kind"] == "Subscription"):
        spec = sub["spec"]
        source = facts.one(*CATALOG_SOURCE, spec["source"], spec["sourceNamespace"])
        state = None
        if source is not None:
            state = ((source.get("status") or {}).get("connectionState") or {}).get(
                "lastObservedState"
            ) or "unknown"
        catalogs[f"{spec['sourceNamespace']}/{spec['source']}"] = state
    found = []
    for where, state in sorted(catalogs.items()):
        if state is None:
            found.append(
                finding(
                    "catalogs",
                    "error",
                    f"CatalogSource {where} does not exist. On a disconnected cluster set "
                    "gpudirect_rdma_catalog_source (or gpudirect_rdma_operators.<operator>.source) "
                    "to the mirrored catalog (oc get catalogsource -A)",
                )
            )
        elif state != "READY":
            found.append(
                finding(
                    "catalogs",
                    "warning",
                    f"CatalogSource {where} is {state}, not READY; the install waits for it",
                )
            )
    if not found:
        found.append(
            finding("catalogs", "ok", "CatalogSources exist: " + ", ".join(catalogs))
            if catalogs
            else finding("catalogs", "ok", "no operator to install")
        )
    return found


def _operator_groups(objects: list[dict], facts: Facts) -> list[dict]:
    """OLM allows one OperatorGroup per namespace: another one there, not the collection's,
    stops the operator's install (gpudirect_rdma_take_over cannot help)."""
    found = []
    for group in (o for o in objects if o["kind"] == "OperatorGroup"):
        namespace = group["metadata"]["namespace"]
        others = [
            g["metadata"]["name"]
            for g in facts.all(*OPERATOR_GROUP)
            if g["metadata"].get("namespace") == namespace
            and g["metadata"]["name"] != group["metadata"]["name"]
        ]
        if others:
            found.append(
                finding(
                    "ownership",
                    "error",
                    f"namespace {namespace} already has OperatorGroup {', '.join(others)}, not "
                    f"the collection's {group['metadata']['name']}; OLM allows one OperatorGroup "
                    "per namespace. Remove it, or set gpudirect_rdma_operators.<operator>."
                    "namespace to another namespace",
                )
            )
    return found


def check_ownership(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    found = []
    for obj in objects:
        metadata = obj["metadata"]
        live = facts.one(
            obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace")
        )
        if live is None or owned_by_collection(live):
            continue
        if obj["kind"] in ADOPTED_KINDS:
            found.append(
                finding("ownership", "ok", f"{identity(obj)} exists and will be adopted (labelled)")
            )
            continue
        if take_over:
            found.append(
                finding(
                    "ownership",
                    "warning",
                    f"{identity(obj)} exists and was not created by gpudirect.rdma; "
                    "gpudirect_rdma_take_over is true: its content will be replaced",
                )
            )
        else:
            found.append(
                finding(
                    "ownership",
                    "error",
                    f"{identity(obj)} exists and was not created by gpudirect.rdma (no label "
                    "app.kubernetes.io/managed-by=gpudirect.rdma). It is left alone: remove it, "
                    "or set gpudirect_rdma_take_over: true to replace its content",
                )
            )
    found += _operator_groups(objects, facts)
    if not found:
        found.append(finding("ownership", "ok", "no object of the plan belongs to somebody else"))
    return found


def _ownership_reads(plan: dict, objects: list[dict]) -> tuple[Read, ...]:
    """Every object to apply, by its name, and the OperatorGroups beside them."""
    named = (
        Read(o["apiVersion"], o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for o in objects
    )
    return (Read(*OPERATOR_GROUP), *named)


def _older(installed: str, pinned: str) -> bool | None:
    """Whether the installed CSV is an older version than the pinned one (None: the names carry
    no versions to compare)."""
    try:
        return semver(version_of(installed)) < semver(version_of(pinned))
    except ValueError:
        return None


def running_operators(plan: dict, objects: list[dict], facts: Facts):
    """(key, title, the plan's operator, its installed CSV) of each operator the run installs
    (its Subscription among the objects) that has a pinned CSV and runs one already."""
    titles = {step.operator.key: step.title for step in STEPS if step.operator}
    subscriptions = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objects
        if o["kind"] == "Subscription"
    }
    for key, operator in plan["operators"].items():
        if (operator["namespace"], operator["subscription"]) not in subscriptions:
            continue
        if not operator.get("pinned_csv"):
            continue
        live = facts.one(*SUBSCRIPTION, operator["subscription"], operator["namespace"])
        installed = ((live or {}).get("status") or {}).get("installedCSV")
        if installed:
            yield key, titles.get(key, key), operator, installed


def check_operator_versions(plan: dict, objects: list[dict], facts: Facts, take_over: bool):
    """Each operator this run installs runs the CSV the plan pins (pinned_csv). OLM reads
    startingCSV only at install: a pin changed since is an upgrade, which upgrade.yml makes, or
    a downgrade, which OLM cannot make."""
    found = []
    for _key, title, operator, installed in running_operators(plan, objects, facts):
        pinned = operator["pinned_csv"]
        if installed == pinned:
            found.append(finding("operator-versions", "ok", f"{title}: {installed}, as planned"))
            continue
        older = _older(installed, pinned)
        if older:
            found.append(
                finding(
                    "operator-versions",
                    "error",
                    f"{title}: the cluster runs {installed}; {operator['pinned_by']} plans "
                    f"{pinned}: an upgrade (OLM reads the Subscription's startingCSV only at "
                    "install, so site.yml does not make it). Run playbooks/upgrade.yml, which "
                    "steps through OLM's upgrade graph to it, or set "
                    f"{operator['pinned_by']} to what runs",
                )
            )
            continue
        direction = (
            "a downgrade, which OLM cannot make"
            if older is False
            else "another version, which site.yml does not install over it"
        )
        found.append(
            finding(
                "operator-versions",
                "error",
                f"{title}: the cluster runs {installed}; {operator['pinned_by']} plans {pinned}: "
                f"{direction} (OLM reads the Subscription's startingCSV only at install"
                + (
                    ", and with Automatic approval follows its channel to the newest CSV"
                    if operator["approval"] == "Automatic" and older is False
                    else ""
                )
                + f"). Set {operator['pinned_by']} to what runs, or uninstall the operator "
                "(playbooks/uninstall.yml) and install the planned release",
            )
        )
    return found


def check_operator_catalog(plan: dict, objects: list[dict], facts: Facts, take_over: bool):
    """Before an NVIDIA operator is installed from the certified catalog: the channel of the
    cluster's OpenShift minor holds the pinned CSV, and with Automatic approval the pinned CSV is
    the channel's head (OLM installs the head and follows each newer CSV). A release no catalog
    of the minor carries is the openshift-version check's; a mirrored catalog is not judged."""
    version = facts.one(*CLUSTER_VERSION, "version")
    minor = minor_of(((version or {}).get("status") or {}).get("desired", {}).get("version"))
    if minor is None:
        return []
    running = f"{minor[0]}.{minor[1]}"
    steps = {step.operator.key: step for step in STEPS if step.operator}
    subscriptions = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objects
        if o["kind"] == "Subscription"
    }
    found = []
    for key, operator in plan["operators"].items():
        catalog = operator.get("catalog") or {}
        if (operator["namespace"], operator["subscription"]) not in subscriptions:
            continue
        if running not in catalog or not operator.get("pinned_csv"):
            continue
        live = facts.one(*SUBSCRIPTION, operator["subscription"], operator["namespace"])
        if ((live or {}).get("status") or {}).get("installedCSV"):
            continue  # operator-versions judges what runs
        step = steps[key]
        if (operator["source"], operator["source_namespace"]) != (
            step.operator.source,
            MARKETPLACE_NAMESPACE,
        ):
            continue
        entries, pinned, channel = catalog[running], operator["pinned_csv"], operator["channel"]
        where = f"{step.title}: channel {channel} of the certified catalog of OpenShift {running}"
        if entries is None:
            found.append(
                finding(
                    "operator-catalog",
                    "error",
                    f"{step.title}: the certified catalog of OpenShift {running} has no channel "
                    f"{channel} (gpudirect_rdma_operators.{key}.channel, or the release's): OLM "
                    "cannot resolve the Subscription",
                )
            )
        elif pinned not in entries:
            if operator["pinned_by"].endswith("_release"):
                continue  # the openshift-version check names the releases that would do
            found.append(
                finding(
                    "operator-catalog",
                    "error",
                    f"{where} does not hold {pinned} ({operator['pinned_by']}): OLM cannot "
                    f"install it; the channel holds {', '.join(entries)}",
                )
            )
        elif operator["approval"] == "Automatic" and pinned != entries[0]:
            found.append(
                finding(
                    "operator-catalog",
                    "error",
                    f"{where}: with Automatic approval OLM installs its newest CSV, {entries[0]}, "
                    f"not {pinned} ({operator['pinned_by']}), and then each newer one: choose "
                    f"the release of {entries[0]}, or approval Manual "
                    f"(gpudirect_rdma_operators.{key}.approval) to hold {pinned}",
                )
            )
        else:
            found.append(finding("operator-catalog", "ok", f"{where} holds {pinned}"))
    return found


def _subscription_reads(plan: dict, objects: list[dict]) -> tuple[Read, ...]:
    return tuple(
        Read(*SUBSCRIPTION, o["metadata"]["name"], o["metadata"]["namespace"])
        for o in objects
        if o["kind"] == "Subscription"
    )


# The checks of every run, before the steps'.
EVERY_RUN = (
    Check("openshift", check_openshift, lambda plan, objects: (Read(*CLUSTER_VERSION, "version"),)),
    Check("catalogs", check_catalogs, lambda plan, objects: (Read(*CATALOG_SOURCE),)),
    Check("ownership", check_ownership, _ownership_reads),
    Check("operator-versions", check_operator_versions, _subscription_reads),
    Check("operator-catalog", check_operator_catalog, _subscription_reads),
    Check(disruption.CHECK, disruption.check_disruption, disruption.reads),
)


def checks_of(plan: dict) -> list[Check]:
    """Every check of a run, in order: those of every run, then each step's that the plan turns
    on (a check several steps share, once)."""
    found: dict[str, Check] = {check.name: check for check in EVERY_RUN}
    for step in STEPS:
        if step.enabled(plan):
            for check in step.preflight:
                found.setdefault(check.name, check)
    return list(found.values())


# -- gather (reads only) -----------------------------------------------------------------------
def _reads(plan: dict, objects: list[dict], checks: list[Check]) -> list[Read]:
    return list(dict.fromkeys(read for check in checks for read in check.reads(plan, objects)))


def gather(
    cluster,
    plan: dict,
    objects: list[dict],
    checks: list[Check] | None = None,
    ahead: tuple[tuple, ...] = (),
) -> Facts:
    """Make every read the checks need, once (the caller turns an unreachable API server into
    api_error, and a refused read, Forbidden, into forbidden). ahead: reads the caller makes
    next, made in the same round (api_version, kind, name, namespace, label_selector)."""
    checks = checks_of(plan) if checks is None else checks
    found: list[dict] = []
    not_served: set[tuple[str, str]] = set()
    reads = _reads(plan, objects, checks)
    listed = {(r.api_version, r.kind) for r in reads if r.name is None and not r.label_selector}
    prefetch = getattr(cluster, "prefetch", None)
    if prefetch:  # several at a time; a read that depends on what others find waits for them
        prefetch(
            [
                *(
                    (r.api_version, r.kind, r.name, r.namespace, r.label_selector)
                    for r in reads
                    if not r.unless and (r.name is None or (r.api_version, r.kind) not in listed)
                ),
                *ahead,
            ]
        )
    seen: set[tuple] = set()
    # In the checks' order (the first read says whether this is OpenShift at all); an object of a
    # kind that is listed comes with the list.
    for read in reads:
        kind = (read.api_version, read.kind)
        whole = read.name is None and not read.label_selector
        if kind in not_served or (not whole and kind in listed):
            continue
        if any((o["apiVersion"], o["kind"]) in read.unless for o in found):
            continue
        if read.name is None:
            items = list_if_served(cluster, *kind, label_selector=read.label_selector)
        else:  # a kind not served has no such object either: nothing to tell apart
            item = get_if_served(cluster, *kind, read.name, read.namespace)
            items = [] if item is None else [item]
        if items is None:
            not_served.add(kind)
            continue
        for item in items:  # once, when a named read and a selected list both bring it
            metadata = item.get("metadata") or {}
            key = (*kind, metadata.get("namespace"), metadata.get("name"))
            if key not in seen:
                seen.add(key)
                found.append({**item, "apiVersion": read.api_version, "kind": read.kind})
    return Facts(server=cluster.server, objects=tuple(found), not_served=frozenset(not_served))


# -- evaluate (pure) ---------------------------------------------------------------------------
def _failed(facts: Facts) -> list[dict] | None:
    if facts.api_error:
        return [
            finding(
                "api",
                "error",
                f"cannot read the cluster{' at ' + facts.server if facts.server else ''}: "
                f"{facts.api_error}. Check the kubeconfig (K8S_AUTH_KUBECONFIG, "
                "K8S_AUTH_CONTEXT), that you are logged in (oc whoami) and may read the cluster",
            )
        ]
    if facts.forbidden:
        return [finding("api", "error", facts.forbidden)]
    return None


def evaluate(
    plan: dict,
    objects: list[dict],
    facts: Facts,
    take_over: bool = False,
    checks: list[Check] | None = None,
) -> list[dict]:
    """Every check's findings, in the checks' order (checks: all of the plan's unless given)."""
    by_check = _by_check(plan, objects, facts, take_over, checks)
    return [f for findings in by_check.values() for f in findings]


def _by_check(plan, objects, facts, take_over, checks) -> dict[str, list[dict]]:
    failed = _failed(facts)
    if failed:
        return {"api": failed}
    reachable = f"API server reachable{' at ' + facts.server if facts.server else ''}"
    found = {"api": [finding("api", "ok", reachable)]}
    for check in checks_of(plan) if checks is None else checks:
        found[check.name] = check.judge(plan, objects, facts, take_over)
    return found


def judge(
    reader,
    plan: dict,
    objects: list[dict],
    take_over: bool,
    server: str | None,
    decided: dict | None = None,
    replacing: tuple[Check, ...] = (),
    ahead: tuple[tuple, ...] = (),
) -> tuple[list[dict], dict]:
    """gather, then evaluate; a first read the user may not make (Forbidden) is the finding that
    says who may not do what and the fix. decided: an earlier run's verdict for this plan (its
    checks that ran are not judged again); replacing: checks judged instead of those of the same
    name (an upgrade judges operator-versions its own way); ahead: reads the caller makes next
    (gather). Returns the findings of this run and the verdict."""
    instead = {check.name: check for check in replacing}
    checks = [instead.get(check.name, check) for check in checks_of(plan)]
    earlier = decided if decided and decided.get("plan") == digest(plan) else None
    if earlier:
        checks = [c for c in checks if c.name in earlier["pending"]]
    try:
        facts = gather(reader, plan, objects, checks, ahead)
    except Forbidden as error:
        facts = Facts(server=server or "", forbidden=str(error))
    by_check = _by_check(plan, objects, facts, take_over, checks)
    if earlier and not _failed_by(by_check):
        del by_check["api"]  # said by the run that decided, as long as the API still answers
    findings = [f for found in by_check.values() for f in found]
    return findings, verdict(plan, by_check)


def digest(plan: dict) -> str:
    """The plan a verdict holds for."""
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()


def verdict(plan: dict, by_check: dict[str, list[dict]]) -> dict:
    """What a run decided: the checks still skipped (judged again by the steps that follow), and
    the plan it holds for."""
    pending = [
        name
        for name, findings in by_check.items()
        if any(f["severity"] == "skipped" for f in findings)
    ]
    if _failed_by(by_check):
        pending = [check.name for check in checks_of(plan)]
    return {"plan": digest(plan), "pending": pending}


def _failed_by(by_check: dict[str, list[dict]]) -> bool:
    return any(f["severity"] == "error" for f in by_check.get("api", []))


def summary(findings: list[dict]) -> list[str]:
    """One line per finding, errors first, then warnings, skipped and ok; a count on top."""
    counts = {s: sum(1 for f in findings if f["severity"] == s) for s in SEVERITIES}
    head = (
        f"preflight: {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['skipped']} skipped, {counts['ok']} ok"
    )
    order = {s: i for i, s in enumerate(SEVERITIES)}
    lines = [
        f"{f['severity'].upper():7} {f['check']}: {f['message']}"
        for f in sorted(findings, key=lambda f: order[f["severity"]])
    ]
    return [head, *lines]
