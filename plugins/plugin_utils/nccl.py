"""nccl-tests output (all_reduce_perf and its siblings) in, the run's numbers out (pure).

The output is the tests' own lines (a `#` header with the ranks and their devices, the column
titles, one row per message size, `# Out of bounds values` and `# Avg bus bandwidth`) mixed with
what NCCL prints with NCCL_DEBUG=INFO (`<host>:<pid>:<tid> [<dev>] NCCL INFO ...`) and whatever
the launcher adds: MPI's warnings, and a per-line prefix such as Slurm's ` 0: ` or mpirun's
`[1,0]<stdout>:`, which is taken off first.

Two forms of the rows are read: with the `root` column of nccl-tests 2.13 and later (-1 for
all-reduce), and without it. `#wrong` is N/A when the run did not check the results (-c 0).
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^(\s*\d+:\s|\[\d+,\d+\]<std(?:out|err)>:)")
_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+"
    r"(?:(?P<root>-?\d+)\s+)?"
    r"(?P<oop>(?:\S+\s+){3}\S+)\s+(?P<ip>(?:\S+\s+){3}\S+)\s*$"
)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>[0-9.]+)")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+).*?\bon\s+(?P<host>\S+)\s+device\s+(?P<device>\d+)")
_INFO = re.compile(r"NCCL INFO (?P<text>.*)$")
_WARN = re.compile(r"NCCL WARN .*$")
_NET_IB = re.compile(r"NET/IB\s*:\s*Using\s+(?P<list>.*?)(?:\s*;|$)")
_NET_SOCKET = re.compile(r"NET/Socket\s*:\s*Using\s+")
_IB_DEVICE = re.compile(r"\[\d+\](?P<device>[\w.-]+:\d+)/(?:IB|RoCE)")
_CHANNEL = re.compile(r"via NET/(?P<net>IB|Socket)(?:/\d+)?(?P<gdr>/GDRDMA)?")
_GDR_ENABLED = re.compile(r"GPU Direct RDMA Enabled", re.IGNORECASE)
_GDR_DISABLED = re.compile(r"GPU Direct RDMA Disabled", re.IGNORECASE)
GB_TO_GBPS = 8


class NcclError(ValueError):
    """The output holds no results table (NCCL failed, the run was cut short)."""


def _number(value: str) -> float | int | None:
    if value in ("N/A", "n/a"):
        return None
    number = float(value)
    return int(number) if number.is_integer() and "." not in value else number


def _side(cells: str) -> dict:
    time_us, algbw, busbw, wrong = cells.split()
    return {
        "time_us": float(time_us),
        "algbw": float(algbw),
        "busbw": float(busbw),
        "wrong": _number(wrong),
    }


def unprefixed(text: str) -> list[str]:
    """The lines without a launcher's per-line prefix."""
    return [_PREFIX.sub("", line, count=1) for line in text.splitlines()]


