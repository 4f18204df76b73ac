"""gpudirect.rdma.kustomize_tree: objects to the files of a kustomize tree."""

from __future__ import annotations

DOCUMENTATION = r"""
name: kustomize_tree
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Lay Kubernetes objects out as a kustomize tree
description:
  - Turns objects from P(gpudirect.rdma.objects#filter) into the files of a kustomize tree, one
    folder per component (the operators, C(machine-config), the RDMA method), one file per
    object, a C(kustomization.yaml) in each folder and one at the top listing the folders in
    apply order.
  - Write the result with M(gpudirect.rdma.manifest_tree); C(kubectl kustomize <dir>) or
    C(kubectl apply -k <dir>) then reads it, and Argo CD can sync it.
options:
  _input:
    description: Objects labelled with C(gpudirect.rdma/component), as the objects filter returns them.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the plan's objects as a kustomize tree
  gpudirect.rdma.manifest_tree:
    dest: /srv/gitops/gpudirect-rdma
    files: "{{ rdma.plan | gpudirect.rdma.objects | gpudirect.rdma.kustomize_tree }}"
"""

RETURN = r"""
_value:
  description: File contents (YAML text) by path relative to the tree's root.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.builders.common import (  # noqa: E402
    COMPONENT_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import (  # noqa: E402
    kustomize_tree as layout,
)


def kustomize_tree(objects):
    args = validate(DOCUMENTATION, "gpudirect.rdma.kustomize_tree", {"_input": objects})
    for index, obj in enumerate(args["_input"]):
        labels = obj.get("metadata", {}).get("labels") or {}
        if COMPONENT_LABEL not in labels or "kind" not in obj:
            raise AnsibleFilterError(
                f"gpudirect.rdma.kustomize_tree: item {index} expected an object from "
                f"gpudirect.rdma.objects (kind, metadata.labels['{COMPONENT_LABEL}']); "
                f"got keys {sorted(obj)}"
            )
    try:
        return layout(args["_input"])
    except ValueError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.kustomize_tree: {error}") from error


class FilterModule:
    def filters(self):
        return {"kustomize_tree": kustomize_tree}
