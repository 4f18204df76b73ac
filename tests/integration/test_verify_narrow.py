"""verify_nccl.yml across 8 nodes where the simulator's NCCL stand-in makes every run with one
node slow: the run fails, and the play narrows it down to that node with NCCL runs on halves and
pairs (plugins/plugin_utils/verify/narrow.py), one after another, naming it with each run's
numbers in its output, the report, the JUnit file and the page; nothing of the test is left
behind. (A file of its own, so that it runs beside the other verify files.)"""

from __future__ import annotations

import json

import junitparser

from tests.integration.browser import open_page, page_errors
from tests.integration.test_site import nodes_for, site
from tests.integration.test_verify_nccl import failed, left_behind
from tests.simulator.core import DEFAULT_KNOBS

INVENTORY = "shared-device-roce"
SLOW = "worker-5"


def test_a_slow_node_among_8_is_named_by_halving_the_nccl_run(
    run_playbook, harness, core, knobs, tmp_path
):
    nodes_for(harness, INVENTORY, count=8)
    site(run_playbook, INVENTORY)
    # Every run with worker-5 reaches 60 % of its bus bandwidth: below the floor of 70 % of the
    # rail's 200 Gb/s that the others clear.
    knobs({"nccl": {**DEFAULT_KNOBS["nccl"], "slow": [{"node": SLOW, "factor": 0.6}]}})
    output = failed(run_playbook, INVENTORY, tmp_path, "-e", "verify_nccl_nodes=8")

    report = json.loads((tmp_path / "verify-report.json").read_text())
    [run] = report["nccl"]
    assert len(run["nodes"]) == 8 and run["passed"] is False
    [found] = report["nccl_narrowing"]
    assert found["slow"] == [SLOW] and found["suspects"] == [] and found["across"] == []
    runs = [(r["round"], r["nodes"], r["passed"]) for r in found["runs"]]
    assert runs == [
        (1, ["worker-0", "worker-1", "worker-2", "worker-3"], True),
        (1, ["worker-4", "worker-5", "worker-6", "worker-7"], False),
        (2, ["worker-4", "worker-5"], False),
        (2, ["worker-6", "worker-7"], True),
        (3, ["worker-4", "worker-0"], True),
        (3, ["worker-5", "worker-0"], False),
    ]
    for result in found["runs"]:
        assert (result["busbw_judged_gbps"] < 140) == (SLOW in result["nodes"]), result
    assert f"narrowed down: {SLOW} is slow: every run with it stayed below the floor" in output
    assert "worker-5, worker-0: " in output  # the round's runs, as the play goes
    # The NCCL lines of the report name the slow node with the runs' numbers.
    assert f"found: {SLOW} is slow" in " ".join(report["table"])

    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(tmp_path / "verify-report.xml"))}
    which = suites["gpudirect.rdma verify: which node (NCCL narrowing)"]
    assert (which.tests, which.failures) == (1, 1)
    dom, picture, log = open_page(
        tmp_path / "verify-report.html", "verify-report-narrowing.png", height=2600
    )
    assert page_errors(log) == []
    assert f"slow: {SLOW}" in dom and dom.count("suspect worker-") == 2
    assert picture.stat().st_size > 10_000
    assert left_behind(core) == []
