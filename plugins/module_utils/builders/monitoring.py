"""The fabric's health on OpenShift monitoring: the rail map as recording rules, the alerts, both
in one PrometheusRule (pure: the plan and the GPU-NIC pairing verify found in, objects out).

The series and their labels, each from the exporter's own code:
- node_infiniband_*: node_exporter's infiniband collector (collector/infiniband_linux.go), on by
  default and not turned off by OpenShift's node-exporter (cluster-monitoring-operator
  assets/node-exporter/daemonset.yaml), so the platform Prometheus has it on every node: the
  RDMA devices' port counters and the mlx5 driver's hw_counters (RoCE devices too), labels
  `device` (mlx5_3) and `port`. OpenShift's ServiceMonitor for it sets `instance` to the node's
  name (assets/node-exporter/service-monitor.yaml, relabeling __meta_kubernetes_pod_node_name).
- node_ethtool_*: node_exporter's ethtool collector, off on OpenShift unless the cluster
  monitoring ConfigMap turns it on (nodeExporter.collectors.ethtool.enabled, the Cluster
  Monitoring Operator's api.md); its names are the driver's counters with rx and tx spelled out
  (buildEthtoolFQName: rx_prio3_pause is node_ethtool_received_prio3_pause), label `device` (the
  network interface, ens1f0np0). The PFC alerts need it; without it they never fire.
- kube_node_labels: kube-state-metrics, every node label as label_<name> (OpenShift's
  --metric-labels-allowlist has nodes=[*]); the name is the label's with each character outside
  [a-zA-Z0-9_] made an underscore, then snake case (internal/store/utils.go).
- DCGM_FI_DEV_XID_ERRORS (the last XID, in dcgm-exporter's default counters) and the NVLink error
  counters (DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL, in its counter list but commented out: a
  counters ConfigMap named in the ClusterPolicy's dcgmExporter.config turns them on, which the
  collection does not write; docs/monitoring.md says so), labels gpu, UUID and Hostname
  (hostname from dcgm-exporter 4.6), err_code and err_msg on the XID series.

The rail map: a node group's nodes come from kube_node_labels by the group's node selector; a
rail's RDMA device and GPU from the pairing verify found (verify_baseline record keeps it).
gpudirect_rdma:rail:info has one series per node and rail, {instance, group, rail, interface,
device, gpu}; an alert on a device of a known rail carries them all ("worker-7 rail 3 (mlx5_3,
GPU 3)"), one on another device of a group's node carries its group and device.
gpudirect_rdma:rail:baseline_gbps has the same labels and, as its value, the rail's average
bandwidth in the verify baseline, for the dashboard to draw beside the live rate.
"""

from __future__ import annotations

import re

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    group_name,
    image,
    new_object,
)

