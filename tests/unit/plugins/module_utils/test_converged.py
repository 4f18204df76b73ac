"""The converged check takes the steps' decisions, reading only: a cluster as the plan asks is
converged; each kind of work (an object to create, update or prune, a foreign object, a CSV not
Succeeded, a gate not met) is found and named; nothing is ever written."""

from __future__ import annotations

import copy
from unittest import mock

import pytest

from ansible_collections.gpudirect.rdma.plugins.action.converged import (
    ActionModule,
    built_on_csvs,
    options_error,
    reader_options,
    role_settings,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import build_objects
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import key_of
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import FIELD_MANAGER
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.converged import (
    check,
    work_on_read,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import to_gate
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs

APPLIED = [{"manager": FIELD_MANAGER, "operation": "Apply"}]


def as_applied(obj: dict) -> dict:
    live = copy.deepcopy(obj)
    live["metadata"]["managedFields"] = APPLIED
    return live


def selected(labels: dict, selector: str | None) -> bool:
    wanted = dict(r.split("=", 1) for r in (selector or "").split(",") if "=" in r)
    return all(labels.get(k) == v for k, v in wanted.items())


class Cluster:
    """A cluster answering reads from its objects; every write fails the test."""

    def __init__(self, objects: list[dict]):
        self.objects = {key_of(o): o for o in objects}
        self.reads = 0

    def get(self, api_version, kind, name, namespace=None):
        self.reads += 1
        return copy.deepcopy(self.objects.get((api_version, kind, namespace, name)))

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.reads += 1
        return [
            copy.deepcopy(o)
            for (a, k, ns, _n), o in self.objects.items()
            if (a, k) == (api_version, kind)
            and (namespace is None or ns == namespace)
            and selected(o["metadata"].get("labels") or {}, label_selector)
        ]

    def apply(self, obj):
        raise AssertionError(f"the converged check wrote {key_of(obj)}")

    delete = patch = apply


def node(name: str, plan: dict) -> dict:
    labels = {
        **plan["node_selector"],
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-15b3.present": "true",
    }
    resources = {rail["node_resource"]: "8" for rail in plan["rails"]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": resources},
    }


def converged_cluster(plan: dict) -> Cluster:
    """Every object of the plan as the collection applied it, the operators Succeeded, the
    operands ready, the pool updated, the nodes advertising, the networks rendered."""
    live = [as_applied(o) for o in build_objects(plan)]
    for obj in live:
        if obj["kind"] == "Subscription":
            obj["status"] = {"installedCSV": obj["spec"]["name"] + ".v1"}
        if obj["kind"] in ("NicClusterPolicy", "ClusterPolicy"):
            obj["status"] = {"state": "ready"}
    csvs = [
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": o["spec"]["name"] + ".v1",
                "namespace": o["metadata"]["namespace"],
            },
            "status": {"phase": "Succeeded"},
        }
        for o in live
        if o["kind"] == "Subscription"
    ]
    machine_configs = [o["metadata"]["name"] for o in live if o["kind"] == "MachineConfig"]
    pool = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": plan["machine_configs"]["role"]},
        "status": {
            "configuration": {"source": [{"name": n} for n in machine_configs]},
            "conditions": [{"type": "Updated", "status": "True"}],
        },
    }
    networks = [
        {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": rail["network_name"], "namespace": plan["network_namespace"]},
        }
        for rail in plan["rails"]
    ]
    states = [
        {
            "apiVersion": "sriovnetwork.openshift.io/v1",
            "kind": "SriovNetworkNodeState",
            "metadata": {
                "name": "worker-0",
                "namespace": plan["operators"]["sriov_network_operator"]["namespace"],
            },
            "status": {"syncStatus": "Succeeded"},
        }
    ]
    return Cluster([*live, *csvs, pool, *networks, *states, node("worker-0", plan)])


