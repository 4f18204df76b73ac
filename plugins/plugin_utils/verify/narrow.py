"""Which node makes a slow NCCL run slow (pure: a narrowing's state in, its next state out; the
role runs the tests between rounds).

A run across N nodes that fell below its floor only on bus bandwidth (RDMA, GPUDirect, no wrong
values, every rank started) is narrowed down in rounds:

- a set of four or more suspects is halved, and each half runs on its own: a half that reaches
  the floor clears its nodes, a slow half is halved again; when every half of a set reaches the
  floor, the slowness shows only across them (the fabric between, not one node);
- a set of two or three suspects is paired node by node with a node that reached the floor: a
  suspect whose pair stays slow is named;
- without a node known to reach the floor, the suspects are paired among themselves in a ring,
  each in two runs: a node in a run that reached the floor is cleared, and a node whose runs were
  all slow beside one that was cleared is named.

The runs of a round are run one after another (they take the same pods' names), at most
`max_runs` runs in all: a round that would go beyond stops the narrowing with what it knows. For
one slow node among 8 it takes 6 runs (2 halves of 4, 2 of 2, 2 pairs), among 16 it takes 8.
"""

from __future__ import annotations

import math

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl import SOCKET

HALF = "half"
PAIR = "pair"


def narrowable(run: dict) -> bool:
    """A judged NCCL run (nccl_test.run_report's entry) worth narrowing: it failed, across three
    or more nodes, on RDMA with GPUDirect, with no wrong value, every rank started and mpirun's exit
    0, so that its bus bandwidth alone fell below the floor."""
    busbw = run.get("busbw_judged_gbps")
    return (
        not run["passed"]
        and len(run["nodes"]) >= 3
        and run.get("exit") == 0
        and run.get("transport") not in (None, SOCKET)
        and run.get("gpudirect") is not False
        and not run.get("wrong")
        and run.get("nodes_in_run") in (None, len(run["nodes"]))
        and busbw is not None
        and busbw < run["floor_gbps"]
    )


def rounds_bound(nodes: int, max_runs: int) -> int:
    """The most rounds a narrowing of that many nodes can take: the halvings, a ring, the pairs
    (each round runs at least once, so never more than max_runs)."""
    return max(0, min(max_runs, math.ceil(math.log2(max(nodes, 2))) + 2))


def start(run: dict, tested: dict, max_runs: int) -> dict:
    """The narrowing of a slow run (narrowable): its first round planned. tested: the group's NCCL
    test as the role chose it (group, selector, nodes, gpus per node)."""
    nodes = list(run["nodes"])
    state = {
        "group": run.get("group"),
        "nodes": nodes,
        "floor_gbps": run["floor_gbps"],
        "busbw_judged_gbps": run["busbw_judged_gbps"],
        "max_runs": max_runs,
        "rounds": rounds_bound(len(nodes), max_runs),
        "selector": tested["selector"],
        "gpus": {node: tested["gpus"][node] for node in nodes},
        "suspects": [nodes],
        "cleared": [],
        "slow": [],
        "across": [],
        "runs": [],
        "next": [],
        "ringed": False,
        "said": [],
        "stopped": "",
        "verdict": [],
    }
    return _planned(state)


def _run(state: dict, nodes: list[str], kind: str, of: list[str], reference=None) -> dict:
    """A run of the next round, with what the role's NCCL test takes (group, selector, nodes,
    gpus) and what it tests: a half of the suspects `of`, or the pair of suspect of[0] and
    reference."""
    return {
        "group": state["group"],
        "selector": state["selector"],
        "nodes": nodes,
        "gpus": {node: state["gpus"][node] for node in nodes},
        "kind": kind,
        "of": of,
        "reference": reference,
    }


