"""What a run says is true, on a fresh control plane of this module's own: the interface check
that cannot run before the SR-IOV operator reports the NICs says it was skipped and when it runs;
when it then fails, after earlier steps wrote, the message names them instead of claiming that
nothing was written; the findings are printed by the failing task only."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.harness.controlplane import REPO_ROOT, api_client, started
from tests.integration.helpers import playbook_command, playbook_env
from tests.integration.test_site import SIMULATED, nodes_for


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    with started(tmp_path_factory.mktemp("messages")) as plane:
        nodes_for(api_client(plane.harness_kubeconfig), "shared-device-roce")
        yield plane


def test_a_wrong_interface_on_a_fresh_cluster_is_reported_truly(plane, tmp_path):
    result = subprocess.run(
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
    out = result.stdout
    text = " ".join(out.split())
    assert result.returncode != 0, out[-3000:]
    # The first preflight cannot see the NICs yet, and says so.
    assert "[localhost] preflight interfaces skipped: " in text, out[:6000]
    assert "judged again before each step that follows, until it can run" in text
    # Later, with the NICs reported, the check fails: after NFD and the SR-IOV operator wrote.
    assert "nothing was written to the cluster" not in text, out[-4000:]
    assert (
        "preflight found 2 error(s); this step wrote nothing, but earlier steps of this run "
        "applied their changes (nfd, sriov-network-operator"
    ) in text, out[-4000:]
    assert "run the playbook again: it continues from what exists" in text
    # The findings once, in the failing task's message (Ansible prints it as the error and in the
    # result); the play's last line points at them.
    worker_0 = (
        "ERROR   interfaces: gpudirect_rdma_interfaces: ens9f9np9 does not exist on node worker-0"
    )
    assert out.count(worker_0) <= 2, out[-6000:]
    assert "(the findings are above) Diagnostics: " in text
