"""Two verify reports side by side (plugin_utils/verify/compare.py, the verify_compare filter):
reports made by the verify filters from captured ib_write_bw and all_reduce_perf outputs, the
after report changed as an upgrade could change it."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.verify_compare import verify_compare
from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_report import (
    verify_nccl_report,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs
from tests.unit.plugins.plugin_utils.test_nccl_test import launcher_log
from tests.unit.plugins.plugin_utils.test_report_files import hgx_report


def with_nccl(report: dict, fixture: str) -> dict:
    return verify_nccl_report(
        report,
        plan=build_plan(inputs("multi-rail-hgx")),
        runs=[{"group": None, "nodes": ["gpu-a", "gpu-b"], "log": launcher_log(fixture)}],
        min_busbw_gbps=100,
    )


@pytest.fixture(scope="module")
def before() -> dict:
    return with_nccl(hgx_report(), "ib_gdrdma_2nodes_16ranks")


def test_the_same_numbers_after_pass_with_a_row_per_rail_and_per_run(before):
    found = verify_compare(before, copy.deepcopy(before))
    assert found["passed"] is True
    assert [row["what"] for row in found["rows"]] == [
        *(f"rail {rail}" for rail in range(8)),
        "NCCL",
    ]
    rail = found["rows"][0]
    assert rail["before"] == rail["after"] == before["pairs"][0]["bw_average_gbps"]
    assert rail["change_percent"] == 0.0 and rail["before_transport"] == "GPUDirect (dmabuf)"
    assert found["rows"][-1]["before_transport"] == "IB (GPUDirect)"
    assert found["table"][1].startswith("rail 0") and found["table"][1].endswith("pass")


def test_a_rail_slower_by_more_than_the_allowed_drop_fails_naming_it(before):
    after = copy.deepcopy(before)
    after["pairs"][3]["bw_average_gbps"] = round(before["pairs"][3]["bw_average_gbps"] * 0.7, 2)
    found = verify_compare(before, after, max_drop_percent=10)
    failed = [row for row in found["rows"] if not row["passed"]]
    assert found["passed"] is False and [row["what"] for row in failed] == ["rail 3"]
    assert failed[0]["change_percent"] == -30.0
    assert failed[0]["problems"][0].endswith(
        "is a drop of 30%, more than 10% (worker-0 -> worker-1)"
    )
    assert failed[0]["nodes"] == "worker-0 -> worker-1"
    # Within a looser bound it passes.
    assert verify_compare(before, after, max_drop_percent=35)["passed"] is True


def test_gpudirect_lost_fails_whatever_the_numbers(before):
    after = copy.deepcopy(before)
    after["pairs"][0]["gpu_memory"] = "none"
    fallback = with_nccl(hgx_report(), "socket_fallback_2nodes")
    after["nccl"] = fallback["nccl"]
    found = verify_compare(before, after, max_drop_percent=100)
    problems = {row["what"]: row["problems"] for row in found["rows"] if not row["passed"]}
    assert problems["rail 0"] == [
        "the transport changed: GPUDirect (dmabuf) before, none (no GPUDirect) after"
    ]
    assert problems["NCCL"][0].startswith("the transport changed: IB (GPUDirect) before, Socket")


def test_a_rail_missing_after_fails_and_one_new_after_passes(before):
    after = copy.deepcopy(before)
    del after["pairs"][7]
    assert [r["problems"] for r in verify_compare(before, after)["rows"] if not r["passed"]] == [
        ["not measured after"]
    ]
    assert verify_compare(after, before)["passed"] is True


def test_a_negative_drop_is_refused_naming_the_option(before):
    with pytest.raises(AnsibleFilterError, match="max_drop_percent: got -1; expected a"):
        verify_compare(before, before, max_drop_percent=-1)


def test_a_changed_pairing_or_link_rate_fails_naming_the_node_and_nic(before):
    before = copy.deepcopy(before)
    after = copy.deepcopy(before)
    after["pairs"][2]["client_gpu"] = {
        **after["pairs"][2]["client_gpu"],
        "gpu": 5,
        "relation": "SYS",
    }
    after["pairs"][4]["server_port_gbps"] = 200.0
    before["pairs"][4]["server_port_gbps"] = 400.0
    found = verify_compare(before, after, max_drop_percent=100)
    problems = {row["what"]: row["problems"] for row in found["rows"] if not row["passed"]}
    nic = before["pairs"][2]["client_gpu"]["nic"]
    assert problems["rail 2"] == [
        f"the client GPU-NIC pairing changed on worker-1 ({nic}): GPU 2 PIX {nic} before, "
        f"GPU 5 SYS {nic} after"
    ]
    server_nic = before["pairs"][4]["server_gpu"]["nic"]
    assert problems["rail 4"] == [
        f"the server link rate changed on worker-0 ({server_nic}): 400 Gb/s before, 200 Gb/s after"
    ]