RULE_API = ("monitoring.coreos.com/v1", "PrometheusRule")
SERVICE_MONITOR_API = ("monitoring.coreos.com/v1", "ServiceMonitor")
# The Namespace of the PrometheusRule, labelled so that the platform Prometheus evaluates its
# rules (they read node-exporter's, kube-state-metrics' and the DCGM exporter's series, which only
# the platform Prometheus has: rules in a user-workload namespace get a namespace matcher added).
NAMESPACE = "gpudirect-rdma-monitoring"
CLUSTER_MONITORING_LABEL = "openshift.io/cluster-monitoring"
# The DOCA Telemetry Service: the Network Operator's DaemonSet (manifests/state-doca-telemetry-
# service) labels its pods app.kubernetes.io/name=doca-telemetry, runs them with host networking
# and serves Prometheus on port 9189 (its default dts_config_map.ini), with no Service of its own.
TELEMETRY = "gpudirect-rdma-doca-telemetry"
TELEMETRY_POD_LABELS = {"app.kubernetes.io/name": "doca-telemetry"}
TELEMETRY_PORT = 9189
# The label the ServiceMonitor selects the collection's Service by (a Service somebody else makes
# for the same pods is not scraped twice).
SCRAPE_LABEL = "gpudirect.rdma/scrape"
# instance is the node's name, as node-exporter's ServiceMonitor sets it on OpenShift.
NODE_AS_INSTANCE = {
    "action": "replace",
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "instance",
}
# The DCGM exporter's ServiceMonitor settings the ClusterPolicy takes (dcgmExporter.serviceMonitor,
# applied to its endpoint by the GPU Operator): instance is the node's name, as for node-exporter.
DCGM_SERVICE_MONITOR = {"enabled": True, "relabelings": [NODE_AS_INSTANCE]}
RULE_NAME = "gpudirect-rdma-fabric"
NODE_GROUP = "gpudirect_rdma:node_group:info"
RAIL = "gpudirect_rdma:rail:info"
# A rail's bandwidth in the verify baseline (Gb/s), with the rail's labels: drawn beside the live
# rate on the dashboard.
RAIL_BASELINE = "gpudirect_rdma:rail:baseline_gbps"
# A GPU's NVLink errors in the last 10 minutes, the four counters together. increase() drops the
# metric name, and every GPU has all four counters with the same labels, so one increase over a
# name pattern gives duplicate label sets, which Prometheus refuses: each counter's increase
# carries its name in a label of its own before they are added up.
NVLINK_COUNTERS = ("CRC_FLIT", "CRC_DATA", "REPLAY", "RECOVERY")
NVLINK_ERRORS_10M = (
    "sum by (instance, gpu) ("
    + " or ".join(
        f"label_replace(increase(DCGM_FI_DEV_NVLINK_{counter}_ERROR_COUNT_TOTAL[10m]), "
        f'"counter", "{counter.lower()}", "", "")'
        for counter in NVLINK_COUNTERS
    )
    + ")"
)
# An InfiniBand port's state_id when it is up (node_exporter: 4: active).
ACTIVE = 4
# The alert thresholds and the plan inputs that set them (gpudirect_rdma_monitoring_<key>).
THRESHOLDS = {
    "for_minutes": 5,
    "link_down_per_hour": 1,
    "symbol_errors_per_10m": 10,
    "out_of_sequence_per_second": 100,
    "cnp_per_second": 5000,
    "pfc_pause_per_second": 1000,
    "nvlink_errors_per_10m": 1,
    "port_rate_gbps_below": 0,
}


def kube_state_label(key: str) -> str:
    """A node label's name in kube_node_labels (kube-state-metrics: label_ and the key with each
    character outside [a-zA-Z0-9_] an underscore, in snake case)."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return "label_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _quoted(value: str) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def node_group_rules(plan: dict) -> list[dict]:
    """Per node group: its nodes, each a series {instance: the node, group}."""
    rules = []
    for group in plan["groups"]:
        matchers = ",".join(
            f"{kube_state_label(key)}={_quoted(value)}"
            for key, value in sorted(group["node_selector"].items())
        )
        rules.append(
            {
                "record": NODE_GROUP,
                "expr": "label_replace(max by (node) "
                f'(kube_node_labels{{{matchers}}}), "instance", "$1", "node", "(.+)")',
                "labels": {"group": group_name(group)},
            }
        )
    return rules


def _paired(plan: dict, pairing: dict, group: dict, rail: dict) -> dict:
    """What verify found of a group's rail; a plan of one group finds it also where verify named
    no group (it names one only when there are several)."""
    found = pairing.get((group["name"], rail["index"]))
    if found is None and len(plan["groups"]) == 1:
        found = pairing.get((None, rail["index"]))
    return found or {}


def rail_rules(plan: dict, pairing: dict) -> list[dict]:
    """Per node group and rail whose RDMA device verify found (pairing: {(group, rail): {device,
    gpu}}): each of the group's nodes, {instance, group, rail, interface, device, gpu}."""
    rules = []
    for group in plan["groups"]:
        for rail in group["rails"]:
            found = _paired(plan, pairing, group, rail)
            if not found.get("device"):
                continue
            labels = {
                "rail": str(rail["index"]),
                "interface": rail["interface"],
                "device": found["device"],
            }
            if found.get("gpu") is not None:
                labels["gpu"] = str(found["gpu"])
            rules.append(
                {
                    "record": RAIL,
                    "expr": f"{NODE_GROUP}{{group={_quoted(group_name(group))}}}",
                    "labels": labels,
                }
            )
    return rules


