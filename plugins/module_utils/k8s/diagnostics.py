"""Diagnostics: the state that explains a failure, read from the cluster into one archive.

It only reads, and never reads Secrets. What it reads (KINDS): every object of the collection
(MANAGED_KINDS, by the label app.kubernetes.io/managed-by=gpudirect.rdma); in the collection's
namespaces (labelled Namespaces) and the namespaces it is given: OLM's objects, OperatorGroups,
network attachments, Pods with the last lines of each container's log, and Events (by time); and
cluster-wide: Nodes, MachineConfigPools, NicClusterPolicies, ClusterPolicies, SR-IOV node
states, and the NIC configuration's templates, NicDevices, NodeMaintenances and
MaintenanceOperatorConfigs, labelled or not. When the failure came from a gate, the gate's own
objects are read again and put first. A kind the API server does not serve is noted and
skipped; any other read that fails is noted and the rest goes on. An API server that cannot be
reached still gives an archive, whose summary says so.

The archive is one gzipped tarball, gpudirect-rdma-diagnostics-<UTC timestamp>.tar.gz, whose
first file is summary.yaml: when, the API server, the failure, the gate and its objects, the
index of files, and what could not be read.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    ApiFailure,
    NotServed,
    describe_status,
    server_of,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.reads import OWNED as MANAGED_BY
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (
    EVERYWHERE,
    LABELLED,
    NAMESPACES,
    STEPS,
    diagnostics_kinds,
    managed_kinds,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.yaml_text import to_yaml

OLM = "operators.coreos.com/v1alpha1"
MARKETPLACE = "openshift-marketplace"
PREFIX = "gpudirect-rdma-diagnostics-"
# The link to the newest archive of a folder.
LATEST = PREFIX + "latest.tar.gz"
SUMMARY = "summary.yaml"
GATE = "gate.yaml"

# Every kind read, in the order of the archive's index (the order site.yml goes): OLM's objects,
# each step's (steps/<step>.py: its kinds by the collection's label, and what it reads beside
# them), then what every step's failure may come down to. Kinds of MANAGED_KINDS are always read
# by the collection's label as well. Never a Secret.
KINDS = (
    ("v1", "Namespace", LABELLED),
    (OLM, "CatalogSource", NAMESPACES),  # and every one in openshift-marketplace
    ("operators.coreos.com/v1", "OperatorGroup", NAMESPACES),
    (OLM, "Subscription", NAMESPACES),
    (OLM, "InstallPlan", NAMESPACES),
    (OLM, "ClusterServiceVersion", NAMESPACES),
    *diagnostics_kinds(),
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", NAMESPACES),
    ("v1", "Node", EVERYWHERE),
    ("v1", "Pod", NAMESPACES),
    ("v1", "Event", NAMESPACES),
)
NEVER_READ = frozenset({"Secret"})

# Fields left out because they are large and explain nothing about a failure.
CSV_SPEC_LEFT_OUT = (
    "install",
    "icon",
    "description",
    "customresourcedefinitions",
    "apiservicedefinitions",
    "webhookdefinitions",
)
ANNOTATIONS_LEFT_OUT = (
    "alm-examples",
    "operatorframework.io/initialization-resource",
    "kubectl.kubernetes.io/last-applied-configuration",
)


def plan_namespaces(plan: dict | None) -> list[str]:
    """The namespaces of a plan's steps (they may have existed before the collection labelled
    them): each operator's and its catalog's, and those the step table names."""
    if not plan:
        return []
    found = []
    for step in STEPS:
        if not step.enabled(plan):
            continue
        if step.operator:
            operator = plan["operators"][step.operator.key]
            found += [operator["namespace"], operator["source_namespace"]]
        found += step.namespaces(plan)
    return list(dict.fromkeys(found))


def utc_now() -> datetime:
    return datetime.now(timezone.utc)  # noqa: UP017 - datetime.UTC needs Python 3.11


def kinds_to_read() -> list[tuple[str, str, str]]:
    """KINDS, then any managed kind KINDS does not name yet (read by the label)."""
    listed = {(api_version, kind) for api_version, kind, _scope in KINDS}
    extra = [
        (api_version, kind, LABELLED)
        for api_version, kind in managed_kinds()
        if (api_version, kind) not in listed
    ]
    return [entry for entry in [*KINDS, *extra] if entry[1] not in NEVER_READ]


def file_name(kind: str) -> str:
    """nicclusterpolicies.yaml for NicClusterPolicy, as kubectl names its resources."""
    lower = kind.lower()
    plural = lower[:-1] + "ies" if lower.endswith("y") else lower + "s"
    return plural + ".yaml"


def gate_fields(gate: dict) -> dict:
    """The gate as given, without empty fields (a gate has a name or a selector, not both)."""
    return {key: value for key, value in gate.items() if value is not None}


def describe(error: BaseException) -> str:
    """An API error as 'status reason: message'; anything else by its type and text."""
    if getattr(error, "status", None) is not None:
        return describe_status(error)
    if isinstance(error, (NotServed, ApiFailure)):
        return str(error)
    return f"{type(error).__name__}: {error}"


def unreachable(error: BaseException) -> bool:
    """No HTTP answer at all (refused, timed out, TLS), as opposed to an API error."""
    return getattr(error, "status", None) is None and not isinstance(error, NotServed)


# -- what is kept of each object ---------------------------------------------------------------


def _metadata(obj: dict) -> dict:
    metadata = dict(obj.get("metadata") or {})
    metadata.pop("managedFields", None)
    annotations = {
        key: value
        for key, value in (metadata.get("annotations") or {}).items()
        if key not in ANNOTATIONS_LEFT_OUT
    }
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return metadata


def trimmed(obj: dict) -> dict:
    """The object without managedFields and the annotations that repeat large documents."""
    return {**obj, "metadata": _metadata(obj)}


def csv(obj: dict) -> dict:
    """A ClusterServiceVersion without its install strategy, icon, CRD descriptions and
    alm-examples: name, version, install modes, related images and the whole status remain."""
    kept = trimmed(obj)
    kept["spec"] = {
        key: value for key, value in (obj.get("spec") or {}).items() if key not in CSV_SPEC_LEFT_OUT
    }
    return kept


def install_plan(obj: dict) -> dict:
    """An InstallPlan with each step's resource named, not its manifest."""
    kept = trimmed(obj)
    status = dict(obj.get("status") or {})
    if status.get("plan"):
        status["plan"] = [
            {
                "resolving": step.get("resolving"),
                "status": step.get("status"),
                "resource": {
                    key: value
                    for key, value in (step.get("resource") or {}).items()
                    if key != "manifest"
                },
            }
            for step in status["plan"]
        ]
    kept["status"] = status
    return kept


