"""The NIC Configuration Operator (its node daemon and its template controller), played on a
bare API server as far as the collection's gates need.

The Network Operator renders the NIC Configuration Operator when the NicClusterPolicy has
`spec.nicConfigurationOperator`; so this controller is active only while such a NicClusterPolicy
exists and is `ready`, and works in the namespace of the Succeeded Network Operator CSV (where
the real daemon keeps its NicDevices). It reads the NicClusterPolicies and CSVs the tick listed
already, so it costs nothing while inactive.

- Discovery (the daemon on each fake node): one NicDevice per NIC of the node's hardware
  annotation, named `<node>-<nic type>-<PCI domain-bus-device>` (PCI address `0000:XX:00.0`,
  bus 0x08 for the first NIC, 0x09 for the second, ...), owned by the Node, with the status the
  daemon reports (type, serial and part numbers, PSID, firmware version, model, one port with its
  netdev and `mlx5_<index>`) and the conditions `ConfigUpdateInProgress` /
  `DeviceConfigSpecEmpty` and `FirmwareUpdateInProgress` / `DeviceFirmwareSpecEmpty`. The
  NicDevices of nodes that left (or of NICs a node no longer has) are deleted.
- Template controller: every NicConfigurationTemplate (any namespace) applies to the devices
  whose node matches its `nodeSelector` and whose type (and PCI address, serial number, part
  number when given) match its `nicSelector`; the device's `spec.configuration` becomes the
  template's (`template`, `resetToDefault`). A device two templates match gets no configuration
  and a Warning event `SpecError`; a device no template matches loses its configuration (that
  does not change the NIC). The template's `status.nicDevices` lists the devices it applies to.
- Configuration (the daemon): the spec is validated as the daemon does (`IncorrectSpec`,
  `SpecValidationFailed`); a change of the non-volatile settings asks the Maintenance Operator
  for the node (NodeMaintenance `nic-configuration-operator-maintenance-<node>`, node label
  `network.nvidia.com/operator.nic-configuration.wait=true`), writes them once the
  NodeMaintenance is Ready (`PendingReboot`), "reboots" after the delay and reports
  `UpdateSuccessful`, then releases the node (NodeMaintenance deleted, label back to `false`).
  A change of runtime settings only (QoS, max read request) goes straight to
  `UpdateSuccessful`. What the NIC's firmware holds is kept on the fake node, in the annotation
  NV_CONFIG_ANNOTATION, so it outlives its NicDevice and the simulator's restarts.
  Knob `nic_configuration.hold_nodes` keeps the devices of those nodes in `PendingReboot` (a
  reboot that has not come). Knob `nic_configuration.error_reason` makes the devices of
  `error_nodes` fail at the step where the daemon meets that error.

Nothing runs mlxconfig, reboots, drains or updates firmware: only the objects and statuses move.
"""

from __future__ import annotations

import hashlib
import json

from kubernetes.client.rest import ApiException

from tests.simulator.core import (
    DelayGate,
    World,
    list_cluster,
    now,
    replace_status,
    selector_matches,
)
from tests.simulator.nodes import nic_type_of, total_vfs_of
from tests.simulator.olm import installed_namespace
from tests.simulator.operators import fake_nodes, hardware_of

GROUP, VERSION = "configuration.net.nvidia.com", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
MAINTENANCE_GROUP, MAINTENANCE_VERSION = "maintenance.nvidia.com", "v1alpha1"
NETWORK_OPERATOR_PACKAGE = "nvidia-network-operator"

WAIT_LABEL = "network.nvidia.com/operator.nic-configuration.wait"
MAINTENANCE_PREFIX = "nic-configuration-operator-maintenance-"
REQUESTOR_ID = "configuration.nic.mellanox.com"
# What each NIC's firmware holds (non-volatile settings), by PCI address: JSON on the fake node.
NV_CONFIG_ANNOTATION = "simulator.gpudirect.rdma/nic-nv-config"

