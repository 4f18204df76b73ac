"""The exporters OpenShift monitoring scrapes, played for the fake nodes on one HTTP endpoint on
loopback, each series named and labelled as its exporter names it (builders/monitoring.py says
where from), so that a real Prometheus can scrape them and evaluate the collection's rules:

- /metrics/node-exporter/<node>: node_exporter's infiniband collector for each NIC of the node's
  hardware (the RDMA device mlx5_<index>, port 1): node_infiniband_state_id (4: active),
  node_infiniband_rate_bytes_per_second, the port's data counters and error counters, the mlx5
  hw_counters; and its ethtool collector's node_ethtool_received_prio<P>_pause (device: the
  interface's name), for priorities 0 to 7;
- /metrics/dcgm/<node>: the DCGM exporter's DCGM_FI_DEV_XID_ERRORS and NVLink error counters of
  each GPU (labels gpu, UUID, Hostname);
- /metrics/kube-state-metrics: kube_node_labels of every fake node (label_<name> as
  kube-state-metrics names a label).

Counters grow from the simulator's start at the rates below. Knobs (`exporters`): link_down
[{node, device}] reports that port's state 1 (down); pause [{node, interface, priority,
per_second}] makes its pause counter grow at that rate; xid [{node, gpu, code}] makes the GPU
report that XID. The endpoint's port is the simulator's --exporters-port.
"""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.simulator.core import World
from tests.simulator.nodes import DEFAULT_RATE_GBPS
from tests.simulator.operators import fake_nodes, hardware_of

# Traffic on every port while the simulator runs: bytes a second each way.
DATA_BYTES_PER_SECOND = 12.5e9
PRIORITIES = range(8)


def _label(key: str) -> str:
    """A node label's name in kube_node_labels (as kube-state-metrics writes it)."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return "label_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _line(name: str, labels: dict, value: float) -> str:
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{text}}} {value:g}"


def node_exporter(node: dict, knobs: dict, seconds: float) -> list[str]:
    name = node["metadata"]["name"]
    down = {(k.get("node"), k.get("device")) for k in knobs.get("link_down") or []}
    pauses = {
        (k.get("node"), k.get("interface"), int(k.get("priority", 0))): float(k["per_second"])
        for k in knobs.get("pause") or []
    }
    lines = []
    for index, nic in enumerate((hardware_of(node) or {}).get("nics") or []):
        device = {"device": f"mlx5_{index}", "port": "1"}
        rate = float(nic.get("rateGbps") or DEFAULT_RATE_GBPS)
        lines += [
            _line("node_infiniband_state_id", device, 1 if (name, device["device"]) in down else 4),
            _line("node_infiniband_rate_bytes_per_second", device, rate * 1e9 / 8),
            _line(
                "node_infiniband_port_data_transmitted_bytes_total",
                device,
                DATA_BYTES_PER_SECOND * seconds,
            ),
            _line(
                "node_infiniband_port_data_received_bytes_total",
                device,
                DATA_BYTES_PER_SECOND * seconds,
            ),
            _line("node_infiniband_link_downed_total", device, 0),
            _line("node_infiniband_symbol_error_total", device, 0),
            _line("node_infiniband_out_of_sequence_packets_received_total", device, 0),
            _line("node_infiniband_np_cnp_packets_sent_total", device, 0),
            _line("node_infiniband_rp_cnp_ignored_packets_received_total", device, 0),
        ]
        for priority in PRIORITIES:
            per_second = pauses.get((name, nic["name"], priority), 0.0)
            lines.append(
                _line(
                    f"node_ethtool_received_prio{priority}_pause",
                    {"device": nic["name"]},
                    per_second * seconds,
                )
            )
    return lines


def dcgm(node: dict, knobs: dict) -> list[str]:
    name = node["metadata"]["name"]
    xids = {(k.get("node"), int(k.get("gpu", 0))): int(k["code"]) for k in knobs.get("xid") or []}
    lines = []
    for gpu in range(int((hardware_of(node) or {}).get("gpus") or 0)):
        labels = {"gpu": str(gpu), "UUID": f"GPU-{name}-{gpu}", "Hostname": name}
        lines.append(_line("DCGM_FI_DEV_XID_ERRORS", labels, xids.get((name, gpu), 0)))
        for counter in ("CRC_FLIT", "CRC_DATA", "REPLAY", "RECOVERY"):
            lines.append(_line(f"DCGM_FI_DEV_NVLINK_{counter}_ERROR_COUNT_TOTAL", labels, 0))
    return lines


def kube_state_metrics(nodes: list[dict]) -> list[str]:
    return [
        _line(
            "kube_node_labels",
            {
                "node": node["metadata"]["name"],
                **{_label(k): v for k, v in (node["metadata"].get("labels") or {}).items()},
            },
            1,
        )
        for node in nodes
    ]


class Exporters:
    """The controller keeps the fake nodes and the knobs of its last tick; the endpoint renders
    the series from them and the clock."""

    name = "exporters"

    def __init__(self, port: int) -> None:
        self.started = time.monotonic()
        self.nodes: dict[str, dict] = {}
        self.knobs: dict = {}
        exporters = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                lines = exporters.render(self.path.split("?", 1)[0].strip("/").split("/"))
                body = ("\n".join(lines) + "\n" if lines is not None else "not found").encode()
                self.send_response(200 if lines is not None else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True, name="exporters").start()

    def reconcile(self, world: World) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in fake_nodes(world, reuse=True)}
        self.knobs = world.knobs.get("exporters") or {}

    def render(self, parts: list[str]) -> list[str] | None:
        seconds = time.monotonic() - self.started
        if parts == ["metrics", "kube-state-metrics"]:
            return kube_state_metrics(list(self.nodes.values()))
        if len(parts) == 3 and parts[0] == "metrics" and parts[2] in self.nodes:
            node = self.nodes[parts[2]]
            if parts[1] == "node-exporter":
                return node_exporter(node, self.knobs, seconds)
            if parts[1] == "dcgm":
                return dcgm(node, self.knobs)
        return None
