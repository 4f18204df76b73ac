"""verify.yml end to end on the local control plane, on the inventories of several rails and
node groups: eight rails each on the GPU next to its NIC (the report's JUnit file and page read
as their readers read them), each node group tested between two of its own nodes, and groups on
two methods and fabrics each on its own networks. (A file of its own, apart from
test_verify.py, so that the slowest verify runs spread over the test workers.)"""

from __future__ import annotations

import json

import junitparser

from tests.integration.browser import open_page, page_errors
from tests.integration.test_site import nodes_for, recap, site
from tests.integration.test_verify import verify, verify_pods_left


def test_eight_rails_eight_pairs(run_playbook, harness, core, tmp_path):
    nodes_for(harness, "multi-rail-hgx")
    site(run_playbook, "multi-rail-hgx")
    result = verify(run_playbook, "multi-rail-hgx", tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    # NCCL over all eight rails (NCCL_IB_HCA from the ConfigMap), 16 ranks, about 8 x 24 GB/s.
    (run,) = report["nccl"]
    assert run["passed"] and run["devices"] == [f"mlx5_{i}:1" for i in range(8)]
    assert run["ranks"] == 16 and run["max_busbw_gbytes"] > 150
    assert [p["resource"] for p in report["pairs"]] == [
        f"rdma/rdma_shared_device_eth_rail{i}" for i in range(8)
    ]
    assert [p["network"] for p in report["pairs"]] == [f"rdmashared-net-rail{i}" for i in range(8)]
    assert all(p["passed"] for p in report["pairs"])
    # Each rail on the GPU on its NIC's PCIe switch, on both nodes: GPU N next to mlx5_N.
    for side in ("server_gpu", "client_gpu"):
        assert [(p[side]["gpu"], p[side]["nic"], p[side]["relation"]) for p in report["pairs"]] == [
            (i, f"mlx5_{i}", "PIX") for i in range(8)
        ]
    assert len({p["server_gpu"]["bus_id"] for p in report["pairs"]}) == 8
    assert verify_pods_left(core) == []
    # The JUnit file as a JUnit reader reads it; the page as a real browser renders it.
    suite, host, nccl = list(junitparser.JUnitXml.fromfile(str(tmp_path / "verify-report.xml")))
    assert (suite.tests, suite.failures) == (8, 0)
    assert (nccl.tests, nccl.failures) == (1, 0)
    assert (host.tests, host.failures) == (2 * (3 + 3 * 8), 0), "per node 3 checks, 3 per rail"
    report_checks = json.loads((tmp_path / "verify-report.json").read_text())["host_checks"]
    assert {f["status"] for f in report_checks} == {"ok"}, "MTU 9000 on every rail, no ACS"
    assert [c.name for c in suite][7] == "rail 7 worker-0 -> worker-1"
    dom, picture, log = open_page(tmp_path / "verify-report.html", "verify-report-hgx.png")
    assert page_errors(log) == []
    assert dom.count("<rect") == 8
    assert dom.count("<tr") == (1 + 1) + (1 + 8) + (1 + 2 * (3 + 3 * 8)) + (1 + 1), (
        "the run's node groups, pairs, host checks, NCCL runs"
    )
    assert "GPU 7 (00000000:88:00.0) PIX to mlx5_7" in dom
    assert picture.stat().st_size > 20_000, "a rendered page, not a blank one"


def test_each_node_group_is_tested_between_two_of_its_own_nodes(
    run_playbook, harness, core, tmp_path
):
    nodes_for(harness, "node-groups")
    site(run_playbook, "node-groups")
    result = verify(run_playbook, "node-groups", tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0, result.stdout[-3000:]
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    # Each group's NCCL test between its own nodes, with its own published settings.
    assert [run["group"] for run in report["nccl"]] == ["a100", "h100"]
    for run in report["nccl"]:
        assert run["passed"] is True, run["problems"]
        assert run["nodes"] == [f"worker-{run['group']}-0", f"worker-{run['group']}-1"]
        assert run["config_map"] == f"default/gpudirect-rdma-nccl-{run['group']}"
        assert len(run["devices"]) == {"a100": 4, "h100": 8}[run["group"]]
    seen = [(p["group"], p["server_node"], p["client_node"], p["network"]) for p in report["pairs"]]
    assert seen == [
        ("a100", "worker-a100-0", "worker-a100-1", f"rdmashared-net-a100-rail{i}") for i in range(4)
    ] + [
        ("h100", "worker-h100-0", "worker-h100-1", f"example-ipoibnetwork-h100-rail{i}")
        for i in range(8)
    ]
    assert {p["link_type"] for p in report["pairs"] if p["group"] == "h100"} == {"IB"}
    assert "group rail" in result.stdout
    assert verify_pods_left(core) == []


def test_groups_on_two_methods_and_fabrics_are_verified_each_on_its_own(
    run_playbook, harness, core, tmp_path
):
    """inventories/mixed-methods: shared device over RoCE beside SR-IOV legacy over
    InfiniBand; each group's pairs run on its own method's networks and resources."""
    nodes_for(harness, "mixed-methods")
    site(run_playbook, "mixed-methods")
    result = verify(run_playbook, "mixed-methods", tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0, result.stdout[-3000:]
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    assert [run["group"] for run in report["nccl"]] == ["a100", "h100"]
    assert all(run["passed"] for run in report["nccl"]), [r["problems"] for r in report["nccl"]]
    seen = [(p["group"], p["network"], p["link_type"]) for p in report["pairs"]]
    assert seen == [("a100", f"rdmashared-net-a100-rail{i}", "Ethernet") for i in range(4)] + [
        ("h100", f"sriov-ib-network-h100-rail{i}", "IB") for i in range(8)
    ]
    assert verify_pods_left(core) == []
