"""gpudirect.rdma.perftest_results on outputs shaped like real ib_write_bw runs: RoCE and
InfiniBand, DMA-BUF, nvidia-peermem and host memory, server and client, and failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.perftest_results import perftest_results

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "perftest"


def output(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


def test_roce_dmabuf_client():
    assert perftest_results(output("roce_dmabuf_client")) == {
        "bytes": 65536,
        "iterations": 10329004,
        # A duration run (-D) prints 0.00 for the peak it does not measure.
        "bw_peak_gbps": None,
        "bw_average_gbps": 180.47,
        "msg_rate_mpps": 0.344228,
        "side": "client",
        "device": "mlx5_2",
        "link_type": "Ethernet",
        "gid_index": 3,
        "transport": "IB",
        "qps": 16,
        "mtu": 4096,
        "connection": "RC",
        "gpu_memory": "dmabuf",
        "cuda_device": 0,
        "gpu_name": "NVIDIA A100-SXM4-80GB",
    }


def test_roce_dmabuf_server_is_told_apart_and_its_gpu_is_the_one_picked():
    result = perftest_results(output("roce_dmabuf_server"))
    assert (result["side"], result["device"], result["cuda_device"]) == ("server", "mlx5_7", 2)
    assert (result["bw_average_gbps"], result["gpu_memory"]) == (180.45, "dmabuf")


def test_infiniband_peermem_client_has_no_gid_index():
    result = perftest_results(output("ib_peermem_client"))
    assert (result["link_type"], result["gid_index"], result["gpu_memory"]) == (
        "IB",
        None,
        "peermem",
    )
    assert (result["bw_average_gbps"], result["msg_rate_mpps"]) == (369.12, 0.704057)
    assert result["gpu_name"] == "NVIDIA H100 80GB HBM3"


def test_host_memory_run_in_megabytes_is_converted_and_says_no_gpu():
    result = perftest_results(output("roce_host_memory_mbsec_client"))
    assert result["gpu_memory"] == "none"
    assert result["cuda_device"] is None
    assert result["bw_average_gbps"] == round(11021.90 * 2**20 * 8 / 1e9, 3)
    assert (result["gid_index"], result["qps"], result["mtu"]) == (5, 1, 1024)


@pytest.mark.parametrize(
    ("name", "hint", "last"),
    [
        (
            "failure_connection_refused",
            "the client could not reach the server",
            "destroying current CUDA Ctx",
        ),
        (
            "failure_wrong_gid",
            "a wrong RoCE GID index (-x)",
            "Unable to Connect the HCA's through the link",
        ),
        ("failure_cuda", "CUDA failed", "Failed to create QP."),
    ],
)
def test_output_without_a_result_row_says_why(name, hint, last):
    with pytest.raises(AnsibleFilterError) as raised:
        perftest_results(output(name))
    message = str(raised.value)
    assert message.startswith("gpudirect.rdma.perftest_results: expected an ib_write_bw result row")
    assert hint in message
    assert message.endswith(last)


def test_empty_output_and_wrong_type():
    with pytest.raises(AnsibleFilterError, match=r"Last lines: \(no output\)"):
        perftest_results("")
    with pytest.raises(AnsibleFilterError, match="_input"):
        perftest_results({"log": "x"})


def test_infiniband_dmabuf_server():
    result = perftest_results(output("ib_dmabuf_server"))
    assert (result["side"], result["link_type"], result["device"], result["gid_index"]) == (
        "server",
        "IB",
        "mlx5_1",
        None,
    )
    assert (result["gpu_memory"], result["bw_average_gbps"], result["msg_rate_mpps"]) == (
        "dmabuf",
        369.1,
        0.70402,
    )
