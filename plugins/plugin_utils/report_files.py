"""The verification report (plugin_utils.verify.report) as files people and CI systems read
(pure: report in, text out).

- junit(report): JUnit XML, one test case per pair (classname gpudirect.rdma.bandwidth, with
  the node group when there are several) and per host check of each node (classname
  gpudirect.rdma.host.<check>) and per NCCL run (classname gpudirect.rdma.nccl), a failure
  element per failed one holding its problems (a host check's warning or unknown state is a
  pass whose system-out says so), the numbers in system-out; AAP, Jenkins and GitLab show it as
  test results.
- html(report): one self-contained page (inline CSS and SVG, no script, nothing fetched) with
  the verdict, the pairs' table with each side's GPU and its relation to the NIC, the problems
  and warnings, a bar chart of the average bandwidth per pair and rail against the threshold,
  the host checks with what to change, the NCCL runs with a plot of their bus bandwidth
  against the message size, and the NICs' firmware configuration when the report holds it.
"""

from __future__ import annotations

import html as escape
import math
import xml.etree.ElementTree as ET

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.nccl_test import gpudirect_shown

SUITE = "gpudirect.rdma verify"


def _pair_name(pair: dict) -> str:
    group = f"group {pair['group']} " if "group" in pair else ""
    return f"{group}rail {pair['rail']} {pair['server_node']} -> {pair['client_node']}"


def _path(path: dict | None) -> str:
    if not path or path.get("gpu") is None:
        return "no GPU chosen"
    bus = f" ({path['bus_id']})" if path.get("bus_id") else ""
    return f"GPU {path['gpu']}{bus} {path['relation']} to {path.get('nic') or '?'}"


def _numbers(pair: dict) -> str:
    keys = ("bw_average_gbps", "floor_gbps", "floor", "bw_peak_gbps", "msg_rate_mpps", "device")
    keys += ("server_device", "server_port_gbps", "client_port_gbps")
    keys += ("link_type", "gid_index", "gpu_memory", "interface", "network", "resource")
    lines = [f"{key}: {pair[key]}" for key in keys if pair.get(key) is not None]
    lines += [
        f"server: {_path(pair.get('server_gpu'))}",
        f"client: {_path(pair.get('client_gpu'))}",
    ]
    lines += [f"warning: {warning}" for warning in pair.get("warnings", [])]
    return "\n".join(lines) + "\n"


def _check_name(check: dict) -> str:
    group = f"group {check['group']} " if "group" in check else ""
    rail = f" rail {check['rail']}" if "rail" in check else ""
    return f"{group}{check['node']} {check['check']}{rail}"


def _check_text(check: dict) -> str:
    lines = [f"status: {check['status']}", f"detail: {check['detail']}"]
    lines += [f"fix: {check['fix']}"] if check.get("fix") else []
    lines += [f"see: {check['reference']}"] if check.get("reference") else []
    return "\n".join(lines) + "\n"


def _run_name(run: dict) -> str:
    where = f"group {run['group']}: " if "group" in run else ""
    return f"{where}all_reduce_perf on {', '.join(run['nodes'])}"


def _run_text(run: dict) -> str:
    keys = ("ranks", "transport", "gpudirect", "devices", "avg_busbw_gbps", "max_busbw_gbytes")
    keys += ("busbw_judged_gbps", "floor_gbps", "floor")
    lines = [f"{key}: {run[key]}" for key in keys if key in run]
    lines.append(f"settings: {run['config_map']}")
    return "\n".join(lines) + "\n"


def _suite(parent: ET.Element, name: str, tests: int, failures: int) -> ET.Element:
    return ET.SubElement(
        parent,
        "testsuite",
        name=f"{SUITE}: {name}",
        tests=str(tests),
        failures=str(failures),
        errors="0",
        skipped="0",
    )


