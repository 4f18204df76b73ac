"""Node Feature Discovery: Red Hat's NFD operator, its NodeFeatureDiscovery instance, and the
NVIDIA GPU and NIC labels it puts on nodes."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nfd
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_plans
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nfd import (
    GPU_LABEL,
    NIC_LABEL,
)

from .base import Operator, Setting, Step, install_timeout
from .checks import (
    NODE_READS,
    Check,
    Facts,
    finding,
    matching,
    nfd_labelled,
    nfd_labelled_node,
    variable,
    which,
)

OPERATOR = Operator(
    key="nfd",
    namespace="openshift-nfd",
    package="nfd",
    operator_group="openshift-nfd",
    subscription="nfd",
    channel="stable",
    source="redhat-operators",
    namespace_labels=lambda namespace: {
        "name": namespace,
        "openshift.io/cluster-monitoring": "true",
    },
)
MIN_NODES = Setting(
    "min_nodes",
    "nfd_min_nodes",
    1,
    ("How many nodes must carry the labels of an NVIDIA GPU and an NVIDIA NIC.",),
    unit="nodes",
)


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    return [
        {
            "gate": "NFD labels NVIDIA GPU + NIC nodes",
            "api_version": "v1",
            "kind": "Node",
            "label_selector": f"{GPU_LABEL}=true,{NIC_LABEL}=true",
            "min_count": settings.get("min_nodes", MIN_NODES.default),
            "path": f'metadata.labels."{NIC_LABEL}"',
            "equals": "true",
            "hint": (
                f"oc -n {namespace} get pods,nodefeaturediscovery; "
                f"oc get nodes -L {GPU_LABEL},{NIC_LABEL}"
            ),
        }
    ]


def check_nodes(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list[dict]:
    """Once NFD has labelled them, each node group selects nodes with NVIDIA NICs and GPUs, and
    no node is in two groups."""
    if not facts.nodes:
        return [finding("nodes", "error", "the cluster has no nodes")]
    if not nfd_labelled(facts):
        return [
            finding(
                "nodes",
                "skipped",
                "no node carries NFD labels yet: nodes with NVIDIA NICs and GPUs are checked once "
                "NFD runs (the nfd role waits for its labels)",
            )
        ]
    found = [f for view in group_plans(plan) for f in _group_nodes(view, facts)]
    return _overlaps(plan, facts) + found


def _overlaps(plan: dict, facts: Facts) -> list[dict]:
    """A node two groups select would get two NicNodePolicies (or two groups' networks and
    SR-IOV policies): the Network Operator's webhook refuses the second policy."""
    found = []
    for node in facts.nodes:
        groups = [v["name"] for v in group_plans(plan) if matching(v["node_selector"], [node])]
        if len(groups) > 1:
            found.append(
                finding(
                    "node-groups",
                    "error",
                    f"node {node['name']} is selected by the node groups {', '.join(groups)}: "
                    "give the groups' node_selector labels that no node carries together (the "
                    "Network Operator refuses two NicNodePolicies on one node)",
                )
            )
    return found


def _group_nodes(view: dict, facts: Facts) -> list[dict]:
    selector = ",".join(f"{k}={v}" for k, v in view["node_selector"].items())
    selected = matching(view["node_selector"], facts.nodes)
    if not selected:
        return [
            finding(
                "nodes",
                "error",
                f"{which(view)}no node matches {variable(view, 'node_selector')} ({selector}): NFD "
                f"found no NVIDIA (Mellanox) NIC on any of the {len(facts.nodes)} nodes"
                if not view["name"]
                else f"{which(view)}no node matches {variable(view, 'node_selector')} "
                f"({selector}) among the {len(facts.nodes)} nodes: label the group's nodes, or "
                "remove the group",
            )
        ]
    with_gpu = [n["name"] for n in selected if n["labels"].get(GPU_LABEL) == "true"]
    unlabelled = [n["name"] for n in selected if not nfd_labelled_node(n)]
    if not with_gpu and unlabelled:
        # Nodes that joined since NFD last labelled (it labels one node after another): their
        # GPUs are not known yet, so the check waits for the nfd role's gate.
        return [
            finding(
                "nodes",
                "skipped",
                f"{which(view)}NFD has not labelled {', '.join(unlabelled)} yet: checked once it "
                "has (the nfd role waits for its labels)",
            )
        ]
    if not with_gpu:
        return [
            finding(
                "nodes",
                "error",
                f"{which(view)}none of the nodes with NVIDIA NICs "
                f"({', '.join(n['name'] for n in selected)}) has an NVIDIA GPU ({GPU_LABEL}): "
                "GPUDirect RDMA needs both on one node",
            )
        ]
    found = [
        finding(
            "nodes",
            "ok",
            f"{which(view)}{len(with_gpu)} node(s) with NVIDIA NICs and GPUs: "
            + ", ".join(with_gpu),
        )
    ]
    if len(with_gpu) < 2:
        found.append(
            finding(
                "nodes",
                "warning",
                f"{which(view)}only one node has NVIDIA NICs and GPUs: verify.yml needs two such "
                "nodes",
            )
        )
    return found


STEP = Step(
    name="nfd",
    title="Node Feature Discovery",
    role="nfd",
    operator=OPERATOR,
    operand=lambda plan, csv: [nfd.node_feature_discovery(plan)],
    kinds=(("nfd.openshift.io/v1", "NodeFeatureDiscovery"),),
    gates=gates,
    settings=(
        install_timeout("nfd"),
        Setting(
            "ready_timeout",
            "nfd_labels_timeout",
            600,
            ("Seconds to wait until enough nodes carry NFD's NVIDIA GPU and NIC labels.",),
        ),
        MIN_NODES,
    ),
    wave=1,
    preflight=(Check("nodes", check_nodes, lambda plan, objects: NODE_READS),),
)
