"""Diagnostics without a cluster: what is read (and what never is), how objects are trimmed, the
summary with the failing gate's objects, reads that fail, an API server out of reach, the archive;
and the gate a failed wait carries for it."""

from __future__ import annotations

import json
import stat
import tarfile
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.api import Unreachable
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed, server_of
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.diagnostics import (
    EVERYWHERE,
    LABELLED,
    MANAGED_BY,
    SUMMARY,
    collect,
    file_name,
    gather,
    kinds_to_read,
    write_archive,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    Gate,
    GateFailed,
    GateTimeout,
    wait_for,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import managed_kinds

WHEN = datetime(2025, 6, 1, 12, 0, 0, tzinfo=timezone.utc)  # noqa: UP017 - as the engine
LABELS = {"app.kubernetes.io/managed-by": "gpudirect.rdma"}


class ApiError(Exception):
    """Shaped like kubernetes' ApiException: a status, a reason and a JSON body."""

    def __init__(self, status, reason, message):
        super().__init__(f"({status}) {reason}")
        self.status = status
        self.reason = reason
        self.body = json.dumps({"kind": "Status", "message": message})


def refused() -> Unreachable:
    """What the connection raises when nothing answers: no HTTP status, the server it tried."""
    return Unreachable("https://api.example.com:6443", "[Errno 111] Connection refused")


def obj(api_version, kind, name, namespace=None, labels=None, **fields):
    metadata = {"name": name, "labels": labels or {}, "managedFields": [{"manager": "x"}]}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


class FakeCluster:
    """Lists, gets and logs from a list of objects, recording every request; kinds can be made
    unserved, reads forbidden, logs unavailable."""

    def __init__(self, objects, not_served=(), forbidden=(), logs=None, log_errors=()):
        self.objects = objects
        self.not_served = set(not_served)
        self.forbidden = set(forbidden)
        self.logs = logs or {}
        self.log_errors = set(log_errors)
        self.requests = []

    def _match(self, item, kind, namespace, selector):
        metadata = item["metadata"]
        if item["kind"] != kind:
            return False
        if namespace is not None and metadata.get("namespace") != namespace:
            return False
        if selector:
            key, _equals, value = selector.partition("=")
            return (metadata.get("labels") or {}).get(key) == value
        return True

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.requests.append(("list", kind, namespace, label_selector))
        if kind in self.not_served:
            raise NotServed(api_version, kind)
        if (kind, namespace) in self.forbidden:
            raise ApiError(403, "Forbidden", f"{kind.lower()}s is forbidden")
        return [o for o in self.objects if self._match(o, kind, namespace, label_selector)]

    def get(self, api_version, kind, name, namespace=None):
        self.requests.append(("get", kind, namespace, name))
        found = [
            o for o in self.list(api_version, kind, namespace) if o["metadata"]["name"] == name
        ]
        return found[0] if found else None

    def log(self, name, namespace, container, tail_lines=None, previous=False):
        self.requests.append(("log", name, namespace, container, tail_lines, previous))
        if (name, container) in self.log_errors:
            raise ApiError(400, "Bad Request", f"container {container} is waiting to start")
        lines = self.logs.get((name, container, previous), "").splitlines()
        return "\n".join(lines[-tail_lines:]) + "\n" if tail_lines else "\n".join(lines)


NS = "nvidia-network-operator"


def cluster_objects():
    return [
        obj("v1", "Namespace", NS, labels=LABELS),
        obj("v1", "Namespace", "unrelated"),
        obj(
            "operators.coreos.com/v1alpha1",
            "ClusterServiceVersion",
            "nvidia-network-operator.v26.4.1",
            NS,
            spec={
                "version": "26.4.1",
                "install": {"spec": {"deployments": ["huge"]}},
                "icon": [{"base64data": "x" * 100}],
                "customresourcedefinitions": {"owned": ["huge"]},
                "relatedImages": [{"name": "driver", "image": "doca-driver"}],
            },
            status={"phase": "Failed", "reason": "InstallComponentFailed", "message": "boom"},
        ),
        {
            **obj(
                "operators.coreos.com/v1alpha1",
                "ClusterServiceVersion",
                "elsewhere.v1",
                "unrelated",
            )
        },
        obj(
            "operators.coreos.com/v1alpha1",
            "InstallPlan",
            "install-abc",
            NS,
            status={
                "phase": "Complete",
                "plan": [
                    {
                        "resolving": "nvidia-network-operator.v26.4.1",
                        "status": "Created",
                        "resource": {
                            "kind": "ClusterServiceVersion",
                            "name": "n",
                            "manifest": "{}",
                        },
                    }
                ],
            },
        ),
        obj("operators.coreos.com/v1alpha1", "Subscription", "mine", NS),  # not labelled
        obj(
            "operators.coreos.com/v1alpha1",
            "CatalogSource",
            "certified-operators",
            "openshift-marketplace",
        ),
        obj(
            "mellanox.com/v1alpha1",
            "NicClusterPolicy",
            "nic-cluster-policy",
            labels=LABELS,
            status={
                "state": "notReady",
                "appliedStates": [{"name": "state-ofed", "state": "notReady"}],
            },
        ),
        obj("nvidia.com/v1", "ClusterPolicy", "somebody-elses"),  # not labelled, read anyway
        obj(
            "v1",
            "Node",
            "worker-0",
            labels={"feature.node.kubernetes.io/pci-15b3.present": "true"},
            status={
                "allocatable": {"rdma/rdma_shared_device_eth": "63"},
                "capacity": {"cpu": "8"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "images": [{"names": ["a"] * 50}],
            },
        ),
        obj(
            "v1",
            "Pod",
            "operator-0",
            NS,
            spec={"initContainers": [{"name": "init"}], "containers": [{"name": "manager"}]},
            status={"containerStatuses": [{"name": "manager", "restartCount": 2}]},
        ),
        obj(
            "v1",
            "Pod",
            "gpudirect-rdma-verify-client",
            "default",
            labels={**LABELS, "gpudirect.rdma/component": "verify"},
            spec={"containers": [{"name": "perftest"}]},
        ),
        obj("v1", "Pod", "someone-else", "default", spec={"containers": [{"name": "c"}]}),
        obj(
            "v1",
            "Event",
            "late",
            NS,
            lastTimestamp="2025-06-01T11:59:00Z",
            type="Warning",
            reason="BackOff",
            involvedObject={"kind": "Pod", "name": "operator-0"},
            message="Back-off restarting failed container",
        ),
        obj(
            "v1",
            "Event",
            "early",
            NS,
            lastTimestamp="2025-06-01T11:00:00Z",
            type="Normal",
            reason="Pulled",
            involvedObject={"kind": "Pod", "name": "operator-0"},
            message="pulled",
        ),
        obj("v1", "Secret", "pull-secret", NS, labels=LABELS, data={"token": "c2VjcmV0"}),
    ]


def files_of(gathered):
    return {
        path: yaml.safe_load(text) if path.endswith(".yaml") else text
        for path, text in gathered.files.items()
    }


@pytest.fixture
def cluster():
    return FakeCluster(
        cluster_objects(),
        not_served={"SriovNetworkNodeState", "IPPool"},
        logs={
            ("operator-0", "manager", False): "\n".join(f"line {i}" for i in range(500)),
            ("operator-0", "manager", True): "panic: before the restart",
            ("gpudirect-rdma-verify-client", "perftest", False): "BW average 42.5",
        },
        log_errors={("operator-0", "init")},
    )


def test_the_collections_objects_and_what_explains_them_are_read(cluster):
    gathered = gather(
        cluster, namespaces=["default"], log_lines=200, server="https://api", when=WHEN
    )
    files = files_of(gathered)
    assert list(files)[0] == SUMMARY
    assert [n["metadata"]["name"] for n in files["namespaces.yaml"]] == [NS]
    assert gathered.namespaces == ["default", NS]
    # Namespaced kinds come from the namespaces read only; policies from everywhere.
    assert [c["metadata"]["name"] for c in files["clusterserviceversions.yaml"]] == [
        "nvidia-network-operator.v26.4.1"
    ]
    assert [s["metadata"]["name"] for s in files["subscriptions.yaml"]] == ["mine"]
    assert [c["metadata"]["name"] for c in files["catalogsources.yaml"]] == ["certified-operators"]
    assert [p["metadata"]["name"] for p in files["clusterpolicies.yaml"]] == ["somebody-elses"]
    assert files["nicclusterpolicies.yaml"][0]["status"]["state"] == "notReady"
    assert sorted(p["metadata"]["name"] for p in files["pods.yaml"]) == [
        "gpudirect-rdma-verify-client",
        "operator-0",
        "someone-else",
    ]
    # Never a Secret, not even one with the collection's label.
    assert not [r for r in cluster.requests if "Secret" in r]
    assert "secrets.yaml" not in files


def test_objects_are_trimmed_to_what_explains_a_failure(cluster):
    files = files_of(gather(cluster, log_lines=0, when=WHEN))
    (csv,) = files["clusterserviceversions.yaml"]
    assert set(csv["spec"]) == {"version", "relatedImages"}
    assert csv["status"] == {
        "phase": "Failed",
        "reason": "InstallComponentFailed",
        "message": "boom",
    }
    assert "managedFields" not in csv["metadata"]
    (plan,) = files["installplans.yaml"]
    assert plan["status"]["plan"] == [
        {
            "resolving": "nvidia-network-operator.v26.4.1",
            "status": "Created",
            "resource": {"kind": "ClusterServiceVersion", "name": "n"},
        }
    ]
    (node,) = files["nodes.yaml"]
    assert node["metadata"]["labels"] == {"feature.node.kubernetes.io/pci-15b3.present": "true"}
    assert node["status"]["allocatable"] == {"rdma/rdma_shared_device_eth": "63"}
    assert set(node["status"]) == {"allocatable", "capacity", "conditions"}
    assert [(e["time"], e["reason"], e["object"]) for e in files["events.yaml"]] == [
        ("2025-06-01T11:00:00Z", "Pulled", "Pod operator-0"),
        ("2025-06-01T11:59:00Z", "BackOff", "Pod operator-0"),
    ]


def test_logs_keep_the_last_lines_and_a_log_that_cannot_be_read_is_noted(cluster):
    gathered = gather(cluster, log_lines=200, when=WHEN)
    files = files_of(gathered)
    manager = files["logs/nvidia-network-operator/operator-0/manager.log"].splitlines()
    assert (len(manager), manager[0], manager[-1]) == (200, "line 300", "line 499")
    assert files["logs/nvidia-network-operator/operator-0/manager.previous.log"] == (
        "panic: before the restart\n"
    )
    assert "logs/default/gpudirect-rdma-verify-client/perftest.log" in files
    summary = files[SUMMARY]
    assert {
        "what": "log of nvidia-network-operator/operator-0 container init",
        "error": "400 Bad Request: container init is waiting to start",
    } in summary["unreadable"]
    assert {"file": "logs/nvidia-network-operator/operator-0/manager.log", "lines": 200} in summary[
        "files"
    ]


def test_logs_stop_when_their_time_is_spent(cluster):
    ticks = iter(range(1000))
    gathered = gather(cluster, log_lines=10, when=WHEN, log_budget=2, clock=lambda: next(ticks))
    logs = [path for path in gathered.files if path.startswith("logs/")]
    assert len(logs) == 1
    assert any("were spent" in item["error"] for item in gathered.unreadable)


def test_kinds_not_served_and_reads_refused_are_noted_and_the_rest_goes_on():
    cluster = FakeCluster(
        cluster_objects(),
        not_served={"NicClusterPolicy", "SriovNetworkNodeState"},
        forbidden={("Event", NS)},
    )
    summary = files_of(gather(cluster, log_lines=0, when=WHEN))[SUMMARY]
    assert "NicClusterPolicy (mellanox.com/v1alpha1)" in summary["not_served"]
    assert "SriovNetworkNodeState (sriovnetwork.openshift.io/v1)" in summary["not_served"]
    assert summary["unreadable"] == [
        {
            "what": f"Event (v1) in {NS}",
            "error": "403 Forbidden: events is forbidden",
        }
    ]
    assert "nodes.yaml" in [entry["file"] for entry in summary["files"]]
    assert "nicclusterpolicies.yaml" not in [entry["file"] for entry in summary["files"]]


GATE = {
    "gate": "NicClusterPolicy ready",
    "api_version": "mellanox.com/v1alpha1",
    "kind": "NicClusterPolicy",
    "name": "nic-cluster-policy",
    "namespace": None,
    "label_selector": None,
    "path": "status.state",
    "expected": "'ready'",
    "seen": "NicClusterPolicy nic-cluster-policy status.state is 'notReady'",
    "objects": [
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicClusterPolicy",
            "name": "nic-cluster-policy",
        }
    ],
}


def test_the_summary_names_the_failure_and_the_gates_objects_with_their_status(cluster):
    failure = {
        "task": "Wait for the NicClusterPolicy",
        "message": "gate ... not reached",
        "gate": GATE,
    }
    files = files_of(gather(cluster, failure=failure, log_lines=0, server="https://api", when=WHEN))
    summary = files[SUMMARY]
    assert list(summary)[:6] == ["when", "api_server", "reachable", "failure", "gate", "namespaces"]
    assert summary["when"] == "2025-06-01T12:00:00Z"
    assert summary["failure"] == {
        "task": "Wait for the NicClusterPolicy",
        "message": "gate ... not reached",
    }
    gate = summary["gate"]
    assert (gate["gate"], gate["path"], gate["expected"], gate["seen"]) == (
        "NicClusterPolicy ready",
        "status.state",
        "'ready'",
        "NicClusterPolicy nic-cluster-policy status.state is 'notReady'",
    )
    assert "label_selector" not in gate
    assert gate["objects"] == [
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicClusterPolicy",
            "name": "nic-cluster-policy",
            "exists": True,
            "status": {
                "state": "notReady",
                "appliedStates": [{"name": "state-ofed", "state": "notReady"}],
            },
        }
    ]
    assert [o["metadata"]["name"] for o in files["gate.yaml"]] == ["nic-cluster-policy"]
    assert [entry["file"] for entry in summary["files"]][:2] == [SUMMARY, "gate.yaml"]


