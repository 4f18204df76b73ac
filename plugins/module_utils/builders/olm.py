"""OLM objects of an operator: Namespace, OperatorGroup, Subscription.

What differs between operators (their package, catalog, namespace and its metadata, the
Subscription's environment) is the step's (steps.base.Operator); the plan holds the settings
the inventory may override (plan["operators"][<key>])."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import new_object


def namespace(plan: dict, operator) -> dict:
    name = plan["operators"][operator.key]["namespace"]
    return new_object(
        "v1",
        "Namespace",
        name,
        labels=operator.namespace_labels(name),
        annotations=operator.namespace_annotations(name),
    )


def operator_group(plan: dict, operator) -> dict:
    settings = plan["operators"][operator.key]
    return new_object(
        "operators.coreos.com/v1",
        "OperatorGroup",
        settings["operator_group"],
        namespace=settings["namespace"],
        spec={"targetNamespaces": [settings["namespace"]]},
    )


def subscription(plan: dict, operator) -> dict:
    settings = plan["operators"][operator.key]
    spec = {
        "channel": settings["channel"],
        "installPlanApproval": settings["approval"],
        "name": settings["package"],
        "source": settings["source"],
        "sourceNamespace": settings["source_namespace"],
    }
    if settings["starting_csv"]:
        spec["startingCSV"] = settings["starting_csv"]
    env = operator.env(plan)
    if env:
        spec["config"] = {"env": env}
    return new_object(
        "operators.coreos.com/v1alpha1",
        "Subscription",
        settings["subscription"],
        namespace=settings["namespace"],
        spec=spec,
    )


def operator_objects(plan: dict, operator) -> list[dict]:
    """Namespace, OperatorGroup and Subscription of one operator (steps.base.Operator), in apply
    order."""
    return [namespace(plan, operator), operator_group(plan, operator), subscription(plan, operator)]
