"""What a test pod prints (verify_test.sh's protocol), taken apart: the matrix between its markers,
per rail the pairing line (how the script chose the rail's GPU), the rail line and the rail's
ib_write_bw output with its exit status; and the GPU-NIC path of each rail, cross-checked with
topology.pair_rails over the same matrix (the two readings of one format must agree)."""

from __future__ import annotations

import re

from ansible_collections.gpudirect.rdma.plugins.plugin_utils import topology

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
