"""Preflight: can this cluster take the planned configuration? Read-only.

`gather` reads what the checks need from the cluster (a few lists and gets, never a write);
`evaluate` is pure: the plan, the objects that will be applied and the gathered facts in, a list
of findings out. A finding has a check name, a severity and a message:

- error:   the configuration would fail or harm the cluster; nothing is written.
- warning: it can go on, but the user should know (and may want to stop).
- ok:      the check passed.
- skipped: the check cannot run yet (say, NFD has not labelled the nodes); it says when it will.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    group_plans,
    selects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.network_operator import (
    API_VERSION,
    NODE_SECTIONS,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.network_operator import (
    NAME as NIC_CLUSTER_POLICY_NAME,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nfd import (
    GPU_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.sriov import (
    MAX_VFS_INFINIBAND,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    ADOPTED_KINDS,
    identity,
    owned_by_collection,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (
    Forbidden,
    get_if_served,
    list_if_served,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import installed_elsewhere
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (
    METHOD_KINDS,
    METHOD_STEPS,
)

SEVERITIES = ("error", "warning", "ok", "skipped")
INTEL_NIC_LABEL = "feature.node.kubernetes.io/pci-8086.present"
NFD_LABEL_PREFIX = "feature.node.kubernetes.io/"


def finding(check: str, severity: str, message: str) -> dict:
    return {"check": check, "severity": severity, "message": message}


@dataclass
class Facts:
    """What gather read; None where the API does not serve the kind (or nothing was read)."""

    api_error: str | None = None
    forbidden: str | None = None  # a read the API server refused (403), as Forbidden words it
    server: str = ""
    cluster_version: str | None = None
    openshift: bool = False
    topology: str | None = None
    olm: bool = False
    catalogs: dict = field(default_factory=dict)  # "ns/name" -> READY state, None if absent
    nodes: list = field(default_factory=list)  # {"name", "labels"}
    node_states: dict | None = None  # node -> [{"name", "linkType", "totalvfs"}]
    nic_devices: dict | None = None  # node -> [interface names]
    live: dict = field(default_factory=dict)  # identity of a planned object -> live or None
    method_objects: list = field(default_factory=list)
    cluster_policies: list = field(default_factory=list)
    nic_node_policies: list = field(default_factory=list)
    nic_cluster_policy: dict | None = None
    pool_configs: list = field(default_factory=list)
    operator_groups: list = field(default_factory=list)
    machine_config_pool: dict | None = None
    # With the NIC configuration opt-in: the NicDevices ({"name", "node", "type"}; None when
    # the kind is not served), the NicConfigurationTemplates, and a Maintenance Operator that
    # somebody else installed (its Subscription, or None).
    nic_config_devices: list | None = None
    nic_config_templates: list = field(default_factory=list)
    maintenance_elsewhere: str | None = None


# -- gather (reads only) -----------------------------------------------------------------------
def gather(cluster, plan: dict, objects: list[dict]) -> Facts:
    """Read what evaluate needs (the caller turns an unreachable API server into api_error, and
    a refused read, Forbidden, into forbidden)."""
    facts = Facts(server=cluster.server)

    version = get_if_served(cluster, "config.openshift.io/v1", "ClusterVersion", "version")
    facts.openshift = version is not None
    if version is not None:
        facts.cluster_version = ((version.get("status") or {}).get("desired") or {}).get("version")
    infrastructure = get_if_served(cluster, "config.openshift.io/v1", "Infrastructure", "cluster")
    if infrastructure is not None:
        facts.topology = (infrastructure.get("status") or {}).get("controlPlaneTopology")

    facts.olm = (
        list_if_served(cluster, "operators.coreos.com/v1alpha1", "CatalogSource") is not None
    )
    if facts.olm:
        for sub in (o for o in objects if o["kind"] == "Subscription"):
            spec = sub["spec"]
            source = cluster.get(
                "operators.coreos.com/v1alpha1",
                "CatalogSource",
                spec["source"],
                spec["sourceNamespace"],
            )
            state = None
            if source is not None:
                state = ((source.get("status") or {}).get("connectionState") or {}).get(
                    "lastObservedState"
                ) or "unknown"
            facts.catalogs[f"{spec['sourceNamespace']}/{spec['source']}"] = state

    facts.nodes = [
        {"name": n["metadata"]["name"], "labels": n["metadata"].get("labels") or {}}
        for n in cluster.list("v1", "Node")
    ]
    states = list_if_served(cluster, "sriovnetwork.openshift.io/v1", "SriovNetworkNodeState")
    if states:
        facts.node_states = {
            s["metadata"]["name"]: [
                {
                    "name": i.get("name"),
                    "linkType": i.get("linkType"),
                    "totalvfs": i.get("totalvfs"),
                }
                for i in (s.get("status") or {}).get("interfaces") or []
            ]
            for s in states
            if (s.get("status") or {}).get("interfaces")
        } or None
    # The NIC configuration operator's devices, where the SR-IOV operator reports no NICs.
    devices = (
        None
        if facts.node_states
        else list_if_served(cluster, "configuration.net.nvidia.com/v1alpha1", "NicDevice")
    )
    if devices:
        facts.nic_devices = {}
        for device in devices:
            node = (device.get("status") or {}).get("node")
            ports = (device.get("status") or {}).get("ports") or []
            names = [p["networkInterface"] for p in ports if p.get("networkInterface")]
            facts.nic_devices.setdefault(node, []).extend(names)

    # Whole kinds first: a read cache (k8s.reads) then answers the planned objects from them.
    for api_version, kind in METHOD_KINDS:
        for item in list_if_served(cluster, api_version, kind) or []:
            facts.method_objects.append({**item, "apiVersion": api_version, "kind": kind})
    facts.cluster_policies = list_if_served(cluster, "nvidia.com/v1", "ClusterPolicy") or []
    if any(o["kind"] in ("NicClusterPolicy", "NicNodePolicy") for o in objects):
        facts.nic_node_policies = list_if_served(cluster, API_VERSION, "NicNodePolicy") or []
        facts.nic_cluster_policy = get_if_served(
            cluster, API_VERSION, "NicClusterPolicy", NIC_CLUSTER_POLICY_NAME
        )
    facts.operator_groups = (
        list_if_served(cluster, "operators.coreos.com/v1", "OperatorGroup") or []
    )
    for obj in objects:
        metadata = obj["metadata"]
        facts.live[identity(obj)] = get_if_served(
            cluster, obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace")
        )
    facts.pool_configs = (
        list_if_served(cluster, "sriovnetwork.openshift.io/v1", "SriovNetworkPoolConfig") or []
    )
    facts.machine_config_pool = get_if_served(
        cluster,
        "machineconfiguration.openshift.io/v1",
        "MachineConfigPool",
        plan["machine_configs"]["role"],
    )
    if nic_configuration.enabled(plan):
        _gather_nic_configuration(cluster, plan, facts, devices)
    return facts


def _gather_nic_configuration(cluster, plan: dict, facts: Facts, devices) -> None:
    if devices is None and facts.node_states:
        devices = list_if_served(cluster, nic_configuration.API_VERSION, "NicDevice")
    if devices is not None:
        facts.nic_config_devices = [
            {
                "name": d["metadata"]["name"],
                "node": (d.get("status") or {}).get("node"),
                "type": (d.get("status") or {}).get("type"),
            }
            for d in devices
        ]
    facts.nic_config_templates = (
        list_if_served(cluster, nic_configuration.API_VERSION, "NicConfigurationTemplate") or []
    )
    if facts.olm:
        facts.maintenance_elsewhere = installed_elsewhere(
            cluster, plan["operators"]["maintenance_operator"]
        )


# -- evaluate (pure) ---------------------------------------------------------------------------
def _minor(version: str | None) -> tuple[int, int] | None:
    try:
        major, minor = str(version).split(".")[:2]
        return int(major), int(minor)
    except (TypeError, ValueError):
        return None


def _check_openshift(plan: dict, facts: Facts) -> list[dict]:
    if not facts.openshift:
        return [
            finding(
                "openshift",
                "error",
                "this is not an OpenShift cluster: the API server serves no ClusterVersion "
                "'version' (config.openshift.io/v1). gpudirect.rdma configures OpenShift "
                f"{plan['openshift_support'][0]['minimum']} to "
                f"{plan['openshift_support'][0]['maximum']}.",
            )
        ]
    found = [finding("openshift", "ok", f"OpenShift {facts.cluster_version}")]
    minor = _minor(facts.cluster_version)
    if minor is None:
        return [
            *found,
            finding(
                "openshift-version",
                "warning",
                f"cannot read the OpenShift version from ClusterVersion version "
                f"(status.desired.version is {facts.cluster_version!r})",
            ),
        ]
    running = f"{minor[0]}.{minor[1]}"
    for index, support in enumerate(plan["openshift_support"]):
        low, high = _minor(support["minimum"]), _minor(support["maximum"])
        if low <= minor <= high:
            continue
        severity = "error" if index == 0 else "warning"
        found.append(
            finding(
                "openshift-version",
                severity,
                f"OpenShift {facts.cluster_version} is not supported by {support['component']}: "
                f"it supports {support['minimum']} to {support['maximum']}"
                + ("" if index == 0 else "; choose a release that covers " + running),
            )
        )
    if plan["openshift_version"] != running:
        found.append(
            finding(
                "openshift-version",
                "warning",
                f"gpudirect_rdma_openshift_version is {plan['openshift_version']} but the cluster "
                f"runs {facts.cluster_version}: set it to {running}, the version the "
                "inventory is written for",
            )
        )
    if len(found) == 1:
        found.append(
            finding(
                "openshift-version",
                "ok",
                f"{running} is within "
                + ", ".join(
                    f"{s['component']} ({s['minimum']}-{s['maximum']})"
                    for s in plan["openshift_support"]
                ),
            )
        )
    return found


def _check_olm(facts: Facts) -> list[dict]:
    if not facts.olm:
        return [
            finding(
                "olm",
                "error",
                "OLM is not installed: the API server serves no CatalogSource "
                "(operators.coreos.com/v1alpha1); the operators are installed through OLM",
            )
        ]
    found = []
    for where, state in sorted(facts.catalogs.items()):
        if state is None:
            found.append(
                finding(
                    "catalogs",
                    "error",
                    f"CatalogSource {where} does not exist. On a disconnected cluster set "
                    "gpudirect_rdma_catalog_source (or gpudirect_rdma_operators.<operator>.source) "
                    "to the mirrored catalog (oc get catalogsource -A)",
                )
            )
        elif state != "READY":
            found.append(
                finding(
                    "catalogs",
                    "warning",
                    f"CatalogSource {where} is {state}, not READY; the install waits for it",
                )
            )
    if not found:
        found.append(
            finding("catalogs", "ok", "CatalogSources exist: " + ", ".join(facts.catalogs))
            if facts.catalogs
            else finding("catalogs", "ok", "no operator to install")
        )
    return found


def _matching(selector: dict, nodes: list[dict]) -> list[dict]:
    """The nodes ({"name", "labels"}) a node selector matches (an empty one matches all)."""
    return [n for n in nodes if selects(selector, n["labels"])]


def _selected(view: dict, facts: Facts) -> list[dict]:
    """The nodes the view's (or a group view's) node selector matches."""
    return _matching(view["node_selector"], facts.nodes)


def _nfd_labelled(facts: Facts) -> bool:
    return any(k.startswith(NFD_LABEL_PREFIX) for n in facts.nodes for k in n["labels"])


def _variable(view: dict, key: str) -> str:
    """The inventory variable of a group's key: the global one for the implicit group."""
    if view["name"] is None:
        return f"gpudirect_rdma_{key}"
    index = [g["name"] for g in view["groups"]].index(view["name"])
    return f"gpudirect_rdma_node_groups[{index}].{key}"


