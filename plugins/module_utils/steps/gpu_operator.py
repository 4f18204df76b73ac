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
    driver_stuck_seconds,
    install_timeout,
    stable_seconds,
)
from .checks import NODE, NODE_READS, Check, Facts, Read, finding

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


# The GPU driver's DaemonSets (one per RHCOS version with the driver toolkit, OnDelete) and the
# GPU Operator's upgrade controller's node label.
GPU_DRIVER_DAEMONSETS = "app.kubernetes.io/component=nvidia-driver"
GPU_UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    """The ClusterPolicy ready, and its GPU driver (the operator's CSV's, so an operator upgrade
    is a driver upgrade) running on every GPU node."""
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    hint = f"oc get clusterpolicy {gpu.NAME} -o yaml; oc -n {namespace} get pods"
    return [
        gate.policy_ready("ClusterPolicy ready", API_VERSION, "ClusterPolicy", gpu.NAME, hint),
        gate.driver_rolled_out(
            "GPU driver rolled out",
            namespace,
            GPU_DRIVER_DAEMONSETS,
            GPU_UPGRADE_STATE,
            settings.get("driver_stuck_seconds"),
            f"oc get nodes -L {GPU_UPGRADE_STATE}; oc -n {namespace} get ds,pods -l "
            f"{GPU_DRIVER_DAEMONSETS} -o wide",
        ),
    ]


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


GPU_CLUSTER = ("nvidia.com/v1alpha1", "GPUCluster")
SUBSCRIPTION = ("operators.coreos.com/v1alpha1", "Subscription")
# GPU Operator 26.3.0 to 26.3.2 turned MOFED_ENABLED and GDS_ENABLED on by default, so every
# ibverbs device of a node went into every GPU pod (gpu-operator #2525; fixed in 26.3.3).
IBVERBS_IN_EVERY_POD = tuple(f"{OPERATOR.package}.v26.3.{patch}" for patch in (0, 1, 2))


