"""The bandwidth test's pods (accepted by the API server in tests/integration) and its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpudirect.rdma.plugins.filter.verify_nodes import verify_nodes
from ansible_collections.gpudirect.rdma.plugins.filter.verify_pods import verify_pods
from ansible_collections.gpudirect.rdma.plugins.filter.verify_report import verify_report
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import topology as topology_rules
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import shared_dir
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
    rails: list[tuple[str, int | None, str, str | None]],
    topology: str | None = HGX,
    role="server",
    peermem="absent",
    rate="200 Gb/sec (4X HDR)",
):
    """A test pod's log as verify_test.sh prints it: the matrix, per rail the pairing line (how
    the GPU was chosen) and the rail line (NIC, GPU, bus id, relation), the facts, then each
    rail's ib_write_bw output (a perftest fixture) between markers. rails: (NIC, GPU, fixture,
    relation); GPU and relation None take the script's choice, which the contract test proves
    is topology.pair_rails' (test_topology_contract.py); a GPU given is what the pod decided,
    right or wrong."""
    lines = [
        "gpudirect-rdma-verify: fact cmdline BOOT_IMAGE=(hd0,gpt3)/ostree/vmlinuz intel_iommu=on "
        "iommu=pt",
        "gpudirect-rdma-verify: fact iommu-boot unknown (the boot log is not readable here)",
        "gpudirect-rdma-verify: fact gpu-driver NVRM version: NVIDIA UNIX Open Kernel Module for "
        "x86_64  570.124.06  Release Build",
        f"gpudirect-rdma-verify: fact peermem {peermem}",
        "gpudirect-rdma-verify: fact rdma-isolation none",
    ]
    chosen, parsed = [None] * len(rails), None
    if topology is not None:
        lines += ["gpudirect-rdma-verify: topology (nvidia-smi topo -m) begin", topology.rstrip()]
        lines += ["gpudirect-rdma-verify: topology end"]
        try:
            parsed = topology_rules.parse(topology)
        except topology_rules.TopologyError as error:
            lines.append(f"gpudirect-rdma-verify: topology unreadable: {error}")
        else:
            chosen = topology_rules.pair_rails(parsed, [(nic, None) for nic, *_rest in rails])
    for rail, (nic, gpu, _fixture, relation) in enumerate(rails):
        if parsed is not None:
            gpu = chosen[rail]["gpu"] if gpu is None else gpu
            by_nic = {n["name"]: n["gpus"] for n in parsed["nics"]}.get(nic, [])
            relation = relation or next(
                (g["relation"] for g in by_nic if g["index"] == gpu), "unknown"
            )
        elif topology is not None:
            relation = "unknown"  # the script read no GPU from a matrix it could not read
        source = "matrix" if (relation or "unknown") != "unknown" else "numa"
        relation = relation or "unknown"
        gpu = 0 if gpu is None else gpu
        lines.append(
            f"gpudirect-rdma-verify: pairing rail {rail} nic {nic} pf - found-as "
            f"{nic if source == 'matrix' else '-'} gpu {gpu} relation {relation} shared - "
            f"source {source}"
        )
        lines.append(
            f"gpudirect-rdma-verify: rail {rail} {role} on {nic} (Ethernet) 10.0.{rail}.1 GPU "
            f"{gpu} 00000000:{0x18 + gpu:02X}:00.0 {relation}: ib_write_bw -F -d {nic}"
        )
        lines += [
            f"gpudirect-rdma-verify: fact rail{rail}-link ACTIVE",
            f"gpudirect-rdma-verify: fact rail{rail}-rate {rate}",
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
        # First a container with one GPU and no RDMA resource looks at /dev/infiniband, and
        # leaves what it found for the test container in the volume both mount.
        (init,) = pod["spec"]["initContainers"]
        assert (
            init["resources"]["limits"] == init["resources"]["requests"] == {"nvidia.com/gpu": "1"}
        )
        init_env = {e["name"]: e["value"] for e in init["env"]}
        assert init_env["ROLE"] == "isolation"
        assert init["command"] == container["command"]
        assert init["volumeMounts"] == container["volumeMounts"]
        (volume,) = pod["spec"]["volumes"]
        assert (volume["name"], volume["emptyDir"]) == (init["volumeMounts"][0]["name"], {})
        shared_file = init_env["ISOLATION_FILE"]
        assert shared_file.startswith(init["volumeMounts"][0]["mountPath"] + "/")
        assert env["ISOLATION_FILE"] == shared_file
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
            "source": "matrix",
            "found_as": "mlx5_0",
        }
    )
    assert result["table"][1].endswith("pass")
    assert "GPU0 PIX" in result["table"][1]
    assert (pair["floor_gbps"], pair["floor"]) == (150, "verify_min_gbps")
    assert result["table"][2:4] == ["", "floor 150 Gb/s: verify_min_gbps (rail 0)"]
    assert result["table"][4:6] == ["", "host checks: 12 of 12 passed"], "no problem lines"
    assert result["table"][6:9] == [
        "",
        "NCCL settings, ConfigMap default/gpudirect-rdma-nccl",
        "  NCCL_SOCKET_IFNAME=eth0",
    ]


def test_below_threshold_fails_and_says_why():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(), plan=plan, min_gbps=190)
    assert result["passed"] is False
    expected = "average 180.47 Gb/s is below the floor of 190 Gb/s (verify_min_gbps)"
    assert result["pairs"][0]["problems"] == [expected]
    assert f"rail 0 FAIL: {expected}" in result["table"]


def run_at_rates(server_rate: str, client_rate: str) -> dict:
    logs = run()
    for role, rate in (("server", server_rate), ("client", client_rate)):
        name = f"gpudirect-rdma-verify-{role}"
        logs[name] = logs[name].replace("rail0-rate 200 Gb/sec (4X HDR)", f"rail0-rate {rate}")
    return logs


@pytest.mark.parametrize(
    ("server_rate", "client_rate", "floor", "why", "passed"),
    [
        # Red Hat's reference run, 180.47 Gb/s on 200 Gb/s ports.
        ("200 Gb/sec (4X HDR)", "200 Gb/sec (4X HDR)", 160, "80% of the 200 Gb/s port rate", True),
        # The same run on a 400 Gb/s fabric is too slow; the slower side's port sets the floor.
        ("400 Gb/sec (4X NDR)", "400 Gb/sec (4X NDR)", 320, "80% of the 400 Gb/s port rate", False),
        (
            "400 Gb/sec (4X NDR)",
            "100 Gb/sec (4X EDR)",
            80,
            "100 Gb/s port rate (client side)",
            True,
        ),
        (
            "unknown",
            "400 Gb/sec (4X NDR)",
            320,
            "(client side; the server side printed none)",
            False,
        ),
        ("unknown", "unknown", 100, "no port rate was read on either side; the default 100", True),
    ],
)
def test_without_verify_min_gbps_the_floor_comes_from_the_ports_rates(
    server_rate, client_rate, floor, why, passed
):
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run_at_rates(server_rate, client_rate), plan=plan, min_gbps=None)
    (pair,) = result["pairs"]
    assert pair["floor_gbps"] == floor
    assert why in pair["floor"]
    assert pair["passed"] is passed, pair["problems"]
    assert any(line.startswith(f"floor {floor:g} Gb/s: ") for line in result["table"])
    if not passed:
        assert pair["problems"] == [
            f"average 180.47 Gb/s is below the floor of {floor:g} Gb/s ({pair['floor']})"
        ]


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
        "pair": ["a", "b"],
        "cannot": "c (unschedulable (cordoned)), d (advertises no rdma/rdma_shared_device_eth)",
    }
    # Chosen by the user, as a list or the comma-separated string of a survey or -e.
    assert verify_nodes(nodes, plan=plan, chosen="b, a")["pair"] == ["b", "a"]
    assert verify_nodes(nodes, plan=plan, chosen=["b", "a"])["pair"] == ["b", "a"]
    for chosen, message in (
        (
            "a,x",
            "verify_nodes: node x is not one of the selected nodes (no such node, or not "
            "selected by the node selector); they are: a, b, c, d",
        ),
        (
            "a,c",
            "verify_nodes: node c cannot run the test: unschedulable (cordoned); the nodes "
            "that can: a, b",
        ),
        (
            "a,a",
            "verify_nodes: got a, a; expected two different node names, server first, "
            "among the selected nodes: a, b, c, d",
        ),
        (["a"], "verify_nodes: got a; expected two different node names"),
    ):
        with pytest.raises(AnsibleFilterError) as raised:
            verify_nodes(nodes, plan=plan, chosen=chosen)
        assert str(raised.value).startswith("gpudirect.rdma.verify_nodes: " + message), chosen
    with pytest.raises(
        AnsibleFilterError, match="verify_group_nodes.a100: node a cannot run the test: advertises"
    ):
        verify_nodes(
            nodes,
            plan=build_plan(inputs("node-groups")),
            group="a100",
            chosen="a,x",
            chosen_from="verify_group_nodes.a100",
        )


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


def hgx_logs(server_gpus=(None,) * 8, client_gpus=(None,) * 8, topology=HGX, client_topology=None):
    logs = {}
    for role, gpus in (("server", server_gpus), ("client", client_gpus)):
        fixture = f"roce_dmabuf_{role}"
        logs[f"gpudirect-rdma-verify-{role}"] = pod_log(
            [(HGX_NICS[rail], gpu, fixture, None) for rail, gpu in enumerate(gpus)],
            client_topology if role == "client" and client_topology else topology,
            role=role,
        )
    return logs


def without_switch(matrix: str, columns: tuple[str, ...]) -> str:
    """The matrix of a board whose NICs of these columns sit on root ports of their own: their
    PIX cells become NODE."""
    lines = matrix.splitlines()
    header = lines[0].split("\t")
    at = [header.index(column) for column in columns]
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split("\t")
        out.append("\t".join("NODE" if i in at and c == "PIX" else c for i, c in enumerate(cells)))
    return "\n".join(out) + "\n"


# The client of a board whose first two compute NICs (mlx5_0, mlx5_3) share no GPU's switch.
HGX_CROSS = without_switch(HGX, ("NIC0", "NIC3"))


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


def test_a_storage_nic_on_no_gpus_switch_fails_the_pair_with_its_hint():
    plan = build_plan(inputs("shared-device-roce"))
    # mlx5_1 of the HGX fixture is a storage port: NODE to the GPUs of its NUMA node, PIX to none.
    logs = {
        f"gpudirect-rdma-verify-{role}": pod_log([("mlx5_1", None, f"roce_dmabuf_{role}", None)])
        for role in ("server", "client")
    }
    result = judge(logs, plan, 100)
    (pair,) = result["pairs"]
    assert (pair["client_gpu"]["gpu"], pair["client_gpu"]["relation"]) == (0, "NODE")
    (server, client) = pair["problems"]
    assert client.startswith(
        "client: GPU 0 (00000000:18:00.0) reaches mlx5_1 through NODE (between PCIe host "
        "bridges of one NUMA node): no GPU the pod holds shares a PCIe switch with mlx5_1. If "
        "the node has more GPUs than the pod was given, give it every one (verify_gpus: 0)"
    )
    assert client.endswith("set verify_allow_cross_switch: true to accept it")
    allowed = judge(logs, plan, 100, allow_cross_switch=True)
    assert allowed["passed"] is True
    assert allowed["pairs"][0]["warnings"] == [
        problem.split("; set verify_allow")[0] for problem in (server, client)
    ]
    assert allowed["table"][1].endswith("pass (warnings)")


def test_a_pairing_the_matrix_does_not_bear_out_fails_even_when_cross_switch_is_allowed():
    """The report judges the GPU the pod used, and reads the pod's matrix itself too: where the
    two readings differ (a new nvidia-smi, a bug in either), the pair cannot be judged."""
    plan = build_plan(inputs("multi-rail-hgx"))
    # The client's script put rail 0 (mlx5_0) on GPU 1 NODE, though its matrix gives GPU 0 PIX.
    for allow in (False, True):
        result = judge(hgx_logs(client_gpus=[1, *[None] * 7]), plan, 100, allow_cross_switch=allow)
        assert result["passed"] is False
        rail0 = result["pairs"][0]
        assert rail0["client_gpu"]["relation"] == "NODE"
        assert rail0["client_gpu"]["disagreement"] == "the collection reads GPU 0 PIX in it"
        (problem,) = rail0["problems"]
        assert problem.startswith(
            "client: the pod paired mlx5_0 with GPU 1 (00000000:19:00.0) NODE, but in the matrix "
            "the pod printed the collection reads GPU 0 PIX in it"
        )
        assert all(p["passed"] for p in result["pairs"][1:]), "the other rails agree"


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
        f"gpudirect-rdma-verify-{role}": pod_log(
            [("mlx5_1", None, f"roce_dmabuf_{role}", None)], "\n".join(rows), role=role
        )
        for role in ("server", "client")
    }
    (pair,) = judge(logs, plan, 100)["pairs"]
    assert (pair["server_gpu"]["gpu"], pair["server_gpu"]["relation"]) == (3, "PHB")
    assert any(
        "no GPU the pod holds shares a PCIe switch with mlx5_1" in p
        and "otherwise the NIC sits on a root port of its own" in p
        for p in pair["problems"]
    ), pair["problems"]


def test_without_a_matrix_the_path_is_unknown_and_fails_unless_allowed():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run(relation="unknown", topology=None)
    (pair,) = judge(logs, plan, 100)["pairs"]
    assert pair["server_gpu"]["relation"] == "unknown"
    assert pair["server_gpu"]["source"] == "numa"
    assert any(
        "whether GPU 0 (00000000:18:00.0) shares a PCIe switch with mlx5_0 is unknown: the pod "
        "printed no `nvidia-smi topo -m` matrix; the script took the first GPU on the NIC's "
        "NUMA node" in p
        for p in pair["problems"]
    )
    assert judge(logs, plan, 100, allow_cross_switch=True)["passed"] is True
    broken = run(topology="GPU0 something else\n", relation=None)
    (pair,) = judge(broken, plan, 100)["pairs"]
    assert pair["server_gpu"]["why"] == (
        "the pod's `nvidia-smi topo -m` did not read: no row for GPU0, something, else: the "
        "output is cut short or not from `nvidia-smi topo -m`; the script took the first GPU on "
        "the NIC's NUMA node"
    )
    assert "disagreement" not in pair["server_gpu"], "both readings refuse it alike"
    assert pair["passed"] is False


def test_a_vf_the_matrix_does_not_list_is_judged_by_its_pf():
    plan = build_plan(inputs("sriov-legacy-roce"))
    logs = {}
    for role in ("server", "client"):
        text = pod_log([("mlx5_3", None, f"roce_dmabuf_{role}", None)], role=role)
        # The pod's script found the VF mlx5_14 by its PF mlx5_3 (GPU 1 PIX in the HGX matrix).
        logs[f"gpudirect-rdma-verify-{role}"] = text.replace(
            "pairing rail 0 nic mlx5_3 pf -", "pairing rail 0 nic mlx5_14 pf mlx5_3"
        )
    (pair,) = judge(logs, plan, 100)["pairs"]
    assert pair["passed"] is True, pair["problems"]
    assert (pair["server_gpu"]["nic"], pair["server_gpu"]["pf"]) == ("mlx5_14", "mlx5_3")
    assert (pair["server_gpu"]["gpu"], pair["server_gpu"]["relation"]) == (1, "PIX")


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


REAL_VM = shared_dir() / "real-outputs" / "h200-vm-driver580"


def with_facts(log: str, key: str, values: list[str]) -> str:
    """The log with every fact `key` replaced by values, one line each."""
    lines = [
        line
        for line in log.splitlines()
        if not line.startswith(f"gpudirect-rdma-verify: fact {key} ")
    ]
    added = [f"gpudirect-rdma-verify: fact {key} {value}" for value in values]
    return "\n".join([*added, *lines]) + "\n"


def iommu_of(
    cmdline: str, boot: str = "unknown (the boot log is not readable here)", groups=()
) -> dict:
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    server = with_fact(logs["gpudirect-rdma-verify-server"], "cmdline", cmdline)
    server = with_fact(server, "iommu-boot", boot)
    logs["gpudirect-rdma-verify-server"] = with_facts(server, "iommu-group", list(groups))
    result = judge(logs, plan, 100)
    assert result["passed"] is True, "an IOMMU finding never fails the test"
    (iommu,) = findings_of(result, "worker-0", "iommu")
    return iommu


def test_iommu_mode_from_the_devices_iommu_groups_before_any_setting():
    # The kernel's own state wins over the command line: a translating group with iommu=pt set.
    iommu = iommu_of(
        "ro intel_iommu=on iommu=pt",
        groups=["gpu0 0000:18:00.0 DMA-FQ", "rail0-nic 0000:19:00.0 DMA-FQ"],
    )
    assert iommu["status"] == "warning"
    assert iommu["detail"].startswith(
        "the IOMMU translates DMA for gpu0 0000:18:00.0 (DMA-FQ), rail0-nic 0000:19:00.0 (DMA-FQ)"
    )
    assert "iommu=pt" in iommu["fix"]
    # Identity domains pass whatever the command line says.
    iommu = iommu_of("ro intel_iommu=on", groups=["gpu0 0000:18:00.0 identity"])
    assert (iommu["status"], iommu["detail"]) == (
        "ok",
        "identity (passthrough) IOMMU domain for gpu0 0000:18:00.0",
    )


def test_iommu_mode_from_the_boot_log_when_no_device_is_in_a_group():
    """The real VM: no IOMMU argument on the command line, no IOMMU group, and the boot log says
    the kernel's default domain translates (the old check called this ok)."""
    cmdline = (REAL_VM / "proc-cmdline-kernel-part.txt").read_text().strip()
    boot = (REAL_VM / "dmesg-iommu.txt").read_text().splitlines()[0].split("] ", 1)[1]
    iommu = iommu_of(cmdline, boot=boot, groups=["gpu0 0000:00:06.0 none"])
    assert iommu["status"] == "warning"
    assert iommu["detail"].startswith(
        "the boot log says 'iommu: Default domain type: Translated' and no device of the rails "
        "is in an IOMMU group the pod can see"
    )
    passthrough = iommu_of(
        cmdline, boot="iommu: Default domain type: Passthrough (set via kernel command line)"
    )
    assert passthrough["status"] == "ok"


