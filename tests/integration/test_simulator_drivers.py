"""The simulator plays the GPU Operator's and the Network Operator's driver upgrade controllers the
way k8s-operator-libs drives them: a driver change walks each node through its state labels in
order, within maxParallelUpgrades; the DOCA driver skips drain-required when drain is off; a
failing driver pod ends its node in upgrade-failed, which keeps its slot until retried by hand;
in requestor mode the node goes through a NodeMaintenance the Maintenance Operator makes Ready.
Each group has its driver DaemonSet (OnDelete), whose status counts the updated and ready pods
as a real DaemonSet controller does, and which owns the driver pods; each state change stamps the
Node's managedFields entry that holds the state label; the knob drivers.hold keeps a node in a
state. Every change of the nodes is watched (History), so a state that lasts one tick is seen
too."""

from __future__ import annotations

import contextlib
import datetime
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.helpers import wait_for
from tests.integration.history import History
from tests.integration.history import states as _states
from tests.integration.test_simulator import _operator_group, _subscribe, install_manually
from tests.simulator.drivers import DOCA, GPU, doca_daemonset_name, env_of
from tests.simulator.nodes import Hardware, register_nodes, remove_nodes

OLM = ("operators.coreos.com", "v1alpha1")
MAINTENANCE = ("maintenance.nvidia.com", "v1alpha1")
POLICY = ("mellanox.com", "v1alpha1", "nicclusterpolicies")
CLUSTER_POLICY = ("nvidia.com", "v1", "clusterpolicies")
# Each operator in its package's own namespace: the simulator prefers that install over any an
# earlier test file of this worker left elsewhere.
GPU_PACKAGE = GPU_NAMESPACE = "gpu-operator-certified"
GPU_CSV = "gpu-operator-certified.v26.3.3"
GPU_OPERANDS = "nvidia-gpu-operator"  # the ClusterPolicy's status.namespace: the driver pods
NO_PACKAGE = NO_NAMESPACE = "nvidia-network-operator"
MO_PACKAGE = MO_NAMESPACE = "nvidia-maintenance-operator"
DOCA_OLD, DOCA_NEW = "doca3.2.2-25.10-2.4.1.0-4", "doca3.4.1-26.04-1.1.0.0-1"
DOCA_REPOSITORY = "nvcr.io/nvidia/mellanox/doca-driver"
IDLE = ("", "upgrade-required", "upgrade-done")
GPU_DAEMONSET = "nvidia-driver-daemonset"
DOCA_DAEMONSET = "mofed-nic-cluster-policy-ds"  # the NicClusterPolicy's


# -- operators and namespaces ----------------------------------------------------------------


def _delete_namespace(core, name, wait=True):
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)
    if wait:
        wait_for(
            lambda: name not in {n.metadata.name for n in core.list_namespace().items},
            timeout=90,
            what=f"namespace {name} to be gone",
        )


def _succeeded(custom, namespace, package):
    return any(
        c["metadata"]["name"].startswith(f"{package}.v")
        and (c.get("status") or {}).get("phase") == "Succeeded"
        for c in custom.list_namespaced_custom_object(*OLM, namespace, "clusterserviceversions")[
            "items"
        ]
    )


@pytest.fixture(scope="module")
def operators(custom, core):
    """The GPU, Network and Maintenance Operators installed through the simulated OLM, each in
    its own namespace (a leftover namespace of that name is removed first), and the GPU
    Operator's operand namespace. The Network Operator's Subscription starts without requestor
    mode. Yields the GPU Operator CSV."""
    namespaces = (GPU_NAMESPACE, GPU_OPERANDS, NO_NAMESPACE, MO_NAMESPACE)
    for name in namespaces:
        _delete_namespace(core, name)
        core.create_namespace({"metadata": {"name": name}})
    install_manually(custom, GPU_NAMESPACE, GPU_PACKAGE, "v26.3", GPU_CSV)
    for package, namespace, channel in (
        (NO_PACKAGE, NO_NAMESPACE, "v26.4"),
        (MO_PACKAGE, MO_NAMESPACE, "stable"),
    ):
        _operator_group(custom, namespace)
        _subscribe(custom, namespace, package, channel=channel)
    for package, namespace in ((NO_PACKAGE, NO_NAMESPACE), (MO_PACKAGE, MO_NAMESPACE)):
        wait_for(
            lambda p=package, ns=namespace: _succeeded(custom, ns, p),
            what=f"the {package} CSV to succeed",
        )
    yield custom.get_namespaced_custom_object(
        *OLM, GPU_NAMESPACE, "clusterserviceversions", GPU_CSV
    )
    for name in namespaces:
        _delete_namespace(core, name, wait=False)
    for name in namespaces:
        _delete_namespace(core, name)


