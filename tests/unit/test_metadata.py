"""meta/runtime.yml: the k8s action group names exactly the modules that take kubernetes.core's
connection options, extends kubernetes.core's k8s group, and ansible-core resolves it so;
requires_ansible is the ansible-core the collection is tested with.

Which modules take the options is read from the modules themselves (the argument spec their
main() builds, or for a module whose code is an action plugin, its documented options), so adding
or removing a module needs no change here."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible.release import __version__ as ANSIBLE_CORE_VERSION
from ansible_collections.kubernetes.core.plugins.module_utils import args_common

REPO_ROOT = Path(__file__).resolve().parents[2]
FQCN = "gpudirect.rdma"
GROUP = "k8s"
AUTH_FRAGMENT = "kubernetes.core.k8s_auth_options"
AUTH_OPTIONS = frozenset(args_common.AUTH_ARG_SPEC)
RUNTIME = yaml.safe_load((REPO_ROOT / "meta" / "runtime.yml").read_text())
KUBERNETES_CORE_RUNTIME = yaml.safe_load(
    (Path(args_common.__file__).resolve().parents[2] / "meta" / "runtime.yml").read_text()
)
MODULES = sorted(
    path.stem
    for path in (REPO_ROOT / "plugins" / "modules").glob("*.py")
    if path.stem != "__init__"
)
BIN = Path(sys.executable).parent
ENV = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / ".collections")}


class _Built(Exception):
    """Raised instead of building an AnsibleModule, carrying its argument spec."""

    def __init__(self, spec: dict):
        super().__init__("AnsibleModule built")
        self.spec = spec


def _capture(_self, *args, **kwargs):
    raise _Built(kwargs["argument_spec"] if "argument_spec" in kwargs else args[0])


def built_spec(name: str) -> dict | None:
    """The argument spec module `name` builds its AnsibleModule with (the object is never
    built: the module reads no input and reaches no cluster); None when the module file is
    documentation only and an action plugin is its code."""
    module = importlib.import_module(f"ansible_collections.gpudirect.rdma.plugins.modules.{name}")
    if not hasattr(module, "main"):
        assert (REPO_ROOT / "plugins" / "action" / f"{name}.py").is_file(), (
            f"plugins/modules/{name}.py has no main() and no action plugin of its name runs it"
        )
        return None
    with mock.patch.object(AnsibleModule, "__init__", _capture):
        try:
            module.main()
        except _Built as built:
            return built.spec
    pytest.fail(f"plugins/modules/{name}.py: main() returned without building an AnsibleModule")


def documented_options(names: list[str]) -> dict[str, set[str]]:
    """The options ansible-doc shows for each module, doc fragments merged."""
    if not names:
        return {}
    result = subprocess.run(
        [str(BIN / "ansible-doc"), "--json", *(f"{FQCN}.{name}" for name in names)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    docs = json.loads(result.stdout)
    return {name: set(docs[f"{FQCN}.{name}"]["doc"]["options"]) for name in names}


@pytest.fixture(scope="module")
def options_of() -> dict[str, set[str]]:
    """Every module's options: those its code accepts, or for an action plugin's module (whose
    code takes what it documents), the documented ones."""
    specs = {name: built_spec(name) for name in MODULES}
    found = {name: set(spec) for name, spec in specs.items() if spec is not None}
    found.update(documented_options([name for name, spec in specs.items() if spec is None]))
    return found


@pytest.fixture(scope="module")
def connected(options_of) -> list[str]:
    """The modules that take kubernetes.core's connection options."""
    partial = {
        name: sorted(AUTH_OPTIONS - options)
        for name, options in options_of.items()
        if options & AUTH_OPTIONS and not options >= AUTH_OPTIONS
    }
    assert not partial, f"modules with only some of kubernetes.core's connection options: {partial}"
    return sorted(name for name, options in options_of.items() if options >= AUTH_OPTIONS)


def group_actions(runtime: dict, group: str) -> list[str]:
    """The action names of one action group."""
    return [entry for entry in runtime["action_groups"][group] if isinstance(entry, str)]


def group_metadata(runtime: dict, group: str) -> list[dict]:
    """The metadata entries of one action group."""
    return [
        entry["metadata"] for entry in runtime["action_groups"][group] if isinstance(entry, dict)
    ]


def test_the_derivation_finds_modules_that_take_connection_options(connected):
    # The group tests below compare against this list: an empty one would prove nothing.
    assert connected, "no module of plugins/modules takes kubernetes.core's connection options"


def test_the_k8s_group_names_exactly_the_modules_that_take_connection_options(connected):
    actions = group_actions(RUNTIME, GROUP)
    assert len(actions) == len(set(actions)), f"a module is named twice in {GROUP}: {actions}"
    missing = sorted(set(connected) - set(actions))
    unknown = sorted(set(actions) - set(MODULES))
    without_options = sorted(set(actions) & set(MODULES) - set(connected))
    assert not missing, (
        f"meta/runtime.yml action_groups.{GROUP} lacks modules that take kubernetes.core's "
        f"connection options: {missing}"
    )
    assert not unknown, (
        f"meta/runtime.yml action_groups.{GROUP} names modules that plugins/modules does not "
        f"have: {unknown}"
    )
    assert not without_options, (
        f"meta/runtime.yml action_groups.{GROUP} names modules that take no connection "
        f"options: {without_options}"
    )


