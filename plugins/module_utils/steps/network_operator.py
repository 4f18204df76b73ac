"""The NVIDIA Network Operator and its NicClusterPolicy: with the cluster NIC policy model the
DOCA driver and the device plugin of the method; with either model what is cluster-wide (IPoIB,
nv-ipam, the NIC Configuration Operator). The node groups' NicNodePolicies are the next step's
(nic_node_policies.py)."""

from __future__ import annotations

import re

from ansible_collections.gpudirect.rdma.plugins.module_utils import gates as gate
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    network_operator,
    nfd,
    nic_configuration,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    owned_by_collection,
)

from .base import (
    EVERYWHERE,
    Disruption,
    Operator,
    Setting,
    Step,
    driver_stuck_seconds,
    install_timeout,
    selected_nodes,
    stable_seconds,
)
from .checks import NODE_READS, Check, Facts, Read, finding, matching

# The mirror registry's pull Secret, made from gpudirect_rdma_image_registry_username/_password.
# It is read by its name, never by listing Secrets: rbac/ grants this one name only.
REGISTRY_SECRET_NAME = "gpudirect-rdma-image-registry"  # noqa: S105 - a name, not a password

OPERATOR = Operator(
    key="network_operator",
    namespace="nvidia-network-operator",
    package="nvidia-network-operator",
    operator_group="nvidia-network-operator",
    subscription="nvidia-network-operator",
    # The release's version channel (v26.7): `stable` would install the newest release whatever
    # the plan's images are, and move to the next minor on its own.
    channel=None,
    source="certified-operators",
    env=nic_configuration.network_operator_env,
)
READY_TIMEOUT = Setting(
    "ready_timeout",
    "network_operator_ready_timeout",
    1800,
    (
        "Seconds to wait for the NicClusterPolicy, and then for each NicNodePolicy, to report "
        "ready (driver build and load).",
    ),
)
STABLE_SECONDS = stable_seconds("network_operator", "NicClusterPolicy")
DRIVER_STUCK_SECONDS = driver_stuck_seconds("network_operator", "DOCA")
# The DOCA driver's DaemonSets (one per node pool, OnDelete) and the Network Operator's upgrade
# controller's node label (driver name ofed: NNO main.go).
DOCA_DRIVER_DAEMONSETS = "nvidia.com/ofed-driver"
DOCA_UPGRADE_STATE = "nvidia.com/ofed-driver-upgrade-state"


def doca_rolled_out(plan: dict, settings: dict, policies: list[dict]) -> dict:
    """The DOCA driver of the step's NIC policies runs on every node they select, at the version
    each policy asks for."""
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    versions = {
        f"{p['kind']}/{p['metadata']['name']}": p["spec"]["ofedDriver"]["version"]
        for p in policies
        if (p.get("spec") or {}).get("ofedDriver")
    }
    return gate.driver_rolled_out(
        "DOCA driver rolled out",
        namespace,
        DOCA_DRIVER_DAEMONSETS,
        DOCA_UPGRADE_STATE,
        settings.get("driver_stuck_seconds"),
        f"oc get nodes -L {DOCA_UPGRADE_STATE}; oc -n {namespace} get ds,pods -l "
        f"{DOCA_DRIVER_DAEMONSETS} -o wide",
        versions,
    )


def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
    namespace = plan["operators"][OPERATOR.key]["namespace"]
    hint = (
        "oc get nicclusterpolicy nic-cluster-policy -o yaml (status.conditions, "
        "status.appliedStates); "
        f"oc -n {namespace} get pods"
    )
    policies = network_operator.nic_cluster_policies(plan)
    found = [gate.nic_policy_ready("NicClusterPolicy ready", policy, hint) for policy in policies]
    if any((p.get("spec") or {}).get("ofedDriver") for p in policies):
        found.append(doca_rolled_out(plan, settings, policies))
    return found


def _sections(obj: dict | None) -> list[str]:
    """The sections of a NIC policy that only one kind may hold, in the operator's order."""
    spec = (obj or {}).get("spec") or {}
    return [s for s in network_operator.NODE_SECTIONS if spec.get(s) is not None]


def _nodes_of(policy: dict, facts: Facts) -> list[str]:
    selector = (policy.get("spec") or {}).get("nodeSelector") or {}
    return [n["name"] for n in matching(selector, facts.nodes)]


def _names(kind: str, policies: list[dict]) -> str:
    names = ", ".join(p["metadata"]["name"] for p in policies)
    return f"{kind}{'ies' if len(policies) > 1 else 'y'} {names}"


# The DOCA release of a DOCA Telemetry Service image tag (1.26.5-doca3.5.0-host) and of a DOCA
# driver version (doca3.5.0-26.07-0.7.7.0-0).
_TELEMETRY_DOCA = re.compile(r"-doca([0-9]+(?:\.[0-9]+)+)-")
_DRIVER_DOCA = re.compile(r"^doca([0-9]+(?:\.[0-9]+)+)-")


