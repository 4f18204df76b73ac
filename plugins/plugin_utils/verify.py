"""The GPUDirect bandwidth test: a server pod and a client pod per node group, and the report.

Each pod holds a whole node's worth of the test: it asks for the GPUs it may choose from (by
default all the node advertises) and one of each rail's RDMA resource, attaches every rail's
network (net1 is rail 0's, net2 rail 1's, ...), may lock memory (IPC_LOCK), and runs
verify_test.sh (beside this file). For each rail the script finds the RDMA device and GID index
behind the interface and the GPU closest to that device on the PCIe tree (`nvidia-smi topo -m`),
runs one ib_write_bw per rail, all at once, and prints the matrix and each rail's output between
markers. The client gets the servers' addresses, one per rail. With node groups, each group is
tested between two of its own nodes, on its own rails and networks: the pods carry the group's
name, and the report one pair per rail of every group.

A pair passes when both sides parsed, the client's average reaches the threshold, GPU memory was
used the way the plan says, and on both sides the GPU and the NIC share a PCIe switch (PIX or
PXB); PHB, NODE or SYS (the path crosses the CPU's root complex), or a pod that printed no
matrix, fail the pair unless cross-switch pairs are allowed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    group_plans,
    new_object,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.nic_configuration import (
    nic_type,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.nic_configuration import condition
from ansible_collections.gpudirect.rdma.plugins.plugin_utils import (
    floors,
    host_checks,
    nccl_settings,
    topology,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.perftest import PerftestError, parse

COMPONENT = "verify"
ROLE_LABEL = "gpudirect.rdma/verify-role"
GROUP_LABEL = "gpudirect.rdma/node-group"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
SCRIPT = (Path(__file__).parent / "verify_test.sh").read_text()
# The script's lines around the matrix and each rail's output, and its line naming a rail's pair.
_RAIL_LINE = re.compile(
    r"^gpudirect-rdma-verify: rail (?P<rail>\d+) (?P<role>server|client) on (?P<nic>\S+) "
    r"\((?P<link>[^)]*)\) (?P<address>\S+) GPU (?P<gpu>\d+) (?P<bus>\S+) (?P<relation>\S+): "
)
_OUTPUT = re.compile(
    r"^gpudirect-rdma-verify: rail (\d+) output begin\n(.*?)^gpudirect-rdma-verify: rail \1 "
    r"output end \(exit (\d+)\)$",
    re.MULTILINE | re.DOTALL,
)
_TOPOLOGY = re.compile(
    r"^gpudirect-rdma-verify: topology \(nvidia-smi topo -m\) begin\n(.*?)"
    r"^gpudirect-rdma-verify: topology end$",
    re.MULTILINE | re.DOTALL,
)
# How the script decided a rail's GPU (pair_rails in verify_test.sh): source matrix, numa (the
# NIC's NUMA node, no matrix to read) or first (GPU 0, nothing to go by).
_PAIRING = re.compile(
    r"^gpudirect-rdma-verify: pairing rail (?P<rail>\d+) nic (?P<nic>\S+) pf (?P<pf>\S+) "
    r"found-as (?P<found>\S+) gpu (?P<gpu>\d+) relation (?P<relation>\S+) "
    r"shared (?P<shared>\S+) source (?P<source>\S+)$",
    re.MULTILINE,
)
_UNREADABLE = re.compile(r"^gpudirect-rdma-verify: topology unreadable: (.*)$", re.MULTILINE)
# Relations whose path stays below the CPU: the GPU and the NIC share a PCIe switch.
SAME_SWITCH = ("PIX", "PXB")
_MEANS = {
    "PHB": "through a PCIe host bridge, the CPU",
    "NODE": "between PCIe host bridges of one NUMA node",
    "SYS": "across the interconnect between NUMA nodes",
}


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


def pod_name(plan: dict, role: str) -> str:
    """plan: a group's view."""
    group = f"{plan['name']}-" if _grouped(plan) else ""
    return f"gpudirect-rdma-verify-{group}{role}"


