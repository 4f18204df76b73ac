"""The NCCL settings a training job needs, from what the verification found on the nodes: in
the report, and as an envFrom-ready ConfigMap for each node group whose pairs all passed."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.filter.verify_report import verify_report
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.unit.inventories import inputs
from tests.unit.plugins.plugin_utils.test_verify import (
    HGX_NICS,
    hgx_logs,
    pod_log,
    run,
)


def report(logs, plan, pairs=(("worker-0", "worker-1"),), min_gbps=100):
    return verify_report(logs, plan=plan, pairs=[list(p) for p in pairs], min_gbps=min_gbps)


def test_roce_on_eight_rails_gives_the_devices_the_gid_index_and_the_traffic_class():
    plan = build_plan(inputs("multi-rail-hgx"))
    result = report(hgx_logs(), plan)
    (settings,) = result["nccl_settings"]
    # The perftest fixtures name the device mlx5_2 (client) and mlx5_7 (server): the nodes
    # disagree, so no NCCL_IB_HCA is published.
    assert settings["env"] == {
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106",
    }
    assert settings["notes"][0].startswith("NCCL_IB_HCA left out: the two nodes named")
    assert "priority 3 (DSCP 26)" in settings["notes"][1]
    (config_map,) = result["nccl_config_maps"]
    assert (config_map["kind"], config_map["metadata"]["namespace"]) == ("ConfigMap", "default")
    assert config_map["metadata"]["name"] == "gpudirect-rdma-nccl"
    assert config_map["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpudirect.rdma"
    assert config_map["metadata"]["annotations"]["gpudirect.rdma/measured-on"] == (
        "worker-0,worker-1"
    )
    assert config_map["data"] == settings["env"]
    assert "NCCL settings, ConfigMap default/gpudirect-rdma-nccl" in result["table"]


def test_same_device_names_on_both_nodes_give_nccl_ib_hca_in_rail_order():
    plan = build_plan(inputs("shared-device-infiniband"))
    logs = run(server="ib_dmabuf_server", client="ib_dmabuf_server")
    (settings,) = report(logs, plan)["nccl_settings"]
    device = report(logs, plan)["pairs"][0]["device"]
    assert settings["env"]["NCCL_IB_HCA"] == f"={device}:1"
    assert "NCCL_IB_GID_INDEX" not in settings["env"] and "NCCL_IB_TC" not in settings["env"]


def test_gid_indexes_that_differ_leave_the_choice_to_nccl():
    plan = build_plan(inputs("shared-device-roce"))
    logs = run()
    logs["gpudirect-rdma-verify-client"] = logs["gpudirect-rdma-verify-client"].replace(
        "GID index       : 3", "GID index       : 5"
    )
    result = report(logs, plan)
    (settings,) = result["nccl_settings"]
    assert result["pairs"][0]["gid_index"] != result["pairs"][0]["server_gid_index"]
    assert "NCCL_IB_GID_INDEX" not in settings["env"]
    assert settings["env"]["NCCL_IB_ADDR_FAMILY"] == "AF_INET"
    assert settings["env"]["NCCL_IB_ROCE_VERSION_NUM"] == "2"
    assert any("differs between rails or nodes" in n for n in settings["notes"])


def test_the_nic_configurations_pfc_priority_sets_the_traffic_class():
    plan = build_plan({**inputs("nic-configuration-roce"), "roce_pfc_priority": 4})
    logs = {}
    for group in ("a100", "h100") if len(plan["groups"]) > 1 else ():
        for role in ("server", "client"):
            logs[f"gpudirect-rdma-verify-{group}-{role}"] = pod_log(
                [(HGX_NICS[r], r, f"roce_dmabuf_{role}", "PIX") for r in range(8)], role=role
            )
    if not logs:
        logs = run()
    pairs = [("a0", "a1"), ("h0", "h1")][: len(plan["groups"])]
    settings = report(logs, plan, pairs)["nccl_settings"]
    roce = [s for s in settings if "NCCL_IB_TC" in s["env"]]
    assert roce and {s["env"]["NCCL_IB_TC"] for s in roce} == {str((8 * 4 + 2) * 4 + 2)}
    assert not any("assumes" in n for s in roce for n in s["notes"])


def test_sriov_leaves_out_the_device_names_and_a_failed_group_publishes_nothing():
    plan = build_plan(inputs("sriov-legacy-roce"))
    (settings,) = report(run(), plan)["nccl_settings"]
    assert "NCCL_IB_HCA" not in settings["env"]
    assert settings["notes"][0].startswith("NCCL_IB_HCA left out: with SR-IOV")
    failed = report(run(), plan, min_gbps=500)
    assert failed["nccl_settings"][0]["published"] is False
    assert failed["nccl_config_maps"] == []
    assert any("not published (a pair failed)" in line for line in failed["table"])


def test_node_groups_get_a_config_map_each():
    plan = build_plan(inputs("node-groups"))
    logs = {}
    for group, rails in (("a100", 4), ("h100", 8)):
        for role in ("server", "client"):
            logs[f"gpudirect-rdma-verify-{group}-{role}"] = pod_log(
                [(HGX_NICS[r], r, f"roce_dmabuf_{role}", "PIX") for r in range(rails)], role=role
            )
    result = report(logs, plan, [("a0", "a1"), ("h0", "h1")])
    assert [s["group"] for s in result["nccl_settings"]] == ["a100", "h100"]
    assert [c["metadata"]["name"] for c in result["nccl_config_maps"]] == [
        "gpudirect-rdma-nccl-a100",
        "gpudirect-rdma-nccl-h100",
    ]
    h100 = result["nccl_settings"][1]
    assert "NCCL_IB_TC" not in h100["env"], "h100 runs InfiniBand"