def parse(text: str) -> dict:
    """The run's numbers: the average and largest bus bandwidth, the rows, the ranks and nodes,
    the NICs NCCL used, its transport and whether GPUDirect RDMA was used; NcclError when the
    output holds no results table."""
    if not isinstance(text, str):
        raise NcclError(f"expected the output as text; got {type(text).__name__}")
    lines = unprefixed(text)
    rows, ranks, hosts, devices, warnings = [], set(), [], [], []
    average = None
    transport = None
    gdr_channels = plain_channels = 0
    gdr_said = None
    for line in lines:
        stripped = line.strip()
        info = _INFO.search(line)
        if info:
            said = info["text"]
            ib = _NET_IB.search(said)
            if ib:
                transport = transport or "IB"
                devices += [d for d in _IB_DEVICE.findall(ib["list"]) if d not in devices]
            if _NET_SOCKET.search(said) and transport is None:
                transport = "Socket"
            channel = _CHANNEL.search(said)
            if channel:
                if channel["net"] == "Socket":
                    transport = "Socket" if transport is None else transport
                    plain_channels += 1
                elif channel["gdr"]:
                    gdr_channels += 1
                else:
                    plain_channels += 1
            if _GDR_ENABLED.search(said):
                gdr_said = True
            elif _GDR_DISABLED.search(said) and gdr_said is None:
                gdr_said = False
            continue
        warning = _WARN.search(line)
        if warning:
            warnings.append(warning[0])
            continue
        rank = _RANK.match(stripped)
        if rank:
            ranks.add(int(rank["rank"]))
            if rank["host"] not in hosts:
                hosts.append(rank["host"])
            continue
        found = _AVG.match(stripped)
        if found:
            average = float(found["value"])
            continue
        if stripped.startswith("#"):
            continue
        row = _ROW.match(line)
        if row:
            try:
                rows.append(
                    {
                        "size": int(row["size"]),
                        "count": int(row["count"]),
                        "type": row["type"],
                        "redop": row["redop"],
                        "out_of_place": _side(row["oop"]),
                        "in_place": _side(row["ip"]),
                    }
                )
            except ValueError:
                continue  # a line of numbers that is not a results row
    if not rows:
        said = "; ".join(dict.fromkeys(warnings)) or "no NCCL WARN line either"
        tail = " | ".join(line.strip() for line in lines if line.strip())[-400:]
        raise NcclError(
            f"the output holds no results table (NCCL failed or the run was cut short): {said}. "
            f"Last lines: {tail or 'none'}"
        )
    if average is None:
        raise NcclError(
            f"the results table has {len(rows)} row(s) but no '# Avg bus bandwidth' line: the run "
            "was cut short"
        )
    largest = max(rows, key=lambda r: r["size"])
    if transport == "Socket" or (gdr_channels == 0 and plain_channels == 0 and gdr_said is None):
        gpudirect = False if transport == "Socket" else None
    elif gdr_channels and not plain_channels:
        gpudirect = True
    elif plain_channels and not gdr_channels:
        gpudirect = False
    else:
        gpudirect = gdr_said if gdr_said is not None else gdr_channels > plain_channels
    return {
        "avg_busbw_gbytes": average,
        "avg_busbw_gbps": round(average * GB_TO_GBPS, 3),
        "rows": rows,
        "largest": largest,
        "max_busbw_gbytes": max(
            max(r["out_of_place"]["busbw"], r["in_place"]["busbw"]) for r in rows
        ),
        "ranks": len(ranks) or None,
        "nodes": len(hosts) or None,
        "devices": devices,
        "transport": transport,
        "gpudirect": gpudirect,
        "wrong": sum(
            side["wrong"] or 0 for r in rows for side in (r["out_of_place"], r["in_place"])
        ),
        "warnings": list(dict.fromkeys(warnings)),
    }


def judge(result: dict, min_busbw_gbps: float, fabric: str, nodes: int | None = None) -> list[str]:
    """What fails a parsed run (parse's result), each with the likely cause: a socket fallback,
    network channels without GPUDirect RDMA, wrong values, fewer nodes than asked for, and an
    average bus bandwidth below min_busbw_gbps (Gb/s). An empty list passes. gpudirect null
    (NCCL_DEBUG too quiet to tell) is not a failure by itself."""
    problems = []
    if result["transport"] == "Socket":
        problems.append(
            "NCCL fell back to sockets (NET/Socket), so no RDMA was used: the pods lack the rails' "
            "RDMA resources or IPC_LOCK, NCCL_IB_HCA names devices the pods do not have, or "
            "NCCL_IB_DISABLE is set"
        )
    elif result["gpudirect"] is False:
        problems.append(
            "NCCL's network channels ran without GPUDirect RDMA (no /GDRDMA): GPU memory went "
            "through host memory. DMA-BUF needs the open GPU kernel modules (or nvidia_peermem "
            "loaded in peermem mode), and a GPU farther from its NIC than NCCL_NET_GDR_LEVEL "
            "allows is staged through the CPU"
        )
    if result["wrong"]:
        problems.append(
            f"{result['wrong']} wrong value(s) in the results (#wrong): data was corrupted on the "
            "way; suspect a GPU, a NIC or a link with errors (ibstat and the switch's counters), "
            "and run again"
        )
    if nodes is not None and result["nodes"] is not None and result["nodes"] < nodes:
        problems.append(
            f"the run spanned {result['nodes']} node(s), not the {nodes} asked for: a rank did "
            "not start on every node"
        )
    if result["avg_busbw_gbps"] < min_busbw_gbps:
        why = (
            "on RoCE, bandwidth collapsing to a fraction of the link is typical of a fabric "
            "without flow control: PFC (or ECN) on the lossless priority on NICs and switches, "
            "and NCCL_IB_TC marking the traffic for it"
            if fabric == "roce"
            else "check the links' rate and width (ibstat), the subnet manager's routing and "
            "that every rail's NIC is in NCCL_IB_HCA"
        )
        problems.append(
            f"average bus bandwidth {result['avg_busbw_gbps']} Gb/s "
            f"({result['avg_busbw_gbytes']} GB/s) is below the threshold of {min_busbw_gbps} "
            f"Gb/s: {why}"
        )
    return problems