CONFIG_CONDITION = "ConfigUpdateInProgress"
FIRMWARE_CONDITION = "FirmwareUpdateInProgress"
SPEC_EMPTY = "DeviceConfigSpecEmpty"
UPDATE_STARTED = "UpdateStarted"
PENDING_REBOOT = "PendingReboot"
UPDATE_SUCCESSFUL = "UpdateSuccessful"
INCORRECT_SPEC = "IncorrectSpec"
SPEC_VALIDATION_FAILED = "SpecValidationFailed"
NV_FAILED = "NonVolatileConfigUpdateFailed"
RUNTIME_FAILED = "RuntimeConfigUpdateFailed"
FIRMWARE_ERROR = "FirmwareError"
ERROR_REASONS = (INCORRECT_SPEC, SPEC_VALIDATION_FAILED, NV_FAILED, RUNTIME_FAILED, FIRMWARE_ERROR)
DONE = (UPDATE_SUCCESSFUL, *ERROR_REASONS)
IN_MAINTENANCE = (UPDATE_STARTED, PENDING_REBOOT)

SPEC_EMPTY_MESSAGE = "Device configuration spec is empty, cannot update configuration"
FIRMWARE_SPEC_EMPTY_MESSAGE = "Device firmware spec is empty, cannot update firmware"
FIRMWARE_ERROR_MESSAGE = "firmware configuration failed to apply after reboot"

# Model name and firmware major version of the NIC types (PCI device IDs) the simulator knows;
# every simulated NIC runs firmware <major>.43.1014.
MODELS = {
    "101d": ("ConnectX-6 Dx", 22),
    "101f": ("ConnectX-6 Lx", 26),
    "1021": ("ConnectX-7", 28),
    "1023": ("ConnectX-8", 40),
    "a2d6": ("BlueField-2", 24),
    "a2dc": ("BlueField-3", 32),
}
LINK_NAMES = {"eth": "Ethernet", "ib": "Infiniband"}


def pci_address(index: int) -> str:
    """The PCI address of a fake node's index-th NIC."""
    return f"0000:{0x08 + index:02x}:00.0"


def device_name(node: str, nic_type: str, pci: str) -> str:
    """The daemon's NicDevice name: node, type and PCI domain-bus-device, `:` and `.` as `-`."""
    return f"{node}-{nic_type}-{pci.rsplit('.', 1)[0].replace(':', '-')}".lower()


def discovered_status(node: str, index: int, nic: dict) -> dict:
    """What the daemon reports of one NIC (conditions aside)."""
    nic_type = nic_type_of(nic)
    model, major = MODELS.get(nic_type, (f"NVIDIA NIC {nic_type}", 28))
    pci = pci_address(index)
    digest = hashlib.sha256(f"{node}/{pci}".encode()).hexdigest()
    return {
        "node": node,
        "type": nic_type,
        "serialNumber": f"MT{2100 + int(digest[:4], 16) % 100}X{int(digest[4:9], 16) % 10**5:05d}",
        "partNumber": f"SIM{nic_type.upper()}-{'IB' if nic['linkType'] == 'ib' else 'ETH'}",
        "psid": f"MT_{int(digest[10:16], 16) % 10**10:010d}",
        "firmwareVersion": f"{major}.43.1014",
        "modelName": model,
        "dpu": False,
        "superNIC": False,
        "ports": [{"pci": pci, "networkInterface": nic["name"], "rdmaInterface": f"mlx5_{index}"}],
    }


def factory_nv(nic: dict) -> dict:
    """The non-volatile settings of a NIC as it leaves the factory."""
    return {
        "numVfs": 0,
        "linkType": LINK_NAMES[nic["linkType"]],
        "pciPerformanceOptimized": False,
        "maxAccOutRead": 0,
        "roceOptimized": False,
        "gpuDirectOptimized": False,
        "spectrumXOptimized": False,
        "rawNvConfig": [],
        "resetToDefault": False,
    }


def _enabled(template: dict, section: str) -> bool:
    return bool((template.get(section) or {}).get("enabled"))


