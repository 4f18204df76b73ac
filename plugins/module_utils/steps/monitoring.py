"""The fabric's health on OpenShift monitoring (opt-in, gpudirect_rdma_monitoring): the rail map
as recording rules and the alerts in a PrometheusRule, the console's dashboard, and the DOCA
Telemetry Service's Service and ServiceMonitor. The DOCA Telemetry Service itself is a section of
the NicClusterPolicy (the Network Operator step) and the DCGM exporter's ServiceMonitor one of the
ClusterPolicy (the GPU Operator step): both are there while this step is on.

The rail map comes from the cluster's verify baseline (verify_baseline: record), read when the
step runs: without one, the alerts name a node group and a device, not a rail and its GPU."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    dashboard,
    monitoring,
    verify_baseline,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)

from .base import Setting, Step
from .checks import Check, Facts, Read, finding

CHECK = "cluster-monitoring"
CONFIG_MAP = ("v1", "ConfigMap")
# The Cluster Monitoring Operator's settings (config.yaml): user-workload monitoring and the
# node-exporter collectors (its api.md: enableUserWorkload, nodeExporter.collectors.ethtool).
CLUSTER_MONITORING_CONFIG = ("cluster-monitoring-config", "openshift-monitoring")


def operand(plan: dict) -> list[dict]:
    return [*monitoring.objects(plan), dashboard.config_map(plan)]


def with_baseline(plan: dict, list_objects) -> tuple[dict, None]:
    """The plan with the cluster's verify baseline (None without one): nothing to wait for."""
    found = [
        item
        for item in list_objects(
            *CONFIG_MAP,
            plan["network_namespace"],
            label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}",
        )
        if item["metadata"]["name"] == verify_baseline.NAME
        and item["metadata"].get("namespace") == plan["network_namespace"]
    ]
    baseline = verify_baseline.from_config_map(found[0] if found else None)
    return {**plan, "monitoring": {**plan["monitoring"], "baseline": baseline}}, None


def _cluster_monitoring(facts: Facts) -> tuple[dict, str | None]:
    """The Cluster Monitoring Operator's config.yaml as a dict, and why it could not be read."""
    import yaml  # the modules' Python has it (kubernetes.core needs it); imported where used

    live = facts.one(*CONFIG_MAP, *CLUSTER_MONITORING_CONFIG)
    if live is None:
        return {}, None
    text = (live.get("data") or {}).get("config.yaml") or ""
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        return {}, f"its config.yaml is not YAML ({str(error).splitlines()[0]})"
    return (config, None) if isinstance(config, dict) else ({}, "its config.yaml is not a mapping")


def _said(on: bool, ok: str, off: str) -> dict:
    return finding(CHECK, "ok", ok) if on else finding(CHECK, "warning", off)


def check_cluster_monitoring(plan: dict, objects: list, facts: Facts, take_over: bool) -> list:
    """What the step needs of OpenShift monitoring and the user turns on: user-workload
    monitoring (it scrapes the DOCA Telemetry Service), and node-exporter's ethtool collector on
    a RoCE fabric (the PFC pause alert reads it)."""
    config, unreadable = _cluster_monitoring(facts)
    where = "openshift-monitoring/cluster-monitoring-config"
    if unreadable:
        return [finding(CHECK, "warning", f"{where}: {unreadable}")]
    found = [
        _said(
            config.get("enableUserWorkload") is True,
            "user-workload monitoring is on",
            f"user-workload monitoring is off ({where} has no enableUserWorkload: true): the "
            "DOCA Telemetry Service's ServiceMonitor is not scraped until it is on; the alerts "
            "and the dashboard read the platform Prometheus and work without it "
            "(docs/monitoring.md says how to turn it on)",
        )
    ]
    if any(group["fabric"] == "roce" for group in plan["groups"]):
        collectors = ((config.get("nodeExporter") or {}).get("collectors")) or {}
        found.append(
            _said(
                (collectors.get("ethtool") or {}).get("enabled") is True,
                "node-exporter's ethtool is on",
                f"node-exporter's ethtool collector is off ({where} has no "
                "nodeExporter.collectors.ethtool.enabled: true): the PFC pause alert "
                "(GPUDirectRDMAPFCPauseStorm) and the dashboard's PFC panel have no data "
                "until it is on (docs/monitoring.md)",
            )
        )
    return found


STEP = Step(
    name="monitoring",
    title="Fabric health on OpenShift monitoring (opt-in: gpudirect_rdma_monitoring)",
    role="monitoring",
    operator=None,
    operand=lambda plan, csv: operand(plan),
    # The Namespace last: while it is there, the step has objects to look for (trace).
    kinds=(
        CONFIG_MAP,
        monitoring.SERVICE_MONITOR_API,
        ("v1", "Service"),
        monitoring.RULE_API,
        ("v1", "Namespace"),
    ),
    settings=(
        Setting(
            "ready_timeout",
            "monitoring_timeout",
            300,
            ("Seconds to wait for the step's objects to be deleted when the opt-in is off.",),
        ),
    ),
    # After the RDMA methods: nothing waits for it.
    wave=6,
    prunes=True,
    enabled=monitoring.enabled,
    opt_in="monitoring",
    trace=("v1", "Namespace", monitoring.NAMESPACE),
    discover=with_baseline,
    namespaces=lambda plan: [monitoring.NAMESPACE],
    preflight=(
        Check(
            CHECK,
            check_cluster_monitoring,
            lambda plan, objects: (Read(*CONFIG_MAP, *CLUSTER_MONITORING_CONFIG),),
        ),
    ),
)
