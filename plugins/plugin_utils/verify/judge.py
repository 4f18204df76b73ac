"""The bandwidth test judged: a pair passes when both sides parsed, the client's average reaches
the pair's floor, GPU memory was used the way the plan says, and on both sides the GPU and the NIC
share a PCIe switch (PIX or PXB); PHB, NODE or SYS (the path crosses the CPU's root complex), or a
pod that printed no matrix, fail the pair unless cross-switch pairs are allowed. With the host
checks, the NICs' firmware state and each group's NCCL settings, the report."""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import group_plans
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (
    nic_type,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.nic_configuration import condition
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import (
    floors,
    host_checks,
    nccl_settings,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.perftest import PerftestError, parse
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.log import gpu_path, pod_log
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.pods import (
    COMPONENT,
    group_view,
    pod_name,
    several_groups,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.verify.tables import (
    host_table,
    nccl_table,
    nic_table,
    run_lines,
    table,
)

# Relations whose path stays below the CPU: the GPU and the NIC share a PCIe switch.
SAME_SWITCH = ("PIX", "PXB")

_MEANS = {
    "PHB": "through a PCIe host bridge, the CPU",
    "NODE": "between PCIe host bridges of one NUMA node",
    "SYS": "across the interconnect between NUMA nodes",
}


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


def path_finding(side: str, path: dict) -> str | None:
    """What is wrong with a side's GPU-NIC path, with what to do; None for PIX or PXB."""
    relation = path["relation"]
    nic = path.get("nic") or "the rail's NIC"
    gpu = f"GPU {path['gpu']}" + (f" ({path['bus_id']})" if path.get("bus_id") else "")
    if path.get("disagreement"):
        return (
            f"{side}: the pod paired {nic} with {gpu} {relation}, but in the matrix the pod "
            f"printed {path['disagreement']}: the pod's reading of `nvidia-smi topo -m` and the "
            "collection's disagree, so the pairing cannot be judged (keep the pods with "
            "verify_keep_pods and report their logs)"
        )
    if relation in SAME_SWITCH:
        return None
    if relation in _MEANS:
        return (
            f"{side}: {gpu} reaches {nic} through {relation} ({_MEANS[relation]}): no GPU the "
            f"pod holds shares a PCIe switch with {nic}. If the node has more GPUs than the pod "
            "was given, give it every one (verify_gpus: 0); otherwise the NIC sits on a root "
            "port of its own (its slot, or the BIOS's PCIe bifurcation), so GPUDirect traffic "
            "crosses the CPU"
        )
    return (
        f"{side}: whether {gpu} shares a PCIe switch with {nic} is unknown: "
        f"{path.get('why') or 'the pod printed no pairing'} (is nvidia-smi in the image and the "
        "GPU Operator's toolkit injecting it?)"
    )


def report(
    plan: dict,
    runs: list[dict],
    min_gbps: float | None,
    devices: list[dict] | None = None,
    allow_cross_switch: bool = False,
    findings: list[dict] | None = None,
    context: dict | None = None,
) -> dict:
    """runs: per rail of each group {group, rail, server_node, client_node, server_log,
    client_log, server_path, client_path, server_rate, client_rate} (runs_from_logs). A pair
    passes when both sides parsed, the client's average reaches the pair's floor (min_gbps when
    set, else derived from the ports' rates: floors.pair_floor), GPU memory was used the way
    the plan says (dmabuf or peermem), and on both sides the GPU and the NIC share a PCIe switch
    (PIX or PXB; with allow_cross_switch other paths are warnings). devices: the NicDevice
    objects, whose state on the tested nodes the report shows (nic_devices). findings: the host
    checks (host_findings); one that failed fails the report. context: what the run was (date,
    cluster, inventory, versions), which the report carries with each node group's method,
    fabric and nodes."""
    pairs = []
    for run in runs:
        view = group_view(plan, run["group"])
        rail = view["rails"][run["rail"]]
        pair = {
            **({"group": run["group"]} if several_groups(plan) else {}),
            "rail": run["rail"],
            "interface": rail["interface"],
            "network": rail["network_name"],
            "resource": rail["node_resource"],
            "server_node": run["server_node"],
            "client_node": run["client_node"],
            "server_port_gbps": run.get("server_rate"),
            "client_port_gbps": run.get("client_rate"),
        }
        floor = floors.pair_floor(
            min_gbps, {side: run.get(f"{side}_rate") for side in ("server", "client")}
        )
        pair["floor_gbps"], pair["floor"] = floor["gbps"], floor["why"]
        problems, warnings = [], []
        for side in ("server", "client"):
            path = run.get(f"{side}_path") or gpu_path(pod_log(""), run["rail"])
            pair[f"{side}_gpu"] = path
            finding = path_finding(side, path)
            if finding and allow_cross_switch and not path.get("disagreement"):
                warnings.append(finding)
            elif finding and path.get("disagreement"):
                problems.append(finding)
            elif finding:
                problems.append(finding + "; set verify_allow_cross_switch: true to accept it")
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
            if client["bw_average_gbps"] < floor["gbps"]:
                problems.append(
                    f"average {client['bw_average_gbps']} Gb/s is below the floor of "
                    f"{floor['gbps']:g} Gb/s ({floor['why']})"
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
            pair["server_gid_index"] = sides["server"]["gid_index"]
        pair["passed"] = not problems
        pair["problems"] = problems
        pair["warnings"] = warnings
        pairs.append(pair)
    tested = sorted({n for p in pairs for n in (p["server_node"], p["client_node"])})
    nics = nic_devices(devices or [], tested)
    findings = findings or []
    host_failed = [f for f in findings if f["status"] == "failure"]
    settings, config_maps = nccl_environments(plan, pairs)
    about = about_run(plan, pairs, context or {})
    return {
        "run": about,
        "passed": bool(pairs) and all(p["passed"] for p in pairs) and not host_failed,
        "min_gbps": min_gbps,
        "allow_cross_switch": allow_cross_switch,
        "gpu_memory": plan["gpu"]["memory"],
        "pairs": pairs,
        "nic_devices": nics,
        "host_checks": findings,
        "nccl_settings": settings,
        "nccl_config_maps": config_maps,
        "heading": run_lines(about),
        "table": table(pairs)
        + host_table(findings)
        + nccl_table(settings)
        + ([""] if nics else [])
        + nic_table(nics),
    }


def about_run(plan: dict, pairs: list[dict], run: dict) -> dict:
    """What the run was: as given (date, cluster, inventory, versions), with each node group's
    method, fabric and tested nodes."""
    tested: dict = {}
    for pair in pairs:
        nodes = tested.setdefault(pair.get("group"), [])
        nodes += [n for n in (pair["server_node"], pair["client_node"]) if n not in nodes]
    groups = [
        {
            "name": group["name"],
            "method": group["method"],
            "fabric": group["fabric"],
            "nodes": tested.get(group["name"] if several_groups(plan) else None, []),
        }
        for group in plan["groups"]
    ]
    return {**run, "groups": groups}


def nccl_environments(plan: dict, pairs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Per node group the NCCL environment its training jobs need (plugin_utils.nccl_settings),
    and the ConfigMaps of the groups whose every pair passed (a failed group publishes none)."""
    settings, config_maps = [], []
    grouped = several_groups(plan)
    for view in group_plans(plan):
        mine = [p for p in pairs if p.get("group") == view["name"]] if grouped else pairs
        if not mine:
            continue
        env, notes = nccl_settings.environment(plan, view, mine)
        name = nccl_settings.config_map_name(view, grouped)
        passed = all(p["passed"] for p in mine)
        settings.append(
            {
                **({"group": view["name"]} if grouped else {}),
                "config_map": f"{view['network_namespace']}/{name}",
                "published": passed,
                "env": env,
                "notes": notes,
            }
        )
        if passed:
            nodes = [mine[0]["server_node"], mine[0]["client_node"]]
            config_maps.append(nccl_settings.config_map(view, grouped, env, nodes, COMPONENT))
    return settings, config_maps


def host_findings(plan: dict, logs: dict[str, str], pairs: list[list[str]]) -> list[dict]:
    """The host checks (plugin_utils.host_checks) of every tested node, from the facts its test
    pod printed; with node groups each finding names its group."""
    found = []
    for view, (server_node, client_node) in zip(group_plans(plan), pairs, strict=True):
        by_node = {
            server_node: logs.get(pod_name(view, "server"), ""),
            client_node: logs.get(pod_name(view, "client"), ""),
        }
        for finding in host_checks.judge(view, by_node, view["rails"]):
            found.append({**({"group": view["name"]} if several_groups(plan) else {}), **finding})
    return found


def runs_from_logs(plan: dict, logs: dict[str, str], pairs: list[list[str]]) -> list[dict]:
    """The runs report() judges, from the pods' logs by pod name (a missing log is empty);
    pairs: [server node, client node] of each node group, in the plan's order. A rail whose
    output the pod never printed (the script stopped first) is given the pod's whole log."""
    views = group_plans(plan)
    if len(pairs) != len(views) or any(len(p) != 2 for p in pairs):
        raise ValueError(
            f"pairs: expected [server node, client node] for each of the {len(views)} node "
            f"group(s); got {pairs!r}"
        )
    runs = []
    for view, (server_node, client_node) in zip(views, pairs, strict=True):
        raw = {role: logs.get(pod_name(view, role), "") for role in ("server", "client")}
        split = {role: pod_log(text) for role, text in raw.items()}
        for rail in view["rails"]:
            index = rail["index"]
            run = {
                "group": view["name"],
                "rail": index,
                "server_node": server_node,
                "client_node": client_node,
            }
            for role in ("server", "client"):
                output = (split[role]["rails"].get(index) or {}).get("output")
                run[f"{role}_log"] = raw[role] if output is None else output
                run[f"{role}_path"] = gpu_path(split[role], index)
                rate = (host_checks.facts(raw[role]).get(f"rail{index}-rate") or [None])[0]
                run[f"{role}_rate"] = floors.port_rate(rate)
            runs.append(run)
    return runs
