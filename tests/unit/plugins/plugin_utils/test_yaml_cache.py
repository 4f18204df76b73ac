"""The collection's declared YAML, parsed once and kept (plugin_utils/yaml_cache.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils import yaml_cache
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import settings

TEXT = "options:\n  size:\n    type: int\n    default: 8\n    choices: [1, 8]\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder, nothing kept in the process, writing allowed."""
    folder = tmp_path / "yaml"
    monkeypatch.setattr(yaml_cache, "CACHE", folder)
    monkeypatch.setattr(yaml_cache, "_kept", {})
    monkeypatch.setattr(yaml_cache.sys, "dont_write_bytecode", False)
    return folder


def parses(monkeypatch) -> list[str]:
    """The texts yaml_cache parses from here on."""
    parsed: list[str] = []
    real = yaml_cache.yaml_load

    def counting(text):
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(yaml_cache, "yaml_load", counting)
    return parsed


def test_a_text_is_parsed_once_then_read_from_its_file(cache, monkeypatch):
    parsed = parses(monkeypatch)
    first = yaml_cache.load(TEXT)
    assert first == {"options": {"size": {"type": "int", "default": 8, "choices": [1, 8]}}}
    assert [path.suffix for path in cache.iterdir()] == [".marshal"]
    monkeypatch.setattr(yaml_cache, "_kept", {})  # a new process: only the file is left
    assert yaml_cache.load(TEXT) == first
    assert parsed == [TEXT]


def test_each_load_returns_a_copy_of_its_own(cache):
    first = yaml_cache.load(TEXT)
    first["options"]["size"]["default"] = 1
    assert yaml_cache.load(TEXT)["options"]["size"]["default"] == 8


def test_a_changed_text_is_parsed_anew_into_a_file_of_its_own(cache, monkeypatch):
    parsed = parses(monkeypatch)
    yaml_cache.load(TEXT)
    changed = TEXT.replace("default: 8", "default: 1")
    assert yaml_cache.load(changed)["options"]["size"]["default"] == 1
    assert parsed == [TEXT, changed]
    assert len(list(cache.iterdir())) == 2


def test_nothing_is_written_when_bytecode_writing_is_off(cache, monkeypatch):
    monkeypatch.setattr(yaml_cache.sys, "dont_write_bytecode", True)
    assert yaml_cache.load(TEXT)["options"]["size"]["type"] == "int"
    assert not cache.exists()


def test_a_folder_that_cannot_be_made_parses_as_before(cache, monkeypatch):
    cache.parent.joinpath("blocker").write_text("")
    monkeypatch.setattr(yaml_cache, "CACHE", cache.parent / "blocker" / "yaml")
    assert yaml_cache.load(TEXT)["options"]["size"]["default"] == 8


def test_a_damaged_file_is_parsed_again_and_replaced(cache, monkeypatch):
    yaml_cache.load(TEXT)
    (written,) = cache.iterdir()
    written.write_bytes(b"\x00not marshal")
    monkeypatch.setattr(yaml_cache, "_kept", {})
    parsed = parses(monkeypatch)
    assert yaml_cache.load(TEXT)["options"]["size"]["choices"] == [1, 8]
    assert parsed == [TEXT]
    monkeypatch.setattr(yaml_cache, "_kept", {})
    assert yaml_cache.load(TEXT)["options"]["size"]["choices"] == [1, 8]
    assert parsed == [TEXT]


def test_a_value_marshal_cannot_keep_is_parsed_every_time(cache, monkeypatch):
    parsed = parses(monkeypatch)
    dated = "released: 2026-12-07\n"
    assert str(yaml_cache.load(dated)["released"]) == "2026-12-07"
    assert str(yaml_cache.load(dated)["released"]) == "2026-12-07"
    assert parsed == [dated, dated]
    assert not cache.exists() or list(cache.iterdir()) == []


def test_every_role_argument_spec_reads_the_same_through_the_cache(cache):
    """What the cache gives is what YAML gives, for the real declarations."""
    for spec in sorted(settings.ROLES.glob("*/meta/argument_specs.yml")):
        text = spec.read_text()
        assert yaml_cache.load(text) == yaml_cache.yaml_load(text), spec
        yaml_cache._kept.clear()
        assert yaml_cache.load(text) == yaml_cache.yaml_load(text), spec
