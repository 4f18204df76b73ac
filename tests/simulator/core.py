"""The simulator's frame: the API handles, the knobs, the delay gate and the loop.

Each simulated controller is an object with a `name` and a `reconcile(world)` method; the loop
calls every controller a few times a second. Controllers write status, and the objects their
real counterpart would create; they never change what somebody else created.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
import time
from dataclasses import dataclass, field

import urllib3
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

log = logging.getLogger("simulator")

KNOBS_NAMESPACE = "gpudirect-rdma-simulator"
KNOBS_CONFIGMAP = "knobs"
KNOBS_KEY = "knobs.yaml"

DEFAULT_KNOBS: dict = {
    # Minimum seconds between two steps of any simulated controller (OLM phases, ...).
    "delay_seconds": 0,
    "olm": {
        # CatalogSources (by name) reported TRANSIENT_FAILURE instead of READY.
        "unhealthy_catalogs": [],
        # Packages whose Subscriptions end in ResolutionFailed.
        "unresolvable_packages": [],
        # Packages whose ClusterServiceVersion ends in phase Failed.
        "failing_packages": [],
    },
    # What the cluster-version operator reports: the OpenShift release (None: no ClusterVersion,
    # as on a cluster that is not OpenShift) and the Infrastructure topology (SingleReplica for
    # single-node OpenShift).
    "openshift": {
        "version": "4.20.8",
        "topology": "HighlyAvailable",
        # The Driver Toolkit ImageStream without a tag for the nodes' RHCOS build.
        "driver_toolkit_missing": False,
    },
    # NicClusterPolicy status.state stays notReady; or, with flap_seconds, once it would be
    # ready it alternates ready / notReady every flap_seconds (by the wall clock);
    # error_component (a state, e.g. state-OFED) is in error with error_message.
    "network_operator": {
        "never_ready": False,
        "flap_seconds": 0,
        "error_component": "",
        "error_message": "",
    },
    # NicNodePolicies named here keep their state-OFED notReady (the DOCA driver pod not ready).
    "nic_node_policies": {"not_ready": []},
    # ClusterPolicy status.state stays notReady (or flaps, as above); ibverbs_in_gpu_pods: every
    # container with a GPU gets the node's /dev/infiniband devices (GPU Operator 26.3.0 to 26.3.2).
    "gpu_operator": {"never_ready": False, "flap_seconds": 0, "ibverbs_in_gpu_pods": False},
    # SriovNetworkNodeStates with a policy report syncStatus Failed.
    "sriov": {"failing": False},
    # The bandwidth test's output: average Gb/s; gpu_memory as_requested (DMA-BUF or peermem
    # lines as the pod's GPU_MEMORY says) or none (host memory); failure "" (a result),
    # connection_refused or wrong_gid (no result row).
    "perftest": {"bw_gbps": 180.47, "gpu_memory": "as_requested", "failure": "", "slow": []},
    # The NCCL test's mpirun stand-in (nccl_standin.py); busbw_gbytes, when set, is the run's
    # peak bus bandwidth whatever the rails; slow [{node, factor}] slows every run with that node.
    "nccl": {"transport": "", "gpudirect": True, "rail_gbytes": 24.0, "wrong": 0, "slow": []},
    # The NIC configuration daemon: error_reason (IncorrectSpec, SpecValidationFailed,
    # NonVolatileConfigUpdateFailed, RuntimeConfigUpdateFailed or FirmwareError) makes the
    # configured devices of error_nodes (empty: every node) end in that reason, at the step where
    # the real daemon would meet it.
    # hold_nodes keeps those nodes' devices in PendingReboot (their reboot has not come).
    "nic_configuration": {"error_reason": "", "error_nodes": [], "hold_nodes": []},
    # The driver upgrade controllers (drivers.py): each fail entry {node, driver: gpu|doca,
    # message} makes that node's driver pod fail at pod-restart-required (upgrade-failed, the old
    # driver kept); each hold entry {node, driver: gpu|doca, state} keeps that node in that state
    # (upgrade-required, drain-required, ...) while it is listed: a stuck node.
    "drivers": {"fail": [], "hold": []},
    # The exporters' series (exporters.py): link_down [{node, device}] reports that port down;
    # pause [{node, interface, priority, per_second}] grows its PFC pause counter at that rate;
    # xid [{node, gpu, code}] makes that GPU report the XID.
    "exporters": {"link_down": [], "pause": [], "xid": []},
}


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A node selector matches these labels (an empty or missing one matches all)."""
    return all(labels.get(key) == value for key, value in (selector or {}).items())


