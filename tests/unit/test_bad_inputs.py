"""The table of malformed inventories (tests/bad_inputs.py) against the validation every playbook
runs first: each raises, naming the variable, the bad value and what is allowed; and each case
through the first task of every playbook it concerns, as ansible-playbook runs that task
(tests/harness/first_task.py: the real playbook, inventory files, extra variables and action
plugin), all in one process. A case of each kind runs the real ansible-playbook against the local
control plane in tests/integration/test_bad_inputs.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (
    PlanError,
    check_inventory,
)
from tests.bad_inputs import (
    CASES,
    END_TO_END,
    FIRST_TASK,
    IDS,
    INVENTORIES,
    PLAYBOOKS,
    RUNS,
    kind,
    write_inventory,
)
from tests.harness.controlplane import REPO_ROOT
from tests.unit.inventories import NAMES, inputs


def test_the_table_is_large_and_covers_every_example_inventory():
    assert len(CASES) >= 40
    assert {case.inventory for case in CASES} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_example_inventories_pass(name):
    """Each case breaks one thing of an inventory that is valid as it is."""
    assert check_inventory({"gpudirect_rdma_" + k: v for k, v in inputs(name).items()})["plan"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_bad_inventory_fails_naming_variable_value_and_what_is_allowed(case):
    with pytest.raises(PlanError) as raised:
        check_inventory(case.variables())
    message = str(raised.value)
    assert raised.value.variable == case.variable, message
    for fragment in case.fragments():
        assert fragment in message, f"{fragment!r} not in {message!r}"


@pytest.mark.parametrize(
    "case", [c for c in CASES if "uninstall" in c.playbooks], ids=lambda case: case.id
)
def test_uninstall_settings_fail_without_a_plan(case):
    """uninstall.yml checks only its settings (scope settings): these still fail there."""
    with pytest.raises(PlanError) as raised:
        check_inventory(case.variables(), scope="settings")
    assert raised.value.variable == case.variable


def test_uninstall_ignores_a_broken_plan():
    """...and a broken plan input does not stop uninstall.yml, which needs no inventory."""
    (case,) = [c for c in CASES if c.id == "fabric-unknown"]
    assert "plan" not in check_inventory(case.variables(), scope="settings")


@pytest.fixture(scope="module")
def first_tasks(tmp_path_factory) -> dict:
    """Every (case, playbook) of the table through the playbook's first task, in one process;
    and two controls, an example inventory as it is: site.yml's first task would go on to the
    cluster (the harness stops it there), verify.yml's plans it."""
    base = tmp_path_factory.mktemp("first-tasks")
    runs, keys = [], []
    for case, playbook in RUNS:
        inventory = write_inventory(base / f"{case.id}-{playbook}", case)
        extra = [json.dumps(case.extra_variables())] if case.extra else []
        runs.append(
            {"playbook": str(PLAYBOOKS[playbook]), "inventory": str(inventory), "extra_vars": extra}
        )
        keys.append((case.id, playbook))
    for playbook in ("site", "verify"):
        runs.append(
            {
                "playbook": str(PLAYBOOKS[playbook]),
                "inventory": str(INVENTORIES / "shared-device-roce"),
                "extra_vars": [],
            }
        )
        keys.append(("control", playbook))
    environment = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / ".collections"),
        "K8S_AUTH_KUBECONFIG": str(base / "no-kubeconfig"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.harness.first_task"],
        input=json.dumps(runs),
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(zip(keys, json.loads(done.stdout), strict=True))


def test_the_first_task_of_a_good_inventory_goes_on_and_plans(first_tasks):
    site, verify = first_tasks[("control", "site")], first_tasks[("control", "verify")]
    assert (site["task"], site["action"]) == FIRST_TASK["site"]
    assert site["msg"] == "reached the cluster: the module would have run"
    assert not verify["failed"], verify["msg"]


@pytest.mark.parametrize(
    ("case", "playbook"), RUNS, ids=[f"{case.id}-{playbook}" for case, playbook in RUNS]
)
def test_a_bad_inventory_fails_the_first_task_of_the_playbook(first_tasks, case, playbook):
    run = first_tasks[(case.id, playbook)]
    assert run["failed"], run
    assert (run["task"], run["action"]) == FIRST_TASK[playbook], run["msg"]
    assert "reached the cluster" not in run["msg"]
    for fragment in case.fragments():
        assert fragment in run["msg"], f"{fragment!r} not in {run['msg']!r}"
    # site.yml's rescue gathers no diagnostics for a bad input: the step task says it is one.
    assert run["bad_input"] == (playbook == "site"), run


def test_a_case_of_each_kind_runs_end_to_end():
    """The integration test's runs: the first of each kind, and every kind of the table."""
    assert {kind(*run) for run in END_TO_END} == {kind(*run) for run in RUNS}
    assert len({kind(*run) for run in END_TO_END}) == len(END_TO_END)
    assert {playbook for _case, playbook in END_TO_END} == set(FIRST_TASK)
    assert len(END_TO_END) < len(RUNS) / 5
