"""The filters are thin: they check their arguments against their DOCUMENTATION and say what
they expected and what arrived."""

from __future__ import annotations

import json

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.kustomize_tree import kustomize_tree
from ansible_collections.gpudirect.rdma.plugins.filter.objects import objects
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs


@pytest.fixture(scope="module")
def plan():
    return build_plan(inputs("sriov-legacy-roce"))


def test_objects_of_one_component(plan):
    kinds = [o["kind"] for o in objects(plan, component="sriov-legacy")]
    assert kinds == ["SriovNetworkNodePolicy", "SriovNetwork"]


def test_objects_returns_new_objects_each_call(plan):
    first, second = objects(plan), objects(plan)
    assert first == second
    first[0]["metadata"]["name"] = "changed"
    assert second[0]["metadata"]["name"] != "changed"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (["not a plan"], {}, "_input"),
        ([{"method": "shared_device"}], {}, "expected the plan returned by gpudirect.rdma.plan"),
        ([None], {"component": "gpu"}, "value of component must be one of"),
    ],
)
def test_objects_rejects_bad_arguments(plan, args, kwargs, message):
    if args == [None]:
        args = [plan]
    with pytest.raises(AnsibleFilterError, match=message):
        objects(*args, **kwargs)


def test_kustomize_tree_lays_out_components(plan):
    files = kustomize_tree(objects(plan))
    assert "sriov-legacy/sriovnetworknodepolicy-sriov-legacy-policy.yaml" in files
    assert yaml.safe_load(files["kustomization.yaml"])["resources"] == [
        "nfd",
        "sriov-network-operator",
        "network-operator",
        "machine-config",
        "gpu-operator",
        "sriov-legacy",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("objects", "option ._input. is of type str"),
        ([{"kind": "ConfigMap", "metadata": {"name": "x"}}], "item 0 expected an object from"),
    ],
)
def test_kustomize_tree_rejects_bad_input(value, message):
    with pytest.raises(AnsibleFilterError, match=message):
        kustomize_tree(value)


def test_refusal_gives_a_kubernetes_core_403_in_the_collections_words():
    from ansible_collections.gpudirect.rdma.plugins.filter.refusal import refusal

    body = json.dumps(
        {
            "kind": "Status",
            "status": "Failure",
            "message": 'nodes is forbidden: User "team" cannot list resource "nodes" in API group '
            '"" at the cluster scope',
            "reason": "Forbidden",
            "details": {"kind": "nodes"},
            "code": 403,
        }
    )
    failed = f"Failed: (403) Reason: Forbidden HTTP response body: {body} Original traceback: x"
    assert refusal(failed).startswith(
        'forbidden: the API server does not allow user "team" to list nodes (nodes is forbidden:'
    )
    assert "rbac/gpudirect-rdma-installer.yaml" in refusal(failed)
    # Anything else comes back as it was: another status, no body, not an RBAC refusal.
    assert refusal(failed.replace('"code": 403', '"code": 404')) == failed.replace(
        '"code": 403', '"code": 404'
    )
    assert refusal("connection refused") == "connection refused"
    webhook = failed.replace('User \\"team\\" cannot list resource \\"nodes\\"', "denied")
    assert refusal(webhook) == webhook
