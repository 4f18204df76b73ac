"""The apply decision (write only what differs, drop what we no longer set) and the gates
(paths, conditions, joint evaluation, timeouts), without a cluster."""

from __future__ import annotations

import contextlib
import json
from unittest import mock

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    Applier,
    Refused,
    contains,
    decide,
    delete_and_wait,
    stale_fields,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    Cluster,
    NotServed,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import (
    OlmError,
    approve_install_plan,
    check_operator_groups,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import Progress
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    MISSING,
    Gate,
    GateFailed,
    GateTimeout,
    field_path,
    lookup,
    poll_intervals,
    quantity,
    wait_for,
)

DESIRED = {
    "apiVersion": "mellanox.com/v1alpha1",
    "kind": "NicClusterPolicy",
    "metadata": {
        "name": "nic-cluster-policy",
        "labels": {"app.kubernetes.io/managed-by": "gpudirect.rdma"},
    },
    "spec": {"ofedDriver": {"image": "doca-driver", "env": [{"name": "A", "value": "1"}]}},
}


def live(spec, fields=None, manager="gpudirect.rdma"):
    obj = {
        "apiVersion": DESIRED["apiVersion"],
        "kind": DESIRED["kind"],
        "metadata": {**DESIRED["metadata"], "resourceVersion": "7", "managedFields": []},
        "spec": spec,
    }
    if fields is not None:
        obj["metadata"]["managedFields"] = [
            {"manager": manager, "operation": "Apply", "fieldsV1": fields}
        ]
    return obj


OWNED = {
    "f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}},
    "f:spec": {"f:ofedDriver": {"f:image": {}, "f:env": {}}},
}


def test_missing_object_is_created():
    assert decide(DESIRED, None) == ("create", [])


def test_converged_object_is_left_alone_even_with_server_defaults():
    current = live(
        {
            "ofedDriver": {
                "image": "doca-driver",
                "forcePrecompiled": False,
                "env": [{"name": "A", "value": "1"}],
            }
        },
        OWNED,
    )
    assert decide(DESIRED, current) == ("unchanged", [])


def test_a_changed_value_is_applied():
    current = live({"ofedDriver": {"image": "old", "env": [{"name": "A", "value": "1"}]}}, OWNED)
    assert decide(DESIRED, current) == ("update", ["fields differ"])


def test_a_field_we_set_before_and_no_longer_set_is_removed():
    owned = {**OWNED, "f:spec": {**OWNED["f:spec"], "f:rdmaSharedDevicePlugin": {"f:config": {}}}}
    current = live(
        {
            "ofedDriver": {"image": "doca-driver", "env": [{"name": "A", "value": "1"}]},
            "rdmaSharedDevicePlugin": {"config": "{}"},
        },
        owned,
    )
    action, reasons = decide(DESIRED, current)
    assert action == "update"
    assert reasons == ["no longer set: .spec.rdmaSharedDevicePlugin"]


def test_a_field_somebody_else_set_is_not_ours_to_remove():
    current = live(
        {
            "ofedDriver": {"image": "doca-driver", "env": [{"name": "A", "value": "1"}]},
            "nicFeatureDiscovery": {"image": "x"},
        },
        OWNED,
    )
    assert decide(DESIRED, current) == ("unchanged", [])


def test_an_object_never_applied_by_the_collection_is_applied_once():
    current = live(
        {"ofedDriver": {"image": "doca-driver", "env": [{"name": "A", "value": "1"}]}},
        OWNED,
        manager="kubectl",
    )
    assert decide(DESIRED, current) == ("update", ["not yet managed by gpudirect.rdma"])