def _check_nodes(plan: dict, facts: Facts) -> list[dict]:
    if not facts.nodes:
        return [finding("nodes", "error", "the cluster has no nodes")]
    if not _nfd_labelled(facts):
        return [
            finding(
                "nodes",
                "skipped",
                "no node carries NFD labels yet: nodes with NVIDIA NICs and GPUs are checked once "
                "NFD runs (the nfd role waits for its labels)",
            )
        ]
    found = [f for view in group_plans(plan) for f in _check_group_nodes(view, facts)]
    return _overlaps(plan, facts) + found


def _overlaps(plan: dict, facts: Facts) -> list[dict]:
    """A node two groups select would get two NicNodePolicies (or two groups' networks and
    SR-IOV policies): the Network Operator's webhook refuses the second policy."""
    found = []
    for node in facts.nodes:
        groups = [v["name"] for v in group_plans(plan) if _matching(v["node_selector"], [node])]
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


def _check_group_nodes(view: dict, facts: Facts) -> list[dict]:
    selector = ",".join(f"{k}={v}" for k, v in view["node_selector"].items())
    which = f"group {view['name']}: " if view["name"] else ""
    selected = _selected(view, facts)
    if not selected:
        return [
            finding(
                "nodes",
                "error",
                f"{which}no node matches {_variable(view, 'node_selector')} ({selector}): NFD "
                f"found no NVIDIA (Mellanox) NIC on any of the {len(facts.nodes)} nodes"
                if not view["name"]
                else f"{which}no node matches {_variable(view, 'node_selector')} ({selector}) "
                f"among the {len(facts.nodes)} nodes: label the group's nodes, or remove the group",
            )
        ]
    with_gpu = [n["name"] for n in selected if n["labels"].get(GPU_LABEL) == "true"]
    if not with_gpu:
        return [
            finding(
                "nodes",
                "error",
                f"{which}none of the nodes with NVIDIA NICs "
                f"({', '.join(n['name'] for n in selected)}) has an NVIDIA GPU ({GPU_LABEL}): "
                "GPUDirect RDMA needs both on one node",
            )
        ]
    found = [
        finding(
            "nodes",
            "ok",
            f"{which}{len(with_gpu)} node(s) with NVIDIA NICs and GPUs: {', '.join(with_gpu)}",
        )
    ]
    if len(with_gpu) < 2:
        found.append(
            finding(
                "nodes",
                "warning",
                f"{which}only one node has NVIDIA NICs and GPUs: verify.yml needs two such nodes",
            )
        )
    intel = [n["name"] for n in selected if n["labels"].get(INTEL_NIC_LABEL) == "true"]
    if intel and not view["machine_configs"]["blacklist_irdma"]:
        found.append(
            finding(
                "irdma",
                "warning",
                f"nodes with Intel NICs ({', '.join(intel)}) may load irdma, which breaks the DOCA "
                "driver reload: set gpudirect_rdma_blacklist_irdma: true",
            )
        )
    return found


