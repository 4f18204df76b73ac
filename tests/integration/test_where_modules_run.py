"""Where the collection's modules run (plugin_utils/connection.py): on a local connection in the
action's own process, elsewhere shipped as a module. The same task run both ways (async ships
it) gives the same result, met or failed; a task's `environment` reaches the local run as it
reaches a shipped module's process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from tests.harness.controlplane import REPO_ROOT
from tests.integration.helpers import playbook_command

# What async adds to a result, and what differs from one run to the next.
ASYNC_KEYS = {
    "ansible_job_id",
    "finished",
    "started",
    "results_file",
    "stdout",
    "stderr",
    "stdout_lines",
    "stderr_lines",
}


def gate(namespace: str, name: str) -> dict:
    return {
        "gate": f"namespace {name} exists",
        "api_version": "v1",
        "kind": "Namespace",
        "name": name,
        "path": "metadata.name",
        "equals": name,
    }


def task(name: str, gates: list[dict], **keywords) -> dict:
    return {
        "name": name,
        "gpudirect.rdma.wait": {"timeout": 2, "gates": gates},
        "ignore_errors": True,
        **keywords,
    }


def run(path: Path, tasks: list[dict], env: dict) -> dict:
    play = {
        "name": "The same module, here and shipped",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": tasks,
    }
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    done = subprocess.run(
        playbook_command(path),
        cwd=REPO_ROOT,
        env={
            **env,
            "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
            "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    tasks_run = json.loads(done.stdout)["plays"][0]["tasks"]
    return {t["task"]["name"]: t["hosts"]["localhost"] for t in tasks_run}


def comparable(result: dict) -> dict:
    """The module's own result: no async bookkeeping, no timings."""
    kept = {k: v for k, v in result.items() if k not in ASYNC_KEYS and not k.startswith("_")}
    kept["seconds"] = sorted(kept.get("seconds", {}))  # the gates, not how long they took
    return kept


def test_a_module_gives_the_same_result_here_and_shipped(control_plane, namespace, tmp_path):
    env = {**os.environ, "K8S_AUTH_KUBECONFIG": str(control_plane.kubeconfig)}
    met = [gate(namespace, namespace)]
    unmet = [gate(namespace, f"{namespace}-absent")]
    results = run(
        tmp_path / "both.yml",
        [
            task("met here", met),
            task("met shipped", met, **{"async": 60, "poll": 1}),
            task("unmet here", unmet),
            task("unmet shipped", unmet, **{"async": 60, "poll": 1}),
        ],
        env,
    )
    assert not results["met here"].get("failed"), results["met here"]
    assert comparable(results["met here"])["seconds"] == [f"namespace {namespace} exists"]
    assert "ansible_job_id" in results["met shipped"], "async did not ship the module"
    assert "ansible_job_id" not in results["met here"]
    assert comparable(results["met here"]) == comparable(results["met shipped"])
    assert results["unmet here"]["failed"] and results["unmet shipped"]["failed"]
    assert comparable(results["unmet here"]) == comparable(results["unmet shipped"])
    assert f"{namespace}-absent" in results["unmet here"]["msg"]
    assert results["unmet here"]["gate"]["name"] == f"{namespace}-absent"
    # The same arguments, as the module validated them (no_log values masked).
    assert results["met here"]["invocation"]["module_args"]["gates"][0]["min_count"] == 1


def test_the_tasks_environment_reaches_a_local_run(control_plane, namespace, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_")}
    env.pop("KUBECONFIG", None)
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    met = [gate(namespace, namespace)]
    results = run(
        tmp_path / "environment.yml",
        [
            task(
                "with environment",
                met,
                environment={"K8S_AUTH_KUBECONFIG": str(control_plane.kubeconfig)},
            ),
            task("without", met),
        ],
        env,
    )
    assert not results["with environment"].get("failed"), results["with environment"]
    assert results["without"]["failed"]
    assert "no kubeconfig: none was given" in results["without"]["msg"]
