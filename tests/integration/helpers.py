"""Helpers shared by the integration tests."""

from __future__ import annotations

import time

import pytest


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.2, what: str = "condition"):
    """Poll predicate until it returns something truthy; fail with what was last seen."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last seen: {last!r}")
