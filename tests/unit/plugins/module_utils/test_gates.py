"""The steps' gates: one place (module_utils/gates.py) that the roles wait on and the converged
check observes; the filters over it check their arguments."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.gates import gates
from ansible_collections.gpudirect.rdma.plugins.filter.prune_scope import prune_scope
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import component_objects
from ansible_collections.gpudirect.rdma.plugins.module_utils.gates import COMPONENTS, gates_for
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    incomplete_gates,
    to_gate,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import NAMES, inputs


@pytest.mark.parametrize("name", NAMES)
def test_every_gate_says_what_it_waits_for_and_where_to_look(name):
    plan = build_plan(inputs(name))
    every = [to_gate(g) for step in COMPONENTS for g in gates_for(plan, step)]
    assert incomplete_gates(every) is None
    assert all(gate.hint for gate in every)
    assert len({gate.name for gate in every}) == len(every)


@pytest.mark.parametrize("name", NAMES)
def test_the_method_waits_for_each_rail_and_sriov_for_its_node_states(name):
    plan = build_plan(inputs(name))
    method = plan["method"].replace("_", "-")
    found = gates(plan, method)
    resources = [g["path"][-1] for g in found if g["kind"] == "Node"]
    networks = [g["name"] for g in found if g["kind"] == "NetworkAttachmentDefinition"]
    assert resources == [rail["node_resource"] for rail in plan["rails"]]
    assert networks == [rail["network_name"] for rail in plan["rails"]]
    states = [g for g in found if g["kind"] == "SriovNetworkNodeState"]
    assert len(states) == (plan["method"] == "sriov_legacy")
    assert all(g["fail_on"] == ["Failed"] for g in states)
    others = [c for c in ("shared-device", "host-device", "sriov-legacy") if c != method]
    assert all(gates(plan, other) == [] for other in others)


def test_the_pool_renders_the_plans_machine_configs_and_none_removed():
    plan = build_plan(inputs("sriov-legacy-roce"))
    names = [o["metadata"]["name"] for o in component_objects(plan, "machine-config")]
    assert names, "the example has MachineConfigs"
    renders, updated = gates(plan, "machine-config", removed_machine_configs=["99-old"])
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
    assert component_objects(plan, "machine-config") == []
    assert gates(plan, "machine-config") == []
    assert gates(plan, "machine-config", removed_machine_configs=["99-old"])[0]["excludes"] == [
        "99-old"
    ]


def test_nfd_counts_the_nodes_it_was_asked_for():
    plan = build_plan(inputs("shared-device-roce"))
    (labels,) = gates(plan, "nfd", min_nodes=3)
    assert labels["min_count"] == 3
    assert gates(plan, "sriov-network-operator") == []


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (["not a plan", "nfd"], {}, "_input"),
        ([{"method": "shared_device"}, "nfd"], {}, "expected the plan returned by"),
        ([None, "gpu"], {}, "value of component must be one of"),
        ([None, "nfd"], {"min_nodes": 0}, "min_nodes: got 0; expected 1 or more"),
        ([None, "nfd"], {"min_nodes": "many"}, "min_nodes"),
    ],
)
def test_gates_says_what_it_expected(args, kwargs, message):
    if args[0] is None:
        args[0] = build_plan(inputs("shared-device-roce"))
    with pytest.raises(AnsibleFilterError, match=message):
        gates(*args, **kwargs)


def test_prune_scope_covers_every_method_kind_of_all_methods():
    scope = prune_scope("host-device")
    assert scope == prune_scope("sriov-legacy") == prune_scope("shared-device")
    assert {k["kind"] for k in scope["kinds"]} == {
        "MacvlanNetwork",
        "IPoIBNetwork",
        "HostDeviceNetwork",
        "SriovNetwork",
        "SriovIBNetwork",
        "IPPool",
        "SriovNetworkNodePolicy",
    }
    assert scope["label_selector"] == (
        "gpudirect.rdma/component in (shared-device,host-device,sriov-legacy)"
    )
    assert prune_scope("machine-config") == {
        "kinds": [{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig"}],
        "label_selector": "gpudirect.rdma/component=machine-config",
    }
    assert prune_scope("gpu-operator") is None
    with pytest.raises(AnsibleFilterError, match="must be one of"):
        prune_scope("gpu")
