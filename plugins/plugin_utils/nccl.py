"""nccl-tests output (all_reduce_perf and its siblings) in, the run's numbers out (pure).

The output is the tests' own lines (a `#` header with the ranks and their devices, the column
titles, one row per message size, `# Out of bounds values`, `# Avg bus bandwidth` and, from
nccl-tests 2.19, `# Collective test concluded`) mixed with what NCCL prints with NCCL_DEBUG=INFO
(`<host>:<pid>:<tid> [<dev>] NCCL INFO ...`) and whatever the launcher adds: MPI's warnings, and a
per-line prefix such as Slurm's ` 0: ` or mpirun's `[1,0]<stdout>:`, which is taken off first.

Two forms of the rows are read: with the `root` column of nccl-tests 2.13 and later (-1 for
all-reduce), and without it. `#wrong` is N/A when the run did not check the results (-c 0).
A cell too wide for its column is printed in exponent form (`2e+06`), and so may the average.

NCCL's network is the one it names on `Using network <name>` and `Assigned NET plugin <name> to
comm` (NCCL 2.19 and later; `IB`, `Socket` or a net plugin's own name, such as `IBext_v8` or
`AWS Libfabric`); older logs are read from `NET/IB : Using` when that line lists a device, then
`NET/Socket : Using`, then the channels' `via NET/<name>/<n>`. NCCL 2.28 prints `NET/IB : Using
[RO]; OOB ...` (no device) before it falls back to sockets, so that line alone is no IB.

parse_json reads the file of `-J file.json` (nccl-tests 2.19, format version 3) into the same
shape; what only NCCL's own lines say (its network, its NICs, GPUDirect) is unknown there.
"""

from __future__ import annotations

import json
import re

_PREFIX = re.compile(r"^(\s*\d+:\s|\[\d+,\d+\]<std(?:out|err)>:)")
_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+"
    r"(?:(?P<root>-?\d+)\s+)?"
    r"(?P<oop>(?:\S+\s+){3}\S+)\s+(?P<ip>(?:\S+\s+){3}\S+)\s*$"
)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)")
_STARTED = re.compile(r"^#\s*Collective test starting:\s*(?P<test>\S+)")
_CONCLUDED = re.compile(r"^#\s*Collective test concluded:")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+).*?\bon\s+(?P<host>\S+)\s+device\s+(?P<device>\d+)")
_INFO = re.compile(r"NCCL INFO (?P<text>.*)$")
_WARN = re.compile(r"NCCL WARN .*$")
# nccl-tests' own failures (src/common.h, src/util.cu): `<host>: Test NCCL failure <file>:<line>
# '<error> / <last error>'`, `<host>: Test CUDA failure <file>:<line> '<error>'`, ` .. <host> pid
# <pid>: Test failure <file>:<line>` as each caller returns, and what it says before it gives up.
_TEST_FAILURE = re.compile(r"(?:^|:\s)(?P<text>Test (?:NCCL |CUDA )?failure \S+:\d+(?: '.*')?)\s*$")
_TEST_REFUSAL = re.compile(r"^(?P<text>Invalid number of GPUs: .*?)\s*$")
_NETWORK = re.compile(
    r"^(?:Using network (?P<used>.+?)|Assigned NET plugin (?P<assigned>.+?) to comm)\s*$"
)
_NET_IB = re.compile(r"NET/IB\s*:\s*Using\s+(?P<list>.*?)(?:\s*;|$)")
_NET_SOCKET = re.compile(r"NET/Socket\s*:\s*Using\s+")
# ` [0]mlx5_0:1/IB`, and for NICs merged into one (NCCL_IB_MERGE_NICS) ` [0]={[0] mlx5_0:1/IB, ...}`
_IB_DEVICE = re.compile(r"\[\d+\] ?(?P<device>[\w.-]+:\d+)/(?:IB|RoCE)")
# `via NET/<net>/<dev>[(<proxy rank>)][/GDRDMA]...`; a plugin's name may hold a space.
_CHANNEL = re.compile(r"via NET/(?P<net>[^/]+)/\d+(?:\(\d+\))?(?P<gdr>/GDRDMA)?")
_GDR_ENABLED = re.compile(r"GPU Direct RDMA Enabled", re.IGNORECASE)
_GDR_DISABLED = re.compile(r"GPU Direct RDMA Disabled", re.IGNORECASE)
SOCKET = "Socket"
JSON_VERSION = 3
GB_TO_GBPS = 8


