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
  relative to the front page.

--check writes nothing and exits 1, naming the pages, when a page differs from what this script
would write (tests/unit/test_docs_generated.py runs it). A page that lacks a table it must hold,
or holds one that is not known, is an error either way.
"""

from __future__ import annotations

import argparse
import ast
import functools
import posixpath
import re
import sys
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
LINK = re.compile(r"\]\((?P<target>[^)#\s:]+)(?P<anchor>#[^)\s]*)?\)")
# The end of a sentence: a full stop and white space before a capital, not in "e.g." or "i.e.".
SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z`])")


class DocsError(Exception):
    """A page or a declaration the tables cannot be written from."""


def _literal(path: Path, name: str):
    """The value of the module-level assignment `name` in a Python file, read without importing
    it (the plugins import Ansible; this script needs PyYAML only)."""
    for node in ast.parse(path.read_text()).body:
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


@functools.cache
def _parsed(text: str):
    """YAML parsed once per content (the tables read each file many times; nothing mutates it)."""
    return yaml.safe_load(text)


def role_options(root: Path, role: str) -> dict[str, dict]:
    path = root / "roles" / role / "meta" / "argument_specs.yml"
    return _parsed(path.read_text())["argument_specs"]["main"].get("options", {})


def role_defaults(root: Path, role: str) -> dict:
    path = root / "roles" / role / "defaults" / "main.yml"
    return (_parsed(path.read_text()) or {}) if path.exists() else {}


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
    }
    for role in roles(root):
        known[f"role {role}"] = (
            f"roles/{role}/meta/argument_specs.yml",
            lambda role=role: role_table(root, role),
        )
    return known


def pages(root: Path) -> dict[str, list[str]]:
    """Every page with tables, and the tables it must hold, in order."""
    role_names = roles(root)
    expected = {
        "README.md": ["pages"],
        "docs/variables.md": ["plan-inputs", "settings"],
        "docs/roles.md": [f"role {role}" for role in role_names],
    }
    for role in role_names:
        expected[f"roles/{role}/README.md"] = [f"role {role}"]
    return expected


def render(root: Path, page: str, text: str, keys: list[str]) -> str:
    """The page with each table written anew."""
    known = sources(root)
    found = [match.group("key").strip() for match in BLOCK.finditer(text)]
    if found != keys:
        raise DocsError(
            f"{page}: holds the tables {found}, expected {keys} (each between "
            f"'<!-- BEGIN GENERATED: <table>; ... -->' and '{END}')"
        )

    def block(match: re.Match) -> str:
        key = match.group("key").strip()
        source, write = known[key]
        return "\n".join([BEGIN.format(key=key, source=source), *write(), END])

    return BLOCK.sub(block, text)


def run(root: Path, check: bool) -> list[str]:
    """Write (or, with check, compare) every page; returns the pages that differed."""
    written = {}
    for page, keys in pages(root).items():
        path = root / page
        if not path.exists():
            raise DocsError(f"{page}: missing; it must hold the tables {keys}")
        text = path.read_text()
        new = render(root, page, text, keys)
        if new != text:
            written[path] = new
    # Every page is rendered before any is written: an error leaves them all as they were.
    if not check:
        for path, new in written.items():
            path.write_text(new)
    return [str(path.relative_to(root)) for path in written]


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
