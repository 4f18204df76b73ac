"""The status the Network Operator writes on a NicClusterPolicy and a NicNodePolicy: one entry
of status.appliedStates per state the operator runs (`ignore` for a component the spec leaves
out), status.state, and from release 26.7 status.conditions.

Upstream (network-operator v26.7.x at 3f45b42): the states and their order are
pkg/state/factory.go's; each state's condition type is api/v1alpha1/nicclusterpolicyconditions.go
StateNameToConditionType; the conditions are computed by controllers/conditions.go
computePolicyConditions: a component ready is True ComponentReady with no message, not ready
False ComponentNotReady, in error False ComponentError, both with the state's error as message; a
component in `ignore` has no condition; the aggregate `Ready` is False ComponentError ("One or
more components are in error state") when any is in error, else False ComponentsNotReady ("One
or more components are not yet ready") when any is not ready, else True AllComponentsReady;
every condition carries the policy's generation as observedGeneration, and a condition keeps its
lastTransitionTime while its status stays (meta.SetStatusCondition). status.state is `ready` only
when no state is notReady or error, else `notReady` (pkg/state/manager.go): an error is told by
appliedStates and the conditions, not by status.state.
"""

from __future__ import annotations

from tests.simulator.core import now

# NicClusterPolicy: (state name, the spec path that enables it, condition type), in the
# operator's order (factory.go).
CLUSTER_POLICY_STATES = (
    ("state-multus-cni", ("secondaryNetwork", "multus"), "MultusCNIReady"),
    ("state-container-networking-plugins", ("secondaryNetwork", "cniPlugins"), "CNIPluginsReady"),
    ("state-ipoib-cni", ("secondaryNetwork", "ipoib"), "IPoIBCNIReady"),
    ("state-OFED", ("ofedDriver",), "OFEDDriverReady"),
    ("state-SRIOV-device-plugin", ("sriovDevicePlugin",), "SRIOVDevicePluginReady"),
    ("state-RDMA-device-plugin", ("rdmaSharedDevicePlugin",), "RDMASharedDevicePluginReady"),
    ("state-ib-kubernetes", ("ibKubernetes",), "IBKubernetesReady"),
    ("state-nv-ipam-cni", ("nvIpam",), "NVIPAMReady"),
    ("state-nic-feature-discovery", ("nicFeatureDiscovery",), "NICFeatureDiscoveryReady"),
    (
        "state-doca-telemetry-service",
        ("docaTelemetryService",),
        "DOCATelemetryServiceReady",
    ),
    (
        "state-nic-configuration-operator",
        ("nicConfigurationOperator",),
        "NICConfigurationOperatorReady",
    ),
    ("state-spectrum-x-operator", ("spectrumXOperator",), "SpectrumXOperatorReady"),
)
# NicNodePolicy: the three states it runs (factory.go), the same condition types.
NODE_POLICY_STATES = (
    ("state-OFED", ("ofedDriver",), "OFEDDriverReady"),
    ("state-RDMA-device-plugin", ("rdmaSharedDevicePlugin",), "RDMASharedDevicePluginReady"),
    ("state-SRIOV-device-plugin", ("sriovDevicePlugin",), "SRIOVDevicePluginReady"),
)
# The first release whose operator writes status.conditions.
CONDITIONS_SINCE = (26, 7)
READY, NOT_READY, ERROR, IGNORE = "ready", "notReady", "error", "ignore"


def enabled(spec: dict, path: tuple[str, ...]) -> bool:
    value = spec
    for key in path:
        value = (value or {}).get(key)
    return value is not None


def component_states(spec: dict, table: tuple, judge) -> list[tuple[str, str, str, str]]:
    """(state, condition type, sync state, message) for each state of the table: `ignore` where
    the spec leaves the component out, else what judge(state name) says: (sync state, message)."""
    found = []
    for state, path, condition in table:
        if not enabled(spec, path):
            found.append((state, condition, IGNORE, ""))
        else:
            found.append((state, condition, *judge(state)))
    return found


def _condition(old: dict | None, kind: str, status: str, reason: str, message: str, gen) -> dict:
    kept = old and old.get("status") == status and old.get("lastTransitionTime")
    return {
        "type": kind,
        "status": status,
        "observedGeneration": gen,
        "lastTransitionTime": kept or now(),
        "reason": reason,
        "message": message,
    }


def policy_status(policy: dict, states: list[tuple], with_conditions: bool) -> dict:
    """status.state, status.appliedStates and (with_conditions) status.conditions."""
    applied = [
        {"name": state, "state": sync, **({"message": message} if message else {})}
        for state, _condition_type, sync, message in states
    ]
    syncs = {sync for _state, _type, sync, _message in states}
    status = {
        "state": NOT_READY if syncs & {NOT_READY, ERROR} else READY,
        "appliedStates": applied,
    }
    if not with_conditions:
        return status
    existing = {
        c["type"]: c for c in ((policy.get("status") or {}).get("conditions") or []) if "type" in c
    }
    generation = policy["metadata"].get("generation") or 0
    conditions = []
    for _state, kind, sync, message in states:
        if sync == IGNORE:
            continue
        if sync == READY:
            conditions.append(
                _condition(existing.get(kind), kind, "True", "ComponentReady", "", generation)
            )
        else:
            reason = "ComponentError" if sync == ERROR else "ComponentNotReady"
            conditions.append(
                _condition(existing.get(kind), kind, "False", reason, message, generation)
            )
    if ERROR in syncs:
        ready = ("False", "ComponentError", "One or more components are in error state")
    elif NOT_READY in syncs:
        ready = ("False", "ComponentsNotReady", "One or more components are not yet ready")
    else:
        ready = ("True", "AllComponentsReady", "")
    conditions.append(_condition(existing.get("Ready"), "Ready", *ready, generation))
    return {**status, "conditions": conditions}