def _round(state: dict) -> list[dict]:
    """The next round's runs: the halves of every set of four or more suspects, and the smaller
    sets' suspects each beside a cleared node; without one, and nothing to halve, a ring of the
    suspects (once: a ring that clears nobody leaves them suspect)."""
    cleared = state["cleared"]
    runs, small = [], []
    for suspects in state["suspects"]:
        if len(suspects) >= 4:
            half = len(suspects) // 2
            runs += [
                _run(state, suspects[:half], HALF, suspects),
                _run(state, suspects[half:], HALF, suspects),
            ]
        else:
            small.append(suspects)
    if cleared:
        for suspects in small:
            runs += [_run(state, [node, cleared[0]], PAIR, [node], cleared[0]) for node in suspects]
        return runs
    if runs:
        return runs  # a halving may clear a node to pair the small sets with next round
    ring = [node for suspects in small for node in suspects]
    if len(ring) < 3 or state["ringed"]:
        return []
    beside = ring[1:] + ring[:1]
    return [
        _run(state, [node, other], PAIR, [node], other)
        for node, other in zip(ring, beside, strict=True)
    ]


def _planned(state: dict) -> dict:
    """The state with its next round, or with its verdict when there is none (nothing left to
    tell apart, or beyond max_runs)."""
    runs = _round(state) if state["suspects"] else []
    if runs and len(state["runs"]) + len(runs) > state["max_runs"]:
        stopped = (
            f"stopped after {len(state['runs'])} run(s): the next round needs {len(runs)} more, "
            f"beyond verify_nccl_narrow_runs ({state['max_runs']})"
        )
        verdict = _verdict(state, stopped)
        return {
            **state,
            "next": [],
            "stopped": stopped,
            "verdict": verdict,
            "said": [*state["said"], *verdict],
        }
    if runs:
        ring = not state["cleared"] and all(run["kind"] == PAIR for run in runs)
        return {**state, "next": runs, "ringed": state["ringed"] or ring}
    verdict = _verdict(state, "")
    return {**state, "next": [], "verdict": verdict, "said": [*state["said"], *verdict]}


def record(state: dict, entries: list[dict]) -> dict:
    """The state after its round (state["next"]) ran: entries are the judged runs
    (nccl_test.run_report), in the round's order."""
    runs = state["next"]
    if len(entries) != len(runs):
        raise ValueError(
            f"expected the {len(runs)} run(s) of the round ({_names(runs)}); got {len(entries)}"
        )
    number = len(state["runs"])
    done = [
        {
            "round": 1 + max([r["round"] for r in state["runs"]] or [0]),
            "run": number + index + 1,
            "nodes": run["nodes"],
            "kind": run["kind"],
            "of": run["of"],
            "busbw_judged_gbps": entry.get("busbw_judged_gbps"),
            "floor_gbps": entry["floor_gbps"],
            "passed": entry["passed"],
            "problems": entry["problems"],
        }
        for index, (run, entry) in enumerate(zip(runs, entries, strict=True))
    ]
    cleared = list(state["cleared"])
    for result in done:
        cleared += [node for node in result["nodes"] if result["passed"] and node not in cleared]
    slow = list(state["slow"])
    across = list(state["across"])
    suspects = []
    halved = []
    for run, result in zip(runs, done, strict=True):
        if run["kind"] == HALF:
            if run["of"] not in halved:
                halved.append(run["of"])
            if not result["passed"]:
                suspects.append(run["nodes"])
            continue
        node = run["of"][0]
        if node in cleared or node in slow:
            continue
        if run["reference"] in cleared:
            slow.append(node)
        elif [node] not in suspects:
            suspects.append([node])
    for whole in halved:
        if all(result["passed"] for result in done if result["of"] == whole):
            across.append(whole)
    tested = {node for run in runs for node in run["of"]}
    suspects += [s for s in state["suspects"] if not tested & set(s)]
    suspects = [[n for n in s if n not in cleared and n not in slow] for s in suspects]
    state = {
        **state,
        "runs": [*state["runs"], *done],
        "said": [
            f"{', '.join(r['nodes'])}: {_gbps(r)}, "
            + ("pass" if r["passed"] else "below the floor")
            for r in done
        ],
        "cleared": cleared,
        "slow": slow,
        "across": across,
        "suspects": [s for s in suspects if s],
        "next": [],
    }
    return _planned(state)


def _names(runs: list[dict]) -> str:
    return "; ".join(", ".join(run["nodes"]) for run in runs)


def _gbps(result: dict) -> str:
    busbw = result["busbw_judged_gbps"]
    return "no result" if busbw is None else f"{busbw:g} Gb/s"


