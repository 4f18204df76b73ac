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


def with_address(pod: dict, address: str) -> dict:
    """The pod as Multus leaves it: net1 and its address in the network-status annotation."""
    status = [
        {"name": "ovn-kubernetes", "interface": "eth0", "ips": ["10.128.2.15"]},
        {"name": "default/x", "interface": "net1", "ips": [address]},
    ]
    annotations = {
        **pod["metadata"]["annotations"],
        "k8s.v1.cni.cncf.io/network-status": json.dumps(status),
    }
    return {**pod, "metadata": {**pod["metadata"], "annotations": annotations}}


def log(name):
    return (FIXTURES / f"{name}.txt").read_text()


@pytest.mark.parametrize(
    ("inventory", "group"),
    [(name, g["name"]) for name in NAMES for g in build_plan(inputs(name))["groups"]],
)
def test_pods_ask_for_a_gpu_the_rails_resource_and_network(inventory, group):
    plan = build_plan(inputs(inventory))
    rails = next(g for g in plan["groups"] if g["name"] == group)["rails"]
    servers = verify_pods(plan, role="server", node="worker-0", group=group)
    addresses = [f"10.0.{i}.1" for i in range(len(rails))]
    running = [with_address(pod, address) for pod, address in zip(servers, addresses, strict=True)]
    clients = verify_pods(plan, role="client", node="worker-1", servers=running, group=group)
    assert len(servers) == len(clients) == len(rails)
    for rail, server, client in zip(rails, servers, clients, strict=True):
        for pod, node in ((server, "worker-0"), (client, "worker-1")):
            (container,) = pod["spec"]["containers"]
            assert pod["metadata"]["namespace"] == plan["network_namespace"]
            assert pod["metadata"]["annotations"] == {
                "k8s.v1.cni.cncf.io/networks": rail["network_name"]
            }
            assert pod["spec"]["nodeName"] == node
            assert container["resources"]["limits"] == {
                "nvidia.com/gpu": "1",
                rail["node_resource"]: "1",
            }
            assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
            env = {e["name"]: e["value"] for e in container["env"]}
            assert env["GPU_MEMORY"] == plan["gpu"]["memory"]
        client_env = {e["name"]: e["value"] for e in client["spec"]["containers"][0]["env"]}
        assert client_env["SERVER_IP"] == addresses[rail["index"]]
        assert "SERVER_IP" not in {e["name"] for e in server["spec"]["containers"][0]["env"]}


def test_pod_names_per_rail_and_image_override():
    plan = build_plan(inputs("multi-rail-hgx"))
    pods = verify_pods(plan, role="server", node="n", image="mirror/tools:1")
    assert [p["metadata"]["name"] for p in pods][:2] == [
        "gpudirect-rdma-verify-server-rail0",
        "gpudirect-rdma-verify-server-rail1",
    ]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"mirror/tools:1"}
    plan = build_plan(inputs("shared-device-roce"))
    servers = [with_address(verify_pods(plan, role="server", node="n")[0], "192.168.2.10")]
    single = verify_pods(plan, role="client", node="n", servers=servers)
    assert single[0]["metadata"]["name"] == "gpudirect-rdma-verify-client"


def run(server="roce_dmabuf_server", client="roce_dmabuf_client"):
    return {
        "gpudirect-rdma-verify-server": log(server) if server else "",
        "gpudirect-rdma-verify-client": log(client) if client else "",
    }


def judge(logs, plan, min_gbps):
    return verify_report(logs, plan=plan, pairs=[["worker-0", "worker-1"]], min_gbps=min_gbps)


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
    assert result["table"][1].endswith("pass")


def test_below_threshold_fails_and_says_why():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(), plan=plan, min_gbps=190)
    assert result["passed"] is False
    assert result["pairs"][0]["problems"] == [
        "average 180.47 Gb/s is below the threshold of 190.0 Gb/s"
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
    assert (
        judge(run(server="ib_peermem_client", client="ib_peermem_client"), peermem, 100)["passed"]
        is True
    )


def test_a_failed_client_is_reported_with_the_perftest_hint():
    plan = build_plan(inputs("shared-device-roce"))
    result = judge(run(client="failure_wrong_gid"), plan=plan, min_gbps=100)
    (problem,) = result["pairs"][0]["problems"]
    assert problem.startswith("client: expected an ib_write_bw result row")
    assert "a wrong RoCE GID index (-x)" in problem


def test_a_server_without_net1_stops_the_clients():
    plan = build_plan(inputs("shared-device-roce"))
    (server,) = verify_pods(plan, role="server", node="n")
    with pytest.raises(
        AnsibleFilterError, match="has no net1 address .* did Multus attach rdmashared-net"
    ):
        verify_pods(plan, role="client", node="m", servers=[server])
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
    }


# -- node groups: each group between two of its nodes, one report ---------------------------------


def test_with_node_groups_the_pods_carry_the_group_and_a_group_must_be_named():
    plan = build_plan(inputs("node-groups"))
    pods = verify_pods(plan, role="server", node="worker-h100-0", group="h100")
    assert [p["metadata"]["name"] for p in pods][:2] == [
        "gpudirect-rdma-verify-h100-server-rail0",
        "gpudirect-rdma-verify-h100-server-rail1",
    ]
    assert {p["metadata"]["labels"]["gpudirect.rdma/node-group"] for p in pods} == {"h100"}
    assert {p["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] for p in pods} == {
        f"example-ipoibnetwork-h100-rail{i}" for i in range(8)
    }
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
        for rail in range(rails):
            logs[f"gpudirect-rdma-verify-{group}-server-rail{rail}"] = log(server)
            logs[f"gpudirect-rdma-verify-{group}-client-rail{rail}"] = log(client)
    del logs["gpudirect-rdma-verify-h100-client-rail7"]
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
    with pytest.raises(
        AnsibleFilterError,
        match=r"pairs: expected \[server node, client node\] for each of the 2 node group\(s\)",
    ):
        verify_report(logs, plan=plan, pairs=pairs[:1], min_gbps=100)