def _check_interfaces(plan: dict, facts: Facts) -> list[dict]:
    return [f for view in group_plans(plan) for f in _check_group_interfaces(view, facts)]


def _check_group_interfaces(view: dict, facts: Facts) -> list[dict]:
    wanted = [rail["interface"] for rail in view["rails"]]
    which = f"group {view['name']}: " if view["name"] else ""
    link = "IB" if view["fabric"] == "infiniband" else "ETH"
    # The selected nodes once NFD labels them; before that every node. A node state whose node
    # has left the cluster is the operator's to delete, not a NIC to judge.
    if _nfd_labelled(facts):
        names = {n["name"] for n in _selected(view, facts)}
    else:
        names = {n["name"] for n in facts.nodes} or None
    found = []
    if facts.node_states:
        source = "SriovNetworkNodeState"
        inventory = {
            node: {i["name"]: i for i in interfaces}
            for node, interfaces in facts.node_states.items()
            if names is None or node in names
        }
    elif facts.nic_devices:
        source = "NicDevice"
        inventory = {
            node: {name: {"name": name} for name in interfaces}
            for node, interfaces in facts.nic_devices.items()
            if names is None or node in names
        }
    else:
        return [
            finding(
                "interfaces",
                "skipped",
                "no SriovNetworkNodeState or NicDevice reports the nodes' NICs yet: the interfaces "
                f"{', '.join(wanted)} are checked again once the SR-IOV operator runs",
            )
        ]
    for node, interfaces in sorted(inventory.items()):
        for name in wanted:
            nic = interfaces.get(name)
            if nic is None:
                found.append(
                    finding(
                        "interfaces",
                        "error",
                        f"{which}{_variable(view, 'interfaces')}: {name} does not exist on node "
                        f"{node} (its {source} lists "
                        f"{', '.join(sorted(interfaces)) or 'no interface'})",
                    )
                )
                continue
            configured = nic_configuration.enabled(view)
            if nic.get("linkType") and nic["linkType"].upper() != link:
                if configured:
                    found.append(
                        finding(
                            "interfaces",
                            "warning",
                            f"{which}{name} on node {node} has link type {nic['linkType']}: the "
                            f"NIC configuration sets {link} in its firmware (the node drains and "
                            "reboots)",
                        )
                    )
                    continue
                found.append(
                    finding(
                        "interfaces",
                        "error",
                        f"{which}{name} on node {node} has link type {nic['linkType']}; "
                        f"{_variable(view, 'fabric')} {view['fabric']} needs {link}. Change the "
                        "fabric, or the port's link type in the NIC firmware (mlxconfig "
                        "LINK_TYPE_P1)",
                    )
                )
            total = nic.get("totalvfs")
            vfs = view["sriov"]["num_vfs"]
            if view["method"] == "sriov_legacy" and total is not None and vfs > total:
                if configured:
                    found.append(
                        finding(
                            "interfaces",
                            "warning",
                            f"{which}{name} on node {node} has {total} VFs in its firmware: the "
                            f"NIC configuration sets {vfs} (the node drains and reboots)",
                        )
                    )
                    continue
                found.append(
                    finding(
                        "interfaces",
                        "error",
                        f"{which}{_variable(view, 'sriov_num_vfs')} is {vfs} but {name} on node "
                        f"{node} supports at most {total} VFs",
                    )
                )
    if not inventory:
        found.append(finding("interfaces", "skipped", f"no {source} for the selected nodes yet"))
    if not found:
        found.append(
            finding(
                "interfaces",
                "ok",
                f"{which}{', '.join(wanted)} ({link}) found on {len(inventory)} node(s) ({source})",
            )
        )
    return found


