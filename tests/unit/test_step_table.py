"""Adding a step is its file (module_utils/steps/<step>.py) and its place in the table's order
(steps/__init__.py): this walks the table and proves that site.yml, the converged check, render,
uninstall and diagnostics cover every step, in the table's order (the shipped RBAC:
tests/unit/test_rbac.py runs every step of the table against a recording cluster; a step added
in one file: tests/unit/test_new_step.py). The order is written down once more here, the one
test of it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import diagnostics, remove
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import kustomize_tree
from tests.unit.inventories import NAMES, inputs

REPO_ROOT = Path(__file__).resolve().parents[2]


def tasks_of(path: Path) -> list[dict]:
    found = []
    for task in yaml.safe_load(path.read_text()) or []:
        found.extend([task, *(task.get("block") or [])])
    return found


def test_site_yml_checks_every_step_then_runs_their_roles_in_the_order_the_check_returns():
    (play,) = yaml.safe_load((REPO_ROOT / "playbooks" / "site.yml").read_text())
    tasks = tasks_of_play(play)
    check = next(t for t in tasks if "gpudirect.rdma.step" in t)
    assert check["gpudirect.rdma.step"] == {"name": "all"}
    assert check["check_mode"] is True
    run = next(t for t in tasks if t.get("loop") == "{{ site_check.roles }}")
    assert run["ansible.builtin.include_role"]["name"] == "gpudirect.rdma.{{ site_role }}"
    assert tasks.index(check) < tasks.index(run)


def tasks_of_play(play: dict) -> list[dict]:
    found = []
    for task in play["tasks"]:
        found.extend([task, *(task.get("block") or [])])
    return found


def test_the_steps_in_order_and_the_roles_that_run_them():
    assert [(step.name, step.role) for step in table.STEPS] == [
        ("nfd", "nfd"),
        ("sriov-network-operator", "sriov_network_operator"),
        ("maintenance-operator", "maintenance_operator"),
        ("network-operator", "network_operator"),
        ("nic-node-policies", "network_operator"),
        ("machine-config", "node_config"),
        ("nic-configuration", "nic_configuration"),
        ("gpu-operator", "gpu_operator"),
        ("shared-device", "shared_device"),
        ("host-device", "host_device"),
        ("sriov-legacy", "sriov_legacy"),
        ("monitoring", "monitoring"),
    ]
    # The GPU driver comes after the network driver it builds on, and after the MachineConfigs
    # that reboot the pool; the RDMA methods last.
    assert [s.wave for s in table.STEPS] == sorted(s.wave for s in table.STEPS)
    # A role's steps are next to each other, so running a role runs them in the table's order.
    for role in table.ROLES:
        where = [i for i, step in enumerate(table.STEPS) if step.role == role]
        assert where == list(range(where[0], where[-1] + 1)), role


@pytest.mark.parametrize("name", NAMES)
def test_the_check_names_the_roles_of_the_steps_the_plan_turns_on_and_each_runs_its_own(name):
    plan = build_plan(inputs(name))
    methods = {group["method"] for group in plan["groups"]}
    # One role per RDMA method; the check asks for those of the methods the groups use.
    assert [s.method for s in table.METHOD_STEPS.values() if s.enabled(plan)] == [
        m for m in table.METHOD_STEPS if m in methods
    ]
    for role in table.ROLES:
        (task,) = tasks_of(REPO_ROOT / "roles" / role / "tasks" / "main.yml")
        assert task["gpudirect.rdma.step"] == {"role": role}


@pytest.mark.parametrize("name", NAMES)
def test_render_lays_out_a_folder_per_step_in_the_order_of_the_steps(name):
    plan = build_plan(inputs(name))
    files = kustomize_tree(table.build_objects(plan))
    folders = yaml.safe_load(files["kustomization.yaml"])["resources"]
    planned = [s.component for s in table.STEPS if table.component_objects(plan, s.component)]
    assert folders == planned
    waves = [table.wave(o) for o in table.build_objects(plan) if not table.is_olm(o)]
    assert waves == sorted(waves)


def test_uninstall_goes_through_every_step_in_reverse_then_the_operators():
    assert (
        "test-pods",
        *(s.name for s in reversed(table.STEPS)),
        "operators",
        "namespaces",
    ) == remove.STAGES
    stages = [
        stage
        for path in sorted((REPO_ROOT / "roles" / "uninstall" / "tasks").glob("*.yml"))
        for task in tasks_of(path)
        for stage in (task.get("gpudirect.rdma.remove") or {}).get("stages") or []
    ]
    opt_in = [s.name for s in table.STEPS if s.uninstall_when]
    assert sorted(stages) == sorted(["operands", "operators", *opt_in, "namespaces"])
    assert set(remove.OPERAND_STAGES) | set(opt_in) == set(remove.STAGES) - {
        "operators",
        "namespaces",
    }


@pytest.mark.parametrize("name", NAMES)
def test_diagnostics_read_every_steps_kinds_and_namespaces(name):
    plan = build_plan(inputs(name))
    read = {(api_version, kind) for api_version, kind, _scope in diagnostics.kinds_to_read()}
    assert len(read) == len(diagnostics.kinds_to_read())
    for step in table.STEPS:
        assert set(step.kinds) <= read, step.name
    namespaces = diagnostics.plan_namespaces(plan)
    for step in table.STEPS:
        if not step.enabled(plan):
            # An opt-in step the plan leaves off: the plan holds no such operator.
            assert step.operator is None or step.operator.key not in plan["operators"]
            continue
        if step.operator:
            assert plan["operators"][step.operator.key]["namespace"] in namespaces
        assert set(step.namespaces(plan)) <= set(namespaces)


def test_every_choice_list_of_steps_and_stages_is_the_tables():
    """The modules' and the filter's documented choices, in the table's order."""
    from ansible.module_utils.common.yaml import yaml_load

    from ansible_collections.gpudirect.rdma.plugins.filter import objects
    from ansible_collections.gpudirect.rdma.plugins.modules import remove as remove_module
    from ansible_collections.gpudirect.rdma.plugins.modules import step as step_module

    def choices(documentation: str, option: str) -> list[str]:
        return yaml_load(documentation)["options"][option]["choices"]

    assert choices(step_module.DOCUMENTATION, "name") == ["all", *table.NAMES]
    assert choices(step_module.DOCUMENTATION, "role") == list(table.ROLES)
    assert choices(objects.DOCUMENTATION, "component") == list(table.components())
    assert choices(remove_module.DOCUMENTATION, "stages") == ["operands", *remove.STAGES]
    assert choices(remove_module.DOCUMENTATION, "reset") == remove.RESETTABLE
