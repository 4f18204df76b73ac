"""The verification report (plugin_utils.verify.report) as files people and CI systems read
(pure: report in, text out).

- junit(report): JUnit XML, one test case per pair (classname gpudirect.rdma.bandwidth, with
  the node group when there are several) and per host check of each node (classname
  gpudirect.rdma.host.<check>), a failure element per failed one holding its problems (a host
  check's warning or unknown state is a pass whose system-out says so), the numbers in
  system-out; AAP, Jenkins and GitLab show it as test results.
- html(report): one self-contained page (inline CSS and SVG, no script, nothing fetched) with
  the verdict, the pairs' table with each side's GPU and its relation to the NIC, the problems
  and warnings, a bar chart of the average bandwidth per pair and rail against the threshold,
  the host checks with what to change, and the NICs' firmware configuration when the report
  holds it.
"""

from __future__ import annotations

import html as escape
import xml.etree.ElementTree as ET

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
    keys = ("bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps", "device", "server_device")
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
    """JUnit XML of the report: a test suite of one test case per pair, and one of a test case
    per host check."""
    pairs = report.get("pairs") or []
    failed = [p for p in pairs if not p["passed"]]
    suites = ET.Element("testsuites", name=SUITE, tests=str(len(pairs)), failures=str(len(failed)))
    suite = _suite(suites, "GPUDirect RDMA bandwidth", len(pairs), len(failed))
    properties = ET.SubElement(suite, "properties")
    for key in ("min_gbps", "gpu_memory", "allow_cross_switch"):
        if key in report:
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
        suites.set("tests", str(len(pairs) + len(checks)))
        suites.set("failures", str(len(failed) + len(failed_checks)))
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


def _bars(pairs: list[dict], threshold: float) -> str:
    """An SVG bar chart: each pair's average Gb/s, the threshold as a dashed line."""
    if not pairs:
        return '<p class="muted">No pair ran.</p>'
    values = [float(p.get("bw_average_gbps") or 0) for p in pairs]
    top = max([*values, threshold, 1.0]) * 1.15
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
    for index, (pair, value) in enumerate(zip(pairs, values, strict=True)):
        x = left + gap + index * (column + gap)
        tall = value / top * height
        color = "#2e7d32" if pair["passed"] else "#c62828"
        label = escape.escape(
            ("" if "group" not in pair else f"{pair['group']} ") + f"r{pair['rail']}"
        )
        parts.append(
            f'<rect x="{x}" y="{height - tall + 10:.1f}" width="{column}" height="{tall:.1f}" '
            f'fill="{color}"><title>{escape.escape(_pair_name(pair))}: {value} Gb/s</title></rect>'
            f'<text x="{x + column / 2}" y="{height + 26}" text-anchor="middle">{label}</text>'
        )
    y = height - threshold / top * height + 10
    parts.append(
        f'<line x1="{left}" x2="{plot}" y1="{y:.1f}" y2="{y:.1f}" stroke="#1565c0" '
        f'stroke-dasharray="6 4"/><text x="{plot + 6}" y="{y + 4:.1f}" '
        f'fill="#1565c0">threshold {threshold:g} Gb/s</text>'
        f'<text x="14" y="{height / 2 + 10}" transform="rotate(-90 14 {height / 2 + 10})" '
        f'text-anchor="middle">average Gb/s</text></svg>'
    )
    return "".join(parts)


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
    columns += ["avg Gb/s", "Mpps", "GPU memory", "result"]
    header = "".join(f"<th>{c}</th>" for c in columns)
    threshold = float(report.get("min_gbps") or 0)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape.escape(title)}</h1>"
        f'<p><span class="verdict {"pass" if passed else "fail"}">'
        f"{'passed' if passed else 'failed'}</span> "
        f"{len([p for p in pairs if p['passed']])} of {len(pairs)} pair(s) passed; threshold "
        f"{threshold:g} Gb/s; GPU memory {escape.escape(str(report.get('gpu_memory', '-')))}; "
        f"cross-switch pairs {'allowed' if report.get('allow_cross_switch') else 'fail'}</p>"
        f"<h2>Bandwidth per pair and rail</h2>{_bars(pairs, threshold)}"
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
        + (
            "<h2>NIC firmware configuration</h2><table><thead><tr><th>node</th><th>NicDevice"
            "</th><th>type</th><th>firmware</th><th>configuration</th><th>ports</th></tr>"
            f"</thead><tbody>{device_rows}</tbody></table>"
            if devices
            else ""
        )
        + '<p class="muted">Written by gpudirect.rdma verify; the numbers are ib_write_bw\'s.</p>'
        "</body></html>\n"
    )
