"""The simulator plays the GPU Operator's and the Network Operator's driver upgrade controllers the
way k8s-operator-libs drives them: a driver change walks each node through its state labels in
order, within maxParallelUpgrades; the DOCA driver skips drain-required when drain is off; a
failing driver pod ends its node in upgrade-failed, which keeps its slot until retried by hand;
in requestor mode the node goes through a NodeMaintenance the Maintenance Operator makes Ready.
Every change of the nodes is watched (History), so a state that lasts one tick is seen too."""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest
from kubernetes.client.rest import ApiException

from tests.integration.helpers import wait_for
from tests.integration.test_simulator import _operator_group, _subscribe, install_manually
from tests.integration.test_simulator_nic_configuration import History, _states
from tests.simulator.drivers import DOCA, GPU, env_of
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


@pytest.fixture
def history():
    recorders = []

    def start() -> History:
        recorders.append(History())
        return recorders[-1]

    yield start
    for recorder in recorders:
        recorder.stop()


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
    names = nodes(4, gpus=0)
    upgrade_policy = {"autoUpgrade": True, "maxParallelUpgrades": 2, "drain": {"enable": False}}
    nic_cluster_policy(nodes.affinity, upgrade_policy)
    old_image = f"{DOCA_REPOSITORY}:{DOCA_OLD}"
    wait_for(
        lambda: _all_done(core, names, DOCA, DOCA_OLD, NO_NAMESPACE, old_image),
        what="every node installed with the first DOCA driver",
    )
    recorder = _watch_nodes(history, core, nodes)
    custom.patch_cluster_custom_object(
        *POLICY, "nic-cluster-policy", {"spec": {"ofedDriver": {"version": DOCA_NEW}}}
    )
    new_image = f"{DOCA_REPOSITORY}:{DOCA_NEW}"
    wait_for(
        lambda: _all_done(core, names, DOCA, DOCA_NEW, NO_NAMESPACE, new_image),
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
    assert pod.metadata.labels == {"nvidia.com/ofed-driver": ""}
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
    names = nodes(2, gpus=0)
    upgrade_policy = {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {"enable": True}}
    nic_cluster_policy(nodes.affinity, upgrade_policy)
    old_image = f"{DOCA_REPOSITORY}:{DOCA_OLD}"
    wait_for(
        lambda: _all_done(core, names, DOCA, DOCA_OLD, NO_NAMESPACE, old_image),
        what="every node installed with the first DOCA driver",
    )
    recorder = _watch_nodes(history, core, nodes)
    recorder.watch(
        "maintenance",
        custom.list_namespaced_custom_object,
        *MAINTENANCE,
        MO_NAMESPACE,
        "nodemaintenances",
    )
    custom.patch_cluster_custom_object(
        *POLICY, "nic-cluster-policy", {"spec": {"ofedDriver": {"version": DOCA_NEW}}}
    )
    new_image = f"{DOCA_REPOSITORY}:{DOCA_NEW}"
    wait_for(
        lambda: _all_done(core, names, DOCA, DOCA_NEW, NO_NAMESPACE, new_image),
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
    names = nodes(1, gpus=0)
    nic_cluster_policy(nodes.affinity, {"autoUpgrade": True})
    old_image = f"{DOCA_REPOSITORY}:{DOCA_OLD}"
    wait_for(
        lambda: _all_done(core, names, DOCA, DOCA_OLD, NO_NAMESPACE, old_image),
        what="the node installed with the first DOCA driver",
    )
    custom.patch_cluster_custom_object(
        *POLICY, "nic-cluster-policy", {"spec": {"ofedDriver": {"version": DOCA_NEW}}}
    )
    wait_for(
        lambda: _state(_node(core, names[0]), DOCA) == "upgrade-required",
        what="the node in upgrade-required",
    )
    time.sleep(2)
    node = _node(core, names[0])
    assert _state(node, DOCA) == "upgrade-required"
    assert _running(node, DOCA) == DOCA_OLD
    assert not custom.list_namespaced_custom_object(*MAINTENANCE, MO_NAMESPACE, "nodemaintenances")[
        "items"
    ]
