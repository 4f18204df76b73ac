"""CR builders: pure functions from a plan (see plan.py) to new Kubernetes objects.

No I/O and no mutation: every function returns new dicts. `build_objects` is the whole
configuration in apply order; each object carries the ownership labels of common.py, and its
`gpudirect.rdma/component` label names the step (and the rendered folder) it belongs to.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import (
    gpu,
    machine_config,
    network_operator,
    networks,
    nfd,
    olm,
    sriov,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    COMPONENT_LABEL,
    GPU_OPERATOR,
    MACHINE_CONFIG,
    METHOD_COMPONENTS,
    NETWORK_OPERATOR,
    NFD,
    SRIOV_NETWORK_OPERATOR,
)

COMPONENTS = (
    NFD,
    SRIOV_NETWORK_OPERATOR,
    NETWORK_OPERATOR,
    GPU_OPERATOR,
    MACHINE_CONFIG,
    *METHOD_COMPONENTS.values(),
)


def component_objects(plan: dict, component: str, csvs: dict | None = None) -> list[dict]:
    """The objects of one component, in apply order.

    csvs maps an operator (nfd, gpu_operator) to its installed ClusterServiceVersion, whose
    alm-examples give the defaults (NFD operand image, ClusterPolicy); without one, the
    release facts built into the collection are used."""
    csvs = csvs or {}
    if component == NFD:
        return [
            *olm.operator_objects(plan, "nfd"),
            nfd.node_feature_discovery(plan, csvs.get("nfd")),
        ]
    if component == SRIOV_NETWORK_OPERATOR:
        return [
            *olm.operator_objects(plan, "sriov_network_operator"),
            sriov.sriov_operator_config(plan),
        ]
    if component == NETWORK_OPERATOR:
        return [
            *olm.operator_objects(plan, "network_operator"),
            network_operator.nic_cluster_policy(plan),
        ]
    if component == GPU_OPERATOR:
        return [
            *olm.operator_objects(plan, "gpu_operator"),
            gpu.cluster_policy(plan, csvs.get("gpu_operator")),
        ]
    if component == MACHINE_CONFIG:
        return machine_config.machine_configs(plan)
    if component == METHOD_COMPONENTS[plan["method"]]:
        if plan["method"] == "sriov_legacy":
            return [*sriov.node_policies(plan), *sriov.networks(plan)]
        return [*networks.ip_pools(plan), *networks.secondary_networks(plan)]
    if component in METHOD_COMPONENTS.values():
        return []  # another method's component: nothing of it belongs to this plan
    raise ValueError(f"component: got {component!r}; expected one of {', '.join(COMPONENTS)}")


OLM_KINDS = ("Namespace", "OperatorGroup", "Subscription")
PARTS = ("all", "olm", "operand")


def select_part(objects: list[dict], part: str) -> list[dict]:
    """all; olm: an operator's Namespace, OperatorGroup and Subscription; operand: the rest."""
    if part == "olm":
        return [o for o in objects if o["kind"] in OLM_KINDS]
    if part == "operand":
        return [o for o in objects if o["kind"] not in OLM_KINDS]
    return objects


def build_objects(plan: dict, csvs: dict | None = None) -> list[dict]:
    """Every object of the plan, in apply order."""
    return [obj for component in COMPONENTS for obj in component_objects(plan, component, csvs)]


def component_of(obj: dict) -> str:
    return obj["metadata"]["labels"][COMPONENT_LABEL]
