#!/usr/bin/python
"""gpudirect.rdma.object_info: read objects of one kind through the collection's connection."""

from __future__ import annotations

DOCUMENTATION = r"""
module: object_info
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Read objects of one kind (one by name, or all matching label selectors)
description:
  - Reads the objects of one kind, one by its name or every one matching O(label_selectors), in
    one namespace or the whole cluster, and returns them as they are stored.
  - It uses the connection of the collection's other modules, so a read the API server refuses
    fails with the same message as theirs, naming the user, the verb and the resource, and the
    ClusterRole the collection ships in C(rbac/gpudirect-rdma-installer.yaml).
  - A kind the API server does not serve has no objects (RV(served) is false).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode as otherwise.
  diff_mode:
    support: none
    description: Reads only.
options:
  api_version:
    description: apiVersion of the objects.
    type: str
    default: v1
  kind:
    description: Kind of the objects.
    type: str
    required: true
  name:
    description: One object by its name; omit to read every object matching O(label_selectors).
    type: str
  namespace:
    description: Namespace of the objects; omit for cluster-scoped kinds or every namespace.
    type: str
  label_selectors:
    description: Label selectors the objects must all match (C(key=value), C(key in (a,b)), ...).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Read the nodes with NVIDIA NICs
  gpudirect.rdma.object_info:
    kind: Node
    label_selectors:
      - feature.node.kubernetes.io/pci-15b3.present=true
  register: nodes

- name: Read the NicClusterPolicy
  gpudirect.rdma.object_info:
    api_version: mellanox.com/v1alpha1
    kind: NicClusterPolicy
    name: nic-cluster-policy
"""

RETURN = r"""
resources:
  description: The objects read (empty when none exists or the kind is not served).
  returned: always
  type: list
  elements: dict
served:
  description: Whether the API server serves the kind.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Cluster,
    NotServed,
    argument_spec,
    failing_clearly,
)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            api_version={"type": "str", "default": "v1"},
            kind={"type": "str", "required": True},
            name={"type": "str"},
            namespace={"type": "str"},
            label_selectors={"type": "list", "elements": "str", "default": []},
        ),
        supports_check_mode=True,
    )
    params = module.params
    with failing_clearly(module):
        cluster = Cluster(module)
    try:
        with failing_clearly(module, cluster):
            if params["name"]:
                found = cluster.get(
                    params["api_version"], params["kind"], params["name"], params["namespace"]
                )
                resources = [found] if found is not None else []
            else:
                resources = cluster.list(
                    params["api_version"],
                    params["kind"],
                    params["namespace"],
                    ",".join(params["label_selectors"]) or None,
                )
    except NotServed:
        module.exit_json(changed=False, resources=[], served=False)
    module.exit_json(changed=False, resources=resources, served=True)


if __name__ == "__main__":
    main()