def _check_operator_groups(objects: list[dict], facts: Facts) -> list[dict]:
    """OLM allows one OperatorGroup per namespace: another one there, not the collection's,
    stops the operator's install (gpudirect_rdma_take_over cannot help)."""
    found = []
    for group in (o for o in objects if o["kind"] == "OperatorGroup"):
        namespace = group["metadata"]["namespace"]
        others = [
            g["metadata"]["name"]
            for g in facts.operator_groups
            if g["metadata"].get("namespace") == namespace
            and g["metadata"]["name"] != group["metadata"]["name"]
        ]
        if others:
            found.append(
                finding(
                    "ownership",
                    "error",
                    f"namespace {namespace} already has OperatorGroup {', '.join(others)}, not "
                    f"the collection's {group['metadata']['name']}; OLM allows one OperatorGroup "
                    "per namespace. Remove it, or set gpudirect_rdma_operators.<operator>."
                    "namespace to another namespace",
                )
            )
    return found


def _check_ownership(objects: list[dict], facts: Facts, take_over: bool) -> list[dict]:
    found = []
    for obj in objects:
        live = facts.live.get(identity(obj))
        if live is None or owned_by_collection(live):
            continue
        if obj["kind"] in ADOPTED_KINDS:
            found.append(
                finding("ownership", "ok", f"{identity(obj)} exists and will be adopted (labelled)")
            )
            continue
        if take_over:
            found.append(
                finding(
                    "ownership",
                    "warning",
                    f"{identity(obj)} exists and was not created by gpudirect.rdma; "
                    "gpudirect_rdma_take_over is true: its content will be replaced",
                )
            )
        else:
            found.append(
                finding(
                    "ownership",
                    "error",
                    f"{identity(obj)} exists and was not created by gpudirect.rdma (no label "
                    "app.kubernetes.io/managed-by=gpudirect.rdma). It is left alone: remove it, "
                    "or set gpudirect_rdma_take_over: true to replace its content",
                )
            )
    found += _check_operator_groups(objects, facts)
    planned = {identity(o) for o in objects}
    # Another ClusterPolicy matters to the step that applies the collection's.
    applies_one = any(o["kind"] == "ClusterPolicy" for o in objects)
    for policy in facts.cluster_policies if applies_one else []:
        name = identity({**policy, "kind": "ClusterPolicy"})
        if name not in planned:
            found.append(
                finding(
                    "ownership",
                    "error",
                    f"{name} exists: the GPU Operator honours one ClusterPolicy, and this one is "
                    "not the collection's. Remove it (oc delete clusterpolicy "
                    f"{policy['metadata']['name']}) before running site.yml",
                )
            )
    if not found:
        found.append(finding("ownership", "ok", "no object of the plan belongs to somebody else"))
    return found


