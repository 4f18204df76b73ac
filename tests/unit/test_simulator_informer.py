"""The simulator's watch-backed reads (tests/simulator/informer.py): which requests it answers
from its copies and how it reads a selector. Against a real API server in
tests/integration/test_simulator.py."""

from __future__ import annotations

import pytest

from tests.simulator.informer import _PATH, Collection, _fields, _selected


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("/api/v1/pods", ("api/v1", None, "pods", None)),
        ("/api/v1/namespaces/default/pods", ("api/v1", "default", "pods", None)),
        ("/api/v1/namespaces/default/pods/p", ("api/v1", "default", "pods", "p")),
        ("/api/v1/namespaces", ("api/v1", None, "namespaces", None)),
        ("/api/v1/nodes/worker-0", ("api/v1", None, "nodes", "worker-0")),
        (
            "/apis/operators.coreos.com/v1alpha1/namespaces/ns/clusterserviceversions/c",
            ("apis/operators.coreos.com/v1alpha1", "ns", "clusterserviceversions", "c"),
        ),
        (
            "/apis/mellanox.com/v1alpha1/nicclusterpolicies",
            ("apis/mellanox.com/v1alpha1", None, "nicclusterpolicies", None),
        ),
    ],
)
def test_lists_and_reads_of_objects_are_recognised(path, parts):
    found = _PATH.match(path)
    assert (found["prefix"], found["namespace"], found["plural"], found["name"]) == parts


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/default/pods/p/log",
        "/api/v1/namespaces/default/pods/p/status",
        "/apis/mellanox.com/v1alpha1",
        "/version",
    ],
)
def test_subresources_and_discovery_go_to_the_api_server(path):
    assert _PATH.match(path) is None


LABELS = {"app": "nccl", "gpudirect.rdma/verify-role": "nccl-worker", "tier": "a"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=nccl", True),
        ("app==nccl", True),
        ("app=other", False),
        ("app!=other", True),
        ("app!=nccl", False),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("gpudirect.rdma/verify-role in (nccl-worker,nccl-launcher)", True),
        ("gpudirect.rdma/verify-role in (server, client)", False),
        ("gpudirect.rdma/verify-role notin (server,client)", True),
        ("missing in (a)", False),
        ("missing notin (a)", True),
        ("app=nccl,tier in (a,b),!missing", True),
        ("app=nccl,tier in (b)", False),
        ("", True),
    ],
)
def test_label_selectors_match_as_the_api_server_matches_them(selector, expected):
    assert _selected(LABELS, selector) is expected


def test_field_selectors_on_name_and_namespace_only():
    obj = {"metadata": {"name": "n", "namespace": "ns"}}
    assert _fields(obj, "metadata.name=n") is True
    assert _fields(obj, "metadata.name=n,metadata.namespace=other") is False
    assert _fields(obj, "spec.nodeName=worker-0") is None
    assert _fields(obj, "metadata.name!=n") is None


def _pod(version: int, **metadata) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": str(version), **metadata}
    }


def test_an_answer_that_arrives_after_the_watch_told_of_the_deletion_does_not_bring_it_back():
    """The kubelet's last DELETE answers with the object; the watch's DELETED may come first."""
    pods = Collection("api/v1", "pods")
    pods.put(_pod(10))
    pods.drop(_pod(12, deletionTimestamp="now"))  # the watch: DELETED at 12
    pods.put(_pod(11, deletionTimestamp="now"))  # the DELETE's answer, older
    assert pods.objects == {}
    pods.put(_pod(20))  # made again under the same name: a newer object
    assert pods.objects[("ns", "p")]["metadata"]["resourceVersion"] == "20"


def test_an_older_version_does_not_replace_a_newer_one():
    pods = Collection("api/v1", "pods")
    pods.put(_pod(5, labels={"v": "new"}))
    pods.put(_pod(4, labels={"v": "old"}))
    assert pods.objects[("ns", "p")]["metadata"]["labels"] == {"v": "new"}