def _network_operator_env(custom, env: list[dict]) -> None:
    """The Network Operator Subscription's spec.config.env (OLM passes it to the operator)."""
    custom.patch_namespaced_custom_object(
        *OLM, NO_NAMESPACE, "subscriptions", NO_PACKAGE, {"spec": {"config": {"env": env}}}
    )


# -- nodes and policies ----------------------------------------------------------------------


@pytest.fixture
def nodes(harness, core, custom):
    """register(count, gpus): fake nodes of this test, labelled sim-driver-test=<id>; removed
    afterwards with any NodeMaintenance and pod left for them. Other fake nodes are removed
    first: every GPU node of the cluster is the GPU Operator's."""
    remove_nodes(harness)
    test_id = uuid.uuid4().hex[:6]
    registered = []

    def register(count, gpus=8):
        names = register_nodes(
            harness,
            count,
            prefix=f"sim-drv-{test_id}",
            hardware=Hardware(gpus=gpus),
            labels={"sim-driver-test": test_id},
        )
        registered.extend(names)
        return names

    register.selector = f"sim-driver-test={test_id}"
    register.affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "sim-driver-test", "operator": "In", "values": [test_id]}
                    ]
                }
            ]
        }
    }
    yield register
    for maintenance in custom.list_cluster_custom_object(*MAINTENANCE, "nodemaintenances")["items"]:
        if maintenance["spec"].get("nodeName") in registered:
            with contextlib.suppress(ApiException):
                custom.delete_namespaced_custom_object(
                    *MAINTENANCE,
                    maintenance["metadata"]["namespace"],
                    "nodemaintenances",
                    maintenance["metadata"]["name"],
                )
    for name in registered:
        # Without a kubelet or the pod garbage collector, pods left on a deleted node would
        # never go, nor would their namespace: remove them first, as both would.
        for pod in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items:
            with contextlib.suppress(ApiException):
                core.delete_namespaced_pod(
                    pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0
                )
        with contextlib.suppress(ApiException):
            core.delete_node(name)


def _delete_all(custom, group, version, plural):
    for item in custom.list_cluster_custom_object(group, version, plural)["items"]:
        with contextlib.suppress(ApiException):
            custom.delete_cluster_custom_object(group, version, plural, item["metadata"]["name"])
    wait_for(
        lambda: not custom.list_cluster_custom_object(group, version, plural)["items"],
        what=f"no {plural} left",
    )


@pytest.fixture
def cluster_policy(custom, operators):
    """create(driver): the one ClusterPolicy, with that spec.driver; deleted afterwards."""
    _delete_all(custom, *CLUSTER_POLICY)

    def create(driver: dict) -> None:
        required = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "gfd")
        spec = {name: {} for name in (*required, "nodeStatusExporter", "operator", "toolkit")}
        custom.create_cluster_custom_object(
            *CLUSTER_POLICY,
            {
                "apiVersion": "nvidia.com/v1",
                "kind": "ClusterPolicy",
                "metadata": {"name": "gpu-cluster-policy"},
                "spec": {**spec, "driver": driver},
            },
        )

    yield create
    _delete_all(custom, *CLUSTER_POLICY)


@pytest.fixture
def nic_cluster_policy(custom, operators):
    """create(affinity, upgrade_policy): the NicClusterPolicy with an ofedDriver at DOCA_OLD;
    deleted afterwards."""
    _delete_all(custom, "mellanox.com", "v1alpha1", "nicclusterpolicies")

    def create(affinity: dict, upgrade_policy: dict) -> None:
        repository, image = DOCA_REPOSITORY.rsplit("/", 1)
        custom.create_cluster_custom_object(
            *POLICY,
            {
                "apiVersion": "mellanox.com/v1alpha1",
                "kind": "NicClusterPolicy",
                "metadata": {"name": "nic-cluster-policy"},
                "spec": {
                    "nodeAffinity": affinity,
                    "ofedDriver": {
                        "image": image,
                        "repository": repository,
                        "version": DOCA_OLD,
                        "upgradePolicy": upgrade_policy,
                    },
                },
            },
        )

    yield create
    _delete_all(custom, "mellanox.com", "v1alpha1", "nicclusterpolicies")


