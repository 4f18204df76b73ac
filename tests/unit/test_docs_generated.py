"""The variable tables of the documentation are what hack/docs.py writes from the declarations
(the plan module's DOCUMENTATION, the roles' argument specs), so they cannot drift: a page that
differs fails here, saying to run make docs."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import DEFAULTS, PREFIX
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import (
    SETTINGS_ROLES,
    role_options,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "hack" / "docs.py"
ROLES = sorted(path.name for path in (REPO_ROOT / "roles").iterdir())
# What the script reads and writes, copied for the tests that change it.
INPUTS = (
    "README.md",
    "docs",
    "roles",
    "plugins/modules/plan.py",
    "plugins/plugin_utils/plan/inputs.py",
    "plugins/plugin_utils/plan/settings.py",
    "plugins/module_utils",
    "plugins/doc_fragments",
)


def load_script():
    spec = importlib.util.spec_from_file_location("hack_docs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docs = load_script()


def run_docs(root: Path, *args: str) -> subprocess.CompletedProcess:
    """The script in this process (fast), as make docs would run it on root."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = docs.main(["--root", str(root), *args])
    return subprocess.CompletedProcess(args, code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture
def copy(tmp_path) -> Path:
    for name in INPUTS:
        source, target = REPO_ROOT / name, tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)
    assert run_docs(tmp_path, "--check").returncode == 0, "the copy starts as the repository is"
    return tmp_path


def block(text: str, key: str) -> str:
    match = re.search(rf"<!-- BEGIN GENERATED: {key};.*?<!-- END GENERATED -->", text, re.DOTALL)
    assert match, key
    return match.group(0)


def test_the_pages_are_what_make_docs_writes():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_a_changed_default_of_a_step_setting_fails_the_check(copy):
    """A step declares its settings: its role's defaults, argument spec, README and the roles
    page are written from that one declaration."""
    step = copy / "plugins" / "module_utils" / "steps" / "nfd.py"
    text = step.read_text()
    declared = '"nfd_min_nodes",\n    1,'
    assert text.count(declared) == 1
    step.write_text(text.replace(declared, '"nfd_min_nodes",\n    3,'))
    result = run_docs(copy, "--check")
    assert result.returncode == 1
    assert "run make docs" in result.stderr
    for page in (
        "roles/nfd/meta/argument_specs.yml",
        "roles/nfd/defaults/main.yml",
        "docs/roles.md",
        "roles/nfd/README.md",
    ):
        assert page in result.stderr
    assert "docs/variables.md" not in result.stderr, "nfd has no setting the playbooks read"
    assert "`3`" not in (copy / "roles" / "nfd" / "README.md").read_text(), "--check wrote"
    # make docs writes them, and then the check passes.
    assert run_docs(copy).returncode == 0
    assert "| `nfd_min_nodes` | int | `3` |" in (copy / "roles/nfd/README.md").read_text()
    assert "\nnfd_min_nodes: 3\n" in (copy / "roles/nfd/defaults/main.yml").read_text()
    assert run_docs(copy, "--check").returncode == 0


def test_a_hand_edit_of_a_generated_argument_spec_or_default_fails_the_check(copy):
    for path, before, after in (
        ("roles/nfd/meta/argument_specs.yml", "default: 900", "default: 901"),
        ("roles/nfd/defaults/main.yml", "nfd_install_timeout: 900", "nfd_install_timeout: 901"),
    ):
        page = copy / path
        text = page.read_text()
        page.write_text(text.replace(before, after))
        result = run_docs(copy, "--check")
        assert result.returncode == 1 and path in result.stderr, result.stderr
        page.write_text(text)


def test_a_changed_default_of_the_plan_fails_the_check(copy):
    plan = copy / "plugins" / "modules" / "plan.py"
    text = plan.read_text()
    assert text.count("default: 1500") == 1
    plan.write_text(text.replace("default: 1500", "default: 9000"))
    result = run_docs(copy, "--check")
    assert result.returncode == 1
    assert "generated tables out of date in: docs/variables.md; run make docs" in result.stderr