def doca_streams(telemetry_version: str, driver_version: str) -> tuple[str, str] | None:
    """The DOCA releases of a DOCA Telemetry Service tag and a DOCA driver version when both
    say one and they differ, else None."""
    telemetry = _TELEMETRY_DOCA.search(str(telemetry_version or ""))
    driver = _DRIVER_DOCA.match(str(driver_version or ""))
    if telemetry and driver and telemetry.group(1) != driver.group(1):
        return telemetry.group(1), driver.group(1)
    return None


def check_telemetry_stream(plan: dict, objects: list[dict], facts: Facts, take_over: bool):
    """A DOCA Telemetry Service in the NicClusterPolicy (the plan's, with monitoring; else
    somebody's, or the release's) built for another DOCA release than the driver the plan
    installs: upstream's reviews flag the pair as a risk (network-operator #2838), the operator
    does not refuse it."""
    planned = [o for o in objects if o["kind"] == "NicClusterPolicy"]
    live = facts.one(network_operator.API_VERSION, "NicClusterPolicy", network_operator.NAME)
    # The one the run applies (with gpudirect_rdma_monitoring), else the cluster's.
    telemetry = next(
        (
            policy["spec"]["docaTelemetryService"]
            for policy in [*planned, live or {}]
            if (policy.get("spec") or {}).get("docaTelemetryService")
        ),
        {},
    )
    found = []
    for group in plan["groups"]:
        streams = doca_streams(telemetry.get("version"), group["doca_driver_version"])
        if streams:
            where = f"node group {group['name']}" if group["name"] else "the nodes"
            found.append(
                finding(
                    "telemetry-stream",
                    "warning",
                    f"the NicClusterPolicy's DOCA Telemetry Service {telemetry['version']} is "
                    f"built for DOCA {streams[0]}, the DOCA driver of {where} is DOCA "
                    f"{streams[1]} ({group['doca_driver_version']}): NVIDIA's reviews flag "
                    "telemetry of another DOCA release than the driver as a risk of telemetry "
                    "failing at run time; use a DOCA Telemetry Service image of the driver's "
                    "DOCA release",
                )
            )
    return found


