"""Reads (k8s/reads.py): one module run's reads, each kind listed once, against a cluster that
counts its requests."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.reads import (
    OWNED,
    PREFETCH_CONNECTIONS,
    Reads,
)

NAD = ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy")
SECRET = ("v1", "Secret")
CSV = ("operators.coreos.com/v1alpha1", "ClusterServiceVersion")
OURS = {MANAGED_BY_LABEL: MANAGED_BY}


def item(name: str, namespace: str | None = None, labels: dict | None = None) -> dict:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}}


class Counting:
    """A cluster of a few objects per kind, each request kept (verb, kind, namespace, selector)."""

    server = "https://cluster.invalid"

    def __init__(self, objects: dict[tuple, list[dict]], not_served=()):
        self.objects = objects
        self.not_served = set(not_served)
        self.requests: list[tuple] = []

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.requests.append(("list", kind, namespace, label_selector))
        if (api_version, kind) in self.not_served:
            raise NotServed(api_version, kind)
        found = self.objects.get((api_version, kind), [])
        if namespace:
            found = [o for o in found if o["metadata"]["namespace"] == namespace]
        if label_selector == OWNED:
            found = [o for o in found if o["metadata"]["labels"].get(MANAGED_BY_LABEL)]
        return [dict(o) for o in found]

    def get(self, api_version, kind, name, namespace=None):
        self.requests.append(("get", kind, namespace, name))
        for obj in self.objects.get((api_version, kind), []):
            if (obj["metadata"]["name"], obj["metadata"]["namespace"]) == (name, namespace):
                return dict(obj)
        return None

    def apply(self, obj, dry_run=False):
        self.requests.append(("apply", obj["kind"], None, obj["metadata"]["name"]))
        return obj


def test_a_kind_is_listed_once_and_answers_every_later_list_and_get():
    cluster = Counting({POLICY: [item("nic-cluster-policy", labels=OURS), item("theirs")]})
    reads = Reads(cluster)
    assert [o["metadata"]["name"] for o in reads.list(*POLICY)] == ["nic-cluster-policy", "theirs"]
    assert reads.get(*POLICY, "theirs")["kind"] == "NicClusterPolicy"
    assert reads.get(*POLICY, "missing") is None
    assert [o["metadata"]["name"] for o in reads.list(*POLICY, label_selector=OWNED)] == [
        "nic-cluster-policy"
    ]
    assert cluster.requests == [("list", "NicClusterPolicy", None, None)]


def test_a_get_of_a_managed_kind_lists_the_collections_objects_then_asks_for_the_rest_by_name():
    cluster = Counting({POLICY: [item("nic-cluster-policy", labels=OURS), item("theirs")]})
    reads = Reads(cluster)
    assert reads.get(*POLICY, "nic-cluster-policy") is not None
    assert reads.get(*POLICY, "theirs") is not None
    assert reads.get(*POLICY, "theirs") is not None
    assert cluster.requests == [
        ("list", "NicClusterPolicy", None, OWNED),
        ("get", "NicClusterPolicy", None, "theirs"),
    ]


def test_the_networks_of_a_namespace_are_one_list_and_a_secret_is_never_listed():
    networks = [item(f"rdma-rail-{i}", "gpudirect-rdma") for i in range(8)]
    cluster = Counting({NAD: [*networks, item("other", "elsewhere")], SECRET: []})
    reads = Reads(cluster)
    found = [reads.get(*NAD, f"rdma-rail-{i}", "gpudirect-rdma") for i in range(8)]
    assert [o["metadata"]["name"] for o in found] == [f"rdma-rail-{i}" for i in range(8)]
    assert reads.get(*NAD, "rdma-rail-9", "gpudirect-rdma") is None
    assert reads.get(*NAD, "other", "elsewhere") is not None
    assert reads.get(*SECRET, "pull", "gpudirect-rdma") is None
    assert cluster.requests == [
        ("list", "NetworkAttachmentDefinition", "gpudirect-rdma", None),
        ("list", "NetworkAttachmentDefinition", "elsewhere", None),
        ("get", "Secret", "gpudirect-rdma", "pull"),
    ]


def test_the_csvs_of_a_namespace_are_one_list_without_olms_copies():
    """A CSV get lists its namespace once, leaving out the copies OLM makes of an AllNamespaces
    operator's CSV in every namespace; a list of that namespace (a prefetch's) answers it."""
    cluster = Counting({CSV: [item("gpu-operator-certified.v26.7.2", "nvidia-gpu-operator")]})
    reads = Reads(cluster)
    assert reads.list(*CSV, namespace="nvidia-gpu-operator")[0]["kind"] == CSV[1]
    assert reads.get(*CSV, "gpu-operator-certified.v26.7.2", "nvidia-gpu-operator") is not None
    assert reads.get(*CSV, "other.v1", "nvidia-gpu-operator") is None
    assert cluster.requests == [("list", CSV[1], "nvidia-gpu-operator", "!olm.copiedFrom")]
    reads = Reads(cluster)
    reads.prefetch([(*CSV, None, "nvidia-network-operator", None), (*NAD, None, None, None)])
    assert reads.get(*CSV, "nvidia-network-operator.v26.7.1", "nvidia-network-operator") is None
    assert (
        cluster.requests[1:].count(("list", CSV[1], "nvidia-network-operator", "!olm.copiedFrom"))
        == 1
    )
    assert len(cluster.requests) == 3


def test_a_write_makes_the_next_read_of_its_kind_ask_again():
    cluster = Counting({NAD: [item("rdma-rail-0", "gpudirect-rdma")]})
    reads = Reads(cluster)
    reads.get(*NAD, "rdma-rail-0", "gpudirect-rdma")
    reads.apply({"apiVersion": NAD[0], "kind": NAD[1], "metadata": {"name": "rdma-rail-0"}})
    reads.get(*NAD, "rdma-rail-0", "gpudirect-rdma")
    assert [r[0] for r in cluster.requests] == ["list", "apply", "list"]


def test_a_kind_not_served_is_asked_once_and_says_so_each_time():
    cluster = Counting({}, not_served={NAD})
    reads = Reads(cluster)
    for name in ("rdma-rail-0", "rdma-rail-1"):
        with pytest.raises(NotServed):
            reads.get(*NAD, name, "gpudirect-rdma")
    assert len(cluster.requests) == 1


class Slow(Counting):
    """Counting, where each request takes 50 ms and the requests of its threads are counted;
    a kind in failing answers with an error."""

    def __init__(self, objects, not_served=(), failing=()):
        super().__init__(objects, not_served)
        self.failing = set(failing)
        self.threads: set[str] = set()
        self.released: list[str] = []
        self.lock = threading.Lock()

    def _asked(self, api_version, kind):
        with self.lock:
            self.threads.add(threading.current_thread().name)
        time.sleep(0.05)
        if (api_version, kind) in self.failing:
            self.requests.append(("failed", kind))
            raise ConnectionResetError("the API server went away")

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self._asked(api_version, kind)
        return super().list(api_version, kind, namespace, label_selector)

    def get(self, api_version, kind, name, namespace=None):
        self._asked(api_version, kind)
        return super().get(api_version, kind, name, namespace)

    def release(self):
        self.released.append(threading.current_thread().name)


def reads_of_a_run() -> list[tuple]:
    """Eight reads as a converged run makes them: whole kinds, the collection's objects of a kind,
    objects by name, a namespace's networks."""
    return [
        (*POLICY, None, None, None),
        (*POLICY, "nic-cluster-policy", None, None),  # the whole list answers it
        (*NAD, "rdma-rail-0", "gpudirect-rdma", None),
        (*NAD, "rdma-rail-1", "gpudirect-rdma", None),  # the same namespace's list
        (*SECRET, "pull", "gpudirect-rdma", None),
        ("v1", "Node", None, None, None),
        ("v1", "Namespace", None, None, OWNED),
        ("nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy", None, None),
    ]