def _verdict(state: dict, stopped: str) -> list[str]:
    """What the narrowing found, a sentence each, with the numbers of the runs that show it."""
    floor = f"the floor of {state['floor_gbps']:g} Gb/s"
    found = []
    for node in state["slow"]:
        with_it = [r for r in state["runs"] if node in r["nodes"] and not r["passed"]]
        shown = "; ".join(f"{', '.join(r['nodes'])}: {_gbps(r)}" for r in with_it)
        found.append(
            f"{node} is slow: every run with it stayed below {floor} ({shown}), and each node it "
            "ran beside reached the floor without it: look at its NICs' link rate and errors "
            "(ibstat, the port counters), its PCIe links (lspci -vv: width and speed) and its "
            "GPUs' clocks"
        )
    for whole in state["across"]:
        halves = [r for r in state["runs"] if r["kind"] == HALF and r["of"] == whole]
        shown = "; ".join(f"{', '.join(r['nodes'])}: {_gbps(r)}" for r in halves)
        found.append(
            f"each half of {', '.join(whole)} reached {floor} on its own ({shown}): the slowness "
            "shows only when they run together, so it lies in the fabric between them (spine "
            "links, routing, congestion, flow control), not in one node"
        )
    left = [node for suspects in state["suspects"] for node in suspects]
    if left:
        why = stopped or "no node known to reach the floor to pair them with"
        found.append(f"still suspect: {', '.join(left)} ({why})")
    elif stopped:
        found.append(stopped)
    if not found:
        found.append(f"every run of the narrowing reached {floor}: the slowness did not come back")
    return found


def summary(state: dict) -> dict:
    """What the report keeps of a finished narrowing: the slow run, the runs with their numbers,
    the nodes named slow, the sets whose halves were fast, the suspects left, the verdict."""
    keep = ("nodes", "floor_gbps", "busbw_judged_gbps", "max_runs", "runs", "slow", "across")
    return {
        **({"group": state["group"]} if state["group"] is not None else {}),
        **{key: state[key] for key in keep},
        "suspects": [node for suspects in state["suspects"] for node in suspects],
        "stopped": state["stopped"],
        "verdict": state["verdict"],
    }


def table(narrowings: list[dict]) -> list[str]:
    """The narrowings (summary's) as lines: the slow run, each run of the narrowing, the verdict."""
    lines = []
    for found in narrowings:
        where = (f"group {found['group']}: " if "group" in found else "") + (
            f"{len(found['nodes'])} nodes at {found['busbw_judged_gbps']:g} Gb/s, below the floor "
            f"of {found['floor_gbps']:g} Gb/s"
        )
        lines += ["", f"Which node (NCCL runs narrowing it down), {where}"]
        lines.append(f"{'run':>4} {'round':>6}  {'tests':<12}{'busbw Gb/s':>11}  result  nodes")
        for run in found["runs"]:
            busbw = "-" if run["busbw_judged_gbps"] is None else f"{run['busbw_judged_gbps']:g}"
            tests = "a half" if run["kind"] == HALF else f"{run['of'][0]}"
            lines.append(
                f"{run['run']:>4} {run['round']:>6}  {tests:<12}{busbw:>11}  "
                f"{'pass' if run['passed'] else 'FAIL':<6}  {', '.join(run['nodes'])}"
            )
        lines += [f"  found: {sentence}" for sentence in found["verdict"]]
    return lines


def with_narrowings(report: dict, narrowings: list[dict]) -> dict:
    """The verify report with its NCCL runs' narrowings (summary's): kept under nccl_narrowing,
    their lines after the NCCL lines, and each verdict among its run's problems. Whether the
    report passed does not change: the run failed already."""
    lines = table(narrowings)
    runs = []
    for run in report.get("nccl") or []:
        found = [
            n
            for n in narrowings
            if n["nodes"] == run["nodes"] and n.get("group") == run.get("group")
        ]
        runs.append(
            {
                **run,
                "problems": [
                    *run["problems"],
                    *(f"narrowed down: {v}" for n in found for v in n["verdict"]),
                ],
            }
            if found
            else run
        )
    return {
        **report,
        "nccl": runs,
        "nccl_narrowing": list(narrowings),
        "nccl_table": [*report.get("nccl_table", []), *lines],
        "table": [*report["table"], *lines],
    }
