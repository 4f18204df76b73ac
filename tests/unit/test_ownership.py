"""Ownership: every object the collection creates, in every example configuration, carries the
labels that uninstall and switching select by, and its kind is one that uninstall removes."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    COMPONENTS,
    build_objects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import MANAGED_KINDS
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import STAGES
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import verify
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import NAMES, bandwidth_pods, inputs

MANAGED = {(api_version, kind) for api_version, kind, _stage in MANAGED_KINDS}


def created(name: str) -> list[dict]:
    plan = build_plan(inputs(name))
    return [*build_objects(plan), *bandwidth_pods(plan)]


@pytest.mark.parametrize("name", NAMES)
def test_every_object_is_labelled_and_of_a_kind_uninstall_removes(name):
    for obj in created(name):
        labels = obj["metadata"]["labels"]
        where = f"{obj['kind']} {obj['metadata']['name']}"
        assert labels["app.kubernetes.io/managed-by"] == "gpudirect.rdma", where
        assert labels["gpudirect.rdma/component"] in (*COMPONENTS, verify.COMPONENT), where
        assert (obj["apiVersion"], obj["kind"]) in MANAGED, f"uninstall would miss {where}"


def test_uninstall_stages_keep_the_order_of_the_issue():
    assert STAGES == (
        "test-pods",
        "networks",
        "node-policies",
        "cluster-policy",
        "nic-cluster-policy",
        "sriov-operator-config",
        "nfd-instance",
        "operators",
        "machine-configs",
        "namespaces",
    )
