"""verify.yml end to end on the local control plane: the simulator plays Multus and the kubelet,
runs the pods' own script on a made-up node (sysfs, `nvidia-smi topo -m` from the node's
hardware as the real tool writes it, an ib_write_bw stand-in shaped like real runs) and serves
its logs. A passing pair, a pair below its floor (set, or from the ports' rate), a pair without
GPU memory, eight rails each on the GPU next to its NIC, a NIC no GPU shares a switch with, a
faster fabric that asks for more; the pods are gone after each run. And the test pods of all
example configurations are accepted by the API server as they are."""

from __future__ import annotations

import json

import junitparser
import pytest
from kubernetes import dynamic

from ansible_collections.gpudirect.rdma.plugins.filter.verify_pods import verify_pods
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import REPO_ROOT, api_client
from tests.integration.browser import open_page, page_errors
from tests.integration.helpers import server_side_dry_run
from tests.integration.test_site import TIMEOUTS, nodes_for, recap, site
from tests.simulator.nodes import HARDWARE_ANNOTATION, Hardware, Nic, register_nodes, remove_nodes
from tests.unit.inventories import NAMES, inputs

VERIFY = REPO_ROOT / "playbooks" / "verify.yml"


def verify(run_playbook, inventory, report_dir, *extra, check=True, playbook=VERIFY):
    return run_playbook(
        playbook,
        "-i",
        str(REPO_ROOT / "inventories" / inventory),
        "-e",
        f"@{TIMEOUTS}",
        "-e",
        f"verify_report_dir={report_dir}",
        "-e",
        "verify_timeout=60",
        *extra,
        check=check,
    )


def failed_verify(run_playbook, inventory, report_dir, *extra, playbook=VERIFY) -> str:
    """verify.yml (or playbook), which must fail; its output on one line (wrapped messages
    joined)."""
    result = verify(run_playbook, inventory, report_dir, *extra, check=False, playbook=playbook)
    assert result.returncode != 0, result.stdout[-3000:]
    return " ".join(result.stdout.split())


def verify_pods_left(core) -> list[str]:
    return [
        p.metadata.name
        for p in core.list_pod_for_all_namespaces(
            label_selector="gpudirect.rdma/component=verify"
        ).items
    ]


@pytest.fixture(scope="module")
def shared_device_roce(run_playbook, harness):
    nodes_for(harness, "shared-device-roce")
    site(run_playbook, "shared-device-roce")


def test_a_passing_pair(shared_device_roce, run_playbook, core, tmp_path):
    result = verify(run_playbook, "shared-device-roce", tmp_path, "-e", "verify_min_gbps=150")
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    (pair,) = report["pairs"]
    assert (pair["server_node"], pair["client_node"]) == ("worker-0", "worker-1")
    assert (pair["bw_average_gbps"], pair["gpu_memory"], pair["link_type"], pair["gid_index"]) == (
        180.47,
        "dmabuf",
        "Ethernet",
        3,
    )
    assert "every pair reached its floor (150 Gb/s) with GPU memory (dmabuf)" in result.stdout
    assert (pair["floor_gbps"], pair["floor"]) == (150, "verify_min_gbps")
    # The pods read the fake nodes' 200 Gb/s ports; the pairing as the pod decided it.
    assert (pair["server_port_gbps"], pair["client_port_gbps"]) == (200, 200)
    assert (pair["server_gpu"]["source"], pair["server_gpu"]["relation"]) == ("matrix", "PIX")
    assert "disagreement" not in pair["server_gpu"]
    assert verify_pods_left(core) == []
    # The NCCL settings, measured on the two nodes, for training jobs to take with envFrom.
    settings = core.read_namespaced_config_map("gpudirect-rdma-nccl", "default")
    assert settings.data == {
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_HCA": "=mlx5_0:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106",
    }
    assert settings.metadata.annotations["gpudirect.rdma/measured-on"] == "worker-0,worker-1"
    assert "NCCL_IB_HCA==mlx5_0:1" in result.stdout
    # uninstall's first stage removes it (nothing of verify.yml is left behind).
    removed = run_playbook(
        REPO_ROOT / "tests" / "integration" / "playbooks" / "remove_verify_leftovers.yml"
    )
    assert "ConfigMap default/gpudirect-rdma-nccl" in removed.stdout
    assert not core.list_namespaced_config_map(
        "default", label_selector="gpudirect.rdma/component=verify"
    ).items