def test_a_prefetch_asks_several_at_a_time_and_the_reads_after_it_ask_nothing():
    cluster = Slow(
        {
            POLICY: [item("nic-cluster-policy", labels=OURS)],
            NAD: [item("rdma-rail-0", "gpudirect-rdma"), item("rdma-rail-1", "gpudirect-rdma")],
            ("v1", "Node"): [item("worker-0")],
            ("v1", "Namespace"): [item("gpudirect-rdma", labels=OURS)],
            ("nvidia.com/v1", "ClusterPolicy"): [item("gpu-cluster-policy", labels=OURS)],
        }
    )
    reads = Reads(cluster)
    began = time.monotonic()
    reads.prefetch(reads_of_a_run())
    seconds = time.monotonic() - began
    # six requests of 50 ms: one after the other 0.3 s, four at a time two rounds
    assert sorted(cluster.requests) == sorted(
        [
            ("list", "NicClusterPolicy", None, None),
            ("list", "NetworkAttachmentDefinition", "gpudirect-rdma", None),
            ("get", "Secret", "gpudirect-rdma", "pull"),
            ("list", "Node", None, None),
            ("list", "Namespace", None, OWNED),
            ("list", "ClusterPolicy", None, OWNED),
        ]
    )
    assert seconds < 0.25, seconds
    assert len(cluster.threads) == PREFETCH_CONNECTIONS
    # each thread's connection given back, for the next round's threads
    assert sorted(cluster.released) == sorted(cluster.threads)
    asked = len(cluster.requests)
    assert reads.get(*POLICY, "nic-cluster-policy")["kind"] == "NicClusterPolicy"
    assert reads.get(*NAD, "rdma-rail-1", "gpudirect-rdma") is not None
    assert reads.get(*SECRET, "pull", "gpudirect-rdma") is None
    assert [o["metadata"]["name"] for o in reads.list("v1", "Node")] == ["worker-0"]
    assert reads.get("nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy") is not None
    assert len(cluster.requests) == asked
    reads.prefetch(reads_of_a_run())  # all kept: nothing asked again
    assert len(cluster.requests) == asked


def test_a_prefetched_request_that_failed_is_asked_again_by_the_read_that_needs_it():
    cluster = Slow({POLICY: [item("nic-cluster-policy")]}, not_served={NAD}, failing={POLICY})
    reads = Reads(cluster)
    reads.prefetch([(*POLICY, None, None, None), (*NAD, None, None, None)])
    cluster.failing.clear()
    assert len(reads.list(*POLICY)) == 1  # asked again
    with pytest.raises(NotServed):  # kept: a kind not served is an answer
        reads.list(*NAD)
    assert [r[1] for r in cluster.requests].count("NicClusterPolicy") == 2
    assert [r[1] for r in cluster.requests].count("NetworkAttachmentDefinition") == 1
