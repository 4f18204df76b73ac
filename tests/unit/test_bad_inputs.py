"""The table of malformed inventories (tests/bad_inputs.py) against the validation every playbook
runs first: each raises, naming the variable, the bad value and what is allowed. The same table
runs the playbooks against the local control plane in tests/integration/test_bad_inputs.py."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import (
    PlanError,
    check_inventory,
)
from tests.bad_inputs import CASES, IDS
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
