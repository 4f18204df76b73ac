"""Two verify reports side by side: each rail's bandwidth and each NCCL run's bus bandwidth before
and after a change (an upgrade), judged against a largest allowed drop and for a change of
transport. Pure: reports in, a comparison out.

A rail is one node group's pair on one rail (group, rail); an NCCL run is one node group's. A row
fails when its number dropped by more than max_drop_percent, or when the way the data moved
changed: for a rail, how GPU memory was registered (dmabuf, peermem, none: GPUDirect RDMA or
not), the GPU next to each side's NIC and their relation, or a side's link rate; for an NCCL run,
NCCL's transport (IB, Socket, a net plugin's) or whether its network channels ran GPUDirect. Each
problem names the nodes and the NIC. A rail or run that one report has and the other lacks is
shown, and fails when it is the after report that lacks it. The upgrade role compares before and
after an upgrade; the verify role compares a run with the cluster's recorded baseline.
"""

from __future__ import annotations


def _rails(report: dict) -> dict[tuple, dict]:
    return {(p.get("group"), p["rail"]): p for p in report.get("pairs") or []}


def _runs(report: dict) -> dict[tuple, dict]:
    return {(r.get("group"),): r for r in report.get("nccl") or []}


def _where(key: tuple, rail: bool) -> str:
    group = key[0]
    where = f"group {group} " if group else ""
    return f"{where}rail {key[1]}" if rail else f"{where}NCCL".strip()


def _change(before: float | None, after: float | None) -> float | None:
    if before in (None, 0) or after is None:
        return None
    return round(100.0 * (after - before) / before, 1)


def _row(what, before, after, number, manner, max_drop_percent, facts=None) -> dict:
    """One line of the comparison: number(report entry) is the figure compared, manner(entry)
    how the data moved, facts(entry) what else must not change ({name: (where, value)}: a rail's
    GPU-NIC pairing and link rate on each side) and where it ran (nodes)."""
    row = {
        "what": what,
        "before": None if before is None else number(before),
        "after": None if after is None else number(after),
        "before_transport": None if before is None else manner(before),
        "after_transport": None if after is None else manner(after),
        "problems": [],
    }
    entry = after if after is not None else before
    row["nodes"] = _nodes(entry)
    row["change_percent"] = _change(row["before"], row["after"])
    if after is None:
        row["problems"].append("not measured after")
    elif before is not None:
        if row["before_transport"] != row["after_transport"]:
            row["problems"].append(
                f"the transport changed: {row['before_transport']} before, "
                f"{row['after_transport']} after"
            )
        if row["change_percent"] is not None and row["change_percent"] < -max_drop_percent:
            where = f" ({row['nodes']})" if row["nodes"] else ""
            row["problems"].append(
                f"{row['before']} -> {row['after']} Gb/s is a drop of "
                f"{-row['change_percent']:g}%, more than {max_drop_percent:g}%{where}"
            )
        if facts:
            old, new = facts(before), facts(after)
            for name, (where, value) in new.items():
                was = old.get(name, (where, None))[1]
                if was is not None and value is not None and was != value:
                    row["problems"].append(
                        f"the {name} changed on {where}: {was} before, {value} after"
                    )
    row["passed"] = not row["problems"]
    return row


def _nodes(entry: dict | None) -> str | None:
    """Where a rail or run ran: server -> client, or the nodes of an NCCL run."""
    if not entry:
        return None
    if entry.get("server_node"):
        return f"{entry['server_node']} -> {entry.get('client_node')}"
    return ", ".join(entry.get("nodes") or []) or None


def rail_facts(pair: dict) -> dict[str, tuple[str, str | None]]:
    """What of a rail must stay as it was, per side: the GPU next to the NIC and their relation
    (the pairing), and the port's rate."""
    found = {}
    for side in ("server", "client"):
        node = pair.get(f"{side}_node") or side
        path = pair.get(f"{side}_gpu") or {}
        nic = path.get("nic") or pair.get("device") or "?"
        where = f"{node} ({nic})"
        if path.get("gpu") is not None:
            found[f"{side} GPU-NIC pairing"] = (
                where,
                f"GPU {path['gpu']} {path.get('relation', 'unknown')} {nic}",
            )
        rate = pair.get(f"{side}_port_gbps")
        if rate is not None:
            found[f"{side} link rate"] = (where, f"{rate:g} Gb/s")
    return found


def rail_transport(pair: dict) -> str:
    """How a pair moved data: GPUDirect RDMA through dma-buf or nvidia-peermem, or none."""
    used = pair.get("gpu_memory")
    return "none (no GPUDirect)" if used in (None, "none") else f"GPUDirect ({used})"


def nccl_transport(run: dict) -> str:
    """How an NCCL run moved data: NCCL's network, and GPUDirect on its channels or not."""
    gpudirect = {True: "GPUDirect", False: "no GPUDirect", None: "GPUDirect unknown"}
    return f"{run.get('transport') or '-'} ({gpudirect.get(run.get('gpudirect'), '-')})"


def compare(before: dict, after: dict, max_drop_percent: float = 10.0) -> dict:
    """The rows (each rail, then each NCCL run), passed when every row passed, and the rows as
    lines for the play's output."""
    rows = []
    for source, rail, number, manner, facts in (
        (_rails, True, lambda p: p.get("bw_average_gbps"), rail_transport, rail_facts),
        (_runs, False, lambda r: r.get("avg_busbw_gbps"), nccl_transport, None),
    ):
        old, new = source(before), source(after)
        for key in sorted({*old, *new}, key=lambda k: tuple(str(part) for part in k)):
            rows.append(
                _row(
                    _where(key, rail),
                    old.get(key),
                    new.get(key),
                    number,
                    manner,
                    max_drop_percent,
                    facts,
                )
            )
    return {
        "passed": all(row["passed"] for row in rows),
        "max_drop_percent": max_drop_percent,
        "rows": rows,
        "table": lines(rows),
    }


def lines(rows: list[dict]) -> list[str]:
    """The comparison as a table: what, before, after, change, transport before and after,
    result; each row's problems on lines of their own."""
    wide = max([12, *(len(row["what"]) + 2 for row in rows)])

    def shown(value) -> str:
        return "-" if value is None else f"{value:g}"

    found = [
        f"{'':<{wide}}{'before Gb/s':>12}{'after Gb/s':>12}{'change':>9}  transport before -> after"
    ]
    for row in rows:
        change = "-" if row["change_percent"] is None else f"{row['change_percent']:+g}%"
        found.append(
            f"{row['what']:<{wide}}{shown(row['before']):>12}{shown(row['after']):>12}"
            f"{change:>9}  {row['before_transport'] or '-'} -> {row['after_transport'] or '-'}"
            f"  {'pass' if row['passed'] else 'FAIL'}"
        )
        found += [f"  {row['what']}: {problem}" for problem in row["problems"]]
    return found
