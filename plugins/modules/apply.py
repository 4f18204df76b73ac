#!/usr/bin/python
"""gpudirect.rdma.apply: apply objects, write only what differs, prune the collection's leftovers."""

from __future__ import annotations

DOCUMENTATION = r"""
module: apply
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Apply the collection's objects, writing only what differs
description:
  - Applies each object of O(objects) with server-side apply (field manager C(gpudirect.rdma)),
    in order, but only when it differs from the live object; a converged object costs one read
    and no write.
  - An object differs when a field it sets has another value in the cluster, or when the
    cluster still holds a field that this collection applied earlier and no longer sets (for
    example the previous method's device plugin in the NicClusterPolicy).
  - Every object is checked before anything is written. An object that exists without the label
    C(app.kubernetes.io/managed-by=gpudirect.rdma) belongs to somebody else; the module fails,
    naming it, unless O(take_over) is true (Namespaces are adopted). A kind the API server does not
    serve fails too, naming the operator to install, except in check mode.
  - With O(prune), objects of the listed kinds that carry the collection's labels and match
    O(prune.label_selector) but are not in O(objects) are deleted, and the module waits until
    they are gone.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.cluster
attributes:
  check_mode:
    support: full
    description: Reads only; reports what would be created, updated and deleted.
  diff_mode:
    support: full
    description: Shows each changed object before and after.
options:
  objects:
    description: Kubernetes objects (apiVersion, kind, metadata.name, ...), applied in this order.
    type: list
    elements: dict
    required: true
  take_over:
    description: Apply objects that exist but were not created by this collection (they gain its labels).
    type: bool
    default: false
  prune:
    description: Delete the collection's objects of these kinds that O(objects) no longer has.
    type: dict
    suboptions:
      kinds:
        description: The kinds to look at, as C(apiVersion) and C(kind).
        type: list
        elements: dict
        required: true
      label_selector:
        description: Only objects matching this selector (it is combined with the managed-by label).
        type: str
        default: ""
  prune_timeout:
    description: Seconds to wait for pruned objects to be gone.
    type: int
    default: 300
"""

EXAMPLES = r"""
- name: Apply the Network Operator's objects
  gpudirect.rdma.apply:
    objects: "{{ rdma.plan | gpudirect.rdma.objects(component='network-operator') }}"

- name: Apply the shared device networks and remove the other methods' networks
  gpudirect.rdma.apply:
    objects: "{{ rdma.plan | gpudirect.rdma.objects(component='shared-device') }}"
    prune:
      label_selector: gpudirect.rdma/component in (shared-device,host-device,sriov-legacy)
      kinds:
        - {apiVersion: mellanox.com/v1alpha1, kind: MacvlanNetwork}
        - {apiVersion: sriovnetwork.openshift.io/v1, kind: SriovNetwork}
"""

RETURN = r"""
results:
  description: One entry per object of O(objects), then one per pruned object.
  returned: always
  type: list
  elements: dict
  contains:
    object:
      description: Kind, namespace and name, e.g. C(NicClusterPolicy nic-cluster-policy).
      type: str
    kind:
      description: The object's kind.
      type: str
    name:
      description: The object's name.
      type: str
    namespace:
      description: The object's namespace (null for cluster-scoped objects).
      type: str
    action:
      description: C(created), C(updated), C(unchanged) or C(deleted) (in check mode what would happen).
      type: str
    reasons:
      description: Why an existing object is updated.
      type: list
      elements: str
created:
  description: How many objects were (or would be) created.
  returned: always
  type: int
updated:
  description: How many objects were (or would be) updated.
  returned: always
  type: int
deleted:
  description: How many objects were (or would be) pruned.
  returned: always
  type: int
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (  # noqa: E402
    Applier,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.module import (  # noqa: E402
    ModuleFailure,
    progress_of,
    run_module,
)

OPTIONS = {
    "objects": {"type": "list", "elements": "dict", "required": True},
    "take_over": {"type": "bool", "default": False},
    "prune": {
        "type": "dict",
        "options": {
            "kinds": {"type": "list", "elements": "dict", "required": True},
            "label_selector": {"type": "str", "default": ""},
        },
    },
    "prune_timeout": {"type": "int", "default": 300},
}


def before(module) -> None:
    for index, obj in enumerate(module.params["objects"]):
        if not (
            obj.get("apiVersion") and obj.get("kind") and (obj.get("metadata") or {}).get("name")
        ):
            raise ModuleFailure(
                f"objects[{index}]: expected apiVersion, kind and metadata.name; "
                f"got keys {sorted(obj)}"
            )


def body(module, cluster, done) -> dict:
    params = module.params
    applier = Applier(cluster, module.check_mode, params["take_over"], progress_of(module))
    done["results"] = applier.results
    applier.apply(params["objects"])
    if params["prune"]:
        applier.prune(
            params["objects"],
            params["prune"]["kinds"],
            params["prune_timeout"],
            label_selector=params["prune"]["label_selector"],
        )
    result = {
        "changed": applier.changed,
        "results": applier.results,
        "created": applier.count("created"),
        "updated": applier.count("updated"),
        "deleted": applier.count("deleted"),
    }
    if module._diff:
        result["diff"] = applier.diffs
    return result


def main():
    run_module(OPTIONS, body, before=before, supports_check_mode=True)


if __name__ == "__main__":
    main()
