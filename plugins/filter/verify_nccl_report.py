"""gpudirect.rdma.verify_nccl_report: the NCCL test's launcher logs in, a verdict per run out."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_nccl_report
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Add the NCCL all_reduce_perf runs to a verify report
description:
  - Takes the verify report (P(gpudirect.rdma.verify_report#filter)'s result) and, per node
    group tested, the NCCL launcher's log (P(gpudirect.rdma.verify_nccl_objects#filter)).
  - Parses each run's output with P(gpudirect.rdma.nccl_results#filter)'s code and judges it.
    A run passes when it has a results table and NCCL used RDMA (no C(NET/Socket) fallback),
    the network channels ran GPUDirect RDMA (C(/GDRDMA)), no value was wrong, the ranks spanned
    every node of the run, and the bus bandwidth reached the run's floor; each problem names its
    likely cause (on RoCE, a collapse points at flow control and C(NCCL_IB_TC)).
  - The floor is O(min_busbw_gbps) against the average bus bandwidth (C(# Avg bus bandwidth))
    when set. Without it, 70% of the group's rails times the slowest port rate the bandwidth
    test's pairs of the group read, against the bus bandwidth at the largest message size
    (across nodes all-reduce is bound by the rails together); 100 Gb/s against the average
    when no rate was read. Each run says which floor applied and why.
  - Returns a new report with RV(_value.nccl), the table's NCCL lines, and C(passed) false when
    a run failed.
options:
  _input:
    description: The report of P(gpudirect.rdma.verify_report#filter).
    type: dict
    required: true
  plan:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  runs:
    description:
      - Per run C(group) (the node group's name; null without node groups), C(nodes) (the node
        names, in rank order) and C(log) (the launcher pod's log).
    type: list
    elements: dict
    required: true
  min_busbw_gbps:
    description:
      - Smallest acceptable average bus bandwidth (C(# Avg bus bandwidth)), in Gb/s; null (the
        default) derives each run's floor from the port rates (see the description).
    type: float
"""

EXAMPLES = r"""
- name: Judge the NCCL runs
  ansible.builtin.set_fact:
    verify_result: >-
      {{ verify_result | gpudirect.rdma.verify_nccl_report(plan=rdma.plan,
         runs=[{'group': none, 'nodes': nodes, 'log': launcher.log}], min_busbw_gbps=300) }}
"""

RETURN = r"""
_value:
  description: The report with the NCCL runs.
  type: dict
  contains:
    passed:
      description: The pairs, the host checks and every NCCL run passed.
      type: bool
    nccl:
      description:
        - Per run C(group) (with node groups), C(nodes), C(config_map) (the settings it used),
          C(floor_gbps), C(floor_measure) (C(average) or C(largest)), C(floor) (which floor and
          why), C(busbw_judged_gbps) (the number the floor judged), C(exit) (mpirun's; null when the launcher stopped before it),
          C(passed), C(problems), and once the output parsed C(avg_busbw_gbytes),
          C(avg_busbw_gbps), C(max_busbw_gbytes), C(max_busbw_gbps), C(ranks), C(nodes_in_run), C(devices),
          C(transport), C(gpudirect), C(wrong), C(rows), C(largest) and C(warnings) as
          P(gpudirect.rdma.nccl_results#filter) documents them.
      type: list
      elements: dict
    table:
      description: The report's lines, then a line per run and its problems.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl_test import (  # noqa: E402
    judged,
    with_runs,
)


def verify_nccl_report(report, plan, runs, min_busbw_gbps=None):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_nccl_report",
        {"_input": report, "plan": plan, "runs": runs, "min_busbw_gbps": min_busbw_gbps},
    )
    try:
        entries = judged(args["_input"], args["plan"], args["runs"], args["min_busbw_gbps"])
        return with_runs(args["_input"], entries)
    except ValueError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.verify_nccl_report: {error}") from error
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_nccl_report: expected the report of gpudirect.rdma.verify_report "
            f"and runs of group, nodes and log; {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_nccl_report": verify_nccl_report}
