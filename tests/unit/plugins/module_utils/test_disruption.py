"""What a run's changes do to nodes (k8s/disruption.py), judged from what the cluster holds and
what the plan writes: a first install is listed, a converged cluster has nothing to say, a switch
of inventory or a subset of nodes is refused on the nodes in service, naming them, until the
inventory agrees."""

from __future__ import annotations

import pytest
from ansible.module_utils.common.yaml import yaml_load

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import network_operator
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import disruption
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.preflight import Facts
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import STEPS, build_objects
from ansible_collections.gpudirect.rdma.plugins.modules import plan as plan_module
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import PlanError, build_plan
from tests.simulator.core import affinity_matches as simulated_affinity
from tests.unit.inventories import inputs

NFD = {
    "feature.node.kubernetes.io/pci-15b3.present": "true",
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "node-role.kubernetes.io/worker": "",
}


def node(name: str, **labels) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**NFD, **labels}},
    }


def cluster(live: list[dict], nodes: list[dict]) -> Facts:
    return Facts(server="https://api.example:6443", objects=(*nodes, *live))


def judged(name_or_inputs, facts: Facts, **more) -> list[dict]:
    given = inputs(name_or_inputs) if isinstance(name_or_inputs, str) else name_or_inputs
    plan = build_plan({**given, **more})
    return disruption.check_disruption(plan, build_objects(plan), facts, False)


def by_severity(findings: list[dict], severity: str) -> list[str]:
    return [f["message"] for f in findings if f["severity"] == severity]


TWO = [node("worker-0"), node("worker-1")]


def test_a_first_install_lists_what_it_does_to_nodes_and_refuses_nothing():
    findings = judged("shared-device-roce", cluster([], TWO))
    assert by_severity(findings, "error") == []
    warnings = by_severity(findings, "warning")
    assert all(w.endswith("(none of them is configured yet)") for w in warnings)
    effects = sorted({w.split(":")[0] for w in warnings})
    assert effects == ["driver-reload", "gpu-driver", "reboot"]
    reboot = next(w for w in warnings if w.startswith("reboot"))
    assert "node configuration added (MachineConfig " in reboot
    assert "MachineConfig 99-worker-blacklist-irdma" in reboot
    assert "on 2 node(s): worker-0, worker-1" in reboot


@pytest.mark.parametrize("name", ["shared-device-roce", "sriov-legacy-infiniband", "node-groups"])
def test_a_converged_cluster_has_nothing_to_say(name):
    plan = build_plan(inputs(name))
    nodes = [node(f"worker-{group['name']}", **group["node_selector"]) for group in plan["groups"]]
    findings = disruption.check_disruption(
        plan, build_objects(plan), cluster(build_objects(plan), nodes), False
    )
    assert [f["severity"] for f in findings] == ["ok"], findings


def test_switching_inventory_refuses_the_reboots_and_reloads_naming_objects_and_nodes():
    before = build_objects(build_plan(inputs("shared-device-roce")))
    findings = judged("sriov-legacy-infiniband", cluster(before, TWO))
    errors = by_severity(findings, "error")
    reboot = next(e for e in errors if e.startswith("reboot:"))
    # The MachineConfigs the new inventory lacks go: each removal reboots the pool.
    assert (
        "reboot: node configuration removed (MachineConfig 99-machine-config-udev-network, "
        "MachineConfig 99-worker-blacklist-irdma) on 2 node(s)" in reboot
    )
    assert "on 2 node(s): worker-0, worker-1" in reboot
    assert "2 of them already run the collection's configuration" in reboot
    assert (
        "to let this run do it, set gpudirect_rdma_allow_disruption: [reboot] in the inventory "
        "or -e gpudirect_rdma_allow_disruption=reboot (all: every effect)" in reboot
    )
    assert any(e.startswith("device-plugin: RDMA shared device plugin removed") for e in errors)
    assert any(e.startswith("drain: SR-IOV VFs added") for e in errors)

    agreed = judged("sriov-legacy-infiniband", cluster(before, TWO), allow_disruption=["all"])
    assert by_severity(agreed, "error") == []
    assert len(by_severity(agreed, "warning")) == len(errors)
    assert all(
        w.endswith("(agreed: gpudirect_rdma_allow_disruption)")
        for w in by_severity(agreed, "warning")
    )

    # Agreeing to one effect leaves the others refused.
    some = judged("sriov-legacy-infiniband", cluster(before, TWO), allow_disruption="reboot")
    assert [e for e in by_severity(some, "error") if e.startswith("reboot")] == []
    assert by_severity(some, "error")


