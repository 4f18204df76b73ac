"""Every parser of the collection over every real output of the corpus (tests/unit/real_outputs.py):
each file's expected reading is kept in tests/unit/real_outputs.yml (what the file says, not a
copy of it); a parser that the file's expectation does not name must refuse the file, so no
parser reads a format it does not know as if it did."""

from __future__ import annotations

import pytest
import yaml

from tests.unit.real_outputs import EXPECTATIONS, PARSERS, Refused, corpus_files, key

EXPECTED = yaml.safe_load(EXPECTATIONS.read_text())
FILES = corpus_files()


def test_the_corpus_holds_the_shared_outputs_and_the_projects_own():
    folders = {key(path).split("/")[0] for path in FILES}
    assert "h200-vm-driver580" in folders
    assert len(folders) >= 2, f"the project's captured outputs are missing: {sorted(folders)}"


@pytest.mark.parametrize("path", FILES, ids=key)
def test_every_parser_reads_the_file_as_expected_or_refuses_it(path):
    name = key(path)
    assert name in EXPECTED, (
        f"{name}: no expectation; add what each parser reads in it to {EXPECTATIONS.name}"
    )
    text = path.read_text(errors="replace")
    expected = EXPECTED[name] or {}
    unknown = set(expected) - set(PARSERS)
    assert not unknown, f"{name}: expectations for parsers that do not exist: {sorted(unknown)}"
    for parser, read in PARSERS.items():
        wanted = expected.get(parser)
        if wanted is None:
            with pytest.raises(Refused):
                got = read(text)
                pytest.fail(f"{parser} read {name}, which it should refuse: {got}")
        elif isinstance(wanted, dict) and set(wanted) == {"refused"}:
            with pytest.raises(Refused) as refused:
                read(text)
            assert wanted["refused"] in str(refused.value), (parser, name)
        else:
            assert read(text) == wanted, (parser, name)


def test_every_expectation_names_a_file_of_the_corpus():
    names = {key(path) for path in FILES}
    assert sorted(set(EXPECTED) - names) == []
