"""Reads (k8s/reads.py): one module run's reads, each kind listed once, against a cluster that
counts its requests."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.reads import OWNED, Reads

NAD = ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy")
SECRET = ("v1", "Secret")
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
