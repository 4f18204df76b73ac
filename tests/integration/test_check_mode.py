"""Check mode asks the API server: what would change is applied with a server-side dry run, so
`--check` fails on an object the API server would refuse (its CRD schema), naming the object and
the field, and `--diff` shows the object as the API server would store it (the schema's defaults
filled in). Nothing is written either way."""

from __future__ import annotations

import uuid

import pytest
import yaml

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER
from tests.integration.test_site import recap


def policy(name: str, image="doca-driver", delay=10) -> dict:
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpudirect.rdma"}},
        "spec": {
            "ofedDriver": {
                "image": image,
                "repository": "nvcr.io/nvidia/mellanox",
                "version": "doca3.4.1-26.04-1.1.0.0-1",
                "startupProbe": {"initialDelaySeconds": delay, "periodSeconds": 20},
            }
        },
    }


def apply_playbook(path, obj: dict):
    play = {
        "name": "Apply one object",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [{"name": "Apply it", "gpudirect.rdma.apply": {"objects": [obj]}}],
    }
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("field", "wrong", "status"),
    [
        # The schema's pattern: the API server's validation refuses it.
        ("spec.ofedDriver.image", {"image": "___"}, "422"),
        # The schema's type: the API server cannot make the patch into the schema's types.
        ("spec.ofedDriver.startupProbe.initialDelaySeconds", {"delay": "ten"}, "500"),
    ],
    ids=["pattern", "type"],
)
def test_check_mode_fails_on_what_the_crd_schema_refuses_naming_the_object_and_field(
    run_playbook, control_plane, custom, tmp_path, field, wrong, status
):
    name = f"refused-{uuid.uuid4().hex[:6]}"
    audit = AuditLog(control_plane.audit_log).mark()
    result = run_playbook(
        apply_playbook(tmp_path / "refused.yml", policy(name, **wrong)), "--check", check=False
    )
    assert result.returncode != 0
    output = " ".join(result.stdout.split())
    assert f"the API server would refuse NicClusterPolicy {name}: {status}" in output, output[
        -2000:
    ]
    assert field in output
    assert "a server-side dry run in check mode: nothing was written" in output
    # The API server was asked (a dry run), and nothing was written.
    asked = [r for r in audit.requests(ADMIN_USER) if r.name == name]
    assert [r.verb for r in asked] == ["get", "patch"], [str(r) for r in asked]
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]


def test_check_mode_diff_shows_what_the_api_server_would_store(
    run_playbook, control_plane, custom, tmp_path
):
    name = f"dry-{uuid.uuid4().hex[:6]}"
    audit = AuditLog(control_plane.audit_log).mark()
    result = run_playbook(apply_playbook(tmp_path / "dry.yml", policy(name)), "--check", "--diff")
    assert recap(result.stdout)["changed"] == 1
    # The schema's defaults, which only the API server adds, are in the diff's after.
    assert "forcePrecompiled" in result.stdout, result.stdout[-3000:]
    assert "terminationGracePeriodSeconds" in result.stdout
    assert audit.writes(ADMIN_USER) == []
    listed = custom.list_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies")
    assert name not in [p["metadata"]["name"] for p in listed["items"]]