# -- reading ---------------------------------------------------------------------------------


def _node(core, name):
    return core.read_node(name).to_dict()


def _state(node: dict, driver) -> str:
    return (node["metadata"].get("labels") or {}).get(driver.state_label, "")


def _running(node: dict, driver) -> str | None:
    return (node["metadata"].get("annotations") or {}).get(driver.running_annotation)


def _pod_image(core, namespace, name):
    try:
        return core.read_namespaced_pod(name, namespace).spec.containers[0].image
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _all_done(core, names, driver, running, namespace, image):
    """Every node in upgrade-done, schedulable, running that driver in a pod of that image."""
    for name in names:
        node = core.read_node(name)
        labels = node.metadata.labels or {}
        annotations = node.metadata.annotations or {}
        if (
            labels.get(driver.state_label) != "upgrade-done"
            or annotations.get(driver.running_annotation) != running
            or node.spec.unschedulable
            or _pod_image(core, namespace, driver.pod_prefix + name) != image
        ):
            return False
    return True


def _walks(changes, name, driver):
    """The node's successive states once the upgrade started (a leading upgrade-done dropped)."""
    states = _states(changes, "node", name, lambda node: _state(node, driver))
    return states[1:] if states[:1] == ["upgrade-done"] else states


def _most_in_progress(changes, driver) -> int:
    """The most nodes at once past upgrade-required and before upgrade-done, over every change."""
    current: dict[str, str] = {}
    most = 0
    for _kind, _type, node in changes:
        current[node["metadata"]["name"]] = _state(node, driver)
        most = max(most, sum(1 for state in current.values() if state not in IDLE))
    return most


def _watch_nodes(history, core, nodes) -> History:
    recorder = history()
    recorder.watch("node", core.list_node, label_selector=nodes.selector)
    return recorder


DOCA_OLD_IMAGE = f"{DOCA_REPOSITORY}:{DOCA_OLD}"
DOCA_NEW_IMAGE = f"{DOCA_REPOSITORY}:{DOCA_NEW}"


def _doca_installed(core, nodes, nic_cluster_policy, count: int, upgrade_policy: dict) -> list:
    """count nodes without GPUs under a NicClusterPolicy with that upgradePolicy, returned once
    each runs the first DOCA driver."""
    names = nodes(count, gpus=0)
    nic_cluster_policy(nodes.affinity, upgrade_policy)
    wait_for(
        lambda: _doca_done(core, names, DOCA_OLD_IMAGE),
        what="every node installed with the first DOCA driver",
    )
    return names


def _doca_done(core, names, image: str) -> bool:
    """Every one of the nodes done with that DOCA driver, in a pod of it."""
    return _all_done(core, names, DOCA, image, NO_NAMESPACE, image)


def _doca_changed(custom) -> None:
    """The NicClusterPolicy's DOCA driver moved to DOCA_NEW."""
    custom.patch_cluster_custom_object(
        *POLICY, "nic-cluster-policy", {"spec": {"ofedDriver": {"version": DOCA_NEW}}}
    )


@pytest.fixture(scope="module")
def apps(harness):
    return client.AppsV1Api(harness)


