"""The NIC configuration check: whether a NicConfigurationTemplate is applied to its NICs.

A template is applied when every NicDevice in its status.nicDevices has the template in its
spec.configuration and the condition ConfigUpdateInProgress with reason UpdateSuccessful at the
device's current generation (the condition is False both when done and when failed: the reason
says which). UpdateStarted (the node waits for, or is in, maintenance) and PendingReboot (the
firmware is written, the node reboots) are progress, shown with the node and its NodeMaintenance;
the error reasons fail the gate with the device, the node and the daemon's message. A device
waiting for maintenance while the Maintenance Operator is paused (maxUnavailable 0) fails the
gate at once, with that as the reason: nothing would move before the timeout.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (
    API_VERSION,
    MAINTENANCE_API_VERSION,
    MAINTENANCE_CONFIG_NAME,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    Gate,
    Observation,
    identity,
)

CONDITION = "ConfigUpdateInProgress"
APPLIED = "UpdateSuccessful"
PROGRESS = {
    "UpdateStarted": "the node waits for maintenance or is being drained",
    "PendingReboot": "the firmware settings are written, the node reboots",
}
ERRORS = (
    "IncorrectSpec",
    "SpecValidationFailed",
    "NonVolatileConfigUpdateFailed",
    "RuntimeConfigUpdateFailed",
    "FirmwareError",
)
# The NodeMaintenance the NIC configuration daemon asks for, one per node, in its namespace.
MAINTENANCE_PREFIX = "nic-configuration-operator-maintenance-"


def condition(obj: dict, kind: str = CONDITION) -> dict | None:
    """The object's status condition of this type (ConfigUpdateInProgress unless another)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def maintenance_state(maintenance: dict | None) -> str:
    """What a NodeMaintenance says of its node: its Ready condition's reason (Pending,
    Scheduled, Cordon, WaitForPodCompletion, Draining, Ready), or that nothing answers it."""
    if maintenance is None:
        return "no NodeMaintenance"
    ready = condition(maintenance, "Ready")
    if ready is None:
        return "no status (is the Maintenance Operator running?)"
    return ready.get("reason") or ready.get("status") or "unknown"


def _paused(cluster) -> str | None:
    """The MaintenanceOperatorConfig that pauses new maintenance (maxUnavailable 0), if any."""
    try:
        configs = cluster.list(MAINTENANCE_API_VERSION, "MaintenanceOperatorConfig")
    except NotServed:
        return None
    for config in configs:
        metadata = config.get("metadata") or {}
        unavailable = (config.get("spec") or {}).get("maxUnavailable")
        if metadata.get("name") == MAINTENANCE_CONFIG_NAME and str(unavailable).strip() in (
            "0",
            "0%",
        ):
            return (
                f"MaintenanceOperatorConfig {metadata.get('namespace')}/{MAINTENANCE_CONFIG_NAME}"
            )
    return None


def _listed(cluster, api_version: str, kind: str, namespace: str) -> dict[str, dict]:
    try:
        items = cluster.list(api_version, kind, namespace)
    except NotServed:
        return {}
    return {item["metadata"]["name"]: item for item in items}


def observe(cluster, gate: Gate) -> Observation:
    """Read the template, its NicDevices and their NodeMaintenances once; met, failed for good,
    or waiting, with what each device is doing."""
    namespace = gate.namespace
    try:
        template = cluster.get(gate.api_version, gate.kind, gate.object_name, namespace)
    except NotServed as error:
        return Observation(False, False, str(error))
    if template is None:
        return Observation(False, False, f"{gate.subject} does not exist")
    read = [identity(gate, template)]
    spec = template.get("spec") or {}
    listed = sorted((template.get("status") or {}).get("nicDevices") or [])
    if not listed:
        selector = ",".join(f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items())
        return Observation(
            False,
            False,
            f"no NicDevice is listed yet (nicType {spec.get('nicSelector', {}).get('nicType')} "
            f"on nodes matching {selector or 'any labels'}): the NIC configuration daemon lists "
            "each node's NICs once it runs, and a device that two templates match is listed by "
            "neither",
            read,
        )
    devices = _listed(cluster, API_VERSION, "NicDevice", namespace)
    maintenances = _listed(cluster, MAINTENANCE_API_VERSION, "NodeMaintenance", namespace)
    waiting, failed, queued = [], [], []
    for name in listed:
        device = devices.get(name)
        read.append(
            {
                "apiVersion": API_VERSION,
                "kind": "NicDevice",
                "name": name,
                **({"namespace": namespace} if namespace else {}),
            }
        )
        if device is None:
            waiting.append(f"NicDevice {name} is listed but does not exist")
            continue
        node = (device.get("status") or {}).get("node") or "?"
        where = f"NicDevice {name} on node {node}"
        configuration = (device.get("spec") or {}).get("configuration") or {}
        if configuration.get("template") != spec.get("template") or bool(
            configuration.get("resetToDefault")
        ) != bool(spec.get("resetToDefault")):
            waiting.append(f"{where}: its spec does not hold this template yet")
            continue
        state = condition(device)
        if state is None:
            waiting.append(f"{where}: no {CONDITION} condition yet")
            continue
        generation = (device.get("metadata") or {}).get("generation")
        observed = state.get("observedGeneration")
        if generation is not None and observed is not None and observed < generation:
            waiting.append(f"{where}: the daemon has not seen generation {generation} yet")
            continue
        reason = state.get("reason")
        message = state.get("message") or ""
        if reason == APPLIED:
            continue
        if reason in ERRORS:
            failed.append(f"{where}: {reason}" + (f": {message}" if message else ""))
            continue
        if reason in PROGRESS:
            maintenance = maintenances.get(MAINTENANCE_PREFIX + node)
            state = maintenance_state(maintenance)
            if maintenance is not None:
                read.append(
                    {
                        "apiVersion": MAINTENANCE_API_VERSION,
                        "kind": "NodeMaintenance",
                        "name": MAINTENANCE_PREFIX + node,
                        "namespace": namespace,
                    }
                )
            if reason == "UpdateStarted" and state != "Ready":
                queued.append(where)
            waiting.append(
                f"{where}: {reason} ({PROGRESS[reason]}); NodeMaintenance "
                f"{MAINTENANCE_PREFIX}{node}: {state}"
            )
            continue
        waiting.append(
            f"{where}: {CONDITION} reason {reason}" + (f": {message}" if message else "")
        )
    if failed:
        return Observation(False, True, "; ".join(failed), read)
    if queued:
        paused = _paused(cluster)
        if paused:
            return Observation(
                False,
                True,
                f"the Maintenance Operator is paused ({paused} has maxUnavailable 0): it takes no "
                f"node into maintenance, so {queued[0]}"
                + (f" and {len(queued) - 1} more" if len(queued) > 1 else "")
                + " stays UpdateStarted. Set gpudirect_rdma_maintenance_max_unavailable above 0 "
                "(or leave it unset) once nodes may go into maintenance",
                read,
            )
    if waiting:
        more = f" (and {len(waiting) - 3} more)" if len(waiting) > 3 else ""
        return Observation(False, False, "; ".join(waiting[:3]) + more, read)
    return Observation(True, False, f"{len(listed)} NicDevice(s) {APPLIED}", read)
