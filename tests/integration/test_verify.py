"""verify.yml end to end on the local control plane: the simulator plays Multus and the kubelet,
runs the pods' own script on a made-up node (sysfs, `nvidia-smi topo -m` from the node's
hardware as the real tool writes it, an ib_write_bw stand-in shaped like real runs) and serves
its logs. A passing pair, a pair below its floor (set, or from the ports' rate), a pair without
GPU memory, a NIC no GPU shares a switch with, ACS on, a faster fabric that asks for more; the
pods are gone after each run. And the test pods of all example configurations are accepted by
the API server as they are. Eight rails and node groups: test_verify_groups.py; the other
example configurations: test_verify_configurations.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import junitparser
import pytest
from kubernetes import dynamic

from ansible_collections.gpudirect.rdma.plugins.filter.verify_pods import verify_pods
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import REPO_ROOT, api_client
from tests.integration.helpers import playbook_command, playbook_env, server_side_dry_run, wait_for
from tests.integration.test_site import SIMULATED, nodes_for, recap, site
from tests.simulator.nodes import HARDWARE_ANNOTATION, Hardware, Nic, register_nodes, remove_nodes
from tests.unit.inventories import NAMES, inputs

VERIFY = REPO_ROOT / "playbooks" / "verify.yml"


def verify(run_playbook, inventory, report_dir, *extra, check=True, playbook=VERIFY):
    return run_playbook(
        playbook,
        "-i",
        str(REPO_ROOT / "inventories" / inventory),
        "-e",
        f"@{SIMULATED}",
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
    # What the run was: when, on which cluster, from which inventory, with which versions.
    run = report["run"]
    assert run["cluster"].startswith("https://127.0.0.1:") and run["date"].endswith("Z")
    assert run["inventory"] == [str(REPO_ROOT / "inventories" / "shared-device-roce")]
    assert set(run["versions"]) == {
        "gpudirect.rdma",
        "nfd",
        "sriov-network-operator",
        "nvidia-network-operator",
        "gpu-operator-certified",
    }, run["versions"]
    assert run["groups"] == [
        {
            "name": None,
            "method": "shared_device",
            "fabric": "roce",
            "nodes": ["worker-0", "worker-1"],
        }
    ]
    assert f"run: {run['date']}, cluster {run['cluster']}, inventory " in result.stdout
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


def test_a_gpu_pod_that_sees_the_nics_without_asking_is_reported(
    shared_device_roce, run_playbook, core, knobs, tmp_path
):
    """The simulator plays GPU Operator 26.3.0 to 26.3.2 (every ibverbs device in every GPU
    container): the test pods' init container, with a GPU and no RDMA resource, sees them. With
    the shared device plugin that is a warning; the run still passes."""
    result = verify(run_playbook, "shared-device-roce", tmp_path)
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert {
        (f["node"], f["status"]) for f in report["host_checks"] if f["check"] == "rdma-isolation"
    } == {("worker-0", "ok"), ("worker-1", "ok")}
    knobs({"gpu_operator": {"ibverbs_in_gpu_pods": True}})
    result = verify(run_playbook, "shared-device-roce", tmp_path)
    assert recap(result.stdout)["failed"] == 0
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True
    found = [f for f in report["host_checks"] if f["check"] == "rdma-isolation"]
    assert {(f["node"], f["status"]) for f in found} == {
        ("worker-0", "warning"),
        ("worker-1", "warning"),
    }
    assert found[0]["detail"].startswith(
        "a container with a GPU and no RDMA resource sees /dev/infiniband (rdma_cm uverbs0)"
    )
    assert "host worker-1 rdma-isolation warning: a container with a GPU" in " ".join(
        result.stdout.split()
    )
    assert verify_pods_left(core) == []


def test_a_client_that_cannot_connect_fails_with_perftests_hint(
    shared_device_roce, run_playbook, core, knobs, tmp_path
):
    knobs({"perftest": {"failure": "connection_refused"}})
    output = failed_verify(run_playbook, "shared-device-roce", tmp_path)
    assert "the client could not reach the server" in output
    assert verify_pods_left(core) == []


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


def test_too_few_nodes_is_a_clear_error(run_playbook, harness, tmp_path):
    nodes_for(harness, "shared-device-roce")
    output = failed_verify(
        run_playbook,
        "shared-device-roce",
        tmp_path,
        "-e",
        '{"verify_nodes": ["worker-0", "worker-0"]}',
    )
    assert (
        "verify_nodes: got worker-0, worker-0; expected two different node names, server first, "
        "among the selected nodes: worker-0, worker-1"
    ) in output


def test_chosen_nodes_are_checked_before_any_pod_and_a_comma_string_is_taken(
    shared_device_roce, run_playbook, core, tmp_path
):
    output = failed_verify(
        run_playbook, "shared-device-roce", tmp_path, "-e", "verify_nodes=worker-1,worker-9"
    )
    assert (
        "verify_nodes: node worker-9 is not one of the selected nodes (no such node, or not "
        "selected by the node selector); they are: worker-0, worker-1"
    ) in output, output[-3000:]
    assert "TASK [gpudirect.rdma.verify : Create the server pod" not in output
    assert verify_pods_left(core) == []
    # As a survey or -e gives it: one string, server first.
    result = verify(
        run_playbook, "shared-device-roce", tmp_path, "-e", "verify_nodes=worker-1,worker-0"
    )
    (pair,) = json.loads((tmp_path / "verify-report.json").read_text())["pairs"]
    assert (pair["server_node"], pair["client_node"]) == ("worker-1", "worker-0"), result.stdout[
        -2000:
    ]


def test_the_pods_an_interrupted_run_left_are_removed_by_the_next(
    shared_device_roce, control_plane, core, tmp_path
):
    """Ctrl-C, a lost connection or a killed AAP job leaves the server pod holding every GPU of
    its node; the next run removes it first and says so."""
    command = playbook_command(
        VERIFY,
        "-i",
        str(REPO_ROOT / "inventories" / "shared-device-roce"),
        "-e",
        f"@{SIMULATED}",
    )
    process = subprocess.Popen(
        [*command, "-e", f"verify_report_dir={tmp_path}"],
        cwd=REPO_ROOT,
        env=playbook_env(control_plane.kubeconfig),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: verify_pods_left(core), timeout=120, what="the first test pod")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    left = verify_pods_left(core)
    assert left
    # The next run from another directory, with the default report folder: ANSIBLE_CONFIG
    # finds the collection, the reports go to ./gpudirect-rdma-output there.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        command,
        cwd=elsewhere,
        env=playbook_env(control_plane.kubeconfig, PWD=str(elsewhere)),  # as a shell sets it
        capture_output=True,
        text=True,
        check=False,
    )
    output = " ".join(result.stdout.split())
    assert result.returncode == 0, result.stdout[-3000:]
    assert (
        "removed what an earlier verify run left (interrupted, or kept with verify_keep_pods): "
        in output
    )
    assert all(f"Pod {name}" in output or name in output for name in left), output[-3000:]
    assert verify_pods_left(core) == []
    assert (elsewhere / "gpudirect-rdma-output" / "verify-report.json").is_file()


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
