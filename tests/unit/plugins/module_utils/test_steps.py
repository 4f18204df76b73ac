"""The step table (module_utils/steps/) and the gates of its steps: every step's facts in its
own file, in one order (tests/unit/test_step_table.py states it), that the engine, render,
uninstall and diagnostics read."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    incomplete_gates,
    to_gate,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import NAMES, inputs

ROLES = Path(__file__).resolve().parents[4] / "roles"


def gates(plan: dict, name: str, removed: tuple[str, ...] = (), **settings) -> list[dict]:
    """A step's gates after an apply that deleted the MachineConfigs named removed."""
    results = [{"action": "deleted", "kind": "MachineConfig", "name": n} for n in removed]
    return table.step(name).gates(plan, settings, results)


@pytest.mark.parametrize("name", NAMES)
def test_objects_come_in_the_order_of_the_steps_each_labelled_with_its_component(name):
    plan = build_plan(inputs(name))
    seen = [table.component_of(o) for o in table.build_objects(plan)]
    order = list(dict.fromkeys(seen))
    assert order == [c for c in table.components(plan) if c in seen]
    for step in table.STEPS:
        for obj in table.component_objects(plan, step.component):
            assert table.of_component(table.component_of(obj)) is step
            kinds = {*step.kinds, *table.OLM_KINDS}
            assert (obj["apiVersion"], obj["kind"]) in kinds, obj["kind"]


def test_every_kind_the_collection_creates_is_managed_once():
    kinds = table.managed_kinds()
    assert len(kinds) == len(set(kinds))
    assert kinds[0] == ("v1", "Pod")  # the test pods go first on uninstall
    assert kinds[-1] == ("v1", "Namespace")
    for name in NAMES:
        plan = build_plan(inputs(name))
        assert {(o["apiVersion"], o["kind"]) for o in table.build_objects(plan)} <= set(kinds)


def test_each_role_runs_its_steps_and_declares_their_settings_with_their_defaults():
    """A role's one task runs the role's steps (the table says which); its defaults and argument
    specs hold each setting its steps declare, as declared (make docs writes them)."""
    for role in table.ROLES:
        defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
        spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
        options = spec["argument_specs"]["main"]["options"]
        (task,) = yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text())
        assert task["gpudirect.rdma.step"] == {"role": role}
        for step in table.of_role(role):
            for setting in step.settings:
                assert defaults[setting.variable] == setting.default, setting.variable
                assert options[setting.variable]["default"] == setting.default, setting.variable
                assert options[setting.variable]["type"] == setting.type, setting.variable


def test_a_step_that_waits_prunes_or_discovers_declares_how_long():
    for step in table.STEPS:
        plan = build_plan({**inputs("nic-configuration-roce"), "blacklist_irdma": True})
        waits = step.gates(plan, {}, []) or step.prunes or step.clears or step.discover
        if waits:
            assert step.setting("ready_timeout"), step.name
        if step.operator:
            assert step.setting("install_timeout"), step.name


