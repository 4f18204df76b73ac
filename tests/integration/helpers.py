"""Helpers shared by the integration tests."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.harness.controlplane import REPO_ROOT


def playbook_command(playbook: Path, *args: str) -> list[str]:
    """ansible-playbook of this virtual environment, as a user would run it."""
    return [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook), *args]


def playbook_env(kubeconfig: Path, **extra: str) -> dict:
    """The environment of a playbook run: the kubeconfig, this repository's ansible.cfg, no
    colour; extra variables on top (a stdout callback, say)."""
    return {
        **os.environ,
        "K8S_AUTH_KUBECONFIG": str(kubeconfig),
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        **extra,
    }


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
