"""What the three RDMA method steps share (shared_device.py, host_device.py, sriov_legacy.py):
each builds, prunes and waits for the node groups on its method only, and removes its objects
when no group uses the method any more, so switching a group's method leaves nothing of the
previous one."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    networks,
    nic_configuration,
    sriov,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    group_plans,
    identity,
    owned_by_collection,
)

from .base import Setting, Step
from .checks import (
    NIC_READS,
    NODE_READS,
    Check,
    Facts,
    Read,
    finding,
    matching,
    methods,
    nfd_labelled,
    node_nics,
    variable,
    which,
)

IPPOOL = ("nv-ipam.nvidia.com/v1alpha1", "IPPool")


def groups_of(plan: dict, method: str) -> list[dict]:
    """The node groups (each as it sees the plan) that use one RDMA method."""
    return [view for view in group_plans(plan) if view["method"] == method]


def group_objects(view: dict) -> list[dict]:
    """One node group's RDMA objects, by its method."""
    if view["method"] == "sriov_legacy":
        return [*sriov.node_policies(view), *sriov.networks(view)]
    return [*networks.ip_pools(view), *networks.secondary_networks(view)]


def group_gates(view: dict, several: bool) -> list[dict]:
    """The group's nodes advertise each rail's resource, and each rail's network is rendered."""
    nodes = ",".join(f"{key}={value}" for key, value in view["node_selector"].items())
    namespace = view["network_namespace"]
    where = f"group {view['name']}: " if several else ""
    device_plugins = (
        "group's NicNodePolicy" if view["nic_policy_model"] == "node" else "NicClusterPolicy"
    )
    gates = []
    for rail in view["rails"]:
        gates.append(
            {
                "gate": f"{where}nodes advertise {rail['node_resource']}",
                "api_version": "v1",
                "kind": "Node",
                "label_selector": nodes,
                "path": f'status.allocatable."{rail["node_resource"]}"',
                "at_least": 1,
                "hint": (
                    f"oc describe nodes -l {nodes} (Allocatable); the device plugin pods of the "
                    f"{device_plugins} or the SR-IOV operator"
                ),
            }
        )
        gates.append(
            {
                "gate": f"NetworkAttachmentDefinition {namespace}/{rail['network_name']} rendered",
                "api_version": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "name": rail["network_name"],
                "namespace": namespace,
                "path": "metadata.name",
                "equals": rail["network_name"],
                "hint": f"oc -n {namespace} get network-attachment-definitions",
            }
        )
    return gates


def method_steps() -> dict[str, Step]:
    """The table's method steps by method (imported here, when a check runs: the table imports
    this module)."""
    from . import METHOD_STEPS

    return METHOD_STEPS


def method_kinds() -> tuple[tuple[str, str], ...]:
    from . import METHOD_KINDS

    return METHOD_KINDS