def _daemonset(apps, namespace, name) -> dict | None:
    """The DaemonSet as the API server stores it (camelCase keys), or None."""
    try:
        found = apps.read_namespaced_daemon_set(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return apps.api_client.sanitize_for_serialization(found)


COUNTS = (
    "desiredNumberScheduled",
    "currentNumberScheduled",
    "updatedNumberScheduled",
    "numberReady",
    "numberAvailable",
)


def _rolled_out(daemonset: dict | None, nodes: int) -> bool:
    """What a rollout gate reads as done: the DaemonSet has seen its template and every one of
    its nodes runs an updated, ready pod."""
    if daemonset is None:
        return False
    status = daemonset.get("status") or {}
    return (
        status.get("observedGeneration") == daemonset["metadata"]["generation"]
        and all(status.get(count) == nodes for count in COUNTS)
        and not status.get("numberUnavailable")
        and status.get("numberMisscheduled") == 0
    )


def _stored_node(core, name) -> dict:
    """The node as the API server stores it (camelCase keys, managedFields included)."""
    return core.api_client.sanitize_for_serialization(core.read_node(name))


def _label_entries(node: dict, label: str) -> list[dict]:
    """The node's managedFields entries whose fieldsV1 holds the label."""
    return [
        entry
        for entry in node["metadata"].get("managedFields") or []
        if f"f:{label}"
        in ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels", {})
    ]


def _label_time(node: dict, label: str) -> datetime.datetime:
    """When the node's label was last written, as a reader of managedFields learns it: the
    time of the one entry that holds it (1 s resolution)."""
    (entry,) = _label_entries(node, label)
    return datetime.datetime.fromisoformat(entry["time"].replace("Z", "+00:00"))


# -- tests -----------------------------------------------------------------------------------


GPU_WALK = [
    "upgrade-required",
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    "upgrade-done",
]


def test_a_gpu_driver_change_walks_every_node_through_its_states_one_at_a_time(
    core, custom, operators, nodes, cluster_policy, history
):
    names = nodes(4)
    first = env_of(operators)["DRIVER_IMAGE"]
    # No repository/image/version: the image is the CSV's DRIVER_IMAGE.
    cluster_policy({"upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1}})
    wait_for(
        lambda: _all_done(core, names, GPU, first, GPU_OPERANDS, first),
        what="every GPU node installed with the CSV's driver",
    )
    recorder = _watch_nodes(history, core, nodes)
    new = "nvcr.io/nvidia/driver:580.95.05-rhel9.6"
    chosen = {"repository": "nvcr.io/nvidia", "image": "driver", "version": "580.95.05-rhel9.6"}
    custom.patch_cluster_custom_object(
        *CLUSTER_POLICY, "gpu-cluster-policy", {"spec": {"driver": chosen}}
    )
    wait_for(
        lambda: _all_done(core, names, GPU, new, GPU_OPERANDS, new),
        timeout=60,
        what="every GPU node upgraded to the new driver",
    )
    recorder.stop()
    changes = recorder.changes()
    for name in names:
        assert _walks(changes, name, GPU) == GPU_WALK, name
        cordoned = [
            _state(node, GPU)
            for _k, _t, node in changes
            if node["metadata"]["name"] == name and (node.get("spec") or {}).get("unschedulable")
        ]
        assert set(cordoned) <= {*GPU_WALK[2:7]} and cordoned, (name, cordoned)
    assert _most_in_progress(changes, GPU) == 1
    log = core.read_namespaced_pod_log(
        GPU.pod_prefix + names[0], GPU_OPERANDS, container=GPU.container
    )
    assert log.rstrip().endswith(f"driver loaded: {new}")


def test_doca_in_place_skips_drain_when_disabled_and_upgrades_two_at_once(
    core, custom, operators, nodes, nic_cluster_policy, history
):
    _network_operator_env(custom, [])
    upgrade_policy = {"autoUpgrade": True, "maxParallelUpgrades": 2, "drain": {"enable": False}}
    names = _doca_installed(core, nodes, nic_cluster_policy, 4, upgrade_policy)
    recorder = _watch_nodes(history, core, nodes)
    _doca_changed(custom)
    wait_for(
        lambda: _doca_done(core, names, DOCA_NEW_IMAGE),
        timeout=60,
        what="every node upgraded to the new DOCA driver",
    )
    recorder.stop()
    changes = recorder.changes()
    walk = [
        "upgrade-required",
        "cordon-required",
        "wait-for-jobs-required",
        "pod-restart-required",
        "uncordon-required",
        "upgrade-done",
    ]
    for name in names:
        assert _walks(changes, name, DOCA) == walk, name
    assert _most_in_progress(changes, DOCA) == 2
    pod = core.read_namespaced_pod(DOCA.pod_prefix + names[0], NO_NAMESPACE)
    # The DaemonSet's template labels, and its generation after the version change.
    assert pod.metadata.labels == {
        "nvidia.com/ofed-driver": "",
        "app": DOCA_DAEMONSET,
        "pod-template-generation": "2",
    }
    assert pod.spec.node_name == names[0]
    assert pod.status.phase == "Running"


def test_a_failing_gpu_driver_pod_ends_in_upgrade_failed_and_holds_the_only_slot(
    core, custom, operators, nodes, cluster_policy, knobs
):
    names = nodes(3)
    old = "nvcr.io/nvidia/driver:570.195.03-rhel9.6"
    cluster_policy(
        {
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": "570.195.03-rhel9.6",
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1},
        }
    )
    wait_for(
        lambda: _all_done(core, names, GPU, old, GPU_OPERANDS, old),
        what="every GPU node installed with the first driver",
    )
    message = "simulated: building the nvidia kernel module failed"
    knobs({"drivers": {"fail": [{"node": names[0], "driver": "gpu", "message": message}]}})
    custom.patch_cluster_custom_object(
        *CLUSTER_POLICY,
        "gpu-cluster-policy",
        {"spec": {"driver": {"version": "580.95.05-rhel9.6"}}},
    )
    wait_for(
        lambda: _state(_node(core, names[0]), GPU) == "upgrade-failed",
        what=f"{names[0]} in upgrade-failed",
    )
    time.sleep(2)  # ten ticks: long enough for another node to take a free slot
    failed = _node(core, names[0])
    assert _running(failed, GPU) == old
    assert failed["spec"].get("unschedulable")
    assert [_state(_node(core, name), GPU) for name in names[1:]] == ["upgrade-required"] * 2
    log = core.read_namespaced_pod_log(
        GPU.pod_prefix + names[0], GPU_OPERANDS, container=GPU.container
    )
    assert log.rstrip().endswith(message)

    # The manual retry: the knob no longer fails it, and the node is relabelled upgrade-required.
    knobs({"drivers": {"fail": []}})
    core.patch_node(names[0], {"metadata": {"labels": {GPU.state_label: "upgrade-required"}}})
    new = "nvcr.io/nvidia/driver:580.95.05-rhel9.6"
    wait_for(
        lambda: _all_done(core, names, GPU, new, GPU_OPERANDS, new),
        timeout=60,
        what="every GPU node upgraded after the retry",
    )


def _enable_requestor_mode(custom, requestor_id: str | None) -> None:
    env = [
        {"name": "MAINTENANCE_OPERATOR_ENABLED", "value": "true"},
        {"name": "MAINTENANCE_OPERATOR_REQUESTOR_NAMESPACE", "value": MO_NAMESPACE},
    ]
    if requestor_id is not None:
        env.append({"name": "MAINTENANCE_OPERATOR_REQUESTOR_ID", "value": requestor_id})
    _network_operator_env(custom, env)


def test_requestor_mode_goes_through_a_node_maintenance(
    core, custom, operators, nodes, nic_cluster_policy, history
):
    _enable_requestor_mode(custom, "nvidia.doca-driver-upgrade")
    upgrade_policy = {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {"enable": True}}
    names = _doca_installed(core, nodes, nic_cluster_policy, 2, upgrade_policy)
    recorder = _watch_nodes(history, core, nodes)
    recorder.watch(
        "maintenance",
        custom.list_namespaced_custom_object,
        *MAINTENANCE,
        MO_NAMESPACE,
        "nodemaintenances",
    )
    _doca_changed(custom)
    wait_for(
        lambda: _doca_done(core, names, DOCA_NEW_IMAGE),
        timeout=60,
        what="every node upgraded through a NodeMaintenance",
    )
    wait_for(
        lambda: (
            not custom.list_namespaced_custom_object(
                *MAINTENANCE, MO_NAMESPACE, "nodemaintenances"
            )["items"]
        ),
        what="the NodeMaintenances deleted",
    )
    recorder.stop()
    changes = recorder.changes()
    walk = [
        "upgrade-required",
        "node-maintenance-required",
        "pod-restart-required",
        "uncordon-required",
        "upgrade-done",
    ]
    for name in names:
        assert _walks(changes, name, DOCA) == walk, name
        maintenance = f"nvidia-operator-{name}"
        created = next(
            obj
            for kind, type_, obj in changes
            if kind == "maintenance" and type_ == "ADDED" and obj["metadata"]["name"] == maintenance
        )
        assert created["spec"]["requestorID"] == "nvidia.doca-driver-upgrade"
        assert created["spec"]["nodeName"] == name
        assert created["spec"]["cordon"] is True
        assert created["spec"]["drainSpec"]["podSelector"] == (
            "nvidia.com/ofed-driver-upgrade-drain.skip!=true"
        )
        reasons = _states(
            changes,
            "maintenance",
            maintenance,
            lambda m: next(
                (c["reason"] for c in (m.get("status") or {}).get("conditions") or []), None
            ),
        )
        assert reasons[-2:] == ["Ready", "gone"], reasons
    # maxParallelUpgrades is not applied: both nodes waited for their maintenance at once.
    node_changes = [c for c in changes if c[0] == "node"]
    assert _most_in_progress(node_changes, DOCA) == 2


def test_requestor_mode_without_a_requestor_id_leaves_the_nodes_in_upgrade_required(
    core, custom, operators, nodes, nic_cluster_policy
):
    # What the collection's Subscription sets: no MAINTENANCE_OPERATOR_REQUESTOR_ID, which
    # k8s-operator-libs does not default; the NodeMaintenance CRD refuses an empty requestorID.
    _enable_requestor_mode(custom, None)
    names = _doca_installed(core, nodes, nic_cluster_policy, 1, {"autoUpgrade": True})
    _doca_changed(custom)
    wait_for(
        lambda: _state(_node(core, names[0]), DOCA) == "upgrade-required",
        what="the node in upgrade-required",
    )
    time.sleep(2)
    node = _node(core, names[0])
    assert _state(node, DOCA) == "upgrade-required"
    assert _running(node, DOCA) == DOCA_OLD_IMAGE
    assert not custom.list_namespaced_custom_object(*MAINTENANCE, MO_NAMESPACE, "nodemaintenances")[
        "items"
    ]


def test_a_fresh_install_has_each_driver_daemonset_rolled_out_owning_its_pods(
    core, custom, apps, operators, nodes, cluster_policy, nic_cluster_policy
):
    names = nodes(2)  # GPU nodes that the NicClusterPolicy's affinity admits too
    gpu_image = "nvcr.io/nvidia/driver:570.195.03-rhel9.6"
    cluster_policy(
        {
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": "570.195.03-rhel9.6",
            "upgradePolicy": {"autoUpgrade": True},
        }
    )
    nic_cluster_policy(nodes.affinity, {"autoUpgrade": True})
    doca_image = DOCA_OLD_IMAGE
    wait_for(
        lambda: (
            _rolled_out(_daemonset(apps, GPU_OPERANDS, GPU_DAEMONSET), 2)
            and _rolled_out(_daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET), 2)
        ),
        what="both driver DaemonSets rolled out on the two nodes",
    )
    cases = (
        (
            GPU,
            GPU_OPERANDS,
            GPU_DAEMONSET,
            {"app": GPU_DAEMONSET, "app.kubernetes.io/component": "nvidia-driver"},
            gpu_image,
            custom.get_cluster_custom_object(*CLUSTER_POLICY, "gpu-cluster-policy"),
        ),
        (
            DOCA,
            NO_NAMESPACE,
            DOCA_DAEMONSET,
            {"nvidia.com/ofed-driver": "", "app": DOCA_DAEMONSET},
            doca_image,
            custom.get_cluster_custom_object(*POLICY, "nic-cluster-policy"),
        ),
    )
    for driver, namespace, name, labels, image, policy in cases:
        daemonset = _daemonset(apps, namespace, name)
        assert daemonset["metadata"]["labels"] == labels
        assert daemonset["metadata"]["generation"] == 1
        (owner,) = daemonset["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            policy["kind"],
            policy["metadata"]["name"],
            policy["metadata"]["uid"],
            True,
        )
        spec = daemonset["spec"]
        assert spec["selector"] == {"matchLabels": {"app": name}}
        assert spec["updateStrategy"] == {"type": "OnDelete"}
        assert spec["template"]["metadata"]["labels"] == labels
        (container,) = spec["template"]["spec"]["containers"]
        assert (container["name"], container["image"]) == (driver.container, image)
        assert daemonset["status"] == {
            "observedGeneration": 1,
            "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2,
            "updatedNumberScheduled": 2,
            "numberReady": 2,
            "numberAvailable": 2,
            "numberMisscheduled": 0,
        }
        for node in names:
            pod = core.read_namespaced_pod(driver.pod_prefix + node, namespace)
            assert pod.metadata.labels == {**labels, "pod-template-generation": "1"}
            (pod_owner,) = pod.metadata.owner_references
            assert (pod_owner.kind, pod_owner.name, pod_owner.uid, pod_owner.controller) == (
                "DaemonSet",
                name,
                daemonset["metadata"]["uid"],
                True,
            )
            assert pod.spec.containers[0].image == image
        # The gate's pod lookup: the DaemonSet's selector finds one pod per node.
        selected = core.list_namespaced_pod(namespace, label_selector=f"app={name}").items
        assert sorted(p.spec.node_name for p in selected) == sorted(names)

    # A policy that no longer asks for the DOCA driver loses its DaemonSet, and the garbage
    # collector the DaemonSet's pods.
    custom.patch_cluster_custom_object(
        *POLICY, "nic-cluster-policy", {"spec": {"ofedDriver": None}}
    )
    wait_for(
        lambda: (
            _daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET) is None
            and not core.list_namespaced_pod(
                NO_NAMESPACE, label_selector="nvidia.com/ofed-driver"
            ).items
        ),
        what="the DOCA DaemonSet and its pods gone",
    )
    assert _rolled_out(_daemonset(apps, GPU_OPERANDS, GPU_DAEMONSET), 2)


