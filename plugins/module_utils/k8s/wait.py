"""Gates: wait until objects reach a state, following their status as it changes.

A gate names objects (one by name, or all matching a label selector), a field path and the value
it must reach. Waiting polls every gate, quickly at first and then about once a second
(poll_intervals), until all are met, one fails for
good (a value listed in fail_on), or the timeout passes; the message then says which gate, what
it saw last and where to look, and the exception carries the gate and the objects it read last
(report()) so that diagnostics can gather exactly those. Gates that read the same objects (every
rail's resource on the same nodes) share one read per poll.
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import SILENT

try:
    import jmespath
except ImportError:  # pragma: no cover - a requirement of the collection
    jmespath = None

MISSING = object()
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# A quantity's suffixes (resource.Quantity: binary, then decimal SI), as multipliers.
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1}
_DECIMAL |= {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)


def quantity(value):
    """A Kubernetes quantity as a Decimal (8, 2Ki, 1.5Gi, 500m, 1e3), or None when it is none;
    the same numbers as the kubernetes package's parse_quantity (tests/unit compares them)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        return None
    if not isinstance(value, str):
        return Decimal(value)
    found = _QUANTITY.match(value.strip())
    if not found:
        return None
    number, suffix = found.groups()
    return Decimal(number) * (_BINARY.get(suffix) or _DECIMAL[suffix])


def field_path(path) -> str:
    """A gate's path as a JMESPath expression: one as given, or a list of keys joined (a key
    that is not a plain identifier, such as rdma/rdma_shared_device_eth, quoted)."""
    if isinstance(path, str):
        return path
    return ".".join(key if _IDENTIFIER.match(str(key)) else json.dumps(str(key)) for key in path)


def lookup(obj, path: str):
    """The value the JMESPath expression finds in obj; MISSING where it finds nothing."""
    found = _compiled(path).search(obj)
    return MISSING if found is None else found


@functools.lru_cache(maxsize=256)
def _compiled(path: str):
    return jmespath.compile(path)


def show(value) -> str:
    return "missing" if value is MISSING else repr(value)


def _has(items: list, wanted) -> bool:
    """wanted is in items, itself or as the name of an object in the list."""
    return any(
        item == wanted or (isinstance(item, dict) and item.get("name") == wanted) for item in items
    )


@dataclass
class Gate:
    name: str
    api_version: str
    kind: str
    path: str  # a JMESPath expression
    equals: object = None
    one_of: list = field(default_factory=list)
    at_least: int | None = None
    includes: list = field(default_factory=list)
    excludes: list = field(default_factory=list)
    fail_on: list = field(default_factory=list)
    object_name: str | None = None
    namespace: str | None = None
    label_selector: str | None = None
    min_count: int = 1
    hint: str = ""
    # A JMESPath expression whose value the message shows beside an object not met, e.g. the
    # entry of status.appliedStates that is not ready.
    detail: str | None = None
    # A check that reads more than the gate's objects (CHECKS), in place of path and equals.
    check: str | None = None
    # For a check that follows objects through states (driver_rollout): seconds one may stay in
    # a state before the gate fails, naming it and what to do.
    stuck_after: int | None = None
    # For driver_rollout: the driver version each policy asks for ("<Kind>/<name>": version); a
    # DaemonSet that policy owns whose template image does not hold it is not rendered yet.
    versions: dict = field(default_factory=dict)

    @property
    def expectation(self) -> str:
        if self.check:
            return str(self.equals)
        if self.includes or self.excludes:
            parts = []
            if self.includes:
                parts.append("a list with " + ", ".join(map(repr, self.includes)))
            if self.excludes:
                parts.append("without " + ", ".join(map(repr, self.excludes)))
            return " and ".join(parts)
        if self.at_least is not None:
            return f"at least {self.at_least}"
        if self.one_of:
            return "one of " + ", ".join(map(repr, self.one_of))
        return repr(self.equals)

    def satisfied_by(self, value) -> bool:
        if value is MISSING:
            return False
        if self.includes or self.excludes:
            items = value if isinstance(value, list) else []
            return all(_has(items, wanted) for wanted in self.includes) and not any(
                _has(items, unwanted) for unwanted in self.excludes
            )
        if self.at_least is not None:
            number = quantity(value)
            return number is not None and number >= self.at_least
        if self.one_of:
            return value in self.one_of
        return value == self.equals

    @property
    def subject(self) -> str:
        if self.object_name:
            where = f"{self.namespace}/" if self.namespace else ""
            return f"{self.kind} {where}{self.object_name}"
        selector = f" matching {self.label_selector}" if self.label_selector else ""
        return f"every {self.kind}{selector}"


