"""verify_nccl.yml end to end on the local control plane: after the bandwidth test, the NCCL
test's Secret, headless Service, a worker pod per node and a launcher pod are created; the
simulator's kubelet runs the launcher's own script with ssh and mpirun stand-ins that answer for
the workers cluster DNS would resolve and print all_reduce_perf output shaped like real runs
(tests/simulator/nccl_standin.py). Runs across 2 and 4 nodes pass (and, in
test_verify.py, on every configuration and in each node group); a socket fallback, channels
without GPUDirect, a low bus bandwidth and wrong values fail with their hints; nothing of the
test is left behind, and its objects pass the API server's validation."""

from __future__ import annotations

import json
import re

import junitparser
import pytest
from kubernetes import dynamic

from ansible_collections.gpudirect.rdma.plugins.filter.verify_nccl_objects import (
    verify_nccl_objects,
)
from ansible_collections.gpudirect.rdma.plugins.lookup.ssh_key import LookupModule
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import REPO_ROOT, api_client
from tests.integration.browser import open_page, page_errors
from tests.integration.helpers import server_side_dry_run
from tests.integration.test_site import nodes_for, recap, site
from tests.integration.test_verify import failed_verify, verify
from tests.simulator.nodes import Hardware, Nic, register_nodes
from tests.unit.inventories import NAMES, inputs

VERIFY_NCCL = REPO_ROOT / "playbooks" / "verify_nccl.yml"
LEFTOVERS = REPO_ROOT / "tests" / "integration" / "playbooks" / "remove_verify_leftovers.yml"


def verify_nccl(run_playbook, inventory, report_dir, *extra, check=True):
    return verify(run_playbook, inventory, report_dir, *extra, check=check, playbook=VERIFY_NCCL)


def failed(run_playbook, inventory, report_dir, *extra) -> str:
    return failed_verify(run_playbook, inventory, report_dir, *extra, playbook=VERIFY_NCCL)


def left_behind(core) -> list[str]:
    """The test's objects still there (its ConfigMaps, for training jobs, are meant to stay)."""
    selector = "gpudirect.rdma/component=verify"
    found = [
        f"Pod {p.metadata.name}"
        for p in core.list_pod_for_all_namespaces(label_selector=selector).items
    ]
    found += [
        f"Service {s.metadata.name}"
        for s in core.list_service_for_all_namespaces(label_selector=selector).items
    ]
    found += [
        f"Secret {s.metadata.name}"
        for s in core.list_namespaced_secret("default").items
        if s.metadata.name == "gpudirect-rdma-verify-nccl-ssh"
    ]
    return found


@pytest.fixture(scope="module")
def shared_device_roce(run_playbook, harness):
    nodes_for(harness, "shared-device-roce")
    site(run_playbook, "shared-device-roce")


def test_a_run_across_two_nodes_passes_with_the_published_settings(
    shared_device_roce, run_playbook, core, tmp_path
):
    result = verify_nccl(run_playbook, "shared-device-roce", tmp_path)
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    (run,) = report["nccl"]
    assert run["nodes"] == ["worker-0", "worker-1"]
    assert (run["ranks"], run["nodes_in_run"], run["transport"], run["gpudirect"]) == (
        16,
        2,
        "IB",
        True,
    )
    assert run["devices"] == ["mlx5_0:1"]
    assert run["config_map"] == "default/gpudirect-rdma-nccl"
    assert run["avg_busbw_gbps"] >= 100
    assert run["largest"]["size"] == 8 << 30
    # No verify_min_busbw_gbps: 70% of the one rail's 200 Gb/s, at the largest size.
    assert (run["floor_gbps"], run["floor_measure"]) == (140, "largest")
    assert run["busbw_judged_gbps"] >= 140
    assert "every NCCL run reached its floor (140 Gb/s bus bandwidth)" in result.stdout
    assert left_behind(core) == []
    # The JUnit file has the run as a test case; the page plots its bus bandwidth per size and
    # opens in Chromium without an error.
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(tmp_path / "verify-report.xml"))}
    nccl = suites["gpudirect.rdma verify: NCCL all_reduce_perf"]
    assert (nccl.tests, nccl.failures) == (1, 0)
    dom, picture, log = open_page(
        tmp_path / "verify-report.html", "verify-report-nccl.png", height=2000
    )
    assert page_errors(log) == []
    assert dom.count('class="busbw"') == 1 and "NCCL runs" in dom
    assert "1 of 1 NCCL run(s) passed" in dom
    assert picture.stat().st_size > 10_000


def test_a_run_across_four_nodes_has_a_rank_per_gpu_of_each(
    shared_device_roce, run_playbook, harness, core, tmp_path
):
    hardware = Hardware(nics=(Nic("ens8f0np0"),))
    register_nodes(harness, 4, nfd_labels=False, hardware=hardware)
    result = verify_nccl(run_playbook, "shared-device-roce", tmp_path, "-e", "verify_nccl_nodes=4")
    assert recap(result.stdout)["failed"] == 0
    (run,) = json.loads((tmp_path / "verify-report.json").read_text())["nccl"]
    assert run["nodes"] == ["worker-0", "worker-1", "worker-2", "worker-3"]
    assert (run["ranks"], run["nodes_in_run"], run["passed"]) == (32, 4, True)
    assert "4 nodes" in result.stdout
    assert left_behind(core) == []


