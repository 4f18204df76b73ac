"""`nvidia-smi topo -m` output in, the GPU-NIC PCIe relations out (pure).

The matrix has one row per GPU and NIC and one column per GPU and NIC, then (on GPU rows) the
CPU affinity, the NUMA affinity and, in newer drivers, the GPU NUMA ID. nvidia-smi separates the
cells with tabs; a copy pasted from a terminal has spaces instead, which is read too (the cells
of the matrix hold no space; the last columns are read by position). NICs are named NIC<n> with
a "NIC Legend" mapping each to its RDMA device (NIC0: mlx5_0); older drivers name the columns
after the RDMA device itself.

The relations, closest first: PIX (at most one PCIe bridge), PXB (several bridges, no host
bridge), PHB (through a PCIe host bridge, the CPU), NODE (between host bridges of one NUMA node),
SYS (across the NUMA interconnect). NV<n> (NVLink) only joins two GPUs.
"""

from __future__ import annotations

import re

RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx5_\d+|mlx\d+_\d+)$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_NVLINK = re.compile(r"^NV\d+$")


class TopologyError(ValueError):
    """The output is not a `nvidia-smi topo -m` matrix, or is cut short."""


def _cells(line: str) -> list[str]:
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t")]
    return line.split()


def _header(lines: list[str]) -> tuple[int, list[str]]:
    """The header line (its first two cells are devices, GPU0 first; a row's second cell is
    X or a relation) and its device columns."""
    for number, line in enumerate(lines):
        cells = [cell for cell in _cells(line) if cell]
        if len(cells) > 1 and cells[0] == "GPU0" and _DEVICE.match(cells[1]):
            return number, [cell for cell in cells if _DEVICE.match(cell)]
    raise TopologyError(
        "expected the matrix of `nvidia-smi topo -m` (a header line starting with GPU0); found "
        + (f"{len(lines)} line(s) without one" if lines else "no output")
    )


def _legend(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        match = _LEGEND.match(line)
        if match:
            found[match[1]] = match[2]
    return found


def _closest(item: dict) -> int:
    return RELATIONS.index(item["relation"])


def parse(text: str) -> dict:
    """{'nics': [{name, gpus: [{index, relation}]}], 'gpus': [{index, nics: [{name, relation}],
    cpu_affinity, numa_affinity}]}, each list of relations closest first; TopologyError when the
    output is not such a matrix or is cut short."""
    if not isinstance(text, str):
        raise TopologyError(f"expected the output as text; got {type(text).__name__}")
    lines = [line.rstrip("\n") for line in text.splitlines()]
    start, columns = _header(lines)
    rows: dict[str, list[str]] = {}
    affinity: dict[str, tuple[str | None, str | None]] = {}
    for line in lines[start + 1 :]:
        cells = _cells(line)
        if not cells or not cells[0] or not _DEVICE.match(cells[0]):
            if rows and not line.strip():
                break  # the blank line before the legend
            continue
        label, values = cells[0], cells[1:]
        if len(values) < len(columns):
            raise TopologyError(
                f"row {label} has {len(values)} cell(s), expected {len(columns)} (one per "
                "device in the header): the output is cut short or not from `nvidia-smi topo -m`"
            )
        rows[label] = [value or "X" for value in values[: len(columns)]]
        rest = values[len(columns) :]
        affinity[label] = (rest[0] if rest else None, rest[1] if len(rest) > 1 else None)
    gpus = [c for c in columns if c.startswith("GPU")]
    nics = [c for c in columns if not c.startswith("GPU")]
    missing = [c for c in gpus + nics if c not in rows]
    if missing:
        raise TopologyError(
            f"no row for {', '.join(missing)}: the output is cut short or not from "
            "`nvidia-smi topo -m`"
        )
    legend = _legend(lines[start:])
    names = {}
    for column in columns:
        if column.startswith("NIC"):
            if column not in legend:
                raise TopologyError(
                    f"column {column} has no entry in the NIC Legend (expected a line such as "
                    f"'{column}: mlx5_0' below the matrix; the output may be cut short)"
                )
            names[column] = legend[column]
        elif not column.startswith("GPU"):
            names[column] = column
    if not nics:
        raise TopologyError("the matrix has no NIC column: nvidia-smi sees no NIC on this node")
    relation = {}
    for gpu in gpus:
        for nic in nics:
            value = rows[gpu][columns.index(nic)]
            if value not in RELATIONS:
                raise TopologyError(
                    f"{gpu} to {names[nic]} ({nic}): got {value!r}; expected one of "
                    + ", ".join(RELATIONS)
                )
            relation[gpu, nic] = value
    for gpu in gpus:
        for other in gpus:
            value = rows[gpu][columns.index(other)]
            if value != "X" and value not in RELATIONS and not _NVLINK.match(value):
                raise TopologyError(
                    f"{gpu} to {other}: got {value!r}; expected X, NV<n> or one of "
                    + ", ".join(RELATIONS)
                )
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
            for gpu in gpus
        ],
    }