def check_gpu_cluster(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """A GPUCluster (GPU Operator 26.7's DRA stack) beside the ClusterPolicy the step applies:
    the operator refuses to run both."""
    if not any(o["kind"] == "ClusterPolicy" for o in objects):
        return []
    return [
        finding(
            "gpu-cluster",
            "error",
            f"GPUCluster {cluster['metadata']['name']} exists: the GPU Operator (26.7 and later) "
            "runs either a GPUCluster (its DRA driver stack) or a ClusterPolicy, never both, and "
            "site.yml applies the ClusterPolicy GPUDirect RDMA needs. Remove the GPUCluster "
            f"(oc delete gpucluster {cluster['metadata']['name']}) or leave the GPU Operator out "
            "of this cluster's inventory",
        )
        for cluster in facts.all(*GPU_CLUSTER)
    ]


def check_known_regressions(plan: dict, objects: list[dict], facts: Facts, take_over: bool):
    """A GPU Operator release known to break GPUDirect RDMA pods, pinned or installed."""
    operator = plan["operators"][OPERATOR.key]
    subscription = facts.one(*SUBSCRIPTION, operator["subscription"], operator["namespace"])
    installed = ((subscription or {}).get("status") or {}).get("installedCSV")
    found = []
    for csv, where in (
        (operator["starting_csv"], "gpudirect_rdma_operators.gpu_operator.starting_csv pins"),
        (installed, "the cluster runs"),
    ):
        if csv in IBVERBS_IN_EVERY_POD:
            found.append(
                finding(
                    "gpu-operator-release",
                    "warning",
                    f"{where} {csv}: GPU Operator 26.3.0 to 26.3.2 put every ibverbs device of "
                    "a node into every GPU pod (MOFED_ENABLED and GDS_ENABLED on by default, "
                    "gpu-operator #2525), so pods without an RDMA resource reach the NICs too; "
                    "26.3.3 fixed it: choose 26.3.3 or later",
                )
            )
    return found


# The Driver Toolkit: on OpenShift the GPU driver (operator.use_ocp_driver_toolkit) and the DOCA
# driver build on each node with the toolkit image of the node's RHCOS, a tag of this ImageStream
# named as NFD's system source labels the node.
DRIVER_TOOLKIT = ("image.openshift.io/v1", "ImageStream", "driver-toolkit", "openshift")
OSTREE_LABEL = "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION"


def check_driver_toolkit(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """Every node with an NVIDIA GPU or NIC runs an RHCOS build the Driver Toolkit has an image
    for: else the GPU and DOCA driver builds there fail (an upgrade's driver rollout would leave
    the node upgrade-failed). NFD's label is compared with the node's osImage too: a stale label
    selected the old toolkit image and broke the build (gpu-operator#990)."""
    api_version, kind, name, namespace = DRIVER_TOOLKIT
    if not facts.served(api_version, kind):
        return []  # not OpenShift: the openshift check says so
    drivers = [
        n
        for n in facts.all(*NODE)
        if {nfd.GPU_LABEL, nfd.NIC_LABEL}
        & {k for k, v in ((n["metadata"].get("labels") or {}).items()) if v == "true"}
    ]
    builds: dict[str, list[str]] = {}
    found = []
    for node in drivers:
        build = (node["metadata"].get("labels") or {}).get(OSTREE_LABEL)
        if not build:
            continue
        node_name = node["metadata"]["name"]
        builds.setdefault(build, []).append(node_name)
        image = ((node.get("status") or {}).get("nodeInfo") or {}).get("osImage") or ""
        if image and build not in image:
            found.append(
                finding(
                    "driver-toolkit",
                    "warning",
                    f"node {node_name}: NFD's {OSTREE_LABEL} says RHCOS {build}, its osImage "
                    f"says {image!r}: the label is stale, and the drivers would be built with the "
                    "Driver Toolkit of the old build (gpu-operator#990); restart the node's "
                    "nfd-worker pod",
                )
            )
    if not builds:
        return [
            finding(
                "driver-toolkit",
                "skipped",
                f"no NVIDIA GPU or NIC node has NFD's {OSTREE_LABEL} label yet",
            )
        ]
    stream = facts.one(api_version, kind, name, namespace)
    tags = sorted(t.get("name") for t in ((stream or {}).get("spec") or {}).get("tags") or [])
    for build, nodes in sorted(builds.items()):
        if build in tags:
            continue
        found.append(
            finding(
                "driver-toolkit",
                "error",
                f"{len(nodes)} node(s) ({', '.join(sorted(nodes)[:8])}) run RHCOS {build}, and the "
                f"ImageStream {namespace}/{name} has no tag {build} (its tags: "
                f"{', '.join(tags) or 'none, or it does not exist'}): the GPU and DOCA drivers "
                "build with that image on each node and would fail there. During an OpenShift "
                "update the cluster-version operator publishes it; look at: oc -n openshift get "
                "imagestream driver-toolkit -o yaml",
            )
        )
    if not any(f["severity"] == "error" for f in found):
        found.append(
            finding(
                "driver-toolkit",
                "ok",
                f"the Driver Toolkit has images for RHCOS {', '.join(sorted(builds))}",
            )
        )
    return found


def gpu_nodes(policy: dict, nodes: list[dict], others: list[dict]) -> list[str]:
    """The nodes the ClusterPolicy's GPU driver runs on: those NFD found an NVIDIA GPU on."""
    return [n["name"] for n in nodes if n["labels"].get(nfd.GPU_LABEL) == "true"]


def upgrade_holds(plan: dict) -> list[dict]:
    """The GPU driver's upgrade controller, off while the GPU Operator goes through its
    InstallPlans: each CSV brings its own driver image (the default ClusterPolicy takes it from the
    operator), so with the controller on every node would be drained once per InstallPlan, the
    next change starting before the last one ended. Held, the driver pods stay as they are (the
    DaemonSet updates on delete only) until the step applies the ClusterPolicy again, and the
    nodes roll once, to the last CSV's driver."""
    return [
        {
            "api_version": API_VERSION,
            "kind": "ClusterPolicy",
            "name": gpu.NAME,
            "namespace": None,
            "patch": {"spec": {"driver": {"upgradePolicy": {"autoUpgrade": False}}}},
            "why": "the GPU driver rolls once, to the last CSV's driver, after the last one",
        }
    ]


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
        driver_stuck_seconds("gpu_operator", "GPU"),
    ),
    needs_csv=True,
    upgrade_holds=upgrade_holds,
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
        # Read while no ClusterPolicy exists, before the first one is written: a converged
        # cluster's re-run reads no more for it.
        Check(
            "gpu-cluster",
            check_gpu_cluster,
            lambda plan, objects: (Read(*GPU_CLUSTER, unless=((API_VERSION, "ClusterPolicy"),)),),
        ),
        Check(
            "driver-toolkit",
            check_driver_toolkit,
            lambda plan, objects: (*NODE_READS, Read(*DRIVER_TOOLKIT)),
        ),
        Check(
            "gpu-operator-release",
            check_known_regressions,
            lambda plan, objects: (
                Read(
                    *SUBSCRIPTION,
                    plan["operators"][OPERATOR.key]["subscription"],
                    plan["operators"][OPERATOR.key]["namespace"],
                ),
            ),
        ),
    ),
)
