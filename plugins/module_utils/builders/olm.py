"""OLM objects of an operator: Namespace, OperatorGroup, Subscription.

What differs between operators (their package, catalog, namespace and its metadata, the
Subscription's environment) is the step's (steps.base.Operator); the plan holds the settings
the inventory may override (plan["operators"][<key>])."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    new_object,
    owned_by_collection,
)


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


def subscription_elsewhere(subscriptions: list[dict], package: str) -> str | None:
    """A Subscription to the package that the collection did not create, in any namespace
    (somebody installed the operator already): what it is, or None."""
    for found in subscriptions:
        if (found.get("spec") or {}).get("name") != package or owned_by_collection(found):
            continue
        metadata = found["metadata"]
        csv = (found.get("status") or {}).get("installedCSV")
        return f"Subscription {metadata.get('namespace')}/{metadata['name']}" + (
            f" (CSV {csv})" if csv else ""
        )
    return None