def check_nic_policies(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """The Network Operator's two webhook rules judged before any write (a section in both
    kinds, a node under two NicNodePolicies), against policies that are not the collection's;
    and a change of the policy model said with what it disrupts."""
    cluster = next((o for o in objects if o["kind"] == "NicClusterPolicy"), None)
    planned = [o for o in objects if o["kind"] == "NicNodePolicy"]
    if cluster is None and not planned:
        return []
    names = {p["metadata"]["name"] for p in planned}
    foreign = [
        p
        for p in facts.all(network_operator.API_VERSION, "NicNodePolicy")
        if not owned_by_collection(p)
    ]
    found = []
    for policy in foreign:
        both = [s for s in _sections(policy) if s in _sections(cluster)]
        if both:
            found.append(
                finding(
                    "nic-policies",
                    "error",
                    f"NicNodePolicy {policy['metadata']['name']} (not the collection's) defines "
                    f"{', '.join(both)}, which the planned NicClusterPolicy defines too: the "
                    "Network Operator refuses a section in both kinds. Set "
                    "gpudirect_rdma_nic_policy_model: node, or remove that NicNodePolicy",
                )
            )
        for mine in planned:
            shared = sorted(set(_nodes_of(policy, facts)) & set(_nodes_of(mine, facts)))
            if shared:
                found.append(
                    finding(
                        "nic-policies",
                        "error",
                        f"node {shared[0]} would be selected by NicNodePolicy "
                        f"{policy['metadata']['name']} (not the collection's) and by the "
                        f"planned {mine['metadata']['name']}: the Network Operator refuses two "
                        "NicNodePolicies on one node. Narrow the node group's node_selector, "
                        "or remove that NicNodePolicy",
                    )
                )
    live = facts.one(network_operator.API_VERSION, "NicClusterPolicy", network_operator.NAME)
    if cluster is None and live is not None and not owned_by_collection(live):
        both = [s for s in _sections(live) if any(s in _sections(p) for p in planned)]
        if both:
            found.append(
                finding(
                    "nic-policies",
                    "error",
                    f"NicClusterPolicy {network_operator.NAME} (not the collection's) defines "
                    f"{', '.join(both)}, which the planned NicNodePolicies define too: the Network "
                    "Operator refuses a section in both kinds. Remove those sections from it (or "
                    "the policy), or set gpudirect_rdma_nic_policy_model: cluster",
                )
            )
    found += _model_switch(cluster, planned, names, facts)
    if not found:
        found.append(finding("nic-policies", "ok", "no section or node has two NIC policies"))
    return found


def _model_switch(cluster: dict | None, planned: list[dict], names: set, facts: Facts) -> list:
    live = facts.one(network_operator.API_VERSION, "NicClusterPolicy", network_operator.NAME)
    held = _sections(live) if live is not None and owned_by_collection(live) else []
    given_up = [s for s in held if s not in _sections(cluster)]
    taken = [s for s in _sections(cluster) if s not in held]
    leaving = [
        p
        for p in facts.all(network_operator.API_VERSION, "NicNodePolicy")
        if owned_by_collection(p) and p["metadata"]["name"] not in names
    ]
    if given_up and planned:
        nodes = {n for p in planned for n in _nodes_of(p, facts)}
        moved = given_up
        first = (
            f"gives up {', '.join(given_up)}"
            if cluster is not None
            else "is deleted (nothing cluster-wide is left for it)"
        )
        message = (
            f"NIC policy model cluster to node: NicClusterPolicy {network_operator.NAME} "
            f"{first} first, then {_names('NicNodePolic', planned)} "
            f"take{'s' if len(planned) == 1 else ''} {', '.join(given_up)}"
        )
    elif leaving and taken:
        nodes = {n for p in leaving for n in _nodes_of(p, facts)}
        moved = taken
        message = (
            f"NIC policy model node to cluster: {_names('NicNodePolic', leaving)} "
            f"{'is' if len(leaving) == 1 else 'are'} deleted first, then NicClusterPolicy "
            f"{network_operator.NAME} takes {', '.join(taken)}"
        )
    else:
        return []
    if "ofedDriver" in moved and nodes:
        message += (
            f"; the DOCA driver DaemonSet is replaced on {len(nodes)} node(s): the driver "
            "reloads there, and pods using RDMA devices on them lose those until the new "
            "device plugins are ready"
        )
    elif "ofedDriver" in moved:
        message += "; no node is selected by the policies that go, so no driver reloads"
    return [finding("nic-policies", "warning", message)]


NIC_POLICY_KINDS = (
    (network_operator.API_VERSION, "NicClusterPolicy"),
    (network_operator.API_VERSION, "NicNodePolicy"),
)


def policy_nodes(policy: dict, nodes: list[dict], others: list[dict]) -> list[str]:
    """The nodes a NIC policy's section acts on: a NicNodePolicy's selected ones; the
    NicClusterPolicy's, every node with an NVIDIA NIC (and within its nodeAffinity) that no
    NicNodePolicy with the section covers (the Network Operator's rule, NIC-NODE-POLICY.md)."""
    if policy["kind"] == "NicNodePolicy":
        return selected_nodes(policy, nodes, others)
    taken = {
        name
        for other in others
        if other["kind"] == "NicNodePolicy"
        for name in selected_nodes(other, nodes, others)
    }
    affinity = (policy.get("spec") or {}).get("nodeAffinity")
    return [
        n["name"]
        for n in nodes
        if n["labels"].get(nfd.NIC_LABEL) == "true"
        and network_operator.affinity_matches(affinity, n["labels"])
        and n["name"] not in taken
    ]


def _section(what: str, effect: str, section: str, on_create: bool = True) -> Disruption:
    return Disruption(
        what, effect, NIC_POLICY_KINDS, f"spec.{section}", policy_nodes, on_create=on_create
    )


STEP = Step(
    name="network-operator",
    title="NVIDIA Network Operator",
    role="network_operator",
    operator=OPERATOR,
    operand=lambda plan, csv: network_operator.nic_cluster_policies(plan),
    kinds=((network_operator.API_VERSION, "NicClusterPolicy"),),
    gates=gates,
    settings=(
        install_timeout("network_operator"),
        READY_TIMEOUT,
        STABLE_SECONDS,
        DRIVER_STUCK_SECONDS,
    ),
    wave=2,
    named=(("v1", "Secret", REGISTRY_SECRET_NAME),),
    # Anybody's: the Network Operator honours one NicClusterPolicy.
    diagnostics=((network_operator.API_VERSION, "NicClusterPolicy", EVERYWHERE),),
    # The node model with nothing cluster-wide has no NicClusterPolicy: the cluster model's
    # leaves before the NicNodePolicies take its sections.
    prunes=True,
    clears=((network_operator.API_VERSION, "NicNodePolicy"),),
    # The sections of either policy kind (the next step's NicNodePolicies too) that act on nodes.
    disruptions=(
        _section("DOCA driver", "driver-reload", "ofedDriver"),
        _section("RDMA shared device plugin", "device-plugin", "rdmaSharedDevicePlugin", False),
        _section("SR-IOV device plugin", "device-plugin", "sriovDevicePlugin", False),
    ),
    # The Network Operator's webhook rules, judged before any write, for this step's
    # NicClusterPolicy and the next step's NicNodePolicies.
    preflight=(
        Check(
            "nic-policies",
            check_nic_policies,
            lambda plan, objects: (
                *NODE_READS,
                Read(network_operator.API_VERSION, "NicNodePolicy"),
                Read(network_operator.API_VERSION, "NicClusterPolicy", network_operator.NAME),
            ),
        ),
        Check(
            "telemetry-stream",
            check_telemetry_stream,
            lambda plan, objects: (
                Read(network_operator.API_VERSION, "NicClusterPolicy", network_operator.NAME),
            ),
        ),
    ),
)
