"""The integration run's scheduling hint names files that exist: a renamed file would quietly
fall back to the end of the run."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import LONGEST_FIRST

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"


def test_every_file_named_longest_first_is_an_integration_test_file():
    missing = [name for name in LONGEST_FIRST if not (INTEGRATION / name).is_file()]
    assert missing == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