@pytest.mark.parametrize(
    ("cmdline", "status", "detail"),
    [
        ("ro intel_iommu=on iommu=pt", "ok", "passthrough on the kernel command line"),
        (
            "ro intel_iommu=on",
            "warning",
            "intel_iommu=on without iommu=pt on the kernel command line: the IOMMU translates "
            "every DMA and the kernel turns ACS on",
        ),
        ("ro amd_iommu=off", "ok", "the IOMMU is off on the kernel command line (amd_iommu=off)"),
        ("ro quiet", "unknown", "whether the IOMMU translates DMA is unknown"),
        ("unknown", "unknown", "and the pod could not read /proc/cmdline"),
    ],
)
def test_iommu_mode_from_the_command_line_last_and_unknown_said_as_such(cmdline, status, detail):
    iommu = iommu_of(cmdline)
    assert iommu["status"] == status
    assert detail in iommu["detail"]


def test_unknown_acs_is_a_warning():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-server"] = with_fact(
        logs["gpudirect-rdma-verify-server"], "rail0-acs", "unknown lspci is not in the image"
    )
    result = judge(logs, plan, 100)
    assert result["passed"] is True, "warnings do not fail the test"
    (acs,) = findings_of(result, "worker-0", "acs")
    assert (acs["status"], acs["detail"]) == ("warning", "not checked: lspci is not in the image")


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