def test_a_driver_change_moves_the_daemonset_generation_and_updates_its_pods_node_by_node(
    core, custom, apps, operators, nodes, nic_cluster_policy, history
):
    _network_operator_env(custom, [])
    names = nodes(3, gpus=0)
    upgrade_policy = {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {"enable": False}}
    nic_cluster_policy(nodes.affinity, upgrade_policy)
    wait_for(
        lambda: _rolled_out(_daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET), 3),
        what="the DOCA DaemonSet rolled out on the three nodes",
    )
    recorder = _watch_nodes(history, core, nodes)
    recorder.watch("daemonset", apps.list_namespaced_daemon_set, NO_NAMESPACE)
    _doca_changed(custom)
    wait_for(
        lambda: (
            _doca_done(core, names, DOCA_NEW_IMAGE)
            and _rolled_out(_daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET), 3)
        ),
        timeout=60,
        what="every node upgraded and the DaemonSet rolled out again",
    )
    recorder.stop()
    changes = recorder.changes()
    daemonset = _daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET)
    assert daemonset["metadata"]["generation"] == 2
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == DOCA_NEW_IMAGE

    def counts(ds):
        status = ds.get("status") or {}
        return (
            ds["metadata"]["generation"],
            status.get("observedGeneration"),
            status.get("updatedNumberScheduled", 0),  # omitted when 0
        )

    # The new template first (the status still the old one's), then the status sees it with no
    # pod updated, then one more updated pod at each node's pod-restart-required.
    assert _states(changes, "daemonset", DOCA_DAEMONSET, counts) == [
        (2, 1, 3),
        (2, 2, 0),
        (2, 2, 1),
        (2, 2, 2),
        (2, 2, 3),
    ]
    # As the nodes reach upgrade-done, the count of updated pods has reached them. Only a move
    # into upgrade-done counts: any other write to a node still done with the first driver (its
    # status, another controller's label) is an event of a done node too.
    updated, done, last = 0, set(), {}
    for kind, _type, obj in changes:
        if kind == "daemonset" and obj["metadata"]["name"] == DOCA_DAEMONSET:
            updated = (obj.get("status") or {}).get("updatedNumberScheduled", 0)
        elif kind == "node":
            name, state = obj["metadata"]["name"], _state(obj, DOCA)
            if state == "upgrade-done" and last.get(name, state) != state:
                done.add(name)
                assert updated >= len(done), (updated, sorted(done))
            last[name] = state
    assert done == set(names)
    for name in names:
        pod = core.read_namespaced_pod(DOCA.pod_prefix + name, NO_NAMESPACE)
        assert pod.metadata.labels["pod-template-generation"] == "2"
        assert pod.metadata.owner_references[0].uid == daemonset["metadata"]["uid"]


