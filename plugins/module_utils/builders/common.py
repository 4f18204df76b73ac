"""What every builder shares: ownership labels, object metadata, IPAM configuration."""

from __future__ import annotations

import json

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpudirect.rdma"
COMPONENT_LABEL = "gpudirect.rdma/component"

NVIDIA_VENDOR = "15b3"
IMPLICIT_GROUP = "gpudirect-rdma"


def alm_example(csv: dict | None, kind: str) -> dict | None:
    """The example object of kind in a CSV's alm-examples annotation, if the CSV has one."""
    if not csv:
        return None
    annotations = (csv.get("metadata") or {}).get("annotations") or {}
    examples = json.loads(annotations.get("alm-examples") or "[]")
    return next((example for example in examples if example.get("kind") == kind), None)


def ownership(component: str | None = None) -> dict:
    """The labels that mark an object as the collection's (uninstall removes only these), and
    its component (the step that makes it; steps/base.py labels a step's objects)."""
    return {MANAGED_BY_LABEL: MANAGED_BY, **({COMPONENT_LABEL: component} if component else {})}


def owned_by_collection(obj: dict) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def identity(obj: dict) -> str:
    """An object as messages name it: its kind, namespace and name."""
    metadata = obj.get("metadata") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{obj.get('kind')} {where}{metadata.get('name')}"


def new_object(
    api_version: str,
    kind: str,
    name: str,
    component: str | None = None,
    *,
    namespace: str | None = None,
    labels: dict | None = None,
    annotations: dict | None = None,
    spec: dict | None = None,
) -> dict:
    metadata: dict = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = {**(labels or {}), **ownership(component)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    obj = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if spec is not None:
        obj["spec"] = spec
    return obj


def whereabouts_ipam(ipam: dict) -> str:
    """The CNI `ipam` JSON string of a whereabouts range."""
    config: dict = {"type": "whereabouts", "range": ipam["range"]}
    if ipam.get("gateway"):
        config["gateway"] = ipam["gateway"]
    if ipam.get("exclude"):
        config["exclude"] = list(ipam["exclude"])
    return json.dumps(config)


def nv_ipam(pool_name: str) -> str:
    return json.dumps({"type": "nv-ipam", "poolName": pool_name})


def rail_ipam(view: dict, rail: dict) -> str:
    """A rail's `ipam` string for its network object (whereabouts, or its nv-ipam IPPool)."""
    if view["ipam"]["type"] == "nv-ipam":
        return nv_ipam(rail["network_name"])
    return whereabouts_ipam(rail["ipam"])


def group_plans(plan: dict) -> list[dict]:
    """The plan as each node group sees it: what serves every group, with the group's own keys
    (node selector, method, fabric, rails, IPAM, MTU, DOCA driver) added. The plan holds none of
    those outside plan["groups"] (one implicit group when the inventory has none), so only a view
    names a method or a rail."""
    return [{**plan, **group} for group in plan["groups"]]


def selects(selector: dict, labels: dict) -> bool:
    """A node selector (labels that must all be there with these values; an empty one matches
    every node) matches a node's labels."""
    return all(labels.get(key) == value for key, value in selector.items())


def group_name(group: dict) -> str:
    """A node group's name in the objects made for it (its NicNodePolicy, its templates);
    gpudirect-rdma for the implicit group (no gpudirect_rdma_node_groups)."""
    return group["name"] or IMPLICIT_GROUP


def image(plan: dict, component: str) -> dict:
    """image, repository and version of a NicClusterPolicy component, plus pull secrets."""
    return {**plan["images"][component], "imagePullSecrets": list(plan["image_pull_secrets"])}