def test_a_hand_edit_inside_the_markers_fails_and_outside_them_does_not(copy):
    page = copy / "docs" / "variables.md"
    text = page.read_text()
    row = "| `gpudirect_rdma_mtu` | int | `1500` |"
    assert text.count(row) == 1
    page.write_text(text.replace(row, "| `gpudirect_rdma_mtu` | int | `9000` |"))
    result = run_docs(copy, "--check")
    assert result.returncode == 1
    assert "docs/variables.md" in result.stderr
    assert "run make docs" in result.stderr

    page.write_text(text.replace("## Settings\n", "## Settings\n\nA sentence by hand.\n"))
    assert run_docs(copy, "--check").returncode == 0


def test_a_page_without_its_table_is_an_error(copy):
    readme = copy / "roles" / "verify" / "README.md"
    readme.write_text(
        re.sub(r"<!-- BEGIN GENERATED.*?END GENERATED -->\n", "", readme.read_text(), flags=re.S)
    )
    before = (copy / "docs" / "roles.md").read_text()
    step = copy / "plugins" / "module_utils" / "steps" / "nfd.py"
    step.write_text(
        step.read_text().replace('"nfd_min_nodes",\n    1,', '"nfd_min_nodes",\n    3,')
    )
    result = run_docs(copy)
    assert result.returncode == 2
    assert "roles/verify/README.md: holds the tables [], expected ['role verify']" in result.stderr
    assert (copy / "docs" / "roles.md").read_text() == before, "nothing is written on an error"


def test_the_tables_hold_every_input_setting_and_role():
    """Cross-check of what the script reads without importing against what the plan imports."""
    variables = (REPO_ROOT / "docs" / "variables.md").read_text()
    inputs = re.findall(r"^\| `(\w+)` \|", block(variables, "plan-inputs"), re.MULTILINE)
    assert inputs == [PREFIX + name for name in DEFAULTS]
    settings = re.findall(r"^\| `(\w+)` \|", block(variables, "settings"), re.MULTILINE)
    expected = [
        name
        for role in SETTINGS_ROLES
        for name in role_options(role)
        if not name.startswith(PREFIX)
    ]
    assert settings == [*expected, PREFIX + "take_over"]
    roles_page = (REPO_ROOT / "docs" / "roles.md").read_text()
    for role in ROLES:
        names = re.findall(r"^\| `(\w+)` \|", block(roles_page, f"role {role}"), re.MULTILINE)
        assert names == list(role_options(role)), role
        readme = (REPO_ROOT / "roles" / role / "README.md").read_text()
        assert block(readme, f"role {role}") == block(roles_page, f"role {role}")


def test_markup_becomes_markdown():
    assert docs.markdown("Set O(image_registry) and C(a|b) or I(x).", PREFIX) == (
        "Set `gpudirect_rdma_image_registry` and `a\\|b` or *x*."
    )
    assert docs.markdown("M(gpudirect.rdma.plan), P(gpudirect.rdma.objects#filter)", "") == (
        "`gpudirect.rdma.plan`, `gpudirect.rdma.objects`"
    )
    assert docs.markdown("suffixed C(-rail<N>), else <none>", "") == (
        "suffixed `-rail<N>`, else &lt;none>"
    )
    assert docs.first_sentence("Range, e.g. C(10.0.0.0/8). More.") == "Range, e.g. C(10.0.0.0/8)."
    assert docs.first_sentence("One sentence only") == "One sentence only"
    assert docs.yaml_value("4.20") == "`'4.20'`"
    assert docs.yaml_value({"a/b": "true"}) == "`{a/b: 'true'}`"
    assert docs.yaml_value("quay.io/x:1") == "`quay.io/x:1`"