def nv_settings(configuration: dict, nic: dict) -> dict:
    """The non-volatile settings a device configuration asks of the NIC (what needs a reboot):
    the VFs, the link type, the optimizations turned on, maxAccOutRead, raw nvconfig; with
    resetToDefault, the factory's (the template is ignored then)."""
    if configuration.get("resetToDefault"):
        return {**factory_nv(nic), "resetToDefault": True}
    template = configuration.get("template") or {}
    pci = template.get("pciPerformanceOptimized") or {}
    return {
        "numVfs": int(template.get("numVfs") or 0),
        "linkType": template.get("linkType") or LINK_NAMES[nic["linkType"]],
        "pciPerformanceOptimized": bool(pci.get("enabled")),
        "maxAccOutRead": int(pci.get("maxAccOutRead") or 0) if pci.get("enabled") else 0,
        "roceOptimized": _enabled(template, "roceOptimized"),
        "gpuDirectOptimized": _enabled(template, "gpuDirectOptimized"),
        "spectrumXOptimized": _enabled(template, "spectrumXOptimized"),
        "rawNvConfig": sorted([p["name"], p["value"]] for p in template.get("rawNvConfig") or []),
        "resetToDefault": False,
    }


def validate(template: dict, nic: dict) -> tuple[str, str] | None:
    """The daemon's checks of a template against the NIC: (reason, message) of the first that
    fails, or None."""
    link = LINK_NAMES[nic["linkType"]]
    wanted = template.get("linkType")
    if wanted and wanted != link:
        return (
            INCORRECT_SPEC,
            "incorrect spec: device doesn't support link type change, wrong link type provided "
            f"in the template, should be: {link}",
        )
    if _enabled(template, "roceOptimized") and wanted == "Infiniband":
        return (
            INCORRECT_SPEC,
            "incorrect spec: RoceOptimized settings can only be used with link type Ethernet",
        )
    gpu_direct = template.get("gpuDirectOptimized") or {}
    if gpu_direct.get("enabled"):
        if gpu_direct.get("env") != "Baremetal":
            return INCORRECT_SPEC, "incorrect spec: GpuDirectOptimized supports only Baremetal env"
        if not _enabled(template, "pciPerformanceOptimized"):
            return (
                INCORRECT_SPEC,
                "incorrect spec: GpuDirectOptimized should only be enabled together with "
                "PciPerformanceOptimized",
            )
    limit = total_vfs_of(nic)
    if int(template.get("numVfs") or 0) > limit:
        return (
            SPEC_VALIDATION_FAILED,
            f"failed to validate nv spec: numVfs {template['numVfs']} exceeds the {limit} VFs "
            "the device's firmware allows (NUM_OF_VFS)",
        )
    return None


def knob_message(reason: str, device: str, pci: str) -> str:
    """The message the daemon writes with each error the knob can cause."""
    return {
        INCORRECT_SPEC: f"incorrect spec: Parameter SRIOV_EN unsupported for device {device}",
        SPEC_VALIDATION_FAILED: (
            f"failed to query nv config of device {pci}: mlxconfig exited with status 3"
        ),
        NV_FAILED: f"failed to apply nv config to device {pci}: mlxconfig exited with status 3",
        RUNTIME_FAILED: (
            f"failed to apply runtime config to device {pci}: failed to set max read request size"
        ),
        FIRMWARE_ERROR: FIRMWARE_ERROR_MESSAGE,
    }[reason]


def find_condition(obj: dict, type_: str) -> dict | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_),
        None,
    )


def _initial_conditions(generation: int) -> list[dict]:
    stamp = now()
    return [
        {
            "type": CONFIG_CONDITION,
            "status": "False",
            "reason": SPEC_EMPTY,
            "message": SPEC_EMPTY_MESSAGE,
            "observedGeneration": generation,
            "lastTransitionTime": stamp,
        },
        {
            "type": FIRMWARE_CONDITION,
            "status": "False",
            "reason": "DeviceFirmwareSpecEmpty",
            "message": FIRMWARE_SPEC_EMPTY_MESSAGE,
            "observedGeneration": generation,
            "lastTransitionTime": stamp,
        },
    ]


