"""The report as the terminal shows it: the pairs' table with each pair's problems and warnings,
the host checks that did not pass, each group's NCCL settings, the NICs' firmware state."""

from __future__ import annotations


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


def run_lines(run: dict) -> list[str]:
    """The run in a line or two: when, where, what and with which versions; then each node
    group's method and fabric."""
    versions = run.get("versions") or {}
    head = ", ".join(
        part
        for part in (
            run.get("date"),
            run.get("cluster") and f"cluster {run['cluster']}",
            run.get("inventory") and f"inventory {', '.join(run['inventory'])}",
            ", ".join(f"{name} {version}" for name, version in versions.items()),
        )
        if part
    )
    groups = "; ".join(
        f"{('group ' + g['name'] + ': ') if g['name'] else ''}{g['method']} over {g['fabric']}"
        + (f" ({', '.join(g['nodes'])})" if g.get("nodes") else "")
        for g in run.get("groups") or []
    )
    return [line for line in (head and f"run: {head}", groups) if line] + [""]


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
        f"{'Mpps':>10}  {'GPU memory':<11}result"
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
