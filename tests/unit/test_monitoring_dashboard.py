"""The fabric's dashboard (builders/dashboard.py): in the subset of Grafana's JSON that the
OpenShift console draws (its legacy dashboards code: panel types, rows and span, query
variables), and every query run by the real promtool on the PrometheusRule's rail map: each
returns the paired rail's series and nothing of a device or node outside the map, the group
variable narrows them, and the bandwidth beside its baseline has the expected value."""

from __future__ import annotations

import json
import re

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import dashboard, monitoring
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs
from tests.unit.promtool import (
    A100,
    NODES,
    RAIL_3,
    built_promtool,
    port,
    promtool_test,
    sample,
    series,
    write_rules,
)

PLAN = build_plan(inputs("node-groups"))
PRIORITY = PLAN["nic_configuration"]["priority"]
OUTSIDER = "outsider"
# Each exporter's series on the paired rail (node worker-a100-0, rail 3: mlx5_3, ens4f0np0, GPU 3),
# and the same on a device the rail map does not know and on a node of no group.
ON_DEVICES = {
    "node_infiniband_port_data_transmitted_bytes_total": "0+1500000000000x20",
    "node_infiniband_port_data_received_bytes_total": "0+750000000000x20",
    "node_infiniband_np_cnp_packets_sent_total": "0+600x20",
    "node_infiniband_symbol_error_total": "0+2x20",
    "node_infiniband_out_of_sequence_packets_received_total": "0+60x20",
    "node_infiniband_state_id": "4x20",
    "node_infiniband_link_downed_total": "0x20",
    "node_infiniband_rate_bytes_per_second": "50000000000x20",
}
ON_INTERFACES = {f"node_ethtool_received_prio{PRIORITY}_pause": "0+60000x20"}
ON_GPUS = {
    "DCGM_FI_DEV_XID_ERRORS": "0x20",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "0x20",
}


@pytest.fixture(scope="module")
def promtool() -> str:
    return built_promtool()


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    return write_rules(tmp_path_factory.mktemp("rules"))


def exporter_series() -> list[dict]:
    found = list(NODES)
    for name, values in ON_DEVICES.items():
        for node, device in ((A100, "mlx5_3"), (A100, "mlx5_0"), (OUTSIDER, "mlx5_3")):
            found.append(series(name, port(node, device), values))
    for name, values in ON_INTERFACES.items():
        for node, device in ((A100, "ens4f0np0"), (A100, "ens5f0np0"), (OUTSIDER, "ens4f0np0")):
            found.append(series(name, {"instance": node, "device": device}, values))
    for name, values in ON_GPUS.items():
        for node in (A100, OUTSIDER):
            found.append(series(name, {"instance": node, "gpu": "3", "Hostname": node}, values))
    return found


def targets(board: dict) -> list[tuple[str, str]]:
    return [
        (panel["title"], target["expr"])
        for row in board["rows"]
        for panel in row["panels"]
        for target in panel["targets"]
    ]


def test_the_config_map_is_where_the_console_finds_dashboards_and_holds_one():
    made = dashboard.config_map(PLAN)
    assert made["metadata"]["namespace"] == "openshift-config-managed"
    assert made["metadata"]["labels"]["console.openshift.io/dashboard"] == "true"
    # The console parses the first value of data only.
    (text,) = made["data"].values()
    assert json.loads(text) == dashboard.dashboard(PLAN)


def test_the_dashboard_is_in_the_subset_the_console_draws():
    board = dashboard.dashboard(PLAN)
    variables = board["templating"]["list"]
    for variable in variables:
        assert variable["type"] == "query" and variable["hide"] == 0, variable
        # The console rewrites label_values(a, b), with a comma and a space, to count(a) by (b).
        assert re.fullmatch(r"label_values\(.+, [a-z_]+\)", variable["query"]), variable
    declared = {v["name"] for v in variables}
    assert board["rows"] and "panels" not in board, "rows[] with span: gridPos is never read"
    ids = []
    for row in board["rows"]:
        assert row["title"] and row["showTitle"] is True
        assert sum(p["span"] for p in row["panels"]) <= 12
        for panel in row["panels"]:
            ids.append(panel["id"])
            assert panel["type"] in dashboard.PANEL_TYPES
            assert panel["title"] and 1 <= panel["span"] <= 12
            assert panel["yaxes"][0]["format"]
            refs = [t["refId"] for t in panel["targets"]]
            assert len(set(refs)) == len(refs)
            for target in panel["targets"]:
                assert target["expr"] and target["legendFormat"]
                # $name only: ${name} and [[name]] are not substituted by the console.
                assert "${" not in target["expr"] and "[[" not in target["expr"]
                used = set(re.findall(r"\$([a-z_]+)", target["expr"])) - {"1"}
                assert used <= declared, (panel["title"], used)
    assert len(set(ids)) == len(ids)


def test_congestion_panels_only_where_a_group_is_on_roce():
    def row_titles(name: str) -> list[str]:
        return [row["title"] for row in dashboard.dashboard(build_plan(inputs(name)))["rows"]]

    assert "Congestion (RoCE)" in row_titles("shared-device-roce")
    assert "Congestion (RoCE)" not in row_titles("shared-device-infiniband")


@pytest.mark.parametrize(("group", "found"), [(".+", 1), ("a100", 1), ("h100", 0)])
def test_every_query_returns_the_paired_rail_and_nothing_outside_the_map(
    group, found, promtool, rules, tmp_path
):
    """Each target, with the group variable as the console substitutes it (All is .+), gives
    exactly one series (the paired rail's, or its GPU's); the device the map does not know and
    the node of no group give none; the other node group's name gives nothing."""
    queries = [expr.replace("$group", group) for _title, expr in targets(dashboard.dashboard(PLAN))]
    assert len(queries) >= 11
    test = {
        "interval": "1m",
        "input_series": exporter_series(),
        "promql_expr_test": [
            {
                "expr": f"count({expr})",
                "eval_time": "15m",
                "exp_samples": [{"labels": "{}", "value": 1}] if found else [],
            }
            for expr in queries
        ],
    }
    done = promtool_test(promtool, rules, [test], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_bandwidth_of_a_rail_is_drawn_in_gbps_beside_its_baseline(promtool, rules, tmp_path):
    board = dashboard.dashboard(PLAN)
    sent, baseline = board["rows"][0]["panels"][0]["targets"]
    labels = {**port(A100, "mlx5_3"), **RAIL_3}
    baseline_labels = {"instance": A100, "node": A100, "device": "mlx5_3", **RAIL_3}
    test = {
        "interval": "1m",
        "input_series": exporter_series(),
        "promql_expr_test": [
            {
                # 1.5e12 bytes a minute: 200 Gb/s.
                "expr": sent["expr"].replace("$group", ".+"),
                "eval_time": "15m",
                "exp_samples": [sample("", labels, 200)],
            },
            {
                "expr": baseline["expr"].replace("$group", ".+"),
                "eval_time": "15m",
                "exp_samples": [sample(monitoring.RAIL_BASELINE, baseline_labels, 184.5)],
            },
        ],
    }
    done = promtool_test(promtool, rules, [test], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