def baseline_rules(plan: dict, pairing: dict) -> list[dict]:
    """Per node group and rail with a bandwidth in the verify baseline: the rail's series of the
    rail map with that bandwidth (Gb/s) as its value. After rail_rules in the same rule group,
    whose series it reads in the same evaluation."""
    rules = []
    for group in plan["groups"]:
        for rail in group["rails"]:
            found = _paired(plan, pairing, group, rail)
            if not found.get("device") or found.get("gbps") is None:
                continue
            rules.append(
                {
                    "record": RAIL_BASELINE,
                    "expr": f"{RAIL}{{group={_quoted(group_name(group))},"
                    f"rail={_quoted(str(rail['index']))}}} * 0 + {float(found['gbps'])}",
                }
            )
    return rules


def pairing_of(baseline: dict | None) -> dict:
    """The GPU-NIC pairing of a verify baseline (verify/baseline.py): {(group, rail): {device,
    gpu, gbps}}, from each rail's server side and the pair's average bandwidth."""
    found = {}
    for pair in (baseline or {}).get("pairs") or []:
        gpu = (pair.get("server_gpu") or {}).get("gpu")
        found[(pair.get("group"), pair.get("rail"))] = {
            "device": pair.get("device"),
            "gpu": gpu,
            "gbps": pair.get("bw_average_gbps"),
        }
    return found


def _on_rails(condition: str) -> str:
    """condition (series with instance and device) with the rail's labels where the rail map
    knows the device, else with the node's group; a node in no group is left out."""
    return (
        f"(({condition}) * on (instance, device) group_left (group, rail, interface, gpu) {RAIL})"
        f" or on (instance, device) "
        f"(({condition}) * on (instance) group_left (group) {NODE_GROUP})"
    )


WHERE = (
    "{{ $labels.instance }} {{ if $labels.rail }}rail {{ $labels.rail }} ({{ $labels.device }}"
    "{{ if $labels.gpu }}, GPU {{ $labels.gpu }}{{ end }}){{ else }}{{ $labels.device }}{{ end }}"
    " of node group {{ $labels.group }}"
)


def _alert(name: str, expr: str, minutes: int, severity: str, summary: str, runbook: str) -> dict:
    return {
        "alert": name,
        "expr": expr,
        "for": f"{minutes}m",
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": runbook},
    }


