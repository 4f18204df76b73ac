"""A step added in one file (tests/unit/new_step.py) reaches the cluster: from a copy of the
collection with the step, site.yml applies its object and waits for its gate, a re-run writes
nothing, render.yml writes its folder and uninstall.yml removes its object (the unit test follows it
through check mode, preflight, diagnostics, RBAC and the docs)."""

from __future__ import annotations

import subprocess

import pytest
from kubernetes.client.rest import ApiException

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import playbook_command, playbook_env
from tests.integration.test_site import SIMULATED, nodes_for, recap
from tests.unit.new_step import ACCOUNT, collection_with_new_step

INVENTORY = str(REPO_ROOT / "inventories" / "shared-device-roce")


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return collection_with_new_step(tmp_path_factory.mktemp("new-step"))


def playbook(copy, control_plane, name: str, *args: str) -> subprocess.CompletedProcess:
    """A playbook of the copy, with the copy as the only gpudirect.rdma there is."""
    root = copy / "ansible_collections" / "gpudirect" / "rdma"
    return subprocess.run(
        playbook_command(root / "playbooks" / name, "-i", INVENTORY, *args),
        cwd=REPO_ROOT,
        env=playbook_env(control_plane.kubeconfig, ANSIBLE_COLLECTIONS_PATH=str(copy)),
        capture_output=True,
        text=True,
        check=False,
    )


def account(core):
    try:
        return core.read_namespaced_service_account(ACCOUNT, "default")
    except ApiException as error:
        assert error.status == 404, error.body
        return None


def test_a_step_added_in_one_file_is_applied_converged_rendered_and_uninstalled(
    copy, control_plane, harness, core, tmp_path
):
    nodes_for(harness, "shared-device-roce")
    first = playbook(copy, control_plane, "site.yml", "-e", f"@{SIMULATED}")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    # The gpu_operator role's one task ran the new step after the GPU Operator's.
    assert "TASK [gpudirect.rdma.gpu_operator : NVIDIA GPU Operator" in first.stdout
    found = account(core)
    assert found is not None
    assert found.metadata.labels == {
        "app.kubernetes.io/managed-by": "gpudirect.rdma",
        "gpudirect.rdma/component": "training-account",
    }

    audit = AuditLog(control_plane.audit_log).mark()
    second = playbook(copy, control_plane, "site.yml", "-e", f"@{SIMULATED}")
    assert recap(second.stdout)["changed"] == 0, second.stdout[-3000:]
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    assert "the cluster already is as planned" in " ".join(second.stdout.split())

    tree = tmp_path / "tree"
    rendered = playbook(
        copy, control_plane, "render.yml", "-e", f"gpudirect_rdma_render_dir={tree}"
    )
    assert rendered.returncode == 0, rendered.stdout[-3000:]
    assert (tree / "training-account" / f"serviceaccount-{ACCOUNT}.yaml").is_file()

    removed = playbook(copy, control_plane, "uninstall.yml", "-e", f"@{SIMULATED}")
    assert removed.returncode == 0, removed.stdout[-3000:] + removed.stderr[-2000:]
    assert account(core) is None
