"""Write the variable tables of the documentation from the declarations they describe.

    python hack/docs.py [--check] [--root DIR]        (make docs)

Each table sits between two marker comments in a Markdown page,

    <!-- BEGIN GENERATED: <table>; ... -->
    ...
    <!-- END GENERATED -->

and everything outside the markers is written by hand. The tables:

- `plan-inputs` (docs/variables.md): every option of the gpudirect.rdma.plan module's
  DOCUMENTATION (plugins/modules/plan.py) that an inventory sets, as its `gpudirect_rdma_`
  variable, with its type, default, choices and the first paragraph of its description;
- `settings` (docs/variables.md): the options of the roles whose settings the playbooks read
  (SETTINGS_ROLES of the plan's settings.py) and gpudirect_rdma_take_over, with the roles that
  declare each;
- `role <name>` (docs/roles.md, once per role, and roles/<name>/README.md): the options of the
  role's meta/argument_specs.yml, with the first sentence of each description;
- `pages` (README.md, "Where to read on"): the list of pages of docs/README.md, its links made
  relative to the front page;
- `steps` (docs/steps.md): the step table (plugins/module_utils/steps/), a row per step;
- `options <role>` (roles/<role>/meta/argument_specs.yml, in YAML comments): the settings the
  role's steps declare (steps/<step>.py), what every role that runs steps takes and the
  connection every role takes (plugins/doc_fragments/role_options.py);
- `defaults <role>` (roles/<role>/defaults/main.yml, for each role of the step table): the same
  settings with their defaults.

The step table is read by importing it from the tree (in a Python of its own, so that --root may
name a copy); the other declarations are read without importing anything.

--check writes nothing and exits 1, naming the pages, when a page differs from what this script
would write (tests/unit/test_docs_generated.py runs it). A page that lacks a table it must hold,
or holds one that is not known, is an error either way.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import posixpath
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
PREFIX = "gpudirect_rdma_"
BEGIN = (
    "<!-- BEGIN GENERATED: {key}; from {source} by hack/docs.py: edit that, then run make docs -->"
)
END = "<!-- END GENERATED -->"
BLOCK = re.compile(
    r"^<!-- BEGIN GENERATED: (?P<key>[^;]+);[^\n]*-->\n.*?^<!-- END GENERATED -->$",
    re.MULTILINE | re.DOTALL,
)
# The sources of a YAML block are in this docstring: a line naming them would pass 120 columns.
YAML_BEGIN = "{indent}# BEGIN GENERATED: {key}; written by make docs (hack/docs.py)"
YAML_END = "{indent}# END GENERATED"
YAML_BLOCK = re.compile(
    r"^(?P<indent>[ ]*)# BEGIN GENERATED: (?P<key>[^;]+);[^\n]*\n.*?^(?P=indent)# END GENERATED$",
    re.MULTILINE | re.DOTALL,
)
STEPS_SOURCE = "plugins/module_utils/steps/"
FRAGMENT = "plugins/doc_fragments/role_options.py"
# What make docs wrote already in this run, read in its place (the role tables are written from
# the argument specs written just before them); empty outside a run.
_WRITTEN: dict[Path, str] = {}
# Ansible's documentation markup, as ansible-doc reads it (a code span ends at the first ')').
MARKUP = (
    (re.compile(r"L\(([^,)]+),\s*([^)]+)\)"), r"[\1](\2)"),
    (re.compile(r"U\(([^)]+)\)"), r"\1"),
    (re.compile(r"P\(([^#)]+)#[^)]*\)"), r"`\1`"),
    (re.compile(r"\b(?:C|V|M|E|RV)\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"\bI\(([^)]*)\)"), r"*\1*"),
    (re.compile(r"\bB\(([^)]*)\)"), r"**\1**"),
)
OPTION = re.compile(r"\bO\(([^)]*)\)")
# Ansible's markup dropped, for a YAML comment.
PLAIN = re.compile(r"\b(?:C|V|M|E|RV|I|B|O)\(([^)]*)\)")
LINK = re.compile(r"\]\((?P<target>[^)#\s:]+)(?P<anchor>#[^)\s]*)?\)")
# The end of a sentence: a full stop and white space before a capital, not in "e.g." or "i.e.".
SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z`])")


class DocsError(Exception):
    """A page or a declaration the tables cannot be written from."""


def _literal(path: Path, name: str):
    """The value of the assignment `name` in a Python file, at module level or in a class (a doc
    fragment's), read without importing it (the plugins import Ansible; this script needs PyYAML
    only)."""
    tree = ast.parse(path.read_text())
    classes = [node.body for node in tree.body if isinstance(node, ast.ClassDef)]
    for node in [*tree.body, *(statement for body in classes for statement in body)]:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        value = getattr(node, "value", None)
        if value is not None and any(getattr(t, "id", None) == name for t in targets):
            return ast.literal_eval(value)
    raise DocsError(f"{path}: no assignment of {name}")


def plan_options(root: Path) -> dict[str, dict]:
    """The plan's inputs by option name (the task-only options left out)."""
    documentation = _literal(root / "plugins" / "modules" / "plan.py", "DOCUMENTATION")
    task_only = _literal(root / "plugins" / "plugin_utils" / "plan" / "inputs.py", "TASK_ONLY")
    options = yaml.safe_load(documentation)["options"]
    return {name: spec for name, spec in options.items() if name not in task_only}