class Adopting:
    """A cluster where kubectl applied the planned object: apply makes gpudirect.rdma a
    co-owner, as the API server does; patches are recorded."""

    def __init__(self):
        self.stored = live(DESIRED["spec"], OWNED, manager="kubectl")
        self.patches = []

    def get(self, api_version, kind, name, namespace=None):
        return self.stored

    def apply(self, obj, dry_run=False):
        entry = {"manager": "gpudirect.rdma", "operation": "Apply", "fieldsV1": OWNED}
        status = {"manager": "simulator", "operation": "Update", "subresource": "status"}
        fields = [*self.stored["metadata"]["managedFields"], entry, status]
        self.stored = {
            **self.stored,
            "metadata": {**self.stored["metadata"], "managedFields": fields},
        }
        return self.stored

    def patch(self, api_version, kind, name, namespace, body):
        self.patches.append(body)


def test_an_adopted_object_loses_the_other_managers_apply_claims_and_keeps_the_rest():
    cluster = Adopting()
    applier = Applier(cluster, check_mode=False)
    (after,) = applier.apply([DESIRED])
    (patch,) = cluster.patches
    kept = patch["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in kept] == [
        ("gpudirect.rdma", "Apply"),
        ("simulator", "Update"),
    ]
    assert after["metadata"]["managedFields"] == kept
    assert applier.results[0]["reasons"] == ["not yet managed by gpudirect.rdma"]


def test_lists_compare_item_by_item_and_keyed_fields_are_tracked():
    assert contains([{"a": 1, "b": 2}], [{"a": 1}])
    assert not contains([{"a": 1}, {"a": 2}], [{"a": 1}])
    desired = {"spec": {"items": [{"name": "x"}]}}
    fields = {"f:spec": {"f:items": {'k:{"name":"x"}': {".": {}}, 'k:{"name":"y"}': {".": {}}}}}
    assert stale_fields(
        {
            "metadata": {
                "managedFields": [
                    {"manager": "gpudirect.rdma", "operation": "Apply", "fieldsV1": fields}
                ]
            }
        },
        desired,
    ) == ['.spec.items[{"name":"y"}]']


def test_lookup_and_quantities():
    obj = {
        "status": {
            "conditions": [
                {"type": "Updating", "status": "False"},
                {"type": "Updated", "status": "True"},
            ],
            "allocatable": {"rdma/shared": "63"},
        }
    }
    assert lookup(obj, "status.conditions[?type=='Updated'] | [0].status") == "True"
    assert lookup(obj, "status.conditions[?type=='Degraded'] | [0].status") is MISSING
    assert lookup(obj, field_path(["status", "allocatable", "rdma/shared"])) == "63"
    assert (
        field_path(["status", "allocatable", "rdma/shared"]) == 'status.allocatable."rdma/shared"'
    )
    assert field_path("status.phase") == "status.phase"
    assert [quantity(v) for v in ("8", 3, "2Ki", "1k", "x", True)] == [8, 3, 2048, 1000, None, None]
    # Fractions and milli-units, which the hand-written parser this replaced could not read.
    assert [quantity(v) for v in ("1.5Gi", "500m")] == [1.5 * 2**30, 0.5]


class FakeCluster:
    """Answers get/list from a script of states, one per read of the named object."""

    def __init__(self, states):
        self.states = states
        self.reads = 0

    def get(self, api_version, kind, name, namespace=None):
        state = self.states[min(self.reads, len(self.states) - 1)]
        self.reads += 1
        return state

    def list(self, api_version, kind, namespace=None, label_selector=None):
        return [s for s in [self.get(api_version, kind, None)] if s]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def policy(state):
    return {"metadata": {"name": "nic-cluster-policy"}, "status": {"state": state}}


def gate(**kwargs):
    return Gate(
        name="NicClusterPolicy ready",
        api_version="mellanox.com/v1alpha1",
        kind="NicClusterPolicy",
        path="status.state",
        object_name="nic-cluster-policy",
        **kwargs,
    )