def fabric_alerts(plan: dict, thresholds: dict) -> list[dict]:
    minutes = thresholds["for_minutes"]
    alerts = [
        _alert(
            "GPUDirectRDMALinkDown",
            _on_rails(f"node_infiniband_state_id != {ACTIVE}"),
            minutes,
            "critical",
            f"{WHERE}: the link is not active (state {{{{ $value }}}})",
            "The port is not ACTIVE (node_exporter's state_id: 1 down, 2 init, 3 armed). Look at "
            "the cable and the switch port; on the node, ibstat or rdma link show. A rail that is "
            "down takes its GPU's traffic off GPUDirect RDMA.",
        ),
        _alert(
            "GPUDirectRDMALinkFlapping",
            _on_rails(
                "increase(node_infiniband_link_downed_total[1h]) "
                f">= {thresholds['link_down_per_hour']}"
            ),
            0,
            "warning",
            f"{WHERE}: the link went down {thresholds['link_down_per_hour']} or more times in the "
            "last hour",
            "The port's link_downed counter rose: the link failed to recover from errors and went "
            "down. Reseat or replace the cable or transceiver; check the switch port's errors.",
        ),
        _alert(
            "GPUDirectRDMASymbolErrors",
            _on_rails(
                "increase(node_infiniband_symbol_error_total[10m]) "
                f">= {thresholds['symbol_errors_per_10m']}"
            ),
            minutes,
            "warning",
            f"{WHERE}: {thresholds['symbol_errors_per_10m']} or more symbol errors in 10 minutes",
            "Minor link errors on the physical lanes (symbol_error) rise: a marginal cable, "
            "transceiver or connector. Errors that keep rising end in a link that flaps.",
        ),
        _alert(
            "GPUDirectRDMAOutOfSequence",
            _on_rails(
                "rate(node_infiniband_out_of_sequence_packets_received_total[5m]) "
                f">= {thresholds['out_of_sequence_per_second']}"
            ),
            minutes,
            "warning",
            f"{WHERE}: {thresholds['out_of_sequence_per_second']} or more out-of-sequence packets "
            "a second",
            "Packets arrive out of sequence and are retransmitted: loss in the fabric (on RoCE, a "
            "priority that is not lossless: PFC or ECN not set the same on NIC and switches).",
        ),
    ]
    if any(group["fabric"] == "roce" for group in plan["groups"]):
        priority = plan["nic_configuration"]["priority"]
        alerts += [
            _alert(
                "GPUDirectRDMACongestion",
                _on_rails(
                    "rate(node_infiniband_np_cnp_packets_sent_total[5m]) "
                    f">= {thresholds['cnp_per_second']}"
                ),
                minutes,
                "warning",
                f"{WHERE}: {thresholds['cnp_per_second']} or more congestion notifications (CNP) "
                "sent a second",
                "ECN-marked RoCE packets arrive and the NIC asks the senders to slow down: the "
                "fabric is congested on this rail's path. Sustained, it lowers NCCL's bandwidth.",
            ),
            _alert(
                "GPUDirectRDMAECNIgnored",
                _on_rails(
                    "increase(node_infiniband_rp_cnp_ignored_packets_received_total[10m]) > 0"
                ),
                minutes,
                "warning",
                f"{WHERE}: congestion notifications are ignored",
                "The NIC receives CNPs and ignores them: RoCE congestion control is off on the "
                "adapter (ECN not enabled). gpudirect_rdma_roce_ecn with the NIC firmware "
                "settings turns it on.",
            ),
            _alert(
                "GPUDirectRDMAPFCPauseStorm",
                "(rate(node_ethtool_received_prio" + str(priority) + "_pause[5m]) "
                f">= {thresholds['pfc_pause_per_second']}) "
                f"* on (instance) group_left (group) {NODE_GROUP}",
                minutes,
                "warning",
                "{{ $labels.instance }} {{ $labels.device }} of node group {{ $labels.group }}: "
                f"{thresholds['pfc_pause_per_second']} or more PFC pause frames a second on "
                f"priority {priority}",
                "The switch keeps pausing this port on the lossless priority: congestion or a "
                "stuck receiver downstream (a pause storm). Needs node-exporter's ethtool "
                "collector (docs/monitoring.md).",
            ),
        ]
    below = thresholds["port_rate_gbps_below"]
    if below:
        alerts.append(
            _alert(
                "GPUDirectRDMAPortRateLow",
                _on_rails(f"node_infiniband_rate_bytes_per_second * 8 / 1e9 < {below}"),
                minutes,
                "warning",
                f"{WHERE}: the port runs at {{{{ $value }}}} Gb/s",
                "The port trained at a lower rate than planned: a cable, transceiver or switch "
                "port of a lower speed, or lanes that failed to train.",
            )
        )
    return alerts


