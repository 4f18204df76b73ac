"""gpudirect.rdma.converged: documentation of the converged action plugin (the code is
plugins/action/converged.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: converged
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Say, reading only, whether the cluster already is as the plan asks
description:
  - Takes every decision the steps of C(site.yml) would take, reading only and in one module
    run (M(gpudirect.rdma.convergence_info)), so that a re-run on a converged cluster costs
    about one step instead of all of them. C(site.yml) runs it after the preflight checks and
    ends the play there when nothing is left to do.
  - Converged means all of these hold. Every object of the plan (operators' Namespaces,
    OperatorGroups and Subscriptions, operands, MachineConfigs, the method's networks and the
    pull Secret) exists, carries the collection's labels and would be left unchanged by
    M(gpudirect.rdma.apply). None of the collection's MachineConfigs or method objects is
    outside the plan (nothing to prune). Every operator's ClusterServiceVersion is in phase
    C(Succeeded). Every gate of P(gpudirect.rdma.gates#filter) is met, for the larger of
    O(network_operator_ready_stable_seconds) and O(gpu_operator_ready_stable_seconds) when set.
  - The NodeFeatureDiscovery and the ClusterPolicy are built on the installed CSVs, as their
    roles build them.
  - A bad option fails before anything is read, naming the variable, the value and what is
    allowed.
  - When something is left to do, RV(work) says what (the checks stop at the first kind of
    work found), and the steps run as usual.
  - Runs the module on the managed host with the connection options given; the rest runs on
    the controller.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode or not; the answer is the same.
  diff_mode:
    support: none
    description: Nothing is changed.
options:
  plan:
    description: The plan, as returned by M(gpudirect.rdma.plan) in its C(plan) key.
    type: dict
    required: true
  nfd_min_nodes:
    description: How many nodes must carry NFD's labels, as the nfd role's variable of that name.
    type: int
    default: 1
  network_operator_ready_stable_seconds:
    description: As the network_operator role's variable of that name. The larger of it and
      O(gpu_operator_ready_stable_seconds) is how long every gate must hold in every read.
    type: float
    default: 0
  gpu_operator_ready_stable_seconds:
    description: As the gpu_operator role's variable of that name.
    type: float
    default: 0
  image_registry_username:
    description: User name of the mirror registry's login, when the plan has a pull Secret.
    type: str
  image_registry_password:
    description: Its password or token. Never shown.
    type: str
"""

EXAMPLES = r"""
- name: Plan
  gpudirect.rdma.plan:
  register: rdma

- name: Is there anything left to do?
  gpudirect.rdma.converged:
    plan: "{{ rdma.plan }}"
  register: state

- name: Say what
  ansible.builtin.debug:
    msg: "{{ state.msg }}"
"""

RETURN = r"""
converged:
  description: Whether nothing is left to do.
  returned: success
  type: bool
work:
  description: What the steps would do; empty when converged.
  returned: success
  type: list
  elements: str
  sample:
    - "gate 'NicClusterPolicy ready' not reached after 0s: expected NicClusterPolicy
      nic-cluster-policy status.state to be 'ready'; last seen: NicClusterPolicy
      nic-cluster-policy status.state is 'notReady'."
checked:
  description: How many objects, operators and gates were checked.
  returned: success
  type: dict
  sample: {objects: 16, operators: 4, gates: 6}
msg:
  description: One line saying the verdict, for the play's output.
  returned: success
  type: str
"""
