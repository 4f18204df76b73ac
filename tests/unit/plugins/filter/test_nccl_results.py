"""gpudirect.rdma.nccl_results on outputs shaped like nccl-tests' all_reduce_perf with
NCCL_DEBUG=INFO (NCCL 2.21 lines; written here, not captured on hardware): InfiniBand and RoCE
with GPUDirect RDMA (one with Slurm's per-line prefix and an MPI warning), a socket fallback, a
run without GPUDirect from an older nccl-tests (no root column, #wrong N/A), a run with wrong
values, a network error without a table, and a table cut short; the same runs through a net
plugin (IBext_v8, AWS Libfabric) and with a proxy rank on the channels. And on the real outputs
of nccl-tests 2.19.6 on NCCL 2.28.9 (../shared/real-outputs/h200-vm-driver580, read through
GPUDIRECT_RDMA_SHARED): the socket fallback NCCL 2.28 prints, the 2.19 table and footer, a run
cut short, a failure without an NCCL WARN line, and the JSON file of -J."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.nccl_results import nccl_results
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl import parse
from tests.harness.controlplane import shared_dir

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"
REAL = "real-outputs/h200-vm-driver580"
DEBUG_RUN = "nccl-tests-2.19.6-all_reduce_perf-1gpu-debug-info.txt"
QUIET_RUN = "nccl-tests-2.19.6-all_reduce_perf-1gpu.txt"
JSON_RUN = "nccl-tests-2.19.6-all_reduce_perf-1gpu.json"
TOO_MANY_GPUS = "nccl-tests-2.19.6-all_reduce_perf-asks-2-gpus-has-1.txt"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def real(name: str) -> str:
    """A real output from ../shared (or $GPUDIRECT_RDMA_SHARED), as the tool printed it."""
    return (shared_dir() / REAL / name).read_text()


def failure(text: str, **options) -> str:
    with pytest.raises(AnsibleFilterError) as raised:
        nccl_results(text, **options)
    return str(raised.value)


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
        (
            "",
            "no results table (NCCL failed or the run was cut short): no NCCL WARN or test "
            "failure line either",
        ),
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


def test_nccl_2_28s_socket_fallback_is_sockets_not_ib():
    found = nccl_results(real(DEBUG_RUN))
    assert (found["transport"], found["gpudirect"], found["devices"]) == ("Socket", False, [])
    assert (found["ranks"], found["nodes"]) == (1, 1)


def test_the_network_nccl_names_wins_over_its_device_list():
    text = fixture("ib_gdrdma_2nodes_16ranks.txt").replace(
        "Using network IB", "Using network Socket"
    )
    assert "NET/IB : Using [0]mlx5_0:1/IB" in text
    found = nccl_results(text)
    assert (found["transport"], found["gpudirect"]) == ("Socket", False)
    assert found["devices"][0] == "mlx5_0:1"  # the NICs NCCL listed are still reported


def test_without_the_named_network_a_device_list_says_ib_and_ro_alone_does_not():
    unnamed = [
        line
        for line in real(DEBUG_RUN).splitlines()
        if "Using network" not in line and "Assigned NET plugin" not in line
    ]
    assert any(line.endswith("NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>") for line in unnamed)
    assert nccl_results("\n".join(unnamed))["transport"] == "Socket"  # from NET/Socket : Using
    ib = "\n".join(
        line
        for line in fixture("ib_gdrdma_2nodes_16ranks.txt").splitlines()
        if "Using network" not in line
    )
    assert nccl_results(ib)["transport"] == "IB"


def test_nics_merged_into_one_device_are_each_listed():
    text = fixture("ib_gdrdma_2nodes_16ranks.txt")
    merged = re.sub(
        r"NET/IB : Using .*; OOB",
        "NET/IB : Using [0]={[0] mlx5_0:1/IB, [1] mlx5_3:1/IB} [RO]; OOB",
        text,
    )
    assert merged != text
    assert nccl_results(merged)["devices"] == ["mlx5_0:1", "mlx5_3:1"]


def _through_plugin(text: str, name: str) -> str:
    """The run as NCCL 2.28 prints it through the net plugin `name`: the plugin assigned to the
    comm, the network named after it, and its name in every channel."""
    named = re.sub(
        r"^(.*NCCL INFO )Using network IB$",
        lambda found: (
            f"{found[1]}Assigned NET plugin {name} to comm\n{found[1]}Using network {name}"
        ),
        text,
        flags=re.MULTILINE,
    )
    return named.replace("via NET/IB/", f"via NET/{name}/")


@pytest.mark.parametrize("name", ["IBext_v8", "AWS Libfabric"])
def test_a_net_plugin_is_named_as_nccl_names_it_and_its_gdrdma_channels_count(name):
    text = _through_plugin(fixture("ib_gdrdma_2nodes_16ranks.txt"), name)
    assert f"[send] via NET/{name}/0/GDRDMA" in text and f"Using network {name}" in text
    assert f"NCCL INFO Assigned NET plugin {name} to comm" in text
    found = nccl_results(text)
    assert (found["transport"], found["gpudirect"]) == (name, True)
    assert len(found["devices"]) == 8


@pytest.mark.parametrize("name", ["IBext_v8", "AWS Libfabric"])
def test_a_net_plugins_channels_without_gdrdma_are_no_gpudirect(name):
    found = nccl_results(_through_plugin(fixture("roce_no_gdr_old_columns.txt"), name))
    assert (found["transport"], found["gpudirect"]) == (name, False)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("ib_gdrdma_2nodes_16ranks.txt", True), ("roce_no_gdr_old_columns.txt", False)],
)
def test_a_channel_through_a_proxy_rank_is_read(name, expected):
    text = fixture(name).replace("via NET/IB/0", "via NET/IB/0(1)")
    assert "via NET/IB/0(1)" in text
    assert nccl_results(text)["gpudirect"] is expected


@pytest.mark.parametrize("name", [DEBUG_RUN, QUIET_RUN])
def test_the_nccl_tests_2_19_table_root_column_exponent_cells_and_integer_average(name):
    text = real(name)
    table = [
        line.split()
        for line in text.splitlines()
        if line.strip() and line.split()[0].isdigit() and len(line.split()) == 13
    ]
    found = nccl_results(text)
    assert [r["size"] for r in found["rows"]] == [int(cells[0]) for cells in table]
    assert [r["in_place"]["algbw"] for r in found["rows"]] == [float(c[10]) for c in table]
    assert any("e+" in cells[10] for cells in table) == (name == DEBUG_RUN)
    assert "# Avg bus bandwidth    : 0 \n" in text and "# Collective test concluded" in text
    assert (found["avg_busbw_gbytes"], found["wrong"]) == (0.0, 0)
    assert found["largest"]["size"] == max(int(cells[0]) for cells in table)


def test_nccl_tests_2_19_quiet_leaves_the_network_unknown():
    found = nccl_results(real(QUIET_RUN))
    assert (found["transport"], found["gpudirect"], found["devices"]) == (None, None, [])


def test_a_run_cut_short_inside_its_table_says_it_never_concluded():
    lines = real(DEBUG_RUN).splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith("# Out of bounds"))
    text = failure("\n".join(lines[:cut]))
    assert text.endswith(
        "the results table has 14 row(s) but no '# Avg bus bandwidth' line: the run was cut "
        "short (all_reduce_perf says '# Collective test starting' but never '# Collective test "
        "concluded')"
    )


def test_a_run_cut_short_before_its_table_says_so():
    lines = real(DEBUG_RUN).splitlines()
    cut = next(i for i, line in enumerate(lines) if "Init COMPLETE" in line)
    text = failure("\n".join(lines[: cut + 1]))
    assert text.startswith(
        "gpudirect.rdma.nccl_results: the output holds no results table: the run was cut short "
        "(all_reduce_perf says '# Collective test starting' but never '# Collective test "
        "concluded'), with no NCCL WARN or test failure line. Last lines: "
    )
    assert text.endswith("- Init COMPLETE")


def test_a_failure_without_an_nccl_warn_line_is_quoted_before_the_last_lines():
    text = failure(real(TOO_MANY_GPUS))
    said, _last, tail = text.partition(". Last lines: ")
    assert said == (
        "gpudirect.rdma.nccl_results: the output holds no results table (NCCL failed or the run "
        "was cut short): Invalid number of GPUs: 2 requested but only 1 were found.; Test "
        "failure common.cu:1454"
    )
    assert tail.endswith(".. vm pid 1238: Test failure common.cu:1454")


def test_nccl_tests_cuda_and_nccl_failures_are_quoted_once_in_order():
    header = real(TOO_MANY_GPUS).split("Invalid number")[0]
    text = header + (
        "vm: Test CUDA failure common.cu:215 'invalid device ordinal'\n"
        " .. vm pid 1238: Test failure common.cu:1620\n"
        "vm: Test NCCL failure common.cu:222 'unhandled system error (run with NCCL_DEBUG=INFO "
        "for details) / '\n"
        "vm: Test NCCL failure common.cu:222 'unhandled system error (run with NCCL_DEBUG=INFO "
        "for details) / '\n"
        " .. vm pid 1238: Test failure common.cu:1454\n"
    )
    said = failure(text).split("cut short): ", 1)[1].split(". Last lines: ")[0]
    assert said.split("; ") == [
        "Test CUDA failure common.cu:215 'invalid device ordinal'",
        "Test failure common.cu:1620",
        "Test NCCL failure common.cu:222 'unhandled system error (run with NCCL_DEBUG=INFO for "
        "details) / '",
        "Test failure common.cu:1454",
    ]


def test_an_nccl_warn_and_the_tests_failures_are_both_quoted():
    said = failure(fixture("failure_network_error.txt")).partition(". Last lines: ")[0]
    warn = said.index("NCCL WARN NET/IB : Got completion from peer 10.0.1.12<49221>")
    nccl_failure = said.index("; Test NCCL failure common.cu:1279 'remote process exited")
    assert warn < nccl_failure < said.index("; Test failure common.cu:1094")


def test_the_json_file_of_dash_j_reads_into_the_shape_of_the_text():
    document = json.loads(real(JSON_RUN))
    found = nccl_results(real(JSON_RUN), format="json")
    assert set(found) == set(parse(real(QUIET_RUN)))
    assert [r["size"] for r in found["rows"]] == [r["size"] for r in document["results"]]
    assert found["rows"][0] == {
        "size": document["results"][0]["size"],
        "count": document["results"][0]["count"],
        "type": "float",
        "redop": "sum",
        "out_of_place": {
            "time_us": document["results"][0]["out_of_place"]["time"],
            "algbw": document["results"][0]["out_of_place"]["alg_bw"],
            "busbw": 0.0,
            "wrong": 0,
        },
        "in_place": {
            "time_us": document["results"][0]["in_place"]["time"],
            "algbw": document["results"][0]["in_place"]["alg_bw"],
            "busbw": 0.0,
            "wrong": 0,
        },
    }
    assert found["largest"]["size"] == 64 << 20
    assert (found["ranks"], found["nodes"]) == (1, 1)
    assert (found["avg_busbw_gbytes"], found["avg_busbw_gbps"], found["wrong"]) == (0.0, 0.0, 0)
    assert (found["transport"], found["gpudirect"], found["devices"]) == (None, None, [])


def test_json_wrong_values_come_from_the_rows_then_the_out_of_bounds_count():
    document = json.loads(real(JSON_RUN))
    document["results"][-1]["out_of_place"]["nwrong"] = 7.0
    assert nccl_results(json.dumps(document), format="json")["wrong"] == 7
    for row in document["results"]:
        row["out_of_place"]["nwrong"] = row["in_place"]["nwrong"] = None
    document["out_of_bounds"] = {"count": 2, "okay": "false"}
    found = nccl_results(json.dumps(document), format="json")
    assert (found["wrong"], found["largest"]["in_place"]["wrong"]) == (2, None)


def _edited(**changes) -> str:
    document = json.loads(real(JSON_RUN))
    for key, value in changes.items():
        if value is None:
            del document[key]
        else:
            document[key] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            lambda: real(QUIET_RUN),
            "expected nccl-tests' JSON output (-J, format version 3); got text that is not JSON "
            "(Expecting value: line 1 column 1 (char 0)): '# nccl-tests version 2.19.6",
        ),
        (
            lambda: "[]",
            "expected nccl-tests' JSON output (-J, format version 3), an object; got a list",
        ),
        (
            lambda: _edited(version=None),
            "expected nccl-tests' JSON output (-J, format version 3) with a 'version' key; got an "
            "object with keys args, average_bus_bandwidth, config,",
        ),
        (
            lambda: _edited(version=2),
            "expected nccl-tests' JSON output (-J, format version 3); got version 2",
        ),
        (
            lambda: _edited(results=None),
            "expected nccl-tests' JSON output (-J, format version 3) with a 'results' list; got "
            "none",
        ),
        (
            lambda: _edited(results=[]),
            "the JSON output holds no results (NCCL failed or the run was cut short)",
        ),
        (
            lambda: _edited(errors=["", "NCCL failure: unhandled cuda error"]),
            "nccl-tests reported errors in its JSON output: 'NCCL failure: unhandled cuda error'",
        ),
        (
            lambda: _edited(average_bus_bandwidth=None),
            "the JSON output has 7 result(s) but no average_bus_bandwidth.bandwidth number (got "
            "None): the run was cut short",
        ),
    ],
    ids=[
        "text",
        "list",
        "no-version",
        "version-2",
        "no-results",
        "empty-results",
        "errors",
        "no-average",
    ],
)
def test_json_that_is_not_nccl_tests_version_3_says_what_arrived(text, expected):
    assert expected in failure(text(), format="json")


def test_a_json_row_without_its_numbers_says_which():
    document = json.loads(real(JSON_RUN))
    del document["results"][2]["in_place"]["bus_bw"]
    assert "result 2 has in_place: {'time': 0.8893, 'alg_bw': 4716.41066, 'nwrong': 0.0}" in (
        failure(json.dumps(document), format="json")
    )


def test_the_format_is_one_of_text_and_json():
    said = failure(real(JSON_RUN), format="yaml")
    assert "format" in said and "text, json" in said and "yaml" in said
