"""The NVIDIA GPU Operator and its ClusterPolicy: the installed CSV's default, with GPUDirect
RDMA (dma-buf or nvidia-peermem) set on top; its driver after the network driver it builds on."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import gpu, nfd
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import identity

from .base import (
    EVERYWHERE,
    Disruption,
    Operator,
    Setting,
    Step,
    install_timeout,
    stable_seconds,
)
from .checks import Check, Facts, Read, finding

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


def check_cluster_policy(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """Another ClusterPolicy than the one the step applies: the GPU Operator honours one."""
    planned = {identity(o) for o in objects if o["kind"] == "ClusterPolicy"}
    if not planned:
        return []
    found = []
    for policy in facts.all(API_VERSION, "ClusterPolicy"):
        if identity(policy) not in planned:
            found.append(
                finding(
                    "cluster-policy",
                    "error",
                    f"{identity(policy)} exists: the GPU Operator honours one ClusterPolicy, and "
                    "this one is not the collection's. Remove it (oc delete clusterpolicy "
                    f"{policy['metadata']['name']}) before running site.yml",
                )
            )
    return found


def gpu_nodes(policy: dict, nodes: list[dict], others: list[dict]) -> list[str]:
    """The nodes the ClusterPolicy's GPU driver runs on: those NFD found an NVIDIA GPU on."""
    return [n["name"] for n in nodes if n["labels"].get(nfd.GPU_LABEL) == "true"]


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
    disruptions=(
        Disruption(
            "GPU driver", "gpu-driver", ((API_VERSION, "ClusterPolicy"),), "spec.driver", gpu_nodes
        ),
    ),
    preflight=(
        Check(
            "cluster-policy",
            check_cluster_policy,
            lambda plan, objects: (Read(API_VERSION, "ClusterPolicy"),),
        ),
    ),
)
