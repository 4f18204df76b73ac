"""The simulator plays the NIC Configuration Operator (its daemon and its template controller) and
the NVIDIA Maintenance Operator the way they behave: NicDevices per NIC of each fake node,
templates applied to the devices they select, a change of the NICs' firmware settings through a
NodeMaintenance (UpdateStarted, Ready, PendingReboot, UpdateSuccessful), runtime-only changes
without one, two templates on one device refused, the daemon's errors by knob, and the
Maintenance Operator's budgets (maxUnavailable 0 pauses, maxParallelOperations 1 serialises).
Every object created here passes the real CRD schemas."""

from __future__ import annotations

import contextlib
import copy
import subprocess
import sys
import time
import uuid

import pytest
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import REPO_ROOT
from tests.integration.helpers import assert_kept, wait_for
from tests.integration.history import states as _states
from tests.integration.test_simulator import _operator_group
from tests.simulator.core import World
from tests.simulator.nodes import HARDWARE_ANNOTATION, Hardware, Nic, node_object, register_nodes
from tests.simulator.olm import installed_namespace

OLM = ("operators.coreos.com", "v1alpha1")
NCO = ("configuration.net.nvidia.com", "v1alpha1")
MAINTENANCE = ("maintenance.nvidia.com", "v1alpha1")
WAIT_LABEL = "network.nvidia.com/operator.nic-configuration.wait"
MAINTENANCE_PREFIX = "nic-configuration-operator-maintenance-"
MO_PACKAGE = "nvidia-maintenance-operator"
MO_CSV = "nvidia-maintenance-operator.v26.4.0"
NO_PACKAGE = "nvidia-network-operator"
NO_CSV = "nvidia-network-operator.v26.4.1"
IN_PROGRESS = ("Scheduled", "Cordon", "WaitForPodCompletion", "Draining", "Ready")

# NVIDIA's recommendation for GPUDirect RDMA over RoCE on a ConnectX-7.
GDR_TEMPLATE = {
    "numVfs": 8,
    "linkType": "Ethernet",
    "pciPerformanceOptimized": {"enabled": True, "maxReadRequest": 4096},
    "gpuDirectOptimized": {"enabled": True, "env": "Baremetal"},
    "roceOptimized": {"enabled": True, "qos": {"trust": "dscp", "pfc": "0,0,0,1,0,0,0,0"}},
}


# -- OLM -------------------------------------------------------------------------------------


def _install(custom, core, package, targets=None, **spec):
    """A fresh namespace with an OperatorGroup (own namespace unless targets) and a
    Subscription to package from certified-operators; the namespace."""
    namespace = f"test-{package.split('-')[1][:5]}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    _operator_group(custom, namespace, [namespace] if targets is None else targets)
    custom.create_namespaced_custom_object(
        *OLM,
        namespace,
        "subscriptions",
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": package, "namespace": namespace},
            "spec": {
                "name": package,
                "source": "certified-operators",
                "sourceNamespace": "openshift-marketplace",
                **spec,
            },
        },
    )
    return namespace


def _csv(custom, namespace, name):
    try:
        return custom.get_namespaced_custom_object(*OLM, namespace, "clusterserviceversions", name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _csv_phase(custom, namespace, name):
    return ((_csv(custom, namespace, name) or {}).get("status") or {}).get("phase")


def _delete_namespace(core, name):
    try:
        core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise


@pytest.fixture(scope="module")
def operators(harness, custom, core):
    """The Network Operator and the Maintenance Operator installed through the simulated OLM,
    each in a namespace of its own, and a NicClusterPolicy with nicConfigurationOperator, ready.
    Yields the namespaces the simulated NIC configuration daemon and Maintenance Operator work
    in: those of the Succeeded CSVs, by the simulator's rule (a cluster left with several
    installs picks the package's own namespace, else the oldest install)."""
    mine = []
    for package, csv, channel in ((NO_PACKAGE, NO_CSV, "v26.4"), (MO_PACKAGE, MO_CSV, "stable")):
        namespace = _install(custom, core, package, channel=channel)
        mine.append(namespace)
        wait_for(
            lambda ns=namespace, name=csv: _csv_phase(custom, ns, name) == "Succeeded",
            what=f"the {package} CSV to succeed",
        )
    policy = {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": {
            "nicConfigurationOperator": {
                "operator": {
                    "image": "nic-configuration-operator",
                    "repository": "nvcr.io/nvidia/mellanox",
                    "version": "network-operator-v26.4.1",
                },
                "configurationDaemon": {
                    "image": "nic-configuration-operator-daemon",
                    "repository": "nvcr.io/nvidia/mellanox",
                    "version": "network-operator-v26.4.1",
                },
            }
        },
    }
    # An earlier test of this worker may have left its own NicClusterPolicy (the name is fixed).
    with contextlib.suppress(ApiException):
        custom.delete_cluster_custom_object(
            "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
        )
    wait_for(
        lambda: (
            not custom.list_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies")[
                "items"
            ]
        ),
        what="no NicClusterPolicy left",
    )
    custom.create_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies", policy)
    wait_for(
        lambda: (
            (
                custom.get_cluster_custom_object(
                    "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
                ).get("status")
                or {}
            ).get("state")
            == "ready"
        ),
        what="the NicClusterPolicy to be ready",
    )
    world = World(harness)
    yield {
        "network": installed_namespace(world, NO_PACKAGE),
        "maintenance": installed_namespace(world, MO_PACKAGE),
    }
    custom.delete_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    for namespace in mine:
        _delete_namespace(core, namespace)