# A gate as the wait module's options (and gpudirect.rdma.gates) give it.
GATE_OPTIONS = {
    "gate": {"type": "str", "required": True},
    "api_version": {"type": "str", "required": True},
    "kind": {"type": "str", "required": True},
    "name": {"type": "str"},
    "namespace": {"type": "str"},
    "label_selector": {"type": "str"},
    "min_count": {"type": "int", "default": 1},
    "path": {"type": "raw", "required": True},
    "equals": {"type": "raw"},
    "one_of": {"type": "list", "elements": "raw"},
    "at_least": {"type": "int"},
    "includes": {"type": "list", "elements": "raw"},
    "excludes": {"type": "list", "elements": "raw"},
    "fail_on": {"type": "list", "elements": "raw", "default": []},
    "hint": {"type": "str", "default": ""},
    "detail": {"type": "str"},
    "check": {"type": "str", "choices": ["driver_rollout", "nic_configuration", "nic_policy"]},
    "stuck_after": {"type": "int"},
    "versions": {"type": "dict"},
}


def to_gate(options: dict) -> Gate:
    """A Gate from its options (GATE_OPTIONS); path a JMESPath expression or a list of keys."""
    path = field_path(options["path"])
    _compiled(path)  # a bad expression fails here, not at the first poll
    if options.get("detail"):
        _compiled(options["detail"])
    return Gate(
        name=options["gate"],
        api_version=options["api_version"],
        kind=options["kind"],
        path=path,
        equals=options.get("equals"),
        one_of=options.get("one_of") or [],
        at_least=options.get("at_least"),
        includes=options.get("includes") or [],
        excludes=options.get("excludes") or [],
        fail_on=options.get("fail_on") or [],
        object_name=options.get("name"),
        namespace=options.get("namespace"),
        label_selector=options.get("label_selector"),
        min_count=options.get("min_count", 1),
        hint=options.get("hint") or "",
        detail=options.get("detail"),
        check=options.get("check"),
        stuck_after=options.get("stuck_after"),
        versions=options.get("versions") or {},
    )


def incomplete_gates(gates: list[Gate]) -> str | None:
    """What is wrong with the first gate that says nothing of the value it waits for."""
    for gate in gates:
        if (
            gate.equals is None
            and not gate.one_of
            and gate.at_least is None
            and not gate.includes
            and not gate.excludes
        ):
            return f"gates: gate '{gate.name}' needs equals, one_of, at_least, includes or excludes"
    return None


class OnePoll:
    """The cluster's reads for one poll of the gates: gates that read the same objects (every
    rail's resource on the same nodes) share one request."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.read: dict[tuple, object] = {}

    def _once(self, key: tuple, request):
        if key not in self.read:
            try:
                self.read[key] = request()
            except NotServed as error:
                self.read[key] = error
        found = self.read[key]
        if isinstance(found, NotServed):
            raise found
        return found

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        return self._once(
            ("get", api_version, kind, name, namespace),
            lambda: self.cluster.get(api_version, kind, name, namespace),
        )

    def list(self, api_version: str, kind: str, namespace=None, label_selector=None):
        return self._once(
            ("list", api_version, kind, namespace, label_selector),
            lambda: self.cluster.list(api_version, kind, namespace, label_selector),
        )

    def log(self, *args, **kwargs) -> str:
        """A container's log (a failed driver pod's last lines), read when asked."""
        return self.cluster.log(*args, **kwargs)


def identity(gate: Gate, obj: dict) -> dict:
    """apiVersion, kind, namespace and name of one of the gate's objects."""
    metadata = obj.get("metadata") or {}
    found = {"apiVersion": gate.api_version, "kind": gate.kind, "name": metadata.get("name")}
    if metadata.get("namespace"):
        found["namespace"] = metadata["namespace"]
    return found