def _sections(obj: dict | None) -> list[str]:
    """The sections of a NIC policy that only one kind may hold, in the operator's order."""
    spec = (obj or {}).get("spec") or {}
    return [s for s in NODE_SECTIONS if spec.get(s) is not None]


def _nodes_of(policy: dict, facts: Facts) -> list[str]:
    selector = (policy.get("spec") or {}).get("nodeSelector") or {}
    return [n["name"] for n in _matching(selector, facts.nodes)]


def _names(kind: str, policies: list[dict]) -> str:
    names = ", ".join(p["metadata"]["name"] for p in policies)
    return f"{kind}{'ies' if len(policies) > 1 else 'y'} {names}"


def _check_nic_policies(objects: list[dict], facts: Facts) -> list[dict]:
    """The Network Operator's two webhook rules judged before any write (a section in both
    kinds, a node under two NicNodePolicies), against policies that are not the collection's;
    and a change of the policy model said with what it disrupts."""
    cluster = next((o for o in objects if o["kind"] == "NicClusterPolicy"), None)
    planned = [o for o in objects if o["kind"] == "NicNodePolicy"]
    if cluster is None and not planned:
        return []
    names = {p["metadata"]["name"] for p in planned}
    foreign = [p for p in facts.nic_node_policies if not owned_by_collection(p)]
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
    live = facts.nic_cluster_policy
    if cluster is None and live is not None and not owned_by_collection(live):
        both = [s for s in _sections(live) if any(s in _sections(p) for p in planned)]
        if both:
            found.append(
                finding(
                    "nic-policies",
                    "error",
                    f"NicClusterPolicy {NIC_CLUSTER_POLICY_NAME} (not the collection's) defines "
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
    live = facts.nic_cluster_policy
    held = _sections(live) if live is not None and owned_by_collection(live) else []
    given_up = [s for s in held if s not in _sections(cluster)]
    taken = [s for s in _sections(cluster) if s not in held]
    leaving = [
        p
        for p in facts.nic_node_policies
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
            f"NIC policy model cluster to node: NicClusterPolicy {NIC_CLUSTER_POLICY_NAME} "
            f"{first} first, then {_names('NicNodePolic', planned)} "
            f"take{'s' if len(planned) == 1 else ''} {', '.join(given_up)}"
        )
    elif leaving and taken:
        nodes = {n for p in leaving for n in _nodes_of(p, facts)}
        moved = taken
        message = (
            f"NIC policy model node to cluster: {_names('NicNodePolic', leaving)} "
            f"{'is' if len(leaving) == 1 else 'are'} deleted first, then NicClusterPolicy "
            f"{NIC_CLUSTER_POLICY_NAME} takes {', '.join(taken)}"
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


def _pf(entry: str) -> str:
    return entry.split("#", 1)[0]


def _interfaces_of(obj: dict) -> set[str]:
    spec = obj.get("spec") or {}
    if obj["kind"] in ("MacvlanNetwork", "IPoIBNetwork"):
        return {spec["master"]} if spec.get("master") else set()
    if obj["kind"] == "SriovNetworkNodePolicy":
        return {_pf(n) for n in (spec.get("nicSelector") or {}).get("pfNames") or []}
    return set()


def _methods(plan: dict) -> list[str]:
    """The methods of the plan's node groups, each once, in the groups' order."""
    return list(dict.fromkeys(group["method"] for group in plan["groups"]))


def _group_label(group: dict) -> str:
    return f" of group {group['name']}" if group["name"] else ""


def _check_methods(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list[dict]:
    current = {METHOD_STEPS[method].component for method in _methods(plan)}
    planned = {identity(o) for o in objects}
    # Every group's interfaces, and whose they are (one group's name may be another's too).
    wanted: dict[str, list[str]] = {}
    for group in plan["groups"]:
        for rail in group["rails"]:
            wanted.setdefault(rail["interface"], []).append(_group_label(group))
    sriov_namespace = plan["operators"]["sriov_network_operator"]["namespace"]
    leaving, conflicts, big_ib = [], [], []
    for obj in facts.method_objects:
        name = identity(obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        if obj["kind"].startswith("Sriov") and namespace != sriov_namespace:
            continue  # the SR-IOV operator reads its own namespace only
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if owned_by_collection(obj):
            component = labels.get(COMPONENT_LABEL)
            if (
                component in {s.component for s in METHOD_STEPS.values()}
                and component not in current
                and name not in planned
            ):
                leaving.append(f"{name} ({component})")
            continue
        if name in planned:
            continue  # reported by the ownership check
        shared = sorted(_interfaces_of(obj) & set(wanted))
        if shared:
            where = ", ".join(f"{i}{' and'.join(wanted[i])}" for i in shared)
            conflicts.append(f"{name} (on {where})")
        spec = obj.get("spec") or {}
        if (
            obj["kind"] == "SriovNetworkNodePolicy"
            and str(spec.get("linkType", "")).lower() == "ib"
            and (spec.get("numVfs") or 0) > MAX_VFS_INFINIBAND
        ):
            big_ib.append(f"{name} (numVfs {spec['numVfs']})")
    found = []
    if leaving:
        found.append(
            finding(
                "method",
                "warning",
                f"switching to {', '.join(_methods(plan))}: these objects of another method, "
                "created by "
                "gpudirect.rdma, will be removed: " + ", ".join(leaving),
            )
        )
    if conflicts:
        found.append(
            finding(
                "method",
                "warning" if take_over else "error",
                "objects that gpudirect.rdma did not create already use the configured "
                "interfaces: "
                + ", ".join(conflicts)
                + (
                    "; gpudirect_rdma_take_over is true: they are kept and may compete with this "
                    "configuration"
                    if take_over
                    else ". They are left alone: remove them, or set gpudirect_rdma_take_over: "
                    "true to configure the interfaces anyway"
                ),
            )
        )
    if big_ib:
        found.append(
            finding(
                "infiniband-vfs",
                "warning",
                "SR-IOV policies with more than 16 VFs per InfiniBand PF (the limit) will fail to "
                "sync: " + ", ".join(big_ib),
            )
        )
    if not found:
        found.append(finding("method", "ok", "no other RDMA configuration on the interfaces"))
    return found


def _check_rdma_mode(plan: dict, facts: Facts) -> list[dict]:
    exclusive = [
        p["metadata"]["name"]
        for p in facts.pool_configs
        if (p.get("spec") or {}).get("rdmaMode") == "exclusive"
    ]
    shared_device = [g for g in plan["groups"] if g["method"] == "shared_device"]
    if exclusive and shared_device:
        whose = ", ".join(f"group {g['name']}" for g in shared_device if g["name"])
        return [
            finding(
                "rdma-mode",
                "error",
                "SriovNetworkPoolConfig "
                + ", ".join(exclusive)
                + " sets rdmaMode: exclusive, and the shared device method"
                + (f" ({whose})" if whose else "")
                + " needs the RDMA subsystem shared: NVIDIA supports no mixed configuration. Use "
                "gpudirect_rdma_method sriov_legacy or host_device, or set rdmaMode: shared",
            )
        ]
    mode = "exclusive" if exclusive else "shared"
    methods = ", ".join(_methods(plan))
    return [finding("rdma-mode", "ok", f"RDMA subsystem {mode}; method {methods}")]


def _check_single_node(plan: dict, facts: Facts) -> list[dict]:
    single = facts.topology == "SingleReplica" or len(facts.nodes) == 1
    found = []
    machine_configs = plan["machine_configs"]
    wants_machine_configs = (
        machine_configs["blacklist_irdma"]
        or machine_configs["crio_memlock"]
        or machine_configs["persistent_nic_names"]
    )
    pool = facts.machine_config_pool
    role = machine_configs["role"]
    if wants_machine_configs and facts.openshift:
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
                + (" and SR-IOV policy change" if "sriov_legacy" in _methods(plan) else "")
                + " reboots the only node (the API is away meanwhile)",
            )
        )
    if not found:
        found.append(finding("single-node", "ok", f"{len(facts.nodes)} nodes"))
    return found


def _check_nic_configuration(plan: dict, objects: list[dict], facts: Facts) -> list[dict]:
    """With the NIC configuration opt-in: somebody else's Maintenance Operator (used), NIC types
    no NicDevice of a group's nodes has, and somebody else's template that would select the same
    devices as one of the plan's (the NIC Configuration Operator then applies neither)."""
    if not nic_configuration.enabled(plan):
        return []
    found = []
    if facts.maintenance_elsewhere:
        found.append(
            finding(
                "nic-configuration",
                "warning",
                f"the NVIDIA Maintenance Operator of {facts.maintenance_elsewhere} was installed "
                "by somebody else: it is used, not replaced, and its own "
                "MaintenanceOperatorConfig's budgets apply (gpudirect_rdma_maintenance_* are not "
                "written)",
            )
        )
    for view in group_plans(plan):
        which = f"group {view['name']}: " if view["name"] else ""
        nodes = {n["name"] for n in _matching(view["node_selector"], facts.nodes)}
        on_nodes = [d for d in facts.nic_config_devices or [] if d["node"] in nodes]
        if not view["nic_types"]:
            continue
        types = ", ".join(map(nic_configuration.nic_type, view["nic_types"]))
        if not on_nodes:
            found.append(
                finding(
                    "nic-configuration",
                    "skipped",
                    f"{which}no NicDevice on the selected nodes yet: the NIC types {types} are "
                    "checked once the NIC configuration daemon runs",
                )
            )
            continue
        present = sorted({d["type"] for d in on_nodes if d["type"]})
        have = ", ".join(map(nic_configuration.nic_type, present))
        for device_id in view["nic_types"]:
            if device_id not in present:
                found.append(
                    finding(
                        "nic-configuration",
                        "error",
                        f"{which}{_variable(view, 'nic_type')} "
                        f"{nic_configuration.nic_type(device_id)}: no NicDevice of that type on "
                        f"the selected nodes (they have {have}); its template would configure "
                        "nothing",
                    )
                )
    found += _overlapping_templates(objects, facts)
    if not found:
        found.append(finding("nic-configuration", "ok", "NIC types found, no template overlaps"))
    return found


def _overlapping_templates(objects: list[dict], facts: Facts) -> list[dict]:
    found = []
    planned = [o for o in objects if o["kind"] == "NicConfigurationTemplate"]
    for theirs in facts.nic_config_templates:
        if owned_by_collection(theirs):
            continue
        spec = theirs.get("spec") or {}
        selector = spec.get("nicSelector") or {}
        for ours in planned:
            if selector.get("nicType") != ours["spec"]["nicSelector"]["nicType"]:
                continue
            mine = {n["name"] for n in _matching(ours["spec"]["nodeSelector"], facts.nodes)}
            both = sorted(
                n["name"]
                for n in _matching(spec.get("nodeSelector") or {}, facts.nodes)
                if n["name"] in mine
            )
            if not both:
                continue
            narrowed = any(
                selector.get(k) for k in ("pciAddresses", "serialNumbers", "partNumbers")
            )
            metadata = theirs["metadata"]
            found.append(
                finding(
                    "nic-configuration",
                    "warning" if narrowed else "error",
                    f"NicConfigurationTemplate {metadata.get('namespace')}/{metadata['name']} (not "
                    f"gpudirect.rdma's) selects nicType {selector.get('nicType')} on "
                    f"{', '.join(both[:5])}{' ...' if len(both) > 5 else ''}, as "
                    f"{ours['metadata']['name']} does: a device two templates match gets neither "
                    "(the NIC Configuration Operator clears its configuration)"
                    + (
                        "; its nicSelector narrows it to some devices: check they differ"
                        if narrowed
                        else "; remove it, or narrow its nodeSelector or nicSelector.pciAddresses"
                    ),
                )
            )
    return found


def evaluate(plan: dict, objects: list[dict], facts: Facts, take_over: bool = False) -> list[dict]:
    """Every finding, errors first within each check's order of appearance."""
    if facts.api_error:
        return [
            finding(
                "api",
                "error",
                f"cannot read the cluster{' at ' + facts.server if facts.server else ''}: "
                f"{facts.api_error}. Check the kubeconfig (K8S_AUTH_KUBECONFIG, "
                "K8S_AUTH_CONTEXT), that you are logged in (oc whoami) and may read the cluster",
            )
        ]
    if facts.forbidden:
        return [finding("api", "error", facts.forbidden)]
    found = [
        finding("api", "ok", f"API server reachable{' at ' + facts.server if facts.server else ''}")
    ]
    found += _check_openshift(plan, facts)
    found += _check_olm(facts)
    found += _check_nodes(plan, facts)
    found += _check_interfaces(plan, facts)
    found += _check_ownership(objects, facts, take_over)
    found += _check_nic_policies(objects, facts)
    found += _check_nic_configuration(plan, objects, facts)
    found += _check_methods(plan, objects, facts, take_over)
    found += _check_rdma_mode(plan, facts)
    found += _check_single_node(plan, facts)
    return found


def judge(reader, plan: dict, objects: list[dict], take_over: bool, server: str | None) -> list:
    """gather, then evaluate; a first read the user may not make (Forbidden) is the finding that
    says who may not do what and the fix."""
    try:
        facts = gather(reader, plan, objects)
    except Forbidden as error:
        facts = Facts(server=server, forbidden=str(error))
    return evaluate(plan, objects, facts, take_over)


def summary(findings: list[dict]) -> list[str]:
    """One line per finding, errors first, then warnings, skipped and ok; a count on top."""
    counts = {s: sum(1 for f in findings if f["severity"] == s) for s in SEVERITIES}
    head = (
        f"preflight: {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['skipped']} skipped, {counts['ok']} ok"
    )
    order = {s: i for i, s in enumerate(SEVERITIES)}
    lines = [
        f"{f['severity'].upper():7} {f['check']}: {f['message']}"
        for f in sorted(findings, key=lambda f: order[f["severity"]])
    ]
    return [head, *lines]
