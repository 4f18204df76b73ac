"""What the three RDMA method steps share (shared_device.py, host_device.py, sriov_legacy.py):
each builds, prunes and waits for the node groups on its method only, and removes its objects
when no group uses the method any more, so switching a group's method leaves nothing of the
previous one."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import networks, sriov
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_plans

from .base import Setting, Step

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
        **more,
    )
