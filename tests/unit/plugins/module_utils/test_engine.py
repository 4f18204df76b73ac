"""The engine (k8s/engine.py) over the step table, without a cluster: in check mode it writes
nothing but dry runs of what would change, and a cluster as the plan asks is converged; each kind
of work (an object to create, update or prune, a CSV not Succeeded, a gate not met) is found and
named; somebody else's object stops it before anything is written; each kind is read once.
And the step action (plugins/action/step.py): the role settings, the plan and the login it
gives the module, and the module's failure as it came."""

from __future__ import annotations

import copy
import itertools
from unittest import mock

import pytest

from ansible_collections.gpudirect.rdma.plugins.action.step import ActionModule
from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_plans
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    ForeignObjects,
    Refused,
    key_of,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    FIELD_MANAGER,
    Forbidden,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.engine import (
    Engine,
    PreflightFailed,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.gpu_operator import OSTREE_LABEL
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan_action import (
    SettingError,
    check_setting,
)
from tests.unit.inventories import inputs as inventory_inputs
from tests.unit.inventories import mixed_groups

APPLIED = [{"manager": FIELD_MANAGER, "operation": "Apply"}]


def inputs(name: str) -> dict:
    """An example inventory's inputs, agreeing to every disruption: these tests change objects on
    purpose (k8s/disruption.py and test_disruption.py judge what that does to nodes)."""
    return {**inventory_inputs(name), "allow_disruption": ["all"]}


def as_applied(obj: dict) -> dict:
    live = copy.deepcopy(obj)
    live["metadata"]["managedFields"] = APPLIED
    return live


def selected(labels: dict, selector: str | None) -> bool:
    """Equality (key=value) and does-not-exist (!key) requirements, the forms the code sends."""
    requirements = [r for r in (selector or "").split(",") if r]
    wanted = dict(r.split("=", 1) for r in requirements if "=" in r)
    absent = [r[1:] for r in requirements if r.startswith("!")]
    return all(labels.get(k) == v for k, v in wanted.items()) and not any(
        k in labels for k in absent
    )


class ApiError(Exception):
    """An error status of the API server, as the dynamic client raises it."""

    def __init__(self, status: int, reason: str, body: str):
        super().__init__(reason)
        self.status, self.reason, self.body = status, reason, body


class Cluster:
    """A cluster answering reads from its objects and counting them; a write fails the test,
    a dry run answers the object as it would be stored (here, as sent)."""

    server = "https://cluster.invalid"

    def __init__(self, objects: list[dict]):
        self.objects = {key_of(o): o for o in objects}
        self.reads: list[tuple] = []
        self.dry_runs: list[tuple] = []
        self.refuse: dict[tuple, object] = {}

    def get(self, api_version, kind, name, namespace=None):
        self.reads.append(("get", kind))
        return copy.deepcopy(self.objects.get((api_version, kind, namespace, name)))

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.reads.append(("list", kind))
        return [
            copy.deepcopy(o)
            for (a, k, ns, _n), o in self.objects.items()
            if (a, k) == (api_version, kind)
            and (namespace is None or ns == namespace)
            and selected(o["metadata"].get("labels") or {}, label_selector)
        ]

    def apply(self, obj, dry_run=False):
        assert dry_run, f"check mode wrote {key_of(obj)}"
        self.dry_runs.append(key_of(obj))
        if key_of(obj) in self.refuse:
            raise self.refuse[key_of(obj)]
        return copy.deepcopy(obj)

    def delete(self, *args, **kwargs):
        raise AssertionError(f"check mode deleted {args}")

    patch = delete


# The RHCOS build the nodes run, which the Driver Toolkit has an image for.
RHCOS = "9.6.20251015-0"


def node(name: str, view: dict) -> dict:
    """A GPU and NIC node of a node group (the group's view of the plan, group_plans)."""
    labels = {
        **view["node_selector"],
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-15b3.present": "true",
        OSTREE_LABEL: RHCOS,
    }
    resources = {rail["node_resource"]: "8" for rail in view["rails"]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": resources,
            "nodeInfo": {"osImage": f"Red Hat Enterprise Linux CoreOS {RHCOS} (Plow)"},
        },
    }


