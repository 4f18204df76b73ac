"""The example inventories as plan inputs (variables without the gpudirect_rdma_ prefix)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (
    group_view,
    server_pods,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
INVENTORIES = REPO_ROOT / "inventories"
NAMES = sorted(p.name for p in INVENTORIES.iterdir() if (p / "group_vars" / "all.yml").exists())


def inputs(name: str) -> dict:
    variables = yaml.safe_load((INVENTORIES / name / "group_vars" / "all.yml").read_text())
    return {key.removeprefix("gpudirect_rdma_"): value for key, value in variables.items()}


def bandwidth_pods(plan: dict) -> list[dict]:
    """The verify role's server pods on one node (of the first node group), with the role's
    default settings, asking for 8 GPUs."""
    defaults = yaml.safe_load(
        (REPO_ROOT / "roles" / "verify" / "defaults" / "main.yml").read_text()
    )
    settings = {
        key: defaults[f"verify_{key}"]
        for key in ("image", "perftest", "size", "qps", "duration", "port")
    }
    return server_pods(group_view(plan, plan["groups"][0]["name"]), "worker-0", settings, 8)


def mixed_groups(**first) -> dict:
    """The node-groups example's inputs with its a100 group on SR-IOV legacy over RoCE (first:
    more of its keys) beside its h100 group on shared device over InfiniBand."""
    given = inputs("node-groups")
    a100, h100 = given["node_groups"]
    return {**given, "node_groups": [{**a100, "method": "sriov_legacy", **first}, h100]}