def verdict(plan: dict, cluster: Cluster, stable_for: float = 0) -> list[str]:
    """The work the action would report: the module's checks, then the objects built on CSVs."""
    options = reader_options(plan, 1, stable_for, None)
    found = check(
        cluster,
        options["objects"],
        options["prune"],
        options["subscriptions"],
        [to_gate(g) for g in options["gates"]],
        options["stable_for"],
        options["read"],
    )
    if not found["converged"]:
        return found["work"]
    return work_on_read(built_on_csvs(plan, found["csvs"]), found["live"])


@pytest.fixture(params=["shared-device-roce", "sriov-legacy-roce", "host-device-infiniband"])
def plan(request):
    return build_plan(inputs(request.param))


def test_a_cluster_as_planned_is_converged_and_every_object_is_checked(plan):
    options = reader_options(plan, 1, 0, None)
    checked = {key_of(o) for o in options["objects"]} | {
        (r["apiVersion"], r["kind"], r.get("namespace"), r["name"]) for r in options["read"]
    }
    assert checked == {key_of(o) for o in build_objects(plan)}
    assert verdict(plan, converged_cluster(plan)) == []


def test_an_object_that_differs_is_work(plan):
    cluster = converged_cluster(plan)
    policy = next(o for o in cluster.objects.values() if o["kind"] == "NicClusterPolicy")
    policy["spec"]["ofedDriver"]["version"] = "older"
    assert verdict(plan, cluster) == [
        "NicClusterPolicy nic-cluster-policy would be updated (fields differ)"
    ]


def test_an_object_built_on_a_csv_that_differs_is_work(plan):
    cluster = converged_cluster(plan)
    policy = next(o for o in cluster.objects.values() if o["kind"] == "ClusterPolicy")
    policy["spec"]["driver"]["enabled"] = False
    assert verdict(plan, cluster) == [
        "ClusterPolicy gpu-cluster-policy would be updated (fields differ)"
    ]


def test_a_missing_object_and_one_left_from_another_method_are_work(plan):
    cluster = converged_cluster(plan)
    first = next(k for k, o in cluster.objects.items() if o["kind"] == "Namespace")
    del cluster.objects[first]
    stale = as_applied(
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "HostDeviceNetwork",
            "metadata": {
                "name": "old-net",
                "labels": {
                    "app.kubernetes.io/managed-by": "gpudirect.rdma",
                    "gpudirect.rdma/component": "host-device",
                },
            },
        }
    )
    cluster.objects[key_of(stale)] = stale
    work = verdict(plan, cluster)
    assert f"Namespace {first[3]} would be created" in work
    assert plan["method"] == "host_device" or (
        "HostDeviceNetwork old-net would be removed (no longer part of the plan)" in work
    )


