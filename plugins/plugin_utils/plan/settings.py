"""The settings: what the playbooks read besides the plan's inputs, each with one name and one
default. A role's settings carry the role's name (verify_min_gbps), their default is in its
defaults/main.yml, and its meta/argument_specs.yml, read here at run time, declares their type and
the same default; gpudirect_rdma_take_over is declared alike by every role that reads it. The plan
checks them (the ranges are here) at the first task of every playbook, before any write."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpudirect.rdma.plugins.plugin_utils import yaml_cache

from ..message_size import MESSAGE_SIZE, bytes_of
from . import checks
from .checks import PlanError
from .inputs import DEFAULTS, PREFIX

ROLES = Path(__file__).resolve().parents[3] / "roles"
# The roles whose settings the playbooks take from the inventory or a survey.
SETTINGS_ROLES = ("verify", "uninstall", "diagnostics", "drift")
ROLE_PREFIXES = tuple(role + "_" for role in SETTINGS_ROLES)
PLAYBOOK_SETTINGS = {PREFIX + "render_dir": {"type": "str"}}
# What a run keeps for its next tasks, not an input: the plan, and the preflight verdict.
RUN_FACTS = (PREFIX + "plan", PREFIX + "preflight")
_IMAGE = re.compile(r"^[^\s]+$")


def _image(name: str, value: Any) -> str:
    example = settings()["verify_image"]["default"]
    expected = f"a container image reference without white space, e.g. {example}"
    return checks.string(name, value, _IMAGE, expected)


def _message_size(name: str, value: Any) -> str:
    return checks.string(
        name, str(value), MESSAGE_SIZE, "a size in bytes, or a number with K, M or G (512M)"
    )


def _nccl_nodes(name: str, value: Any) -> int:
    count = checks.whole(0, None, " (0 takes every eligible node, else 2 or more)")(name, value)
    if count == 1:
        raise PlanError(name, value, "0 (every eligible node) or a whole number of 2 or more")
    return count


_folder = functools.partial(checks.string, expected="a folder path")
# What a type cannot say: ranges and forms. Other settings are checked by their type alone.
RULES: dict[str, Callable] = {
    "verify_min_gbps": functools.partial(checks.check_number, low=0, high=3200, unit="Gb/s"),
    "verify_nodes": checks.each(checks.dns_subdomain),
    "verify_image": _image,
    "verify_report_dir": _folder,
    "verify_duration": checks.whole(1, None),
    "verify_size": checks.whole(1, None),
    "verify_qps": checks.whole(1, None),
    "verify_port": checks.whole(1, 65535),
    "verify_timeout": checks.whole(1, None),
    "verify_nccl_nodes": _nccl_nodes,
    "verify_min_busbw_gbps": functools.partial(checks.check_number, low=0, high=25600, unit="Gb/s"),
    "verify_baseline_max_drop_percent": functools.partial(
        checks.check_number, low=0, high=100, unit="%"
    ),
    "verify_nccl_image": _image,
    "verify_nccl_min_bytes": _message_size,
    "verify_nccl_max_bytes": _message_size,
    "verify_nccl_iters": checks.whole(1, None),
    "verify_nccl_ssh_port": checks.whole(1, 65535),
    "verify_nccl_narrow_runs": checks.whole(0, 100, " (0 does not narrow)"),
    "uninstall_timeout": checks.whole(1, 86400, " (seconds each uninstall step may take)"),
    "diagnostics_dir": _folder,
    "diagnostics_log_lines": checks.whole(0, 100000, " (0 reads no logs)"),
    "diagnostics_namespaces": checks.each(checks.dns_label),
    PREFIX + "render_dir": _folder,
    PREFIX + "request_timeout": checks.whole(1, 3600, " (seconds for one API request)"),
    PREFIX + "progress_interval": checks.whole(0, 3600, " (seconds between two lines; 0: none)"),
}


@functools.cache
def role_options(role: str) -> dict[str, dict]:
    """The options of a role's main entry point, as its meta/argument_specs.yml declares them."""
    specs = yaml_cache.load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"].get("options", {})