def test_a_gate_whose_object_never_existed_is_read_again_by_name():
    failure = {
        "task": "Wait",
        "gate": {
            **GATE,
            "kind": "ClusterPolicy",
            "api_version": "nvidia.com/v1",
            "name": "gpu-cluster-policy",
            "objects": [],
        },
    }
    summary = files_of(gather(FakeCluster([]), failure=failure, log_lines=0, when=WHEN))[SUMMARY]
    assert summary["gate"]["objects"] == [
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "name": "gpu-cluster-policy",
            "exists": False,
        }
    ]


def test_a_selector_gate_without_objects_lists_what_matches_now():
    nodes = [obj("v1", "Node", f"worker-{i}", labels={"gpu": "true"}) for i in range(2)]
    failure = {
        "gate": {
            "gate": "nodes advertise",
            "api_version": "v1",
            "kind": "Node",
            "label_selector": "gpu=true",
            "objects": [],
        }
    }
    summary = files_of(gather(FakeCluster(nodes), failure=failure, log_lines=0, when=WHEN))[SUMMARY]
    assert [o["name"] for o in summary["gate"]["objects"]] == ["worker-0", "worker-1"]


def test_an_api_server_out_of_reach_still_gives_a_summary_saying_so():
    class Unreachable(FakeCluster):
        def list(self, *args, **kwargs):
            raise refused()

    gathered = gather(
        Unreachable([]), failure={"task": "t", "message": "m", "gate": GATE}, when=WHEN
    )
    assert list(gathered.files) == [SUMMARY]
    summary = yaml.safe_load(gathered.files[SUMMARY])
    assert summary["reachable"] is False
    assert summary["api_server"] == "https://api.example.com:6443"
    assert summary["error"].startswith(
        "the API server could not be reached; nothing was read from it: Unreachable: "
        "[Errno 111] Connection refused"
    )
    assert summary["gate"]["objects"] == GATE["objects"]  # as the failure named them