def test_somebody_elses_object_is_work_not_a_failure(plan):
    cluster = converged_cluster(plan)
    policy = next(o for o in cluster.objects.values() if o["kind"] == "NicClusterPolicy")
    del policy["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    (work,) = verdict(plan, cluster)
    assert "not created by gpudirect.rdma" in work and "NicClusterPolicy nic-cluster-policy" in work


def test_a_csv_not_succeeded_is_work(plan):
    cluster = converged_cluster(plan)
    csv = next(o for o in cluster.objects.values() if o["kind"] == "ClusterServiceVersion")
    csv["status"]["phase"] = "Installing"
    (work,) = verdict(plan, cluster)
    assert "has no ClusterServiceVersion in phase Succeeded" in work


def test_a_gate_not_met_is_work_and_says_what_was_seen(plan):
    cluster = converged_cluster(plan)
    policy = next(o for o in cluster.objects.values() if o["kind"] == "NicClusterPolicy")
    policy["status"]["state"] = "notReady"
    (work,) = verdict(plan, cluster)
    assert work.startswith("gate 'NicClusterPolicy ready' not reached after 0s")
    assert "status.state is 'notReady'" in work


def test_rails_on_the_same_nodes_share_one_read_per_poll():
    plan = build_plan(inputs("multi-rail-hgx"))
    assert len(plan["rails"]) > 1
    cluster = converged_cluster(plan)
    reads = cluster.reads
    options = reader_options(plan, 1, 0, None)
    check(cluster, [], [], {}, [to_gate(g) for g in options["gates"]])
    distinct = {
        (g["kind"], g.get("name"), g.get("namespace"), g.get("label_selector"))
        for g in options["gates"]
    }
    assert len(distinct) < len(options["gates"])  # rails share nodes, the pool gates one pool
    assert cluster.reads - reads == len(distinct)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"plan": "not a plan"}, "plan: expected the plan returned by gpudirect.rdma.plan"),
        ({"plan": {"method": "shared_device"}}, "plan: expected the plan returned by"),
        ({"nfd_min_nodes": 0}, "nfd_min_nodes: got 0; expected a whole number of 1 or more"),
        ({"nfd_min_nodes": "two"}, "nfd_min_nodes: got 'two'; expected a whole number of 1"),
        ({"nfd_min_nodes": "1.5"}, "nfd_min_nodes: got '1.5'; expected a whole number of 1"),
        ({"nfd_min_nodes": True}, "nfd_min_nodes: got True; expected a whole number of 1"),
        (
            {"network_operator_ready_stable_seconds": -1},
            "network_operator_ready_stable_seconds: got -1; expected a number of seconds of 0",
        ),
        (
            {"gpu_operator_ready_stable_seconds": "soon"},
            "gpu_operator_ready_stable_seconds: got 'soon'; expected a number of seconds of 0",
        ),
    ],
)
def test_the_actions_options_are_checked_before_anything_is_read(args, expected):
    plan = build_plan(inputs("shared-device-roce"))
    assert options_error({"plan": plan}) is None
    assert options_error({"plan": plan, **args}).startswith(expected)


def test_a_pull_secret_is_checked_with_its_login():
    plan = build_plan(
        {
            **inputs("shared-device-roce"),
            "image_registry": "mirror.local:5000/nvidia",
            "image_registry_username": "puller",
            "image_registry_password": "pw",
        }
    )
    assert options_error({"plan": plan}).startswith(
        "image_registry_username, image_registry_password: the plan has a pull Secret"
    )
    options = reader_options(plan, 1, 0, {"username": "puller", "password": "pw"})
    assert options["registry_secret"] == {
        "name": "gpudirect-rdma-image-registry",
        "namespace": "nvidia-network-operator",
        "registry": "mirror.local:5000",
        "username": "puller",
        "password": "pw",
    }


def test_the_roles_settings_arrive_as_numbers_whatever_their_form():
    assert role_settings({}) == {
        "nfd_min_nodes": 1,
        "network_operator_ready_stable_seconds": 0,
        "gpu_operator_ready_stable_seconds": 0,
    }
    assert role_settings(
        {
            "nfd_min_nodes": "3",
            "network_operator_ready_stable_seconds": "2.5",
            "gpu_operator_ready_stable_seconds": 4,
        }
    ) == {
        "nfd_min_nodes": 3,
        "network_operator_ready_stable_seconds": 2.5,
        "gpu_operator_ready_stable_seconds": 4.0,
    }


def test_the_readers_failure_reaches_the_play_without_the_plans_objects():
    task = mock.MagicMock()
    task.args = {"plan": build_plan(inputs("shared-device-roce")), "kubeconfig": "/k"}
    task.async_val = 0
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, None, None)
    failure = {
        "failed": True,
        "msg": "the API server https://api:6443 did not answer while reading Namespace x",
        "api_server": "https://api:6443",
        "request": "reading Namespace x",
        "invocation": {"module_args": {"objects": ["..."]}},
    }
    with mock.patch.object(action, "_execute_module", return_value=failure) as execute:
        result = action.run(task_vars={})
    sent = execute.call_args.kwargs["module_args"]
    assert sent["kubeconfig"] == "/k" and "plan" not in sent and sent["objects"]
    assert result["failed"] and result["msg"] == failure["msg"]
    assert result["api_server"] == "https://api:6443" and result["request"] == failure["request"]
    assert "invocation" not in result
