"""Tests prove "no writes" from the audit log: every request of a run is there, by user."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.harness.controlplane import ADMIN_USER, HARNESS_USER

PLAYBOOK = Path(__file__).parent / "playbooks" / "configmap.yml"


def test_audit_log_counts_the_writes_of_a_playbook_run(run_playbook, audit):
    namespace = f"audit-{uuid.uuid4().hex[:8]}"
    run_playbook(PLAYBOOK, "-e", f"audit_namespace={namespace}")
    writes = audit.writes(ADMIN_USER)
    assert [(w.verb, w.resource, w.name) for w in writes] == [
        ("create", "namespaces", namespace),
        ("create", "configmaps", "probe"),
    ]
    assert all(w.code == 201 for w in writes)
    # The run read as well as wrote, and it was all done as the kubeconfig's user.
    assert len(audit.requests(ADMIN_USER)) > len(writes)

    # What `changed` hides, the audit log shows: kubernetes.core.k8s with state: present sends a
    # PATCH for every object that exists, even when nothing differs. This is why the collection
    # proves idempotency by counting write requests, not by reading `changed`.
    audit.mark()
    second = run_playbook(PLAYBOOK, "-e", f"audit_namespace={namespace}")
    assert "changed=0" in second.stdout
    assert [(w.verb, w.resource, w.code) for w in audit.writes(ADMIN_USER)] == [
        ("patch", "namespaces", 200),
        ("patch", "configmaps", 200),
    ]


def test_check_mode_sends_only_dry_run_writes(run_playbook, core, audit):
    namespace = f"audit-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": namespace}})
    audit.mark()
    result = run_playbook(PLAYBOOK, "--check", "-e", f"audit_namespace={namespace}")
    assert "changed=1" in result.stdout
    dry_runs = [r for r in audit.requests(ADMIN_USER) if r.dry_run]
    assert [(r.verb, r.resource) for r in dry_runs] == [
        ("patch", "namespaces"),
        ("create", "configmaps"),
    ]
    assert audit.writes(ADMIN_USER) == []
    assert core.list_namespaced_config_map(namespace).items == []


def test_writes_are_told_apart_by_user(core, audit):
    core.create_namespace({"metadata": {"name": f"audit-{uuid.uuid4().hex[:8]}"}})
    assert [w.verb for w in audit.writes(HARNESS_USER)] == ["create"]
    assert audit.writes(ADMIN_USER) == []