class NcclError(ValueError):
    """The output holds no results table (NCCL failed, the run was cut short), or is not
    nccl-tests' output at all."""


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


def _transport(
    named: list[str], ib_devices: bool, socket_said: bool, channels: list[str]
) -> str | None:
    """The network NCCL used: the first source that says, in order: the network it names
    (NCCL 2.19+), a `NET/IB : Using` line with a device, a `NET/Socket : Using` line, the
    channels' network. Socket when any rank of that source says Socket."""
    for said in (named, ["IB"] if ib_devices else [], [SOCKET] if socket_said else [], channels):
        if said:
            return SOCKET if SOCKET in said else said[0]
    return None


def _gpudirect(
    transport: str | None, gdr_channels: int, plain_channels: int, gdr_said: bool | None
) -> bool | None:
    """GPUDirect RDMA: never over sockets; else what the network channels show (/GDRDMA or
    not), and where they show both or none, what NCCL said of it."""
    if transport == SOCKET:
        return False
    if gdr_channels == 0 and plain_channels == 0:
        return gdr_said
    if gdr_channels and not plain_channels:
        return True
    if plain_channels and not gdr_channels:
        return False
    return gdr_said if gdr_said is not None else gdr_channels > plain_channels


def _wrong(rows: list[dict], out_of_bounds: int) -> int:
    """The wrong values of every row and side; nccl-tests' out-of-bounds count when the rows
    have none (it counts the checks that failed)."""
    counted = sum(side["wrong"] or 0 for r in rows for side in (r["out_of_place"], r["in_place"]))
    return counted or out_of_bounds


def _result(
    rows: list[dict],
    average: float,
    wrong: int,
    *,
    ranks: int | None,
    nodes: int | None,
    devices: list[str],
    transport: str | None,
    gpudirect: bool | None,
    warnings: list[str],
) -> dict:
    """parse's and parse_json's result: the numbers of the table plus what the output said of
    the ranks, nodes, NICs, network, GPUDirect and NCCL's warnings."""
    best = max(max(r["out_of_place"]["busbw"], r["in_place"]["busbw"]) for r in rows)
    return {
        "avg_busbw_gbytes": average,
        "avg_busbw_gbps": round(average * GB_TO_GBPS, 3),
        "rows": rows,
        "largest": max(rows, key=lambda r: r["size"]),
        "max_busbw_gbytes": best,
        "max_busbw_gbps": round(best * GB_TO_GBPS, 3),
        "ranks": ranks,
        "nodes": nodes,
        "devices": devices,
        "transport": transport,
        "gpudirect": gpudirect,
        "wrong": wrong,
        "warnings": warnings,
    }


def _tail(lines: list[str]) -> str:
    return " | ".join(line.strip() for line in lines if line.strip())[-400:] or "none"


