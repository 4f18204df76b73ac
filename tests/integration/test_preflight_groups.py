"""Preflight of node groups and NIC policies on the local control plane: each finding is set up
on purpose and site.yml fails on it before its first write (audit log), naming the group's
variable. The Network Operator's webhooks are registered (the simulator serves them), so the
policies of somebody else are created here the way the webhooks let anyone create them."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.integration.helpers import wait_for
from tests.integration.test_preflight import SRIOV_NAMESPACE, fails_before_writing
from tests.integration.test_site import nodes_for, site
from tests.simulator.nodes import Hardware, Nic, register_nodes, remove_nodes
from tests.unit.inventories import inputs

GROUPS = "node-groups"
POOL = "gpudirect.example.com/pool"


def delete_policies(custom) -> None:
    """No NicNodePolicy and no NicClusterPolicy left by an earlier test (deletes are not
    judged by the webhooks), and none being deleted still."""
    for plural in ("nicnodepolicies", "nicclusterpolicies"):
        for item in custom.list_cluster_custom_object("mellanox.com", "v1alpha1", plural)["items"]:
            try:
                custom.delete_cluster_custom_object(
                    "mellanox.com", "v1alpha1", plural, item["metadata"]["name"]
                )
            except ApiException as error:
                assert error.status == 404
    wait_for(
        lambda: (
            not any(
                custom.list_cluster_custom_object("mellanox.com", "v1alpha1", p)["items"]
                for p in ("nicnodepolicies", "nicclusterpolicies")
            )
        ),
        what="the NIC policies gone",
    )


def their_node_policy(custom, name: str, spec: dict) -> dict:
    return custom.create_cluster_custom_object(
        "mellanox.com",
        "v1alpha1",
        "nicnodepolicies",
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicNodePolicy",
            "metadata": {"name": name, "labels": {"team": "network"}},
            "spec": spec,
        },
    )


@pytest.fixture
def clean(custom, harness):
    delete_policies(custom)
    yield
    delete_policies(custom)
    remove_nodes(harness)


def group_nodes(harness, group: str, count: int = 2, nics=None, **labels) -> None:
    plan = build_plan(inputs(GROUPS))
    found = next(g for g in plan["groups"] if g["name"] == group)
    link = "ib" if found["fabric"] == "infiniband" else "eth"
    register_nodes(
        harness,
        count,
        prefix=f"worker-{group}",
        labels={**found["node_selector"], **labels},
        hardware=Hardware(
            nics=tuple(Nic(n, link) for n in (nics or [r["interface"] for r in found["rails"]]))
        ),
    )


def test_a_group_that_matches_no_node(clean, run_playbook, harness, control_plane):
    remove_nodes(harness)
    group_nodes(harness, "a100")
    output = fails_before_writing(control_plane, run_playbook, GROUPS)
    assert (
        "ERROR nodes: group h100: no node matches gpudirect_rdma_node_groups[1].node_selector "
        f"({POOL}=h100) among the 2 nodes: label the group's nodes, or remove the group" in output
    ), output[-3000:]


def test_a_node_two_groups_select(clean, run_playbook, harness, control_plane, tmp_path):
    groups = inputs(GROUPS)["node_groups"]
    groups[1] = {**groups[1], "node_selector": {"gpudirect.example.com/fabric": "infiniband"}}
    overrides = tmp_path / "groups.json"
    overrides.write_text(json.dumps({"gpudirect_rdma_node_groups": groups}))
    remove_nodes(harness)
    group_nodes(harness, "a100", **{"gpudirect.example.com/fabric": "infiniband"})
    output = fails_before_writing(control_plane, run_playbook, GROUPS, "-e", f"@{overrides}")
    assert (
        "ERROR node-groups: node worker-a100-0 is selected by the node groups a100, h100" in output
    ), output[-3000:]


def test_a_foreign_nic_node_policy_on_a_groups_node(
    clean, run_playbook, harness, custom, control_plane
):
    remove_nodes(harness)
    group_nodes(harness, "a100")
    group_nodes(harness, "h100")
    their_node_policy(custom, "theirs", {"nodeSelector": {POOL: "h100"}})
    output = fails_before_writing(control_plane, run_playbook, GROUPS)
    assert (
        "ERROR nic-policies: node worker-h100-0 would be selected by NicNodePolicy theirs (not "
        "the collection's) and by the planned h100: the Network Operator refuses two "
        "NicNodePolicies on one node" in output
    ), output[-3000:]


def test_a_section_in_both_kinds(clean, run_playbook, harness, custom, control_plane):
    nodes_for(harness, "shared-device-roce")
    their_node_policy(
        custom,
        "theirs",
        {
            "nodeSelector": {"example.com/none": "here"},
            "ofedDriver": {
                "image": "doca-driver",
                "repository": "example.invalid/mine",
                "version": "doca3.2.2-25.10-2.4.1.0-4",
            },
        },
    )
    output = fails_before_writing(control_plane, run_playbook, "shared-device-roce")
    assert (
        "ERROR nic-policies: NicNodePolicy theirs (not the collection's) defines ofedDriver, "
        "which the planned NicClusterPolicy defines too: the Network Operator refuses a section "
        "in both kinds. Set gpudirect_rdma_nic_policy_model: node, or remove that NicNodePolicy"
        in output
    ), output[-3000:]


def _reports(custom, nodes: set[str], interfaces: set[str]) -> bool:
    states = custom.list_namespaced_custom_object(
        "sriovnetwork.openshift.io", "v1", SRIOV_NAMESPACE, "sriovnetworknodestates"
    )["items"]
    seen = {
        s["metadata"]["name"]: {i["name"] for i in (s.get("status") or {}).get("interfaces") or []}
        for s in states
    }
    return all(seen.get(n) == interfaces for n in nodes)


def test_a_group_whose_interfaces_its_nodes_lack(
    clean, run_playbook, harness, core, custom, control_plane
):
    nodes_for(harness, GROUPS)
    site(run_playbook, GROUPS)  # the SR-IOV operator now reports every node's NICs
    delete_policies(custom)
    for name in ("worker-h100-0", "worker-h100-1"):
        core.delete_node(name)
    four = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0"]
    group_nodes(harness, "h100", nics=four)
    wait_for(
        lambda: _reports(custom, {"worker-h100-0", "worker-h100-1"}, set(four)),
        what="node states reporting four NICs on the h100 nodes",
    )
    output = fails_before_writing(control_plane, run_playbook, GROUPS)
    assert (
        "ERROR interfaces: group h100: gpudirect_rdma_node_groups[1].interfaces: ibp156s0 does "
        "not exist on node worker-h100-0" in output
    ), output[-3000:]
