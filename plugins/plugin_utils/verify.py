"""The GPUDirect bandwidth test: a server and a client pod per rail, and the report of a run.

Each pod asks for one GPU and the rail's RDMA resource, attaches the rail's network, may lock
memory (IPC_LOCK), and runs verify_test.sh (beside this file), which finds its RDMA device, GID
index and GPU and runs ib_write_bw. The client gets the server's net1 address. With node groups,
each group is tested between two of its own nodes, on its own rails and networks: the pods carry
the group's name, and the report one pair per rail of every group.
"""

from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    group_plans,
    new_object,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (
    nic_type,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.nic_configuration import condition
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.perftest import PerftestError, parse

COMPONENT = "verify"
ROLE_LABEL = "gpudirect.rdma/verify-role"
RAIL_LABEL = "gpudirect.rdma/rail"
GROUP_LABEL = "gpudirect.rdma/node-group"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
SCRIPT = (Path(__file__).parent / "verify_test.sh").read_text()


def group_view(plan: dict, name: str | None) -> dict:
    """The plan as the named node group sees it (builders.common.group_plans); None names the
    only group."""
    views = group_plans(plan)
    names = [v["name"] for v in views]
    if name is None and len(views) == 1:
        return views[0]
    if name is not None and name in names:
        return views[names.index(name)]
    raise ValueError(
        f"group: expected one of the plan's node groups ({', '.join(map(str, names))}); got "
        f"{name!r}"
    )


def _grouped(plan: dict) -> bool:
    return len(plan["groups"]) > 1


def pod_name(plan: dict, role: str, rail: dict) -> str:
    """plan: a group's view."""
    suffix = f"-rail{rail['index']}" if len(plan["rails"]) > 1 else ""
    group = f"{plan['name']}-" if _grouped(plan) else ""
    return f"gpudirect-rdma-verify-{group}{role}{suffix}"


def bandwidth_pod(
    plan: dict, role: str, rail: dict, node: str, settings: dict, server_address: str | None = None
) -> dict:
    env = {
        "ROLE": role,
        "GPU_MEMORY": plan["gpu"]["memory"],
        "SIZE": str(settings["size"]),
        "QPS": str(settings["qps"]),
        "DURATION": str(settings["duration"]),
        "PORT": str(settings["port"]),
        "PERFTEST": settings["perftest"],
    }
    if role == "client":
        env["SERVER_IP"] = server_address
    resources = {"nvidia.com/gpu": "1", rail["node_resource"]: "1"}
    return new_object(
        "v1",
        "Pod",
        pod_name(plan, role, rail),
        COMPONENT,
        namespace=plan["network_namespace"],
        labels={
            ROLE_LABEL: role,
            RAIL_LABEL: str(rail["index"]),
            **({GROUP_LABEL: plan["name"]} if _grouped(plan) else {}),
        },
        annotations={NETWORKS_ANNOTATION: rail["network_name"]},
        spec={
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "perftest",
                    "image": settings["image"],
                    "command": ["/bin/bash", "-c", SCRIPT],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": {"limits": dict(resources), "requests": dict(resources)},
                    "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                }
            ],
        },
    )


def server_pods(plan: dict, server_node: str, settings: dict) -> list[dict]:
    return [bandwidth_pod(plan, "server", rail, server_node, settings) for rail in plan["rails"]]


def client_pods(plan: dict, client_node: str, settings: dict, addresses: list[str]) -> list[dict]:
    if len(addresses) != len(plan["rails"]):
        raise ValueError(
            f"server_addresses: expected one per rail ({len(plan['rails'])}); got {addresses!r}"
        )
    return [
        bandwidth_pod(plan, "client", rail, client_node, settings, addresses[rail["index"]])
        for rail in plan["rails"]
    ]