def test_no_connection_at_all_gives_a_summary_with_the_error():
    gathered = gather(None, error="ConfigException: no kubeconfig", when=WHEN)
    summary = yaml.safe_load(gathered.files[SUMMARY])
    assert summary["error"].endswith("ConfigException: no kubeconfig")
    assert summary["failure"] == "none: gathered on demand"
    assert server_of(refused()) == "https://api.example.com:6443"
    assert server_of(ValueError()) is None


def test_the_archive_holds_the_summary_first_and_is_for_its_owner_only(cluster, tmp_path):
    dest = tmp_path / "new" / "folder"
    result = collect(cluster, str(dest), log_lines=5, server="https://api", when=WHEN)
    archive = dest / "gpudirect-rdma-diagnostics-20250601T120000Z.tar.gz"
    assert result["archive"] == str(archive)
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        summary = yaml.safe_load(tar.extractfile(names[0]))
    assert names[0] == "gpudirect-rdma-diagnostics-20250601T120000Z/summary.yaml"
    assert [n.split("/", 1)[1] for n in names] == result["files"]
    assert summary["api_server"] == "https://api"
    assert result["error"] is None
    assert result["not_served"] == [
        "SriovNetworkNodeState (sriovnetwork.openshift.io/v1)",
        "IPPool (nv-ipam.nvidia.com/v1alpha1)",
    ]
    again = write_archive({SUMMARY: "x: 1\n"}, str(dest), WHEN)
    assert again.endswith("gpudirect-rdma-diagnostics-20250601T120000Z-1.tar.gz")
    assert [p.name for p in dest.iterdir() if p.name.startswith(".")] == []
    # The newest archive under a fixed name, beside the dated ones.
    latest = dest / "gpudirect-rdma-diagnostics-latest.tar.gz"
    assert result["latest"] == str(latest) and latest.resolve() == archive.resolve()
    later = collect(cluster, str(dest), log_lines=5, server="https://api", when=WHEN)
    assert later["archive"].endswith("-2.tar.gz")
    assert latest.resolve() == Path(later["archive"]).resolve()


