"""The fabric's rules and dashboard in a real Prometheus (3.16, built from the Go module proxy
by hack/build-monitoring-tools.sh) that scrapes the simulator's exporters
(tests/simulator/exporters.py: node-exporter, DCGM and kube-state-metrics series of the fake
nodes of the node-groups example):
a port the simulator reports down, PFC pauses on the lossless priority and a GPU's XID fire their
alerts for the named node, rail, device and GPU; every query of the dashboard returns data, and
the dashboard drawn from their results renders in a browser."""

from __future__ import annotations

import html
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import dashboard, monitoring
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import free_port
from tests.integration import dashboard_page
from tests.integration.browser import open_page, page_errors
from tests.integration.helpers import wait_for
from tests.integration.test_site import nodes_for
from tests.unit.inventories import inputs
from tests.unit.promtool import built_promtool

INVENTORY = "node-groups"
NODE = "worker-a100-0"
# What verify found on the a100 group's rail 3 (its fourth NIC, ens4f0np0: mlx5_3 on the
# simulator's nodes): GPU 3, 184.5 Gb/s.
PAIRING = {("a100", 3): {"device": "mlx5_3", "gpu": 3, "gbps": 184.5}}
# At once: the tests cannot wait minutes for a `for`.
THRESHOLDS = {**monitoring.THRESHOLDS, "for_minutes": 0}


def scrape_configs(exporters: str, nodes: list[str]) -> list[dict]:
    """A job per exporter; instance is the node's name, as OpenShift's ServiceMonitors for
    node-exporter and (through the ClusterPolicy) the DCGM exporter set it."""
    address = urllib.parse.urlsplit(exporters).netloc
    per_node = [
        {
            "job_name": job,
            "static_configs": [
                {
                    "targets": [address],
                    "labels": {"instance": node, "__metrics_path__": f"/metrics/{job}/{node}"},
                }
                for node in nodes
            ],
        }
        for job in ("node-exporter", "dcgm")
    ]
    return [
        *per_node,
        {
            "job_name": "kube-state-metrics",
            "metrics_path": "/metrics/kube-state-metrics",
            "static_configs": [{"targets": [address]}],
        },
    ]