def roles(root: Path) -> list[str]:
    return sorted(path.parent.parent.name for path in root.glob("roles/*/meta/argument_specs.yml"))


def read(path: Path) -> str:
    return _WRITTEN.get(path) or path.read_text()


@functools.cache
def _parsed(text: str):
    """YAML parsed once per content (the tables read each file many times; nothing mutates it)."""
    return yaml.safe_load(text)


def role_options(root: Path, role: str) -> dict[str, dict]:
    path = root / "roles" / role / "meta" / "argument_specs.yml"
    return _parsed(read(path))["argument_specs"]["main"].get("options", {})


def role_defaults(root: Path, role: str) -> dict:
    path = root / "roles" / role / "defaults" / "main.yml"
    return (_parsed(read(path)) or {}) if path.exists() else {}


def paragraphs(spec: dict) -> list[str]:
    description = spec.get("description", "")
    return [description] if isinstance(description, str) else list(description)


def first_sentence(text: str) -> str:
    match = SENTENCE_END.search(text)
    return text[: match.start() + 1] if match else text


def markdown(text: str, option_prefix: str) -> str:
    """Ansible markup to Markdown fit for a table cell: O(x) names the variable that sets x."""
    text = " ".join(text.split())
    text = OPTION.sub(lambda m: f"`{option_prefix}{m.group(1)}`", text)
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    # Outside code spans, '<' would open an HTML tag; '|' ends a cell everywhere.
    parts = text.split("`")
    parts[::2] = [part.replace("<", "&lt;") for part in parts[::2]]
    return "`".join(parts).replace("|", "\\|")


