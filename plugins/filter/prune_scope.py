"""gpudirect.rdma.prune_scope: what applying a step removes when the plan no longer has it."""

from __future__ import annotations

DOCUMENTATION = r"""
name: prune_scope
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The kinds and label selector a step of the plan prunes
description:
  - For a component, the O(gpudirect.rdma.apply#module:prune) option that removes the
    collection's objects of the component that the plan no longer has, or null when the
    component prunes nothing (the operators).
  - C(machine-config), the collection's MachineConfigs. An RDMA method, the collection's objects
    of every method kind (MacvlanNetwork, IPoIBNetwork, HostDeviceNetwork, SriovNetwork,
    SriovIBNetwork, IPPool, SriovNetworkNodePolicy) of all three methods, so that switching
    method leaves nothing of the previous one.
options:
  _input:
    description: The component.
    type: str
    required: true
    choices: [nfd, sriov-network-operator, network-operator, gpu-operator, machine-config,
              shared-device, host-device, sriov-legacy]
"""

EXAMPLES = r"""
- name: Apply the MachineConfigs, remove those the plan no longer has
  gpudirect.rdma.apply:
    objects: "{{ rdma.plan | gpudirect.rdma.objects(component='machine-config') }}"
    prune: "{{ 'machine-config' | gpudirect.rdma.prune_scope }}"
"""

RETURN = r"""
_value:
  description: The prune option, or null.
  type: dict
  contains:
    kinds:
      description: apiVersion and kind of each kind pruned.
      type: list
      elements: dict
    label_selector:
      description: The component labels of what is pruned.
      type: str
"""

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.kinds import (  # noqa: E402
    prune_scope as scope_of,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402


def prune_scope(component):
    args = validate(DOCUMENTATION, "gpudirect.rdma.prune_scope", {"_input": component})
    return scope_of(args["_input"])


class FilterModule:
    def filters(self):
        return {"prune_scope": prune_scope}