@dataclass
class Observation:
    met: bool
    failed: bool
    seen: str
    objects: list[dict] = field(default_factory=list)  # identities of the objects read


def observe(cluster, gate: Gate) -> Observation:
    """Read the gate's objects once and say whether it is met, failed for good, or waiting."""
    if gate.check:
        # Imported here: each check's module builds on this one's Gate and Observation.
        from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import (
            driver_rollout,
            nic_configuration,
            nic_policy,
        )

        checks = {
            "driver_rollout": driver_rollout,
            "nic_configuration": nic_configuration,
            "nic_policy": nic_policy,
        }
        return checks[gate.check].observe(cluster, gate)
    path = gate.path
    try:
        if gate.object_name:
            found = cluster.get(gate.api_version, gate.kind, gate.object_name, gate.namespace)
            objects = [found] if found is not None else []
            if not objects:
                return Observation(False, False, f"{gate.subject} does not exist")
        else:
            objects = cluster.list(gate.api_version, gate.kind, gate.namespace, gate.label_selector)
    except NotServed as error:
        return Observation(False, False, str(error))
    read = [identity(gate, obj) for obj in objects]
    if len(objects) < gate.min_count:
        return Observation(
            False,
            False,
            f"{len(objects)} {gate.kind} object(s) match, {gate.min_count} needed",
            read,
        )
    waiting = []
    for obj in objects:
        value = lookup(obj, gate.path)
        name = obj["metadata"]["name"]
        seen = f"{gate.kind} {name} {path} is {show(value)}" + _detail(gate, obj)
        if value is not MISSING and value in gate.fail_on:
            return Observation(False, True, seen, read)
        if not gate.satisfied_by(value):
            waiting.append(seen)
    if waiting:
        more = f" (and {len(waiting) - 3} more)" if len(waiting) > 3 else ""
        return Observation(False, False, "; ".join(waiting[:3]) + more, read)
    return Observation(True, False, f"{len(objects)} {gate.kind} object(s) ready", read)


def _detail(gate: Gate, obj: dict) -> str:
    """What the gate's detail expression finds in the object, for the message; nothing when it
    finds nothing."""
    if not gate.detail:
        return ""
    value = lookup(obj, gate.detail)
    if isinstance(value, dict):  # a multiselect hash: what it found, without the empty keys
        value = {key: item for key, item in value.items() if item not in (None, [], {})}
    if value is MISSING or value in (None, [], {}):
        return ""
    return f" ({show(value)})"


class GateError(Exception):
    """A gate that was not met: the message, the gate, and what was seen at the last read."""

    def __init__(self, text: str, gate: Gate, observation: Observation):
        super().__init__(text)
        self.gate = gate
        self.observation = observation

    def report(self) -> dict:
        """The gate as the wait module's options name it, with what was expected and seen and
        the identities of the objects read last (the `gate` of the module's failure)."""
        gate = self.gate
        return {
            "gate": gate.name,
            "api_version": gate.api_version,
            "kind": gate.kind,
            "name": gate.object_name,
            "namespace": gate.namespace,
            "label_selector": gate.label_selector,
            "path": gate.path,
            "expected": gate.expectation,
            "seen": self.observation.seen,
            "objects": list(self.observation.objects),
        }


class GateTimeout(GateError):
    pass


class GateFailed(GateError):
    pass