def yaml_value(value) -> str:
    """A value as it is written in an inventory: quoted where YAML needs it, a list or mapping in
    flow style."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=10000)
    return "`" + dumped.removesuffix("\n...\n").strip() + "`"


def type_of(spec: dict) -> str:
    kind = spec.get("type", "str")
    elements = spec.get("elements")
    return f"{kind} of {elements}" if kind == "list" and elements not in (None, "raw") else kind


def default_of(spec: dict, computed: bool = False) -> str:
    if spec.get("required"):
        return "required"
    if "default" in spec:
        return yaml_value(spec["default"])
    return "computed when the role runs" if computed else "unset"


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [row(header), row(["---"] * len(header)), *(row(cells) for cells in rows)]


def plan_inputs_table(root: Path) -> list[str]:
    rows = [
        [
            f"`{PREFIX}{name}`",
            type_of(spec),
            default_of(spec),
            ", ".join(f"`{choice}`" for choice in spec.get("choices", [])),
            markdown(paragraphs(spec)[0], PREFIX),
        ]
        for name, spec in plan_options(root).items()
    ]
    return table(["variable", "type", "default", "choices", "what"], rows)


def _role_row(root: Path, role: str, name: str, spec: dict) -> list[str]:
    computed = "{{" in str(role_defaults(root, role).get(name, ""))
    return [
        f"`{name}`",
        type_of(spec),
        default_of(spec, computed),
        markdown(first_sentence(paragraphs(spec)[0]), ""),
    ]


def role_table(root: Path, role: str) -> list[str]:
    rows = [_role_row(root, role, name, spec) for name, spec in role_options(root, role).items()]
    return table(["variable", "type", "default", "what"], rows)


def settings_table(root: Path) -> list[str]:
    """The settings of the settings roles (their own prefix), then gpudirect_rdma_take_over,
    described as the first role (by name) that declares it describes it."""
    settings_roles = _literal(
        root / "plugins" / "plugin_utils" / "plan" / "settings.py", "SETTINGS_ROLES"
    )
    rows = []
    for role in settings_roles:
        for name, spec in role_options(root, role).items():
            if not name.startswith(PREFIX):
                cells = _role_row(root, role, name, spec)
                rows.append([*cells[:3], f"`{role}`", cells[3]])
    take_over = PREFIX + "take_over"
    readers = [role for role in roles(root) if take_over in role_options(root, role)]
    if not readers:
        raise DocsError(f"no role declares {take_over}")
    first = _role_row(root, readers[0], take_over, role_options(root, readers[0])[take_over])
    rows.append([*first[:3], ", ".join(f"`{role}`" for role in readers), first[3]])
    return table(["variable", "type", "default", "read by", "what"], rows)


@functools.cache
def step_table(root: Path) -> dict:
    """The step table as data (steps.describe), imported from the tree at root."""
    with tempfile.TemporaryDirectory() as path:
        namespace = Path(path) / "ansible_collections" / "gpudirect"
        namespace.mkdir(parents=True)
        (namespace / "rdma").symlink_to(root.resolve())
        code = (
            "import json; from ansible_collections.gpudirect.rdma.plugins.module_utils.steps "
            "import describe; print(json.dumps(describe()))"
        )
        found = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            check=False,
        )
    if found.returncode:
        raise DocsError(f"{STEPS_SOURCE}: cannot import the step table: {found.stderr.strip()}")
    return json.loads(found.stdout)


def steps_table(root: Path) -> list[str]:
    rows = [
        [
            str(step["order"]),
            f"`{step['name']}`",
            f"`{step['role']}`",
            markdown(step["title"], ""),
            f"`{step['operator']}`" if step["operator"] else "",
            ", ".join(step["kinds"]),
            step["runs"],
            str(step["wave"]),
            "yes" if step["prunes"] else "",
            ", ".join(f"`{name}`" for name in step["checks"]),
            ", ".join(step["disrupts"]),
            step["uninstall"],
        ]
        for step in step_table(root)["steps"]
    ]
    header = [
        "#",
        "step",
        "role",
        "what",
        "OLM package",
        "objects",
        "runs",
        "wave",
        "prunes",
        "preflight checks",
        "disrupts ([effect](disruption.md))",
        "uninstall",
    ]
    return table(header, rows)


def fragment_options(root: Path, name: str) -> dict[str, dict]:
    return yaml.safe_load(_literal(root / FRAGMENT, name))["options"]


def _folded(text: str, indent: str) -> list[str]:
    return [indent + line for line in textwrap.wrap(" ".join(text.split()), 100 - len(indent))]


def option_lines(name: str, spec: dict, indent: str) -> list[str]:
    """One option of an argument spec, as make docs writes it: each paragraph of its
    description folded, then its other keys in flow style."""
    lines = [f"{indent}{name}:"]
    paragraphs_ = paragraphs(spec)
    if len(paragraphs_) == 1:
        lines += [f"{indent}  description: >-", *_folded(paragraphs_[0], indent + "    ")]
    else:
        lines.append(f"{indent}  description:")
        for paragraph in paragraphs_:
            lines += [f"{indent}    - >-", *_folded(paragraph, indent + "      ")]
    for key, value in spec.items():
        if key != "description":
            lines.append(f"{indent}  {key}: {yaml_value(value).strip('`')}")
    return lines


def role_settings(root: Path, role: str) -> dict[str, dict]:
    """The settings a role's steps declare (none for a role that runs no step)."""
    return step_table(root)["roles"].get(role, {})


def options_block(root: Path, role: str, indent: str) -> list[str]:
    """The options make docs writes into a role's argument spec: its steps' settings, what a
    role of the step table takes, and the connection."""
    options = dict(role_settings(root, role))
    if role in step_table(root)["roles"]:
        options.update(fragment_options(root, "STEP_ROLES"))
    options.update(fragment_options(root, "DOCUMENTATION"))
    return [line for name, spec in options.items() for line in option_lines(name, spec, indent)]


def defaults_block(root: Path, role: str, indent: str) -> list[str]:
    lines = []
    for name, spec in role_settings(root, role).items():
        lines += [""] if lines else []
        lines += _folded(PLAIN.sub(r"\1", spec["description"][0]), indent + "# ")
        lines.append(f"{indent}{name}: {yaml_value(spec['default']).strip('`')}")
    return lines


def pages_list(root: Path) -> list[str]:
    """The list of docs/README.md (its items and their continuation lines), its relative links
    made relative to the root."""
    lines = (root / "docs" / "README.md").read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("- [")), None)
    if start is None:
        raise DocsError("docs/README.md: no list of pages ('- [Page](page.md): what')")
    items = []
    for line in lines[start:]:
        if not line.startswith(("- ", "  ")):
            break
        items.append(line)

    def relink(match: re.Match) -> str:
        target = posixpath.normpath(posixpath.join("docs", match.group("target")))
        return f"]({target}{match.group('anchor') or ''})"

    return [LINK.sub(relink, line) for line in items]


def sources(root: Path) -> dict[str, tuple[str, Callable[[], list[str]]]]:
    """Every table by its key: where it comes from and how it is written."""
    known: dict[str, tuple[str, Callable[[], list[str]]]] = {
        "plan-inputs": ("plugins/modules/plan.py", lambda: plan_inputs_table(root)),
        "settings": ("the roles' meta/argument_specs.yml", lambda: settings_table(root)),
        "pages": ("docs/README.md", lambda: pages_list(root)),
        "steps": (STEPS_SOURCE, lambda: steps_table(root)),
    }
    for role in roles(root):
        known[f"role {role}"] = (
            f"roles/{role}/meta/argument_specs.yml",
            lambda role=role: role_table(root, role),
        )
    return known


