"""The bandwidth test's pods (accepted by the API server in tests/integration) and its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.verify_nodes import verify_nodes
from ansible_collections.gpudirect.rdma.plugins.filter.verify_pods import verify_pods
from ansible_collections.gpudirect.rdma.plugins.filter.verify_report import verify_report
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import NAMES, inputs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "perftest"


def with_addresses(pod: dict, addresses: list[str]) -> dict:
    """The pod as Multus leaves it: net1, net2, ... and their addresses in the network-status
    annotation."""
    status = [{"name": "ovn-kubernetes", "interface": "eth0", "ips": ["10.128.2.15"]}]
    status += [
        {"name": f"default/x{n}", "interface": f"net{n}", "ips": [address]}
        for n, address in enumerate(addresses, start=1)
    ]
    annotations = {
        **pod["metadata"]["annotations"],
        "k8s.v1.cni.cncf.io/network-status": json.dumps(status),
    }
    return {**pod, "metadata": {**pod["metadata"], "annotations": annotations}}


def log(name):
    return (FIXTURES / f"{name}.txt").read_text()


TOPOLOGY = Path(__file__).resolve().parents[2] / "fixtures" / "topology"
HGX = (TOPOLOGY / "hgx_h100_8gpu_12nic_tabs.txt").read_text()


def pod_log(
    rails: list[tuple[str, int, str, str]],
    topology: str | None = HGX,
    role="server",
    peermem="absent",
):
    """A test pod's log as verify_test.sh prints it: the matrix, a line per rail naming its NIC,
    GPU, bus id and relation, then each rail's ib_write_bw output (a perftest fixture) between
    markers. rails: (NIC, GPU, fixture, relation the script read)."""
    lines = [
        "gpudirect-rdma-verify: fact cmdline BOOT_IMAGE=(hd0,gpt3)/ostree/vmlinuz intel_iommu=on "
        "iommu=pt",
        "gpudirect-rdma-verify: fact gpu-driver NVRM version: NVIDIA UNIX Open Kernel Module for "
        "x86_64  570.124.06  Release Build",
        f"gpudirect-rdma-verify: fact peermem {peermem}",
    ]
    if topology is not None:
        lines += ["gpudirect-rdma-verify: topology (nvidia-smi topo -m) begin", topology.rstrip()]
        lines += ["gpudirect-rdma-verify: topology end"]
    for rail, (nic, gpu, _fixture, relation) in enumerate(rails):
        lines.append(
            f"gpudirect-rdma-verify: rail {rail} {role} on {nic} (Ethernet) 10.0.{rail}.1 GPU "
            f"{gpu} 00000000:{0x18 + gpu:02X}:00.0 {relation}: ib_write_bw -F -d {nic}"
        )
        lines += [
            f"gpudirect-rdma-verify: fact rail{rail}-link ACTIVE",
            f"gpudirect-rdma-verify: fact rail{rail}-mtu 9000",
            f"gpudirect-rdma-verify: fact rail{rail}-acs 0000:{0x17 + gpu:02x}:00.0  SrcValid+ "
            "TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-",
        ]
    for rail, (_nic, _gpu, fixture, _relation) in enumerate(rails):
        lines += [f"gpudirect-rdma-verify: rail {rail} output begin", log(fixture).rstrip()]
        lines += [f"gpudirect-rdma-verify: rail {rail} output end (exit 0)"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("inventory", "group"),
    [(name, g["name"]) for name in NAMES for g in build_plan(inputs(name))["groups"]],
)
def test_one_pod_per_side_asks_for_the_gpus_and_every_rails_resource_and_network(inventory, group):
    plan = build_plan(inputs(inventory))
    rails = next(g for g in plan["groups"] if g["name"] == group)["rails"]
    servers = verify_pods(plan, role="server", node="worker-0", group=group, gpus=8)
    addresses = [f"10.0.{i}.1" for i in range(len(rails))]
    running = [with_addresses(servers[0], addresses)]
    clients = verify_pods(
        plan, role="client", node="worker-1", servers=running, group=group, gpus=8
    )
    assert len(servers) == len(clients) == 1
    for pod, node in ((servers[0], "worker-0"), (clients[0], "worker-1")):
        (container,) = pod["spec"]["containers"]
        assert pod["metadata"]["namespace"] == plan["network_namespace"]
        assert pod["metadata"]["annotations"] == {
            "k8s.v1.cni.cncf.io/networks": ",".join(r["network_name"] for r in rails)
        }
        assert pod["spec"]["nodeName"] == node
        assert container["resources"]["limits"] == {
            "nvidia.com/gpu": "8",
            **{rail["node_resource"]: "1" for rail in rails},
        }
        assert container["resources"]["requests"] == container["resources"]["limits"]
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["GPU_MEMORY"] == plan["gpu"]["memory"]
        assert env["RAILS"] == str(len(rails))
        assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    client_env = {e["name"]: e["value"] for e in clients[0]["spec"]["containers"][0]["env"]}
    assert client_env["SERVER_IPS"] == ",".join(addresses)
    assert "SERVER_IPS" not in {e["name"] for e in servers[0]["spec"]["containers"][0]["env"]}


def test_pod_names_one_per_side_gpus_and_image_override():
    plan = build_plan(inputs("multi-rail-hgx"))
    (pod,) = verify_pods(plan, role="server", node="n", image="mirror/tools:1")
    assert pod["metadata"]["name"] == "gpudirect-rdma-verify-server"
    assert pod["spec"]["containers"][0]["image"] == "mirror/tools:1"
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    for gpus in (0, -1, True):
        with pytest.raises(AnsibleFilterError, match="gpus: expected a whole number of GPUs"):
            verify_pods(plan, role="server", node="n", gpus=gpus)
    plan = build_plan(inputs("shared-device-roce"))
    servers = [with_addresses(verify_pods(plan, role="server", node="n")[0], ["192.168.2.10"])]
    single = verify_pods(plan, role="client", node="n", servers=servers)
    assert single[0]["metadata"]["name"] == "gpudirect-rdma-verify-client"


def run(
    server="roce_dmabuf_server",
    client="roce_dmabuf_client",
    relation="PIX",
    topology=HGX,
    peermem="absent",
):
    """One rail on mlx5_0 and GPU0 (PIX in the HGX matrix) on both sides."""
    logs = {}
    for role, fixture in (("server", server), ("client", client)):
        logs[f"gpudirect-rdma-verify-{role}"] = (
            pod_log([("mlx5_0", 0, fixture, relation)], topology, role=role, peermem=peermem)
            if fixture
            else ""
        )
    return logs


def judge(logs, plan, min_gbps, **options):
    return verify_report(
        logs, plan=plan, pairs=[["worker-0", "worker-1"]], min_gbps=min_gbps, **options
    )


def test_a_good_run_passes_with_its_numbers():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(), plan=plan, min_gbps=150)
    assert result["passed"] is True
    (pair,) = result["pairs"]
    assert (
        pair["bw_average_gbps"],
        pair["msg_rate_mpps"],
        pair["device"],
        pair["gid_index"],
        pair["gpu_memory"],
        pair["link_type"],
    ) == (180.47, 0.344228, "mlx5_2", 3, "dmabuf", "Ethernet")
    assert pair["server_device"] == "mlx5_7"
    assert (
        pair["server_gpu"]
        == pair["client_gpu"]
        == {
            "gpu": 0,
            "bus_id": "00000000:18:00.0",
            "nic": "mlx5_0",
            "relation": "PIX",
            "closest": "PIX",
        }
    )
    assert result["table"][1].endswith("pass")
    assert "GPU0 PIX" in result["table"][1]
    assert result["table"][2:4] == ["", "host checks: 10 of 10 passed"], "no problem lines"
    assert result["table"][4:7] == [
        "",
        "NCCL settings, ConfigMap default/gpudirect-rdma-nccl",
        "  NCCL_SOCKET_IFNAME=eth0",
    ]


def test_below_threshold_fails_and_says_why():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(), plan=plan, min_gbps=190)
    assert result["passed"] is False
    assert result["pairs"][0]["problems"] == [
        "average 180.47 Gb/s is below the threshold of 190.0 Gb/s"
    ]
    assert (
        "rail 0 FAIL: average 180.47 Gb/s is below the threshold of 190.0 Gb/s" in (result["table"])
    )


def test_host_memory_means_no_gpudirect():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(client="roce_host_memory_mbsec_client"), plan=plan, min_gbps=10)
    assert result["passed"] is False
    assert (
        "client: GPU memory was not used (expected dmabuf): GPUDirect RDMA did not happen"
        in result["pairs"][0]["problems"]
    )


def test_peermem_registration_when_dmabuf_was_planned_fails():
    plan = build_plan(inputs("shared-device-infiniband"))
    result = judge(run(server="ib_peermem_client", client="ib_peermem_client"), plan, 100)
    problems = result["pairs"][0]["problems"]
    assert any(
        "client: GPU memory was registered by peermem (expected dmabuf)" in p for p in problems
    )
    peermem = build_plan({**inputs("shared-device-infiniband"), "gpu_memory": "peermem"})
    logs = run(server="ib_peermem_client", client="ib_peermem_client", peermem="loaded")
    assert judge(logs, peermem, 100)["passed"] is True


def test_a_failed_client_is_reported_with_the_perftest_hint():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(client="failure_wrong_gid"), plan=plan, min_gbps=100)
    (problem,) = result["pairs"][0]["problems"]
    assert problem.startswith("client: expected an ib_write_bw result row")
    assert "a wrong RoCE GID index (-x)" in problem


def test_a_pod_that_stopped_before_any_rail_ran_is_judged_on_its_whole_log():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-client"] = (
        "gpudirect-rdma-verify: no RDMA device carries net1 (192.168.2.11); devices: mlx5_0\n"
    )
    (pair,) = judge(logs, plan=plan, min_gbps=100)["pairs"]
    assert pair["client_gpu"]["gpu"] is None
    assert any("no RDMA device carries net1" in p for p in pair["problems"]), pair["problems"]


def test_a_server_without_an_address_on_a_rail_stops_the_clients():
    plan = build_plan(inputs("multi-rail-hgx"))
    (server,) = verify_pods(plan, role="server", node="n")
    with pytest.raises(
        AnsibleFilterError, match="has no net1 address .* did Multus attach rdmashared-net-rail0"
    ):
        verify_pods(plan, role="client", node="m", servers=[server])
    with pytest.raises(
        AnsibleFilterError, match="has no net8 address .* did Multus attach rdmashared-net-rail7"
    ):
        verify_pods(
            plan, role="client", node="m", servers=[with_addresses(server, ["10.0.0.1"] * 7)]
        )
    with pytest.raises(
        AnsibleFilterError, match="expected the server pod gpudirect-rdma-verify-server"
    ):
        verify_pods(plan, role="client", node="m", servers=[])


def test_eligible_nodes_need_a_gpu_every_rail_and_no_cordon():
    plan = build_plan(inputs("shared-device-roce"))
    nodes = [
        {
            "metadata": {"name": "b"},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_eth": "63"}},
        },
        {
            "metadata": {"name": "a"},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_eth": "63"}},
        },
        {
            "metadata": {"name": "c"},
            "spec": {"unschedulable": True},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_eth": "63"}},
        },
        {"metadata": {"name": "d"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}},
    ]
    assert verify_nodes(nodes, plan=plan) == {
        "eligible": ["a", "b"],
        "ineligible": {
            "c": "unschedulable (cordoned)",
            "d": "advertises no rdma/rdma_shared_device_eth",
        },
        "gpus": {"a": 8, "b": 8, "c": 8, "d": 8},
    }


# -- node groups: each group between two of its nodes, one report ---------------------------------


def test_with_node_groups_the_pods_carry_the_group_and_a_group_must_be_named():
    plan = build_plan(inputs("node-groups"))
    (pod,) = verify_pods(plan, role="server", node="worker-h100-0", group="h100")
    assert pod["metadata"]["name"] == "gpudirect-rdma-verify-h100-server"
    assert pod["metadata"]["labels"]["gpudirect.rdma/node-group"] == "h100"
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(
        f"example-ipoibnetwork-h100-rail{i}" for i in range(8)
    )
    with pytest.raises(
        AnsibleFilterError,
        match=r"group: expected one of the plan's node groups \(a100, h100\); got None",
    ):
        verify_pods(plan, role="server", node="n")
    with pytest.raises(AnsibleFilterError, match="got 'b200'"):
        verify_pods(plan, role="server", node="n", group="b200")


def test_a_report_over_two_groups_names_each_pair_by_group():
    plan = build_plan(inputs("node-groups"))
    logs = {}
    for group, rails, server, client in (
        ("a100", 4, "roce_dmabuf_server", "roce_dmabuf_client"),
        ("h100", 8, "ib_dmabuf_server", "roce_dmabuf_client"),
    ):
        pairs = [(HGX_NICS[r], r, server, "PIX") for r in range(rails)]
        logs[f"gpudirect-rdma-verify-{group}-server"] = pod_log(pairs)
        client_pairs = [(HGX_NICS[r], r, client, "PIX") for r in range(rails)]
        if group == "h100":
            client_pairs[7] = (HGX_NICS[7], 7, "failure_wrong_gid", "PIX")
        logs[f"gpudirect-rdma-verify-{group}-client"] = pod_log(client_pairs, role="client")
    pairs = [["worker-a100-0", "worker-a100-1"], ["worker-h100-0", "worker-h100-1"]]
    result = verify_report(logs, plan=plan, pairs=pairs, min_gbps=100)
    assert len(result["pairs"]) == 12
    assert [(p["group"], p["rail"], p["server_node"]) for p in result["pairs"]][3:5] == [
        ("a100", 3, "worker-a100-0"),
        ("h100", 0, "worker-h100-0"),
    ]
    assert result["passed"] is False
    assert [p["group"] + str(p["rail"]) for p in result["pairs"] if not p["passed"]] == ["h1007"]
    assert result["table"][0].startswith("group rail ")
    assert result["table"][5].startswith("h100  0    worker-h100-0 -> worker-h100-1")
    assert any(
        line.startswith("group h100 rail 7 FAIL: client: expected an ib_write_bw")
        for line in result["table"]
    )
    with pytest.raises(
        AnsibleFilterError,
        match=r"pairs: expected \[server node, client node\] for each of the 2 node group\(s\)",
    ):
        verify_report(logs, plan=plan, pairs=pairs[:1], min_gbps=100)


# -- topology: each rail's GPU on its NIC's PCIe switch -------------------------------------------

# The HGX fixture's compute NICs in the order of the GPU on each one's PCIe switch (GPU0..GPU7).
HGX_NICS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


def hgx_logs(server_gpus=range(8), client_gpus=range(8), topology=HGX):
    logs = {}
    for role, gpus in (("server", server_gpus), ("client", client_gpus)):
        fixture = f"roce_dmabuf_{role}"
        logs[f"gpudirect-rdma-verify-{role}"] = pod_log(
            [(HGX_NICS[rail], gpu, fixture, "?") for rail, gpu in enumerate(gpus)],
            topology,
            role=role,
        )
    return logs


def test_an_hgx_node_gives_eight_pairs_each_on_the_gpu_next_to_its_nic():
    plan = build_plan(inputs("multi-rail-hgx"))
    result = judge(hgx_logs(), plan, 100)
    assert result["passed"] is True, [p["problems"] for p in result["pairs"]]
    assert [
        (p["rail"], p["server_gpu"]["gpu"], p["server_gpu"]["nic"], p["server_gpu"]["relation"])
        for p in result["pairs"]
    ] == [(rail, rail, HGX_NICS[rail], "PIX") for rail in range(8)]
    assert all(p["client_gpu"]["relation"] == "PIX" for p in result["pairs"])
    assert [line.split()[0] for line in result["table"][1:9]] == [str(r) for r in range(8)]


def test_a_gpu_on_another_switch_of_the_numa_node_fails_the_pair_with_its_hint():
    plan = build_plan(inputs("multi-rail-hgx"))
    # The client's rail 0 (mlx5_0) ran on GPU1: NODE in the matrix, though GPU0 is PIX.
    result = judge(hgx_logs(client_gpus=[1, 0, 2, 3, 4, 5, 6, 7]), plan, 100)
    assert result["passed"] is False
    rail0, rail1 = result["pairs"][:2]
    assert rail0["client_gpu"]["relation"] == "NODE"
    assert rail0["client_gpu"]["closest"] == "PIX"
    (problem,) = rail0["problems"]
    assert problem.startswith(
        "client: GPU 1 (00000000:19:00.0) reaches mlx5_0 through NODE (between PCIe host "
        "bridges of one NUMA node): a GPU PIX to mlx5_0 exists but another rail took it"
    )
    assert problem.endswith("set verify_allow_cross_switch: true to accept it")
    # GPU0 on mlx5_3 is NODE too; GPU1 would have been PIX.
    assert rail1["client_gpu"]["relation"] == "NODE"
    allowed = judge(
        hgx_logs(client_gpus=[1, 0, 2, 3, 4, 5, 6, 7]), plan, 100, allow_cross_switch=True
    )
    assert allowed["passed"] is True
    assert allowed["allow_cross_switch"] is True
    assert allowed["pairs"][0]["warnings"] == [problem.split("; set verify_allow")[0]]
    assert allowed["table"][1].endswith("pass (warnings)")
    assert "rail 0 warning: client: GPU 1" in "\n".join(allowed["table"])


def test_a_nic_no_gpu_shares_a_switch_with_says_where_the_nic_sits():
    plan = build_plan(inputs("shared-device-roce"))
    # mlx5_1 of the DGX A100 fixture: GPU3 is PHB (through the CPU), no GPU closer than GPU2 PXB;
    # make GPU2 SYS too so that PHB is the best there is.
    topology = (TOPOLOGY / "dgx_a100_4gpu_mlx5_columns.txt").read_text()
    rows = []
    for line in topology.splitlines():
        cells = line.split("\t")
        if cells[0] == "GPU2":
            cells[6] = "SYS"
        rows.append("\t".join(cells))
    logs = {
        "gpudirect-rdma-verify-server": pod_log(
            [("mlx5_1", 3, "roce_dmabuf_server", "PHB")], "\n".join(rows)
        ),
        "gpudirect-rdma-verify-client": pod_log(
            [("mlx5_1", 3, "roce_dmabuf_client", "PHB")], "\n".join(rows), role="client"
        ),
    }
    (pair,) = judge(logs, plan, 100)["pairs"]
    assert pair["server_gpu"]["relation"] == pair["server_gpu"]["closest"] == "PHB"
    assert any(
        "no GPU of the node shares a PCIe switch with mlx5_1: the NIC sits on a root port of "
        "its own" in p
        for p in pair["problems"]
    ), pair["problems"]


def test_without_a_matrix_the_path_is_unknown_and_fails_unless_allowed():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run(relation="unknown", topology=None)
    (pair,) = judge(logs, plan, 100)["pairs"]
    assert pair["server_gpu"]["relation"] == "unknown"
    assert any(
        "whether GPU 0 (00000000:18:00.0) shares a PCIe switch with mlx5_0 is unknown: the pod "
        "printed no `nvidia-smi topo -m` matrix" in p
        for p in pair["problems"]
    )
    assert judge(logs, plan, 100, allow_cross_switch=True)["passed"] is True
    broken = run(topology="GPU0 something else\n")
    (pair,) = judge(broken, plan, 100)["pairs"]
    assert "expected the matrix of `nvidia-smi topo -m`" in pair["server_gpu"]["topology_error"]
    assert pair["passed"] is False


# -- host checks: the facts the pods print, judged --------------------------------------------


def with_fact(log: str, key: str, value: str) -> str:
    """The log with fact `key` replaced by value (added when absent)."""
    lines = [
        line
        for line in log.splitlines()
        if not line.startswith(f"gpudirect-rdma-verify: fact {key} ")
    ]
    return "\n".join([f"gpudirect-rdma-verify: fact {key} {value}", *lines]) + "\n"


def findings_of(result: dict, node: str, check: str) -> list[dict]:
    return [f for f in result["host_checks"] if f["node"] == node and f["check"] == check]


def test_acs_redirecting_on_a_bridge_between_gpu_and_nic_fails_the_report_with_the_fix():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-client"] = with_fact(
        logs["gpudirect-rdma-verify-client"],
        "rail0-acs",
        "0000:17:00.0  SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- "
        "DirectTrans-",
    )
    result = judge(logs, plan, 100)
    assert result["passed"] is False
    assert all(p["passed"] for p in result["pairs"]), "the pairs themselves passed"
    (acs,) = findings_of(result, "worker-1", "acs")
    assert (acs["status"], acs["rail"]) == ("failure", 0)
    assert acs["detail"].startswith("ACS redirects peer-to-peer requests on 0000:17:00.0")
    assert "ECAP_ACS+0x6.w=0000" in acs["fix"]
    assert acs["reference"].endswith("troubleshooting.html#pci-access-control-services-acs")
    assert findings_of(result, "worker-0", "acs")[0]["status"] == "ok"
    assert any(
        line.startswith("host worker-1 acs rail 0 FAIL: ACS redirects") for line in result["table"]
    )


def test_iommu_translating_without_passthrough_is_a_warning_and_unknown_acs_too():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    server = with_fact(logs["gpudirect-rdma-verify-server"], "cmdline", "ro intel_iommu=on")
    logs["gpudirect-rdma-verify-server"] = with_fact(
        server, "rail0-acs", "unknown lspci is not in the image"
    )
    result = judge(logs, plan, 100)
    assert result["passed"] is True, "warnings do not fail the test"
    (iommu,) = findings_of(result, "worker-0", "iommu")
    assert iommu["status"] == "warning" and "iommu=pt" in iommu["fix"]
    (acs,) = findings_of(result, "worker-0", "acs")
    assert (acs["status"], acs["detail"]) == ("warning", "not checked: lspci is not in the image")
    assert findings_of(result, "worker-1", "iommu")[0]["detail"] == "intel_iommu=on iommu=pt"


def test_proprietary_modules_with_dmabuf_a_missing_peermem_a_down_port_and_a_small_mtu():
    plan = build_plan(inputs("multi-rail-hgx"))  # gpudirect_rdma_mtu 9000
    logs = hgx_logs()
    client = logs["gpudirect-rdma-verify-client"]
    client = with_fact(client, "gpu-driver", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570")
    client = with_fact(client, "rail3-link", "DOWN")
    logs["gpudirect-rdma-verify-client"] = with_fact(client, "rail5-mtu", "1500")
    result = judge(logs, plan, 100)
    assert result["passed"] is False
    failed = {
        (f["check"], f.get("rail")) for f in result["host_checks"] if f["status"] == "failure"
    }
    assert failed == {("gpu-driver", None), ("link", 3)}
    (mtu,) = [f for f in findings_of(result, "worker-1", "mtu") if f["status"] != "ok"]
    assert (mtu["rail"], mtu["status"]) == (5, "warning")
    assert mtu["detail"] == "net6 has MTU 1500, below gpudirect_rdma_mtu 9000"
    (driver,) = findings_of(result, "worker-1", "gpu-driver")
    assert "kernelModuleType: open" in driver["fix"]
    peermem = build_plan({**inputs("shared-device-roce"), "gpu_memory": "peermem"})
    logs = run(server="ib_peermem_client", client="ib_peermem_client")
    (missing,) = findings_of(judge(logs, peermem, 100), "worker-0", "peermem")
    assert missing["status"] == "failure" and "driver.rdma.enabled: true" in missing["fix"]


def test_a_pod_that_printed_no_facts_is_said_to_be_unchecked():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-client"] = ""
    result = judge(logs, plan, 100)
    assert findings_of(result, "worker-1", "facts")[0]["status"] == "unknown"