def test_runs_writing_in_the_same_second_each_keep_an_archive_of_their_own(tmp_path):
    """Two jobs of one project, writing into the same folder at once (threads here, processes
    there): neither's partial file nor its name is the other's."""
    dest = tmp_path / "out"
    barrier = threading.Barrier(8)

    def write(number: int) -> str:
        barrier.wait()
        return write_archive({SUMMARY: f"run: {number}\n"}, str(dest), WHEN)

    with ThreadPoolExecutor(max_workers=8) as pool:
        archives = list(pool.map(write, range(8)))
    assert len(set(archives)) == 8, archives
    runs = set()
    for archive in archives:
        assert stat.S_IMODE(Path(archive).stat().st_mode) == 0o600
        with tarfile.open(archive) as tar:
            (member,) = tar.getmembers()
            runs.add(yaml.safe_load(tar.extractfile(member))["run"])
    assert runs == set(range(8))
    assert [p.name for p in dest.iterdir() if p.name.startswith(".")] == []


def test_a_failed_write_leaves_neither_its_name_nor_a_partial_file(tmp_path, monkeypatch):
    dest = tmp_path / "out"

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tarfile, "open", broken)
    with pytest.raises(OSError, match="No space left"):
        write_archive({SUMMARY: "x: 1\n"}, str(dest), WHEN)
    assert list(dest.iterdir()) == []


