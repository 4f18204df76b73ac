"""OLM objects of the operators: Namespace, OperatorGroup, Subscription."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders import nic_configuration
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    GPU_OPERATOR,
    MAINTENANCE_OPERATOR,
    NETWORK_OPERATOR,
    NFD,
    SRIOV_NETWORK_OPERATOR,
    new_object,
)

COMPONENTS = {
    "nfd": NFD,
    "sriov_network_operator": SRIOV_NETWORK_OPERATOR,
    "network_operator": NETWORK_OPERATOR,
    "gpu_operator": GPU_OPERATOR,
    "maintenance_operator": MAINTENANCE_OPERATOR,
}


def _namespace_metadata(operator: str, namespace: str) -> tuple[dict, dict]:
    """Labels and annotations Red Hat's procedures give each operator namespace."""
    if operator == "nfd":
        return {"name": namespace, "openshift.io/cluster-monitoring": "true"}, {}
    if operator == "sriov_network_operator":
        return {}, {"workload.openshift.io/allowed": "management"}
    if operator == "gpu_operator":
        return {"openshift.io/cluster-monitoring": "true"}, {}
    return {}, {}


def namespace(plan: dict, operator: str) -> dict:
    settings = plan["operators"][operator]
    labels, annotations = _namespace_metadata(operator, settings["namespace"])
    return new_object(
        "v1",
        "Namespace",
        settings["namespace"],
        COMPONENTS[operator],
        labels=labels,
        annotations=annotations,
    )


def operator_group(plan: dict, operator: str) -> dict:
    settings = plan["operators"][operator]
    return new_object(
        "operators.coreos.com/v1",
        "OperatorGroup",
        settings["operator_group"],
        COMPONENTS[operator],
        namespace=settings["namespace"],
        spec={"targetNamespaces": [settings["namespace"]]},
    )


def subscription(plan: dict, operator: str) -> dict:
    settings = plan["operators"][operator]
    spec = {
        "channel": settings["channel"],
        "installPlanApproval": settings["approval"],
        "name": settings["package"],
        "source": settings["source"],
        "sourceNamespace": settings["source_namespace"],
    }
    if settings["starting_csv"]:
        spec["startingCSV"] = settings["starting_csv"]
    if operator == "network_operator" and nic_configuration.network_operator_env(plan):
        spec["config"] = {"env": nic_configuration.network_operator_env(plan)}
    return new_object(
        "operators.coreos.com/v1alpha1",
        "Subscription",
        settings["subscription"],
        COMPONENTS[operator],
        namespace=settings["namespace"],
        spec=spec,
    )


def operator_objects(plan: dict, operator: str) -> list[dict]:
    """Namespace, OperatorGroup and Subscription of one operator, in apply order."""
    return [namespace(plan, operator), operator_group(plan, operator), subscription(plan, operator)]