# -- fake nodes, templates, maintenance config ------------------------------------------------


@pytest.fixture
def nodes(harness, core, custom):
    """register(count, nics=..., nic_type=...): fake nodes of this test, labelled so that only
    this test's templates select them; removed afterwards (their NicDevices with them)."""
    test_id = uuid.uuid4().hex[:6]
    registered = []

    def register(count=1, nics=("ens8f0np0",), nic_type="1021", link_type="eth"):
        prefix = f"sim-nic-{test_id}-{len(registered)}"
        hardware = Hardware(nics=tuple(Nic(n, link_type, nic_type=nic_type) for n in nics))
        names = register_nodes(
            harness, count, prefix=prefix, hardware=hardware, labels={"sim-nic-test": test_id}
        )
        registered.extend(names)
        return names

    register.selector = {"sim-nic-test": test_id}
    yield register
    # A NodeMaintenance left for a node of this test (a test that failed half-way) goes too.
    for maintenance in custom.list_cluster_custom_object(*MAINTENANCE, "nodemaintenances")["items"]:
        if maintenance["spec"].get("nodeName") in registered:
            try:
                custom.delete_namespaced_custom_object(
                    *MAINTENANCE,
                    maintenance["metadata"]["namespace"],
                    "nodemaintenances",
                    maintenance["metadata"]["name"],
                )
            except ApiException as error:
                if error.status != 404:
                    raise
    for name in registered:
        try:
            core.delete_node(name)
        except ApiException as error:
            if error.status != 404:
                raise


@pytest.fixture
def templates(custom, operators):
    """create(name, template, namespace=the daemon's, **spec): NicConfigurationTemplates of this
    test, deleted afterwards (with any NodeMaintenance left for this test's nodes)."""
    created = []

    def create(name, template, namespace=None, node_selector=None, nic_type="1021", **spec):
        namespace = namespace or operators["network"]
        body = {
            "apiVersion": "configuration.net.nvidia.com/v1alpha1",
            "kind": "NicConfigurationTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "nodeSelector": node_selector or {},
                "nicSelector": {"nicType": nic_type, **spec.pop("nic_selector", {})},
                "resetToDefault": spec.pop("reset_to_default", False),
                "template": template,
            },
        }
        created.append((namespace, name))
        return custom.create_namespaced_custom_object(
            *NCO, namespace, "nicconfigurationtemplates", body
        )

    yield create
    for namespace, name in created:
        try:
            custom.delete_namespaced_custom_object(
                *NCO, namespace, "nicconfigurationtemplates", name
            )
        except ApiException as error:
            if error.status != 404:
                raise


@pytest.fixture
def maintenance_config(custom, operators):
    """set(spec): the Maintenance Operator's `default` MaintenanceOperatorConfig; what was there
    before comes back afterwards."""
    namespace = operators["maintenance"]
    args = (*MAINTENANCE, namespace, "maintenanceoperatorconfigs", "default")
    try:
        before = custom.get_namespaced_custom_object(*args)
    except ApiException as error:
        if error.status != 404:
            raise
        before = None

    def set_spec(spec):
        body = {
            "apiVersion": "maintenance.nvidia.com/v1alpha1",
            "kind": "MaintenanceOperatorConfig",
            "metadata": {"name": "default", "namespace": namespace},
            "spec": spec,
        }
        try:
            current = custom.get_namespaced_custom_object(*args)
        except ApiException as error:
            if error.status != 404:
                raise
            custom.create_namespaced_custom_object(*args[:-1], body)
        else:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            custom.replace_namespaced_custom_object(*args, body)
        time.sleep(0.3)

    set_spec({})  # the defaults: one operation at a time, no unavailability limit
    yield set_spec
    try:
        custom.delete_namespaced_custom_object(*args)
    except ApiException as error:
        if error.status != 404:
            raise
    if before is not None:
        custom.create_namespaced_custom_object(
            *args[:-1],
            {**before, "metadata": {"name": "default", "namespace": namespace}},
        )


