"""module_defaults: group/gpudirect.rdma.k8s gives the connection to this collection's modules
and to kubernetes.core's alike (meta/runtime.yml's k8s group extends kubernetes.core.k8s): with
no K8S_AUTH_* variable and no kubeconfig anywhere else, gpudirect.rdma.wait and
kubernetes.core.k8s_info both reach the API server through the kubeconfig the group sets, and
both fail without it. The gpudirect_rdma_kubeconfig variable (and its siblings) gives the same
connection to the collection's modules and roles."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import playbook_command

GROUP = "group/gpudirect.rdma.k8s"
WAIT = "The namespace exists (gpudirect.rdma.wait, a gate already met)"
INFO = "Its ConfigMaps (kubernetes.core.k8s_info)"


def playbook(
    path: Path, namespace: str, defaults: dict | None, variables: dict | None = None
) -> Path:
    """A read-only play: one module of this collection and one of kubernetes.core, each
    reading something of `namespace`; module_defaults on the play when given."""
    play = {
        "name": "Read through the connection of module_defaults",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [
            {
                "name": WAIT,
                "gpudirect.rdma.wait": {
                    "timeout": 10,
                    "gates": [
                        {
                            "gate": "namespace exists",
                            "api_version": "v1",
                            "kind": "Namespace",
                            "name": namespace,
                            "path": "metadata.name",
                            "equals": namespace,
                        }
                    ],
                },
                "ignore_errors": True,
            },
            {
                "name": INFO,
                "kubernetes.core.k8s_info": {"kind": "ConfigMap", "namespace": namespace},
                "ignore_errors": True,
            },
        ],
    }
    if defaults is not None:
        play["module_defaults"] = {GROUP: defaults}
    if variables is not None:
        play["vars"] = variables
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


def run(path: Path, home: Path) -> dict:
    """ansible-playbook with no connection in the environment: no K8S_AUTH_* variable, no
    KUBECONFIG, a HOME without .kube/config. Returns each task's result by its name."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("K8S_AUTH_") and key != "KUBECONFIG"
    }
    env.update(
        HOME=str(home),
        ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_FORCE_COLOR="0",
    )
    done = subprocess.run(
        playbook_command(path),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (
        f"{path.name} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    tasks = json.loads(done.stdout)["plays"][0]["tasks"]
    return {task["task"]["name"]: task["hosts"]["localhost"] for task in tasks}


@pytest.fixture
def home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_group_module_defaults_connect_this_collection_and_kubernetes_core(
    control_plane, namespace, audit, home, tmp_path
):
    kubeconfig = str(control_plane.kubeconfig)
    results = run(playbook(tmp_path / "defaults.yml", namespace, {"kubeconfig": kubeconfig}), home)

    wait, info = results[WAIT], results[INFO]
    assert not wait.get("failed"), wait
    assert set(wait["seconds"]) == {"namespace exists"}, wait
    assert not info.get("failed"), info
    assert info["resources"] == [], info  # a fresh namespace has no ConfigMap
    # Both reached the API server as the kubeconfig's user, each for what it reads.
    seen = {(r.verb, r.resource, r.namespace, r.name, r.code) for r in audit.requests(ADMIN_USER)}
    assert ("get", "namespaces", namespace, namespace, 200) in seen, sorted(seen)
    assert ("list", "configmaps", namespace, "", 200) in seen, sorted(seen)


def test_without_module_defaults_both_modules_find_no_cluster(
    control_plane, namespace, audit, home, tmp_path
):
    results = run(playbook(tmp_path / "no-defaults.yml", namespace, None), home)

    wait, info = results[WAIT], results[INFO]
    assert wait.get("failed"), wait
    assert info.get("failed"), info
    # Neither found a kubeconfig to load: the collection's connection says where it looked.
    assert wait["msg"].startswith("cannot connect to the API server: no kubeconfig: none was"), wait
    assert "/.kube/config" in wait["msg"], wait
    assert "No configuration found" in info["msg"], info
    touched = [r for r in audit.requests() if namespace in (r.namespace, r.name)]
    assert not touched, [str(r) for r in touched]


def test_the_connection_variables_connect_the_collections_modules(
    control_plane, namespace, audit, home, tmp_path
):
    variables = {"gpudirect_rdma_kubeconfig": str(control_plane.kubeconfig)}
    results = run(playbook(tmp_path / "variables.yml", namespace, None, variables), home)

    wait = results[WAIT]
    assert not wait.get("failed"), wait
    assert set(wait["seconds"]) == {"namespace exists"}, wait
    seen = {(r.verb, r.resource, r.namespace, r.name, r.code) for r in audit.requests(ADMIN_USER)}
    assert ("get", "namespaces", namespace, namespace, 200) in seen, sorted(seen)
    # kubernetes.core's modules do not read the collection's variables: module_defaults does.
    assert "No configuration found" in results[INFO]["msg"]