def platform(plan: dict) -> list[dict]:
    """What an OpenShift cluster has before the collection: its version, the catalogs, the
    worker pool (updated, rendering the plan's MachineConfigs), GPU + NIC nodes."""
    machine_configs = [
        o["metadata"]["name"] for o in table.component_objects(plan, "machine-config")
    ]
    catalogs = [
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": "openshift-marketplace"},
            "status": {"connectionState": {"lastObservedState": "READY"}},
        }
        for name in ("redhat-operators", "certified-operators")
    ]
    version = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "status": {"desired": {"version": plan["openshift_version"] + ".3"}},
    }
    pool = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": plan["machine_configs"]["role"]},
        "status": {
            "configuration": {"source": [{"name": n} for n in machine_configs]},
            "conditions": [{"type": "Updated", "status": "True"}],
        },
    }
    several = len(plan["groups"]) > 1
    nodes = [
        node(f"worker-{view['name']}-{i}" if several else f"worker-{i}", view)
        for view in group_plans(plan)
        for i in range(2)
    ]
    driver_toolkit = {
        "apiVersion": "image.openshift.io/v1",
        "kind": "ImageStream",
        "metadata": {"name": "driver-toolkit", "namespace": "openshift"},
        "spec": {"tags": [{"name": RHCOS}, {"name": "latest"}]},
    }
    return [version, *catalogs, pool, driver_toolkit, *nodes]


def installed_csv(plan: dict, subscription: dict) -> str:
    """The CSV an operator runs as planned: the one the plan pins, else <package>.v1."""
    operator = next(
        o
        for o in plan["operators"].values()
        if (o["namespace"], o["subscription"])
        == (subscription["metadata"]["namespace"], subscription["metadata"]["name"])
    )
    return operator["pinned_csv"] or f"{operator['package']}.v1"


def converged_cluster(plan: dict) -> Cluster:
    """Every object of the plan as the collection applied it, the operators Succeeded, the
    operands ready, the networks rendered, the SR-IOV node states synced."""
    live = [as_applied(o) for o in table.build_objects(plan)]
    for obj in live:
        if obj["kind"] == "Subscription":
            obj["status"] = {"installedCSV": installed_csv(plan, obj)}
        if obj["kind"] in ("NicClusterPolicy", "NicNodePolicy", "ClusterPolicy"):
            obj["status"] = {"state": "ready"}
    csvs = [
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": installed_csv(plan, o),
                "namespace": o["metadata"]["namespace"],
            },
            "status": {"phase": "Succeeded"},
        }
        for o in live
        if o["kind"] == "Subscription"
    ]
    networks = [
        {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": rail["network_name"], "namespace": plan["network_namespace"]},
        }
        for group in plan["groups"]
        for rail in group["rails"]
    ]
    state = {
        "apiVersion": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkNodeState",
        "metadata": {
            "name": "worker-0",
            "namespace": plan["operators"]["sriov_network_operator"]["namespace"],
        },
        "status": {
            "syncStatus": "Succeeded",
            "interfaces": [
                {"name": rail["interface"], "linkType": group["link_type"].upper(), "totalvfs": 16}
                for group in plan["groups"]
                for rail in group["rails"]
            ],
        },
    }
    return Cluster([*platform(plan), *live, *csvs, *networks, state])


def checked(plan: dict, cluster: Cluster, settings: dict | None = None) -> Engine:
    engine = Engine(cluster, plan, check_mode=True, settings=settings, sleep=lambda _s: None)
    engine.run(list(table.NAMES))
    return engine


def find(cluster: Cluster, kind: str) -> dict:
    return next(o for o in cluster.objects.values() if o["kind"] == kind)


@pytest.fixture(params=["shared-device-roce", "sriov-legacy-roce", "host-device-infiniband"])
def plan(request):
    return build_plan(inputs(request.param))


