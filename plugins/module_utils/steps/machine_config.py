"""The node MachineConfigs of the worker pool (opt-in each: irdma blacklisted, CRI-O's memlock
limit, persistent NIC names); each change reboots the pool's nodes, so uninstall removes them
only when asked."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import machine_config
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_plans

from .base import EVERYWHERE, Disruption, Setting, Step, deleted
from .checks import (
    CLUSTER_VERSION,
    NODE_READS,
    Check,
    Facts,
    Read,
    finding,
    matching,
    methods,
    nfd_labelled,
    which,
)

POOL_KIND = (machine_config.API_VERSION, "MachineConfigPool")
# The labels of a node that runs the control plane (OpenShift labels it with both).
CONTROL_PLANE_LABELS = ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane")
INTEL_NIC_LABEL = "feature.node.kubernetes.io/pci-8086.present"


def check_irdma(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list[dict]:
    """Nodes of a group with Intel NICs may load irdma, which the blacklist MachineConfig stops
    (once NFD has labelled the nodes)."""
    if plan["machine_configs"]["blacklist_irdma"] or not nfd_labelled(facts):
        return []
    found = []
    for view in group_plans(plan):
        selected = matching(view["node_selector"], facts.nodes)
        intel = [n["name"] for n in selected if n["labels"].get(INTEL_NIC_LABEL) == "true"]
        if intel:
            found.append(
                finding(
                    "irdma",
                    "warning",
                    f"{which(view)}nodes with Intel NICs ({', '.join(intel)}) may load irdma, "
                    "which breaks the DOCA driver reload: set gpudirect_rdma_blacklist_irdma: true",
                )
            )
    return found


def single_node(nodes: list[dict]) -> bool:
    """Single-node OpenShift, workers added or not: one node runs the control plane (what the
    Infrastructure's status.controlPlaneTopology SingleReplica says, from the node list every
    run reads anyway), or the cluster has one node."""
    control_plane = [
        n for n in nodes if any(label in n["labels"] for label in CONTROL_PLANE_LABELS)
    ]
    return len(control_plane) == 1 or len(nodes) == 1


def check_pool(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list[dict]:
    """The pool the MachineConfigs go to exists and has machines; single-node OpenShift said
    with what it means (every reboot takes the API away)."""
    single = single_node(facts.nodes)
    found = []
    settings = plan["machine_configs"]
    wanted = (
        settings["blacklist_irdma"] or settings["crio_memlock"] or settings["persistent_nic_names"]
    )
    role = settings["role"]
    pool = facts.one(*POOL_KIND, role)
    if wanted and facts.one(*CLUSTER_VERSION, "version") is not None:
        if pool is None:
            found.append(
                finding(
                    "machine-configs",
                    "error",
                    f"gpudirect_rdma_machine_config_role is {role} but there is no "
                    f"MachineConfigPool {role}",
                )
            )
        elif (pool.get("status") or {}).get("machineCount") == 0:
            found.append(
                finding(
                    "machine-configs",
                    "error",
                    f"MachineConfigPool {role} has no machines: the MachineConfigs would reach no "
                    "node"
                    + (
                        " (single-node OpenShift: set gpudirect_rdma_machine_config_role: master)"
                        if single
                        else ""
                    ),
                )
            )
    if single:
        found.append(
            finding(
                "single-node",
                "warning",
                "single-node OpenShift: verify.yml needs two nodes, and every MachineConfig"
                + (" and SR-IOV policy change" if "sriov_legacy" in methods(plan) else "")
                + " reboots the only node (the API is away meanwhile)",
            )
        )
    if not found:
        found.append(finding("single-node", "ok", f"{len(facts.nodes)} nodes"))
    return found


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


def pool_nodes(config: dict, nodes: list[dict], others: list[dict]) -> list[str]:
    """The nodes of the MachineConfigPool a MachineConfig is for (its role label)."""
    role = ((config.get("metadata") or {}).get("labels") or {}).get(machine_config.ROLE_LABEL)
    return [n["name"] for n in nodes if f"node-role.kubernetes.io/{role}" in n["labels"]]


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
    # Created, changed or removed (as uninstall_machine_configs keeps them by default), a
    # MachineConfig reboots its pool.
    disruptions=(
        Disruption(
            "node configuration",
            "reboot",
            ((machine_config.API_VERSION, "MachineConfig"),),
            None,
            pool_nodes,
            owned_only=True,
        ),
    ),
    preflight=(
        Check("irdma", check_irdma, lambda plan, objects: NODE_READS),
        Check(
            "machine-configs",
            check_pool,
            lambda plan, objects: (
                *NODE_READS,
                Read(*CLUSTER_VERSION, "version"),
                Read(*POOL_KIND, plan["machine_configs"]["role"]),
            ),
        ),
    ),
)
