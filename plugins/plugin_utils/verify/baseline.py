"""The cluster's verify baseline: the numbers of a run that passed, kept to judge later runs
against the cluster's own first figures instead of a fixed floor alone (pure: a report in, a
ConfigMap out; a ConfigMap and a report in, a comparison out).

What is kept of a run: when and where it ran, and per node group each rail's pair (its nodes, its
average bandwidth, how GPU memory moved, each side's GPU next to the NIC and their relation, each
side's port rate) and each NCCL run (its nodes, bus bandwidth, transport, GPUDirect). A later run
fails against it on a relative drop beyond its setting, or any change of transport, GPU-NIC
pairing or link rate (verify/compare.py), naming the nodes and the NIC.
"""

from __future__ import annotations

import json

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import new_object
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.verify_baseline import (
    KEY,
    NAME,
    from_config_map,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.compare import compare
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import COMPONENT

PAIR_KEYS = (
    "group",
    "rail",
    "interface",
    "server_node",
    "client_node",
    "device",
    "bw_average_gbps",
    "gpu_memory",
    "server_gpu",
    "client_gpu",
    "server_port_gbps",
    "client_port_gbps",
)
RUN_KEYS = ("group", "nodes", "ranks", "avg_busbw_gbps", "transport", "gpudirect", "devices")


def kept(report: dict) -> dict:
    """What a baseline keeps of a verify report."""
    return {
        "run": report.get("run") or {},
        "pairs": [{k: p[k] for k in PAIR_KEYS if k in p} for p in report.get("pairs") or []],
        "nccl": [{k: r[k] for k in RUN_KEYS if k in r} for r in report.get("nccl") or []],
    }


def config_map(plan: dict, report: dict) -> dict:
    """The ConfigMap that holds the baseline, in the network's namespace, labelled as the verify
    test's (uninstall removes it with the collection's other objects)."""
    obj = new_object("v1", "ConfigMap", NAME, COMPONENT, namespace=plan["network_namespace"])
    return {**obj, "data": {KEY: json.dumps(kept(report), indent=1, sort_keys=True)}}


def against(baseline: dict, report: dict, max_drop_percent: float) -> dict:
    """The report judged against the baseline: the comparison (compare.compare), with when the
    baseline was recorded and its nodes."""
    found = compare(baseline, report, max_drop_percent)
    return {**found, "recorded": (baseline.get("run") or {}).get("date")}


__all__ = ["KEY", "NAME", "against", "config_map", "from_config_map", "kept"]