def parse(text: str) -> dict:
    """The run's numbers: the average and largest bus bandwidth, the rows, the ranks and nodes,
    the NICs NCCL used, its transport and whether GPUDirect RDMA was used; NcclError when the
    output holds no results table, naming NCCL's warnings and nccl-tests' failure lines."""
    if not isinstance(text, str):
        raise NcclError(f"expected the output as text; got {type(text).__name__}")
    lines = unprefixed(text)
    rows, ranks, hosts, devices, warnings, failures = [], set(), [], [], [], []
    named, channel_nets = [], []
    ib_devices = socket_said = False
    average = started = None
    concluded = False
    out_of_bounds = 0
    gdr_channels = plain_channels = 0
    gdr_said = None
    for line in lines:
        stripped = line.strip()
        info = _INFO.search(line)
        if info:
            said = info["text"]
            network = _NETWORK.match(said)
            if network:
                name = network["used"] or network["assigned"]
                named += [name] if name not in named else []
            ib = _NET_IB.search(said)
            if ib:
                listed = _IB_DEVICE.findall(ib["list"])
                ib_devices = ib_devices or bool(listed)
                devices += [d for d in listed if d not in devices]
            socket_said = socket_said or bool(_NET_SOCKET.search(said))
            channel = _CHANNEL.search(said)
            if channel:
                channel_nets += [channel["net"]] if channel["net"] not in channel_nets else []
                if channel["gdr"] and channel["net"] != SOCKET:
                    gdr_channels += 1
                else:
                    plain_channels += 1
            if _GDR_ENABLED.search(said):
                gdr_said = True
            elif _GDR_DISABLED.search(said) and gdr_said is None:
                gdr_said = False
            continue
        warning = _WARN.search(line)
        failure = warning or _TEST_FAILURE.search(stripped) or _TEST_REFUSAL.match(stripped)
        if failure:
            said = warning[0] if warning else failure["text"]
            failures += [said] if said not in failures else []
            if warning and said not in warnings:
                warnings.append(said)
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
        found = _OUT_OF_BOUNDS.match(stripped)
        if found:
            out_of_bounds = int(found["count"])
            continue
        found = _STARTED.match(stripped)
        if found:
            started = found["test"]
            continue
        if _CONCLUDED.match(stripped):
            concluded = True
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
    failed = "; ".join(failures)
    cut_short = (
        f" ({started} says '# Collective test starting' but never '# Collective test concluded')"
        if started and not concluded
        else ""
    )
    if not rows:
        if not failed and cut_short:
            raise NcclError(
                f"the output holds no results table: the run was cut short{cut_short}, with no "
                f"NCCL WARN or test failure line. Last lines: {_tail(lines)}"
            )
        raise NcclError(
            "the output holds no results table (NCCL failed or the run was cut short): "
            f"{failed or 'no NCCL WARN or test failure line either'}. Last lines: {_tail(lines)}"
        )
    if average is None:
        raise NcclError(
            f"the results table has {len(rows)} row(s) but no '# Avg bus bandwidth' line: the run "
            f"was cut short{cut_short}" + (f": {failed}" if failed else "")
        )
    transport = _transport(named, ib_devices, socket_said, channel_nets)
    return _result(
        rows,
        average,
        _wrong(rows, out_of_bounds),
        ranks=len(ranks) or None,
        nodes=len(hosts) or None,
        devices=devices,
        transport=transport,
        gpudirect=_gpudirect(transport, gdr_channels, plain_channels, gdr_said),
        warnings=warnings,
    )


_EXPECTED_JSON = f"nccl-tests' JSON output (-J, format version {JSON_VERSION})"


def _json_side(row: dict, side: str, index: int) -> dict:
    cells = row.get(side)
    if isinstance(cells, dict):
        values = (
            cells.get("time", cells.get("cpu_time")),
            cells.get("alg_bw"),
            cells.get("bus_bw"),
        )
        wrong = cells.get("nwrong")
    else:
        values, wrong = (None,), None
    if not all(_is_number(v) for v in values) or not (wrong is None or _is_number(wrong)):
        raise NcclError(
            f"expected in {_EXPECTED_JSON} each result's {side} as an object of the numbers time "
            f"(or cpu_time), alg_bw, bus_bw and nwrong (a number or null); result {index} has "
            f"{side}: {cells!r}"
        )
    return {
        "time_us": float(values[0]),
        "algbw": float(values[1]),
        "busbw": float(values[2]),
        "wrong": None if wrong is None else (int(wrong) if float(wrong).is_integer() else wrong),
    }


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_row(row, index: int) -> dict:
    if not isinstance(row, dict) or not all(
        isinstance(row.get(key), int) and not isinstance(row.get(key), bool)
        for key in ("size", "count")
    ):
        raise NcclError(
            f"expected in {_EXPECTED_JSON} each result as an object with integer size and count; "
            f"result {index} is {row!r}"[:400]
        )
    return {
        "size": row["size"],
        "count": row["count"],
        "type": str(row.get("type")),
        "redop": str(row.get("redop")),
        "out_of_place": _json_side(row, "out_of_place", index),
        "in_place": _json_side(row, "in_place", index),
    }


