"""The fabric's dashboard for the OpenShift console (Observe > Dashboards), per node group and rail:
bandwidth beside the verify baseline, PFC pause frames and congestion notifications (RoCE),
errors, link state and rate, the GPUs' XID and NVLink errors (pure: the plan in, a ConfigMap out).

What the console reads, from its code (openshift/monitoring-plugin
web/src/components/dashboards/legacy/, and the console's own copy before 4.18): the ConfigMaps in
openshift-config-managed labelled console.openshift.io/dashboard=true, the first value of each
one's data parsed as a Grafana 6 style dashboard. It draws only the panel types graph,
singlestat, gauge, table and grafana-piechart-panel, in rows[] (each panel's width from span;
gridPos is never read); of a graph, targets[].expr and legendFormat, yaxes[0].format, stack and
legend.show; of the templating list, variables of type query (a string, label_values(a, b)
rewritten to count(a) by (b)) shown when hide is 0, substituted as $name, All as .+.

The series are those of the PrometheusRule's rail map (builders/monitoring.py): each query joins
the exporter's series to gpudirect_rdma:rail:info (or the node group's, for the GPUs), so that a
line is named by node, rail, RDMA device and GPU, and the group variable narrows them.
"""

from __future__ import annotations

import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import new_object
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.monitoring import (
    NODE_GROUP,
    NVLINK_ERRORS_10M,
    RAIL,
    RAIL_BASELINE,
)

NAME = "gpudirect-rdma-fabric"
NAMESPACE = "openshift-config-managed"
LABEL = "console.openshift.io/dashboard"
KEY = f"{NAME}.json"
PANEL_TYPES = ("graph", "singlestat", "gauge", "table", "grafana-piechart-panel")
GROUP_VARIABLE = "group"
ON_RAILS = f'{RAIL}{{group=~"${GROUP_VARIABLE}"}}'
ON_GROUPS = f'{NODE_GROUP}{{group=~"${GROUP_VARIABLE}"}}'
RAIL_LEGEND = "{{instance}} rail {{rail}} ({{device}}, GPU {{gpu}})"
GPU_LEGEND = "{{instance}} GPU {{gpu}}"


def per_rail(expr: str) -> str:
    """expr's series of RDMA devices (labels instance, device) on the rails of the map, with the
    rail's group, rail, interface and GPU."""
    return f"({expr}) * on (instance, device) group_left (group, rail, interface, gpu) {ON_RAILS}"


def per_interface(expr: str) -> str:
    """expr's series of network interfaces (node_exporter's ethtool collector: device is the
    interface's name) on the rails of the map, with the rail's group, rail and GPU."""
    named = f'label_replace({expr}, "interface", "$1", "device", "(.+)")'
    return f"({named}) * on (instance, interface) group_left (group, rail, gpu) {ON_RAILS}"


def per_gpu(expr: str) -> str:
    """expr's series of GPUs (the DCGM exporter's: instance is the node) on the group's nodes."""
    return f"({expr}) * on (instance) group_left (group) {ON_GROUPS}"