def affinity_matches(affinity: dict | None, labels: dict) -> bool:
    """A node's labels meet a nodeAffinity's required terms, as the scheduler judges them (one
    term whose every expression holds; In, NotIn, Exists, DoesNotExist); none required: any."""
    required = (affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    operators = {
        "In": lambda key, values: labels.get(key) in values,
        "NotIn": lambda key, values: labels.get(key) not in values,
        "Exists": lambda key, values: key in labels,
        "DoesNotExist": lambda key, values: key not in labels,
    }
    return not terms or any(
        all(
            operators[e["operator"]](e["key"], e.get("values") or [])
            for e in term.get("matchExpressions") or []
        )
        for term in terms
    )


def merge(base: dict, override: dict) -> dict:
    """A new dict: base with override laid over it, nested dicts merged, not replaced."""
    merged = dict(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass
class World:
    """What one tick of the loop sees: the API handles, the knobs in force, the lists the
    tick's controllers have made so far (`listed`, by kind: see list_cluster), and the large
    objects kept from earlier ticks (`kept`: see LISTED_BY_METADATA)."""

    api_client: client.ApiClient
    knobs: dict = field(default_factory=lambda: merge(DEFAULT_KNOBS, {}))
    listed: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)


def follows_the_clock(knobs: dict) -> bool:
    """Whether a knob makes the simulator act on time passing rather than on writes: a delay
    between steps, or an operator's readiness flapping."""
    flapping = any(
        (knobs.get(name) or {}).get("flap_seconds") for name in ("network_operator", "gpu_operator")
    )
    return bool(knobs.get("delay_seconds")) or flapping


class DelayGate:
    """Lets a step happen only once delay_seconds have passed since the step was first due.

    It remembers when each step it held back will be due, so that the loop ticks then
    (next_due) rather than on its next write or quiet tick: a client pod that finishes a second
    after it started would otherwise wait up to `quiet` seconds on a control plane where nothing
    else is written."""

    def __init__(self) -> None:
        self._first_due: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], float] = {}

    def due(self, uid: str, step: str, delay: float) -> bool:
        key = (uid, step)
        first = self._first_due.setdefault(key, time.monotonic())
        if time.monotonic() - first >= delay:
            self._held.pop(key, None)
            return True
        self._held[key] = first + delay
        return False

    def next_due(self) -> float | None:
        """The monotonic time the earliest step held back becomes due, if any."""
        return min(self._held.values(), default=None)

    def forget_due_before(self, instant: float) -> None:
        """Drop the steps due before a tick that began at instant and did not ask for them again
        (their object is gone or no longer waits): they must not wake the loop forever."""
        self._held = {key: due for key, due in self._held.items() if due > instant}


# Kinds whose objects are large and change seldom: a CSV carries its bundle's whole spec (about
# 180 KB), and listing them in full every tick made most of the bytes the API server encoded.
# They are listed by metadata only; an object is read again only when its resourceVersion moved.
# (A WatchingApiClient's copies come first: this is the way of a client without watches.)
LISTED_BY_METADATA = frozenset({("operators.coreos.com", "v1alpha1", "clusterserviceversions")})
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def list_cluster(
    world: World, group: str, version: str, plural: str, reuse: bool = False
) -> list[dict]:
    """Every object of a kind in all namespaces (none when the kind is not served). The list is
    kept in world.listed for the rest of the tick: with reuse, a controller that runs later
    reads the last list of the kind made in this tick, if any, instead of asking again (it may
    miss a status written since in the same tick; the next tick sees it)."""
    key = (group, version, plural)
    if reuse and key in world.listed:
        return world.listed[key]
    watched = getattr(world.api_client, "objects", None)  # a WatchingApiClient's copies
    items = watched(f"apis/{group}/{version}", plural) if watched else None
    if items is not None:
        world.listed[key] = items
        return items
    try:
        if key in LISTED_BY_METADATA:
            items = _list_by_metadata(world, group, version, plural)
        else:
            items = world.custom.list_cluster_custom_object(group, version, plural)["items"]
    except ApiException as error:
        if error.status != 404:
            raise
        items = []
    world.listed[key] = items
    return items


