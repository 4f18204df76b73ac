"""The cluster's verify baseline (plugin_utils/verify/baseline.py, the verify_baseline filter):
kept from a report made from captured ib_write_bw outputs, read back, a later run judged against
it, and the comparison in the report's JUnit file and page."""

from __future__ import annotations

import copy
import json

import junitparser

from ansible_collections.gpudirect.rdma.plugins.filter.verify_baseline import verify_baseline
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.report_files import html, junit
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify import baseline
from tests.unit.inventories import inputs
from tests.unit.plugins.plugin_utils.test_report_files import hgx_report


def test_a_report_kept_in_its_config_map_reads_back_as_kept():
    report = hgx_report()
    plan = build_plan(inputs("multi-rail-hgx"))
    config_map = verify_baseline(report, plan=plan)
    assert (config_map["kind"], config_map["metadata"]["name"]) == ("ConfigMap", baseline.NAME)
    assert config_map["metadata"]["namespace"] == plan["network_namespace"]
    assert config_map["metadata"]["labels"]["gpudirect.rdma/component"] == "verify"
    kept = baseline.from_config_map(config_map)
    assert kept == json.loads(json.dumps(baseline.kept(report)))
    pair = kept["pairs"][0]
    assert set(pair) <= set(baseline.PAIR_KEYS)
    assert pair["server_gpu"]["nic"] and pair["bw_average_gbps"] > 0
    assert baseline.from_config_map({"data": {}}) is None and baseline.from_config_map(None) is None


def test_a_run_against_the_baseline_and_the_report_that_shows_it(tmp_path):
    report = hgx_report()
    kept = baseline.kept(report)
    later = copy.deepcopy(report)
    later["pairs"][3]["bw_average_gbps"] = round(report["pairs"][3]["bw_average_gbps"] * 0.7, 2)
    comparison = baseline.against(kept, later, 10)
    assert comparison["passed"] is False and comparison["recorded"] == kept["run"].get("date")
    later["baseline"] = comparison
    (tmp_path / "report.xml").write_text(junit(later))
    suites = junitparser.JUnitXml.fromfile(str(tmp_path / "report.xml"))
    [against] = [s for s in suites if "against the baseline" in s.name]
    failed = [case.name for case in against if not case.is_passed]
    assert failed == ["rail 3 (worker-0 -> worker-1)"]
    page = html(later)
    assert "Against the baseline of" in page and "regressed" in page and "-30%" in page
    assert "Against the baseline" not in html(report)
