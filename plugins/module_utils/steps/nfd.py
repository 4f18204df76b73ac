"""Node Feature Discovery: Red Hat's NFD operator, its NodeFeatureDiscovery instance, and the
NVIDIA GPU and NIC labels it puts on nodes."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nfd
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nfd import (
    GPU_LABEL,
    NIC_LABEL,
)

from .base import Operator, Setting, Step, install_timeout

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
)