def test_nothing_read_writes_no_archive_and_says_why(tmp_path):
    result = collect(None, str(tmp_path / "out"), server="https://api", error="connection refused")
    assert (result["archive"], result["latest"]) == (None, None)
    assert result["error"] == (
        "the API server could not be reached; nothing was read from it: connection refused"
    )
    assert not (tmp_path / "out").exists()


def test_every_managed_kind_is_read_and_never_a_secret():
    read = {(api_version, kind): scope for api_version, kind, scope in kinds_to_read()}
    for api_version, kind in managed_kinds():
        # The registry pull Secret is the collection's too, and still never read.
        assert ((api_version, kind) in read) == (kind != "Secret"), kind
    assert not [kind for _api_version, kind in read if kind == "Secret"]
    assert read[("mellanox.com/v1alpha1", "NicClusterPolicy")] == EVERYWHERE
    assert read[("v1", "Namespace")] == LABELLED
    assert [file_name(k) for k in ("NicClusterPolicy", "NodeFeatureDiscovery", "IPPool")] == [
        "nicclusterpolicies.yaml",
        "nodefeaturediscoveries.yaml",
        "ippools.yaml",
    ]


def test_the_label_selector_is_the_collections():
    assert MANAGED_BY == "app.kubernetes.io/managed-by=gpudirect.rdma"


