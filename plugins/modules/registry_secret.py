#!/usr/bin/python
"""gpudirect.rdma.registry_secret: the pull Secret of a mirror registry, from its credentials."""

from __future__ import annotations

DOCUMENTATION = r"""
module: registry_secret
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Create the pull Secret of a registry that needs a login, never showing the login
description:
  - Applies one C(kubernetes.io/dockerconfigjson) Secret that holds the login of O(registry), labelled
    C(app.kubernetes.io/managed-by=gpudirect.rdma) like every object of the collection (uninstall removes it).
    A converged Secret costs one read and no write.
  - O(password) is never shown; neither is the Secret's data, in its base64 form or any other, in results,
    messages or diffs.
  - The NVIDIA Network Operator role runs it when C(gpudirect_rdma_image_registry_username) and
    C(gpudirect_rdma_image_registry_password) are set; the plan then names the Secret among the NicClusterPolicy's
    C(imagePullSecrets).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
attributes:
  check_mode:
    support: full
    description: Reads only; says whether the Secret would be created or updated.
  diff_mode:
    support: none
    description: A Secret's content is not shown.
options:
  name:
    description: Name of the Secret.
    type: str
    required: true
  namespace:
    description: Namespace of the Secret (where the pods that pull run).
    type: str
    required: true
  registry:
    description: Registry host, with optional port, that the login is for (the C(auths) key).
    type: str
    required: true
  username:
    description: User name of the login.
    type: str
    required: true
  password:
    description: Password or token of the login. Never shown.
    type: str
    required: true
  component:
    description: Value of the C(gpudirect.rdma/component) label.
    type: str
    default: network-operator
  take_over:
    description: Replace a same-named Secret that this collection did not create.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Create the pull Secret of the mirror registry
  gpudirect.rdma.registry_secret:
    name: gpudirect-rdma-image-registry
    namespace: nvidia-network-operator
    registry: mirror.example.com:5000
    username: "{{ gpudirect_rdma_image_registry_username }}"
    password: "{{ gpudirect_rdma_image_registry_password }}"
"""

RETURN = r"""
results:
  description: What was (or in check mode would be) done with the Secret; never its content.
  returned: always
  type: list
  elements: dict
  sample: [{"object": "Secret nvidia-network-operator/gpudirect-rdma-image-registry", "action": "created"}]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (  # noqa: E402
    Applier,
    ForeignObjects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Cluster,
    argument_spec,
    failing_clearly,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.secrets import (  # noqa: E402
    registry_secret,
)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            name={"type": "str", "required": True},
            namespace={"type": "str", "required": True},
            registry={"type": "str", "required": True},
            username={"type": "str", "required": True},
            password={"type": "str", "required": True, "no_log": True},
            component={"type": "str", "default": "network-operator"},
            take_over={"type": "bool", "default": False},
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not params["password"]:
        module.fail_json(msg="password: got nothing; expected the password or token of the login")
    secret = registry_secret(
        params["name"],
        params["namespace"],
        params["registry"],
        params["username"],
        params["password"],
        params["component"],
    )
    with failing_clearly(module):
        cluster = Cluster(module)
    applier = Applier(cluster, module.check_mode, params["take_over"])
    try:
        with failing_clearly(module, cluster, results=lambda: applier.results):
            applier.apply([secret])
    except ForeignObjects as error:
        module.fail_json(msg=str(error), foreign=error.names, results=applier.results)
    module.exit_json(changed=applier.changed, results=applier.results)


if __name__ == "__main__":
    main()
