"""The GPU Operator's ClusterPolicy: the CSV's default, with GPUDirect RDMA set on top."""

from __future__ import annotations

import copy

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import monitoring
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    alm_example,
    new_object,
)

NAME = "gpu-cluster-policy"


def default_spec_from_csv(csv: dict | None) -> dict | None:
    """The ClusterPolicy spec in a GPU Operator CSV's alm-examples, if it has one."""
    example = alm_example(csv, "ClusterPolicy")
    return None if example is None else example.get("spec") or {}


def _set(tree: dict, path: str, value) -> None:
    keys = path.split(".")
    for key in keys[:-1]:
        node = tree.get(key)
        if not isinstance(node, dict):
            node = tree[key] = {}
        tree = node
    tree[keys[-1]] = value


def gpudirect_settings(plan: dict) -> dict:
    """The fields this collection owns in the ClusterPolicy, as dotted paths.

    dmabuf (NVIDIA's recommendation): open kernel modules, no nvidia-peermem; kernelModuleType
    is what current operators honour, useOpenKernelModules what older ones (and Red Hat's
    example) set. peermem: the legacy nvidia-peermem module, built against the DOCA driver
    that the Network Operator installs (not a host MOFED)."""
    gpu, upgrades = plan["gpu"], plan["driver_upgrades"]
    settings = {
        "operator.defaultRuntime": "crio",
        "operator.use_ocp_driver_toolkit": True,
        "gds.enabled": gpu["gds"],
        "gdrcopy.enabled": gpu["gdrcopy"],
        # The driver upgrade controller on (the CRD's default is off), with the inventory's
        # budgets; the rest of upgradePolicy stays as the CSV gives it.
        "driver.upgradePolicy.autoUpgrade": True,
        "driver.upgradePolicy.maxParallelUpgrades": upgrades["max_parallel"],
        "driver.upgradePolicy.maxUnavailable": upgrades["max_unavailable"],
        "driver.upgradePolicy.podDeletion.timeoutSeconds": upgrades["drain_timeout_seconds"],
        "driver.upgradePolicy.drain.timeoutSeconds": upgrades["drain_timeout_seconds"],
    }
    if gpu["memory"] == "dmabuf":
        settings.update(
            {
                "driver.kernelModuleType": "open",
                "driver.useOpenKernelModules": True,
                "driver.rdma": {"enabled": False},
            }
        )
    else:
        settings["driver.rdma"] = {"enabled": True, "useHostMofed": False}
    if monitoring.enabled(plan):
        # The DCGM exporter's ServiceMonitor, which the GPU Operator makes in its namespace (one
        # the platform Prometheus reads), with the node's name as instance for the alerts.
        settings["dcgmExporter.serviceMonitor"] = monitoring.DCGM_SERVICE_MONITOR
    return settings


def cluster_policy(plan: dict, csv: dict | None = None) -> dict:
    base = default_spec_from_csv(csv)
    if base is None:
        base = plan["gpu"]["default_spec"]
    spec = copy.deepcopy(base)
    for path, value in gpudirect_settings(plan).items():
        _set(spec, path, copy.deepcopy(value))
    return new_object("nvidia.com/v1", "ClusterPolicy", NAME, spec=spec)