def node(obj: dict) -> dict:
    """A Node with labels, annotations, taints, capacity, allocatable and conditions (the list
    of images it holds is left out)."""
    kept = trimmed(obj)
    kept["status"] = {
        key: value for key, value in (obj.get("status") or {}).items() if key != "images"
    }
    return kept


def event(obj: dict) -> dict:
    """One line of the story: when, where, what and why."""
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    source = obj.get("source") or {}
    return {
        "time": event_time(obj),
        "namespace": (obj.get("metadata") or {}).get("namespace"),
        "type": obj.get("type"),
        "reason": obj.get("reason"),
        "object": f"{involved.get('kind')} {involved.get('name')}",
        "message": obj.get("message") or obj.get("note"),
        "count": obj.get("count") or (obj.get("series") or {}).get("count") or 1,
        "source": obj.get("reportingComponent") or source.get("component"),
    }


def event_time(obj: dict) -> str:
    return str(
        obj.get("lastTimestamp")
        or obj.get("eventTime")
        or obj.get("firstTimestamp")
        or (obj.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


KEEP = {
    "ClusterServiceVersion": csv,
    "InstallPlan": install_plan,
    "Node": node,
    "Event": event,
}


# -- gathering ---------------------------------------------------------------------------------


@dataclass
class Gathered:
    """What one run read: the files of the archive (summary.yaml first once made) and notes."""

    files: dict[str, str] = field(default_factory=dict)
    index: list[dict] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    not_served: list[str] = field(default_factory=list)
    unreadable: list[dict] = field(default_factory=list)
    gate: dict | None = None
    server: str | None = None
    error: str | None = None  # why the API server could not be read at all

    def add(self, path: str, content: str, **about) -> None:
        self.files[path] = content
        self.index.append({"file": path, **about})

    def note(self, what: str, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else describe(error)
        self.unreadable.append({"what": what, "error": text})


class Gatherer:
    def __init__(self, cluster, log_lines: int, log_budget: float, clock=time.monotonic):
        self.cluster = cluster
        self.log_lines = log_lines
        self.log_deadline = None
        self.log_budget = log_budget
        self.clock = clock
        self.out = Gathered()

    def list(self, api_version, kind, namespace=None, selector=None) -> list[dict]:
        """One list; NotServed goes up, any other error is noted and reads as nothing."""
        try:
            return self.cluster.list(api_version, kind, namespace, selector)
        except NotServed:
            raise
        except Exception as error:
            where = f" in {namespace}" if namespace else ""
            which = f" with {selector}" if selector else ""
            self.out.note(f"{kind} ({api_version}){where}{which}", error)
            return []

    def kind(self, api_version: str, kind: str, scope: str) -> list[dict] | None:
        """Every object of one kind this run reads, or None when the kind is not served."""
        managed = (api_version, kind) in managed_kinds()
        found: dict[tuple, dict] = {}

        def take(objects):
            for obj in objects:
                metadata = obj.get("metadata") or {}
                found.setdefault((metadata.get("namespace"), metadata.get("name")), obj)

        try:
            if scope == EVERYWHERE:
                take(self.list(api_version, kind))
            else:
                if managed:
                    take(self.list(api_version, kind, None, MANAGED_BY))
                if scope == NAMESPACES:
                    namespaces = self.out.namespaces
                    if kind == "CatalogSource" and MARKETPLACE not in namespaces:
                        namespaces = [MARKETPLACE, *namespaces]
                    for namespace in namespaces:
                        take(self.list(api_version, kind, namespace))
        except NotServed:
            self.out.not_served.append(f"{kind} ({api_version})")
            return None
        return list(found.values())

    def objects(self) -> dict[str, list[dict]]:
        """Every kind into its file; returns the objects read by kind (the Pods' logs come next)."""
        read: dict[str, list[dict]] = {}
        for api_version, kind, scope in kinds_to_read():
            objects = self.kind(api_version, kind, scope)
            if objects is None:
                continue
            keep = KEEP.get(kind, trimmed)
            kept = [keep(obj) for obj in objects]
            if kind == "Event":
                kept.sort(key=lambda item: item["time"])
            name = file_name(kind)
            self.out.add(
                name,
                to_yaml(kept),
                kind=kind,
                api_version=api_version,
                objects=len(kept),
                read=scope,
            )
            read[kind] = objects
        return read

    def logs(self, pods: list[dict]) -> None:
        """The last lines of every container of every pod read (and of the previous run of a
        container that restarted), while the time given to logs lasts."""
        if self.log_lines <= 0:
            return
        self.log_deadline = self.clock() + self.log_budget
        for pod in pods:
            metadata = pod.get("metadata") or {}
            namespace, name = metadata.get("namespace"), metadata.get("name")
            spec = pod.get("spec") or {}
            status = pod.get("status") or {}
            restarts = {
                item.get("name"): item.get("restartCount") or 0
                for item in (status.get("initContainerStatuses") or [])
                + (status.get("containerStatuses") or [])
            }
            for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
                cname = container.get("name")
                runs = [False, True] if restarts.get(cname) else [False]
                for previous in runs:
                    self.log(namespace, name, cname, previous)

    def log(self, namespace: str, pod: str, container: str, previous: bool) -> None:
        suffix = ".previous" if previous else ""
        what = (
            f"log of {namespace}/{pod} container {container}{' (previous run)' if previous else ''}"
        )
        if self.clock() >= self.log_deadline:
            self.out.note(what, f"not read: the {self.log_budget:.0f}s given to logs were spent")
            return
        try:
            text = self.cluster.log(pod, namespace, container, self.log_lines, previous)
        except Exception as error:
            self.out.note(what, error)
            return
        self.out.add(
            f"logs/{namespace}/{pod}/{container}{suffix}.log",
            text,
            lines=len(text.splitlines()),
        )

    def gate(self, gate: dict) -> None:
        """The failing gate, its objects read again now (identity and status), and the objects
        whole in gate.yaml."""
        identities = list(gate.get("objects") or [])
        if not identities:
            identities = self.gate_objects_now(gate)
        snapshots, whole = [], []
        for identity in identities:
            found = None
            try:
                found = self.cluster.get(
                    identity.get("apiVersion"),
                    identity.get("kind"),
                    identity.get("name"),
                    identity.get("namespace"),
                )
            except Exception as error:
                self.out.note(f"{identity.get('kind')} {identity.get('name')} of the gate", error)
            snapshot = dict(identity)
            if found is None:
                snapshot["exists"] = False
            else:
                snapshot["exists"] = True
                snapshot["status"] = found.get("status") or {}
                whole.append(trimmed(found))
            snapshots.append(snapshot)
        self.out.gate = {**gate_fields(gate), "objects": snapshots}
        self.out.add(
            GATE, to_yaml(whole), kind=gate.get("kind"), objects=len(whole), read="the gate's"
        )

    def gate_objects_now(self, gate: dict) -> list[dict]:
        """The gate named no object it read (none existed then): read by its name or selector."""
        api_version, kind = gate.get("api_version"), gate.get("kind")
        if not (api_version and kind):
            return []
        try:
            if gate.get("name"):
                objects = [
                    obj
                    for obj in [
                        self.cluster.get(api_version, kind, gate["name"], gate.get("namespace"))
                    ]
                    if obj is not None
                ]
                if not objects:
                    return [
                        {
                            "apiVersion": api_version,
                            "kind": kind,
                            "name": gate["name"],
                            **({"namespace": gate["namespace"]} if gate.get("namespace") else {}),
                        }
                    ]
            else:
                objects = self.cluster.list(
                    api_version, kind, gate.get("namespace"), gate.get("label_selector")
                )
        except Exception as error:
            self.out.note(f"{kind} ({api_version}) of the gate", error)
            return []
        identities = []
        for obj in objects:
            metadata = obj.get("metadata") or {}
            identity = {"apiVersion": api_version, "kind": kind, "name": metadata.get("name")}
            if metadata.get("namespace"):
                identity["namespace"] = metadata["namespace"]
            identities.append(identity)
        return identities


def gather(
    cluster,
    failure: dict | None = None,
    namespaces=(),
    log_lines: int = 200,
    server: str | None = None,
    error: str | None = None,
    when: datetime | None = None,
    log_budget: float = 120.0,
    clock=time.monotonic,
) -> Gathered:
    """Read everything into files, summary.yaml first. cluster is None when no connection could
    be made (error says why); the summary then says so and nothing is read."""
    gatherer = Gatherer(cluster, log_lines, log_budget, clock)
    out = gatherer.out
    out.server = server
    out.namespaces = sorted({name for name in namespaces or [] if name})
    failure = dict(failure or {})
    gate = failure.pop("gate", None)
    if cluster is None:
        error = error or "no connection was made"
    else:
        error = error or _namespaces(cluster, out)
    if error is None:
        if gate:
            gatherer.gate(gate)
        read = gatherer.objects()
        gatherer.logs(read.get("Pod") or [])
    else:
        out.gate = gate_fields(gate) if gate else None
        out.error = f"the API server could not be reached; nothing was read from it: {error}"
    document = summary(out, failure, when or utc_now())
    out.files = {SUMMARY: to_yaml(document), **out.files}
    return out


def _namespaces(cluster, out: Gathered) -> str | None:
    """Add the collection's namespaces (by their label) to those given. This first read also
    tells whether the API server answers at all: if not, returns why."""
    try:
        labelled = cluster.list("v1", "Namespace", None, MANAGED_BY)
    except Exception as error:
        if unreachable(error):
            out.server = out.server or server_of(error)
            return describe(error)
        out.note(f"Namespace (v1) with {MANAGED_BY}", error)
        labelled = []
    names = {(obj.get("metadata") or {}).get("name") for obj in labelled}
    out.namespaces = sorted((names - {None}) | set(out.namespaces))
    return None


def summary(out: Gathered, failure: dict, when: datetime) -> dict:
    """summary.yaml: when, where, the failure and its gate, then the index and the gaps."""
    document = {
        "when": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "api_server": out.server,
        "reachable": out.error is None,
    }
    if out.error is not None:
        document["error"] = out.error
    document["failure"] = {
        key: value for key, value in failure.items() if value not in (None, "")
    } or "none: gathered on demand"
    if out.gate is not None:
        document["gate"] = out.gate
    document["namespaces"] = out.namespaces
    document["files"] = [{"file": SUMMARY, "what": "this summary"}, *out.index]
    document["not_served"] = out.not_served
    document["unreadable"] = out.unreadable
    return document


# -- writing -----------------------------------------------------------------------------------


def write_archive(files: dict[str, str], dest: str, when: datetime) -> str:
    """Write files into a temporary directory and pack them, in order, into
    <dest>/gpudirect-rdma-diagnostics-<UTC timestamp>.tar.gz (dest is created; the archive is
    readable by its owner only: it holds the cluster's state and logs). Runs writing into the
    same dest in the same second (two jobs of one project) each get a name of their own: the
    name is taken by creating it, and each packs into a partial file of its own."""
    dest = os.path.abspath(os.path.expanduser(dest))
    os.makedirs(dest, exist_ok=True)
    stem = PREFIX + when.strftime("%Y%m%dT%H%M%SZ")
    name, number = stem, 1
    while True:
        archive = os.path.join(dest, name + ".tar.gz")
        try:
            os.close(os.open(archive, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            name, number = f"{stem}-{number}", number + 1
    partial = None
    try:
        with tempfile.TemporaryDirectory(prefix=PREFIX) as scratch:
            root = os.path.join(scratch, name)
            for path, content in files.items():
                target = os.path.join(root, path)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w", encoding="utf-8") as written:
                    written.write(content)
            descriptor, partial = tempfile.mkstemp(
                prefix=f".{name}.", suffix=".tar.gz.partial", dir=dest
            )
            os.close(descriptor)  # mkstemp made it for its owner only
            with tarfile.open(partial, "w:gz") as tar:
                for path in files:
                    tar.add(os.path.join(root, path), arcname=f"{name}/{path}")
            os.replace(partial, archive)
    except BaseException:
        for leftover in (partial, archive):
            if leftover and os.path.lexists(leftover):
                os.remove(leftover)
        raise
    return archive


def link_latest(archive: str) -> str:
    """<dest>/gpudirect-rdma-diagnostics-latest.tar.gz, a link to the archive just written (the
    name a script or a person can open without knowing the time)."""
    latest = os.path.join(os.path.dirname(archive), LATEST)
    partial = latest + ".partial"
    if os.path.lexists(partial):
        os.remove(partial)
    os.symlink(os.path.basename(archive), partial)
    os.replace(partial, latest)
    return latest


def collect(cluster, dest: str, **options) -> dict:
    """Gather (with gather()'s options) and write; what the module returns. Nothing read (the API
    server unreachable, no connection): no archive, the error says why."""
    when = options.pop("when", None) or utc_now()
    gathered = gather(cluster, when=when, **options)
    archive = None if gathered.error else write_archive(gathered.files, dest, when)
    return {
        "archive": archive,
        "latest": link_latest(archive) if archive else None,
        "files": list(gathered.files),
        "api_server": gathered.server,
        "error": gathered.error,
        "namespaces": gathered.namespaces,
        "not_served": gathered.not_served,
        "unreadable": gathered.unreadable,
    }
