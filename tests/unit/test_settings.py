"""One name and one default per setting. The plan's inputs are declared in the gpudirect.rdma.plan
module's DOCUMENTATION; a role's settings carry the role's name, their default is in the role's
defaults/main.yml, and its meta/argument_specs.yml declares them with the same default; the plan
checks the settings as those declare them; no setting has a second name. (The AAP surveys ask
these variables with their declared choices and defaults: tests/unit/test_aap.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.filter.verify_pods import verify_pods
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import DEFAULTS, PREFIX
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import (
    check_settings,
    settings,
    unknown_variables,
)
from tests.unit.inventories import inputs

REPO_ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(path.name for path in (REPO_ROOT / "roles").iterdir())
SETTINGS_ROLES = ("verify", "uninstall", "diagnostics", "drift")


def role_defaults(role: str) -> dict:
    path = REPO_ROOT / "roles" / role / "defaults" / "main.yml"
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def role_options(role: str) -> dict:
    path = REPO_ROOT / "roles" / role / "meta" / "argument_specs.yml"
    return yaml.safe_load(path.read_text())["argument_specs"]["main"].get("options", {})


def templated(value) -> bool:
    return isinstance(value, str) and "{{" in value


@pytest.mark.parametrize("role", ROLES)
def test_a_roles_defaults_are_its_argument_specs_defaults(role):
    """Every variable of defaults/main.yml is an option of the role with the same default, and
    every option of the role's own prefix with a default is in defaults/main.yml. A default
    computed when the role runs (a template) is described instead of declared."""
    defaults, options = role_defaults(role), role_options(role)
    for name, value in defaults.items():
        assert name in options, f"{role}: {name} is in defaults/main.yml, not in the argument spec"
        if templated(value):
            assert "default" not in options[name], f"{role}: {name} is computed, not declared"
        else:
            assert options[name].get("default") == value, f"{role}: {name}"
    for name, option in options.items():
        if "default" in option and not name.startswith(PREFIX):
            assert name in defaults, f"{role}: {name} has a default only in the argument spec"


@pytest.mark.parametrize("role", ROLES)
def test_a_roles_defaults_name_no_other_variable(role):
    """A default that takes the value of another variable gives the setting a second name."""
    for name, value in role_defaults(role).items():
        assert not re.search(r"\b(gpudirect_rdma|verify|uninstall|diagnostics)_\w+", str(value)), (
            f"{role}: {name}: {value}"
        )
        assert not name.startswith(PREFIX), (
            f"{role}: {name} belongs to the collection, not the role"
        )


def test_a_variable_of_the_collection_is_declared_alike_by_every_role():
    """gpudirect_rdma_take_over, the plan and the registry login: one type, one default (none for
    the plan's inputs, whose default is the plan's)."""
    declared: dict[str, dict] = {}
    for role in ROLES:
        for name, option in role_options(role).items():
            if not name.startswith(PREFIX):
                continue
            if name.removeprefix(PREFIX) in DEFAULTS:
                assert "default" not in option, f"{role}: {name} is the plan's, with its default"
            kind = {"type": option["type"], "default": option.get("default")}
            assert declared.setdefault(name, kind) == kind, f"{role}: {name} declared unlike before"
    assert declared[PREFIX + "take_over"] == {"type": "bool", "default": False}


def test_the_plan_checks_every_setting_as_the_roles_declare_it():
    expected = {
        name for role in SETTINGS_ROLES for name in role_options(role) if name != PREFIX + "plan"
    } | {PREFIX + "take_over", PREFIX + "render_dir"}
    assert set(settings()) == expected
    checked = check_settings({})
    for role in SETTINGS_ROLES:
        for name, value in role_defaults(role).items():
            assert checked[name] == (None if templated(value) else value), name


@pytest.mark.parametrize("name", sorted(name for name in settings() if not name.startswith(PREFIX)))
def test_no_setting_has_a_second_name(name):
    """Not declared, not read, and refused with the one name when an inventory still sets it."""
    old = PREFIX + name
    assert name not in DEFAULTS
    for role in ROLES:
        assert old not in role_options(role), f"{role} declares {old}"
    readers = [
        path
        for folder in ("roles", "playbooks", "plugins")
        for path in (REPO_ROOT / folder).rglob("*")
        if path.suffix in (".yml", ".py") and old in path.read_text()
    ]
    assert readers == [], f"{old} is read by {readers}"
    assert unknown_variables([old]) == [(old, name)]


def test_the_verify_pods_filter_takes_the_roles_defaults():
    defaults = role_defaults("verify")
    (pod,) = verify_pods(build_plan(inputs("shared-device-roce")), role="server", node="n")
    (container,) = pod["spec"]["containers"]
    assert container["image"] == defaults["verify_image"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert (env["DURATION"], env["PORT"], env["PERFTEST"]) == (
        str(defaults["verify_duration"]),
        str(defaults["verify_port"]),
        defaults["verify_perftest"],
    )