def parse_json(text: str) -> dict:
    """The run's numbers from the file `-J file.json` writes, in parse's shape: the ranks and
    nodes from config.devices, the average from average_bus_bandwidth.bandwidth, the wrong
    values from the rows' nwrong (out_of_bounds.count when they have none); transport and
    gpudirect null and devices and warnings empty (only NCCL's own lines say those). NcclError
    when the text is not such JSON, or its errors list says what failed."""
    if not isinstance(text, str):
        raise NcclError(f"expected {_EXPECTED_JSON} as text; got {type(text).__name__}")
    try:
        document = json.loads(text)
    except ValueError as error:
        start = text.strip()[:60]
        raise NcclError(
            f"expected {_EXPECTED_JSON}; got text that is not JSON ({error}): {start!r}"
        ) from error
    if not isinstance(document, dict):
        raise NcclError(f"expected {_EXPECTED_JSON}, an object; got a {type(document).__name__}")
    if "version" not in document:
        raise NcclError(
            f"expected {_EXPECTED_JSON} with a 'version' key; got an object with keys "
            f"{', '.join(sorted(document)) or 'none'}"
        )
    if document["version"] != JSON_VERSION:
        raise NcclError(
            f"expected {_EXPECTED_JSON}; got version {document['version']!r}, which this parser "
            "does not know"
        )
    errors = [e for e in document.get("errors") or [] if isinstance(e, str) and e.strip()]
    if errors:
        raise NcclError(
            "nccl-tests reported errors in its JSON output: "
            + "; ".join(f"'{e.strip()}'" for e in errors)
        )
    results = document.get("results")
    if not isinstance(results, list):
        raise NcclError(
            f"expected {_EXPECTED_JSON} with a 'results' list; got "
            + ("none" if results is None else f"a {type(results).__name__}")
        )
    if not results:
        raise NcclError("the JSON output holds no results (NCCL failed or the run was cut short)")
    rows = [_json_row(row, index) for index, row in enumerate(results)]
    average = (document.get("average_bus_bandwidth") or {}).get("bandwidth")
    if not _is_number(average):
        raise NcclError(
            f"the JSON output has {len(rows)} result(s) but no average_bus_bandwidth.bandwidth "
            f"number (got {average!r}): the run was cut short"
        )
    config = document.get("config")
    devices = config.get("devices") if isinstance(config, dict) else None
    devices = [d for d in devices or [] if isinstance(d, dict)]
    ranks = {d.get("rank") for d in devices if d.get("rank") is not None}
    hosts = {d.get("hostname") for d in devices if d.get("hostname")}
    out_of_bounds = (document.get("out_of_bounds") or {}).get("count")
    return _result(
        rows,
        float(average),
        _wrong(rows, out_of_bounds if _is_number(out_of_bounds) else 0),
        ranks=len(ranks) or None,
        nodes=len(hosts) or None,
        devices=[],
        transport=None,
        gpudirect=None,
        warnings=[],
    )


def busbw_judged(result: dict, measure: str) -> float:
    """The bus bandwidth a floor judges, in Gb/s: the run's average (`# Avg bus bandwidth`) or,
    measure 'largest', the better of out-of-place and in-place at the largest message size."""
    if measure == "largest":
        largest = result["largest"]
        best = max(largest["out_of_place"]["busbw"], largest["in_place"]["busbw"])
        return round(best * GB_TO_GBPS, 3)
    return result["avg_busbw_gbps"]


def judge(result: dict, floor: dict, fabric: str, nodes: int | None = None) -> list[str]:
    """What fails a parsed run (parse's result), each with the likely cause: a socket fallback,
    network channels without GPUDirect RDMA, wrong values, fewer nodes than asked for, and a bus
    bandwidth below the floor (floors.nccl_floor: gbps, measure average or largest, why). An
    empty list passes. gpudirect null (NCCL_DEBUG too quiet to tell) is not a failure by
    itself."""
    problems = []
    if result["transport"] == SOCKET:
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
    measured = busbw_judged(result, floor["measure"])
    if measured < floor["gbps"]:
        why = (
            "on RoCE, bandwidth collapsing to a fraction of the link is typical of a fabric "
            "without flow control: PFC (or ECN) on the lossless priority on NICs and switches, "
            "and NCCL_IB_TC marking the traffic for it"
            if fabric == "roce"
            else "check the links' rate and width (ibstat), the subnet manager's routing and "
            "that every rail's NIC is in NCCL_IB_HCA"
        )
        what = (
            f"bus bandwidth at the largest size ({result['largest']['size']} bytes)"
            if floor["measure"] == "largest"
            else "average bus bandwidth"
        )
        problems.append(
            f"{what} {measured} Gb/s ({round(measured / GB_TO_GBPS, 3)} GB/s) is below the "
            f"floor of {floor['gbps']:g} Gb/s ({floor['why']}): {why}"
        )
    return problems
