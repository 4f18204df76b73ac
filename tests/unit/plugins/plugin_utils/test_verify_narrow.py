"""Narrowing a slow NCCL run down to its slow node (plugin_utils/verify/narrow.py and its three
filters): the rounds it plans against runs that are slow exactly when they hold a slow node, its
bounds, its verdicts, and the report, JUnit file and page that show it."""

from __future__ import annotations

import junitparser
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_narrow_round import (
    verify_nccl_narrow_round,
)
from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_narrowed import (
    verify_nccl_narrowed,
)
from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_narrowing import (
    verify_nccl_narrowing,
)
from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_report import (
    verify_nccl_report,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import report_files
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import narrow
from tests.simulator import nccl_standin
from tests.unit.inventories import inputs

FLOOR = 100.0


def slow_run(count: int) -> dict:
    """A judged run across count nodes that fell below the floor on bus bandwidth alone."""
    return {
        "nodes": [f"node-{index}" for index in range(count)],
        "passed": False,
        "exit": 0,
        "transport": "IB",
        "gpudirect": True,
        "wrong": 0,
        "nodes_in_run": count,
        "floor_gbps": FLOOR,
        "busbw_judged_gbps": 61.5,
        "problems": ["bus bandwidth 61.5 Gb/s is below the floor"],
    }


def chosen_for(run: dict) -> dict:
    return {
        "group": None,
        "selector": "s",
        "nodes": run["nodes"],
        "gpus": dict.fromkeys(run["nodes"], 8),
    }


def narrowed(count: int, slow: set[str], max_runs: int = 10, across: bool = False) -> dict:
    """The narrowing of a slow run across count nodes, each of its runs slow exactly when it
    holds a node of slow (or, with across, when it spans every node)."""
    run = slow_run(count)
    state = narrow.start(run, chosen_for(run), max_runs)
    rounds = 0
    while state["next"]:
        rounds += 1
        assert rounds <= state["rounds"], "more rounds than its bound"
        entries = []
        for planned in state["next"]:
            bad = bool(slow & set(planned["nodes"])) or (across and len(planned["nodes"]) == count)
            entries.append(
                {
                    "busbw_judged_gbps": 60.0 if bad else 180.0,
                    "floor_gbps": FLOOR,
                    "passed": not bad,
                    "problems": ["below the floor"] if bad else [],
                }
            )
        state = narrow.record(state, entries)
    return state


@pytest.mark.parametrize(
    ("count", "slow", "runs"),
    [
        (8, {"node-5"}, 6),
        (8, {"node-0"}, 6),
        (16, {"node-11"}, 8),
        (5, {"node-4"}, 5),
        (3, {"node-2"}, 3),
        (8, {"node-1", "node-6"}, 10),
    ],
)
def test_the_slow_nodes_are_named_in_a_few_runs_of_at_most_half_the_nodes(count, slow, runs):
    state = narrowed(count, slow)
    assert sorted(state["slow"]) == sorted(slow)
    assert len(state["runs"]) == runs
    assert max(len(r["nodes"]) for r in state["runs"]) <= max(count // 2 + 1, 2)
    assert state["suspects"] == [] and state["stopped"] == ""
    for node in slow:
        [sentence] = [v for v in state["verdict"] if v.startswith(f"{node} is slow")]
        assert "below the floor of 100 Gb/s" in sentence and "60 Gb/s" in sentence


def test_one_slow_node_among_8_is_found_by_halves_then_pairs_beside_a_fast_node():
    state = narrowed(8, {"node-5"})
    shown = [(r["round"], r["kind"], r["nodes"], r["passed"]) for r in state["runs"]]
    assert shown == [
        (1, "half", ["node-0", "node-1", "node-2", "node-3"], True),
        (1, "half", ["node-4", "node-5", "node-6", "node-7"], False),
        (2, "half", ["node-4", "node-5"], False),
        (2, "half", ["node-6", "node-7"], True),
        (3, "pair", ["node-4", "node-0"], True),
        (3, "pair", ["node-5", "node-0"], False),
    ]
    assert state["said"][-2:] == ["node-5, node-0: 60 Gb/s, below the floor", state["verdict"][0]]


def test_halves_that_each_reach_the_floor_put_the_slowness_between_them():
    state = narrowed(8, set(), across=True)
    assert len(state["runs"]) == 2 and state["slow"] == []
    [sentence] = state["verdict"]
    assert sentence.startswith("each half of node-0, node-1, node-2, node-3, node-4, node-5")
    assert "the fabric between them" in sentence


def test_a_narrowing_that_would_need_more_runs_stops_and_says_whom_it_still_suspects():
    state = narrowed(8, {"node-5"}, max_runs=4)
    assert len(state["runs"]) == 4 and state["slow"] == []
    assert state["stopped"] == (
        "stopped after 4 run(s): the next round needs 2 more, beyond verify_nccl_narrow_runs (4)"
    )
    assert state["verdict"] == [f"still suspect: node-4, node-5 ({state['stopped']})"]


def test_without_a_fast_node_a_ring_of_pairs_is_tried_once():
    """Two slow nodes among 4, one in each half: every run holds one, nobody is cleared."""
    state = narrowed(4, {"node-0", "node-2"})
    assert [r["kind"] for r in state["runs"]] == ["half"] * 2 + ["pair"] * 4
    left = [node for suspects in state["suspects"] for node in suspects]
    assert state["slow"] == [] and left == ["node-0", "node-1", "node-2", "node-3"]
    assert state["verdict"] == [
        "still suspect: node-0, node-1, node-2, node-3 (no node known to reach the floor to pair "
        "them with)"
    ]


def test_the_bound_on_rounds_covers_every_narrowing():
    for count in range(3, 33):
        assert (
            narrow.rounds_bound(count, 100)
            >= narrowed(count, {f"node-{count - 1}"}, 100)["runs"][-1]["round"]
        )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"nodes": ["a", "b"]}, "two nodes: no third to tell them apart"),
        ({"transport": "Socket"}, "a socket fallback is no node's slowness"),
        ({"gpudirect": False}, "without GPUDirect"),
        ({"wrong": 3}, "wrong values"),
        ({"exit": 1}, "mpirun failed"),
        ({"nodes_in_run": 2}, "a rank did not start"),
        ({"busbw_judged_gbps": 120.0}, "above the floor: failed for another reason"),
        ({"passed": True}, "passed"),
    ],
)
def test_only_a_run_slow_on_bus_bandwidth_alone_is_narrowed(change, why):
    assert narrow.narrowable(slow_run(8))
    assert not narrow.narrowable({**slow_run(8), **change}), why