def message(gate: Gate, observation: Observation, waited: float, outcome: str) -> str:
    expected = (
        f"{gate.subject} with {gate.expectation}"
        if gate.check
        else f"{gate.subject} {gate.path} to be {gate.expectation}"
    )
    text = (
        f"gate '{gate.name}' {outcome} after {waited:.0f}s: expected {expected}; "
        f"last seen: {observation.seen}."
    )
    if gate.hint:
        text += f" Look at: {gate.hint}"
    return text


def unstable_message(
    gate: Gate, observation: Observation, waited: float, stable_for: float, held: float
) -> str:
    text = (
        f"gate '{gate.name}' not stable after {waited:.0f}s: expected {gate.subject} "
        f"{gate.path} to be {gate.expectation} in every read for {stable_for:g}s; "
        f"the gates held together for {held:.0f}s at most; last seen not met: "
        f"{observation.seen}."
    )
    if gate.hint:
        text += f" Look at: {gate.hint}"
    return text


def awaited(unmet: list, total: int, stable_for: float = 0) -> str:
    """What a wait is waiting for, for a progress line: the first gate not met and what it saw,
    or, with every gate met, that they must stay met."""
    if not unmet:
        return f"{total} gate(s) to stay met for {stable_for:g}s"
    gate, observation = unmet[0]
    others = f" (and {len(unmet) - 1} more gate(s))" if len(unmet) > 1 else ""
    return f"gate '{gate.name}'{others}: {observation.seen}"


def poll_intervals(first: float = 0.2, most: float = 1.0):
    """The pauses between a wait's reads: short at first (a status often follows the step's write
    within a second), doubling to `most`, so a long wait reads no more often than before."""
    interval = first
    while True:
        yield interval
        interval = min(interval * 2, most)


def wait_for(
    cluster,
    gates: list[Gate],
    timeout: float,
    interval: float = 1.0,
    clock=time.monotonic,
    sleep=time.sleep,
    stable_for: float = 0,
    progress=SILENT,
) -> dict[str, float]:
    """Wait until every gate is met in the same read (a pool that reports Updated before it has
    even seen a new MachineConfig must not pass) and, with stable_for, in every read for that many
    seconds (an operator that flaps between ready and not ready must not pass on a ready
    moment); return when each gate was first met. Raises GateFailed when a gate reaches a
    fail_on value, GateTimeout naming the first unmet gate (or, with stable_for, once the gates
    had been met but never for long enough: the gate last seen unmet and what it was). progress
    hears, now and then, which gate is awaited and what it is."""
    began = clock()
    first_met: dict[str, float] = {}
    all_met_once = False
    met_since = None  # when the current run of reads with every gate met began
    longest = 0.0
    last_unmet = None  # (gate, observation) of the last read with a gate unmet
    pauses = poll_intervals(min(0.2, interval), interval)
    while True:
        unmet = []
        poll = OnePoll(cluster)
        for gate in gates:
            observation = observe(poll, gate)
            if observation.failed:
                raise GateFailed(
                    message(gate, observation, clock() - began, "failed"), gate, observation
                )
            if observation.met:
                first_met.setdefault(gate.name, round(clock() - began, 1))
            else:
                unmet.append((gate, observation))
        now = clock()
        if unmet:
            met_since = None
            last_unmet = unmet[0]
        else:
            all_met_once = True
            met_since = now if met_since is None else met_since
            longest = max(longest, now - met_since)
            if now - met_since >= stable_for:
                return first_met
        if now - began >= timeout:
            if unmet and not (stable_for and all_met_once):
                gate, observation = unmet[0]
                raise GateTimeout(
                    message(gate, observation, now - began, "not reached"), gate, observation
                )
            gate, observation = last_unmet or (gates[0], observe(cluster, gates[0]))
            raise GateTimeout(
                unstable_message(gate, observation, now - began, stable_for, longest),
                gate,
                observation,
            )
        progress.waiting(began, timeout, awaited(unmet, len(gates), stable_for))
        # The last read falls on the timeout itself, not up to a pause after it.
        sleep(min(next(pauses), began + timeout - now))
