#!/usr/bin/python
"""gpudirect.rdma.convergence_info: read whether objects, operators and gates are as given."""

from __future__ import annotations

DOCUMENTATION = r"""
module: convergence_info
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Say, reading only, whether objects, operators and gates are as given
description:
  - Takes the decisions the apply, OLM and wait steps would take, in one process and without
    writing anything.
  - Every object of O(objects) (and the pull Secret of O(registry_secret)) would be left
    unchanged by M(gpudirect.rdma.apply), nothing of the collection's would be removed by
    O(prune), each Subscription of O(subscriptions) has its ClusterServiceVersion in phase
    C(Succeeded), and every gate of O(gates) is met (for O(stable_for) seconds, if set).
  - The checks stop at the first that finds work; RV(work) says what it is.
  - M(gpudirect.rdma.converged) builds these options from the plan and runs this module; that is
    how C(site.yml) uses it.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpudirect.rdma.gates
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode or not.
  diff_mode:
    support: none
    description: Nothing is changed.
options:
  objects:
    description: Objects that must exist unchanged, owned by the collection.
    type: list
    elements: dict
    required: true
  prune:
    description: Scopes of what applying prunes, as O(gpudirect.rdma.apply#module:prune) takes
      them; none of the collection's objects in them may lack from O(objects).
    type: list
    elements: dict
    default: []
    suboptions:
      kinds:
        description: apiVersion and kind of each kind.
        type: list
        elements: dict
        required: true
      label_selector:
        description: Labels of what is pruned.
        type: str
        default: ""
  subscriptions:
    description: Each operator's Subscription object, by operator; their CSVs are returned.
    type: dict
    default: {}
  stable_for:
    description: Seconds the gates must hold in every read (0, one read).
    type: float
    default: 0
  read:
    description: Objects (apiVersion, kind, name, namespace) to return as found, for the checks
      that need the CSVs.
    type: list
    elements: dict
    default: []
  registry_secret:
    description: The pull Secret of the mirror registry, as M(gpudirect.rdma.registry_secret)
      takes it. The password is never shown.
    type: dict
    suboptions:
      name:
        description: Name of the Secret.
        type: str
        required: true
      namespace:
        description: Namespace of the Secret.
        type: str
        required: true
      registry:
        description: Registry host the login is for.
        type: str
        required: true
      username:
        description: User name of the login.
        type: str
        required: true
      password:
        description: Password or token of the login.
        type: str
        required: true
"""

EXAMPLES = r"""
- name: Are the NicClusterPolicy and its gate as planned?
  gpudirect.rdma.convergence_info:
    objects: "{{ rdma.plan | gpudirect.rdma.objects(component='network-operator', part='operand') }}"
    gates: "{{ rdma.plan | gpudirect.rdma.gates('network-operator') }}"
  register: network_operator_state
"""

RETURN = r"""
converged:
  description: Whether nothing is left to do.
  returned: always
  type: bool
work:
  description: What the steps would do (objects to create, update or remove, a CSV not
    Succeeded, the first gate not met); empty when converged.
  returned: always
  type: list
  elements: str
  sample: ["NicClusterPolicy nic-cluster-policy would be updated (fields differ)"]
csvs:
  description: The Succeeded CSV of each operator of O(subscriptions), by operator.
  returned: always
  type: dict
live:
  description: The objects of O(read) that exist, as read.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Cluster,
    argument_spec,
    failing_clearly,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.converged import (  # noqa: E402
    check,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.secrets import (  # noqa: E402
    registry_secret,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (  # noqa: E402
    GATE_OPTIONS,
    incomplete_gates,
    to_gate,
)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            objects={"type": "list", "elements": "dict", "required": True},
            prune={
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "kinds": {"type": "list", "elements": "dict", "required": True},
                    "label_selector": {"type": "str", "default": ""},
                },
            },
            subscriptions={"type": "dict", "default": {}},
            gates={"type": "list", "elements": "dict", "required": True, "options": GATE_OPTIONS},
            stable_for={"type": "float", "default": 0},
            read={"type": "list", "elements": "dict", "default": []},
            registry_secret={
                "type": "dict",
                "no_log": False,  # its password is no_log
                "options": {
                    "name": {"type": "str", "required": True},
                    "namespace": {"type": "str", "required": True},
                    "registry": {"type": "str", "required": True},
                    "username": {"type": "str", "required": True},
                    "password": {"type": "str", "required": True, "no_log": True},
                },
            },
        ),
        supports_check_mode=True,
    )
    params = module.params
    gates = [to_gate(options) for options in params["gates"]]
    incomplete = incomplete_gates(gates)
    if incomplete:
        module.fail_json(msg=incomplete)
    if params["stable_for"] < 0:
        module.fail_json(msg=f"stable_for: got {params['stable_for']}; expected 0 or more seconds")
    objects = list(params["objects"])
    login = params["registry_secret"]
    if login:
        objects.append(registry_secret(**login, component="network-operator"))
    with failing_clearly(module):
        cluster = Cluster(module)
    with failing_clearly(module, cluster):
        found = check(
            cluster,
            objects,
            params["prune"],
            params["subscriptions"],
            gates,
            params["stable_for"],
            params["read"],
        )
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
