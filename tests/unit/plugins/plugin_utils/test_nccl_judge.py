"""The NCCL test's verdict on parsed all_reduce_perf runs (the fixtures are shaped like real
runs): a good run passes; a socket fallback, channels without GPUDirect, wrong values, missing
nodes and a low bus bandwidth each fail with their likely cause. NCCL 2.28's real socket fallback
(../shared/real-outputs, through GPUDIRECT_RDMA_SHARED) fails as one; a net plugin's network
(IBext_v8, AWS Libfabric) is no socket fallback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.floors import nccl_floor
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl import judge, parse
from tests.harness.controlplane import shared_dir

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"
REAL = "real-outputs/h200-vm-driver580"


def at_least(gbps: float) -> dict:
    """A fixed floor (verify_min_busbw_gbps) on the average bus bandwidth."""
    return nccl_floor(gbps, 0, [])


def run(name: str) -> dict:
    return parse((FIXTURES / f"{name}.txt").read_text())


@pytest.mark.parametrize(
    ("name", "fabric", "nodes"),
    [("ib_gdrdma_2nodes_16ranks", "infiniband", 2), ("roce_gdrdma_4nodes_slurm_mpi", "roce", 4)],
)
def test_a_gpudirect_run_over_ib_or_roce_passes(name, fabric, nodes):
    result = run(name)
    assert result["gpudirect"] is True and result["nodes"] == nodes
    assert judge(result, at_least(result["avg_busbw_gbps"] - 1), fabric=fabric, nodes=nodes) == []


def test_a_socket_fallback_fails_naming_the_usual_causes():
    (problem, *_rest) = judge(run("socket_fallback_2nodes"), at_least(0), "roce", 2)
    assert problem.startswith("NCCL fell back to sockets (NET/Socket)")
    assert "IPC_LOCK" in problem and "NCCL_IB_HCA" in problem


def test_channels_without_gdrdma_fail_naming_dmabuf_and_peermem():
    result = run("roce_no_gdr_old_columns")
    assert result["gpudirect"] is False
    (problem,) = [p for p in judge(result, at_least(0), "roce") if "GPUDirect" in p]
    assert "open GPU kernel modules" in problem and "nvidia_peermem" in problem


def test_wrong_values_fail():
    result = run("ib_wrong_values")
    assert result["wrong"] > 0
    assert any(
        p.startswith(f"{result['wrong']} wrong value(s)") for p in judge(result, at_least(0), "ib")
    )


def test_a_low_bus_bandwidth_on_roce_points_at_flow_control():
    result = run("roce_gdrdma_4nodes_slurm_mpi")
    (problem,) = judge(result, at_least(result["avg_busbw_gbps"] + 100), "roce", 4)
    assert problem.startswith(f"average bus bandwidth {result['avg_busbw_gbps']} Gb/s")
    assert "flow control" in problem and "NCCL_IB_TC" in problem
    (ib,) = judge(run("ib_gdrdma_2nodes_16ranks"), at_least(10_000), "infiniband", 2)
    assert "ibstat" in ib


def test_fewer_nodes_than_asked_for_fail():
    result = run("ib_gdrdma_2nodes_16ranks")
    (problem,) = judge(result, at_least(0), "infiniband", nodes=4)
    assert problem == (
        "the run spanned 2 node(s), not the 4 asked for: a rank did not start on every node"
    )


@pytest.mark.parametrize(
    "name",
    [
        "nccl-tests-2.19.6-all_reduce_perf-1gpu-debug-info.txt",
        "nccl_test-sh-launcher-openmpi-4.1.6.txt",
    ],
)
def test_nccl_2_28s_real_socket_fallback_fails_as_one(name):
    result = parse((shared_dir() / REAL / name).read_text())
    assert result["transport"] == "Socket"
    (problem,) = judge(result, at_least(0), fabric="infiniband", nodes=1)
    assert problem.startswith("NCCL fell back to sockets (NET/Socket), so no RDMA was used")


def through_plugin(name: str, plugin: str) -> dict:
    """The run as NCCL names a net plugin: its network and its channels."""
    text = (FIXTURES / f"{name}.txt").read_text()
    text = re.sub(r"Using network IB$", f"Using network {plugin}", text, flags=re.MULTILINE)
    return parse(text.replace("via NET/IB/", f"via NET/{plugin}/"))


@pytest.mark.parametrize("plugin", ["IBext_v8", "AWS Libfabric"])
def test_a_net_plugins_gpudirect_run_passes(plugin):
    result = through_plugin("ib_gdrdma_2nodes_16ranks", plugin)
    assert (result["transport"], result["gpudirect"]) == (plugin, True)
    assert judge(result, at_least(result["avg_busbw_gbps"] - 1), "infiniband", 2) == []


@pytest.mark.parametrize("plugin", ["IBext_v8", "AWS Libfabric"])
def test_a_net_plugin_without_gdrdma_fails_as_no_gpudirect_not_as_sockets(plugin):
    result = through_plugin("roce_no_gdr_old_columns", plugin)
    assert result["transport"] == plugin
    problems = judge(result, at_least(0), "roce")
    assert [p.split(":")[0] for p in problems] == [
        "NCCL's network channels ran without GPUDirect RDMA (no /GDRDMA)"
    ]


@pytest.mark.parametrize(
    ("rails", "rates", "floor", "passed"),
    [
        # 8 x 400 Gb/s: 70 % of 3200 Gb/s is 2240; the run reached 2988.4 Gb/s at 8 GiB.
        (8, [400.0] * 16, 2240, True),
        # The same run on 8 x 800 Gb/s rails is far below what that fabric gives.
        (8, [800.0] * 15 + [None], 4480, False),
        # 2 x 100 Gb/s; one port negotiated down to 50 sets the floor for the group.
        (2, [100.0, 100.0, 50.0, 100.0], 70, True),
    ],
)
def test_without_a_fixed_floor_the_rails_rates_set_it_at_the_largest_size(
    rails, rates, floor, passed
):
    result = run("ib_gdrdma_2nodes_16ranks")
    derived = nccl_floor(None, rails, rates)
    assert (derived["gbps"], derived["measure"]) == (floor, "largest")
    assert f"of {rails} rail(s) x " in derived["why"]
    problems = judge(result, derived, "infiniband", 2)
    assert (problems == []) is passed, problems
    if not passed:
        assert problems == [
            "bus bandwidth at the largest size (8589934592 bytes) 2988.4 Gb/s (373.55 GB/s) is "
            f"below the floor of {floor} Gb/s ({derived['why']}): check the links' rate and width "
            "(ibstat), the subnet manager's routing and that every rail's NIC is in NCCL_IB_HCA"
        ]


def test_without_any_rate_the_default_floor_judges_the_average_and_says_so():
    derived = nccl_floor(None, 8, [None, None])
    assert (derived["gbps"], derived["measure"]) == (100, "average")
    assert derived["why"].startswith("no port rate was read on the group's rails")
    (problem,) = judge(run("ib_gdrdma_2nodes_16ranks"), {**derived, "gbps": 5000}, "ib", 2)
    assert problem.startswith("average bus bandwidth 1090.758 Gb/s (136.345 GB/s) is below")