def nic_devices(devices: list[dict], nodes: list[str]) -> list[dict]:
    """What the NIC configuration daemon reports of the tested nodes' NICs (NicDevice objects):
    per device its node, type, firmware, ports and configuration state (the reason of
    ConfigUpdateInProgress: UpdateSuccessful once the template's settings are in the firmware)."""
    found = []
    for device in devices:
        status = device.get("status") or {}
        if status.get("node") not in nodes:
            continue
        state = condition(device) or {}
        found.append(
            {
                "node": status.get("node"),
                "name": device["metadata"]["name"],
                "type": nic_type(status.get("type") or "?"),
                "firmware": status.get("firmwareVersion"),
                "ports": [
                    "/".join(
                        p.get(key) or "-" for key in ("pci", "networkInterface", "rdmaInterface")
                    )
                    for p in status.get("ports") or []
                ],
                "configuration": state.get("reason") or "none",
            }
        )
    return sorted(found, key=lambda d: (d["node"], d["name"]))


def nic_table(devices: list[dict]) -> list[str]:
    if not devices:
        return []
    lines = [f"{'node':<24}{'NIC':<22}{'firmware':<14}{'configuration':<22}ports"]
    lines += [
        f"{d['node']:<24}{d['type']:<22}{d['firmware'] or '-':<14}{d['configuration']:<22}"
        + ", ".join(d["ports"])
        for d in devices
    ]
    return lines


def report(
    plan: dict, runs: list[dict], min_gbps: float, devices: list[dict] | None = None
) -> dict:
    """runs: per rail of each group {group, rail, server_node, client_node, server_log,
    client_log}. A pair passes when both sides parsed, the client's average reaches min_gbps,
    and GPU memory was used the way the plan says (dmabuf or peermem). devices: the NicDevice
    objects, whose state on the tested nodes the report shows (nic_devices)."""
    pairs = []
    for run in runs:
        view = group_view(plan, run["group"])
        rail = view["rails"][run["rail"]]
        pair = {
            **({"group": run["group"]} if _grouped(plan) else {}),
            "rail": run["rail"],
            "interface": rail["interface"],
            "network": rail["network_name"],
            "resource": rail["node_resource"],
            "server_node": run["server_node"],
            "client_node": run["client_node"],
        }
        problems = []
        sides = {}
        for side in ("server", "client"):
            try:
                sides[side] = parse(run.get(f"{side}_log") or "")
            except PerftestError as error:
                problems.append(f"{side}: {error}")
        client = sides.get("client")
        if client:
            pair.update(
                {
                    key: client[key]
                    for key in (
                        "bw_average_gbps",
                        "bw_peak_gbps",
                        "msg_rate_mpps",
                        "bytes",
                        "iterations",
                        "link_type",
                        "device",
                        "gid_index",
                        "gpu_memory",
                        "cuda_device",
                    )
                }
            )
            if client["bw_average_gbps"] < min_gbps:
                problems.append(
                    f"average {client['bw_average_gbps']} Gb/s is below the "
                    f"threshold of {min_gbps} Gb/s"
                )
        for side, result in sides.items():
            used = result["gpu_memory"]
            if used != plan["gpu"]["memory"]:
                how = "not used" if used == "none" else f"registered by {used}"
                problems.append(
                    f"{side}: GPU memory was {how} (expected "
                    f"{plan['gpu']['memory']}): GPUDirect RDMA did not happen"
                )
        if "server" in sides:
            pair["server_device"] = sides["server"]["device"]
        pair["passed"] = not problems
        pair["problems"] = problems
        pairs.append(pair)
    tested = sorted({n for p in pairs for n in (p["server_node"], p["client_node"])})
    nics = nic_devices(devices or [], tested)
    return {
        "passed": bool(pairs) and all(p["passed"] for p in pairs),
        "min_gbps": min_gbps,
        "gpu_memory": plan["gpu"]["memory"],
        "pairs": pairs,
        "nic_devices": nics,
        "table": table(pairs) + ([""] if nics else []) + nic_table(nics),
    }


