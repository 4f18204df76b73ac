"""Every relative link of the documentation resolves: the file it names exists and so does the
heading its #anchor names (GitHub's anchors). External links are not followed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        REPO_ROOT / "README.md",
        *(REPO_ROOT / "docs").glob("*.md"),
        *(REPO_ROOT / "roles").glob("*/README.md"),
        REPO_ROOT / "benchmarks" / "README.md",
        REPO_ROOT / "tests" / "simulator" / "README.md",
    ]
)
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\((?P<target>[^)\s]*)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(?P<text>.+?)[ \t#]*$", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    return [match.group("target") for match in LINK.finditer(prose(text))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: the text as shown (link text, no code or emphasis marks),
    lower case, punctuation but '-' and '_' dropped, each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated one gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", text)):
        base = slug(match.group("text"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(page: Path, root: Path = REPO_ROOT) -> list[str]:
    """What is wrong with the relative links of one page."""
    text = page.read_text()
    problems = []
    for target in links(text):
        if not target or EXTERNAL.match(target):
            continue
        path_part, anchor = (target.split("#", 1) + [""])[:2]
        resolved = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}: ({target})"
        if not resolved.exists():
            problems.append(f"{where}: no file {path_part}")
        elif anchor and resolved.is_dir():
            problems.append(f"{where}: an anchor in a folder")
        elif anchor and anchor not in anchors(resolved.read_text()):
            problems.append(f"{where}: no heading #{anchor} in {resolved.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page):
    assert page.exists(), page
    assert broken(page) == []


def test_the_pages_link_each_other():
    """Not vacuous: the front page and docs/ hold relative links, some with anchors."""
    targets = [target for page in PAGES for target in links(page.read_text())]
    relative = [target for target in targets if not EXTERNAL.match(target)]
    assert len(relative) >= 40, relative
    assert any("#" in target for target in relative), relative


def test_every_docs_page_is_listed_by_docs_readme_and_the_front_page():
    index = set(links((REPO_ROOT / "docs" / "README.md").read_text()))
    front = set(links((REPO_ROOT / "README.md").read_text()))
    for page in sorted((REPO_ROOT / "docs").glob("*.md")):
        if page.name == "README.md":
            continue
        assert page.name in index, f"docs/README.md does not list {page.name}"
        assert f"docs/{page.name}" in front, f"README.md does not link docs/{page.name}"


def test_github_anchors():
    assert slug("Quick start (fresh machine)") == "quick-start-fresh-machine"
    assert slug("The plan's inputs") == "the-plans-inputs"
    assert slug("`gpudirect.rdma.nfd` and `make_docs`") == "gpudirectrdmanfd-and-make_docs"
    assert slug("See [GitOps](gitops.md)") == "see-gitops"
    text = "# A\n\n## Notes\n\n```\n# not a heading\n```\n\n## Notes\n"
    assert anchors(text) == {"a", "notes", "notes-1"}


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Its part\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Front\n\n"
        "[fine](docs/a.md#its-part) [self](#front) [web](https://example.com/x.md)\n"
        "[gone](docs/b.md) [no heading](docs/a.md#other-part) [no self](#back)\n"
        "`[in code](docs/c.md)`\n\n```\n[in a block](docs/d.md)\n```\n"
    )
    assert broken(page, tmp_path) == [
        "README.md: (docs/b.md): no file docs/b.md",
        "README.md: (docs/a.md#other-part): no heading #other-part in docs/a.md",
        "README.md: (#back): no heading #back in README.md",
    ]
