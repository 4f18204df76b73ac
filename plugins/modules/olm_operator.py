#!/usr/bin/python
"""gpudirect.rdma.olm_operator: install one operator through OLM and wait for its CSV."""

from __future__ import annotations

DOCUMENTATION = r"""
module: olm_operator
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Install an operator through OLM and wait until its CSV has Succeeded
description:
  - Checks that the Subscription's CatalogSource exists and is C(READY), that the channel exists
    (when the cluster serves PackageManifests), and that the namespace holds no foreign
    OperatorGroup; then applies the Namespace, OperatorGroup and Subscription the way
    M(gpudirect.rdma.apply) does (only what differs).
  - With C(installPlanApproval=Manual), approves the InstallPlan of the Subscription's
    C(startingCSV) and refuses any other.
  - Waits until the ClusterServiceVersion reaches C(Succeeded) and returns it, so that its
    C(alm-examples) can give the operand's defaults. A CSV in phase C(Failed) fails at once.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
attributes:
  check_mode:
    support: full
    description: Checks and reports; applies and approves nothing, waits for nothing, returns the CSV if it is already installed.
  diff_mode:
    support: full
    description: Shows the Namespace, OperatorGroup and Subscription before and after.
options:
  objects:
    description: The operator's Namespace, OperatorGroup and Subscription (one of each).
    type: list
    elements: dict
    required: true
  take_over:
    description: Replace the content of same-named objects not created by this collection.
    type: bool
    default: false
  timeout:
    description: Seconds for the whole install (catalog, approval, CSV).
    type: int
    default: 900
"""

EXAMPLES = r"""
- name: Install the NVIDIA Network Operator
  gpudirect.rdma.olm_operator:
    objects: >-
      {{ rdma.plan | gpudirect.rdma.objects(component='network-operator')
         | selectattr('kind', 'in', ['Namespace', 'OperatorGroup', 'Subscription']) }}
  register: network_operator_csv
"""

RETURN = r"""
csv:
  description: The installed ClusterServiceVersion (null in check mode when not installed yet).
  returned: always
  type: dict
csv_name:
  description: Its name, e.g. C(nvidia-network-operator.v26.4.1).
  returned: always
  type: str
approved_install_plans:
  description: InstallPlans this run approved.
  returned: always
  type: list
  elements: str
results:
  description: What was done to the Namespace, OperatorGroup and Subscription (see M(gpudirect.rdma.apply)).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (  # noqa: E402
    Applier,
    ForeignObjects,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Cluster,
    NotServed,
    argument_spec,
    failing_clearly,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.olm import (  # noqa: E402
    OlmError,
    install,
)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            objects={"type": "list", "elements": "dict", "required": True},
            take_over={"type": "bool", "default": False},
            timeout={"type": "int", "default": 900},
        ),
        supports_check_mode=True,
    )
    with failing_clearly(module):
        cluster = Cluster(module)
    applier = Applier(cluster, module.check_mode, module.params["take_over"])
    try:
        with failing_clearly(module, cluster, results=lambda: applier.results):
            result = install(
                cluster,
                applier,
                module.params["objects"],
                module.params["timeout"],
                module.params["take_over"],
                module.check_mode,
            )
    except (OlmError, ForeignObjects, NotServed) as error:
        module.fail_json(msg=str(error), results=applier.results)
    result.update(
        changed=applier.changed or bool(result["approved_install_plans"]), results=applier.results
    )
    if module._diff:
        result["diff"] = applier.diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
