"""`nvidia-smi topo -m` output in, the GPU-NIC PCIe relations and each rail's GPU out (pure).

The matrix has one row per GPU and NIC and one column per GPU and NIC, then (on GPU rows) the
CPU affinity, the NUMA affinity and, in newer drivers, the GPU NUMA ID. nvidia-smi separates the
cells with tabs and wraps the header line in ANSI underline codes (`ESC[4m` ... `ESC[0m`), also
when its output goes to a file or a pipe; a GPU row then has an empty cell before its GPU NUMA
ID. A copy pasted from a terminal has spaces instead of tabs, which is read too (the cells of the
matrix hold no space; the affinity columns are read by position). NICs are named NIC<n> with a
"NIC Legend" mapping each to its RDMA device (NIC0: mlx5_0, NIC4: mlx5_bond_0); older drivers
name the columns after the RDMA device itself.

Strict about what it cannot understand: a header cell that is neither one of the affinity
columns nor a device with a row of its own, a row of no header column, a cell that is no
relation, a row cut short, a NIC without its legend entry: each is a TopologyError that says
which, never a shifted column.

The relations, closest first: PIX (at most one PCIe bridge), PXB (several bridges, no host
bridge), PHB (through a PCIe host bridge, the CPU), NODE (between host bridges of one NUMA node),
SYS (across the NUMA interconnect). NV<n> (NVLink) only joins two GPUs.

pair_rails is the rule that gives each rail its GPU. The verification pods decide with the awk
program in verify_test.sh, which implements the same rule over the same format (the shell has no
Python); tests/unit/plugins/plugin_utils/test_topology_contract.py runs both over every matrix
of the corpus and requires the same answer, messages included, and the report compares what a
pod printed with what pair_rails finds in the matrix the pod printed.
"""

from __future__ import annotations

import re

RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
# The columns after the devices, in nvidia-smi's order; a pasted copy splits each into words.
AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU = re.compile(r"^GPU(\d+)$")
_LEGEND_NAME = re.compile(r"^NIC\d+$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_NVLINK = re.compile(r"^NV\d+$")


class TopologyError(ValueError):
    """The output is not a `nvidia-smi topo -m` matrix, or is cut short."""


def _cells(line: str) -> list[str]:
    """A line's cells: split at tabs (empty cells kept), or at runs of spaces (a pasted copy)."""
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t")]
    return line.split()


def _header_columns(line: str) -> list[str]:
    """The header's column titles: the non-empty cells, with a pasted copy's words joined back
    into the affinity columns' titles."""
    words = [cell for cell in _cells(line) if cell]
    if "\t" in line:
        return words
    titles, index = [], 0
    while index < len(words):
        for title in AFFINITY_COLUMNS:
            parts = title.split()
            if words[index : index + len(parts)] == parts:
                titles.append(title)
                index += len(parts)
                break
        else:
            titles.append(words[index])
            index += 1
    return titles


def _lines(text: str) -> list[str]:
    return [_ANSI.sub("", line).rstrip("\r\n") for line in text.splitlines()]


def _header(lines: list[str]) -> int:
    for number, line in enumerate(lines):
        cells = [cell for cell in _cells(line) if cell]
        if cells and cells[0] == "GPU0":
            return number
    raise TopologyError(
        "expected the matrix of `nvidia-smi topo -m` (a header line starting with GPU0); found "
        + (f"{len(lines)} line(s) without one" if lines else "no output")
    )


def _rows(lines: list[str], devices: list[str]) -> tuple[dict[str, list[str]], bool]:
    """Each device's row (its cells after the label), from the header to the blank line; and
    whether that blank line came (else the output ended inside the matrix)."""
    rows: dict[str, list[str]] = {}
    for line in lines:
        if not line.strip():
            if rows:
                return rows, True  # the blank line before the legend
            continue
        cells = _cells(line)
        label = cells[0]
        if label not in devices:
            raise TopologyError(
                f"a row of the matrix starts with {label!r}, which is no column of the header "
                f"({', '.join(devices)}): the output is not from `nvidia-smi topo -m`"
            )
        rows[label] = cells[1:]
    return rows, False


def parse(text: str) -> dict:
    """{'nics': [{name, gpus: [{index, relation}]}], 'gpus': [{index, nics: [{name, relation}],
    cpu_affinity, numa_affinity}]}, each list of relations closest first; TopologyError when the
    output is not such a matrix, is cut short, or has no NIC."""
    if not isinstance(text, str):
        raise TopologyError(f"expected the output as text; got {type(text).__name__}")
    lines = _lines(text)
    start = _header(lines)
    columns, devices = _header_columns(lines[start]), []
    for column in columns:
        if column in AFFINITY_COLUMNS:
            continue
        if any(title in columns[: columns.index(column)] for title in AFFINITY_COLUMNS):
            raise TopologyError(
                f"header cell {column!r} follows the affinity columns: the output is not from "
                "`nvidia-smi topo -m`"
            )
        devices.append(column)
    rows, complete = _rows(lines[start + 1 :], devices)
    missing = [d for d in devices if d not in rows]
    if missing:
        unknown = [d for d in missing if not _GPU.match(d) and not _LEGEND_NAME.match(d)]
        if unknown and complete:
            raise TopologyError(
                f"header cell {unknown[0]!r} is neither a device with a row of its own nor one "
                f"of {', '.join(AFFINITY_COLUMNS)}"
            )
        raise TopologyError(
            f"no row for {', '.join(missing)}: the output is cut short or not from "
            "`nvidia-smi topo -m`"
        )
    for label in devices:
        values = rows[label]
        if len(values) < len(devices) or any(not v for v in values[: len(devices)]):
            filled = len([v for v in values[: len(devices)] if v])
            raise TopologyError(
                f"row {label} has {filled} cell(s), expected {len(devices)} (one per device in "
                "the header): the output is cut short or not from `nvidia-smi topo -m`"
            )
    legend = {}
    for line in lines[start:]:
        match = _LEGEND.match(line)
        if match:
            legend[match[1]] = match[2]
    gpus = [d for d in devices if _GPU.match(d)]
    nics = [d for d in devices if not _GPU.match(d)]
    names = {}
    for nic in nics:
        if _LEGEND_NAME.match(nic):
            if nic not in legend:
                raise TopologyError(
                    f"column {nic} has no entry in the NIC Legend (expected a line such as "
                    f"'{nic}: mlx5_0' below the matrix; the output may be cut short)"
                )
            names[nic] = legend[nic]
        else:
            names[nic] = nic
    relation = {}
    for gpu in gpus:
        for device in devices:
            value = rows[gpu][devices.index(device)]
            if device in nics and value not in RELATIONS:
                raise TopologyError(
                    f"{gpu} to {names[device]} ({device}): got {value!r}; expected one of "
                    + ", ".join(RELATIONS)
                )
            link = value == "X" or value in RELATIONS or _NVLINK.match(value)
            if device in gpus and not link:
                raise TopologyError(
                    f"{gpu} to {device}: got {value!r}; expected X, NV<n> or one of "
                    + ", ".join(RELATIONS)
                )
            relation[gpu, device] = value
    if not nics:
        raise TopologyError("the matrix has no NIC column: nvidia-smi sees no NIC on this node")
    affinity = {}
    for gpu in gpus:
        rest = [v for v in rows[gpu][len(devices) :] if v]
        affinity[gpu] = (rest[0] if rest else None, rest[1] if len(rest) > 1 else None)
    return {
        "nics": [
            {
                "name": names[nic],
                "gpus": sorted(
                    ({"index": int(g[3:]), "relation": relation[g, nic]} for g in gpus),
                    key=_closest,
                ),
            }
            for nic in nics
        ],
        "gpus": [
            {
                "index": int(gpu[3:]),
                # Closest first; among equals, in the matrix's order (sorted() is stable).
                "nics": sorted(
                    ({"name": names[n], "relation": relation[gpu, n]} for n in nics),
                    key=_closest,
                ),
                "cpu_affinity": affinity[gpu][0],
                "numa_affinity": affinity[gpu][1],
            }
            for gpu in sorted(gpus, key=lambda g: int(g[3:]))
        ],
    }


def _closest(item: dict) -> tuple[int, int]:
    return (RELATIONS.index(item["relation"]), item.get("index", 0))


def pair_rails(topology: dict, rails: list[tuple[str, str | None]]) -> list[dict]:
    """Each rail's GPU, in rail order: rails are (RDMA device, its PF's RDMA device or None).

    A rail's NIC is its device in the matrix, else (a VF, which the matrix may not list) its
    PF's, which shares its PCIe switch. Its GPU is the closest to that NIC (PIX, PXB, PHB, NODE,
    SYS); of several as close, the first by index that no earlier rail took; when every one of
    them is taken, the first, shared with the rail that took it first. A rail whose NIC is not
    in the matrix gets no GPU (gpu None, relation 'unknown')."""
    by_name = {nic["name"]: nic["gpus"] for nic in topology["nics"]}
    taken: dict[int, int] = {}
    chosen = []
    for rail, (device, pf) in enumerate(rails):
        nic = device if device in by_name else pf if pf in by_name else None
        entry = {"rail": rail, "nic": device, "matrix_nic": nic, "shared_with": None}
        if nic is None:
            chosen.append({**entry, "gpu": None, "relation": "unknown"})
            continue
        ranked = by_name[nic]
        closest = [g for g in ranked if g["relation"] == ranked[0]["relation"]]
        free = [g for g in closest if g["index"] not in taken]
        gpu = (free or closest)[0]
        if not free:
            entry["shared_with"] = taken[gpu["index"]]
        taken.setdefault(gpu["index"], rail)
        chosen.append({**entry, "gpu": gpu["index"], "relation": gpu["relation"]})
    return chosen