def junit(report: dict) -> str:
    """JUnit XML of the report: a test suite of one test case per pair, one of a test case per
    host check, and one of a test case per NCCL run."""
    pairs = report.get("pairs") or []
    failed = [p for p in pairs if not p["passed"]]
    suites = ET.Element("testsuites", name=SUITE, tests=str(len(pairs)), failures=str(len(failed)))
    suite = _suite(suites, "GPUDirect RDMA bandwidth", len(pairs), len(failed))
    properties = ET.SubElement(suite, "properties")
    for key in ("min_gbps", "gpu_memory", "allow_cross_switch"):
        if report.get(key) is not None:
            ET.SubElement(properties, "property", name=key, value=str(report[key]))
    for pair in pairs:
        classname = "gpudirect.rdma.bandwidth" + (f".{pair['group']}" if "group" in pair else "")
        case = ET.SubElement(suite, "testcase", classname=classname, name=_pair_name(pair))
        if not pair["passed"]:
            failure = ET.SubElement(
                case, "failure", message="; ".join(pair["problems"]), type="GPUDirectRDMA"
            )
            failure.text = "\n".join(pair["problems"]) + "\n"
        ET.SubElement(case, "system-out").text = _numbers(pair)
    checks = report.get("host_checks") or []
    if checks:
        failed_checks = [c for c in checks if c["status"] == "failure"]
        host = _suite(suites, "host checks", len(checks), len(failed_checks))
        for check in checks:
            case = ET.SubElement(
                host,
                "testcase",
                classname=f"gpudirect.rdma.host.{check['check']}",
                name=_check_name(check),
            )
            if check["status"] == "failure":
                failure = ET.SubElement(case, "failure", message=check["detail"], type="HostCheck")
                failure.text = (
                    f"{check['detail']}\nfix: {check['fix']}\nsee: {check['reference']}\n"
                )
            ET.SubElement(case, "system-out").text = _check_text(check)
    runs = report.get("nccl") or []
    if runs:
        failed_runs = [r for r in runs if not r["passed"]]
        nccl = _suite(suites, "NCCL all_reduce_perf", len(runs), len(failed_runs))
        for run in runs:
            case = ET.SubElement(
                nccl,
                "testcase",
                classname="gpudirect.rdma.nccl" + (f".{run['group']}" if "group" in run else ""),
                name=_run_name(run),
            )
            if not run["passed"]:
                failure = ET.SubElement(
                    case, "failure", message="; ".join(run["problems"]), type="NCCL"
                )
                failure.text = "\n".join(run["problems"]) + "\n"
            ET.SubElement(case, "system-out").text = _run_text(run)
    every = suites.findall("testsuite")
    suites.set("tests", str(sum(int(x.get("tests")) for x in every)))
    suites.set("failures", str(sum(int(x.get("failures")) for x in every)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
.verdict { display: inline-block; padding: .3em .8em; border-radius: .3em; color: #fff; }
.pass { background: #2e7d32; } .fail { background: #c62828; }
table { border-collapse: collapse; margin-top: .5em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; font-size: .9em; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { background: #fdecea; } tr.warning td { background: #fff8e1; }
.muted { color: #666; }
ul.problems li { color: #c62828; } ul.warnings li { color: #8a6d00; }
svg text { font-family: system-ui, sans-serif; font-size: 12px; }
"""


def _cell(value, numeric: bool = False) -> str:
    shown = "-" if value is None else escape.escape(str(value))
    return f'<td class="num">{shown}</td>' if numeric else f"<td>{shown}</td>"


def _bars(pairs: list[dict]) -> str:
    """An SVG bar chart: each pair's average Gb/s, and its floor as a dashed mark across it."""
    if not pairs:
        return '<p class="muted">No pair ran.</p>'
    values = [float(p.get("bw_average_gbps") or 0) for p in pairs]
    marks = [float(p.get("floor_gbps") or 0) for p in pairs]
    top = max([*values, *marks, 1.0]) * 1.15
    column, gap, left, height = 34, 14, 60, 220
    plot = left + len(pairs) * (column + gap) + gap
    width = plot + 150  # room for the threshold's label right of the plot
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 60}" '
        f'role="img" aria-label="average bandwidth per pair">'
    ]
    for step in range(5):
        value = top * step / 4
        y = height - value / top * height + 10
        parts.append(
            f'<line x1="{left}" x2="{plot}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.0f}</text>'
        )
    for index, (pair, value, floor) in enumerate(zip(pairs, values, marks, strict=True)):
        x = left + gap + index * (column + gap)
        tall = value / top * height
        mark = height - floor / top * height + 10
        color = "#2e7d32" if pair["passed"] else "#c62828"
        label = escape.escape(
            ("" if "group" not in pair else f"{pair['group']} ") + f"r{pair['rail']}"
        )
        parts.append(
            f'<rect x="{x}" y="{height - tall + 10:.1f}" width="{column}" height="{tall:.1f}" '
            f'fill="{color}"><title>{escape.escape(_pair_name(pair))}: {value} Gb/s</title></rect>'
            f'<text x="{x + column / 2}" y="{height + 26}" text-anchor="middle">{label}</text>'
            f'<line class="floor" x1="{x - 4}" x2="{x + column + 4}" y1="{mark:.1f}" '
            f'y2="{mark:.1f}" stroke="#1565c0" stroke-width="2" stroke-dasharray="4 3">'
            f"<title>floor {floor:g} Gb/s: {escape.escape(pair.get('floor') or '')}</title></line>"
        )
    parts.append(
        f'<text x="{plot + 6}" y="24" fill="#1565c0">- - floor of each pair</text>'
        f'<text x="14" y="{height / 2 + 10}" transform="rotate(-90 14 {height / 2 + 10})" '
        f'text-anchor="middle">average Gb/s</text></svg>'
    )
    return "".join(parts)


_COLORS = ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#2e7d32", "#ad1457")


def _size_label(size: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def _curves(runs: list[dict]) -> str:
    """An SVG line plot: each NCCL run's out-of-place bus bandwidth (Gb/s) against the message
    size (log scale), each run's floor as a dashed line (on the average, or at the largest
    size)."""
    threshold = max((float(run.get("floor_gbps") or 0) for run in runs), default=0.0)
    series = [(run, run.get("rows") or []) for run in runs]
    sizes = sorted({row["size"] for _run, rows in series for row in rows})
    if not sizes:
        return '<p class="muted">No NCCL run printed a results table.</p>'
    values = [row["out_of_place"]["busbw"] * 8 for _run, rows in series for row in rows]
    top = max([*values, threshold, 1.0]) * 1.15
    left, height, width = 60, 220, max(360, 44 * len(sizes))
    low, high = math.log2(sizes[0]), math.log2(sizes[-1])

    def x(size: int) -> float:
        return left + (0 if high == low else (math.log2(size) - low) / (high - low) * width)

    def y(value: float) -> float:
        return height - value / top * height + 10

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 170}" '
        f'height="{height + 70}" role="img" aria-label="NCCL bus bandwidth against message size">'
    ]
    for step in range(5):
        value = top * step / 4
        parts.append(
            f'<line x1="{left}" x2="{left + width}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
            f'stroke="#eee"/><text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">'
            f"{value:.0f}</text>"
        )
    every = max(1, len(sizes) // 12)
    for size in sizes[::every]:
        parts.append(
            f'<text x="{x(size):.1f}" y="{height + 28}" text-anchor="middle">'
            f"{_size_label(size)}</text>"
        )
    for index, (run, rows) in enumerate(series):
        color = _COLORS[index % len(_COLORS)]
        points = " ".join(
            f"{x(r['size']):.1f},{y(r['out_of_place']['busbw'] * 8):.1f}"
            for r in sorted(rows, key=lambda r: r["size"])
        )
        if points:
            parts.append(
                f'<polyline class="busbw" fill="none" stroke="{color}" stroke-width="2" '
                f'points="{points}"><title>{escape.escape(_run_name(run))}</title></polyline>'
                f'<text x="{left + width + 8}" y="{24 + 16 * index}" fill="{color}">'
                f"{escape.escape(', '.join(run['nodes'])[:24])}</text>"
            )
    for run in runs:
        floor = float(run.get("floor_gbps") or 0)
        where = "at the largest size" if run.get("floor_measure") == "largest" else "average"
        parts.append(
            f'<line x1="{left}" x2="{left + width}" y1="{y(floor):.1f}" y2="{y(floor):.1f}" '
            f'stroke="#c62828" stroke-dasharray="6 4"><title>'
            f"{escape.escape(run.get('floor') or '')}</title></line>"
            f'<text x="{left + width + 8}" y="{y(floor) + 4:.1f}" fill="#c62828">floor '
            f"{floor:g} Gb/s ({where})</text>"
        )
    parts.append(
        f'<text x="{left + width / 2}" y="{height + 52}" text-anchor="middle">message size '
        f'(bytes)</text><text x="14" y="{height / 2 + 10}" '
        f'transform="rotate(-90 14 {height / 2 + 10})" text-anchor="middle">bus bandwidth Gb/s'
        "</text></svg>"
    )
    return "".join(parts)


def _nccl_verdict(runs: list[dict]) -> str:
    if not runs:
        return ""
    passed = sum(1 for r in runs if r["passed"])
    return f"; {passed} of {len(runs)} NCCL run(s) passed"


def _nccl_section(runs: list[dict]) -> str:
    if not runs:
        return ""
    grouped = any("group" in r for r in runs)
    rows = []
    problems = []
    for run in runs:
        rows.append(
            f'<tr class="{"passed" if run["passed"] else "failed"}">'
            + (_cell(run.get("group")) if grouped else "")
            + _cell(", ".join(run["nodes"]))
            + _cell(run.get("ranks"), True)
            + _cell(run.get("transport"))
            + _cell(gpudirect_shown(run))
            + _cell(", ".join(run.get("devices") or []) or None)
            + _cell(run.get("avg_busbw_gbps"), True)
            + _cell(run.get("max_busbw_gbytes"), True)
            + _cell(run.get("busbw_judged_gbps"), True)
            + _cell(f"{run['floor_gbps']:g}: {run['floor']}")
            + _cell(run["config_map"])
            + _cell("pass" if run["passed"] else "FAIL")
            + "</tr>"
        )
        if run["problems"]:
            items = "".join(f"<li>{escape.escape(p)}</li>" for p in run["problems"])
            problems.append(
                f'<h3>{escape.escape(_run_name(run))}</h3><ul class="problems">{items}</ul>'
            )
    columns = (["group"] if grouped else []) + [
        "nodes",
        "ranks",
        "transport",
        "GPUDirect",
        "NICs",
        "avg busbw Gb/s",
        "best busbw GB/s",
        "judged Gb/s",
        "floor Gb/s",
        "NCCL settings",
        "result",
    ]
    header = "".join(f"<th>{c}</th>" for c in columns)
    return (
        "<h2>NCCL bus bandwidth against message size</h2>"
        + _curves(runs)
        + f"<h2>NCCL runs</h2><table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}"
        "</tbody></table>" + "".join(problems)
    )


def html(report: dict, title: str = "GPUDirect RDMA verification") -> str:
    """One self-contained HTML page of the report."""
    pairs = report.get("pairs") or []
    passed = bool(report.get("passed"))
    grouped = any("group" in p for p in pairs)
    rows = []
    for pair in pairs:
        server, client = pair.get("server_gpu") or {}, pair.get("client_gpu") or {}
        rows.append(
            f'<tr class="{"passed" if pair["passed"] else "failed"}">'
            + (_cell(pair.get("group")) if grouped else "")
            + _cell(pair["rail"], True)
            + _cell(f"{pair['server_node']} -> {pair['client_node']}")
            + _cell(pair.get("device"))
            + _cell(pair.get("link_type"))
            + _cell(pair.get("gid_index"), True)
            + _cell(_path(server))
            + _cell(_path(client))
            + _cell(pair.get("bw_average_gbps"), True)
            + _cell(pair.get("floor_gbps"), True)
            + _cell(pair.get("msg_rate_mpps"), True)
            + _cell(pair.get("gpu_memory"))
            + _cell("pass" if pair["passed"] else "FAIL")
            + "</tr>"
        )
    findings = []
    for pair in pairs:
        items = "".join(f"<li>{escape.escape(p)}</li>" for p in pair["problems"])
        notes = "".join(f"<li>{escape.escape(w)}</li>" for w in pair.get("warnings", []))
        if items or notes:
            findings.append(
                f"<h3>{escape.escape(_pair_name(pair))}</h3>"
                + (f'<ul class="problems">{items}</ul>' if items else "")
                + (f'<ul class="warnings">{notes}</ul>' if notes else "")
            )
    checks = report.get("host_checks") or []
    check_rows = "".join(
        f'<tr class="{"failed" if c["status"] == "failure" else c["status"]}">'
        + _cell(c["node"])
        + _cell(c["check"])
        + _cell(c.get("rail"), True)
        + _cell(c["status"])
        + _cell(c["detail"])
        + _cell(c.get("fix") or "")
        + (
            f'<td><a href="{escape.escape(c["reference"])}">reference</a></td>'
            if c.get("reference", "").startswith("https://")
            else _cell(c.get("reference") or "")
        )
        + "</tr>"
        for c in checks
    )
    devices = report.get("nic_devices") or []
    device_rows = "".join(
        "<tr>"
        + "".join(_cell(d.get(k)) for k in ("node", "name", "type", "firmware", "configuration"))
        + _cell(", ".join(d.get("ports") or []))
        + "</tr>"
        for d in devices
    )
    columns = ["group"] if grouped else []
    columns += ["rail", "server -> client", "NIC", "link", "GID", "server GPU", "client GPU"]
    columns += ["avg Gb/s", "floor Gb/s", "Mpps", "GPU memory", "result"]
    header = "".join(f"<th>{c}</th>" for c in columns)
    reasons = sorted({(p.get("floor_gbps"), p.get("floor")) for p in pairs if p.get("floor")})
    floors_shown = "; ".join(f"{gbps:g} Gb/s ({why})" for gbps, why in reasons) or "-"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape.escape(title)}</h1>"
        f'<p><span class="verdict {"pass" if passed else "fail"}">'
        f"{'passed' if passed else 'failed'}</span> "
        f"{len([p for p in pairs if p['passed']])} of {len(pairs)} pair(s) passed; floor "
        f"{escape.escape(floors_shown)}; GPU memory "
        f"{escape.escape(str(report.get('gpu_memory', '-')))}; "
        f"cross-switch pairs {'allowed' if report.get('allow_cross_switch') else 'fail'}"
        + _nccl_verdict(report.get("nccl") or [])
        + "</p>"
        f"<h2>Bandwidth per pair and rail</h2>{_bars(pairs)}"
        f"<h2>Pairs</h2><table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table>"
        + (f"<h2>Problems and warnings</h2>{''.join(findings)}" if findings else "")
        + (
            f"<h2>Host checks</h2><p>{sum(c['status'] == 'ok' for c in checks)} of "
            f"{len(checks)} passed.</p><table><thead><tr><th>node</th><th>check</th><th>rail"
            "</th><th>status</th><th>what was found</th><th>what to change</th><th>read</th>"
            f"</tr></thead><tbody>{check_rows}</tbody></table>"
            if checks
            else ""
        )
        + _nccl_section(report.get("nccl") or [])
        + (
            "<h2>NIC firmware configuration</h2><table><thead><tr><th>node</th><th>NicDevice"
            "</th><th>type</th><th>firmware</th><th>configuration</th><th>ports</th></tr>"
            f"</thead><tbody>{device_rows}</tbody></table>"
            if devices
            else ""
        )
        + '<p class="muted">Written by gpudirect.rdma verify; the numbers are ib_write_bw\'s'
        " and all_reduce_perf's.</p>"
        "</body></html>\n"
    )