@pytest.fixture(scope="module")
def prometheus(control_plane, harness, tmp_path_factory):
    """A real Prometheus over the simulator's exporters, with the fabric's rules; its URL."""
    tmp_path = tmp_path_factory.mktemp("prometheus")
    nodes_for(harness, INVENTORY)
    plan = build_plan(inputs(INVENTORY))
    nodes = [f"worker-{g['name']}-{i}" for g in plan["groups"] for i in range(2)]
    rule = monitoring.prometheus_rule(plan, "nvidia-gpu-operator", PAIRING, THRESHOLDS)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yml")],
        "scrape_configs": scrape_configs(control_plane.exporters, nodes),
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    binary = Path(built_promtool()).with_name("prometheus")
    with open(tmp_path / "prometheus.log", "w") as log:
        process = subprocess.Popen(
            [
                str(binary),
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url), timeout=60, what=f"Prometheus at {url}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:  # noqa: S310
            return answer.status == 200
    except OSError:
        return False


def _api(url: str, path: str, **query) -> dict:
    address = f"{url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        with urllib.request.urlopen(address, timeout=10) as answer:  # noqa: S310 - http://127.0.0.1
            found = json.load(answer)
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{address}: {error.code} {error.read().decode()}") from error
    assert found["status"] == "success", found
    return found["data"]


def firing(url: str, name: str) -> list[dict]:
    return [
        a
        for a in _api(url, "alerts")["alerts"]
        if a["labels"]["alertname"] == name and a["state"] == "firing"
    ]


def test_the_real_prometheus_fires_link_down_pfc_and_xid_for_the_named_rail_and_gpu(
    prometheus, knobs
):
    knobs(
        {
            "exporters": {
                "link_down": [{"node": NODE, "device": "mlx5_3"}],
                # rate() over 5m of a series a few seconds old averages over the whole window
                # (Prometheus extrapolates no further back than the counter's zero): a storm
                # of 100,000 a second crosses the 1,000 in seconds.
                "pause": [
                    {"node": NODE, "interface": "ens4f0np0", "priority": 3, "per_second": 100000}
                ],
            }
        }
    )
    (down,) = wait_for(lambda: firing(prometheus, "GPUDirectRDMALinkDown"), timeout=60)
    assert {k: down["labels"].get(k) for k in ("instance", "group", "rail", "device", "gpu")} == {
        "instance": NODE,
        "group": "a100",
        "rail": "3",
        "device": "mlx5_3",
        "gpu": "3",
    }
    assert down["annotations"]["summary"] == (
        f"{NODE} rail 3 (mlx5_3, GPU 3) of node group a100: the link is not active (state 1)"
    )
    (pause,) = wait_for(lambda: firing(prometheus, "GPUDirectRDMAPFCPauseStorm"), timeout=60)
    assert (pause["labels"]["instance"], pause["labels"]["device"]) == (NODE, "ens4f0np0")
    assert pause["annotations"]["summary"].startswith(f"{NODE} ens4f0np0 of node group a100:")
    assert firing(prometheus, "GPUDirectRDMAGPUXid") == []
    # The XID series changes from 0 to 79 once Prometheus has scraped the 0.
    time.sleep(2)
    knobs(
        {
            "exporters": {
                "link_down": [{"node": NODE, "device": "mlx5_3"}],
                "xid": [{"node": NODE, "gpu": 3, "code": 79}],
            }
        }
    )
    (xid,) = wait_for(lambda: firing(prometheus, "GPUDirectRDMAGPUXid"), timeout=60)
    assert (xid["labels"]["instance"], xid["labels"]["gpu"], xid["labels"]["group"]) == (
        NODE,
        "3",
        "a100",
    )
    assert xid["annotations"]["summary"] == f"{NODE} GPU 3 of node group a100: XID 79"
    # Only the rail the simulator took down, on no other node or device.
    assert len(firing(prometheus, "GPUDirectRDMALinkDown")) == 1


def test_every_query_of_the_dashboard_returns_data_from_the_real_prometheus(prometheus):
    plan = build_plan(inputs(INVENTORY))
    queries = [
        (panel["title"], target["expr"].replace("$group", ".+"))
        for row in dashboard.dashboard(plan)["rows"]
        for panel in row["panels"]
        for target in panel["targets"]
    ]
    # Rates need two scrapes of each series.
    wait_for(
        lambda: _api(prometheus, "query", query=queries[0][1])["result"],
        timeout=60,
        what="the first rate",
    )
    empty = [
        title for title, expr in queries if not _api(prometheus, "query", query=expr)["result"]
    ]
    assert empty == []
    # The group variable's values, as the console asks for them (label_values rewritten).
    variable = dashboard.dashboard(plan)["templating"]["list"][0]["query"]
    counted = variable.replace("label_values(", "count(").replace(", group)", ") by (group)")
    groups = {r["metric"]["group"] for r in _api(prometheus, "query", query=counted)["result"]}
    assert groups == {"a100", "h100"}


def _ranges(url: str, expr: str, end: float) -> list[dict]:
    """The query over the last minute, a point a second."""
    return _api(
        url, "query_range", query=expr.replace("$group", ".+"), start=end - 60, end=end, step=1
    )["result"]


def test_the_dashboard_drawn_from_the_real_prometheus_in_a_browser(prometheus, tmp_path):
    """Each panel's queries over the last minute (query_range, the group variable on All),
    drawn as the console lays the rows out, in Chromium: every panel has its lines, named by
    node, rail, device and GPU; the screenshot is kept in build/screenshots."""
    plan = build_plan(inputs(INVENTORY))
    board = dashboard.dashboard(plan)
    first = board["rows"][0]["panels"][0]["targets"][0]["expr"]
    # A line of at least 10 points: 10 seconds of rates.
    wait_for(
        lambda: any(len(s["values"]) >= 10 for s in _ranges(prometheus, first, time.time())),
        timeout=90,
        what="10 seconds of the first rate",
    )
    end = time.time()
    results = {}
    for row in board["rows"]:
        for panel in row["panels"]:
            results[panel["id"]] = [
                (
                    dashboard_page.legend(target["legendFormat"], s["metric"]),
                    [(float(t), float(v)) for t, v in s["values"]],
                )
                for target in panel["targets"]
                for s in _ranges(prometheus, target["expr"], end)
            ]
    assert all(results.values()), [p for p, s in results.items() if not s]
    short = [name for series in results.values() for name, points in series if len(points) < 2]
    assert short == [], "a series of one point draws no line"
    path = tmp_path / "dashboard.html"
    path.write_text(dashboard_page.page(board, results))
    dom, picture, log = open_page(path, "monitoring-dashboard.png", 2400)
    assert page_errors(log) == []
    panels = [p for row in board["rows"] for p in row["panels"]]
    assert dom.count('class="panel"') == len(panels)
    assert "no data" not in dom
    for panel in panels:
        assert html.escape(panel["title"], quote=False) in dom
    # A rail's line is named as the alerts name it.
    assert f"{NODE} rail 3 (mlx5_3, GPU 3)" in dom
    print(f"screenshot: {picture}")