def test_a_pair_below_the_threshold_fails_and_the_report_says_why(
    shared_device_roce, run_playbook, core, knobs, tmp_path
):
    knobs({"perftest": {"bw_gbps": 42.5}})
    output = failed_verify(
        run_playbook, "shared-device-roce", tmp_path, "-e", "verify_min_gbps=100"
    )
    assert (
        "GPUDirect RDMA verification failed: rail 0 (worker-0 -> worker-1): "
        "average 42.5 Gb/s is below the floor of 100 Gb/s (verify_min_gbps)" in output
    )
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is False
    assert report["pairs"][0]["problems"] == [
        "average 42.5 Gb/s is below the floor of 100 Gb/s (verify_min_gbps)"
    ]
    assert verify_pods_left(core) == []
    # Without verify_min_gbps the floor is 80% of the 200 Gb/s ports the pods read.
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert (
        "average 42.5 Gb/s is below the floor of 160 Gb/s (80% of the 200 Gb/s port rate "
        "(server side))" in output
    )


def test_a_pair_without_gpu_memory_fails(shared_device_roce, run_playbook, core, knobs, tmp_path):
    knobs({"perftest": {"gpu_memory": "none"}})
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert (
        "client: GPU memory was not used (expected dmabuf): GPUDirect RDMA did not happen" in output
    )
    assert (
        json.loads((tmp_path / "verify-report.json").read_text())["pairs"][0]["bw_average_gbps"]
        == 180.47
    )
    assert verify_pods_left(core) == []


def test_a_client_that_cannot_connect_fails_with_perftests_hint(
    shared_device_roce, run_playbook, core, knobs, tmp_path
):
    knobs({"perftest": {"failure": "connection_refused"}})
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert "the client could not reach the server" in output
    assert verify_pods_left(core) == []