def test_a_cluster_as_planned_is_converged_having_checked_every_object_in_one_read_per_kind(plan):
    cluster = converged_cluster(plan)
    engine = checked(plan, cluster)
    assert engine.all_work() == []
    assert not engine.changed
    assert [s["step"] for s in engine.steps] == list(table.NAMES)
    judged = {(r["kind"], r["namespace"], r["name"]) for r in engine.applier.results}
    planned = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in table.build_objects(plan)
    }
    assert judged == planned
    assert {r["action"] for r in engine.applier.results} == {"unchanged"}
    assert cluster.dry_runs == []
    # One read of each kind of object, but the CSVs, listed by namespace (one per operator),
    # and with the preflight's reads, before any step.
    lists = [kind for verb, kind in cluster.reads if verb == "list"]
    assert len(lists) - 3 == len(set(lists)), lists
    assert lists.count("ClusterServiceVersion") == 4
    assert "ClusterServiceVersion" not in [kind for verb, kind in cluster.reads if verb == "get"]
    # ... in the preflight's round, before any step: the check alone makes them.
    cluster.reads.clear()
    Engine(cluster, plan, check_mode=True).check(list(table.NAMES))
    assert cluster.reads.count(("list", "ClusterServiceVersion")) == 4
    # 32: the driver rollout gates add the DaemonSets (the nodes and pods are read already), the
    # driver-toolkit check its ImageStream.
    assert len(cluster.reads) <= 32, cluster.reads


def test_an_object_that_differs_is_dry_run_on_the_api_server_and_named(plan):
    cluster = converged_cluster(plan)
    find(cluster, "NicClusterPolicy")["spec"]["ofedDriver"]["version"] = "older"
    engine = checked(plan, cluster)
    assert engine.all_work() == [
        "NicClusterPolicy nic-cluster-policy would be updated (fields differ)"
    ]
    assert cluster.dry_runs == [
        ("mellanox.com/v1alpha1", "NicClusterPolicy", None, "nic-cluster-policy")
    ]
    (diff,) = engine.applier.diffs
    assert diff["before"]["spec"]["ofedDriver"]["version"] == "older"
    assert diff["after"]["spec"]["ofedDriver"]["version"] != "older"


def test_objects_another_field_manager_applied_as_planned_are_one_line_of_work(plan):
    """The rendered tree applied with `oc apply --server-side`: the content is the plan's, the
    fields are not the collection's. Each is applied once to own them, said in one line."""
    cluster = converged_cluster(plan)
    theirs = [{"manager": "kubectl", "operation": "Apply"}]
    for kind in ("NicClusterPolicy", "ClusterPolicy"):
        find(cluster, kind)["metadata"]["managedFields"] = theirs
    (line,) = checked(plan, cluster).all_work()
    assert line == (
        "2 object(s) already hold the planned content, applied by another field manager: each is "
        "applied once, its content unchanged, so that gpudirect.rdma owns its fields and a later "
        "change of the plan can remove one (NicClusterPolicy nic-cluster-policy, ClusterPolicy "
        "gpu-cluster-policy)"
    )


def test_an_object_built_on_a_csv_that_differs_is_work(plan):
    cluster = converged_cluster(plan)
    find(cluster, "ClusterPolicy")["spec"]["driver"]["enabled"] = False
    assert checked(plan, cluster).all_work() == [
        "ClusterPolicy gpu-cluster-policy would be updated (fields differ)"
    ]


