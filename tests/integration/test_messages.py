"""What a run says is true, on a fresh control plane of this module's own: the interface check
that cannot run before NFD or the SR-IOV operator reports the NICs says it was skipped and when it
runs; when it then fails, after earlier steps wrote, the message names them instead of claiming
that nothing was written; the findings are printed by the failing task only. With NFD already
there, the same mistake stops the run before any write."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT, api_client, started
from tests.integration.helpers import playbook_command, playbook_env
from tests.integration.test_site import SIMULATED, nodes_for


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    with started(tmp_path_factory.mktemp("messages")) as plane:
        nodes_for(api_client(plane.harness_kubeconfig), "shared-device-roce")
        yield plane


def site_with_a_wrong_interface(plane, tmp_path) -> subprocess.CompletedProcess:
    """site.yml with shared-device-roce's variables but an interface no node has."""
    return subprocess.run(
        playbook_command(
            REPO_ROOT / "playbooks" / "site.yml",
            "-i",
            str(REPO_ROOT / "inventories" / "shared-device-roce"),
            "-e",
            f"@{SIMULATED}",
            "-e",
            json.dumps(
                {"gpudirect_rdma_interfaces": ["ens9f9np9"], "diagnostics_dir": str(tmp_path)}
            ),
        ),
        cwd=REPO_ROOT,
        env=playbook_env(plane.kubeconfig),
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_wrong_interface_on_a_fresh_cluster_is_reported_truly(plane, tmp_path):
    result = site_with_a_wrong_interface(plane, tmp_path)
    out = result.stdout
    text = " ".join(out.split())
    assert result.returncode != 0, out[-3000:]
    # The first preflight cannot see the NICs yet, and says so.
    assert "[localhost] preflight interfaces skipped: " in text, out[:6000]
    assert "judged again before each step that follows, until it can run" in text
    # Once NFD runs (the run's first step), nfd-worker's NodeFeatures list the NICs: the check
    # fails at the next step, naming what NFD's step wrote.
    assert "nothing was written to the cluster" not in text, out[-4000:]
    assert (
        "preflight found 2 error(s); this step wrote nothing, but earlier steps of this run "
        "applied their changes (nfd); once the errors are fixed, run the playbook again"
    ) in text, out[-4000:]
    assert "(its NodeFeature lists ens8f0np0)" in text
    assert "run the playbook again: it continues from what exists" in text
    # The findings once, in the failing task's message (Ansible prints it as the error and in the
    # result); the play's last line points at them.
    worker_0 = (
        "ERROR   interfaces: gpudirect_rdma_interfaces: ens9f9np9 does not exist on node worker-0"
    )
    assert out.count(worker_0) <= 2, out[-6000:]
    assert "(the findings are above) Diagnostics: " in text


def test_with_nfd_already_there_a_wrong_interface_stops_the_run_before_any_write(plane, tmp_path):
    """NFD installed before (here by the run above): its NodeFeatures answer at the first
    preflight, so nothing is written."""
    audit = AuditLog(plane.audit_log).mark()
    result = site_with_a_wrong_interface(plane, tmp_path)
    text = " ".join(result.stdout.split())
    assert result.returncode != 0
    assert "preflight found 2 error(s); nothing was written to the cluster." in text, text[-3000:]
    assert "TASK [Run the steps]" not in result.stdout
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