def rows(plan: dict) -> list[dict]:
    """The dashboard's rows: (title, [(panel title, unit, [(expr, legend)])])."""
    roce = any(group["fabric"] == "roce" for group in plan["groups"])
    priority = plan["nic_configuration"]["priority"]
    gbps = "rate({name}[5m]) * 8 / 1e9"
    found = [
        (
            "Bandwidth",
            [
                (
                    "Sent, Gb/s, beside each rail's verify baseline",
                    "short",
                    [
                        (
                            per_rail(
                                gbps.format(
                                    name="node_infiniband_port_data_transmitted_bytes_total"
                                )
                            ),
                            RAIL_LEGEND,
                        ),
                        (
                            f'{RAIL_BASELINE}{{group=~"${GROUP_VARIABLE}"}}',
                            f"{RAIL_LEGEND} baseline",
                        ),
                    ],
                ),
                (
                    "Received, Gb/s",
                    "short",
                    [
                        (
                            per_rail(
                                gbps.format(name="node_infiniband_port_data_received_bytes_total")
                            ),
                            RAIL_LEGEND,
                        )
                    ],
                ),
            ],
        )
    ]
    if roce:
        found.append(
            (
                "Congestion (RoCE)",
                [
                    (
                        f"PFC pause frames received on priority {priority}, a second",
                        "short",
                        [
                            (
                                per_interface(
                                    f"rate(node_ethtool_received_prio{priority}_pause[5m])"
                                ),
                                "{{instance}} rail {{rail}} ({{interface}}, GPU {{gpu}})",
                            )
                        ],
                    ),
                    (
                        "Congestion notifications (CNP) sent, a second",
                        "short",
                        [
                            (
                                per_rail("rate(node_infiniband_np_cnp_packets_sent_total[5m])"),
                                RAIL_LEGEND,
                            )
                        ],
                    ),
                ],
            )
        )
    found += [
        (
            "Errors",
            [
                (
                    "Symbol errors in 10 minutes",
                    "short",
                    [(per_rail("increase(node_infiniband_symbol_error_total[10m])"), RAIL_LEGEND)],
                ),
                (
                    "Out-of-sequence packets, a second",
                    "short",
                    [
                        (
                            per_rail(
                                "rate(node_infiniband_out_of_sequence_packets_received_total[5m])"
                            ),
                            RAIL_LEGEND,
                        )
                    ],
                ),
            ],
        ),
        (
            "Link",
            [
                (
                    "Port state (4: active)",
                    "short",
                    [(per_rail("node_infiniband_state_id"), RAIL_LEGEND)],
                ),
                (
                    "Link downs in the last hour",
                    "short",
                    [(per_rail("increase(node_infiniband_link_downed_total[1h])"), RAIL_LEGEND)],
                ),
                (
                    "Port rate, Gb/s",
                    "short",
                    [(per_rail("node_infiniband_rate_bytes_per_second * 8 / 1e9"), RAIL_LEGEND)],
                ),
            ],
        ),
        (
            "GPUs",
            [
                (
                    "Last XID error (0: none)",
                    "short",
                    [(per_gpu("DCGM_FI_DEV_XID_ERRORS"), GPU_LEGEND)],
                ),
                (
                    "NVLink errors in 10 minutes",
                    "short",
                    [
                        (
                            per_gpu(NVLINK_ERRORS_10M),
                            GPU_LEGEND,
                        )
                    ],
                ),
            ],
        ),
    ]
    return found


def dashboard(plan: dict) -> dict:
    """The dashboard's JSON document (a dict), in the subset the console draws."""
    panel_id = 0
    built_rows = []
    for title, panels in rows(plan):
        built = []
        for panel_title, unit, targets in panels:
            panel_id += 1
            built.append(
                {
                    "id": panel_id,
                    "type": "graph",
                    "title": panel_title,
                    "span": 12 // len(panels),
                    "stack": False,
                    "legend": {"show": True},
                    "yaxes": [{"format": unit}, {"format": "short"}],
                    "targets": [
                        {"expr": expr, "legendFormat": legend, "refId": chr(ord("A") + index)}
                        for index, (expr, legend) in enumerate(targets)
                    ],
                }
            )
        built_rows.append({"title": title, "showTitle": True, "collapse": False, "panels": built})
    return {
        "title": "GPUDirect RDMA fabric",
        "tags": ["gpudirect-rdma"],
        "schemaVersion": 14,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {
                    "name": GROUP_VARIABLE,
                    "type": "query",
                    "query": f"label_values({NODE_GROUP}, group)",
                    "includeAll": True,
                    "hide": 0,
                    "options": [],
                }
            ]
        },
        "rows": built_rows,
    }


def config_map(plan: dict) -> dict:
    """The ConfigMap the console finds the dashboard in (one dashboard: the console reads the
    first value of data only)."""
    obj = new_object("v1", "ConfigMap", NAME, namespace=NAMESPACE, labels={LABEL: "true"})
    return {**obj, "data": {KEY: json.dumps(dashboard(plan), indent=1, sort_keys=True)}}