def test_only_the_machine_configs_the_nic_cluster_policy_the_templates_and_the_method_prune():
    pruning = {s.name: table.prune_scope(s) for s in table.STEPS if table.prune_scope(s)}
    assert set(pruning) == {
        "machine-config",
        "network-operator",
        "nic-configuration",
        "shared-device",
        "host-device",
        "sriov-legacy",
        "monitoring",
    }
    # Each removes its own objects only (two methods make IPPools).
    assert {name: scope["label_selector"] for name, scope in pruning.items()} == {
        name: f"gpudirect.rdma/component={name}" for name in pruning
    }
    # Turning the NIC configuration off removes the templates (never the NICs' settings).
    assert pruning["nic-configuration"]["kinds"] == [
        {"apiVersion": "configuration.net.nvidia.com/v1alpha1", "kind": "NicConfigurationTemplate"}
    ]
    # The node model with nothing cluster-wide plans no NicClusterPolicy.
    assert pruning["network-operator"]["kinds"] == [
        {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy"}
    ]
    methods = [step.name for step in table.METHOD_STEPS.values()]
    assert {name: {k["kind"] for k in pruning[name]["kinds"]} for name in methods} == {
        "shared-device": {"MacvlanNetwork", "IPoIBNetwork", "IPPool"},
        "host-device": {"HostDeviceNetwork", "IPPool"},
        "sriov-legacy": {"SriovNetwork", "SriovIBNetwork", "SriovNetworkNodePolicy"},
    }
    assert pruning["machine-config"]["kinds"] == [
        {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig"}
    ]


def test_uninstall_removes_the_machine_configs_only_when_asked():
    assert {s.name: s.uninstall_when for s in table.STEPS if s.uninstall_when} == {
        "machine-config": "uninstall_machine_configs"
    }


# -- gates -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_every_gate_says_what_it_waits_for_and_where_to_look(name):
    plan = build_plan(inputs(name))
    every = [to_gate(g) for s in table.STEPS for g in s.gates(plan, {}, [])]
    assert incomplete_gates(every) is None
    assert all(gate.hint for gate in every)
    assert len({gate.name for gate in every}) == len(every)


@pytest.mark.parametrize("name", NAMES)
def test_the_method_waits_for_each_rail_and_sriov_for_its_node_states(name):
    plan = build_plan(inputs(name))
    found = [g for step in table.METHOD_STEPS.values() for g in gates(plan, step.name)]
    resources = [
        g["path"].removeprefix('status.allocatable."').removesuffix('"')
        for g in found
        if g["kind"] == "Node"
    ]
    networks = [g["name"] for g in found if g["kind"] == "NetworkAttachmentDefinition"]
    rails = [(group, rail) for group in plan["groups"] for rail in group["rails"]]
    assert resources == [rail["node_resource"] for _group, rail in rails]
    assert networks == [rail["network_name"] for _group, rail in rails]
    # Each group's resource gates select that group's nodes.
    selectors = [g["label_selector"] for g in found if g["kind"] == "Node"]
    assert selectors == [
        ",".join(f"{k}={v}" for k, v in group["node_selector"].items()) for group, _rail in rails
    ]
    states = [g for g in found if g["kind"] == "SriovNetworkNodeState"]
    assert len(states) == any(group["method"] == "sriov_legacy" for group in plan["groups"])
    assert all(g["fail_on"] == ["Failed"] for g in states)


@pytest.mark.parametrize("name", NAMES)
def test_the_doca_rollout_waits_for_the_version_each_nic_policy_asks_for(name):
    """The DOCA driver gate of whichever step holds the driver names each policy with an
    ofedDriver and its version: a DaemonSet not rendered from that version yet is not done."""
    plan = build_plan(inputs(name))
    policies = [
        o
        for step in ("network-operator", "nic-node-policies")
        for o in table.component_objects(plan, table.step(step).component)
        if o["kind"] in ("NicClusterPolicy", "NicNodePolicy") and o["spec"].get("ofedDriver")
    ]
    found = [
        g
        for step in ("network-operator", "nic-node-policies")
        for g in gates(plan, step)
        if g["gate"] == "DOCA driver rolled out"
    ]
    assert len(found) == 1 and policies
    assert found[0]["versions"] == {
        f"{p['kind']}/{p['metadata']['name']}": p["spec"]["ofedDriver"]["version"] for p in policies
    }
    assert all(found[0]["versions"].values())


def test_the_pool_renders_the_plans_machine_configs_and_none_removed():
    plan = build_plan(inputs("sriov-legacy-roce"))
    names = [o["metadata"]["name"] for o in table.component_objects(plan, "machine-config")]
    assert names, "the example has MachineConfigs"
    renders, updated = gates(plan, "machine-config", removed=("99-old",))
    assert renders["includes"] == names
    assert renders["excludes"] == ["99-old"]
    assert renders["name"] == updated["name"] == plan["machine_configs"]["role"]
    assert updated["equals"] == "True"


def test_no_machine_config_and_none_removed_means_no_pool_gate():
    plan = build_plan(
        {
            **inputs("shared-device-roce"),
            "blacklist_irdma": False,
            "persistent_nic_names": [],
            "crio_memlock": False,
        }
    )
    assert table.component_objects(plan, "machine-config") == []
    assert gates(plan, "machine-config") == []
    removed = gates(plan, "machine-config", removed=("99-old",))
    assert removed[0]["excludes"] == ["99-old"]


def test_nfd_counts_the_nodes_it_was_asked_for():
    plan = build_plan(inputs("shared-device-roce"))
    (labels,) = gates(plan, "nfd", min_nodes=3)
    assert labels["min_count"] == 3
    assert gates(plan, "sriov-network-operator") == []


def test_uninstall_waits_for_what_a_removal_sets_off():
    method, machine_config = table.step("sriov-legacy"), table.step("machine-config")
    deleted = [
        {"action": "deleted", "kind": "SriovNetworkNodePolicy", "namespace": "sriov", "name": "p"},
        {"action": "deleted", "kind": "MachineConfig", "namespace": None, "name": "99-x"},
    ]
    (states,) = method.uninstall_gates(deleted)
    assert states["namespace"] == "sriov"
    assert "VFs are removed" in states["hint"]
    # No node state left (no SR-IOV node, or the operator gone): no VF to wait for.
    assert states["min_count"] == 0
    renders, updated = machine_config.uninstall_gates(deleted)
    assert "name" not in renders  # every pool
    assert renders["excludes"] == ["99-x"]
    assert renders["gate"] == "MachineConfigPools no longer render the MachineConfigs"
    assert updated["gate"] == "MachineConfigPools updated"
    assert method.uninstall_gates([]) == machine_config.uninstall_gates([]) == []


def test_an_unknown_step_or_component_is_named():
    with pytest.raises(ValueError, match="step: got 'gpu'; expected one of nfd, "):
        table.step("gpu")
    plan = build_plan(inputs("shared-device-roce"))
    assert table.component_objects(plan, "sriov-legacy") == []
    with pytest.raises(ValueError, match="component: got 'gpu'"):
        table.component_objects(plan, "gpu")