# -- the gate a failed wait carries ------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_a_timeout_carries_the_gate_and_the_objects_read_last():
    policy = obj(
        "mellanox.com/v1alpha1",
        "NicClusterPolicy",
        "nic-cluster-policy",
        status={"state": "notReady"},
    )
    gate = Gate(
        name="NicClusterPolicy ready",
        api_version="mellanox.com/v1alpha1",
        kind="NicClusterPolicy",
        path="status.state",
        equals="ready",
        object_name="nic-cluster-policy",
    )
    clock = Clock()
    with pytest.raises(GateTimeout) as raised:
        wait_for(FakeCluster([policy]), [gate], timeout=3, clock=clock, sleep=clock.sleep)
    assert raised.value.report() == {
        "gate": "NicClusterPolicy ready",
        "api_version": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "name": "nic-cluster-policy",
        "namespace": None,
        "label_selector": None,
        "path": "status.state",
        "expected": "'ready'",
        "seen": "NicClusterPolicy nic-cluster-policy status.state is 'notReady'",
        "objects": [
            {
                "apiVersion": "mellanox.com/v1alpha1",
                "kind": "NicClusterPolicy",
                "name": "nic-cluster-policy",
            }
        ],
    }
    assert str(raised.value).startswith("gate 'NicClusterPolicy ready' not reached after 3s")


def test_a_failed_gate_over_a_selector_names_every_object_it_read():
    pods = [
        obj("v1", "Pod", name, "default", labels={"role": "server"}, status={"phase": phase})
        for name, phase in (("server-0", "Running"), ("server-1", "Failed"))
    ]
    gate = Gate(
        name="servers running",
        api_version="v1",
        kind="Pod",
        path="status.phase",
        equals="Running",
        fail_on=["Failed"],
        namespace="default",
        label_selector="role=server",
    )
    clock = Clock()
    with pytest.raises(GateFailed) as raised:
        wait_for(FakeCluster(pods), [gate], timeout=30, clock=clock, sleep=clock.sleep)
    report = raised.value.report()
    assert (report["label_selector"], report["name"], report["seen"]) == (
        "role=server",
        None,
        "Pod server-1 status.phase is 'Failed'",
    )
    assert report["objects"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "server-0", "namespace": "default"},
        {"apiVersion": "v1", "kind": "Pod", "name": "server-1", "namespace": "default"},
    ]
