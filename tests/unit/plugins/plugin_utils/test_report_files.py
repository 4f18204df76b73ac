"""The verification report as JUnit XML (read back with junitparser, a JUnit reader as CI
systems use) and as one self-contained HTML page (parsed; nothing it would fetch). The page in
a real browser is tests/integration/test_report_browser.py's."""

from __future__ import annotations

from html.parser import HTMLParser

import junitparser
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.verify_files import verify_files
from ansible_collections.gpudirect.rdma.plugins.filter.verify_report import verify_report
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.about import collection_version
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import REPO_ROOT
from tests.unit.inventories import inputs
from tests.unit.plugins.plugin_utils.test_verify import (
    HGX_CROSS,
    HGX_NICS,
    hgx_logs,
    pod_log,
    with_fact,
)


def hgx_report(cross=False, allow=False) -> dict:
    """The HGX pair; cross: the client's first two rails on no GPU's switch (NODE)."""
    plan = build_plan(inputs("multi-rail-hgx"))
    return verify_report(
        hgx_logs(client_topology=HGX_CROSS if cross else None),
        plan=plan,
        pairs=[["worker-0", "worker-1"]],
        min_gbps=100,
        allow_cross_switch=allow,
    )


def write(tmp_path, text: str, name: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_junit_has_a_case_per_pair_and_a_failure_per_failed_pair(tmp_path):
    report = hgx_report(cross=True)
    xml = junitparser.JUnitXml.fromfile(
        str(write(tmp_path, verify_files(report)["junit"], "r.xml"))
    )
    suite, _host_checks = list(xml)
    cases = list(suite)
    assert suite.tests == 8 and suite.failures == 2
    assert [c.name for c in cases][:2] == [
        "rail 0 worker-0 -> worker-1",
        "rail 1 worker-0 -> worker-1",
    ]
    assert {c.classname for c in cases} == {"gpudirect.rdma.bandwidth"}
    failed = [c for c in cases if not c.is_passed]
    assert [c.name.split()[1] for c in failed] == ["0", "1"]
    (failure,) = failed[0].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message.startswith(
        "client: GPU 0 (00000000:18:00.0) reaches mlx5_0 through NODE"
    )
    assert "server: GPU 0 (00000000:18:00.0) PIX to mlx5_0" in cases[0].system_out
    assert "bw_average_gbps: 180.47" in cases[2].system_out
    assert {p.name: p.value for p in suite.properties()}["min_gbps"] == "100.0"


RUN = {
    "date": "2026-12-04T14:00:00Z",
    "cluster": "https://api.rack7.example:6443",
    "inventory": ["/srv/inventories/rack7"],
    "versions": {"nvidia-network-operator": "nvidia-network-operator.v26.4.1"},
}


def test_the_report_says_when_where_what_and_with_which_versions(tmp_path):
    plan = build_plan(inputs("multi-rail-hgx"))
    report = verify_report(
        hgx_logs(), plan=plan, pairs=[["worker-0", "worker-1"]], min_gbps=100, run=RUN
    )
    run = report["run"]
    assert run["versions"] == {
        "gpudirect.rdma": collection_version(),
        "nvidia-network-operator": "nvidia-network-operator.v26.4.1",
    }
    assert collection_version() == yaml.safe_load((REPO_ROOT / "galaxy.yml").read_text())["version"]
    assert run["groups"] == [
        {
            "name": None,
            "method": "shared_device",
            "fabric": "roce",
            "nodes": ["worker-0", "worker-1"],
        }
    ]
    assert report["heading"] == [
        f"run: 2026-12-04T14:00:00Z, cluster https://api.rack7.example:6443, inventory "
        f"/srv/inventories/rack7, gpudirect.rdma {collection_version()}, "
        "nvidia-network-operator nvidia-network-operator.v26.4.1",
        "shared_device over roce (worker-0, worker-1)",
        "",
    ]
    files = verify_files(report)
    suite = list(junitparser.JUnitXml.fromfile(str(write(tmp_path, files["junit"], "r.xml"))))[0]
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["date"] == "2026-12-04T14:00:00Z"
    assert properties["cluster"] == "https://api.rack7.example:6443"
    assert properties["version nvidia-network-operator"] == "nvidia-network-operator.v26.4.1"
    assert "cluster https://api.rack7.example:6443" in files["html"]
    # One unit for bandwidth, and no column a duration run does not measure.
    assert "GB/s" not in files["html"] and "peak" not in " ".join(report["table"])


def test_junit_of_node_groups_names_the_group_in_the_class(tmp_path):
    plan = build_plan(inputs("node-groups"))
    logs = {}
    for group, rails in (("a100", 4), ("h100", 8)):
        for role in ("server", "client"):
            fixture = f"roce_dmabuf_{role}"
            logs[f"gpudirect-rdma-verify-{group}-{role}"] = pod_log(
                [(HGX_NICS[r], r, fixture, "PIX") for r in range(rails)], role=role
            )
    report = verify_report(logs, plan=plan, pairs=[["a0", "a1"], ["h0", "h1"]], min_gbps=100)
    xml = junitparser.JUnitXml.fromfile(
        str(write(tmp_path, verify_files(report)["junit"], "g.xml"))
    )
    pairs, host = list(xml)
    cases = list(pairs)
    assert len(cases) == 12 and all(c.is_passed for c in cases)
    assert host.tests == 2 * (3 + 3 * 4) + 2 * (3 + 3 * 8), "per node: 3 checks and 3 per rail"
    assert cases[0].classname == "gpudirect.rdma.bandwidth.a100"
    assert cases[-1].name == "group h100 rail 7 h0 -> h1"


class Page(HTMLParser):
    """What a browser would fetch or run, and the page's structure."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.fetches: list[str] = []
        self.rows = 0
        self.bars = 0
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.fetches.append(tag)
        self.fetches += ["src"] if "src" in attrs else []
        self.links += [attrs["href"]] if tag == "a" else []
        self.rows += tag == "tr"
        self.bars += tag == "rect"


def test_the_page_is_self_contained_with_the_pairs_a_chart_and_the_findings():
    report = hgx_report(cross=True, allow=True)
    page_text = verify_files(report, title="HGX rack 7")["html"]
    page = Page()
    page.feed(page_text)
    page.close()
    assert page.fetches == [], "a page opened without network fetches nothing"
    assert page_text.startswith("<!DOCTYPE html>")
    assert "<title>HGX rack 7</title>" in page_text
    assert page.rows == 1 + 1 + 1 + 8 + 1 + 54, (
        "the run's node groups, the pairs, then host checks: a header and a row each"
    )
    assert page.bars == 8, "a bar per pair"
    assert "passed; floor 100 Gb/s (verify_min_gbps);" in page_text
    assert page_text.count('<line class="floor"') == 8, "a floor mark per pair"
    assert "GPU 0 (00000000:18:00.0) NODE to mlx5_0" in page_text
    assert "8 of 8 pair(s) passed" in page_text and "cross-switch pairs allowed" in page_text
    assert '<ul class="warnings"><li>client: GPU 0' in page_text
    assert "<h2>Host checks</h2><p>54 of 54 passed.</p>" in page_text
    assert page.links == [], "checks that passed need no reading"


def test_junit_has_a_case_per_host_check_and_fails_the_failed_ones(tmp_path):
    logs = hgx_logs()
    logs["gpudirect-rdma-verify-client"] = with_fact(
        logs["gpudirect-rdma-verify-client"],
        "rail2-acs",
        "0000:39:00.0  SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+",
    )
    plan = build_plan(inputs("multi-rail-hgx"))
    report = verify_report(logs, plan=plan, pairs=[["worker-0", "worker-1"]], min_gbps=100)
    xml = junitparser.JUnitXml.fromfile(
        str(write(tmp_path, verify_files(report)["junit"], "h.xml"))
    )
    pairs, host = list(xml)
    assert (pairs.tests, pairs.failures) == (8, 0)
    assert (host.tests, host.failures) == (54, 1)
    (failed,) = [c for c in host if not c.is_passed]
    assert (failed.classname, failed.name) == ("gpudirect.rdma.host.acs", "worker-1 acs rail 2")
    assert "ECAP_ACS+0x6.w=0000" in failed.result[0].text
    assert "see: https://docs.nvidia.com/deeplearning/nccl" in failed.result[0].text
    page = Page()
    page.feed(verify_files(report)["html"])
    assert page.fetches == []
    assert page.links == [
        "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
        "#pci-access-control-services-acs"
    ], "a link to read, opened only when clicked"


def test_text_from_the_cluster_is_escaped():
    report = hgx_report()
    report["pairs"][0]["problems"] = ["<script>alert(1)</script> & more"]
    report["pairs"][0]["passed"] = False
    page_text = verify_files(report)["html"]
    assert "<script>" not in page_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page_text
    # The template escapes its own words too.
    assert "<th>server -&gt; client</th>" in page_text
    assert "&lt;script&gt;" in verify_files(report)["junit"]


def test_not_a_report_is_a_clear_error():
    with pytest.raises(
        AnsibleFilterError, match="expected the report of gpudirect.rdma.verify_report"
    ):
        verify_files({"pairs": [{"rail": 0}]})
    with pytest.raises(AnsibleFilterError, match="_input"):
        verify_files("a string")