def test_wait_returns_as_soon_as_the_state_is_reached():
    clock = FakeClock()
    cluster = FakeCluster([None, policy("notReady"), policy("ready")])
    took = wait_for(
        cluster,
        [gate(equals="ready", hint="oc get ncp")],
        timeout=30,
        clock=clock,
        sleep=clock.sleep,
    )
    # Read at 0, after 0.2 s and after 0.4 s more (poll_intervals).
    assert took == {"NicClusterPolicy ready": 0.6}


def test_waits_read_quickly_at_first_then_once_a_second():
    pauses = poll_intervals()
    assert [next(pauses) for _read in range(7)] == [0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]


def test_wait_times_out_naming_the_gate_the_expectation_and_the_last_state():
    clock = FakeClock()
    with pytest.raises(GateTimeout) as raised:
        wait_for(
            FakeCluster([policy("notReady")]),
            [gate(equals="ready", hint="oc get ncp")],
            timeout=5,
            clock=clock,
            sleep=clock.sleep,
        )
    assert str(raised.value) == (
        "gate 'NicClusterPolicy ready' not reached after 5s: expected NicClusterPolicy "
        "nic-cluster-policy status.state to be 'ready'; last seen: NicClusterPolicy "
        "nic-cluster-policy status.state is 'notReady'. Look at: oc get ncp"
    )


def test_a_long_wait_says_every_interval_what_it_waits_for_and_what_it_sees():
    clock = FakeClock()
    lines = []
    with pytest.raises(GateTimeout):
        wait_for(
            FakeCluster([policy("notReady")]),
            [gate(equals="ready")],
            timeout=95,
            clock=clock,
            sleep=clock.sleep,
            progress=Progress(lines.append, every=30, clock=clock),
        )
    seen = "NicClusterPolicy nic-cluster-policy status.state is 'notReady'"
    assert lines == [
        f"waiting {s}s of 95s for gate 'NicClusterPolicy ready': {seen}" for s in (30, 60, 90)
    ]


def test_a_wait_met_early_or_with_progress_off_says_nothing():
    for states, every in (([None, policy("ready")], 30), ([policy("notReady")], 0)):
        clock, lines = FakeClock(), []
        with contextlib.suppress(GateTimeout):
            wait_for(
                FakeCluster(states),
                [gate(equals="ready")],
                timeout=95,
                clock=clock,
                sleep=clock.sleep,
                progress=Progress(lines.append, every=every, clock=clock),
            )
        assert lines == []


def test_a_deletion_that_takes_long_says_what_is_left():
    clock, lines = FakeClock(), []
    doomed = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in "ab"
    ]

    class Deleting:
        def delete(self, *_args):
            pass

        def get(self, api_version, kind, name, namespace=None):
            return {"metadata": {"name": name}} if clock.now < 65 else None

    with mock.patch("time.monotonic", clock):
        delete_and_wait(
            Deleting(),
            doomed,
            False,
            600,
            ["test"],
            sleep=clock.sleep,
            progress=Progress(lines.append, every=30, clock=clock),
        )
    assert lines == [
        "waiting 30s of 600s for Namespace a and 1 more to be deleted",
        "waiting 60s of 600s for Namespace a and 1 more to be deleted",
    ]


def test_a_fail_on_value_stops_at_once():
    clock = FakeClock()
    with pytest.raises(GateFailed, match="failed after 0s"):
        wait_for(
            FakeCluster([policy("Failed")]),
            [gate(equals="ready", fail_on=["Failed"])],
            timeout=600,
            clock=clock,
            sleep=clock.sleep,
        )


