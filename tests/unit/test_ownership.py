"""Ownership: every object the collection creates, in every example configuration, carries the
labels that uninstall and switching select by, and its kind is one that uninstall removes."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.remove import (
    OPERAND_STAGES,
    STAGES,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (
    build_objects,
    components,
    managed_kinds,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (
    COMPONENT as VERIFY_COMPONENT,
)
from tests.unit.inventories import NAMES, bandwidth_pods, inputs

MANAGED = set(managed_kinds())


def created(name: str) -> list[dict]:
    plan = build_plan(inputs(name))
    return [*build_objects(plan), *bandwidth_pods(plan)]


@pytest.mark.parametrize("name", NAMES)
def test_every_object_is_labelled_and_of_a_kind_uninstall_removes(name):
    for obj in created(name):
        labels = obj["metadata"]["labels"]
        where = f"{obj['kind']} {obj['metadata']['name']}"
        assert labels["app.kubernetes.io/managed-by"] == "gpudirect.rdma", where
        assert labels["gpudirect.rdma/component"] in (*components(), VERIFY_COMPONENT), where
        assert (obj["apiVersion"], obj["kind"]) in MANAGED, f"uninstall would miss {where}"


def test_uninstall_goes_in_the_reverse_order_of_the_steps():
    # The test pods, the RDMA methods' objects, the GPU driver before the network driver it
    # builds on, the NIC configuration templates while the NIC Configuration Operator still
    # runs, the MachineConfigs only when asked, the NicNodePolicies before the NicClusterPolicy
    # (the Network Operator's order), the Maintenance Operator's config once its users are gone,
    # then the operators and their Namespaces. The monitoring step's alerts and dashboard go
    # first, with the test pods' results they were labelled from.
    assert STAGES == (
        "test-pods",
        "monitoring",
        "sriov-legacy",
        "host-device",
        "shared-device",
        "gpu-operator",
        "nic-configuration",
        "machine-config",
        "nic-node-policies",
        "network-operator",
        "maintenance-operator",
        "sriov-network-operator",
        "nfd",
        "operators",
        "namespaces",
    )
    assert OPERAND_STAGES == (
        "test-pods",
        "monitoring",
        "sriov-legacy",
        "host-device",
        "shared-device",
        "gpu-operator",
        "nic-configuration",
        "nic-node-policies",
        "network-operator",
        "maintenance-operator",
        "sriov-network-operator",
        "nfd",
    )