@pytest.mark.parametrize(
    ("inventory", "status"),
    [
        ("shared-device-roce", "warning"),
        ("host-device-roce", "failure"),
        ("sriov-legacy-roce", "failure"),
    ],
)
def test_a_gpu_container_that_sees_ibverbs_devices_it_did_not_ask_for_is_reported(
    inventory, status
):
    """GPU Operator 26.3.0 to 26.3.2 put every ibverbs device into every GPU pod: with devices
    that are each one pod's (host device, SR-IOV) that fails the run, with shared ones it warns."""
    plan = build_plan(inputs(inventory))
    logs = run()
    assert findings_of(judge(logs, plan, 100), "worker-1", "rdma-isolation")[0]["status"] == "ok"
    logs["gpudirect-rdma-verify-client"] = with_fact(
        logs["gpudirect-rdma-verify-client"], "rdma-isolation", "rdma_cm uverbs0 uverbs1"
    )
    result = judge(logs, plan, 100)
    (finding,) = findings_of(result, "worker-1", "rdma-isolation")
    assert finding["status"] == status
    assert result["passed"] is (status != "failure")
    assert finding["detail"].startswith(
        "a container with a GPU and no RDMA resource sees /dev/infiniband (rdma_cm uverbs0 "
        "uverbs1): every GPU pod reaches the node's NICs"
    )
    assert "26.3.3 or later" in finding["fix"] and "#2525" in finding["fix"]
    assert findings_of(result, "worker-0", "rdma-isolation")[0]["status"] == "ok"
    logs["gpudirect-rdma-verify-client"] = with_fact(
        logs["gpudirect-rdma-verify-client"], "rdma-isolation", "unknown"
    )
    (unread,) = findings_of(judge(logs, plan, 100), "worker-1", "rdma-isolation")
    assert unread["status"] == "unknown"