def test_gates_must_hold_in_the_same_read():
    """A pool reporting Updated before it rendered the new MachineConfig must not pass."""
    pool = [
        {
            "metadata": {"name": "worker"},
            "status": {
                "configuration": {"source": []},
                "conditions": [{"type": "Updated", "status": "True"}],
            },
        },
        {
            "metadata": {"name": "worker"},
            "status": {
                "configuration": {"source": [{"name": "99-x"}]},
                "conditions": [{"type": "Updated", "status": "False"}],
            },
        },
        {
            "metadata": {"name": "worker"},
            "status": {
                "configuration": {"source": [{"name": "99-x"}]},
                "conditions": [{"type": "Updated", "status": "True"}],
            },
        },
    ]

    clock = FakeClock()
    gates = [
        Gate(
            name="renders",
            api_version="v1",
            kind="MachineConfigPool",
            object_name="worker",
            path="status.configuration.source",
            includes=["99-x"],
        ),
        Gate(
            name="updated",
            api_version="v1",
            kind="MachineConfigPool",
            object_name="worker",
            path="status.conditions[?type=='Updated'] | [0].status",
            equals="True",
        ),
    ]
    cluster = FakeCluster(pool)
    took = wait_for(cluster, gates, timeout=30, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(0.6)  # the third read, 0.2 s and 0.4 s after the others
    assert took == {"updated": 0.0, "renders": 0.2}
    assert cluster.reads == 3  # both gates judge one read of the pool per poll


# -- OLM ---------------------------------------------------------------------------------------


class OlmCluster:
    """A dict-backed stand-in: objects by (kind, namespace, name), patches recorded."""

    def __init__(self, objects):
        self.objects = {
            (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects
        }
        self.patches = []

    def get(self, api_version, kind, name, namespace=None):
        return self.objects.get((kind, namespace, name))

    def list(self, api_version, kind, namespace=None, label_selector=None):
        return [o for (k, ns, _name), o in self.objects.items() if k == kind and ns == namespace]

    def patch(self, api_version, kind, name, namespace, body):
        self.patches.append((kind, namespace, name, body))


SUBSCRIPTION = {
    "kind": "Subscription",
    "metadata": {"name": "gpu-operator-certified", "namespace": "nvidia-gpu-operator"},
    "spec": {
        "name": "gpu-operator-certified",
        "installPlanApproval": "Manual",
        "startingCSV": "gpu-operator-certified.v26.3.3",
    },
}


def olm_cluster(plan_csvs, approved=False, installed=None):
    live = {
        **SUBSCRIPTION,
        "status": {
            "installPlanRef": {"name": "install-abc", "namespace": "nvidia-gpu-operator"},
            **({"installedCSV": installed} if installed else {}),
        },
    }
    plan = {
        "kind": "InstallPlan",
        "metadata": {"name": "install-abc", "namespace": "nvidia-gpu-operator"},
        "spec": {"approved": approved, "clusterServiceVersionNames": plan_csvs},
    }
    return OlmCluster([live, plan])


def test_manual_approval_approves_the_install_plan_of_starting_csv():
    cluster = olm_cluster(["gpu-operator-certified.v26.3.3"])
    assert approve_install_plan(cluster, SUBSCRIPTION, check_mode=False) == "install-abc"
    assert cluster.patches == [
        ("InstallPlan", "nvidia-gpu-operator", "install-abc", {"spec": {"approved": True}})
    ]


def test_manual_approval_refuses_an_install_plan_of_another_csv():
    cluster = olm_cluster(["gpu-operator-certified.v26.7.0"])
    with pytest.raises(
        OlmError,
        match="would install gpu-operator-certified.v26.7.0, not startingCSV "
        "gpu-operator-certified.v26.3.3; it was not approved",
    ):
        approve_install_plan(cluster, SUBSCRIPTION, check_mode=False)
    assert cluster.patches == []


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_next_csv_planned_after_an_installed_one_is_left_waiting_without_an_error(check_mode):
    """OLM plans the channel's next CSV as soon as a CSV is installed: after startingCSV the pin
    holds it; after another one, an upgrade is on its way (upgrade.yml approves its hops, and an
    interrupted walk leaves the next one planned), and preflight judges which CSV runs."""
    for installed in ("gpu-operator-certified.v26.3.3", "gpu-operator-certified.v25.10.1"):
        cluster = olm_cluster(["gpu-operator-certified.v26.7.2"], installed=installed)
        assert approve_install_plan(cluster, SUBSCRIPTION, check_mode=check_mode) is None
        assert cluster.patches == []


def test_manual_approval_writes_nothing_in_check_mode_or_when_approved():
    cluster = olm_cluster(["gpu-operator-certified.v26.3.3"])
    approve_install_plan(cluster, SUBSCRIPTION, check_mode=True)
    approved = olm_cluster(["gpu-operator-certified.v26.3.3"], approved=True)
    assert approve_install_plan(approved, SUBSCRIPTION, check_mode=False) is None
    assert cluster.patches == approved.patches == []


OUR_GROUP = {
    "kind": "OperatorGroup",
    "metadata": {"name": "openshift-nfd", "namespace": "openshift-nfd"},
}


def test_a_foreign_operator_group_stops_the_install():
    foreign = {"kind": "OperatorGroup", "metadata": {"name": "mine", "namespace": "openshift-nfd"}}
    with pytest.raises(
        OlmError, match="already has OperatorGroup mine, not created by gpudirect.rdma"
    ):
        check_operator_groups(OlmCluster([foreign]), OUR_GROUP, take_over=False)
    with pytest.raises(OlmError, match="OLM allows one OperatorGroup per namespace"):
        check_operator_groups(OlmCluster([foreign]), OUR_GROUP, take_over=True)


def test_our_own_or_a_taken_over_operator_group_is_fine():
    ours = {
        "kind": "OperatorGroup",
        "metadata": {
            "name": "openshift-nfd",
            "namespace": "openshift-nfd",
            "labels": {"app.kubernetes.io/managed-by": "gpudirect.rdma"},
        },
    }
    check_operator_groups(OlmCluster([ours]), OUR_GROUP, take_over=False)
    unlabelled = {
        "kind": "OperatorGroup",
        "metadata": {"name": "openshift-nfd", "namespace": "openshift-nfd"},
    }
    check_operator_groups(OlmCluster([unlabelled]), OUR_GROUP, take_over=True)
    with pytest.raises(OlmError):
        check_operator_groups(OlmCluster([unlabelled]), OUR_GROUP, take_over=False)


class FlappingCluster:
    """A NicClusterPolicy whose state alternates every `period` seconds of the fake clock."""

    def __init__(self, clock, period, ready_first=True):
        self.clock = clock
        self.period = period
        self.ready_first = ready_first

    def get(self, api_version, kind, name, namespace=None):
        ready = int(self.clock() // self.period) % 2 == (0 if self.ready_first else 1)
        return policy("ready" if ready else "notReady")


def test_a_flapping_state_passes_at_once_without_stable_for():
    clock = FakeClock()
    took = wait_for(
        FlappingCluster(clock, 2),
        [gate(equals="ready")],
        timeout=30,
        clock=clock,
        sleep=clock.sleep,
    )
    assert took == {"NicClusterPolicy ready": 0.0}
    assert clock.now == 0


def test_stable_for_needs_the_gate_met_read_after_read_and_times_out_on_flapping():
    clock = FakeClock()
    with pytest.raises(GateTimeout) as raised:
        wait_for(
            FlappingCluster(clock, 2),
            [gate(equals="ready", hint="oc get ncp")],
            timeout=12,
            clock=clock,
            sleep=clock.sleep,
            stable_for=4,
        )
    text = str(raised.value)
    assert clock.now == 12  # ends at the timeout, not later
    assert "gate 'NicClusterPolicy ready' not stable after 12s" in text
    assert "in every read for 4s" in text
    assert "held together for 1s at most" in text
    assert (
        "last seen not met: NicClusterPolicy nic-cluster-policy status.state is 'notReady'" in text
    )
    assert text.endswith("Look at: oc get ncp")
    assert raised.value.report()["seen"].endswith("'notReady'")


def test_a_flapping_state_that_is_not_ready_at_the_timeout_is_reported_as_unstable():
    clock = FakeClock()
    with pytest.raises(GateTimeout) as raised:
        wait_for(
            FlappingCluster(clock, 2),
            [gate(equals="ready")],
            timeout=10,
            clock=clock,
            sleep=clock.sleep,
            stable_for=4,
        )
    assert clock.now == 10
    assert "not stable after 10s" in str(raised.value)
    assert str(raised.value).endswith("status.state is 'notReady'.")


def test_stable_for_passes_once_the_state_holds_long_enough():
    clock = FakeClock()
    cluster = FakeCluster([policy("ready"), policy("notReady")] + [policy("ready")] * 10)
    took = wait_for(
        cluster, [gate(equals="ready")], timeout=30, clock=clock, sleep=clock.sleep, stable_for=3
    )
    assert took == {"NicClusterPolicy ready": 0.0}
    # Read at 0, 0.2 (notReady), 0.6, 1.4, 2.4, 3.4, 4.4: met from 0.6, held 3 s at 4.4.
    assert clock.now == pytest.approx(4.4)


def test_an_api_server_that_stops_answering_is_reported_with_the_request_and_the_server():
    import socket

    from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import api
    from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
        ApiFailure,
        Cluster,
    )

    with socket.socket() as taken:  # a port nothing listens on once closed
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
    cluster = Cluster.__new__(Cluster)
    cluster._server, cluster._resources = None, {}
    cluster.api = api.Api(api.Settings(server=f"https://127.0.0.1:{port}", verify=False))
    with pytest.raises(ApiFailure) as raised:
        cluster.get("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
    text = str(raised.value)
    assert text.startswith(
        f"the API server https://127.0.0.1:{port} did not answer while reading NicClusterPolicy "
        "nic-cluster-policy: [Errno 111] Connection refused."
    )
    assert "run the playbook again" in text
    assert "Traceback" not in text and "object at 0x" not in text


def test_only_connection_errors_are_taken_for_an_api_server_that_does_not_answer():
    from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
        _connection_error,
    )

    assert _connection_error(ConnectionRefusedError(111, "Connection refused"))
    # delete_and_wait's own timeout is about objects, not about the connection.
    assert not _connection_error(TimeoutError("deleted objects still exist after 5s"))
    assert not _connection_error(ValueError("a bug"))


class Discovery:
    """api.Api as far as Cluster's lookups use it: discovery documents by group version, and
    objects by path; every request recorded."""

    server = "https://127.0.0.1:6443"

    def __init__(self, documents: dict, objects: dict | None = None):
        self.documents = documents  # apiVersion -> its APIResourceList's resources
        self.objects = objects or {}  # path -> object
        self.requests: list[str] = []

    def request(self, method, path, **_kwargs):
        from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.api import ApiError

        self.requests.append(f"{method} {path}")
        version = path.removeprefix("/apis/").removeprefix("/api/")
        if version in self.documents:
            return {"resources": self.documents[version]}
        if path in self.objects:
            return self.objects[path]
        if path.startswith(tuple(f"/apis/{v}/" for v in self.documents)):
            name = path.rsplit("/", 1)[-1]
            status = {"kind": "Status", "reason": "NotFound", "details": {"name": name}}
            raise ApiError(404, "Not Found", json.dumps(status).encode(), method, path)
        raise ApiError(404, "Not Found", b"404 page not found\n", method, path)


def cluster_over(discovery: Discovery) -> Cluster:
    cluster = Cluster.__new__(Cluster)
    cluster.api, cluster._resources, cluster._server = discovery, {}, None
    return cluster


def test_a_kind_of_the_table_is_requested_without_discovery():
    discovery = Discovery({})
    cluster = cluster_over(discovery)
    resource = cluster.resource("operators.coreos.com/v1alpha1", "Subscription")
    assert resource.path("nvidia-gpu-operator", "gpu-operator-certified") == (
        "/apis/operators.coreos.com/v1alpha1/namespaces/nvidia-gpu-operator/subscriptions/"
        "gpu-operator-certified"
    )
    assert cluster.resource("v1", "Node").path(None, "worker-0") == "/api/v1/nodes/worker-0"
    # Cluster-scoped: a namespace given is not part of the path.
    assert cluster.resource("nvidia.com/v1", "ClusterPolicy").path("x") == (
        "/apis/nvidia.com/v1/clusterpolicies"
    )
    assert discovery.requests == []


def test_a_kind_not_in_the_table_is_discovered_once_per_group_version():
    pods = {"name": "nvidiadrivers", "kind": "NVIDIADriver", "namespaced": False}
    status = {"name": "nvidiadrivers/status", "kind": "NVIDIADriver", "namespaced": False}
    discovery = Discovery({"nvidia.com/v1": [status, pods]})
    cluster = cluster_over(discovery)
    assert cluster.resource("nvidia.com/v1", "NVIDIADriver").plural == "nvidiadrivers"
    assert cluster.resource("nvidia.com/v1", "NVIDIADriver").namespaced is False
    with pytest.raises(NotServed, match="Absent"):  # a kind its served group lacks
        cluster.resource("nvidia.com/v1", "Absent")
    with pytest.raises(NotServed, match="Other"):  # a group version not served at all
        cluster.resource("example.com/v1", "Other")
    assert discovery.requests == ["GET /apis/nvidia.com/v1", "GET /apis/example.com/v1"]


def test_a_404_tells_an_absent_object_from_a_kind_not_served():
    discovery = Discovery({"nvidia.com/v1": []})
    cluster = cluster_over(discovery)
    # The group is served, the object is not there: the server's Status names it.
    assert cluster.get("nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy") is None
    cluster.delete("nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy")  # gone is asked
    # A plain '404 page not found': the operator that serves the kind is not installed.
    with pytest.raises(NotServed, match="NicClusterPolicy"):
        cluster.get("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
    with pytest.raises(NotServed):
        cluster.list("mellanox.com/v1alpha1", "NicClusterPolicy")
    with pytest.raises(NotServed):
        cluster.delete("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
    assert list_if_served(cluster, "mellanox.com/v1alpha1", "NicClusterPolicy") is None


class AdmissionRefusal(Exception):
    """What the client raises when an admission webhook denies a request (403)."""

    status = 403
    reason = "Forbidden"
    body = (
        '{"kind":"Status","message":"admission webhook \\"vnicnodepolicy.kb.io\\" denied the '
        "request: NicClusterPolicy already defines ofedDriver; NicNodePolicy 'a100' cannot also "
        'define it","reason":"Forbidden","code":403}'
    )


class Admitting:
    """A cluster whose admission refuses every apply of the NicNodePolicy kind."""

    def __init__(self):
        self.applied = []

    def get(self, api_version, kind, name, namespace=None):
        return None

    def apply(self, obj, dry_run=False):
        if obj["kind"] == "NicNodePolicy":
            raise AdmissionRefusal()
        self.applied.append((obj["kind"], dry_run))
        return obj


NODE_POLICY = {**DESIRED, "kind": "NicNodePolicy", "metadata": {"name": "a100"}}


def test_an_admission_refusal_in_check_mode_is_reported_on_the_object_not_fatal():
    applier = Applier(Admitting(), check_mode=True)
    applier.apply([DESIRED, NODE_POLICY])
    assert [r["action"] for r in applier.results] == ["created", "created"]
    (reason,) = applier.results[1]["reasons"]
    assert reason.startswith(
        "an admission webhook refuses the dry run against the cluster as it is now, before the "
        'changes the run makes first (admission webhook "vnicnodepolicy.kb.io" denied the request'
    )


def test_an_admission_refusal_of_a_real_apply_fails_naming_the_object():
    with pytest.raises(Refused, match=r"the API server refused NicNodePolicy a100: 403 Forbidden"):
        Applier(Admitting(), check_mode=False).apply([NODE_POLICY])