def _try(call, *args):
    """A write that may lose a race (409) or find its object gone (404): None then, and the
    next tick tries again."""
    try:
        return call(*args)
    except ApiException as error:
        if error.status in (404, 409):
            return None
        raise


def _matches(template: dict, device: dict, labels: dict) -> bool:
    spec = template.get("spec") or {}
    if not selector_matches(spec.get("nodeSelector"), labels):
        return False
    selector = spec.get("nicSelector") or {}
    status = device.get("status") or {}
    if selector.get("nicType") != status.get("type"):
        return False
    pcis = selector.get("pciAddresses") or []
    if pcis and not any(p.get("pci") in pcis for p in status.get("ports") or []):
        return False
    serials = selector.get("serialNumbers") or []
    if serials and status.get("serialNumber") not in serials:
        return False
    parts = selector.get("partNumbers") or []
    return not (parts and status.get("partNumber") not in parts)


def _warning_event(world: World, device: dict, reason: str, message: str, component: str) -> None:
    """A v1 Event about the NicDevice, as the operator's event recorder writes it."""
    metadata = device["metadata"]
    stamp = now()
    _try(
        world.core.create_namespaced_event,
        metadata["namespace"],
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "generateName": f"{metadata['name']}.",
                "namespace": metadata["namespace"],
            },
            "involvedObject": {
                "apiVersion": API_VERSION,
                "kind": "NicDevice",
                "name": metadata["name"],
                "namespace": metadata["namespace"],
                "uid": metadata["uid"],
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": component},
            "reportingComponent": component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        },
    )


