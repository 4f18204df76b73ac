"""The node MachineConfigs of the worker pool (opt-in each: irdma blacklisted, CRI-O's memlock
limit, persistent NIC names); each change reboots the pool's nodes, so uninstall removes them
only when asked."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import machine_config

from .base import EVERYWHERE, Setting, Step, deleted

POOL_KIND = (machine_config.API_VERSION, "MachineConfigPool")


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    """The pool renders the plan's MachineConfigs and none of those the step removed, then
    reports Updated; no gate when the plan has none and none were removed (the pool is not
    touched)."""
    names = [obj["metadata"]["name"] for obj in machine_config.machine_configs(plan)]
    removed = [r["name"] for r in deleted(results, "MachineConfig")]
    if not names and not removed:
        return []
    return gate.pool_gates(plan["machine_configs"]["role"], names, removed)


def rolled_out(results: list[dict]) -> list[dict]:
    """Once uninstall deleted MachineConfigs, every pool renders without them and is updated."""
    names = [r["name"] for r in deleted(results, "MachineConfig")]
    return gate.pool_gates(None, [], names) if names else []


STEP = Step(
    name="machine-config",
    title="Node configuration (MachineConfigs)",
    role="node_config",
    operator=None,
    operand=lambda plan, csv: machine_config.machine_configs(plan),
    kinds=((machine_config.API_VERSION, "MachineConfig"),),
    gates=gates,
    settings=(
        Setting(
            "ready_timeout",
            "node_config_timeout",
            3600,
            ("Seconds to wait for the MachineConfigPool to be updated.",),
        ),
    ),
    prunes=True,
    wave=3,
    uninstall_when="uninstall_machine_configs",
    namespaces=lambda plan: ["openshift-machine-config-operator"],
    diagnostics=((*POOL_KIND, EVERYWHERE),),
    uninstall_gates=rolled_out,
)
