"""The molecule scenario (molecule/default) on this worker's control plane, as one test among the
others: `molecule test` runs its own sequence (destroy, prepare, converge, idempotence, verify,
destroy) with the plane's kubeconfig and state directory. Run here rather than after pytest, its
playbooks share the two cores with the other workers' instead of running on alone at the end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.harness.controlplane import REPO_ROOT
from tests.integration.helpers import playbook_env

MOLECULE = Path(sys.executable).parent / "molecule"


def test_the_molecule_scenario_converges_twice_without_a_change_and_verifies(control_plane):
    result = subprocess.run(
        [str(MOLECULE), "test"],
        cwd=REPO_ROOT,
        env=playbook_env(
            control_plane.kubeconfig,
            GPUDIRECT_RDMA_STATE_DIR=str(control_plane.state_dir),
            NO_COLOR="1",
        ),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    # Every stage of the sequence, the idempotence check among them (a second converge in which
    # no task reports a change).
    for stage in ("destroy", "prepare", "converge", "idempotence", "verify"):
        assert f"[default > {stage}] Executed: Successful" in output, (stage, output[-6000:])
