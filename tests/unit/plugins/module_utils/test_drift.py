"""Drift (k8s/drift.py): differences between planned and live objects, who changed them, and the
nodes against their groups."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import drift
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import FIELD_MANAGER
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs

OURS = {MANAGED_BY_LABEL: MANAGED_BY}
POLICY = {
    "apiVersion": "mellanox.com/v1alpha1",
    "kind": "NicClusterPolicy",
    "metadata": {"name": "nic-cluster-policy", "labels": OURS},
    "spec": {
        "ofedDriver": {"version": "25.04-0.6.1.0-2", "env": [{"name": "A", "value": "1"}]},
        "rdmaSharedDevicePlugin": {"image": "k8s-rdma-shared-dev-plugin"},
    },
}


def fields(*paths: tuple[str, ...]) -> dict:
    """A managedFields fieldsV1 set holding paths."""
    found: dict = {}
    for path in paths:
        node = found
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return found


def entry(manager: str, operation: str, time: str, *paths) -> dict:
    return {"manager": manager, "operation": operation, "time": time, "fieldsV1": fields(*paths)}


def live_policy(spec: dict, entries: list[dict]) -> dict:
    return {
        **POLICY,
        "metadata": {**POLICY["metadata"], "managedFields": entries, "resourceVersion": "7"},
        "spec": spec,
        "status": {"state": "ready"},
    }


def test_a_field_another_manager_changed_names_the_manager_and_both_values():
    ours = entry(FIELD_MANAGER, "Apply", "2026-12-01T10:00:00Z", ("spec", "rdmaSharedDevicePlugin"))
    edit = entry(
        "kubectl-edit", "Update", "2026-12-06T09:30:00Z", ("spec", "ofedDriver", "version")
    )
    live = live_policy(
        {**POLICY["spec"], "ofedDriver": {**POLICY["spec"]["ofedDriver"], "version": "24.10"}},
        [ours, edit],
    )
    [found] = drift.object_items("network-operator", POLICY, live)
    assert found["kind"] == drift.CHANGED
    assert found["object"] == "NicClusterPolicy nic-cluster-policy"
    assert found["field"] == "spec.ofedDriver.version"
    assert (found["planned"], found["found"]) == ("25.04-0.6.1.0-2", "24.10")
    assert found["changed_by"] == [
        {"manager": "kubectl-edit", "operation": "Update", "time": "2026-12-06T09:30:00Z"}
    ]
    assert "changed by kubectl-edit (Update 2026-12-06T09:30:00Z)" in found["message"]


def test_a_field_taken_away_names_whoever_wrote_the_object_last():
    live = live_policy(
        {"ofedDriver": POLICY["spec"]["ofedDriver"]},
        [
            entry(FIELD_MANAGER, "Apply", "2026-12-01T10:00:00Z", ("spec", "ofedDriver")),
            entry("argocd-controller", "Update", "2026-12-02T00:00:00Z", ("metadata", "labels")),
            entry("oc", "Update", "2026-12-05T00:00:00Z", ("metadata", "annotations")),
        ],
    )
    [found] = drift.object_items("network-operator", POLICY, live)
    assert found["field"] == "spec.rdmaSharedDevicePlugin" and found["found"] is None
    assert [w["manager"] for w in found["changed_by"]] == ["oc"]
    assert "taken away" in found["message"]


def test_a_list_differs_as_a_whole_and_an_unchanged_object_has_no_item():
    env = entry("operator", "Update", "2026-12-06T00:00:00Z", ("spec", "ofedDriver", "env"))
    live = live_policy(
        {
            **POLICY["spec"],
            "ofedDriver": {**POLICY["spec"]["ofedDriver"], "env": [{"name": "A", "value": "2"}]},
        },
        [env],
    )
    [found] = drift.object_items("network-operator", POLICY, live)
    assert found["field"] == "spec.ofedDriver.env"
    assert found["changed_by"][0]["manager"] == "operator"
    assert drift.object_items("network-operator", POLICY, live_policy(POLICY["spec"], [])) == []


def test_a_missing_object_and_a_field_an_earlier_plan_set():
    [missing] = drift.object_items("network-operator", POLICY, None)
    assert missing["kind"] == drift.MISSING
    applied = entry(
        FIELD_MANAGER, "Apply", "2026-12-01T10:00:00Z", ("spec", "ofedDriver"), ("spec", "sriovDp")
    )
    live = live_policy({**POLICY["spec"], "sriovDp": {"image": "x"}}, [applied])
    [stale] = drift.object_items("network-operator", POLICY, live)
    assert (stale["kind"], stale["field"]) == (drift.STALE, "spec.sriovDp")


def test_a_step_record_gives_extra_missing_foreign_operator_and_gate_items():
    foreign = live_policy(POLICY["spec"], [])
    foreign["metadata"] = {**foreign["metadata"], "labels": {}}
    record = {
        "step": "network-operator",
        "results": [
            {"object": "NicClusterPolicy nic-cluster-policy", "action": "updated", "reasons": []},
            {"object": "MacvlanNetwork old", "action": "deleted", "reasons": []},
            {"object": "NicNodePolicy new", "action": "created", "reasons": []},
            {"object": "Namespace x", "action": "unchanged", "reasons": []},
        ],
        "operator": {
            "subscription": "Subscription nvidia-network-operator/nvidia-network-operator",
            "waiting": "no ClusterServiceVersion in phase Succeeded",
            "approved_install_plans": ["install-abcde"],
        },
        "gates": [
            {"gate": "NicClusterPolicy ready", "met": False, "seen": "state notReady"},
            {"gate": "other", "met": True},
        ],
    }
    compared = {"NicClusterPolicy nic-cluster-policy": (POLICY, foreign)}
    found = drift.step_items(record, compared)
    assert [(i["kind"], i["object"]) for i in found] == [
        (drift.FOREIGN, "NicClusterPolicy nic-cluster-policy"),
        (drift.EXTRA, "MacvlanNetwork old"),
        (drift.MISSING, "NicNodePolicy new"),
        (drift.OPERATOR, "Subscription nvidia-network-operator/nvidia-network-operator"),
        (drift.OPERATOR, "Subscription nvidia-network-operator/nvidia-network-operator"),
        (drift.NOT_READY, "NicClusterPolicy ready"),
    ]
    assert "install-abcde waits for approval" in found[4]["message"]
    failed = drift.step_items({"step": "nfd", "title": "NFD", "error": "no catalog"}, {})
    assert [(i["kind"], i["message"]) for i in failed] == [(drift.NOT_JUDGED, "no catalog")]


def node(name: str, labels: dict, allocatable: dict) -> dict:
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def test_nodes_out_of_their_group_in_two_in_another_and_without_a_resource():
    plan = build_plan(inputs("node-groups"))
    (a_name, a_labels, a_res), (b_name, b_labels, b_res) = (
        (g["name"], g["node_selector"], [r["node_resource"] for r in g["rails"]])
        for g in plan["groups"]
    )
    assert set(a_res).isdisjoint(b_res)
    every_a = dict.fromkeys(a_res, "1")
    nodes = [
        node("fine", a_labels, every_a),
        node("left", {}, every_a),  # its group's label removed
        node("moved", b_labels, every_a),  # relabelled from a to b, plugins not followed
        node("short", a_labels, {**every_a, a_res[0]: "0"}),
        node("cpu-only", {}, {}),
    ]
    found: dict[str, list[str]] = {}
    for each in drift.node_items(plan, nodes):
        found.setdefault(each["node"], []).append(each["message"])
    assert set(found) == {"left", "moved", "short"}
    assert "in no node group" in found["left"][0] and a_name in found["left"][0]
    relabelled, short_of_its_own = found["moved"]
    assert f"in node group {b_name} by its labels" in relabelled
    assert f"relabelled from {a_name}" in relabelled
    assert f"does not advertise {b_res[0]}" in short_of_its_own
    assert found["short"] == [f"in node group {a_name}; does not advertise {a_res[0]}"]
    assert all(i["step"] == drift.CLUSTER for i in drift.node_items(plan, nodes))
    # Selectors of other labels: a node can carry both.
    b_group = {**plan["groups"][1], "node_selector": {"pool": "b"}}
    two = {**plan, "groups": [plan["groups"][0], b_group]}
    [both] = drift.node_items(two, [node("both", {**a_labels, "pool": "b"}, every_a)])
    assert f"in the node groups {a_name}, {b_name} at once" in both["message"]


def test_one_group_a_node_without_its_resource():
    plan = build_plan(inputs("shared-device-roce"))
    [group] = plan["groups"]
    resource = group["rails"][0]["node_resource"]
    selected = group["node_selector"]
    nodes = [node("w0", selected, {resource: "63"}), node("w1", selected, {})]
    assert [i["node"] for i in drift.node_items(plan, nodes)] == ["w1"]


def test_items_by_step_in_the_tables_order_the_clusters_first():
    items = [
        drift.item("nfd", drift.NOT_READY, "b", "m"),
        drift.item("nfd", drift.CHANGED, "a", "m"),
        drift.item(drift.CLUSTER, drift.NODE, "Node x", "m"),
    ]
    grouped = drift.by_step(items, ["nfd", "gpu-operator"])
    assert [g["step"] for g in grouped] == [drift.CLUSTER, "nfd", "gpu-operator"]
    assert [i["kind"] for i in grouped[1]["differences"]] == [drift.CHANGED, drift.NOT_READY]
    assert grouped[2]["differences"] == []
    assert drift.counts(items)[drift.NODE] == 1 and set(drift.counts(items)) == set(drift.KINDS)
