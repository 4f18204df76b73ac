"""gpudirect.rdma.nccl_results on outputs shaped like nccl-tests' all_reduce_perf with
NCCL_DEBUG=INFO (NCCL 2.21 lines; written here, not captured on hardware): InfiniBand and RoCE
with GPUDirect RDMA (one with Slurm's per-line prefix and an MPI warning), a socket fallback, a
run without GPUDirect from an older nccl-tests (no root column, #wrong N/A), a run with wrong
values, a network error without a table, and a table cut short."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.nccl_results import nccl_results

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_infiniband_with_gpudirect_across_two_nodes():
    found = nccl_results(fixture("ib_gdrdma_2nodes_16ranks.txt"))
    assert found["avg_busbw_gbytes"] == 136.3448
    assert found["avg_busbw_gbps"] == round(136.3448 * 8, 3)
    assert (found["ranks"], found["nodes"]) == (16, 2)
    assert found["transport"] == "IB"
    assert found["gpudirect"] is True
    assert found["devices"] == [
        "mlx5_0:1",
        "mlx5_3:1",
        "mlx5_4:1",
        "mlx5_5:1",
        "mlx5_6:1",
        "mlx5_9:1",
        "mlx5_10:1",
        "mlx5_11:1",
    ]
    assert len(found["rows"]) == 31
    assert found["largest"] == {
        "size": 8589934592,
        "count": 2147483648,
        "type": "float",
        "redop": "sum",
        "out_of_place": {"time_us": 43551.0, "algbw": 197.24, "busbw": 369.82, "wrong": 0},
        "in_place": {"time_us": 43116.0, "algbw": 199.23, "busbw": 373.55, "wrong": 0},
    }
    assert found["max_busbw_gbytes"] == 373.55
    assert found["wrong"] == 0
    assert found["warnings"] == []


def test_a_launchers_prefix_and_mpi_warnings_are_read_through():
    found = nccl_results(fixture("roce_gdrdma_4nodes_slurm_mpi.txt"))
    assert (found["ranks"], found["nodes"]) == (32, 4)
    assert found["transport"] == "IB"  # NCCL's verbs transport, RoCE ports included
    assert found["gpudirect"] is True
    assert found["devices"][0] == "mlx5_0:1"
    assert len(found["rows"]) == 31
    assert found["avg_busbw_gbytes"] > 0


def test_a_socket_fallback_is_no_gpudirect():
    found = nccl_results(fixture("socket_fallback_2nodes.txt"))
    assert found["transport"] == "Socket"
    assert found["gpudirect"] is False
    assert found["devices"] == []
    assert found["largest"]["out_of_place"]["busbw"] < 3


def test_an_older_table_without_root_and_unchecked_values_and_no_gdrdma():
    found = nccl_results(fixture("roce_no_gdr_old_columns.txt"))
    assert (found["ranks"], found["nodes"]) == (2, 2)
    assert found["gpudirect"] is False
    assert found["largest"]["in_place"]["wrong"] is None
    assert found["wrong"] == 0
    assert found["rows"][0]["size"] == 8 and found["rows"][0]["redop"] == "sum"


def test_wrong_values_are_counted():
    found = nccl_results(fixture("ib_wrong_values.txt"))
    assert found["wrong"] == 12 * 2 * 4  # 1, 2, 4 and 8 GiB, both sides
    assert found["largest"]["out_of_place"]["wrong"] == 12


def test_quiet_nccl_leaves_the_path_unknown():
    text = "\n".join(
        line
        for line in fixture("ib_gdrdma_2nodes_16ranks.txt").splitlines()
        if "NCCL INFO" not in line
    )
    found = nccl_results(text)
    assert (found["transport"], found["gpudirect"], found["devices"]) == (None, None, [])


def test_a_run_without_a_table_fails_with_its_nccl_warnings():
    with pytest.raises(AnsibleFilterError) as raised:
        nccl_results(fixture("failure_network_error.txt"))
    text = str(raised.value)
    assert text.startswith("gpudirect.rdma.nccl_results: the output holds no results table")
    assert "NCCL WARN NET/IB : Got completion from peer 10.0.1.12<49221> with status=12" in text
    assert "remote process exited or there was a network error" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "no results table (NCCL failed or the run was cut short): no NCCL WARN line either"),
        (
            "\n".join(fixture("ib_gdrdma_2nodes_16ranks.txt").splitlines()[:60]),
            "the results table has 10 row(s) but no '# Avg bus bandwidth' line: the run was cut "
            "short",
        ),
    ],
)
def test_empty_or_truncated_output_says_so(text, expected):
    with pytest.raises(AnsibleFilterError) as raised:
        nccl_results(text)
    assert expected in str(raised.value)