# The API server's own words, as kube-apiserver 1.35 answers a server-side apply dry run.
REFUSALS = {
    "pattern": (
        422,
        "Unprocessable Entity",
        '{"message": "NicClusterPolicy.mellanox.com \\"nic-cluster-policy\\" is invalid: '
        'spec.ofedDriver.image: Invalid value: \\"___\\": spec.ofedDriver.image in body '
        "should match '[a-zA-Z0-9\\\\-]+'\"}",
        "spec.ofedDriver.image",
    ),
    "type": (
        500,
        "Internal Server Error",
        '{"message": "failed to create typed patch object (/nic-cluster-policy; '
        "mellanox.com/v1alpha1, Kind=NicClusterPolicy): "
        ".spec.ofedDriver.startupProbe.initialDelaySeconds: expected numeric (int or float), "
        'got string"}',
        "spec.ofedDriver.startupProbe.initialDelaySeconds",
    ),
}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_what_the_api_server_would_refuse_fails_check_mode_naming_the_object_and_field(
    plan, refusal
):
    status, reason, body, field = REFUSALS[refusal]
    cluster = converged_cluster(plan)
    find(cluster, "NicClusterPolicy")["spec"]["ofedDriver"]["version"] = "older"
    key = ("mellanox.com/v1alpha1", "NicClusterPolicy", None, "nic-cluster-policy")
    cluster.refuse[key] = ApiError(status, reason, body)
    with pytest.raises(Refused) as refused:
        checked(plan, cluster)
    message = str(refused.value)
    assert message.startswith(
        f"the API server would refuse NicClusterPolicy nic-cluster-policy: {status}"
    )
    assert field in message
    assert "nothing was written" in message


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
    work = checked(plan, cluster).all_work()
    assert f"Namespace {first[3]} would be created" in work
    assert plan["groups"][0]["method"] == "host_device" or (
        "HostDeviceNetwork old-net would be removed (no longer part of the plan)" in work
    )


def test_somebody_elses_object_stops_the_run_before_anything_is_written(plan):
    cluster = converged_cluster(plan)
    del find(cluster, "NicClusterPolicy")["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    with pytest.raises(PreflightFailed) as failed:
        checked(plan, cluster)
    assert "NicClusterPolicy nic-cluster-policy exists and was not created by" in str(failed.value)
    # Without preflight (a role that reached apply), apply refuses the same way.
    engine = Engine(cluster, plan, check_mode=True)
    with pytest.raises(ForeignObjects):
        engine._run_step(table.step("network-operator"))


def test_a_csv_not_succeeded_is_work(plan):
    cluster = converged_cluster(plan)
    find(cluster, "ClusterServiceVersion")["status"]["phase"] = "Installing"
    (work,) = checked(plan, cluster).all_work()
    assert "has no ClusterServiceVersion in phase Succeeded" in work


def test_a_gate_not_met_is_work_and_says_what_was_seen(plan):
    cluster = converged_cluster(plan)
    find(cluster, "NicClusterPolicy")["status"]["state"] = "notReady"
    (work,) = checked(plan, cluster).all_work()
    assert work.startswith("gate 'NicClusterPolicy ready' not met:")
    assert "status.state is 'notReady'" in work


def test_a_gate_must_hold_for_the_stable_seconds_of_its_step(plan):
    cluster = converged_cluster(plan)
    settings = {"network-operator": {"stable_seconds": 0.2}}
    assert checked(plan, cluster, settings).all_work() == []
    flapping = itertools.cycle(["ready", "notReady"])
    original_get = cluster.get

    def get(api_version, kind, name, namespace=None):
        found = original_get(api_version, kind, name, namespace)
        if kind == "NicClusterPolicy" and found:
            found["status"]["state"] = next(flapping)
        return found

    cluster.get = get
    (work,) = checked(plan, cluster, settings).all_work()
    assert work.startswith("gate 'NicClusterPolicy ready' not stable")


def test_rails_on_the_same_nodes_share_one_read():
    plan = build_plan(inputs("multi-rail-hgx"))
    assert len(plan["groups"][0]["rails"]) > 1
    cluster = converged_cluster(plan)
    checked(plan, cluster)
    assert [kind for _verb, kind in cluster.reads].count("Node") == 1


def test_each_method_step_builds_and_waits_for_its_own_groups_only():
    plan = build_plan({**mixed_groups(), "allow_disruption": ["all"]})
    sriov = table.component_objects(plan, "sriov-legacy")
    shared = table.component_objects(plan, "shared-device")
    assert table.component_objects(plan, "host-device") == []
    assert {o["kind"] for o in sriov} == {"SriovNetworkNodePolicy", "SriovNetwork"}
    assert len([o for o in sriov if o["kind"] == "SriovNetwork"]) == 4  # the a100 rails
    assert {o["kind"] for o in shared} == {"IPoIBNetwork"}
    assert len(shared) == 8  # the h100 rails
    assert all(table.component_of(o) == "sriov-legacy" for o in sriov)
    assert [s.role for s in table.METHOD_STEPS.values() if s.enabled(plan)] == [
        "shared_device",
        "sriov_legacy",
    ]
    resources = {
        name: [g["path"] for g in table.step(name).gates(plan, {}, []) if g["kind"] == "Node"]
        for name in ("shared-device", "sriov-legacy")
    }
    assert resources["sriov-legacy"] == [
        f'status.allocatable."openshift.io/sriovlegacy_rail{i}"' for i in range(4)
    ]
    assert len(resources["shared-device"]) == 8


def test_a_converged_mixed_cluster_is_converged_and_no_method_step_removes_anothers_objects():
    plan = build_plan({**mixed_groups(), "allow_disruption": ["all"]})
    engine = checked(plan, converged_cluster(plan))
    assert engine.all_work() == []
    assert {r["action"] for r in engine.applier.results} == {"unchanged"}
    # A method no group uses would remove the collection's objects of its own component only.
    assert [s["skipped"] for s in engine.steps if s["step"] == "host-device"] == ["off in the plan"]


def test_switching_every_group_off_a_method_removes_its_objects():
    shared = build_plan(inputs("shared-device-roce"))
    cluster = converged_cluster(shared)
    sriov = build_plan({**inputs("shared-device-roce"), "method": "sriov_legacy"})
    work = checked(sriov, cluster).all_work()
    assert "MacvlanNetwork rdmashared-net would be removed (no longer part of the plan)" in work


# -- the action ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("step", "key", "value", "expected"),
    [
        ("nfd", "min_nodes", 0, "nfd_min_nodes: got 0; expected a whole number of 1 or more"),
        ("nfd", "min_nodes", "two", "nfd_min_nodes: got 'two'; expected a whole number"),
        ("nfd", "min_nodes", "1.5", "nfd_min_nodes: got '1.5'; expected a whole number"),
        ("nfd", "min_nodes", True, "nfd_min_nodes: got True; expected a whole number"),
        (
            "network-operator",
            "stable_seconds",
            -1,
            "network_operator_ready_stable_seconds: got -1; expected a number of seconds of 0 or "
            "more",
        ),
        (
            "gpu-operator",
            "ready_timeout",
            "soon",
            "gpu_operator_ready_timeout: got 'soon'; expected a whole number of 1 or more",
        ),
    ],
)
def test_a_bad_role_setting_is_named(step, key, value, expected):
    with pytest.raises(SettingError) as error:
        check_setting(table.step(step).setting(key), value)
    assert str(error.value).startswith(expected)


