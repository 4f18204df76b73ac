"""The NCCL test's verdict on parsed all_reduce_perf runs (the fixtures are shaped like real
runs): a good run passes; a socket fallback, channels without GPUDirect, wrong values, missing
nodes and a low bus bandwidth each fail with their likely cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl import judge, parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"


def run(name: str) -> dict:
    return parse((FIXTURES / f"{name}.txt").read_text())


@pytest.mark.parametrize(
    ("name", "fabric", "nodes"),
    [("ib_gdrdma_2nodes_16ranks", "infiniband", 2), ("roce_gdrdma_4nodes_slurm_mpi", "roce", 4)],
)
def test_a_gpudirect_run_over_ib_or_roce_passes(name, fabric, nodes):
    result = run(name)
    assert result["gpudirect"] is True and result["nodes"] == nodes
    assert (
        judge(result, min_busbw_gbps=result["avg_busbw_gbps"] - 1, fabric=fabric, nodes=nodes) == []
    )


def test_a_socket_fallback_fails_naming_the_usual_causes():
    (problem, *_rest) = judge(run("socket_fallback_2nodes"), 0, "roce", 2)
    assert problem.startswith("NCCL fell back to sockets (NET/Socket)")
    assert "IPC_LOCK" in problem and "NCCL_IB_HCA" in problem


def test_channels_without_gdrdma_fail_naming_dmabuf_and_peermem():
    result = run("roce_no_gdr_old_columns")
    assert result["gpudirect"] is False
    (problem,) = [p for p in judge(result, 0, "roce") if "GPUDirect" in p]
    assert "open GPU kernel modules" in problem and "nvidia_peermem" in problem


def test_wrong_values_fail():
    result = run("ib_wrong_values")
    assert result["wrong"] > 0
    assert any(p.startswith(f"{result['wrong']} wrong value(s)") for p in judge(result, 0, "ib"))


def test_a_low_bus_bandwidth_on_roce_points_at_flow_control():
    result = run("roce_gdrdma_4nodes_slurm_mpi")
    (problem,) = judge(result, result["avg_busbw_gbps"] + 100, "roce", 4)
    assert problem.startswith(f"average bus bandwidth {result['avg_busbw_gbps']} Gb/s")
    assert "flow control" in problem and "NCCL_IB_TC" in problem
    (ib,) = judge(run("ib_gdrdma_2nodes_16ranks"), 10_000, "infiniband", 2)
    assert "ibstat" in ib


def test_fewer_nodes_than_asked_for_fail():
    result = run("ib_gdrdma_2nodes_16ranks")
    (problem,) = judge(result, 0, "infiniband", nodes=4)
    assert problem == (
        "the run spanned 2 node(s), not the 4 asked for: a rank did not start on every node"
    )
