"""The real promtool and the fabric's rules it runs on, shared by the tests of the PrometheusRule
(test_monitoring_rules.py) and of the dashboard (test_monitoring_dashboard.py): promtool is built
from the Go module proxy (hack/build-monitoring-tools.sh, cached); the rules are the node-groups
example's, with verify's pairing of a100's rail 3; the series are named as the exporters name
them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import monitoring
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs

REPO_ROOT = Path(__file__).resolve().parents[2]
A100 = "worker-a100-0"
H100 = "worker-h100-0"
POOL = "label_gpudirect_example_com_pool"
# The defaults, and a planned port rate: 400 Gb/s ports that must not train below 390.
THRESHOLDS = {**monitoring.THRESHOLDS, "port_rate_gbps_below": 390}
# The node-groups example: a100 (RoCE, 4 rails), h100 (InfiniBand, 8 rails). verify paired a100's
# rail 3 with mlx5_3 and GPU 3.
PAIRING = {("a100", 3): {"device": "mlx5_3", "gpu": 3, "gbps": 184.5}}
RAIL_3 = {"group": "a100", "rail": "3", "interface": "ens4f0np0", "gpu": "3"}


def built_promtool() -> str:
    """The path of promtool, built (or found in the cache) by hack/build-monitoring-tools.sh;
    prometheus is beside it."""
    built = subprocess.run(
        ["bash", str(REPO_ROOT / "hack" / "build-monitoring-tools.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return str(Path(built.stdout.split()[-1]) / "promtool")


def write_rules(folder: Path) -> Path:
    """The node-groups example's PrometheusRule's groups, as a rule file promtool reads."""
    plan = build_plan(inputs("node-groups"))
    rule = monitoring.prometheus_rule(plan, "nvidia-gpu-operator", PAIRING, THRESHOLDS)
    path = folder / "rules.yml"
    path.write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    return path


def series(name: str, labels: dict, values: str) -> dict:
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def sample(name: str, labels: dict, value: float) -> dict:
    """An expected sample of a promql_expr_test."""
    return {"labels": series(name, labels, "")["series"], "value": value}


NODES = [
    series("kube_node_labels", {"node": A100, POOL: "a100", "instance": "10.0.0.9:8443"}, "1x90"),
    series("kube_node_labels", {"node": H100, POOL: "h100", "instance": "10.0.0.9:8443"}, "1x90"),
    series("kube_node_labels", {"node": "outsider", "instance": "10.0.0.9:8443"}, "1x90"),
]


def port(node: str, device: str) -> dict:
    return {"instance": node, "device": device, "port": "1", "job": "node-exporter"}


def promtool_test(promtool: str, rules: Path, tests: list[dict], folder: Path):
    path = folder / "tests.yml"
    path.write_text(
        yaml.safe_dump(
            {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests},
            sort_keys=False,
        )
    )
    return subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