# -- preflight: what the three steps check together, once ---------------------------------------
def check_interfaces(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    """Every group's interfaces exist on its nodes, with its fabric's link type and, for SR-IOV
    legacy, the VFs it asks for (warnings where the NIC configuration sets them)."""
    nics = node_nics(facts)
    return [f for view in group_plans(plan) for f in _group_interfaces(view, facts, nics)]


def _group_interfaces(view: dict, facts: Facts, nics) -> list[dict]:
    wanted = [rail["interface"] for rail in view["rails"]]
    who = which(view)
    link = "IB" if view["fabric"] == "infiniband" else "ETH"
    # The selected nodes once NFD labels them, or once the group's own labels select some (a
    # node group's pool label is there before NFD runs); before that every node. A node state
    # whose node has left the cluster is the operator's to delete, not a NIC to judge.
    selected = {n["name"] for n in matching(view["node_selector"], facts.nodes)}
    if nfd_labelled(facts) or selected:
        names = selected
    else:
        names = {n["name"] for n in facts.nodes} or None
    found = []
    if nics:
        source, reported = nics
        inventory = {
            node: interfaces
            for node, interfaces in reported.items()
            if names is None or node in names
        }
    else:
        return [
            finding(
                "interfaces",
                "skipped",
                "no SriovNetworkNodeState, NicDevice or NFD NodeFeature reports the nodes' NICs "
                f"yet: the interfaces {', '.join(wanted)} are checked once NFD or the SR-IOV "
                "operator runs",
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
                        f"{who}{variable(view, 'interfaces')}: {name} does not exist on node "
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
                            f"{who}{name} on node {node} has link type {nic['linkType']}: the "
                            f"NIC configuration sets {link} in its firmware (the node drains and "
                            "reboots)",
                        )
                    )
                    continue
                found.append(
                    finding(
                        "interfaces",
                        "error",
                        f"{who}{name} on node {node} has link type {nic['linkType']}; "
                        f"{variable(view, 'fabric')} {view['fabric']} needs {link}. Change the "
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
                            f"{who}{name} on node {node} has {total} VFs in its firmware: the "
                            f"NIC configuration sets {vfs} (the node drains and reboots)",
                        )
                    )
                    continue
                found.append(
                    finding(
                        "interfaces",
                        "error",
                        f"{who}{variable(view, 'sriov_num_vfs')} is {vfs} but {name} on node "
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
                f"{who}{', '.join(wanted)} ({link}) found on {len(inventory)} node(s) ({source})",
            )
        )
    return found


def _pf(entry: str) -> str:
    return entry.split("#", 1)[0]


def _interfaces_of(obj: dict) -> set[str]:
    spec = obj.get("spec") or {}
    if obj["kind"] in ("MacvlanNetwork", "IPoIBNetwork"):
        return {spec["master"]} if spec.get("master") else set()
    if obj["kind"] == "SriovNetworkNodePolicy":
        return {_pf(n) for n in (spec.get("nicSelector") or {}).get("pfNames") or []}
    return set()


def _group_label(group: dict) -> str:
    return f" of group {group['name']}" if group["name"] else ""


def check_methods(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list[dict]:
    steps = method_steps()
    current = {steps[method].component for method in methods(plan)}
    planned = {identity(o) for o in objects}
    # Every group's interfaces, and whose they are (one group's name may be another's too).
    wanted: dict[str, list[str]] = {}
    for group in plan["groups"]:
        for rail in group["rails"]:
            wanted.setdefault(rail["interface"], []).append(_group_label(group))
    sriov_namespace = plan["operators"]["sriov_network_operator"]["namespace"]
    leaving, conflicts, big_ib = [], [], []
    for obj in (o for kind in method_kinds() for o in facts.all(*kind)):
        name = identity(obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        if obj["kind"].startswith("Sriov") and namespace != sriov_namespace:
            continue  # the SR-IOV operator reads its own namespace only
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if owned_by_collection(obj):
            component = labels.get(COMPONENT_LABEL)
            if (
                component in {s.component for s in steps.values()}
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
            and (spec.get("numVfs") or 0) > sriov.MAX_VFS_INFINIBAND
        ):
            big_ib.append(f"{name} (numVfs {spec['numVfs']})")
    found = []
    if leaving:
        found.append(
            finding(
                "method",
                "warning",
                f"switching to {', '.join(methods(plan))}: these objects of another method, "
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


def check_rdma_mode(plan: dict, objects: list[dict], facts: Facts, take_over: bool) -> list:
    exclusive = [
        p["metadata"]["name"]
        for p in facts.all(sriov.API_VERSION, "SriovNetworkPoolConfig")
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
    return [finding("rdma-mode", "ok", f"RDMA subsystem {mode}; method {', '.join(methods(plan))}")]


PREFLIGHT = (
    Check("interfaces", check_interfaces, lambda plan, objects: (*NODE_READS, *NIC_READS)),
    Check(
        "method",
        check_methods,
        lambda plan, objects: tuple(
            Read(api_version, kind) for api_version, kind in method_kinds()
        ),
    ),
    Check(
        "rdma-mode",
        check_rdma_mode,
        lambda plan, objects: (Read(sriov.API_VERSION, "SriovNetworkPoolConfig"),),
    ),
)


def method_step(method: str, name: str, title: str, kinds: tuple, **more) -> Step:
    """The step of one RDMA method, run by the role of the method's name, for the node groups
    on it; its gates: every group's rails (more["gates"] adds the method's own)."""
    own_gates = more.pop("gates", lambda plan: [])

    def gates(plan: dict, settings: dict, results: list[dict]) -> list[dict]:
        several = len(plan["groups"]) > 1
        found = [g for view in groups_of(plan, method) for g in group_gates(view, several)]
        return [*found, *own_gates(plan)] if found else []

    return Step(
        name=name,
        title=title,
        role=method,
        operator=None,
        operand=lambda plan, _csv: [
            obj for view in groups_of(plan, method) for obj in group_objects(view)
        ],
        kinds=kinds,
        gates=gates,
        settings=(
            Setting(
                "ready_timeout",
                f"{method}_timeout",
                1800,
                (
                    "Seconds to wait for the node resources (and for this method's objects the "
                    "plan no longer has to go).",
                ),
            ),
        ),
        prunes=True,
        wave=5,
        namespaces=more.pop("namespaces", lambda plan: [plan["network_namespace"]]),
        enabled=lambda plan: bool(groups_of(plan, method)),
        method=method,
        preflight=PREFLIGHT,
        **more,
    )