def test_a_subset_of_nodes_names_the_nodes_that_lose_their_driver():
    """One node group selecting worker-0 (node model) where the cluster model served both."""
    before = build_objects(build_plan(inputs("shared-device-roce")))
    nodes = [node("worker-0", pool="first"), node("worker-1")]
    subset = {
        **inputs("shared-device-roce"),
        "node_groups": [{"name": "first", "node_selector": {"pool": "first"}}],
        "nic_policy_model": "node",
    }
    errors = by_severity(judged(subset, cluster(before, nodes)), "error")
    driver = [e for e in errors if e.startswith("driver-reload")]
    assert any(
        "DOCA driver removed (NicClusterPolicy nic-cluster-policy) on 1 node(s): worker-1" in e
        for e in driver
    ), driver
    assert any(
        "DOCA driver moves from NicClusterPolicy nic-cluster-policy to NicNodePolicy first on "
        "1 node(s): worker-0" in e
        for e in driver
    ), driver
    assert any(
        e.startswith("device-plugin: RDMA shared device plugin removed") and "worker-1" in e
        for e in errors
    )


def test_a_nic_firmware_template_removed_leaves_the_firmware_and_disrupts_nothing():
    before = build_objects(build_plan(inputs("nic-configuration-roce")))
    after = {**inputs("nic-configuration-roce"), "nic_configuration": False}
    findings = judged(after, cluster(before, TWO))
    assert not [f for f in findings if f["message"].startswith("nic-firmware")]


def test_many_nodes_are_counted_and_the_first_named():
    nodes = [node(f"worker-{i:02}") for i in range(20)]
    before = build_objects(build_plan(inputs("shared-device-roce")))
    (reboot,) = [
        e
        for e in by_severity(judged("sriov-legacy-infiniband", cluster(before, nodes)), "error")
        if e.startswith("reboot")
    ]
    assert "on 20 node(s): worker-00, worker-01, " in reboot and "worker-07 and 12 more" in reboot


def test_the_plan_takes_effects_as_a_list_or_a_survey_string_and_names_a_bad_one():
    base = inputs("shared-device-roce")
    assert build_plan(base)["allow_disruption"] == []
    assert build_plan({**base, "allow_disruption": "reboot, drain"})["allow_disruption"] == [
        "reboot",
        "drain",
    ]
    with pytest.raises(PlanError) as raised:
        build_plan({**base, "allow_disruption": ["reboot", "reboots"]})
    assert str(raised.value).startswith("gpudirect_rdma_allow_disruption[1]: got 'reboots'; ")
    assert "all, reboot, drain, driver-reload" in str(raised.value)
    with pytest.raises(
        PlanError, match="gpudirect_rdma_allow_disruption: got True; expected a list of all"
    ):
        build_plan({**base, "allow_disruption": True})


def test_the_effects_are_one_list_the_plan_documents_and_the_steps_use():
    option = yaml_load(plan_module.DOCUMENTATION)["options"]["allow_disruption"]
    assert tuple(option["choices"]) == disruption.CHOICES
    used = {d.effect for step in STEPS for d in step.disruptions}
    assert used == set(disruption.EFFECTS)


def test_a_narrower_node_selector_narrows_the_nic_cluster_policy_and_its_nodes():
    selector = {"gpudirect.example.com/wave": "canary"}
    plan = build_plan({**inputs("shared-device-roce"), "node_selector": selector})
    (policy,) = network_operator.nic_cluster_policies(plan)
    assert policy["spec"]["nodeAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "gpudirect.example.com/wave",
                            "operator": "In",
                            "values": ["canary"],
                        }
                    ]
                }
            ]
        }
    }
    # The default selector (every node with an NVIDIA NIC) is what the DaemonSets select anyway.
    (default,) = network_operator.nic_cluster_policies(build_plan(inputs("shared-device-roce")))
    assert "nodeAffinity" not in default["spec"]
    before = build_objects(build_plan(inputs("shared-device-roce")))
    nodes = [node("worker-0", **selector), node("worker-1")]
    (driver,) = [
        e
        for e in by_severity(
            judged(
                {**inputs("shared-device-roce"), "node_selector": selector}, cluster(before, nodes)
            ),
            "error",
        )
        if e.startswith("driver-reload")
    ]
    assert (
        "DOCA driver removed (NicClusterPolicy nic-cluster-policy) on 1 node(s): worker-1" in driver
    )


@pytest.mark.parametrize(
    ("expressions", "labels"),
    [
        ([{"key": "a", "operator": "In", "values": ["1"]}], {"a": "1"}),
        ([{"key": "a", "operator": "In", "values": ["1"]}], {"a": "2"}),
        ([{"key": "a", "operator": "NotIn", "values": ["1"]}], {}),
        ([{"key": "a", "operator": "Exists"}], {"a": ""}),
        ([{"key": "a", "operator": "DoesNotExist"}], {"a": ""}),
        (
            [{"key": "a", "operator": "In", "values": ["1"]}, {"key": "b", "operator": "Exists"}],
            {"a": "1"},
        ),
    ],
)
def test_the_collection_and_the_simulator_read_a_node_affinity_alike(expressions, labels):
    affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]
        }
    }
    assert network_operator.affinity_matches(affinity, labels) == simulated_affinity(
        affinity, labels
    )