def gpu_alerts(thresholds: dict) -> list[dict]:
    """The GPUs' XID and NVLink errors, on the nodes of the node groups. The DCGM exporter's
    ServiceMonitor (the ClusterPolicy's, DCGM_SERVICE_MONITOR) sets instance to the node's name."""
    minutes = thresholds["for_minutes"]
    on_groups = f"* on (instance) group_left (group) {NODE_GROUP}"
    return [
        _alert(
            "GPUDirectRDMAGPUXid",
            f"((DCGM_FI_DEV_XID_ERRORS != 0) and (changes(DCGM_FI_DEV_XID_ERRORS[10m]) > 0)) "
            f"{on_groups}",
            0,
            "critical",
            "{{ $labels.instance }} GPU {{ $labels.gpu }} of node group {{ $labels.group }}: "
            "XID {{ $value }}",
            "The GPU driver reported an XID error (NVIDIA's XID catalog says what the code "
            "means; the series keeps the last one, so the alert is for a new one). GPU memory "
            "and NVLink XIDs stop the GPU's jobs; see the node's dmesg.",
        ),
        _alert(
            "GPUDirectRDMANVLinkErrors",
            f"({NVLINK_ERRORS_10M} >= {thresholds['nvlink_errors_per_10m']}) {on_groups}",
            minutes,
            "warning",
            "{{ $labels.instance }} GPU {{ $labels.gpu }} of node group {{ $labels.group }}: "
            f"{thresholds['nvlink_errors_per_10m']} or more NVLink errors in 10 minutes",
            "NVLink CRC, replay or recovery errors rise: a GPU's NVLink is degrading; NCCL "
            "between GPUs of the node slows or fails.",
        ),
    ]


def prometheus_rule(plan: dict, namespace: str, pairing: dict, thresholds: dict) -> dict:
    """The PrometheusRule, in namespace (one the platform Prometheus reads: labelled
    openshift.io/cluster-monitoring=true, as the GPU Operator labels its own)."""
    groups = [
        {
            "name": "gpudirect-rdma.rail-map",
            "rules": node_group_rules(plan)
            + rail_rules(plan, pairing)
            + baseline_rules(plan, pairing),
        },
        {"name": "gpudirect-rdma.fabric", "rules": fabric_alerts(plan, thresholds)},
        {"name": "gpudirect-rdma.gpu", "rules": gpu_alerts(thresholds)},
    ]
    return new_object(*RULE_API, RULE_NAME, namespace=namespace, spec={"groups": groups})


def enabled(plan: dict) -> bool:
    return plan["monitoring"]["enabled"]


def telemetry_service(plan: dict) -> dict:
    """plan["images"]'s DOCA Telemetry Service section of the NicClusterPolicy."""
    return image(plan, "docaTelemetryService")


def telemetry_objects(plan: dict) -> list[dict]:
    """The Service in front of the DOCA Telemetry Service's pods and the ServiceMonitor that
    user-workload monitoring scrapes it by, in the Network Operator's namespace (a user namespace:
    the platform Prometheus does not read it)."""
    namespace = plan["operators"]["network_operator"]["namespace"]
    labels = {**TELEMETRY_POD_LABELS, SCRAPE_LABEL: "doca-telemetry"}
    service = new_object("v1", "Service", TELEMETRY, namespace=namespace, labels=labels)
    service["spec"] = {
        "clusterIP": "None",
        "selector": dict(TELEMETRY_POD_LABELS),
        "ports": [
            {
                "name": "metrics",
                "port": TELEMETRY_PORT,
                "targetPort": TELEMETRY_PORT,
                "protocol": "TCP",
            }
        ],
    }
    monitor = new_object(
        *SERVICE_MONITOR_API,
        TELEMETRY,
        namespace=namespace,
        spec={
            "selector": {"matchLabels": {SCRAPE_LABEL: "doca-telemetry"}},
            "endpoints": [
                {
                    "port": "metrics",
                    "interval": "30s",
                    "relabelings": [dict(NODE_AS_INSTANCE)],
                }
            ],
        },
    )
    return [service, monitor]


def namespace(plan: dict) -> dict:
    return new_object("v1", "Namespace", NAMESPACE, labels={CLUSTER_MONITORING_LABEL: "true"})


def objects(plan: dict) -> list[dict]:
    """What the monitoring step applies, in order: its Namespace, the PrometheusRule (the rail
    map from the verify baseline the plan carries, plan["monitoring"]["baseline"], when there is
    one), the DOCA Telemetry Service's Service and ServiceMonitor. The console's dashboard
    (builders/dashboard.py) follows them in the step."""
    settings = plan["monitoring"]
    rule = prometheus_rule(
        plan, NAMESPACE, pairing_of(settings.get("baseline")), settings["thresholds"]
    )
    return [namespace(plan), rule, *telemetry_objects(plan)]