def doc_fragments(name: str) -> list[str]:
    """The doc fragments module `name`'s DOCUMENTATION extends."""
    module = importlib.import_module(f"ansible_collections.gpudirect.rdma.plugins.modules.{name}")
    return yaml.safe_load(module.DOCUMENTATION).get("extends_documentation_fragment") or []


def test_every_module_of_the_group_documents_them_with_kubernetes_core_fragment(connected):
    lacking = [name for name in connected if AUTH_FRAGMENT not in doc_fragments(name)]
    assert not lacking, f"modules whose DOCUMENTATION does not extend {AUTH_FRAGMENT}: {lacking}"


def test_the_group_extends_kubernetes_core_k8s_group():
    assert group_metadata(RUNTIME, GROUP) == [{"extend_group": ["kubernetes.core.k8s"]}]
    assert {"k8s", "k8s_info"} <= set(group_actions(KUBERNETES_CORE_RUNTIME, "k8s"))


# ansible-core's own resolution, as it runs when a play with module_defaults is loaded
# (Base._resolve_group): the play keeps the group's actions and each action's groups.
RESOLVE = """
import json, sys
from ansible import constants as C
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.manager import VariableManager

init_plugin_loader(C.COLLECTIONS_PATHS)
loader = DataLoader()
play = Play.load(
    {"hosts": "localhost", "module_defaults": {"group/" + sys.argv[1]: {"kubeconfig": "k"}}},
    variable_manager=VariableManager(loader=loader),
    loader=loader,
)
print(json.dumps({"group": play._group_actions[sys.argv[1]], "of": play._action_groups}))
"""


def test_ansible_core_resolves_the_group_to_these_modules_and_kubernetes_core_ones():
    """What module_defaults: group/gpudirect.rdma.k8s applies to, as ansible-core resolves it
    when it loads a play."""
    result = subprocess.run(
        [sys.executable, "-c", RESOLVE, f"{FQCN}.{GROUP}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    assert "[WARNING]" not in result.stderr, result.stderr  # e.g. malformed group metadata
    resolved = json.loads(result.stdout)
    actions = group_actions(RUNTIME, GROUP)
    core_actions = group_actions(KUBERNETES_CORE_RUNTIME, "k8s")
    expected = {f"{FQCN}.{name}" for name in actions} | {
        f"kubernetes.core.{name}" for name in core_actions
    }
    assert set(resolved["group"]) == expected
    for action in ("gpudirect.rdma.wait", "kubernetes.core.k8s_info"):
        assert f"{FQCN}.{GROUP}" in resolved["of"][action]


def _minor(version: str) -> tuple[int, int]:
    major, minor = re.match(r"\D*(\d+)\.(\d+)", version).groups()
    return int(major), int(minor)


def matrix() -> list[tuple[int, int]]:
    """The ansible-core minors make test-matrix runs (tests/ansible-matrix.txt)."""
    lines = (REPO_ROOT / "tests" / "ansible-matrix.txt").read_text().splitlines()
    return [_minor(line.split()[0] + ".0") for line in lines if line and not line.startswith("#")]


def test_requires_ansible_is_exactly_the_ansible_cores_the_tests_run():
    """Its lower bound is the ansible-core make test and the execution environment use; its
    upper bound the next minor after the newest make test-matrix runs; every minor between is
    tested."""
    required = RUNTIME["requires_ansible"]
    match = re.fullmatch(r">=(\d+\.\d+\.\d+),<(\d+\.\d+)", required)
    assert match, required
    execution_environment = yaml.safe_load(
        (REPO_ROOT / "meta" / "execution-environment.yml").read_text()
    )
    pinned = execution_environment["dependencies"]["ansible_core"]["package_pip"]
    assert pinned.startswith("ansible-core=="), pinned
    low = _minor(match[1])
    assert low == _minor(pinned.removeprefix("ansible-core==")), (required, pinned)
    high = _minor(match[2] + ".0")
    tested = [low, *matrix()]
    assert tested == [(low[0], minor) for minor in range(low[1], high[1])], (required, tested)
    # make test runs the lowest (requirements-test.txt), make test-matrix each other one.
    assert _minor(ANSIBLE_CORE_VERSION) in tested, (ANSIBLE_CORE_VERSION, tested)


def test_what_the_playbooks_write_where_they_run_is_ignored_by_git_and_the_build():
    """The folders the playbooks write into by default (PWD/<folder>), and the files where older
    releases wrote them, never reach git or a built tarball."""
    defaults = [
        (REPO_ROOT / "roles" / "verify" / "defaults" / "main.yml").read_text(),
        (REPO_ROOT / "roles" / "diagnostics" / "defaults" / "main.yml").read_text(),
        (REPO_ROOT / "playbooks" / "render.yml").read_text(),
    ]
    folders = {folder for text in defaults for folder in re.findall(r"'/([a-z-]+)'\)? *}}", text)}
    assert folders == {"gpudirect-rdma-output", "rendered"}, folders
    ignored = set(yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())["build_ignore"])
    gitignored = set((REPO_ROOT / ".gitignore").read_text().split())
    for name in (*folders, "gpudirect-rdma-diagnostics"):
        assert name in ignored, f"galaxy.yml build_ignore lacks {name}"
        assert f"{name}/" in gitignored, f".gitignore lacks {name}/"
    assert "verify-report.*" in ignored
    assert {"verify-report.json", "verify-report.xml", "verify-report.html"} <= gitignored