def _list_by_metadata(world: World, group: str, version: str, plural: str) -> list[dict]:
    """The objects of a kind, as a full list would give them, from a list of their metadata and
    a read of each object whose resourceVersion moved since the last tick. Each caller gets
    objects of its own (parsed from the kept bytes), free to change them."""
    path = f"/apis/{group}/{version}"
    # An empty list's items are null in this form.
    listed = json.loads(_read(world, f"{path}/{plural}", METADATA_LIST))["items"] or []
    kept = world.kept.get((group, version, plural), {})
    fresh = {}
    for item in listed:
        metadata = item["metadata"]
        known = kept.get(metadata["uid"])
        if known is None or known[0] != metadata["resourceVersion"]:
            try:
                raw = _read(
                    world, f"{path}/namespaces/{metadata['namespace']}/{plural}/{metadata['name']}"
                )
            except ApiException as error:
                if error.status != 404:  # gone since the list: the next tick sees it gone
                    raise
                continue
            known = (metadata["resourceVersion"], raw)
        fresh[metadata["uid"]] = known
    world.kept[(group, version, plural)] = fresh
    return [json.loads(raw) for _version, raw in fresh.values()]


def _read(world: World, path: str, accept: str = "application/json") -> bytes:
    """The body of a GET of path, unparsed (ApiException when the API server refuses it)."""
    method, url, headers, body, post = world.api_client.param_serialize(
        "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    response = world.api_client.call_api(method, url, header_params=headers, body=body)
    response.read()
    if not 200 <= response.status < 300:
        raise ApiException(http_resp=response)
    return response.data


def replace_status(world: World, group: str, version: str, plural: str, obj: dict) -> dict:
    """Write obj's status (the status subresource), namespaced or cluster-scoped as obj is."""
    namespace = obj["metadata"].get("namespace")
    name = obj["metadata"]["name"]
    if namespace:
        return world.custom.replace_namespaced_custom_object_status(
            group, version, namespace, plural, name, obj
        )
    return world.custom.replace_cluster_custom_object_status(group, version, plural, name, obj)


def create_if_absent(create, *args) -> None:
    """Create an object as the simulated component would; one that already exists stays."""
    try:
        create(*args)
    except ApiException as error:
        if error.status != 409:
            raise


def read_knobs(core: client.CoreV1Api) -> dict:
    try:
        config_map = core.read_namespaced_config_map(KNOBS_CONFIGMAP, KNOBS_NAMESPACE)
    except ApiException as error:
        if error.status == 404:
            return merge(DEFAULT_KNOBS, {})
        raise
    return merge(DEFAULT_KNOBS, yaml.safe_load((config_map.data or {}).get(KNOBS_KEY) or "{}"))


def write_knobs(api_client: client.ApiClient, knobs: dict) -> None:
    """Set the knobs the running simulator reads on its next tick (used by tests)."""
    core = client.CoreV1Api(api_client)
    create_if_absent(core.create_namespace, {"metadata": {"name": KNOBS_NAMESPACE}})
    body = {
        "metadata": {"name": KNOBS_CONFIGMAP, "namespace": KNOBS_NAMESPACE},
        "data": {KNOBS_KEY: yaml.safe_dump(knobs)},
    }
    try:
        core.replace_namespaced_config_map(KNOBS_CONFIGMAP, KNOBS_NAMESPACE, body)
    except ApiException as error:
        if error.status != 404:
            raise
        core.create_namespaced_config_map(KNOBS_NAMESPACE, body)


class Simulator:
    """The loop: every `interval` it looks whether anything was written since its last tick (the
    count of its WatchingApiClient's watch events, or else the store's revision: see revision),
    and ticks only then (a watch's news wakes it at once), when a step its gate held back falls
    due, or once `idle` seconds have passed without a tick while something follows the clock (a
    delay or flapping knob, or a controller's request the API server refused, tried again), else
    once `quiet` seconds have. A tick whose writes moved the revision is followed by the next at
    once, at most `chain` in a row: a CSV walks its phases as fast as the ticks go. The
    controllers' lists come from the watches' copies (informer.py), so a tick costs the API
    server its writes, not forty lists (README.md, "Reads, from watches")."""

    def __init__(
        self,
        api_client: client.ApiClient,
        controllers: list,
        gate: DelayGate | None = None,
        interval: float = 0.2,
        idle: float = 1.0,
        quiet: float = 10.0,
        chain: int = 8,
        ready=None,
    ):
        self.api_client = api_client
        # Called once, after the first tick in which every controller did its work: the
        # cluster's standing objects (CatalogSources, MachineConfigPools, ClusterVersion) exist.
        self.ready = ready
        self.controllers = controllers
        self.gate = gate or DelayGate()
        self._kept: dict = {}  # World.kept, from tick to tick
        self.interval = interval
        self.idle = idle
        self.quiet = quiet
        self.chain = chain
        self.clock_bound = True  # until the first tick has read the knobs

    def revision(self) -> str:
        """What moves when something the controllers read was written. With a WatchingApiClient:
        the count of the changes its watches brought, no request at all (every read of a tick,
        lists and gets alike, comes from a watched copy; a read it passes on to the API server
        is caught up by the idle or quiet tick). Else the store's revision: the resourceVersion
        of a list, which moves with every write to any object of the cluster. Asking the API
        server five times a second was most of an idle control plane's CPU."""
        events = getattr(self.api_client, "events", None)
        if events is not None:
            return f"events/{events}"
        listed = client.CoreV1Api(self.api_client).list_namespaced_config_map(
            KNOBS_NAMESPACE, limit=1
        )
        return listed.metadata.resource_version

    def tick(self) -> None:
        began = time.monotonic()
        world = World(
            self.api_client, read_knobs(client.CoreV1Api(self.api_client)), kept=self._kept
        )
        refused = False
        for controller in self.controllers:
            try:
                controller.reconcile(world)
            except ApiException as error:
                # Conflicts and races with the collection are normal: try again next tick.
                log.debug("%s: %s %s", controller.name, error.status, error.reason)
                refused = True
        self.gate.forget_due_before(began)
        self.clock_bound = refused or follows_the_clock(world.knobs)
        if self.ready is not None and not refused:
            self.ready()
            self.ready = None

    def _due(self, seen: str | None, revision: str, last_tick: float) -> bool:
        """Whether to tick now: something was written, a held step fell due, or the idle (or
        quiet) interval has passed."""
        now = time.monotonic()
        held = self.gate.next_due()
        idle = self.idle if self.clock_bound else self.quiet
        return revision != seen or (held is not None and now >= held) or now - last_tick >= idle

    def run(self, stop: threading.Event) -> None:
        unreachable_since = None
        seen = None  # the revision before the last tick
        last_tick = float("-inf")
        chained = 0
        while not stop.is_set():
            ticked = False  # only a tick asks the API server anything (see revision)
            try:
                revision = self.revision()
                if self._due(seen, revision, last_tick):
                    seen, last_tick = revision, time.monotonic()
                    self.tick()
                    ticked = True
                    if self.revision() != revision and chained < self.chain:
                        chained += 1  # it wrote: what its writes made due goes at once
                        continue
                chained = 0
            except urllib3.exceptions.HTTPError as error:
                # The API server went away (a fault test kills it): one line, then quiet until
                # it answers again.
                self.clock_bound = True  # once it answers, tick without waiting for a write
                if unreachable_since is None:
                    unreachable_since = time.monotonic()
                    log.warning("API server unreachable (%s); retrying every tick", error)
            except Exception:  # the loop must outlive one bad tick; the log says what broke
                log.exception("tick failed")
                self.clock_bound = True
            else:
                if unreachable_since is not None and ticked:
                    log.warning(
                        "API server answers again after %.1fs",
                        time.monotonic() - unreachable_since,
                    )
                    unreachable_since = None
            changed = getattr(self.api_client, "changed", None)
            if changed is None:
                stop.wait(self.interval)
            else:  # a watch's news wakes the loop at once
                changed.wait(self.interval)
                changed.clear()

    def start_thread(self) -> tuple[threading.Thread, threading.Event]:
        stop = threading.Event()
        thread = threading.Thread(target=self.run, args=(stop,), name="simulator", daemon=True)
        thread.start()
        return thread, stop