class NicConfigurationOperator:
    name = "nic-configuration-operator"

    def __init__(self, gate: DelayGate) -> None:
        self.gate = gate
        # The SpecError event last emitted for each device (uid): one per conflict, not a tick.
        self._spec_errors: dict[str, str] = {}

    def reconcile(self, world: World) -> None:
        namespace = self._namespace(world)
        if namespace is None:
            return
        nodes = {n["metadata"]["name"]: n for n in fake_nodes(world, reuse=True)}
        devices = self._discover(world, namespace, nodes)
        self._apply_templates(world, namespace, nodes, devices)
        self._configure(world, namespace, nodes, devices)

    @staticmethod
    def _namespace(world: World) -> str | None:
        """The daemon's namespace while it runs (a ready NicClusterPolicy renders it), else None."""
        policies = list_cluster(world, "mellanox.com", "v1alpha1", "nicclusterpolicies", reuse=True)
        if not any(
            "nicConfigurationOperator" in (p.get("spec") or {})
            and (p.get("status") or {}).get("state") == "ready"
            for p in policies
        ):
            return None
        return installed_namespace(world, NETWORK_OPERATOR_PACKAGE)

    # -- discovery -------------------------------------------------------------------------
    def _discover(self, world: World, namespace: str, nodes: dict) -> dict[str, dict]:
        listed = world.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "nicdevices")
        devices = {d["metadata"]["name"]: d for d in listed["items"]}
        wanted: dict[str, tuple[dict, dict]] = {}
        for node_name, node in nodes.items():
            for index, nic in enumerate(hardware_of(node)["nics"]):
                status = discovered_status(node_name, index, nic)
                name = device_name(node_name, status["type"], status["ports"][0]["pci"])
                wanted[name] = (node, status)
        for name, device in list(devices.items()):
            owners = device["metadata"].get("ownerReferences") or []
            if name not in wanted and any(o.get("kind") == "Node" for o in owners):
                # The daemon of a node that left is gone; its devices go (the garbage collector
                # would remove them with the Node too).
                _try(
                    world.custom.delete_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    "nicdevices",
                    name,
                )
                del devices[name]
        for name, (node, status) in wanted.items():
            device = devices.get(name) or self._create(world, namespace, name, node)
            if device is None:
                continue
            current = device.get("status") or {}
            if any(current.get(k) != v for k, v in status.items()):
                conditions = current.get("conditions") or _initial_conditions(
                    device["metadata"].get("generation", 1)
                )
                device = (
                    _try(
                        replace_status,
                        world,
                        GROUP,
                        VERSION,
                        "nicdevices",
                        {**device, "status": {**current, **status, "conditions": conditions}},
                    )
                    or device
                )
            devices[name] = device
        return devices

    @staticmethod
    def _create(world: World, namespace: str, name: str, node: dict) -> dict | None:
        body = {
            "apiVersion": API_VERSION,
            "kind": "NicDevice",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": node["metadata"]["name"],
                        "uid": node["metadata"]["uid"],
                    }
                ],
            },
            "spec": {},
        }
        return _try(
            world.custom.create_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            "nicdevices",
            body,
        )

    # -- the template controller -----------------------------------------------------------
    def _apply_templates(self, world: World, namespace: str, nodes: dict, devices: dict) -> None:
        templates = sorted(
            list_cluster(world, GROUP, VERSION, "nicconfigurationtemplates"),
            key=lambda t: (t["metadata"].get("namespace", ""), t["metadata"]["name"]),
        )
        applied: dict[str, list[str]] = {t["metadata"]["uid"]: [] for t in templates}
        for name, device in sorted(devices.items()):
            node = nodes.get((device.get("status") or {}).get("node"))
            if node is None:
                continue
            labels = node["metadata"].get("labels") or {}
            matching = [t for t in templates if _matches(t, device, labels)]
            desired = None
            uid = device["metadata"]["uid"]
            if len(matching) == 1:
                spec = matching[0].get("spec") or {}
                desired = {
                    "template": spec.get("template") or {},
                    "resetToDefault": bool(spec.get("resetToDefault")),
                }
                applied[matching[0]["metadata"]["uid"]].append(name)
            if len(matching) > 1:
                names = ",".join(t["metadata"]["name"] for t in matching)
                message = f"Several templates matching this device: {names}"
                if self._spec_errors.get(uid) != message:
                    _warning_event(
                        world, device, "SpecError", message, "nic-configuration-operator"
                    )
                    self._spec_errors[uid] = message
            else:
                self._spec_errors.pop(uid, None)
            if (device.get("spec") or {}).get("configuration") != desired:
                spec = {k: v for k, v in (device.get("spec") or {}).items() if k != "configuration"}
                if desired is not None:
                    spec["configuration"] = desired
                updated = _try(
                    world.custom.replace_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    "nicdevices",
                    name,
                    {**device, "spec": spec},
                )
                if updated is not None:
                    devices[name] = updated
        for template in templates:
            wanted = sorted(applied[template["metadata"]["uid"]])
            status = template.get("status") or {}
            if status.get("nicDevices") != wanted:
                _try(
                    replace_status,
                    world,
                    GROUP,
                    VERSION,
                    "nicconfigurationtemplates",
                    {**template, "status": {**status, "nicDevices": wanted}},
                )

    # -- the daemon's configuration --------------------------------------------------------
    def _configure(self, world: World, namespace: str, nodes: dict, devices: dict) -> None:
        knobs = world.knobs.get("nic_configuration") or {}
        error = knobs.get("error_reason") or ""
        error_nodes = set(knobs.get("error_nodes") or [])
        maintenances = self._maintenances(world, namespace)
        busy: set[str] = set()  # nodes with a device in the maintenance part of the flow
        for device in sorted(devices.values(), key=lambda d: d["metadata"]["name"]):
            node_name = (device.get("status") or {}).get("node")
            node = nodes.get(node_name)
            if node is None:
                continue
            failing = (
                error
                if error in ERROR_REASONS and (not error_nodes or node_name in error_nodes)
                else ""
            )
            maintenance = maintenances.get(MAINTENANCE_PREFIX + node_name)
            held = node_name in set(knobs.get("hold_nodes") or [])
            change = self._step(world, device, node, maintenance, failing, held)
            if change is not None:
                device = self._set_condition(world, device, *change) or device
            if self._reason(device) in IN_MAINTENANCE:
                busy.add(node_name)
        for node_name, node in nodes.items():
            maintenance_name = MAINTENANCE_PREFIX + node_name
            existing = maintenances.get(maintenance_name)
            if node_name in busy:
                if existing is None:
                    self._request_maintenance(world, namespace, maintenance_name, node_name)
            elif existing is not None and existing["spec"].get("requestorID") == REQUESTOR_ID:
                _try(
                    world.custom.delete_namespaced_custom_object,
                    MAINTENANCE_GROUP,
                    MAINTENANCE_VERSION,
                    namespace,
                    "nodemaintenances",
                    maintenance_name,
                )
            self._label(world, node, "true" if node_name in busy else "false")

    @staticmethod
    def _reason(device: dict) -> str | None:
        """ConfigUpdateInProgress's reason when it speaks of the device's generation, else None."""
        condition = find_condition(device, CONFIG_CONDITION)
        if condition is None:
            return None
        if condition.get("observedGeneration") != device["metadata"].get("generation", 1):
            return None
        return condition.get("reason")

    def _step(
        self,
        world: World,
        device: dict,
        node: dict,
        maintenance: dict | None,
        error: str,
        held: bool = False,
    ) -> tuple[str, str, str] | None:
        """The device's next (status, reason, message) of ConfigUpdateInProgress, or None when it
        stays as it is; held keeps a device in PendingReboot (its node's reboot has not come)."""
        metadata = device["metadata"]
        configuration = (device.get("spec") or {}).get("configuration")
        reason = self._reason(device)
        if not configuration:
            return None if reason == SPEC_EMPTY else ("False", SPEC_EMPTY, SPEC_EMPTY_MESSAGE)
        if reason in DONE and reason != UPDATE_SUCCESSFUL:
            return None
        pci = device["status"]["ports"][0]["pci"]
        nic = self._nic(node, pci)
        if nic is None:
            return None
        if reason == UPDATE_SUCCESSFUL:
            # The daemon's check for drift (upstream requeues every 20 minutes "to check if the
            # configuration has drifted"; here, at once): a NIC that no longer holds its
            # non-volatile settings (reset by hand) is configured again, with maintenance.
            if nv_settings(configuration, nic) != self._nv(node, pci, nic):
                return ("True", UPDATE_STARTED, "")
            return None
        generation = metadata.get("generation", 1)

        def due(step: str) -> bool:
            return self.gate.due(
                metadata["uid"], f"{generation}-{step}", world.knobs["delay_seconds"]
            )

        wanted = nv_settings(configuration, nic)
        if reason in (None, SPEC_EMPTY):
            # A new spec (a new generation): validate it, then see what it changes.
            if not due("validate"):
                return None
            problem = (
                None
                if configuration.get("resetToDefault")
                else validate(configuration.get("template") or {}, nic)
            )
            if problem is None and error in (INCORRECT_SPEC, SPEC_VALIDATION_FAILED):
                problem = (error, knob_message(error, metadata["name"], pci))
            if problem is not None:
                return ("False", *problem)
            if wanted != self._nv(node, pci, nic):
                return ("True", UPDATE_STARTED, "")
            # Only runtime settings (QoS, max read request): applied at once, no maintenance.
            if error == RUNTIME_FAILED:
                return ("False", RUNTIME_FAILED, knob_message(error, metadata["name"], pci))
            return ("False", UPDATE_SUCCESSFUL, "")
        if reason == UPDATE_STARTED:
            if not _ready(maintenance) or not due("nv-config"):
                return None
            if error == NV_FAILED:
                return ("False", NV_FAILED, knob_message(error, metadata["name"], pci))
            return ("True", PENDING_REBOOT, "")
        if reason == PENDING_REBOOT:
            if held or not due("reboot"):
                return None
            if error == FIRMWARE_ERROR:
                _warning_event(
                    world,
                    device,
                    FIRMWARE_ERROR,
                    FIRMWARE_ERROR_MESSAGE,
                    "nic-configuration-daemon",
                )
                return ("False", FIRMWARE_ERROR, FIRMWARE_ERROR_MESSAGE)
            # Rebooted: the firmware now runs the new settings; then the runtime settings.
            self._record_nv(world, node, pci, wanted)
            if error == RUNTIME_FAILED:
                return ("False", RUNTIME_FAILED, knob_message(error, metadata["name"], pci))
            return ("False", UPDATE_SUCCESSFUL, "")
        return None

    @staticmethod
    def _nic(node: dict, pci: str) -> dict | None:
        nics = hardware_of(node)["nics"]
        return next((n for i, n in enumerate(nics) if pci_address(i) == pci), None)

    @staticmethod
    def _nv(node: dict, pci: str, nic: dict) -> dict:
        """What the NIC's firmware holds: the last settings applied, else the factory's."""
        raw = (node["metadata"].get("annotations") or {}).get(NV_CONFIG_ANNOTATION)
        return (json.loads(raw) if raw else {}).get(pci) or factory_nv(nic)

    @staticmethod
    def _record_nv(world: World, node: dict, pci: str, settings: dict) -> None:
        annotations = node["metadata"].setdefault("annotations", {})
        held = json.loads(annotations.get(NV_CONFIG_ANNOTATION) or "{}")
        held[pci] = settings
        value = json.dumps(held, sort_keys=True)
        world.core.patch_node(
            node["metadata"]["name"], {"metadata": {"annotations": {NV_CONFIG_ANNOTATION: value}}}
        )
        annotations[NV_CONFIG_ANNOTATION] = value  # the rest of the tick reads it

    @staticmethod
    def _set_condition(
        world: World, device: dict, status: str, reason: str, message: str
    ) -> dict | None:
        current = device.get("status") or {}
        conditions = list(current.get("conditions") or [])
        old = find_condition(device, CONFIG_CONDITION)
        new = {
            "type": CONFIG_CONDITION,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": device["metadata"].get("generation", 1),
            # As meta.SetStatusCondition: the time moves when the status does.
            "lastTransitionTime": (
                old["lastTransitionTime"] if old and old.get("status") == status else now()
            ),
        }
        if old == new:
            return device
        if old is None:
            conditions.append(new)
        else:
            conditions = [new if c.get("type") == CONFIG_CONDITION else c for c in conditions]
        return _try(
            replace_status,
            world,
            GROUP,
            VERSION,
            "nicdevices",
            {**device, "status": {**current, "conditions": conditions}},
        )

    # -- maintenance and the node label ----------------------------------------------------
    @staticmethod
    def _maintenances(world: World, namespace: str) -> dict[str, dict]:
        try:
            listed = world.custom.list_namespaced_custom_object(
                MAINTENANCE_GROUP, MAINTENANCE_VERSION, namespace, "nodemaintenances"
            )
        except ApiException as error:
            if error.status == 404:  # the kind is not served
                return {}
            raise
        return {m["metadata"]["name"]: m for m in listed["items"]}

    @staticmethod
    def _request_maintenance(world: World, namespace: str, name: str, node: str) -> None:
        _try(
            world.custom.create_namespaced_custom_object,
            MAINTENANCE_GROUP,
            MAINTENANCE_VERSION,
            namespace,
            "nodemaintenances",
            {
                "apiVersion": f"{MAINTENANCE_GROUP}/{MAINTENANCE_VERSION}",
                "kind": "NodeMaintenance",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "requestorID": REQUESTOR_ID,
                    "nodeName": node,
                    "cordon": True,
                    "drainSpec": {"force": True, "deleteEmptyDir": True},
                },
            },
        )

    @staticmethod
    def _label(world: World, node: dict, value: str) -> None:
        labels = node["metadata"].get("labels") or {}
        if labels.get(WAIT_LABEL) == value:
            return
        world.core.patch_node(
            node["metadata"]["name"], {"metadata": {"labels": {WAIT_LABEL: value}}}
        )
        node["metadata"].setdefault("labels", {})[WAIT_LABEL] = value


def _ready(maintenance: dict | None) -> bool:
    """The NodeMaintenance reports Ready=True (the node is cordoned and drained)."""
    if maintenance is None or maintenance["metadata"].get("deletionTimestamp"):
        return False
    condition = find_condition(maintenance, "Ready")
    return condition is not None and condition.get("status") == "True"