def test_role_settings_arrive_as_numbers_whatever_their_form():
    assert check_setting(table.step("nfd").setting("min_nodes"), "3") == 3
    assert check_setting(table.step("gpu-operator").setting("stable_seconds"), "2.5") == 2.5
    assert check_setting(table.step("gpu-operator").setting("ready_timeout"), 600) == 600


def action(args: dict) -> ActionModule:
    task = mock.MagicMock()
    task.args = args
    task.async_val = 0
    found = ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, None, None)
    found._templar = mock.MagicMock(template=lambda value: value)
    return found


def test_the_action_gives_the_module_the_role_settings_set_and_the_engine_the_declared_rest():
    plan = build_plan(inputs("shared-device-roce"))
    step = action({"name": "all"})
    with mock.patch.object(step, "_execute_module", return_value={"changed": False}) as execute:
        step.run(task_vars={"gpudirect_rdma_plan": plan, "nfd_min_nodes": "2"})
    sent = execute.call_args.kwargs["module_args"]
    assert sent["plan"] == plan
    assert sent["name"] == "all" and "role" not in sent
    assert sent["settings"]["nfd"] == {"min_nodes": 2}
    assert sent["settings"]["shared-device"] == {}
    assert sent["take_over"] is False
    engine = Engine(None, plan, settings=sent["settings"])
    assert engine._settings(table.step("nfd")) == {
        "install_timeout": 900,
        "ready_timeout": 600,
        "min_nodes": 2,
    }
    assert engine._settings(table.step("sriov-legacy")) == {"ready_timeout": 1800}
    assert engine._settings(table.step("network-operator"))["stable_seconds"] == 0


