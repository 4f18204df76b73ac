"""The NIC policy check: whether a NicClusterPolicy or NicNodePolicy is ready, naming the
component that is not.

From Network Operator 26.7 both policies carry status.conditions (controllers/conditions.go,
computePolicyConditions): one `<Component>Ready` condition per component the spec configures
(OFEDDriverReady, RDMASharedDevicePluginReady, NVIPAMReady, ...; True with reason ComponentReady,
False with ComponentNotReady or ComponentError and the component's error as message) and an
aggregate `Ready` (True AllComponentsReady; False ComponentsNotReady or ComponentError), each
with the generation it was computed for (observedGeneration). The policy is ready when `Ready`
is True for the policy's current generation and status.state is `ready`: a status written
before the last change says nothing of it; the state stays the judge too,
as a NicNodePolicy whose nodes overlap another's gets state `error` and no component condition,
which leaves `Ready` True. Older releases write no conditions: then status.state alone, and the
first entry of status.appliedStates that is not ready says which component.

A state of `error` fails the gate at once when the gate says so (fail_on); a component in error
is waited on (the operator retries) and named with its reason and message in every message.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    Gate,
    Observation,
    identity,
)

READY = "Ready"
READY_STATE = "ready"


def not_ready_components(policy: dict) -> list[str]:
    """The components a policy's conditions say are not ready, each with reason and message
    (`OFEDDriverReady False ComponentError: <message>`), errors first; [] without conditions."""
    conditions = (policy.get("status") or {}).get("conditions") or []
    found = [c for c in conditions if c.get("type") != READY and str(c.get("status")) != "True"]
    found.sort(key=lambda c: (c.get("reason") != "ComponentError", c.get("type") or ""))
    return [
        f"{c.get('type')} {c.get('status')} {c.get('reason')}"
        + (f": {c['message']}" if c.get("message") else "")
        for c in found
    ]


def _legacy_detail(status: dict) -> str:
    """What status.reason and the first appliedStates entry not ready say (before 26.7)."""
    parts = []
    if status.get("reason"):
        parts.append(f"reason {status['reason']!r}")
    pending = next(
        (
            s
            for s in status.get("appliedStates") or []
            if s.get("state") not in (READY_STATE, "ignore")
        ),
        None,
    )
    if pending:
        message = f": {pending['message']}" if pending.get("message") else ""
        parts.append(f"{pending.get('name')} {pending.get('state')}{message}")
    return f" ({'; '.join(parts)})" if parts else ""


def observe(cluster, gate: Gate) -> Observation:
    """Read the policy once: met, failed for good (a state in gate.fail_on), or waiting, with
    the components not ready."""
    try:
        policy = cluster.get(gate.api_version, gate.kind, gate.object_name, gate.namespace)
    except NotServed as error:
        return Observation(False, False, str(error))
    if policy is None:
        return Observation(False, False, f"{gate.subject} does not exist")
    read = [identity(gate, policy)]
    status = policy.get("status") or {}
    state = status.get("state")
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    where = f"{gate.kind} {gate.object_name}"
    if READY in conditions:
        ready = conditions[READY]
        generation = (policy.get("metadata") or {}).get("generation")
        seen_generation = ready.get("observedGeneration")
        if generation is not None and seen_generation is not None and seen_generation < generation:
            # A status from before the last change (a section added, a version changed): the
            # operator has not reconciled this spec yet, whatever the status says.
            return Observation(
                False,
                False,
                f"{where} is at generation {generation}; its conditions are of generation "
                f"{seen_generation} (the operator has not reconciled the change yet)",
                read,
            )
        if str(ready.get("status")) == "True" and state == READY_STATE:
            return Observation(True, False, f"{where} ready (condition Ready True)", read)
        components = not_ready_components(policy)
        seen = (
            f"{where} status.state is {state!r}, condition Ready {ready.get('status')} "
            f"{ready.get('reason')}"
        )
        if components:
            seen += "; not ready: " + "; ".join(components)
        elif status.get("reason"):
            seen += f" (reason {status['reason']!r})"
    else:
        if state == READY_STATE:
            return Observation(True, False, f"{where} status.state is 'ready'", read)
        seen = f"{where} status.state is {state!r}" + _legacy_detail(status)
    return Observation(False, state is not None and state in gate.fail_on, seen, read)