def test_a_round_with_fewer_results_than_runs_is_refused():
    run = slow_run(8)
    state = narrow.start(run, chosen_for(run), 10)
    with pytest.raises(ValueError, match=r"expected the 2 run\(s\) of the round .*; got 1"):
        narrow.record(
            state,
            [{"busbw_judged_gbps": 1.0, "floor_gbps": FLOOR, "passed": False, "problems": []}],
        )


# The filters, on launcher logs of the simulator's mpirun stand-in (its table shaped like the
# captured runs in ../shared/real-outputs; the parser is tried on those in test_real_outputs.py).
PLAN = build_plan(inputs("shared-device-roce"))


def launcher_log(nodes: list[str], slow: dict[str, float]) -> str:
    workers = {
        f"{node}.nccl": {"node": node, "gpus": 8, "rails": ["mlx5_0"], "gpudirect": True}
        for node in nodes
    }
    facts = {"workers": workers, "link_layer": "Ethernet"}
    knobs = {"slow": [{"node": n, "factor": f} for n, f in slow.items()]}
    test = {"name": "all_reduce_perf", "b": 1 << 20, "e": 1 << 30, "n": 20}
    hosts = [(host, 8) for host in workers]
    text = nccl_standin._output(facts, knobs, hosts, "IB", False, test)
    return (
        "gpudirect-rdma-verify: nccl output begin\n"
        f"{text}gpudirect-rdma-verify: nccl output end (exit 0)\n"
    )


def test_the_filters_name_the_slow_node_and_the_report_files_show_it(tmp_path):
    nodes = [f"worker-{index}" for index in range(8)]
    slow = {"worker-6": 0.5}
    report = verify_nccl_report(
        {"passed": True, "table": ["pairs"], "pairs": []},
        plan=PLAN,
        runs=[{"group": None, "nodes": nodes, "log": launcher_log(nodes, slow)}],
        min_busbw_gbps=100,
    )
    assert report["passed"] is False
    chosen = [{"group": None, "selector": "s", "nodes": nodes, "gpus": dict.fromkeys(nodes, 8)}]
    [state] = verify_nccl_narrowing(report, tested=chosen, max_runs=10)
    while state["next"]:
        logs = [launcher_log(run["nodes"], slow) for run in state["next"]]
        state = verify_nccl_narrow_round(
            state, report=report, plan=PLAN, logs=logs, min_busbw_gbps=100
        )
    result = verify_nccl_narrowed(report, [state])
    [found] = result["nccl_narrowing"]
    assert found["slow"] == ["worker-6"] and len(found["runs"]) == 6
    assert result["passed"] is False
    assert result["nccl"][0]["problems"][-1].startswith("narrowed down: worker-6 is slow")
    assert any(line.startswith("  found: worker-6 is slow") for line in result["table"])
    assert result["table"][0] == "pairs"

    (tmp_path / "report.xml").write_text(report_files.junit(result))
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(tmp_path / "report.xml"))}
    which = suites["gpudirect.rdma verify: which node (NCCL narrowing)"]
    assert (which.tests, which.failures) == (1, 1)
    [case] = list(which)
    assert "worker-6 is slow" in case.result[0].message
    page = report_files.html(result)
    assert "Which node: all_reduce_perf on worker-0" in page
    assert page.count("suspect worker-") == 2 and "slow: worker-6" in page


def test_nothing_is_narrowed_with_max_runs_0_and_a_run_missing_from_tested_is_named():
    nodes = [f"worker-{index}" for index in range(4)]
    report = verify_nccl_report(
        {"passed": True, "table": [], "pairs": []},
        plan=PLAN,
        runs=[{"group": None, "nodes": nodes, "log": launcher_log(nodes, {"worker-1": 0.5})}],
        min_busbw_gbps=100,
    )
    assert verify_nccl_narrowing(report, tested=[], max_runs=0) == []
    with pytest.raises(
        AnsibleFilterError, match="expected in tested the run of group None across worker-0"
    ):
        verify_nccl_narrowing(report, tested=[], max_runs=10)
    with pytest.raises(AnsibleFilterError, match="max_runs: expected 0 or more; got -1"):
        verify_nccl_narrowing(report, tested=[], max_runs=-1)