def test_a_role_runs_its_steps_and_a_task_names_a_role_or_a_step():
    plan = build_plan(inputs("shared-device-roce"))
    step = action({"role": "network_operator"})
    with mock.patch.object(step, "_execute_module", return_value={"changed": False}) as execute:
        step.run(task_vars={"gpudirect_rdma_plan": plan, "network_operator_ready_timeout": 60})
    sent = execute.call_args.kwargs["module_args"]
    assert sent["role"] == "network_operator" and "name" not in sent
    assert sent["settings"] == {
        "network-operator": {"ready_timeout": 60},
        "nic-node-policies": {"ready_timeout": 60},
    }
    assert table.selected(role="network_operator") == ["network-operator", "nic-node-policies"]
    for args, expected in (
        ({"role": "gpu"}, "role: got 'gpu'; expected one of nfd, sriov_network_operator"),
        ({"name": "gpu"}, "name: got 'gpu'; expected all or one of nfd, "),
        ({}, "name, role: got name None and role None; expected one of them"),
        ({"name": "nfd", "role": "nfd"}, "name, role: got name 'nfd' and role 'nfd'"),
    ):
        result = action(args).run(task_vars={"gpudirect_rdma_plan": plan})
        assert result["failed"] and result["msg"].startswith(expected), result["msg"]


def test_a_pull_secret_needs_its_login():
    plan = build_plan(
        {
            **inputs("shared-device-roce"),
            "image_registry": "mirror.local:5000/nvidia",
            "image_registry_username": "puller",
            "image_registry_password": "pw",
        }
    )
    step = action({"name": "network-operator"})
    result = step.run(task_vars={"gpudirect_rdma_plan": plan})
    assert result["failed"]
    assert result["msg"].startswith(
        "gpudirect_rdma_image_registry_username, gpudirect_rdma_image_registry_password: the "
        "plan has a pull Secret (gpudirect-rdma-image-registry); expected its login, got none"
    )
    with mock.patch.object(step, "_execute_module", return_value={}) as execute:
        step.run(
            task_vars={
                "gpudirect_rdma_plan": plan,
                "gpudirect_rdma_image_registry_username": "puller",
                "gpudirect_rdma_image_registry_password": "pw",
            }
        )
    assert execute.call_args.kwargs["module_args"]["registry_login"] == {
        "username": "puller",
        "password": "pw",
    }


def test_the_modules_failure_reaches_the_play_without_the_plan():
    plan = build_plan(inputs("shared-device-roce"))
    step = action({"name": "nfd", "kubeconfig": "/k"})
    failure = {
        "failed": True,
        "msg": "the API server https://api:6443 did not answer while reading Namespace x",
        "api_server": "https://api:6443",
        "request": "reading Namespace x",
        "invocation": {"module_args": {"plan": plan}},
    }
    with mock.patch.object(step, "_execute_module", return_value=failure) as execute:
        result = step.run(task_vars={"gpudirect_rdma_plan": plan})
    assert execute.call_args.kwargs["module_args"]["kubeconfig"] == "/k"
    assert result["failed"] and result["msg"] == failure["msg"]
    assert result["api_server"] == "https://api:6443" and result["request"] == failure["request"]
    assert "invocation" not in result


def test_an_unknown_step_is_named():
    result = action({"name": "gpu"}).run(task_vars={})
    assert result["failed"]
    assert result["msg"].startswith("name: got 'gpu'; expected all or one of nfd, ")