def with_role_defaults(role: str, given: Mapping, names: Mapping[str, str]) -> dict:
    """For each option of a filter (names: option -> the role setting that holds its default),
    the value given, or the setting's declared default where none (None) was given."""
    options = role_options(role)
    return {
        key: options[setting]["default"] if given.get(key) is None else given[key]
        for key, setting in names.items()
    }


@functools.cache
def settings() -> dict[str, dict]:
    """Every setting by its variable name, with its declaration (type, default, ...): the options
    of the settings roles, and those of any role with the collection's prefix (not the plan's)."""
    found = dict(PLAYBOOK_SETTINGS)
    for spec in sorted(ROLES.glob("*/meta/argument_specs.yml")):
        role = spec.parents[1].name
        for name, option in role_options(role).items():
            if role in SETTINGS_ROLES or name.startswith(PREFIX):
                found.setdefault(name, option)
    return {
        n: o
        for n, o in found.items()
        if n.removeprefix(PREFIX) not in DEFAULTS and n not in RUN_FACTS
    }


def watched(name: str) -> bool:
    """A name the plan looks at: the collection's prefix, or a settings role's."""
    return name.startswith((PREFIX, *ROLE_PREFIXES))


def check_settings(given: Mapping) -> dict:
    """The settings given (by variable name; others are ignored) checked, with the declared
    defaults for the rest, and the settings that must agree with each other (the NCCL test's
    smallest message size at most its largest)."""
    checked = {
        name: option.get("default")
        if given.get(name) is None
        else checks.declared(name, given[name], option, RULES.get(name))
        for name, option in settings().items()
    }
    smallest, largest = checked["verify_nccl_min_bytes"], checked["verify_nccl_max_bytes"]
    if bytes_of(str(smallest).upper()) > bytes_of(str(largest).upper()):
        raise PlanError(
            "verify_nccl_min_bytes",
            smallest,
            f"a size at most verify_nccl_max_bytes ({largest}): all_reduce_perf runs from the "
            "smallest size up to the largest",
        )
    return checked


class MisspeltVariable(PlanError):
    """A variable that is none of the collection's: an old name, a misspelt one, or (with the
    collection's prefix) any other."""

    def __init__(self, name: str, meant: str | None):
        if meant is None:
            hint = (
                "not a variable of gpudirect.rdma (its inputs: ansible-doc gpudirect.rdma.plan; "
                "its settings: the roles' READMEs)"
            )
        elif name.removeprefix(PREFIX) == meant:
            role = meant.split("_", 1)[0]
            hint = f"renamed; set {meant}, the name the {role} role reads"
        else:
            hint = f"not a variable of gpudirect.rdma; did you mean {meant}?"
        super().__init__(name, None, hint)
        self.meant = meant
        ValueError.__init__(self, f"{name}: {hint}")


def unknown_variables(names: Iterable[str], scope: str = "all") -> list[tuple[str, str | None]]:
    """(name, the variable meant) for each name that is an old name of a setting or looks like a
    misspelt variable: of the plan's inputs and the settings, or (scope 'settings') the settings.
    With scope 'all', every other name with the collection's prefix too, meant None where no
    variable is close (a settings role's prefix also starts the roles' own facts, which pass)."""
    candidates = {name.removeprefix(PREFIX): name for name in settings()}
    if scope == "all":
        candidates.update((key, PREFIX + key) for key in DEFAULTS)
    known = {*settings(), *RUN_FACTS, *(PREFIX + key for key in DEFAULTS)}
    found: list[tuple[str, str | None]] = []
    for name in names:
        if name in known or not watched(name) or name.startswith(PREFIX + "aap_"):
            continue  # gpudirect_rdma_aap_*: aap_configure.yml's own settings
        bare = name.removeprefix(PREFIX)  # a setting's old name, or a misspelt name
        meant = (
            [bare] if bare in settings() else difflib.get_close_matches(bare, candidates, 1, 0.85)
        )
        if meant:
            found.append((name, candidates[meant[0]]))
        elif scope == "all" and name.startswith(PREFIX):
            found.append((name, None))
    return found