def bandwidth_pod(
    plan: dict,
    role: str,
    node: str,
    settings: dict,
    gpus: int,
    server_addresses: list[str] | None = None,
) -> dict:
    """plan: a group's view. gpus: how many GPUs the pod asks for, to choose each rail's from."""
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise ValueError(f"gpus: expected a whole number of GPUs of at least 1; got {gpus!r}")
    env = {
        "ROLE": role,
        "RAILS": str(len(plan["rails"])),
        "GPU_MEMORY": plan["gpu"]["memory"],
        "SIZE": str(settings["size"]),
        "QPS": str(settings["qps"]),
        "DURATION": str(settings["duration"]),
        "PORT": str(settings["port"]),
        "PERFTEST": settings["perftest"],
        # CUDA numbers the GPUs as nvidia-smi does, so --use_cuda=N is topo -m's GPU<N>.
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    if role == "client":
        env["SERVER_IPS"] = ",".join(server_addresses or [])
    resources = {"nvidia.com/gpu": str(gpus)}
    resources.update({rail["node_resource"]: "1" for rail in plan["rails"]})
    return new_object(
        "v1",
        "Pod",
        pod_name(plan, role),
        COMPONENT,
        namespace=plan["network_namespace"],
        labels={ROLE_LABEL: role, **({GROUP_LABEL: plan["name"]} if _grouped(plan) else {})},
        annotations={NETWORKS_ANNOTATION: ",".join(rail["network_name"] for rail in plan["rails"])},
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


def server_pods(plan: dict, server_node: str, settings: dict, gpus: int) -> list[dict]:
    return [bandwidth_pod(plan, "server", server_node, settings, gpus)]


def client_pods(
    plan: dict, client_node: str, settings: dict, addresses: list[str], gpus: int
) -> list[dict]:
    if len(addresses) != len(plan["rails"]):
        raise ValueError(
            f"server_addresses: expected one per rail ({len(plan['rails'])}); got {addresses!r}"
        )
    return [bandwidth_pod(plan, "client", client_node, settings, gpus, addresses)]


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
) -> dict:
    """runs: per rail of each group {group, rail, server_node, client_node, server_log,
    client_log, server_path, client_path, server_rate, client_rate} (runs_from_logs). A pair
    passes when both sides parsed, the client's average reaches the pair's floor (min_gbps when
    set, else derived from the ports' rates: floors.pair_floor), GPU memory was used the way
    the plan says (dmabuf or peermem), and on both sides the GPU and the NIC share a PCIe switch
    (PIX or PXB; with allow_cross_switch other paths are warnings). devices: the NicDevice
    objects, whose state on the tested nodes the report shows (nic_devices). findings: the host
    checks (host_findings); one that failed fails the report."""
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
    return {
        "passed": bool(pairs) and all(p["passed"] for p in pairs) and not host_failed,
        "min_gbps": min_gbps,
        "allow_cross_switch": allow_cross_switch,
        "gpu_memory": plan["gpu"]["memory"],
        "pairs": pairs,
        "nic_devices": nics,
        "host_checks": findings,
        "nccl_settings": settings,
        "nccl_config_maps": config_maps,
        "table": table(pairs)
        + host_table(findings)
        + nccl_table(settings)
        + ([""] if nics else [])
        + nic_table(nics),
    }


def nccl_environments(plan: dict, pairs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Per node group the NCCL environment its training jobs need (plugin_utils.nccl_settings),
    and the ConfigMaps of the groups whose every pair passed (a failed group publishes none)."""
    settings, config_maps = [], []
    grouped = _grouped(plan)
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


def nccl_table(settings: list[dict]) -> list[str]:
    lines = []
    for entry in settings:
        where = f" of group {entry['group']}" if "group" in entry else ""
        state = "ConfigMap" if entry["published"] else "not published (a pair failed):"
        lines += ["", f"NCCL settings{where}, {state} {entry['config_map']}"]
        lines += [f"  {key}={value}" for key, value in entry["env"].items()]
        lines += [f"  note: {note}" for note in entry["notes"]]
    return lines


def host_table(findings: list[dict]) -> list[str]:
    """A line per host check that did not pass: node, check, rail, what is wrong, the fix."""
    lines = []
    for f in findings:
        if f["status"] == "ok":
            continue
        where = (f"group {f['group']} " if "group" in f else "") + f["node"]
        rail = f" rail {f['rail']}" if "rail" in f else ""
        fix = f" Fix: {f['fix']}." if f.get("fix") else ""
        label = "FAIL" if f["status"] == "failure" else f["status"]
        lines.append(f"host {where} {f['check']}{rail} {label}: {f['detail']}.{fix}")
    passed = sum(1 for f in findings if f["status"] == "ok")
    if findings:
        lines.insert(0, f"host checks: {passed} of {len(findings)} passed")
        lines.insert(0, "")
    return lines


def _path_cell(path: dict | None) -> str:
    if not path or path.get("gpu") is None:
        return "-"
    return f"GPU{path['gpu']} {path['relation']}"


def table(pairs: list[dict]) -> list[str]:
    """The pairs as aligned columns, then each pair's problems and warnings on lines of their
    own (the table stays narrow enough for a terminal)."""
    width = max((len(p["group"]) for p in pairs if "group" in p), default=0)
    group = f"{'group':<{width + 2}}" if width else ""
    nodes = max((len(p["server_node"]) + len(p["client_node"]) + 4 for p in pairs), default=16)
    nodes = max(nodes, 16) + 2
    lines = [
        f"{group}{'rail':<5}{'server -> client':<{nodes}}{'NIC':<9}{'link':<10}{'GID':<5}"
        f"{'server GPU':<14}{'client GPU':<14}{'avg Gb/s':>10}{'floor Gb/s':>12}"
        f"{'peak Gb/s':>11}{'Mpps':>10}  {'GPU memory':<11}result"
    ]
    notes = []
    for p in pairs:
        where = (f"group {p['group']} " if "group" in p else "") + f"rail {p['rail']}"
        lines.append(
            (f"{p['group']:<{width + 2}}" if width else "")
            + f"{p['rail']:<5}{p['server_node'] + ' -> ' + p['client_node']:<{nodes}}"
            f"{p.get('device') or '-':<9}{p.get('link_type') or '-':<10}"
            f"{'-' if p.get('gid_index') is None else p['gid_index']:<5}"
            f"{_path_cell(p.get('server_gpu')):<14}{_path_cell(p.get('client_gpu')):<14}"
            f"{p.get('bw_average_gbps', '-'):>10}{p.get('floor_gbps', '-'):>12}"
            f"{p.get('bw_peak_gbps', '-'):>11}"
            f"{p.get('msg_rate_mpps', '-'):>10}  {p.get('gpu_memory') or '-':<11}"
            + ("pass" if p["passed"] else "FAIL")
            + (" (warnings)" if p["passed"] and p.get("warnings") else "")
        )
        notes += [f"{where} FAIL: {problem}" for problem in p["problems"]]
        notes += [f"{where} warning: {warning}" for warning in p.get("warnings", [])]
    reasons: dict[tuple, list[str]] = {}
    for p in pairs:
        where = (f"group {p['group']} " if "group" in p else "") + f"rail {p['rail']}"
        reasons.setdefault((p.get("floor_gbps"), p.get("floor")), []).append(where)
    why = [
        f"floor {gbps:g} Gb/s: {reason} ({', '.join(where)})"
        for (gbps, reason), where in reasons.items()
        if gbps is not None
    ]
    return lines + ([""] + why if why else []) + ([""] + notes if notes else [])


def server_addresses(plan: dict, servers: list[dict]) -> list[str]:
    """Each rail's server address: net<N+1> of the server pod's
    k8s.v1.cni.cncf.io/network-status for rail N."""
    name = pod_name(plan, "server")
    pod = next((p for p in servers if p["metadata"]["name"] == name), None)
    if pod is None:
        raise ValueError(
            f"servers: expected the server pod {name}; got "
            f"{[p['metadata']['name'] for p in servers]}"
        )
    raw = (pod["metadata"].get("annotations") or {}).get(NETWORK_STATUS, "[]")
    statuses = {n.get("interface"): n for n in json.loads(raw)}
    addresses = []
    for rail in plan["rails"]:
        interface = f"net{rail['index'] + 1}"
        status = statuses.get(interface) or {}
        if not status.get("ips"):
            raise ValueError(
                f"servers: pod {name} has no {interface} address in its {NETWORK_STATUS} "
                f"annotation ({raw}): did Multus attach {rail['network_name']}?"
            )
        addresses.append(status["ips"][0])
    return addresses


def _allocatable(node: dict, resource: str) -> int:
    """How many of resource the node advertises as allocatable (0 when absent or not a count)."""
    value = str(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0"))
    return int(value) if value.isdigit() else 0


def eligible_nodes(plan: dict, nodes: list[dict]) -> tuple[list[str], dict[str, str]]:
    """Nodes that can run a test pod: schedulable, with a GPU and every rail's resource."""
    eligible, ineligible = [], {}
    wanted = ["nvidia.com/gpu", *[rail["node_resource"] for rail in plan["rails"]]]
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        missing = [r for r in wanted if _allocatable(node, r) < 1]
        if (node.get("spec") or {}).get("unschedulable"):
            ineligible[name] = "unschedulable (cordoned)"
        elif missing:
            ineligible[name] = "advertises no " + ", ".join(missing)
        else:
            eligible.append(name)
    return eligible, ineligible


def pod_log(log: str) -> dict:
    """A test pod's log taken apart: per rail the GPU the script chose and how (its pairing
    line: NIC, PF, GPU, relation, shared with, source; the rail line's PCI bus id), and the
    rail's ib_write_bw output with its exit status; the matrix it printed, the script's error
    reading it, and what topology.pair_rails reads in that matrix for the same rails (check:
    None when it agrees with the script, else what it found)."""
    found = _TOPOLOGY.search(log)
    matrix = found[1] if found else None
    unreadable = _UNREADABLE.search(log)
    rails: dict[int, dict] = {}
    for match in _PAIRING.finditer(log):
        rails[int(match["rail"])] = {
            "rail": int(match["rail"]),
            "nic": match["nic"],
            "pf": None if match["pf"] == "-" else match["pf"],
            "found_as": None if match["found"] == "-" else match["found"],
            "gpu": int(match["gpu"]),
            "relation": match["relation"],
            "shared_with": None if match["shared"] == "-" else int(match["shared"]),
            "source": match["source"],
        }
    for line in log.splitlines():
        chosen = _RAIL_LINE.match(line)
        if chosen:
            rails.setdefault(int(chosen["rail"]), {}).update(
                bus_id=None if chosen["bus"] == "?" else chosen["bus"]
            )
    for output in _OUTPUT.finditer(log):
        rails.setdefault(int(output[1]), {}).update(output=output[2], exit=int(output[3]))
    return {
        "matrix": matrix,
        "topology_error": unreadable[1] if unreadable else None,
        "rails": rails,
        "checks": _cross_check(matrix, rails),
    }


def _cross_check(matrix: str | None, rails: dict[int, dict]) -> dict[int, str]:
    """Per rail where they differ, what topology.pair_rails reads in the pod's matrix against
    what the pod's script decided from it (the two readings of one format must agree)."""
    decided = [rails[r] for r in sorted(rails) if "source" in rails[r]]
    if matrix is None or not decided:
        return {}
    try:
        expected = topology.pair_rails(
            topology.parse(matrix), [(rail["nic"], rail["pf"]) for rail in decided]
        )
    except topology.TopologyError as error:
        return {
            rail["rail"]: f"the collection reads no pairing in it ({error})"
            for rail in decided
            if rail["source"] == "matrix"
        }
    checks = {}
    for rail, wanted in zip(decided, expected, strict=True):
        mine = (rail["gpu"], rail["relation"]) if rail["source"] == "matrix" else (None, "unknown")
        if mine != (wanted["gpu"], wanted["relation"]):
            theirs = (
                f"GPU {wanted['gpu']} {wanted['relation']}"
                if wanted["gpu"] is not None
                else "no GPU for it"
            )
            checks[rail["rail"]] = f"the collection reads {theirs} in it"
    return checks


def gpu_path(log: dict, rail: int) -> dict:
    """The GPU a side's rail used and its path to the rail's NIC, as the pod decided and
    printed it (relation unknown where the pod read no matrix); why, for an unknown path; and
    disagreement, where topology.pair_rails reads the pod's matrix otherwise."""
    chosen = log["rails"].get(rail) or {}
    path = {
        "gpu": chosen.get("gpu"),
        "bus_id": chosen.get("bus_id"),
        "nic": chosen.get("nic"),
        "relation": chosen.get("relation") or "unknown",
        "source": chosen.get("source"),
    }
    for key in ("pf", "found_as", "shared_with"):
        if chosen.get(key) is not None:
            path[key] = chosen[key]
    if path["relation"] == "unknown":
        path["why"] = _unknown_path(log, chosen)
    if rail in log["checks"]:
        path["disagreement"] = log["checks"][rail]
    return path


def _unknown_path(log: dict, chosen: dict) -> str:
    how = {
        "numa": "the script took the first GPU on the NIC's NUMA node",
        "first": "the script took GPU 0",
    }.get(chosen.get("source"), "the script chose no GPU")
    if log["topology_error"]:
        return f"the pod's `nvidia-smi topo -m` did not read: {log['topology_error']}; {how}"
    if log["matrix"] is None:
        return f"the pod printed no `nvidia-smi topo -m` matrix; {how}"
    if not chosen:
        return "the pod stopped before it chose a GPU for the rail"
    pf = f" nor its PF {chosen['pf']}" if chosen.get("pf") else ""
    return f"{chosen['nic']}{pf} is not in the pod's `nvidia-smi topo -m` matrix; {how}"


def gpu_counts(nodes: list[dict]) -> dict[str, int]:
    """How many GPUs (nvidia.com/gpu) each node advertises as allocatable."""
    return {node["metadata"]["name"]: _allocatable(node, "nvidia.com/gpu") for node in nodes}


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
            found.append({**({"group": view["name"]} if _grouped(plan) else {}), **finding})
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
