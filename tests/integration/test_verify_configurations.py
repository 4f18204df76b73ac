"""verify.yml end to end on the local control plane, for each example configuration that
test_verify.py and test_verify_groups.py do not verify: its pairs on topology-correct GPUs, its
host checks and its NCCL run. (A file of its own, so that these runs spread over the test
workers.)"""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.integration.test_site import nodes_for, recap, site
from tests.integration.test_verify import verify, verify_pods_left
from tests.unit.inventories import inputs


@pytest.mark.parametrize(
    "inventory",
    [
        "host-device-roce",
        "host-device-infiniband",
        "sriov-legacy-roce",
        "sriov-legacy-infiniband",
        "shared-device-infiniband",
        "nic-configuration-roce",
    ],
)
def test_every_configuration_passes_on_topology_correct_pairs(
    inventory, run_playbook, harness, core, tmp_path
):
    """The configurations the tests above do not verify (shared device on RoCE, eight rails and
    the node groups are theirs): each pair on the GPU next to its NIC, the host checks clean,
    the NCCL settings published."""
    nodes_for(harness, inventory)
    site(run_playbook, inventory)
    result = verify(run_playbook, inventory, tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    # The NCCL test with the settings just published: over RDMA, with GPUDirect, on every rail.
    plan = build_plan(inputs(inventory))
    (run,) = report["nccl"]
    assert (run["passed"], run["transport"], run["gpudirect"], run["nodes_in_run"]) == (
        True,
        "IB",
        True,
        2,
    ), run["problems"]
    assert run["devices"] == [f"mlx5_{i}:1" for i in range(len(plan["groups"][0]["rails"]))]
    for pair in report["pairs"]:
        for side in ("server_gpu", "client_gpu"):
            assert pair[side]["relation"] == "PIX", (inventory, pair[side])
    assert {f["status"] for f in report["host_checks"]} == {"ok"}, [
        f for f in report["host_checks"] if f["status"] != "ok"
    ]
    assert {f["check"] for f in report["host_checks"]} >= {"rdma-isolation", "iommu", "link"}
    fabric = plan["groups"][0]["fabric"]
    for settings in report["nccl_settings"]:
        assert settings["published"] is True
        assert ("NCCL_IB_TC" in settings["env"]) == (fabric == "roce")
    assert verify_pods_left(core) == []
