"""gpudirect.rdma.verify_nccl_narrowed: the verify report with the narrowings of its slow NCCL
runs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_nccl_narrowed
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.2.0
short_description: Add the finished narrowings of the slow NCCL runs to a verify report
description:
  - Takes the verify report with its NCCL runs and the finished narrowings
    (P(gpudirect.rdma.verify_nccl_narrow_round#filter)'s results).
  - Returns a new report with RV(_value.nccl_narrowing), their lines after the NCCL lines of its
    tables, and each verdict among its run's problems (C(narrowed down:) ...). Whether the report
    passed does not change.
options:
  _input:
    description: The verify report with its NCCL runs.
    type: dict
    required: true
  narrowings:
    description: The finished narrowings.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Report the narrowings
  ansible.builtin.set_fact:
    verify_result: "{{ verify_result | gpudirect.rdma.verify_nccl_narrowed(narrowings) }}"
"""

RETURN = r"""
_value:
  description: The report with the narrowings.
  type: dict
  contains:
    nccl_narrowing:
      description:
        - Per narrowing C(group) (with node groups), C(nodes), C(floor_gbps) and
          C(busbw_judged_gbps) of the slow run, C(max_runs), C(runs) (as
          P(gpudirect.rdma.verify_nccl_narrow_round#filter) returns them), C(slow) (the nodes
          named), C(across) (sets whose halves each reached the floor), C(suspects) (nodes it could
          neither clear nor name), C(stopped) (why it stopped early, or empty) and C(verdict).
      type: list
      elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import narrow  # noqa: E402


def verify_nccl_narrowed(report, narrowings):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_nccl_narrowed",
        {"_input": report, "narrowings": narrowings},
    )
    try:
        found = [narrow.summary(state) for state in args["narrowings"]]
        return narrow.with_narrowings(args["_input"], found)
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_nccl_narrowed: expected the verify report and narrowings of "
            f"gpudirect.rdma.verify_nccl_narrow_round; {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_nccl_narrowed": verify_nccl_narrowed}
