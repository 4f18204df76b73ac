"""gpudirect.rdma.verify_nodes: which nodes can run the bandwidth test, and why the others cannot."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_nodes
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The nodes that can run the GPUDirect bandwidth test
description:
  - From Node objects (as M(gpudirect.rdma.read) or M(kubernetes.core.k8s_info) return them),
    the names of those that are schedulable and advertise C(nvidia.com/gpu) and every rail's
    RDMA resource of the plan (of the node group O(group)), sorted; for the others, why not;
    and how many GPUs each node advertises (what a test pod asks for, to choose each rail's GPU
    from).
options:
  _input:
    description: Node objects.
    type: list
    elements: dict
    required: true
  plan:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  group:
    description: The node group whose rails count (its C(name)); required when the plan has several.
    type: str
  chosen:
    description:
      - The two nodes the user chose, server first, as a list or one comma-separated string (a survey's
        or C(-e)'s form); each must be one of O(_input) that can run the test. Empty chooses the first two
        eligible nodes.
    type: raw
  chosen_from:
    description: The variable O(chosen) came from, for the message when it is wrong.
    type: str
    default: verify_nodes
"""

EXAMPLES = r"""
- name: Pick the nodes
  ansible.builtin.set_fact:
    candidates: "{{ nodes.resources | gpudirect.rdma.verify_nodes(plan=rdma.plan) }}"
"""

RETURN = r"""
_value:
  description: The verdict on the nodes.
  type: dict
  contains:
    eligible:
      description: Names of the nodes that can run a test pod, sorted.
      type: list
      elements: str
    ineligible:
      description: For every other node, why (cordoned, or the resources it lacks).
      type: dict
    gpus:
      description: For every node given, how many C(nvidia.com/gpu) it advertises as allocatable.
      type: dict
    cannot:
      description: The nodes that cannot run the test, each with why, for a message (C(none) when every
        node given can).
      type: str
    pair:
      description: The server and the client node (O(chosen), else the first two eligible nodes; fewer when
        there are fewer).
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (  # noqa: E402
    chosen_pair,
    eligible_nodes,
    gpu_counts,
    group_view,
)


def verify_nodes(nodes, plan, group=None, chosen=None, chosen_from="verify_nodes"):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_nodes",
        {
            "_input": nodes,
            "plan": plan,
            "group": group,
            "chosen": chosen,
            "chosen_from": chosen_from,
        },
    )
    try:
        view = group_view(args["plan"], args["group"])
        eligible, ineligible = eligible_nodes(view, args["_input"])
        pair = chosen_pair(args["chosen"], args["chosen_from"], eligible, ineligible, args["group"])
    except ValueError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.verify_nodes: {error}") from error
    return {
        "eligible": eligible,
        "ineligible": ineligible,
        "gpus": gpu_counts(args["_input"]),
        "pair": pair,
        "cannot": ", ".join(f"{name} ({why})" for name, why in ineligible.items()) or "none",
    }


class FilterModule:
    def filters(self):
        return {"verify_nodes": verify_nodes}