def test_preflight_reads_once_a_run_and_later_steps_judge_only_what_was_left_skipped():
    """The first run (site.yml's check) judges every check; a step after it, given its verdict,
    judges only the checks that were skipped (no NFD labels, no NIC report yet), reading only
    what those read; for another plan the verdict does not hold."""
    plan = build_plan(inputs("sriov-legacy-roce"))
    bare = [o for o in platform(plan) if o["kind"] != "Node"]
    nodes = [
        {**o, "metadata": {"name": o["metadata"]["name"], "labels": {}}}
        for o in platform(plan)
        if o["kind"] == "Node"
    ]
    cluster = Cluster([*bare, *nodes])
    first = Engine(cluster, plan, check_mode=True, sleep=lambda _s: None)
    first.check()
    skipped = {f["check"] for f in first.findings if f["severity"] == "skipped"}
    assert skipped == {"nodes", "interfaces", "driver-toolkit"}
    assert first.verdict["pending"] == ["nodes", "driver-toolkit", "interfaces"]
    every_read = list(cluster.reads)

    # NFD has labelled the nodes since: the next step judges nodes, the driver toolkit and
    # interfaces only.
    cluster = converged_cluster(plan)
    cluster.reads.clear()
    later = Engine(cluster, plan, check_mode=True, decided=first.verdict)
    later.check()
    assert {f["check"] for f in later.findings} == {"nodes", "interfaces", "driver-toolkit"}
    assert later.verdict["pending"] == []
    # The SR-IOV operator's node states report the NICs: no NicDevice is read.
    assert sorted(cluster.reads) == [
        ("get", "ImageStream"),
        ("list", "Node"),
        ("list", "SriovNetworkNodeState"),
    ]
    assert len(every_read) > 3 * len(cluster.reads)

    # With nothing pending, a step reads nothing for preflight.
    cluster.reads.clear()
    Engine(cluster, plan, check_mode=True, decided=later.verdict).check()
    assert cluster.reads == []

    # A verdict holds for its plan only.
    other = build_plan({**inputs("sriov-legacy-roce"), "mtu": 4000})
    engine = Engine(cluster, other, check_mode=True, decided=later.verdict)
    engine.check()
    assert "openshift" in {f["check"] for f in engine.findings}


def test_the_nics_are_read_from_the_first_source_that_reports_them():
    """The SR-IOV operator's node states, else the NicDevices, else NFD's NodeFeatures: a
    source is listed only when those before it have no object."""
    plan = build_plan(inputs("sriov-legacy-roce"))
    sources = ("SriovNetworkNodeState", "NicDevice", "NodeFeature")

    def nic_reads(cluster: Cluster) -> list[str]:
        Engine(cluster, plan, check_mode=True).check()
        return [kind for _verb, kind in cluster.reads if kind in sources]

    assert nic_reads(converged_cluster(plan)) == ["SriovNetworkNodeState"]
    cluster = converged_cluster(plan)
    state = find(cluster, "SriovNetworkNodeState")
    del cluster.objects[key_of(state)]
    device = {
        "apiVersion": "configuration.net.nvidia.com/v1alpha1",
        "kind": "NicDevice",
        "metadata": {"name": "worker-0-nic", "namespace": state["metadata"]["namespace"]},
        "status": {"node": "worker-0", "ports": [{"networkInterface": "ens8f0np0"}]},
    }
    cluster.objects[key_of(device)] = device
    assert nic_reads(cluster) == ["SriovNetworkNodeState", "NicDevice"]
    del cluster.objects[key_of(device)]
    cluster.reads.clear()
    assert nic_reads(cluster) == list(sources)


def test_with_a_verdict_a_refused_read_still_stops_the_step():
    """A step given a verdict judges only the checks left skipped; when the read they need is
    refused, that refusal is the error, not an empty judgement."""
    plan = build_plan(inputs("sriov-legacy-roce"))
    cluster = converged_cluster(plan)
    first = Engine(cluster, plan, check_mode=True)
    first.check()
    verdict = {**first.verdict, "pending": ["interfaces"]}

    def refused(*_args, **_kwargs):
        raise Forbidden(ApiError(403, "Forbidden", '{"message": "no"}'))

    cluster.list = refused
    with pytest.raises(PreflightFailed) as failed:
        Engine(cluster, plan, check_mode=True, decided=verdict).check()
    assert [f["check"] for f in failed.value.findings] == ["api"]
