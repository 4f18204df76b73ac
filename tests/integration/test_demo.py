"""make demo (hack/demo.sh) as a newcomer runs it, on a control plane of its own: a copy of the
node-groups example outside the repository (fake nodes per group with the group's labels and
NICs), then another example on the same control plane."""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.harness.controlplane import REPO_ROOT


def demo(inventory, state_dir) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "K8S_AUTH_"))}
    return subprocess.run(
        ["bash", str(REPO_ROOT / "hack" / "demo.sh")],
        cwd=REPO_ROOT,
        env={**env, "INVENTORY": str(inventory), "STATE_DIR": str(state_dir)},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_the_demo_takes_a_copy_of_the_node_groups_example_then_another(tmp_path):
    copy = tmp_path / "elsewhere" / "node-groups"
    shutil.copytree(REPO_ROOT / "inventories" / "node-groups", copy)
    state = tmp_path / "state"
    try:
        first = demo(copy, state)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
        for node in ("worker-a100-0", "worker-a100-1", "worker-h100-0", "worker-h100-1"):
            assert node in first.stdout
        assert "rdma/rdma_shared_device_ib_rail7" in first.stdout
        assert "Traceback" not in first.stdout + first.stderr
        second = demo(REPO_ROOT / "inventories" / "sriov-legacy-roce", state)
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-2000:]
        assert "worker-h100-0" not in second.stdout.split("NAME  ")[-1], "old nodes replaced"
    finally:
        subprocess.run(
            [str(REPO_ROOT / ".venv" / "bin" / "python"), "-m", "tests.harness", "down",
             "--state-dir", str(state)],
            cwd=REPO_ROOT, check=False, capture_output=True,
        )  # fmt: skip
