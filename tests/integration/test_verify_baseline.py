"""verify.yml against the cluster's baseline, on the local control plane: a run recorded with
verify_baseline=record (a ConfigMap and a file beside the report), then one rail of one node
slowed by 30 % in the simulator, still above the fixed floor, which the next run catches against
the baseline, naming the rail and its nodes; the report's JUnit file and page carry the baseline
beside the run. (A file of its own, so that it runs beside the other verify files.)"""

from __future__ import annotations

import json

import junitparser

from tests.integration.browser import open_page, page_errors
from tests.integration.test_site import nodes_for, recap, site
from tests.integration.test_verify import failed_verify, verify
from tests.simulator.core import DEFAULT_KNOBS

INVENTORY = "multi-rail-hgx"
# A fixed floor the slowed rail still clears: only the baseline tells it apart.
FLOOR = ("-e", "verify_min_gbps=100")
SLOWED_RAIL = 3


def test_a_recorded_baseline_catches_one_rail_of_one_node_slowed_by_30_percent(
    run_playbook, harness, core, knobs, tmp_path
):
    nodes_for(harness, INVENTORY)
    site(run_playbook, INVENTORY)
    first = tmp_path / "record"
    recorded = verify(run_playbook, INVENTORY, first, *FLOOR, "-e", "verify_baseline=record")
    assert recap(recorded.stdout)["failed"] == 0
    kept = json.loads((first / "verify-baseline.json").read_text())
    [config_map] = [
        c
        for c in core.list_namespaced_config_map("default").items
        if c.metadata.name == "gpudirect-rdma-verify-baseline"
    ]
    assert json.loads(config_map.data["baseline.json"]) == kept
    pair = kept["pairs"][SLOWED_RAIL]
    assert pair["rail"] == SLOWED_RAIL and pair["bw_average_gbps"] > 150

    # The same cluster again: every rail within the allowed drop of the baseline.
    same = tmp_path / "same"
    assert recap(verify(run_playbook, INVENTORY, same, *FLOOR).stdout)["failed"] == 0
    assert json.loads((same / "verify-report.json").read_text())["baseline"]["passed"] is True

    # One rail of the client's node slowed by 30 %: still above the fixed floor of 100 Gb/s.
    slow = {"node": pair["client_node"], "device": pair["device"], "factor": 0.7}
    knobs({"perftest": {**DEFAULT_KNOBS["perftest"], "slow": [slow]}})
    slowed = tmp_path / "slowed"
    output = failed_verify(run_playbook, INVENTORY, slowed, *FLOOR)
    nodes = f"{pair['server_node']} -> {pair['client_node']}"
    assert f"rail {SLOWED_RAIL} ({nodes}): " in output
    assert "is a drop of 30%, more than 10%" in output
    report = json.loads((slowed / "verify-report.json").read_text())
    assert all(p["passed"] for p in report["pairs"]), "the fixed floor alone passes it"
    failed = [row for row in report["baseline"]["rows"] if not row["passed"]]
    assert [(row["what"], row["nodes"]) for row in failed] == [(f"rail {SLOWED_RAIL}", nodes)]
    assert report["baseline"]["recorded"] == kept["run"]["date"]

    suites = junitparser.JUnitXml.fromfile(str(slowed / "verify-report.xml"))
    [against] = [s for s in suites if "against the baseline" in s.name]
    assert [c.name for c in against if not c.is_passed] == [f"rail {SLOWED_RAIL} ({nodes})"]
    dom, picture, log = open_page(slowed / "verify-report.html", "verify-baseline.png", 2600)
    assert page_errors(log) == []
    assert "Against the baseline of" in dom and "regressed" in dom
    print(f"screenshot: {picture}")