@pytest.mark.parametrize(
    ("seen", "status"),
    [
        ("rdma_cm", "ok"),
        ("rdma_cm umad0 issm0", "failure"),
        ("uverbs3", "failure"),
    ],
)
def test_only_a_nics_own_devices_count_as_reaching_it(seen, status):
    """rdma_cm is the node's one connection manager device and reaches no NIC by itself; a
    uverbs, umad or issm device is one NIC port's."""
    plan = build_plan(inputs("host-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-client"] = with_fact(
        logs["gpudirect-rdma-verify-client"], "rdma-isolation", seen
    )
    (finding,) = findings_of(judge(logs, plan, 100), "worker-1", "rdma-isolation")
    assert finding["status"] == status
    assert f"sees /dev/infiniband ({seen})" in finding["detail"]
    if status == "ok":
        assert finding["detail"].endswith("but no NIC's device (uverbs, umad, issm)")


def test_a_pod_without_the_isolation_look_gets_no_isolation_finding():
    """ROLE=facts (make test-gpu) runs without the init container: nothing to judge, and no
    finding claims otherwise."""
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-server"] = "\n".join(
        line
        for line in logs["gpudirect-rdma-verify-server"].splitlines()
        if "fact rdma-isolation" not in line
    )
    assert findings_of(judge(logs, plan, 100), "worker-0", "rdma-isolation") == []
