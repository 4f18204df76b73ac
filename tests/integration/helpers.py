"""Helpers shared by the integration tests."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import REPO_ROOT


def playbook_command(playbook: Path, *args: str) -> list[str]:
    """ansible-playbook of this virtual environment, as a user would run it."""
    return [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook), *args]


def playbook_env(kubeconfig: Path, **extra: str) -> dict:
    """The environment of a playbook run: the kubeconfig, this repository's ansible.cfg, no
    colour; extra variables on top (a stdout callback, say). Without PYTHONDONTWRITEBYTECODE,
    as Python runs by default: the collection's code is compiled once for every run
    (plugins/module_utils/bytecode_cache.py), not once per run."""
    return {
        **{key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
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


def server_side_dry_run(resources, obj: dict) -> dict:
    """What the server would store for obj: a dry-run create with strict field validation.
    Namespaces are created for real, so that namespaced objects can be tried in them."""
    api = resources.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    if obj["kind"] == "Namespace":
        try:
            api.create(body=obj)
        except ApiException as error:
            assert error.status == 409, error.body
        return api.get(name=obj["metadata"]["name"]).to_dict()
    return api.create(
        body=obj,
        namespace=obj["metadata"].get("namespace"),
        dry_run="All",
        field_validation="Strict",
    ).to_dict()


def assert_kept(stored, sent, path="") -> None:
    """Everything sent is stored unchanged: nothing pruned or rewritten (the server may add
    its schema defaults and metadata, an operator its status)."""
    if isinstance(sent, dict):
        assert isinstance(stored, dict), f"{path}: stored {stored!r}"
        for key, value in sent.items():
            assert key in stored, f"{path}.{key} was pruned by the server"
            assert_kept(stored[key], value, f"{path}.{key}")
    else:
        assert stored == sent, f"{path}: stored {stored!r}, sent {sent!r}"
