"""The PrometheusRule of the fabric (builders/monitoring.py) through the real promtool: `promtool
check rules` on it, and `promtool test rules` with, for every alert, a series that fires it and
one that does not; the alerts on a rail the pairing knows carry its node, rail, device and GPU.
promtool is built from the Go module proxy (hack/build-monitoring-tools.sh, cached)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import monitoring
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs
from tests.unit.promtool import (
    A100,
    H100,
    NODES,
    PAIRING,
    POOL,
    RAIL_3,
    THRESHOLDS,
    built_promtool,
    port,
    promtool_test,
    sample,
    series,
    write_rules,
)


@pytest.fixture(scope="module")
def promtool() -> str:
    return built_promtool()


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> Path:
    return write_rules(tmp_path_factory.mktemp("rules"))


def rail_3(summary: str, description_of: str, rules_text: dict, **labels) -> dict:
    return {
        "exp_labels": {**port(A100, "mlx5_3"), **RAIL_3, **labels},
        "exp_annotations": {
            "summary": f"{A100} rail 3 (mlx5_3, GPU 3) of node group a100: {summary}",
            "description": rules_text[description_of],
        },
    }


def descriptions(path: Path) -> dict:
    groups = yaml.safe_load(path.read_text())["groups"]
    return {
        r["alert"]: r["annotations"]["description"]
        for g in groups
        for r in g["rules"]
        if "alert" in r
    }


def cases(rules_path: Path) -> list[dict]:
    """One promtool test per alert: what fires it, and beside it what must not."""
    text = descriptions(rules_path)
    t = THRESHOLDS
    return [
        {
            "name": "link down: a rail the pairing knows, another device of a group's node; not a "
            "link that is up, not a node of no group",
            "input_series": [
                *NODES,
                series("node_infiniband_state_id", port(A100, "mlx5_3"), "4 4 1x30"),
                series("node_infiniband_state_id", port(A100, "mlx5_0"), "4x30"),
                series("node_infiniband_state_id", port(H100, "mlx5_9"), "1x30"),
                series("node_infiniband_state_id", port("outsider", "mlx5_0"), "1x30"),
            ],
            "alert_rule_test": [
                {"eval_time": "4m", "alertname": "GPUDirectRDMALinkDown", "exp_alerts": []},
                {
                    "eval_time": "10m",
                    "alertname": "GPUDirectRDMALinkDown",
                    "exp_alerts": [
                        rail_3(
                            "the link is not active (state 1)",
                            "GPUDirectRDMALinkDown",
                            text,
                            severity="critical",
                        ),
                        {
                            "exp_labels": {
                                **port(H100, "mlx5_9"),
                                "group": "h100",
                                "severity": "critical",
                            },
                            "exp_annotations": {
                                "summary": f"{H100} mlx5_9 of node group h100: the link is not "
                                "active (state 1)",
                                "description": text["GPUDirectRDMALinkDown"],
                            },
                        },
                    ],
                },
            ],
        },
        {
            "name": "link flapping",
            "input_series": [
                *NODES,
                series("node_infiniband_link_downed_total", port(A100, "mlx5_3"), "0x10 1x20"),
                series("node_infiniband_link_downed_total", port(A100, "mlx5_0"), "0x30"),
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GPUDirectRDMALinkFlapping", "exp_alerts": []},
                {
                    "eval_time": "20m",
                    "alertname": "GPUDirectRDMALinkFlapping",
                    "exp_alerts": [
                        rail_3(
                            f"the link went down {t['link_down_per_hour']} or more times in the "
                            "last hour",
                            "GPUDirectRDMALinkFlapping",
                            text,
                            severity="warning",
                        )
                    ],
                },
            ],
        },
        {
            "name": "symbol errors",
            "input_series": [
                *NODES,
                series("node_infiniband_symbol_error_total", port(A100, "mlx5_3"), "0+5x40"),
                series("node_infiniband_symbol_error_total", port(A100, "mlx5_0"), "0+0.1x40"),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": "GPUDirectRDMASymbolErrors",
                    "exp_alerts": [
                        rail_3(
                            f"{t['symbol_errors_per_10m']} or more symbol errors in 10 minutes",
                            "GPUDirectRDMASymbolErrors",
                            text,
                            severity="warning",
                        )
                    ],
                },
            ],
        },
        {
            "name": "out of sequence",
            "input_series": [
                *NODES,
                series(
                    "node_infiniband_out_of_sequence_packets_received_total",
                    port(A100, "mlx5_3"),
                    "0+60000x40",
                ),
                series(
                    "node_infiniband_out_of_sequence_packets_received_total",
                    port(A100, "mlx5_0"),
                    "0+60x40",
                ),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": "GPUDirectRDMAOutOfSequence",
                    "exp_alerts": [
                        rail_3(
                            f"{t['out_of_sequence_per_second']} or more out-of-sequence packets "
                            "a second",
                            "GPUDirectRDMAOutOfSequence",
                            text,
                            severity="warning",
                        )
                    ],
                },
            ],
        },
        {
            "name": "congestion notifications sent, and ignored",
            "input_series": [
                *NODES,
                series(
                    "node_infiniband_np_cnp_packets_sent_total",
                    port(A100, "mlx5_3"),
                    "0+600000x40",
                ),
                series("node_infiniband_np_cnp_packets_sent_total", port(A100, "mlx5_0"), "0+6x40"),
                series(
                    "node_infiniband_rp_cnp_ignored_packets_received_total",
                    port(A100, "mlx5_3"),
                    "0x10 0+1x30",
                ),
                series(
                    "node_infiniband_rp_cnp_ignored_packets_received_total",
                    port(A100, "mlx5_0"),
                    "7x40",
                ),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": "GPUDirectRDMACongestion",
                    "exp_alerts": [
                        rail_3(
                            f"{t['cnp_per_second']} or more congestion notifications (CNP) sent "
                            "a second",
                            "GPUDirectRDMACongestion",
                            text,
                            severity="warning",
                        )
                    ],
                },
                {
                    "eval_time": "30m",
                    "alertname": "GPUDirectRDMAECNIgnored",
                    "exp_alerts": [
                        rail_3(
                            "congestion notifications are ignored",
                            "GPUDirectRDMAECNIgnored",
                            text,
                            severity="warning",
                        )
                    ],
                },
            ],
        },
        {
            "name": "PFC pause storm on the lossless priority only",
            "input_series": [
                *NODES,
                series(
                    "node_ethtool_received_prio3_pause",
                    {"instance": A100, "device": "ens4f0np0", "job": "node-exporter"},
                    "0+600000x40",
                ),
                series(
                    "node_ethtool_received_prio0_pause",
                    {"instance": A100, "device": "ens1f0np0", "job": "node-exporter"},
                    "0+600000x40",
                ),
                series(
                    "node_ethtool_received_prio3_pause",
                    {"instance": A100, "device": "ens1f0np0", "job": "node-exporter"},
                    "0+60x40",
                ),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": "GPUDirectRDMAPFCPauseStorm",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "instance": A100,
                                "device": "ens4f0np0",
                                "job": "node-exporter",
                                "group": "a100",
                                "severity": "warning",
                            },
                            "exp_annotations": {
                                "summary": f"{A100} ens4f0np0 of node group a100: "
                                f"{t['pfc_pause_per_second']} or more PFC pause frames a second "
                                "on priority 3",
                                "description": text["GPUDirectRDMAPFCPauseStorm"],
                            },
                        }
                    ],
                },
            ],
        },
        {
            "name": "a port below its planned rate; not one at it",
            "input_series": [
                *NODES,
                series("node_infiniband_rate_bytes_per_second", port(A100, "mlx5_3"), "2.5e10x20"),
                series("node_infiniband_rate_bytes_per_second", port(A100, "mlx5_0"), "5e10x20"),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "10m",
                    "alertname": "GPUDirectRDMAPortRateLow",
                    "exp_alerts": [
                        rail_3(
                            "the port runs at 200 Gb/s",
                            "GPUDirectRDMAPortRateLow",
                            text,
                            severity="warning",
                        )
                    ],
                },
            ],
        },
        {
            "name": "a new XID; not an old one",
            "input_series": [
                *NODES,
                series(
                    "DCGM_FI_DEV_XID_ERRORS",
                    {"instance": A100, "gpu": "3", "UUID": "GPU-3", "job": "gpu-metrics"},
                    "0x10 79x30",
                ),
                series(
                    "DCGM_FI_DEV_XID_ERRORS",
                    {"instance": A100, "gpu": "1", "UUID": "GPU-1", "job": "gpu-metrics"},
                    "13x40",
                ),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "15m",
                    "alertname": "GPUDirectRDMAGPUXid",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "instance": A100,
                                "gpu": "3",
                                "UUID": "GPU-3",
                                "job": "gpu-metrics",
                                "group": "a100",
                                "severity": "critical",
                            },
                            "exp_annotations": {
                                "summary": f"{A100} GPU 3 of node group a100: XID 79",
                                "description": text["GPUDirectRDMAGPUXid"],
                            },
                        }
                    ],
                },
                {"eval_time": "35m", "alertname": "GPUDirectRDMAGPUXid", "exp_alerts": []},
            ],
        },
        {
            "name": "NVLink errors",
            "input_series": [
                *NODES,
                series(
                    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                    {"instance": A100, "gpu": "2", "job": "gpu-metrics"},
                    "0+1x40",
                ),
                # The exporter has every counter of every GPU: the same labels but the name.
                series(
                    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                    {"instance": A100, "gpu": "2", "job": "gpu-metrics"},
                    "0x40",
                ),
                series(
                    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                    {"instance": A100, "gpu": "5", "job": "gpu-metrics"},
                    "0x40",
                ),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": "GPUDirectRDMANVLinkErrors",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "instance": A100,
                                "gpu": "2",
                                "group": "a100",
                                "severity": "warning",
                            },
                            "exp_annotations": {
                                "summary": f"{A100} GPU 2 of node group a100: "
                                f"{t['nvlink_errors_per_10m']} or more NVLink errors in 10 "
                                "minutes",
                                "description": text["GPUDirectRDMANVLinkErrors"],
                            },
                        }
                    ],
                },
            ],
        },
    ]


def test_the_rules_pass_promtool_check(promtool, rules):
    checked = subprocess.run(
        [promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_every_alert_fires_on_its_series_and_not_on_others(promtool, rules, tmp_path):
    tests = [{**case, "interval": "1m"} for case in cases(rules)]
    tested = {t["alertname"] for case in tests for t in case["alert_rule_test"]}
    assert tested == set(descriptions(rules))
    done = promtool_test(promtool, rules, tests, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_rail_of_the_baseline_has_its_bandwidth_beside_its_labels(promtool, rules, tmp_path):
    """The baseline's series: the rail map's labels of each node of the group, the verify
    baseline's bandwidth as the value; a rail without one has none."""
    (record,) = monitoring.baseline_rules(build_plan(inputs("node-groups")), PAIRING)
    assert record["record"] == monitoring.RAIL_BASELINE
    labels = {"instance": A100, "node": A100, "device": "mlx5_3", **RAIL_3}
    test = {
        "interval": "1m",
        "input_series": NODES,
        "promql_expr_test": [
            {
                "expr": monitoring.RAIL_BASELINE,
                "eval_time": "2m",
                "exp_samples": [sample(monitoring.RAIL_BASELINE, labels, 184.5)],
            }
        ],
    }
    done = promtool_test(promtool, rules, [test], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_wrong_expectation_fails_promtool(promtool, rules, tmp_path):
    """The control: an alert expected on the rail that stays up makes promtool fail."""
    (case,) = [c for c in cases(rules) if c["name"].startswith("link down")]
    case["alert_rule_test"][1]["exp_alerts"][0]["exp_labels"]["device"] = "mlx5_0"
    done = promtool_test(promtool, rules, [{**case, "interval": "1m"}], tmp_path)
    assert done.returncode != 0
    assert "GPUDirectRDMALinkDown" in done.stdout + done.stderr


def test_node_labels_are_named_as_kube_state_metrics_names_them():
    assert monitoring.kube_state_label("gpudirect.example.com/pool") == POOL
    assert (
        monitoring.kube_state_label("feature.node.kubernetes.io/pci-15b3.present")
        == "label_feature_node_kubernetes_io_pci_15b3_present"
    )
    assert monitoring.kube_state_label("nodeRole") == "label_node_role"


def test_the_rail_map_has_the_rails_verify_paired_and_the_pairing_comes_from_the_baseline():
    baseline = {
        "pairs": [
            {
                "group": "a100",
                "rail": 3,
                "device": "mlx5_3",
                "server_gpu": {"gpu": 3},
                "bw_average_gbps": 184.5,
            },
            {"group": "h100", "rail": 0, "device": "mlx5_0", "server_gpu": None},
        ]
    }
    pairing = monitoring.pairing_of(baseline)
    assert pairing == {
        ("a100", 3): {"device": "mlx5_3", "gpu": 3, "gbps": 184.5},
        ("h100", 0): {"device": "mlx5_0", "gpu": None, "gbps": None},
    }
    rules = monitoring.rail_rules(build_plan(inputs("node-groups")), pairing)
    assert [r["labels"] for r in rules] == [
        {"rail": "3", "interface": "ens4f0np0", "device": "mlx5_3", "gpu": "3"},
        {"rail": "0", "interface": "ibp26s0", "device": "mlx5_0"},
    ]
    assert monitoring.pairing_of(None) == {}


def test_roce_alerts_only_where_a_group_is_on_roce_and_the_port_rate_only_when_asked():
    def alerts(name: str, **thresholds) -> set[str]:
        plan = build_plan(inputs(name))
        return {a["alert"] for a in monitoring.fabric_alerts(plan, {**THRESHOLDS, **thresholds})}

    roce = {"GPUDirectRDMACongestion", "GPUDirectRDMAECNIgnored", "GPUDirectRDMAPFCPauseStorm"}
    assert roce <= alerts("shared-device-roce")
    assert not roce & alerts("shared-device-infiniband")
    assert "GPUDirectRDMAPortRateLow" not in alerts("shared-device-roce", port_rate_gbps_below=0)
    assert "GPUDirectRDMAPortRateLow" in alerts("shared-device-roce")
