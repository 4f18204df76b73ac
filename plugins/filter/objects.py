"""gpudirect.rdma.objects: a plan's Kubernetes objects (thin entry over the builders)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: objects
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Build the Kubernetes objects of a GPUDirect RDMA plan
description:
  - Turns the plan returned by M(gpudirect.rdma.plan) into the Kubernetes objects of the
    configuration, in the order they are applied, each labelled
    C(app.kubernetes.io/managed-by=gpudirect.rdma) and C(gpudirect.rdma/component=<component>).
  - The same plan always gives the same objects; nothing is read from or written to a
    cluster.
options:
  _input:
    description: The plan, as returned by M(gpudirect.rdma.plan) in its C(plan) key.
    type: dict
    required: true
  component:
    description:
      - Only the objects of this component. Omit for all of them.
      - A step the plan leaves off (an opt-in, an RDMA method no node group uses) gives an empty
        list.
    type: str
    choices: [nfd, sriov-network-operator, maintenance-operator, network-operator, nic-node-policies,
              machine-config, nic-configuration, gpu-operator, shared-device, host-device, sriov-legacy,
              monitoring]
  part:
    description:
      - C(olm) keeps the operators' Namespace, OperatorGroup and Subscription, C(operand) the
        other objects (the operator's instance, networks, MachineConfigs), C(all) both.
    type: str
    choices: [all, olm, operand]
    default: all
  csvs:
    description:
      - Installed ClusterServiceVersions by operator (C(nfd), C(gpu_operator)). Their
        C(alm-examples) give the NodeFeatureDiscovery operand image and the default
        ClusterPolicy. Without them the release facts built into the collection are used.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Plan from the inventory
  gpudirect.rdma.plan:
  register: rdma

- name: Every object, in apply order
  ansible.builtin.debug:
    msg: "{{ rdma.plan | gpudirect.rdma.objects | map(attribute='kind') }}"

- name: The NVIDIA Network Operator's OLM objects (Namespace, OperatorGroup, Subscription)
  ansible.builtin.set_fact:
    network_operator_olm: "{{ rdma.plan | gpudirect.rdma.objects(component='network-operator', part='olm') }}"

- name: The Network Operator's objects only
  ansible.builtin.set_fact:
    network_operator_objects: "{{ rdma.plan | gpudirect.rdma.objects(component='network-operator') }}"

- name: The ClusterPolicy built on the installed CSV's alm-examples
  ansible.builtin.set_fact:
    gpu_objects: "{{ rdma.plan | gpudirect.rdma.objects(component='gpu-operator', csvs={'gpu_operator': gpu_csv}) }}"
"""

RETURN = r"""
_value:
  description: Kubernetes objects (dicts with apiVersion, kind, metadata, spec), in apply order.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (  # noqa: E402
    build_objects,
    component_objects,
    is_olm,
    of_component,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402


def objects(plan, component=None, csvs=None, part="all"):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.objects",
        {"_input": plan, "component": component, "csvs": csvs or {}, "part": part},
    )
    if "groups" not in args["_input"] or "operators" not in args["_input"]:
        raise AnsibleFilterError(
            "gpudirect.rdma.objects: expected the plan returned by gpudirect.rdma.plan "
            f"(with groups and operators); got a dict with keys {sorted(args['_input'])}"
        )
    plan, csvs, part = args["_input"], args["csvs"], args["part"]
    if args["component"]:
        operator = of_component(args["component"]).operator
        csv = csvs.get(operator.key) if operator else None
        found = component_objects(plan, args["component"], csv)
    else:
        found = build_objects(plan, csvs)
    if part == "all":
        return found
    return [obj for obj in found if is_olm(obj) == (part == "olm")]


class FilterModule:
    def filters(self):
        return {"objects": objects}
