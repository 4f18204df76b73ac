"""The NCCL environment a training job on a node group needs, from what the verification found
on its nodes (pure: the group's plan and its judged pairs in, settings and a ConfigMap out).

- NCCL_IB_HCA: the RDMA devices of the group's rails as the test pods saw them, exact names
  (`=mlx5_0:1,mlx5_3:1`), when both nodes saw the same names; left out with SR-IOV, where each
  pod sees only its own VFs under names that differ from pod to pod (NCCL uses them all).
- NCCL_IB_GID_INDEX (RoCE): the RoCE v2 IPv4 GID index the pods found, when it is the same on
  every rail of both nodes; otherwise NCCL_IB_ADDR_FAMILY=AF_INET and NCCL_IB_ROCE_VERSION_NUM=2,
  with which NCCL 2.21 and later picks that GID on each node itself (never a hard-coded 3).
- NCCL_IB_TC (RoCE): the traffic class of the lossless priority: DSCP 8p+2 shifted into the
  top six bits with ECN capable transport, (8p+2)*4+2 (106 for PFC priority 3).
- NCCL_SOCKET_IFNAME: eth0, the pod network, for NCCL's bootstrap and out-of-band traffic.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import new_object

DEFAULT_PFC_PRIORITY = 3


def config_map_name(view: dict, grouped: bool) -> str:
    return "gpudirect-rdma-nccl" + (f"-{view['name']}" if grouped else "")


def traffic_class(priority: int) -> int:
    return (8 * priority + 2) * 4 + 2


def environment(plan: dict, view: dict, pairs: list[dict]) -> tuple[dict[str, str], list[str]]:
    """The settings (as strings) and notes on what was left out and why. plan: the whole plan
    (its NIC configuration's PFC priority); view: the group's; pairs: the group's judged pairs."""
    env = {"NCCL_SOCKET_IFNAME": "eth0"}
    notes = []
    client = [p.get("device") for p in pairs]
    server = [p.get("server_device") for p in pairs]
    if view["method"] == "sriov_legacy":
        notes.append(
            "NCCL_IB_HCA left out: with SR-IOV each pod sees only its own VFs, named differently "
            "from pod to pod, and NCCL uses them all"
        )
    elif all(client) and client == server:
        env["NCCL_IB_HCA"] = "=" + ",".join(f"{device}:1" for device in client)
    else:
        notes.append(
            f"NCCL_IB_HCA left out: the two nodes named the rails' devices differently "
            f"({', '.join(map(str, server))} and {', '.join(map(str, client))})"
        )
    if view["fabric"] == "roce":
        indexes = {p.get(key) for p in pairs for key in ("gid_index", "server_gid_index")}
        if len(indexes) == 1 and None not in indexes:
            env["NCCL_IB_GID_INDEX"] = str(indexes.pop())
        else:
            env["NCCL_IB_ADDR_FAMILY"] = "AF_INET"
            env["NCCL_IB_ROCE_VERSION_NUM"] = "2"
            seen = ", ".join(sorted(str(i) for i in indexes))
            notes.append(
                f"NCCL_IB_GID_INDEX left out: the RoCE v2 GID index differs between rails or nodes "
                f"({seen}); NCCL 2.21 or later picks it on each node from NCCL_IB_ADDR_FAMILY and "
                "NCCL_IB_ROCE_VERSION_NUM"
            )
        nic = plan.get("nic_configuration") or {}
        if nic.get("enabled"):
            priority = nic["pfc"].split(",").index("1")
        else:
            priority = DEFAULT_PFC_PRIORITY
            notes.append(
                f"NCCL_IB_TC assumes the fabric's lossless traffic on priority {priority} (DSCP "
                f"{8 * priority + 2}): without gpudirect_rdma_nic_configuration the collection "
                "does not set the NICs' QoS"
            )
        env["NCCL_IB_TC"] = str(traffic_class(priority))
    return env, notes


def config_map(
    view: dict, grouped: bool, env: dict[str, str], nodes: list[str], component: str
) -> dict:
    """The envFrom-ready ConfigMap of a group's settings, in the network's namespace, labelled
    as the collection's component (the verify test's)."""
    obj = new_object(
        "v1",
        "ConfigMap",
        config_map_name(view, grouped),
        component,
        namespace=view["network_namespace"],
        annotations={"gpudirect.rdma/measured-on": ",".join(nodes)},
    )
    return {**obj, "data": dict(env)}
