"""gpudirect.rdma.verify_report: the bandwidth test's logs in, a verdict per pair out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_report
author: gpudirect.rdma maintainers
version_added: 0.1.0
short_description: Judge a GPUDirect bandwidth test run from its pods' logs
description:
  - Parses each pair's server and client logs with P(gpudirect.rdma.perftest_results#filter) and
    judges the pair. It passes when both logs hold a result, the client's average bandwidth
    reaches O(min_gbps), and both sides registered GPU memory the way the plan says (DMA-BUF or
    nvidia-peermem).
  - Returns the pairs with their numbers and problems, an overall verdict, and a table to print.
options:
  _input:
    description: One entry per rail with C(rail) (index), C(server_node), C(client_node), C(server_log), C(client_log).
    type: list
    elements: dict
    required: true
  plan:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  min_gbps:
    description: Smallest acceptable average bandwidth of a pair, in Gb/s.
    type: float
    required: true
"""

EXAMPLES = r"""
- name: Judge the run
  ansible.builtin.set_fact:
    verify_result: "{{ runs | gpudirect.rdma.verify_report(plan=rdma.plan, min_gbps=150) }}"
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    passed:
      description: Every pair passed.
      type: bool
    pairs:
      description: Per rail, the nodes, the client's numbers (C(bw_average_gbps), C(bw_peak_gbps), C(msg_rate_mpps), C(device), C(link_type), C(gid_index), C(gpu_memory)), C(passed) and C(problems).
      type: list
      elements: dict
    table:
      description: Lines of a table for people.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.builders.verify import (  # noqa: E402
    report,
)


def verify_report(runs, plan, min_gbps):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_report",
        {"_input": runs, "plan": plan, "min_gbps": min_gbps},
    )
    try:
        return report(args["plan"], args["_input"], args["min_gbps"])
    except (KeyError, IndexError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_report: expected entries with rail, server_node, client_node, "
            f"server_log and client_log, and the plan; {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_report": verify_report}