def test_eight_rails_eight_pairs(run_playbook, harness, core, tmp_path):
    nodes_for(harness, "multi-rail-hgx")
    site(run_playbook, "multi-rail-hgx")
    result = verify(run_playbook, "multi-rail-hgx", tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    # NCCL over all eight rails (NCCL_IB_HCA from the ConfigMap), 16 ranks, about 8 x 24 GB/s.
    (run,) = report["nccl"]
    assert run["passed"] and run["devices"] == [f"mlx5_{i}:1" for i in range(8)]
    assert run["ranks"] == 16 and run["max_busbw_gbytes"] > 150
    assert [p["resource"] for p in report["pairs"]] == [
        f"rdma/rdma_shared_device_eth_rail{i}" for i in range(8)
    ]
    assert [p["network"] for p in report["pairs"]] == [f"rdmashared-net-rail{i}" for i in range(8)]
    assert all(p["passed"] for p in report["pairs"])
    # Each rail on the GPU on its NIC's PCIe switch, on both nodes: GPU N next to mlx5_N.
    for side in ("server_gpu", "client_gpu"):
        assert [(p[side]["gpu"], p[side]["nic"], p[side]["relation"]) for p in report["pairs"]] == [
            (i, f"mlx5_{i}", "PIX") for i in range(8)
        ]
    assert len({p["server_gpu"]["bus_id"] for p in report["pairs"]}) == 8
    assert verify_pods_left(core) == []
    # The JUnit file as a JUnit reader reads it; the page as a real browser renders it.
    suite, host, nccl = list(junitparser.JUnitXml.fromfile(str(tmp_path / "verify-report.xml")))
    assert (suite.tests, suite.failures) == (8, 0)
    assert (nccl.tests, nccl.failures) == (1, 0)
    assert (host.tests, host.failures) == (2 * (2 + 3 * 8), 0)
    report_checks = json.loads((tmp_path / "verify-report.json").read_text())["host_checks"]
    assert {f["status"] for f in report_checks} == {"ok"}, "MTU 9000 on every rail, no ACS"
    assert [c.name for c in suite][7] == "rail 7 worker-0 -> worker-1"
    dom, picture, log = open_page(tmp_path / "verify-report.html", "verify-report-hgx.png")
    assert page_errors(log) == []
    assert dom.count("<rect") == 8
    assert dom.count("<tr") == (1 + 8) + (1 + 2 * (2 + 3 * 8)) + (1 + 1), (
        "pairs, host checks, NCCL runs"
    )
    assert "GPU 7 (00000000:88:00.0) PIX to mlx5_7" in dom
    assert picture.stat().st_size > 20_000, "a rendered page, not a blank one"


def nodes_with_one_nic(harness, run_playbook, **nic) -> None:
    """Two fresh nodes whose one RoCE NIC (shared-device-roce's interface) is as told, and
    site.yml run on them."""
    plan = build_plan(inputs("shared-device-roce"))
    remove_nodes(harness)
    register_nodes(
        harness,
        2,
        nfd_labels=False,
        hardware=Hardware(nics=(Nic(plan["groups"][0]["rails"][0]["interface"], "eth", **nic),)),
    )
    site(run_playbook, "shared-device-roce")


def test_a_nic_without_a_gpu_on_its_switch_fails_with_its_hint_unless_allowed(
    run_playbook, harness, core, tmp_path
):
    nodes_with_one_nic(harness, run_playbook, gpu_path="NODE")
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert (
        "server: GPU 0 (00000000:18:00.0) reaches mlx5_0 through NODE (between PCIe host bridges "
        "of one NUMA node): no GPU the pod holds shares a PCIe switch with mlx5_0" in output
    ), output[-3000:]
    assert "set verify_allow_cross_switch: true to accept it" in output
    assert verify_pods_left(core) == []
    allowed = verify(
        run_playbook, "shared-device-roce", tmp_path, "-e", "verify_allow_cross_switch=true"
    )
    assert recap(allowed.stdout)["failed"] == 0
    (pair,) = json.loads((tmp_path / "verify-report.json").read_text())["pairs"]
    assert pair["passed"] is True
    assert pair["client_gpu"]["relation"] == "NODE"
    assert pair["warnings"] and "rail 0 warning: server: GPU 0" in allowed.stdout
    assert verify_pods_left(core) == []


def test_a_node_with_acs_on_fails_the_host_checks_naming_the_bridges_and_the_fix(
    run_playbook, harness, core, tmp_path
):
    nodes_for(harness, "shared-device-roce")
    # worker-1's PCIe switches redirect peer-to-peer requests (ACS on).
    node = core.read_node("worker-1")
    hardware = json.loads(node.metadata.annotations[HARDWARE_ANNOTATION])
    core.patch_node(
        "worker-1",
        {"metadata": {"annotations": {HARDWARE_ANNOTATION: json.dumps({**hardware, "acs": True})}}},
    )
    site(run_playbook, "shared-device-roce")
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert (
        "host worker-1 acs rail 0: ACS redirects peer-to-peer requests on 0000:17:00.0, "
        "0000:17:04.0 between rail 0's GPU and NIC" in output
    ), output[-3000:]
    assert "fix: disable ACS on those bridges in the BIOS" in output
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert all(p["passed"] for p in report["pairs"]), "the bandwidth itself was fine"
    failed = [(f["node"], f["check"]) for f in report["host_checks"] if f["status"] == "failure"]
    assert failed == [("worker-1", "acs")]
    _pairs, host = list(junitparser.JUnitXml.fromfile(str(tmp_path / "verify-report.xml")))
    assert [c.name for c in host if not c.is_passed] == ["worker-1 acs rail 0"]
    assert verify_pods_left(core) == []


def test_without_a_floor_set_a_faster_fabric_asks_for_more(run_playbook, harness, core, tmp_path):
    """The same 180.47 Gb/s that passes on 200 Gb/s ports fails on 400 Gb/s ones: each fabric is
    judged against its own rate, which the pods read from the kernel."""
    nodes_with_one_nic(harness, run_playbook, rate_gbps=400)
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert (
        "average 180.47 Gb/s is below the floor of 320 Gb/s (80% of the 400 Gb/s port rate "
        "(server side))" in output
    ), output[-3000:]
    (pair,) = json.loads((tmp_path / "verify-report.json").read_text())["pairs"]
    assert (pair["server_port_gbps"], pair["floor_gbps"]) == (400, 320)
    assert verify_pods_left(core) == []


def test_each_node_group_is_tested_between_two_of_its_own_nodes(
    run_playbook, harness, core, tmp_path
):
    nodes_for(harness, "node-groups")
    site(run_playbook, "node-groups")
    result = verify(run_playbook, "node-groups", tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0, result.stdout[-3000:]
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    # Each group's NCCL test between its own nodes, with its own published settings.
    assert [run["group"] for run in report["nccl"]] == ["a100", "h100"]
    for run in report["nccl"]:
        assert run["passed"] is True, run["problems"]
        assert run["nodes"] == [f"worker-{run['group']}-0", f"worker-{run['group']}-1"]
        assert run["config_map"] == f"default/gpudirect-rdma-nccl-{run['group']}"
        assert len(run["devices"]) == {"a100": 4, "h100": 8}[run["group"]]
    seen = [(p["group"], p["server_node"], p["client_node"], p["network"]) for p in report["pairs"]]
    assert seen == [
        ("a100", "worker-a100-0", "worker-a100-1", f"rdmashared-net-a100-rail{i}") for i in range(4)
    ] + [
        ("h100", "worker-h100-0", "worker-h100-1", f"example-ipoibnetwork-h100-rail{i}")
        for i in range(8)
    ]
    assert {p["link_type"] for p in report["pairs"] if p["group"] == "h100"} == {"IB"}
    assert "group rail" in result.stdout
    assert verify_pods_left(core) == []


def test_groups_on_two_methods_and_fabrics_are_verified_each_on_its_own(
    run_playbook, harness, core, tmp_path
):
    """inventories/mixed-methods: shared device over RoCE beside SR-IOV legacy over
    InfiniBand; each group's pairs run on its own method's networks and resources."""
    nodes_for(harness, "mixed-methods")
    site(run_playbook, "mixed-methods")
    result = verify(run_playbook, "mixed-methods", tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0, result.stdout[-3000:]
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    assert [run["group"] for run in report["nccl"]] == ["a100", "h100"]
    assert all(run["passed"] for run in report["nccl"]), [r["problems"] for r in report["nccl"]]
    seen = [(p["group"], p["network"], p["link_type"]) for p in report["pairs"]]
    assert seen == [("a100", f"rdmashared-net-a100-rail{i}", "Ethernet") for i in range(4)] + [
        ("h100", f"sriov-ib-network-h100-rail{i}", "IB") for i in range(8)
    ]
    assert verify_pods_left(core) == []


@pytest.mark.parametrize(
    "inventory",
    [
        "host-device-roce",
        "host-device-infiniband",
        "sriov-legacy-roce",
        "sriov-legacy-infiniband",
        "shared-device-infiniband",
        "nic-configuration-roce",
    ],
)
def test_every_configuration_passes_on_topology_correct_pairs(
    inventory, run_playbook, harness, core, tmp_path
):
    """The configurations the tests above do not verify (shared device on RoCE, eight rails and
    the node groups are theirs): each pair on the GPU next to its NIC, the host checks clean,
    the NCCL settings published."""
    nodes_for(harness, inventory)
    site(run_playbook, inventory)
    result = verify(run_playbook, inventory, tmp_path, "-e", "verify_nccl=true")
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    # The NCCL test with the settings just published: over RDMA, with GPUDirect, on every rail.
    plan = build_plan(inputs(inventory))
    (run,) = report["nccl"]
    assert (run["passed"], run["transport"], run["gpudirect"], run["nodes_in_run"]) == (
        True,
        "IB",
        True,
        2,
    ), run["problems"]
    assert run["devices"] == [f"mlx5_{i}:1" for i in range(len(plan["groups"][0]["rails"]))]
    for pair in report["pairs"]:
        for side in ("server_gpu", "client_gpu"):
            assert pair[side]["relation"] == "PIX", (inventory, pair[side])
    assert {f["status"] for f in report["host_checks"]} == {"ok"}, [
        f for f in report["host_checks"] if f["status"] != "ok"
    ]
    fabric = plan["groups"][0]["fabric"]
    for settings in report["nccl_settings"]:
        assert settings["published"] is True
        assert ("NCCL_IB_TC" in settings["env"]) == (fabric == "roce")
    assert verify_pods_left(core) == []


def test_too_few_nodes_is_a_clear_error(run_playbook, harness, tmp_path):
    nodes_for(harness, "shared-device-roce")
    output = failed_verify(
        run_playbook,
        "shared-device-roce",
        tmp_path,
        "-e",
        '{"verify_nodes": ["worker-0", "worker-0"]}',
    )
    assert "the bandwidth test needs two different schedulable nodes" in output


@pytest.mark.parametrize(
    ("inventory", "group"),
    [(name, g["name"]) for name in NAMES for g in build_plan(inputs(name))["groups"]],
)
def test_the_test_pods_of_every_configuration_are_accepted(inventory, group, control_plane):
    plan = build_plan(inputs(inventory))
    servers = verify_pods(plan, role="server", node="worker-0", group=group, gpus=8)
    rails = next(g for g in plan["groups"] if g["name"] == group)["rails"]
    servers[0]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/network-status"] = json.dumps(
        [{"interface": f"net{i + 1}", "ips": [f"10.0.{i}.1"]} for i in range(len(rails))]
    )
    clients = verify_pods(
        plan, role="client", node="worker-1", servers=servers, group=group, gpus=8
    )
    resources = dynamic.DynamicClient(api_client(control_plane.harness_kubeconfig))
    for pod in servers + clients:
        stored = server_side_dry_run(resources, pod)
        container = stored["spec"]["containers"][0]
        assert container["resources"] == pod["spec"]["containers"][0]["resources"]
        assert container["command"] == pod["spec"]["containers"][0]["command"]
        assert stored["spec"]["nodeName"] == pod["spec"]["nodeName"]
