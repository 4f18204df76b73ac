"""The NVIDIA GPU Operator and its ClusterPolicy: the installed CSV's default, with GPUDirect
RDMA (dma-buf or nvidia-peermem) set on top; its driver after the network driver it builds on."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import gpu

from .base import EVERYWHERE, Operator, Setting, Step, install_timeout, stable_seconds

API_VERSION = "nvidia.com/v1"
OPERATOR = Operator(
    key="gpu_operator",
    namespace="nvidia-gpu-operator",
    package="gpu-operator-certified",
    operator_group="nvidia-gpu-operator-group",
    subscription="gpu-operator-certified",
    channel=None,  # the release's version channel, e.g. v26.7
    source="certified-operators",
    namespace_labels=lambda namespace: {"openshift.io/cluster-monitoring": "true"},
)


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    hint = f"oc get clusterpolicy {gpu.NAME} -o yaml; oc -n {namespace} get pods"
    return [gate.policy_ready("ClusterPolicy ready", API_VERSION, "ClusterPolicy", gpu.NAME, hint)]


STEP = Step(
    name="gpu-operator",
    title="NVIDIA GPU Operator",
    role="gpu_operator",
    operator=OPERATOR,
    operand=lambda plan, csv: [gpu.cluster_policy(plan, csv)],
    kinds=((API_VERSION, "ClusterPolicy"),),
    gates=gates,
    settings=(
        install_timeout("gpu_operator"),
        Setting(
            "ready_timeout",
            "gpu_operator_ready_timeout",
            1800,
            ("Seconds to wait for the ClusterPolicy to report ready.",),
        ),
        stable_seconds("gpu_operator", "ClusterPolicy"),
    ),
    needs_csv=True,
    wave=4,
    # Anybody's: the GPU Operator honours one ClusterPolicy.
    diagnostics=((API_VERSION, "ClusterPolicy", EVERYWHERE),),
)
