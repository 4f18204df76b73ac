"""gpudirect.rdma.verify_nccl_narrowing: the NCCL runs too slow on bus bandwidth alone, each the
start of narrowing it down to its slow node."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_nccl_narrowing
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.2.0
short_description: Start narrowing each slow NCCL run down to its slow node
description:
  - Takes the verify report with its NCCL runs (P(gpudirect.rdma.verify_nccl_report#filter)'s
    result) and returns, for each run across three or more nodes that failed on its bus bandwidth
    alone (RDMA with GPUDirect, no wrong value, every rank started), the state of its narrowing
    with its first round of runs planned in RV(_value[].next).
  - "The narrowing halves the run's nodes and runs each half on its own; a slow half is halved
    again until two or three suspects are left, each then run beside a node that reached the
    floor; a suspect whose every run stays slow is named. When every half reaches the floor, the
    slowness lies between them, not in one node. One slow node among 8 takes 6 runs."
  - P(gpudirect.rdma.verify_nccl_narrow_round#filter) records a round's results and plans the
    next; P(gpudirect.rdma.verify_nccl_narrowed#filter) adds the finished narrowings to the
    report.
options:
  _input:
    description: The verify report with its NCCL runs.
    type: dict
    required: true
  tested:
    description:
      - Per NCCL run the role started, C(group) (null without node groups), C(selector) (its
        pods' label selector), C(nodes) and C(gpus) (per node, the GPUs its worker asks for).
    type: list
    elements: dict
    required: true
  max_runs:
    description: The most NCCL runs one narrowing may take; a round that would go beyond stops
      it with what it found. 0 narrows nothing.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Start narrowing the slow NCCL runs
  ansible.builtin.set_fact:
    narrowings: "{{ verify_result | gpudirect.rdma.verify_nccl_narrowing(tested=nccl_runs, max_runs=10) }}"
"""

RETURN = r"""
_value:
  description:
    - Per slow run its narrowing's state, C(next) (the runs of its first round, each with
      C(group), C(selector), C(nodes) and C(gpus) as the role's NCCL test takes them) and
      C(rounds) (the most rounds it can take).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import narrow  # noqa: E402


def verify_nccl_narrowing(report, tested, max_runs=10):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_nccl_narrowing",
        {"_input": report, "tested": tested, "max_runs": max_runs},
    )
    if args["max_runs"] < 0:
        raise AnsibleFilterError(
            f"gpudirect.rdma.verify_nccl_narrowing: max_runs: expected 0 or more; got {max_runs}"
        )
    if args["max_runs"] == 0:
        return []
    started = []
    for run in args["_input"].get("nccl") or []:
        if not narrow.narrowable(run):
            continue
        chosen = [
            t
            for t in args["tested"]
            if (t.get("group") or None) == run.get("group") and list(t["nodes"]) == run["nodes"]
        ]
        if not chosen:
            raise AnsibleFilterError(
                "gpudirect.rdma.verify_nccl_narrowing: expected in tested the run of group "
                f"{run.get('group')!r} across {', '.join(run['nodes'])}; got "
                + "; ".join(f"{t.get('group')!r}: {', '.join(t['nodes'])}" for t in args["tested"])
            )
        started.append(narrow.start(run, chosen[0], args["max_runs"]))
    return started


class FilterModule:
    def filters(self):
        return {"verify_nccl_narrowing": verify_nccl_narrowing}
