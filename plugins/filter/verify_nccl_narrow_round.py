"""gpudirect.rdma.verify_nccl_narrow_round: a narrowing after one round of NCCL runs, with its
next round planned."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_nccl_narrow_round
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.2.0
short_description: Record a round of the narrowing of a slow NCCL run, and plan the next
description:
  - Takes a narrowing (an item of P(gpudirect.rdma.verify_nccl_narrowing#filter)'s result, or
    this filter's) and the launcher logs of the runs of its round (its C(next)), in that order.
  - Judges each run as P(gpudirect.rdma.verify_nccl_report#filter) does, against the same floor,
    and returns the narrowing with the nodes it cleared or named slow and its next round in
    C(next); an empty C(next) means it is done, and C(verdict) says what it found.
options:
  _input:
    description: The narrowing.
    type: dict
    required: true
  report:
    description: The verify report (its bandwidth test's port rates make the floor).
    type: dict
    required: true
  plan:
    description: The plan from M(gpudirect.rdma.plan).
    type: dict
    required: true
  logs:
    description: The launcher's log of each run of the round, in the order of C(next).
    type: list
    elements: str
    required: true
  min_busbw_gbps:
    description: As P(gpudirect.rdma.verify_nccl_report#filter)'s.
    type: float
"""

EXAMPLES = r"""
- name: Record the round
  ansible.builtin.set_fact:
    narrowing: >-
      {{ narrowing | gpudirect.rdma.verify_nccl_narrow_round(report=verify_result,
         plan=gpudirect_rdma_plan, logs=round_logs) }}
"""

RETURN = r"""
_value:
  description:
    - The narrowing with the round's runs in C(runs) (C(run), C(round), C(nodes), C(kind) half or
      pair, C(of) (the suspects it tests), C(busbw_judged_gbps), C(floor_gbps), C(passed),
      C(problems)), C(cleared), C(slow), C(across), C(suspects), C(next) and C(verdict).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl_test import judged  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import narrow  # noqa: E402


def verify_nccl_narrow_round(narrowing, report, plan, logs, min_busbw_gbps=None):
    args = validate(
        DOCUMENTATION,
        "gpudirect.rdma.verify_nccl_narrow_round",
        {
            "_input": narrowing,
            "report": report,
            "plan": plan,
            "logs": logs,
            "min_busbw_gbps": min_busbw_gbps,
        },
    )
    state = args["_input"]
    try:
        runs = [
            {"group": run["group"], "nodes": run["nodes"], "log": log}
            for run, log in zip(state["next"], args["logs"], strict=False)
        ]
        entries = judged(args["report"], args["plan"], runs, args["min_busbw_gbps"])
        return narrow.record(state, entries)
    except ValueError as error:
        raise AnsibleFilterError(f"gpudirect.rdma.verify_nccl_narrow_round: {error}") from error
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_nccl_narrow_round: expected a narrowing of "
            f"gpudirect.rdma.verify_nccl_narrowing; {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_nccl_narrow_round": verify_nccl_narrow_round}