def test_more_nodes_than_the_group_has_is_refused_before_any_pod(
    shared_device_roce, run_playbook, core, tmp_path
):
    output = failed(run_playbook, "shared-device-roce", tmp_path, "-e", "verify_nccl_nodes=99")
    found = re.search(
        r"the NCCL test asks for 99 nodes \(verify_nccl_nodes: 99\); found (\d+) that can run it",
        output,
    )
    assert found, output[-3000:]
    assert f"Set verify_nccl_nodes to at most {found[1]}, or 0 for every eligible node" in output
    assert "Start the bandwidth test server" not in output
    assert left_behind(core) == []


@pytest.mark.parametrize(
    ("knobs_set", "expected"),
    [
        (
            {"transport": "Socket"},
            "NCCL fell back to sockets (NET/Socket), so no RDMA was used",
        ),
        (
            {"gpudirect": False},
            "NCCL's network channels ran without GPUDirect RDMA (no /GDRDMA)",
        ),
        (
            {"busbw_gbytes": 2},
            "is below the floor of 140 Gb/s (70% of 1 rail(s) x 200 Gb/s (the slowest port rate "
            "the bandwidth test read on the group's rails), against the bus bandwidth at the "
            "largest message size): on RoCE, bandwidth collapsing to a fraction of the link is "
            "typical of a fabric without flow control",
        ),
        ({"wrong": 3}, "3 wrong value(s) in the results (#wrong)"),
    ],
    ids=["socket-fallback", "no-gpudirect", "low-busbw", "wrong-values"],
)
def test_a_bad_run_fails_with_its_cause_and_leaves_only_the_settings(
    shared_device_roce, run_playbook, core, knobs, tmp_path, knobs_set, expected
):
    knobs({"nccl": knobs_set})
    output = failed(run_playbook, "shared-device-roce", tmp_path)
    assert "NCCL test failed: worker-0, worker-1: " in output
    assert expected in output
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is False and report["nccl"][0]["passed"] is False
    assert all(pair["passed"] for pair in report["pairs"])  # the bandwidth test itself passed
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(tmp_path / "verify-report.xml"))}
    assert suites["gpudirect.rdma verify: NCCL all_reduce_perf"].failures == 1
    assert left_behind(core) == []
    # The settings the bandwidth test measured stay for training jobs.
    assert core.read_namespaced_config_map("gpudirect-rdma-nccl", "default").data


@pytest.mark.parametrize(
    ("inventory", "group"),
    [(name, g["name"]) for name in NAMES for g in build_plan(inputs(name))["groups"]],
)
def test_the_nccl_test_objects_of_every_configuration_are_accepted(inventory, group, control_plane):
    plan = build_plan(inputs(inventory))
    key = LookupModule().run([])[0]
    nodes = ["worker-0", "worker-1"]
    objects = verify_nccl_objects(
        plan, nodes=nodes, gpus=dict.fromkeys(nodes, 8), ssh_key=key, group=group
    )
    resources = dynamic.DynamicClient(api_client(control_plane.harness_kubeconfig))
    for obj in objects:
        stored = server_side_dry_run(resources, obj)
        if obj["kind"] == "Pod":
            container = stored["spec"]["containers"][0]
            assert container["command"] == obj["spec"]["containers"][0]["command"]
            assert container.get("resources", {}).get("limits") == (
                obj["spec"]["containers"][0].get("resources", {}).get("limits")
            )
            assert stored["spec"]["nodeName"] == obj["spec"]["nodeName"]
        if obj["kind"] == "Service":
            assert stored["spec"]["clusterIP"] == "None"


def test_kept_pods_service_and_key_go_with_uninstalls_first_stage(
    shared_device_roce, run_playbook, core, tmp_path
):
    result = verify_nccl(
        run_playbook, "shared-device-roce", tmp_path, "-e", "verify_keep_pods=true"
    )
    assert recap(result.stdout)["failed"] == 0
    kept = left_behind(core)
    assert {
        "Secret gpudirect-rdma-verify-nccl-ssh",
        "Service gpudirect-rdma-verify-nccl",
        "Pod gpudirect-rdma-verify-nccl-0",
        "Pod gpudirect-rdma-verify-nccl-1",
        "Pod gpudirect-rdma-verify-nccl-launcher",
    } <= set(kept), kept
    removed = run_playbook(LEFTOVERS)
    for name in (
        "Secret default/gpudirect-rdma-verify-nccl-ssh",
        "Service default/gpudirect-rdma-verify-nccl",
    ):
        assert name in removed.stdout
    assert left_behind(core) == []


def test_somebody_elses_secret_of_that_name_is_neither_overwritten_nor_removed(
    shared_device_roce, run_playbook, core, tmp_path
):
    theirs = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "gpudirect-rdma-verify-nccl-ssh", "namespace": "default"},
        "stringData": {"mine": "keep me"},
    }
    core.create_namespaced_secret("default", theirs)
    try:
        output = failed(run_playbook, "shared-device-roce", tmp_path)
        assert "Secret default/gpudirect-rdma-verify-nccl-ssh" in output
        assert "somebody else" in output or "not created by" in output, output[-2000:]
        kept = core.read_namespaced_secret("gpudirect-rdma-verify-nccl-ssh", "default")
        assert list(kept.data) == ["mine"]
        assert left_behind(core) == ["Secret gpudirect-rdma-verify-nccl-ssh"]
        assert "Set gpudirect_rdma_take_over=true" in output
        # Asked to, the role takes it over, and it then goes with the test's pods.
        result = verify_nccl(
            run_playbook, "shared-device-roce", tmp_path, "-e", "gpudirect_rdma_take_over=true"
        )
        assert recap(result.stdout)["failed"] == 0
        assert left_behind(core) == []
        core.create_namespaced_secret("default", theirs)  # for the finally below
    finally:
        core.delete_namespaced_secret("gpudirect-rdma-verify-nccl-ssh", "default")