def test_a_held_node_stays_in_its_state_until_the_knob_lets_it_go(
    core, custom, apps, operators, nodes, nic_cluster_policy, knobs
):
    _network_operator_env(custom, [])
    upgrade_policy = {"autoUpgrade": True, "maxParallelUpgrades": 2, "drain": {"enable": True}}
    names = _doca_installed(core, nodes, nic_cluster_policy, 2, upgrade_policy)
    stuck, free = names
    knobs({"drivers": {"hold": [{"node": stuck, "driver": "doca", "state": "drain-required"}]}})
    _doca_changed(custom)
    # The other node walks its six states meanwhile: the held one was passed over tick after
    # tick.
    wait_for(
        lambda: _doca_done(core, [free], DOCA_NEW_IMAGE),
        timeout=60,
        what=f"{free} upgraded",
    )
    entered = _label_time(_stored_node(core, stuck), DOCA.state_label)
    time.sleep(2.5)
    node = _stored_node(core, stuck)
    assert _state(node, DOCA) == "drain-required"
    assert _running(node, DOCA) == DOCA_OLD_IMAGE
    assert node["spec"].get("unschedulable")
    # A reader of managedFields sees it in that state since it entered it.
    assert _label_time(node, DOCA.state_label) == entered
    assert (datetime.datetime.now(datetime.UTC) - entered).total_seconds() >= 2
    status = _daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET)["status"]
    assert (status["updatedNumberScheduled"], status["desiredNumberScheduled"]) == (1, 2)

    knobs({"drivers": {"hold": []}})
    wait_for(
        lambda: (
            _doca_done(core, names, DOCA_NEW_IMAGE)
            and _rolled_out(_daemonset(apps, NO_NAMESPACE, DOCA_DAEMONSET), 2)
        ),
        timeout=60,
        what=f"{stuck} upgraded once let go",
    )


