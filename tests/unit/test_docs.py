"""Every plugin is documented: ansible-doc shows its DOCUMENTATION, EXAMPLES and RETURN."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.modules import manifest_tree
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import MARKER

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGINS = [
    ("module", path.stem) for path in sorted((REPO_ROOT / "plugins" / "modules").glob("*.py"))
] + [("filter", path.stem) for path in sorted((REPO_ROOT / "plugins" / "filter").glob("*.py"))]


def _strings_only(node, where):
    """Descriptions are text: a stray ': ' in YAML prose would turn a line into a mapping."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description":
                lines = value if isinstance(value, list) else [value]
                assert all(isinstance(line, str) for line in lines), f"{where}.{key}: {value!r}"
            _strings_only(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _strings_only(value, f"{where}[{index}]")


@pytest.mark.parametrize(("plugin_type", "name"), PLUGINS, ids=[n for _type, n in PLUGINS])
def test_ansible_doc_shows_documentation_examples_and_return(plugin_type, name):
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-doc"),
            "-t",
            plugin_type,
            "--json",
            f"gpudirect.rdma.{name}",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / ".collections")},
    )
    assert result.returncode == 0, result.stderr
    assert "[ERROR]" not in result.stderr, result.stderr
    entry = json.loads(result.stdout)[f"gpudirect.rdma.{name}"]
    assert entry["doc"]["short_description"]
    assert entry["doc"]["options"]
    assert entry["examples"].strip()
    assert entry["return"]
    _strings_only(entry["doc"], name)


def test_manifest_tree_marker_is_the_renderers():
    assert manifest_tree.DEFAULT_MARKER == MARKER
    assert manifest_tree.DOCUMENTATION.count(MARKER) == 1


def test_every_plugin_is_named_in_the_plugins_page():
    page = (REPO_ROOT / "docs" / "plugins.md").read_text()
    files = [
        path
        for kind in ("modules", "filter", "lookup", "action")
        for path in sorted((REPO_ROOT / "plugins" / kind).glob("*.py"))
        if path.stem != "__init__"
    ]
    assert files
    missing = [str(p.relative_to(REPO_ROOT)) for p in files if f"{p.stem}`" not in page]
    assert missing == []