# -- reading ----------------------------------------------------------------------------------


def _device(custom, namespace, name):
    try:
        return custom.get_namespaced_custom_object(*NCO, namespace, "nicdevices", name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _device_with_status(custom, namespace, name):
    """The NicDevice once the simulator has written its status (it creates the object first)."""
    device = _device(custom, namespace, name)
    return device if device and device.get("status") else None


def _devices_of(custom, namespace, node):
    return sorted(
        (
            d
            for d in custom.list_namespaced_custom_object(*NCO, namespace, "nicdevices")["items"]
            if (d.get("status") or {}).get("node") == node
        ),
        key=lambda d: d["metadata"]["name"],
    )


def _config_condition(device):
    return next(
        (
            c
            for c in ((device or {}).get("status") or {}).get("conditions") or []
            if c["type"] == "ConfigUpdateInProgress"
        ),
        {},
    )


def _current_reason(device):
    """ConfigUpdateInProgress's reason when it speaks of the device's generation."""
    condition = _config_condition(device)
    if device and condition.get("observedGeneration") == device["metadata"]["generation"]:
        return condition["reason"]
    return None


def _wait_reason(custom, namespace, name, reason, timeout=30):
    return wait_for(
        lambda: (d := _device(custom, namespace, name)) and _current_reason(d) == reason and d,
        timeout=timeout,
        what=f"{name} to report {reason} at its generation",
    )


def _maintenance(custom, namespace, node):
    try:
        return custom.get_namespaced_custom_object(
            *MAINTENANCE, namespace, "nodemaintenances", MAINTENANCE_PREFIX + node
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _maintenance_reason(maintenance):
    for condition in ((maintenance or {}).get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["reason"]
    return None


def _label(core, node):
    return (core.read_node(node).metadata.labels or {}).get(WAIT_LABEL)


def _record(history, custom, core, namespace, nodes):
    """A History of the NicDevices of namespace, of every NodeMaintenance and of this test's
    nodes."""
    recorder = history()
    recorder.watch("device", custom.list_namespaced_custom_object, *NCO, namespace, "nicdevices")
    recorder.watch(
        "maintenance", custom.list_cluster_custom_object, *MAINTENANCE, "nodemaintenances"
    )
    selector = ",".join(f"{k}={v}" for k, v in nodes.selector.items())
    recorder.watch("node", core.list_node, label_selector=selector)
    return recorder


def _node_state(node):
    labels = node["metadata"].get("labels") or {}
    return (labels.get(WAIT_LABEL), bool((node.get("spec") or {}).get("unschedulable")))


def _events(core, namespace, name, reason):
    return [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.name == name and e.reason == reason
    ]


# -- tests ------------------------------------------------------------------------------------


def test_node_maintenances_get_no_status_without_a_maintenance_operator(
    harness, custom, namespace, nodes
):
    if installed_namespace(World(harness), MO_PACKAGE) is not None:
        pytest.skip("a Maintenance Operator is installed in this cluster already")
    (node,) = nodes(1)
    custom.create_namespaced_custom_object(
        *MAINTENANCE,
        namespace,
        "nodemaintenances",
        {
            "apiVersion": "maintenance.nvidia.com/v1alpha1",
            "kind": "NodeMaintenance",
            "metadata": {"name": "by-hand", "namespace": namespace},
            "spec": {"requestorID": "example.com", "nodeName": node, "cordon": True},
        },
    )
    time.sleep(1.5)
    maintenance = custom.get_namespaced_custom_object(
        *MAINTENANCE, namespace, "nodemaintenances", "by-hand"
    )
    assert not maintenance.get("status")


def test_maintenance_operator_succeeds_in_own_and_all_namespaces(custom, core, operators):
    namespace = operators["maintenance"]
    csv = _csv(custom, namespace, MO_CSV)
    assert csv["status"]["phase"] == "Succeeded"
    assert csv["metadata"]["labels"][f"operators.coreos.com/{MO_PACKAGE}.{namespace}"] == ""
    subscription = custom.get_namespaced_custom_object(*OLM, namespace, "subscriptions", MO_PACKAGE)
    assert subscription["status"]["installedCSV"] == MO_CSV
    extra = {
        "all": _install(custom, core, MO_PACKAGE, targets=[]),  # default channel: stable
        "v26.4": _install(custom, core, MO_PACKAGE, channel="v26.4"),
        "single": _install(custom, core, MO_PACKAGE, targets=["default"]),
    }
    try:
        for kind in ("all", "v26.4"):
            wait_for(
                lambda ns=extra[kind]: _csv_phase(custom, ns, MO_CSV) == "Succeeded",
                what=f"the Maintenance Operator CSV ({kind}) to succeed",
            )
        wait_for(
            lambda: _csv_phase(custom, extra["single"], MO_CSV) == "Failed",
            what="the CSV under a SingleNamespace OperatorGroup to fail",
        )
        assert _csv(custom, extra["single"], MO_CSV)["status"]["reason"] == (
            "UnsupportedOperatorGroup"
        )
    finally:
        for name in extra.values():
            _delete_namespace(core, name)


def test_nic_devices_describe_each_nic_of_each_node(harness, custom, core, operators, nodes):
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    assert {"name": "state-nic-configuration-operator", "state": "ready"} in policy["status"][
        "appliedStates"
    ]
    namespace = operators["network"]
    first, second = nodes(2, nics=("ens8f0np0", "ens9f0np0"))
    (connectx6,) = nodes(1, nics=("ens1f0np0",), nic_type="101d")
    # A node registered before NIC types were recorded: its NICs are ConnectX-7.
    legacy = f"sim-nic-legacy-{uuid.uuid4().hex[:6]}"
    body = node_object(legacy, 9, Hardware(nics=(Nic("ens8f0np0"),)), True)
    hardware = body["metadata"]["annotations"][HARDWARE_ANNOTATION].replace(
        ', "nicType": "1021"', ""
    )
    assert "nicType" not in hardware
    body["metadata"]["annotations"][HARDWARE_ANNOTATION] = hardware
    core.create_node(body)
    try:
        for node, expected in (
            (first, [f"{first}-1021-0000-08-00", f"{first}-1021-0000-09-00"]),
            (second, [f"{second}-1021-0000-08-00", f"{second}-1021-0000-09-00"]),
            (connectx6, [f"{connectx6}-101d-0000-08-00"]),
            (legacy, [f"{legacy}-1021-0000-08-00"]),
        ):
            wait_for(
                lambda n=node, e=expected: (
                    [d["metadata"]["name"] for d in _devices_of(custom, namespace, n)] == e
                ),
                what=f"the NicDevices of {node}",
            )
        uid = core.read_node(first).metadata.uid
        device = _device(custom, namespace, f"{first}-1021-0000-09-00")
        assert device["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": first, "uid": uid}
        ]
        status = device["status"]
        assert status["node"] == first
        assert status["type"] == "1021"
        assert status["modelName"] == "ConnectX-7"
        assert status["firmwareVersion"] == "28.43.1014"
        assert status["serialNumber"].startswith("MT") and status["partNumber"] and status["psid"]
        assert status["ports"] == [
            {"pci": "0000:09:00.0", "networkInterface": "ens9f0np0", "rdmaInterface": "mlx5_1"}
        ]
        serials = {
            d["status"]["serialNumber"]
            for n in (first, second)
            for d in _devices_of(custom, namespace, n)
        }
        assert len(serials) == 4
        condition = _config_condition(device)
        assert (condition["status"], condition["reason"]) == ("False", "DeviceConfigSpecEmpty")
        assert condition["observedGeneration"] == device["metadata"]["generation"]
        assert "configuration" not in device["spec"]
        connectx6_device = _device(custom, namespace, f"{connectx6}-101d-0000-08-00")
        assert connectx6_device["status"]["modelName"] == "ConnectX-6 Dx"
        for node in (first, second, connectx6):
            wait_for(lambda n=node: _label(core, n) == "false", what=f"{node}'s wait label")
    finally:
        core.delete_node(legacy)
    # The devices of a node that leaves go with it.
    core.delete_node(second)
    wait_for(
        lambda: _devices_of(custom, namespace, second) == [],
        what=f"the NicDevices of {second} to go",
    )
    assert len(_devices_of(custom, namespace, first)) == 2


def test_nodes_command_takes_the_nic_type(control_plane, custom, core, operators):
    prefix = f"sim-cli-{uuid.uuid4().hex[:6]}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.simulator",
            "--kubeconfig",
            str(control_plane.harness_kubeconfig),
            "nodes",
            "--count",
            "1",
            "--prefix",
            prefix,
            "--nic-type",
            "1023",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    node = f"{prefix}-0"
    try:
        assert '"nicType": "1023"' in core.read_node(node).metadata.annotations[HARDWARE_ANNOTATION]
        device = wait_for(
            lambda: _device_with_status(custom, operators["network"], f"{node}-1023-0000-08-00"),
            what="the ConnectX-8's NicDevice and its status",
        )
        assert device["status"]["modelName"] == "ConnectX-8"
    finally:
        core.delete_node(node)


def test_a_firmware_change_goes_through_a_node_maintenance(
    custom, core, operators, nodes, templates, maintenance_config, history
):
    namespace = operators["network"]
    (node,) = nodes(1, nics=("ens8f0np0", "ens9f0np0"))
    names = [f"{node}-1021-0000-08-00", f"{node}-1021-0000-09-00"]
    for name in names:
        _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    recorder = _record(history, custom, core, namespace, nodes)
    templates("cx7-gdr", GDR_TEMPLATE, node_selector=nodes.selector)
    maintenance_name = MAINTENANCE_PREFIX + node
    for name in names:
        _wait_reason(custom, namespace, name, "UpdateSuccessful")
    wait_for(lambda: _maintenance(custom, namespace, node) is None, what="the release")
    wait_for(lambda: _label(core, node) == "false", what="the wait label back to false")
    wait_for(lambda: not core.read_node(node).spec.unschedulable, what="the node uncordoned")
    time.sleep(0.3)
    recorder.stop()
    changes = recorder.changes()

    for name in names:
        assert _states(changes, "device", name, _current_reason) == [
            None,  # the template's spec written: a new generation, not yet seen by the daemon
            "UpdateStarted",
            "PendingReboot",
            "UpdateSuccessful",
        ]
    assert _states(changes, "maintenance", maintenance_name, _maintenance_reason) == [
        None,  # created by the daemon
        "Pending",
        "Scheduled",
        "Cordon",
        "Draining",
        "Ready",
        "gone",  # deleted by the daemon once both devices were done
    ]
    states = _states(changes, "node", node, _node_state)
    if states[:1] == [("false", False)]:  # the label the daemon set at discovery
        states = states[1:]
    assert states == [
        ("true", False),  # waiting for its maintenance
        ("true", True),  # cordoned by the Maintenance Operator
        ("false", True),  # released by the daemon
        ("false", False),  # uncordoned once the NodeMaintenance is gone
    ]

    def first(kind, name, predicate):
        return next(
            i
            for i, (k, type_, obj) in enumerate(changes)
            if k == kind and obj["metadata"]["name"] == name and predicate(type_, obj)
        )

    ready = first("maintenance", maintenance_name, lambda _t, m: _maintenance_reason(m) == "Ready")
    gone = first("maintenance", maintenance_name, lambda t, _m: t == "DELETED")
    for name in names:
        # The firmware is written only once the node is Ready for maintenance, and the node is
        # released only once both devices are done.
        reboot = first("device", name, lambda _t, d: _current_reason(d) == "PendingReboot")
        done = first("device", name, lambda _t, d: _current_reason(d) == "UpdateSuccessful")
        assert ready < reboot < done < gone
    created = next(
        obj for kind, type_, obj in changes if kind == "maintenance" and type_ == "ADDED"
    )
    assert created["metadata"]["namespace"] == namespace
    assert created["spec"] == {
        "requestorID": "configuration.nic.mellanox.com",
        "nodeName": node,
        "cordon": True,
        "drainSpec": {"force": True, "deleteEmptyDir": True, "timeoutSeconds": 300},
    }

    for name in names:
        device = _device(custom, namespace, name)
        # What the template holds, with the schema's defaults (26.7: force false).
        assert device["spec"]["configuration"]["resetToDefault"] is False
        assert_kept(device["spec"]["configuration"]["template"], GDR_TEMPLATE, name)
        condition = _config_condition(device)
        assert condition["status"] == "False"
        assert condition["observedGeneration"] == device["metadata"]["generation"]
        assert condition["lastTransitionTime"] and "message" in condition
    template = custom.get_namespaced_custom_object(
        *NCO, namespace, "nicconfigurationtemplates", "cx7-gdr"
    )
    assert template["status"]["nicDevices"] == names


def test_a_runtime_only_change_needs_no_maintenance(
    custom, core, operators, nodes, templates, maintenance_config, history
):
    namespace = operators["network"]
    (node,) = nodes(1)
    name = f"{node}-1021-0000-08-00"
    _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    template = {
        "numVfs": 0,
        "linkType": "Ethernet",
        "pciPerformanceOptimized": {"enabled": True, "maxReadRequest": 4096},
        "roceOptimized": {"enabled": True, "qos": {"trust": "dscp", "pfc": "0,0,0,1,0,0,0,0"}},
    }
    templates("cx7-runtime", template, node_selector=nodes.selector)
    _wait_reason(custom, namespace, name, "UpdateSuccessful")
    wait_for(lambda: _maintenance(custom, namespace, node) is None, what="the release")
    wait_for(lambda: _label(core, node) == "false", what="the wait label back to false")
    generation = _device(custom, namespace, name)["metadata"]["generation"]

    # The same firmware settings, other runtime ones: max read request and QoS.
    recorder = _record(history, custom, core, namespace, nodes)
    changed = copy.deepcopy(template)
    changed["pciPerformanceOptimized"]["maxReadRequest"] = 2048
    changed["roceOptimized"]["qos"] = {"trust": "pfc", "pfc": "0,0,0,0,1,0,0,0", "tos": 24}
    current = custom.get_namespaced_custom_object(
        *NCO, namespace, "nicconfigurationtemplates", "cx7-runtime"
    )
    current["spec"]["template"] = changed
    custom.replace_namespaced_custom_object(
        *NCO, namespace, "nicconfigurationtemplates", "cx7-runtime", current
    )
    device = wait_for(
        lambda: (
            (d := _device(custom, namespace, name))["metadata"]["generation"] > generation
            and _current_reason(d) == "UpdateSuccessful"
            and d
        ),
        what="the runtime change to apply",
    )
    time.sleep(0.5)
    recorder.stop()
    changes = recorder.changes()
    assert_kept(device["spec"]["configuration"]["template"], changed, "changed")
    assert _states(changes, "device", name, _current_reason) == [None, "UpdateSuccessful"]
    assert not [
        obj
        for kind, _t, obj in changes
        if kind == "maintenance" and obj["spec"]["nodeName"] == node
    ]
    assert _states(changes, "node", node, _node_state) in ([], [("false", False)])


def test_two_templates_on_one_device_clear_its_spec(
    custom, core, operators, namespace, nodes, templates, maintenance_config
):
    devices_namespace = operators["network"]
    (node,) = nodes(1, nics=("ens8f0np0", "ens9f0np0"))
    both, only = f"{node}-1021-0000-08-00", f"{node}-1021-0000-09-00"
    for name in (both, only):
        _wait_reason(custom, devices_namespace, name, "DeviceConfigSpecEmpty")
    plain = {"numVfs": 0, "linkType": "Ethernet"}
    # Templates may live in any namespace.
    templates("all-cx7", plain, namespace=namespace, node_selector=nodes.selector)
    templates(
        "first-rail",
        plain,
        namespace=namespace,
        node_selector=nodes.selector,
        nic_selector={"pciAddresses": ["0000:08:00.0"]},
    )
    message = "Several templates matching this device: all-cx7,first-rail"
    events = wait_for(
        lambda: _events(core, devices_namespace, both, "SpecError"), what="a SpecError event"
    )
    assert events[0].type == "Warning"
    assert events[0].message == message
    assert events[0].involved_object.kind == "NicDevice"
    _wait_reason(custom, devices_namespace, only, "UpdateSuccessful")
    device = _device(custom, devices_namespace, both)
    assert "configuration" not in device["spec"]
    assert _current_reason(device) == "DeviceConfigSpecEmpty"
    statuses = {
        name: custom.get_namespaced_custom_object(
            *NCO, namespace, "nicconfigurationtemplates", name
        )["status"]["nicDevices"]
        for name in ("all-cx7", "first-rail")
    }
    assert statuses == {"all-cx7": [only], "first-rail": []}
    time.sleep(1)
    assert len(_events(core, devices_namespace, both, "SpecError")) == 1  # once, not per tick

    custom.delete_namespaced_custom_object(
        *NCO, namespace, "nicconfigurationtemplates", "first-rail"
    )
    _wait_reason(custom, devices_namespace, both, "UpdateSuccessful")
    assert_kept(
        _device(custom, devices_namespace, both)["spec"]["configuration"]["template"], plain, both
    )
    # No template left: the spec goes (the NIC keeps what it was given).
    custom.delete_namespaced_custom_object(*NCO, namespace, "nicconfigurationtemplates", "all-cx7")
    for name in (both, only):
        device = _wait_reason(custom, devices_namespace, name, "DeviceConfigSpecEmpty")
        assert "configuration" not in device["spec"]


@pytest.mark.parametrize(
    ("template", "link_type", "reason", "message"),
    [
        (
            {"numVfs": 0, "linkType": "Infiniband"},
            "eth",
            "IncorrectSpec",
            "incorrect spec: device doesn't support link type change, wrong link type provided "
            "in the template, should be: Ethernet",
        ),
        (
            {"numVfs": 0, "linkType": "Infiniband", "roceOptimized": {"enabled": True}},
            "ib",
            "IncorrectSpec",
            "incorrect spec: RoceOptimized settings can only be used with link type Ethernet",
        ),
        (
            {
                "numVfs": 0,
                "linkType": "Ethernet",
                "gpuDirectOptimized": {"enabled": True, "env": "Baremetal"},
            },
            "eth",
            "IncorrectSpec",
            "incorrect spec: GpuDirectOptimized should only be enabled together with "
            "PciPerformanceOptimized",
        ),
        (
            {
                "numVfs": 0,
                "linkType": "Ethernet",
                "pciPerformanceOptimized": {"enabled": True},
                "gpuDirectOptimized": {"enabled": True, "env": "VM"},
            },
            "eth",
            "IncorrectSpec",
            "incorrect spec: GpuDirectOptimized supports only Baremetal env",
        ),
        (
            {"numVfs": 17, "linkType": "Infiniband"},
            "ib",
            "SpecValidationFailed",
            "failed to validate nv spec: numVfs 17 exceeds the 16 VFs the device's firmware "
            "allows (NUM_OF_VFS)",
        ),
    ],
    ids=["link-type", "roce-on-infiniband", "gpudirect-without-pci", "gpudirect-env", "num-vfs"],
)
def test_the_daemon_validates_the_spec(
    custom,
    core,
    operators,
    nodes,
    templates,
    maintenance_config,
    template,
    link_type,
    reason,
    message,
):
    namespace = operators["network"]
    (node,) = nodes(1, nics=("ibs2f0" if link_type == "ib" else "ens8f0np0",), link_type=link_type)
    name = f"{node}-1021-0000-08-00"
    _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    templates("cx7-invalid", template, node_selector=nodes.selector)
    device = _wait_reason(custom, namespace, name, reason)
    condition = _config_condition(device)
    assert (condition["status"], condition["message"]) == ("False", message)
    time.sleep(0.6)
    assert _maintenance(custom, namespace, node) is None
    assert _label(core, node) == "false"


@pytest.mark.parametrize(
    ("reason", "message", "after"),  # after: the failure comes once the NodeMaintenance is Ready
    [
        (
            "IncorrectSpec",
            "incorrect spec: Parameter SRIOV_EN unsupported for device {}",
            False,
        ),
        ("SpecValidationFailed", "failed to query nv config of device 0000:08:00.0", False),
        ("NonVolatileConfigUpdateFailed", "failed to apply nv config to device 0000:08:00.0", True),
        ("FirmwareError", "firmware configuration failed to apply after reboot", True),
        (
            "RuntimeConfigUpdateFailed",
            "failed to apply runtime config to device 0000:08:00.0",
            True,
        ),
    ],
)
def test_knob_makes_the_daemon_fail(
    custom,
    core,
    operators,
    nodes,
    templates,
    maintenance_config,
    knobs,
    history,
    reason,
    message,
    after,
):
    namespace = operators["network"]
    failing, healthy = nodes(2)
    knobs({"nic_configuration": {"error_reason": reason, "error_nodes": [failing]}})
    bad, good = f"{failing}-1021-0000-08-00", f"{healthy}-1021-0000-08-00"
    for name in (bad, good):
        _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    maintenance_config({"maxParallelOperations": 2})
    recorder = _record(history, custom, core, namespace, nodes)
    templates("cx7-gdr", GDR_TEMPLATE, node_selector=nodes.selector)
    device = _wait_reason(custom, namespace, bad, reason)
    condition = _config_condition(device)
    assert condition["status"] == "False"
    assert condition["message"].startswith(message.format(bad))
    assert condition["observedGeneration"] == device["metadata"]["generation"]
    if reason == "FirmwareError":
        events = wait_for(lambda: _events(core, namespace, bad, "FirmwareError"), what="an event")
        assert events[0].type == "Warning" and events[0].message == message
    # The failed node is released; the other one, not named by the knob, is configured.
    wait_for(lambda: _maintenance(custom, namespace, failing) is None, what="the release")
    wait_for(lambda: _label(core, failing) == "false", what="the wait label back to false")
    _wait_reason(custom, namespace, good, "UpdateSuccessful")
    recorder.stop()
    changes = recorder.changes()
    reasons = _states(changes, "device", bad, _current_reason)
    maintenance = _states(changes, "maintenance", MAINTENANCE_PREFIX + failing, _maintenance_reason)
    if after:
        assert "Ready" in maintenance and reasons[-2:] == [
            "PendingReboot" if reason != "NonVolatileConfigUpdateFailed" else "UpdateStarted",
            reason,
        ]
    else:
        assert maintenance == [] and reasons[-2:] == [None, reason]


def test_max_unavailable_zero_pauses_maintenance(
    custom, core, operators, nodes, templates, maintenance_config
):
    namespace = operators["network"]
    maintenance_config({"maxUnavailable": 0})
    (node,) = nodes(1)
    name = f"{node}-1021-0000-08-00"
    _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    templates("cx7-gdr", GDR_TEMPLATE, node_selector=nodes.selector)
    _wait_reason(custom, namespace, name, "UpdateStarted")
    maintenance = wait_for(
        lambda: (m := _maintenance(custom, namespace, node)) and _maintenance_reason(m) and m,
        what="the NodeMaintenance's status",
    )
    time.sleep(2)
    maintenance = _maintenance(custom, namespace, node)
    (condition,) = maintenance["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Ready",
        "False",
        "Pending",
    )
    assert condition["message"] == "maxUnavailable is 0: maintenance paused"
    assert _current_reason(_device(custom, namespace, name)) == "UpdateStarted"
    assert _label(core, node) == "true"
    assert not core.read_node(node).spec.unschedulable

    # Lifting the pause lets it through.
    maintenance_config({"maxUnavailable": 1})
    _wait_reason(custom, namespace, name, "UpdateSuccessful")
    wait_for(lambda: _maintenance(custom, namespace, node) is None, what="the release")


def test_deleting_the_template_releases_a_waiting_node(
    custom, core, operators, nodes, templates, maintenance_config
):
    namespace = operators["network"]
    maintenance_config({"maxUnavailable": 0})
    (node,) = nodes(1)
    name = f"{node}-1021-0000-08-00"
    _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    template = templates("cx7-gdr", GDR_TEMPLATE, node_selector=nodes.selector)
    _wait_reason(custom, namespace, name, "UpdateStarted")
    wait_for(lambda: _maintenance(custom, namespace, node), what="the NodeMaintenance")
    custom.delete_namespaced_custom_object(
        *NCO, template["metadata"]["namespace"], "nicconfigurationtemplates", "cx7-gdr"
    )
    _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    wait_for(lambda: _maintenance(custom, namespace, node) is None, what="the release")
    wait_for(lambda: _label(core, node) == "false", what="the wait label back to false")


def test_max_parallel_operations_one_takes_one_node_at_a_time(
    custom, core, operators, nodes, templates, maintenance_config, history
):
    namespace = operators["network"]
    maintenance_config({"maxParallelOperations": 1})
    pair = nodes(2)
    names = {node: f"{node}-1021-0000-08-00" for node in pair}
    for name in names.values():
        _wait_reason(custom, namespace, name, "DeviceConfigSpecEmpty")
    recorder = _record(history, custom, core, namespace, nodes)
    templates("cx7-gdr", GDR_TEMPLATE, node_selector=nodes.selector)
    for node, name in names.items():
        _wait_reason(custom, namespace, name, "UpdateSuccessful")
        wait_for(lambda n=node: _maintenance(custom, namespace, n) is None, what="the release")
        wait_for(lambda n=node: not core.read_node(n).spec.unschedulable, what="uncordoned")
    recorder.stop()

    # Replay the changes in the store's order: at no point were both nodes in maintenance.
    phase = {node: None for node in pair}
    cordoned = {node: False for node in pair}
    waited = False
    for kind, type_, obj in recorder.changes():
        if kind == "maintenance" and obj["spec"]["nodeName"] in phase:
            node = obj["spec"]["nodeName"]
            phase[node] = None if type_ == "DELETED" else _maintenance_reason(obj)
        elif kind == "node" and obj["metadata"]["name"] in cordoned:
            cordoned[obj["metadata"]["name"]] = bool((obj.get("spec") or {}).get("unschedulable"))
        else:
            continue
        in_progress = [n for n, p in phase.items() if p in IN_PROGRESS]
        assert len(in_progress) <= 1, phase
        assert sum(cordoned.values()) <= 1, cordoned
        waited = waited or (in_progress and "Pending" in phase.values())
    assert waited, "one node's maintenance never waited for the other's"