def yaml_sources(root: Path) -> dict[str, Callable[[str], list[str]]]:
    """Every YAML block by its key: how it is written (indent -> lines); the module docstring
    says where each comes from."""
    known: dict[str, Callable[[str], list[str]]] = {}
    for role in roles(root):
        known[f"options {role}"] = lambda indent, role=role: options_block(root, role, indent)
    for role in step_table(root)["roles"]:
        known[f"defaults {role}"] = lambda indent, role=role: defaults_block(root, role, indent)
    return known


def yaml_pages(root: Path) -> dict[str, list[str]]:
    """Every YAML file with generated blocks, and the blocks it must hold, in order: written
    before the Markdown pages, which are written from them."""
    expected = {}
    for role in roles(root):
        expected[f"roles/{role}/meta/argument_specs.yml"] = [f"options {role}"]
    for role in step_table(root)["roles"]:
        expected[f"roles/{role}/defaults/main.yml"] = [f"defaults {role}"]
    return expected


def rewritten(page: str, text: str, keys: list[str], pattern: re.Pattern, layout: str, block):
    """text with each generated block (pattern) written anew by block(match), or DocsError when
    the page does not hold exactly the blocks keys, in order (layout: '<what> between <markers>',
    how a page holds them)."""
    found = [match.group("key").strip() for match in pattern.finditer(text)]
    if found != keys:
        noun, _between, markers = layout.partition(" ")
        raise DocsError(f"{page}: holds the {noun} {found}, expected {keys} (each {markers})")
    return pattern.sub(block, text)


def render_yaml(root: Path, page: str, text: str, keys: list[str]) -> str:
    """The YAML file with each generated block written anew."""
    known = yaml_sources(root)

    def block(match: re.Match) -> str:
        key, indent = match.group("key").strip(), match.group("indent")
        begin, end = YAML_BEGIN.format(indent=indent, key=key), YAML_END.format(indent=indent)
        return "\n".join([begin, *known[key](indent), end])

    layout = (
        "blocks between '# BEGIN GENERATED: <block>; ...' and '# END GENERATED', indented alike"
    )
    return rewritten(page, text, keys, YAML_BLOCK, layout, block)


def pages(root: Path) -> dict[str, list[str]]:
    """Every page with tables, and the tables it must hold, in order."""
    role_names = roles(root)
    expected = {
        "README.md": ["pages"],
        "docs/steps.md": ["steps"],
        "docs/variables.md": ["plan-inputs", "settings"],
        "docs/roles.md": [f"role {role}" for role in role_names],
    }
    for role in role_names:
        expected[f"roles/{role}/README.md"] = [f"role {role}"]
    return expected


def render(root: Path, page: str, text: str, keys: list[str]) -> str:
    """The page with each table written anew."""
    known = sources(root)

    def block(match: re.Match) -> str:
        key = match.group("key").strip()
        source, write = known[key]
        return "\n".join([BEGIN.format(key=key, source=source), *write(), END])

    layout = f"tables between '<!-- BEGIN GENERATED: <table>; ... -->' and '{END}'"
    return rewritten(page, text, keys, BLOCK, layout, block)


def run(root: Path, check: bool) -> list[str]:
    """Write (or, with check, compare) every page; returns the pages that differed."""
    _WRITTEN.clear()
    step_table.cache_clear()  # the tree may have changed since the last run in this process
    try:
        for page, keys in yaml_pages(root).items():
            _render_into(root, page, keys, render_yaml)
        for page, keys in pages(root).items():
            _render_into(root, page, keys, render)
        written = dict(_WRITTEN)
    finally:
        _WRITTEN.clear()
    # Every page is rendered before any is written: an error leaves them all as they were.
    if not check:
        for path, new in written.items():
            path.write_text(new)
    return [str(path.relative_to(root)) for path in written]


def _render_into(root: Path, page: str, keys: list[str], render_page) -> None:
    path = root / page
    if not path.exists():
        raise DocsError(f"{page}: missing; it must hold the tables {keys}")
    text = path.read_text()
    new = render_page(root, page, text, keys)
    if new != text:
        _WRITTEN[path] = new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the collection's root")
    args = parser.parse_args(argv)
    try:
        differ = run(args.root, args.check)
    except DocsError as error:
        print(f"hack/docs.py: {error}", file=sys.stderr)
        return 2
    if args.check and differ:
        print(
            "generated tables out of date in: " + ", ".join(differ) + "; run make docs",
            file=sys.stderr,
        )
        return 1
    for page in differ:
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
