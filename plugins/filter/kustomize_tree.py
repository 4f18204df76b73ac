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
  - Each component's C(kustomization.yaml) adds Argo CD's C(argocd.argoproj.io/sync-wave) to its
    objects at build time (a kustomize AnnotationsTransformer per wave, by kind) - the operators'
    Namespace, OperatorGroup and Subscription C(0), then the operands in the order
    C(playbooks/site.yml) waits on them (NodeFeatureDiscovery and SriovOperatorConfig C(1),
    NicClusterPolicy C(2), MachineConfigs C(3), ClusterPolicy C(4)), then the RDMA method C(5).
    Objects whose CRD comes with an operator also get
    C(argocd.argoproj.io/sync-options=SkipDryRunOnMissingResource=true). The object files carry
    no Argo CD annotation - they are exactly what C(site.yml) applies.
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

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (  # noqa: E402
    COMPONENT_LABEL,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
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
