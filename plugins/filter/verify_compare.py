"""gpudirect.rdma.verify_compare: two verify reports in, each rail and NCCL run side by side out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_compare
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.2.0
short_description: Put two verify reports side by side and judge the change
description:
  - Takes the verify report of a run before a change (an upgrade) and the one after
    (P(gpudirect.rdma.verify_report#filter)'s result, with
    P(gpudirect.rdma.verify_nccl_report#filter)'s runs when the NCCL test ran).
  - Each node group's rail (its pair's average bandwidth) and each node group's NCCL run (its
    average bus bandwidth) is a row with the number before and after, the change in percent, and
    how the data moved (for a rail, GPU memory through dma-buf, nvidia-peermem or not at all; for
    an NCCL run, NCCL's transport and whether its network channels ran GPUDirect).
  - A row fails when its number dropped by more than O(max_drop_percent), when the way the data
    moved changed (GPUDirect to not, IB to Socket), or when the after report lacks it.
options:
  _input:
    description: The report before.
    type: dict
    required: true
  after:
    description: The report after.
    type: dict
    required: true
  max_drop_percent:
    description: The largest drop of a rail's or run's number, in percent of the number before.
    type: float
    default: 10
"""

EXAMPLES = r"""
- name: Before and after the upgrade
  ansible.builtin.set_fact:
    comparison: "{{ verify_before | gpudirect.rdma.verify_compare(after=verify_result, max_drop_percent=10) }}"
"""

RETURN = r"""
_value:
  description: The comparison.
  type: dict
  contains:
    passed:
      description: Every row passed.
      type: bool
    max_drop_percent:
      description: The largest drop allowed.
      type: float
    rows:
      description:
        - Per rail, then per NCCL run, C(what) (C(rail 0), C(group a100 rail 1), C(NCCL)), C(before)
          and C(after) (Gb/s; null where a report lacks it), C(change_percent),
          C(before_transport), C(after_transport), C(passed) and C(problems).
      type: list
      elements: dict
    table:
      description: The rows as lines, each row's problems below it.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.compare import (  # noqa: E402
    compare,
)


def verify_compare(before, after, max_drop_percent=10.0):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_compare",
        {"_input": before, "after": after, "max_drop_percent": max_drop_percent},
    )
    if args["max_drop_percent"] < 0:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_compare: max_drop_percent: got "
            f"{args['max_drop_percent']:g}; expected a percentage of 0 or more"
        )
    try:
        return compare(args["_input"], args["after"], args["max_drop_percent"])
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_compare: expected two reports of gpudirect.rdma.verify_report; "
            f"{type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_compare": verify_compare}