def table(pairs: list[dict]) -> list[str]:
    width = max((len(p["group"]) for p in pairs if "group" in p), default=0)
    group = f"{'group':<{width + 2}}" if width else ""
    lines = [
        f"{group}{'rail':<5}{'server -> client':<34}{'device':<9}{'link':<10}{'GID':<5}"
        f"{'avg Gb/s':>10}{'peak Gb/s':>11}{'Mpps':>10}  {'GPU memory':<11}result"
    ]
    for p in pairs:
        lines.append(
            (f"{p['group']:<{width + 2}}" if width else "")
            + f"{p['rail']:<5}{p['server_node'] + ' -> ' + p['client_node']:<34}"
            f"{p.get('device') or '-':<9}{p.get('link_type') or '-':<10}"
            f"{'-' if p.get('gid_index') is None else p['gid_index']:<5}"
            f"{p.get('bw_average_gbps', '-'):>10}{p.get('bw_peak_gbps', '-'):>11}"
            f"{p.get('msg_rate_mpps', '-'):>10}  {p.get('gpu_memory') or '-':<11}"
            + ("pass" if p["passed"] else "FAIL: " + "; ".join(p["problems"]))
        )
    return lines


def server_addresses(plan: dict, servers: list[dict]) -> list[str]:
    """Each rail's server net1 address, from the pods' k8s.v1.cni.cncf.io/network-status."""
    addresses = []
    for rail in plan["rails"]:
        name = pod_name(plan, "server", rail)
        pod = next((p for p in servers if p["metadata"]["name"] == name), None)
        if pod is None:
            raise ValueError(
                f"servers: expected the server pod {name}; got "
                f"{[p['metadata']['name'] for p in servers]}"
            )
        raw = (pod["metadata"].get("annotations") or {}).get(NETWORK_STATUS, "[]")
        net1 = next((n for n in json.loads(raw) if n.get("interface") == "net1"), None)
        if not net1 or not net1.get("ips"):
            raise ValueError(
                f"servers: pod {name} has no net1 address in its {NETWORK_STATUS} annotation "
                f"({raw}): did Multus attach {rail['network_name']}?"
            )
        addresses.append(net1["ips"][0])
    return addresses


def eligible_nodes(plan: dict, nodes: list[dict]) -> tuple[list[str], dict[str, str]]:
    """Nodes that can run a test pod: schedulable, with a GPU and every rail's resource."""
    eligible, ineligible = [], {}
    wanted = ["nvidia.com/gpu", *[rail["node_resource"] for rail in plan["rails"]]]
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        missing = [
            r
            for r in wanted
            if not str(allocatable.get(r, "0")).isdigit() or int(str(allocatable.get(r, "0"))) < 1
        ]
        if (node.get("spec") or {}).get("unschedulable"):
            ineligible[name] = "unschedulable (cordoned)"
        elif missing:
            ineligible[name] = "advertises no " + ", ".join(missing)
        else:
            eligible.append(name)
    return eligible, ineligible


def runs_from_logs(plan: dict, logs: dict[str, str], pairs: list[list[str]]) -> list[dict]:
    """The runs report() judges, from the pods' logs by pod name (a missing log is empty);
    pairs: [server node, client node] of each node group, in the plan's order."""
    views = group_plans(plan)
    if len(pairs) != len(views) or any(len(p) != 2 for p in pairs):
        raise ValueError(
            f"pairs: expected [server node, client node] for each of the {len(views)} node "
            f"group(s); got {pairs!r}"
        )
    return [
        {
            "group": view["name"],
            "rail": rail["index"],
            "server_node": server_node,
            "client_node": client_node,
            "server_log": logs.get(pod_name(view, "server", rail), ""),
            "client_log": logs.get(pod_name(view, "client", rail), ""),
        }
        for view, (server_node, client_node) in zip(views, pairs, strict=True)
        for rail in view["rails"]
    ]