def test_each_state_change_stamps_the_managed_fields_entry_holding_the_state_label(
    core, custom, operators, nodes, cluster_policy, knobs, history
):
    names = nodes(1)
    old = "nvcr.io/nvidia/driver:570.195.03-rhel9.6"
    cluster_policy(
        {
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": "570.195.03-rhel9.6",
            "upgradePolicy": {"autoUpgrade": True},
        }
    )
    wait_for(
        lambda: _all_done(core, names, GPU, old, GPU_OPERANDS, old),
        what="the GPU node installed with the first driver",
    )
    # Each state lasts over a second: managedFields times have a resolution of one second.
    knobs({"delay_seconds": 1.2})
    installed = _label_time(_stored_node(core, names[0]), GPU.state_label)
    recorder = _watch_nodes(history, core, nodes)
    custom.patch_cluster_custom_object(
        *CLUSTER_POLICY,
        "gpu-cluster-policy",
        {"spec": {"driver": {"version": "580.95.05-rhel9.6"}}},
    )
    new = "nvcr.io/nvidia/driver:580.95.05-rhel9.6"
    wait_for(
        lambda: _all_done(core, names, GPU, new, GPU_OPERANDS, new),
        timeout=60,
        what="the GPU node upgraded",
    )
    recorder.stop()
    # (state, the time of the entry holding the label), at each state change
    stamps = [("upgrade-done", installed)]
    for _kind, _type, node in recorder.changes():
        state = _state(node, GPU)
        if stamps and stamps[-1][0] == state:
            continue
        (entry,) = _label_entries(node, GPU.state_label)
        assert entry["manager"] == GPU.field_manager, entry
        assert entry["operation"] == "Update"
        stamps.append((state, _label_time(node, GPU.state_label)))
    assert [state for state, _stamp in stamps] == ["upgrade-done", *GPU_WALK], stamps
    times = [stamp for _state, stamp in stamps]
    assert all(later > earlier for earlier, later in zip(times, times[1:], strict=False)), stamps


def test_a_long_policy_name_gives_a_valid_distinct_daemonset_name():
    assert doca_daemonset_name("nic-cluster-policy") == DOCA_DAEMONSET
    long_names = ["a" * 70 + "-first", "a" * 70 + "-second"]
    shortened = [doca_daemonset_name(name) for name in long_names]
    assert all(len(name) <= 63 and name.endswith("-ds") for name in shortened), shortened
    assert shortened[0] != shortened[1]
