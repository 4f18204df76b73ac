"""gpudirect.rdma.read: one kind's objects or pods' logs, through the collection's connection."""

from __future__ import annotations

import types

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import Cluster, NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import ModuleFailure
from ansible_collections.gpudirect.rdma.plugins.modules import read

NODES = [{"metadata": {"name": "worker-0", "labels": {"gpu": "yes"}}}]


class Reading:
    """The Cluster as read uses it: what it was asked, and the answers."""

    def __init__(self, served=True):
        self.served = served
        self.asked = []

    def list(self, api_version, kind, namespace=None, label_selector=None):
        self.asked.append((api_version, kind, namespace, label_selector))
        if not self.served:
            raise NotServed(api_version, kind)
        return NODES

    def log(self, name, namespace, container=None):
        self.asked.append(("log", name, namespace, container))
        return f"log of {name}"


def module(**params):
    defaults = {"api_version": "v1", "kind": None, "namespace": None, "label_selectors": []}
    defaults["logs"] = None
    return types.SimpleNamespace(params={**defaults, **params}, check_mode=False)


def test_a_kind_is_listed_with_its_selectors_joined():
    cluster = Reading()
    found = read.body(module(kind="Node", label_selectors=["a=1", "b=2"]), cluster, {})
    assert found == {"changed": False, "resources": NODES, "logs": {}}
    assert cluster.asked == [("v1", "Node", None, "a=1,b=2")]


def test_a_kind_the_api_server_does_not_serve_reads_as_no_objects():
    kind = "NicDevice"
    found = read.body(module(api_version="x/v1", kind=kind), Reading(served=False), {})
    assert found["resources"] == []


def test_logs_are_read_pod_by_pod_from_the_only_container():
    cluster = Reading()
    found = read.body(module(namespace="ns", logs=["a", "b"]), cluster, {})
    assert found["logs"] == {"a": "log of a", "b": "log of b"}
    assert cluster.asked == [("log", "a", "ns", None), ("log", "b", "ns", None)]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "kind: got None and logs: got None; expected exactly one of them"),
        ({"kind": "Pod", "logs": ["a"]}, "kind: got 'Pod' and logs: got ['a']; expected exactly"),
        ({"logs": ["a"]}, "namespace: got none; expected the namespace of the pods of logs"),
    ],
)
def test_bad_options_name_what_was_given_and_what_is_expected(params, message):
    with pytest.raises(ModuleFailure) as raised:
        read.before(module(**params))
    assert str(raised.value).startswith(message)


class Recording:
    """api.Api as Cluster.log uses it."""

    server = "https://127.0.0.1:6443"

    def __init__(self):
        self.queries = []

    def request(self, method, path, query=None, **_kwargs):
        self.queries.append((method, path, query))
        return b"text"


@pytest.mark.parametrize(("container", "query"), [(None, []), ("ctr", [("container", "ctr")])])
def test_a_log_names_its_container_only_when_asked(container, query):
    cluster = Cluster.__new__(Cluster)
    cluster.api, cluster._resources, cluster._server = Recording(), {}, None
    assert cluster.log("pod", "ns", container) == "text"
    assert cluster.api.queries == [("GET", "/api/v1/namespaces/ns/pods/pod/log", query)]
