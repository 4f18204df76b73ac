"""The verification report (plugin_utils.verify.judge.report) as files people and CI systems read
(pure: report in, text out).

- junit(report): JUnit XML, one test case per pair (classname gpudirect.rdma.bandwidth, with
  the node group when there are several) and per host check of each node (classname
  gpudirect.rdma.host.<check>) and per NCCL run (classname gpudirect.rdma.nccl), a failure
  element per failed one holding its problems (a host check's warning or unknown state is a
  pass whose system-out says so), the numbers in system-out; AAP, Jenkins and GitLab show it as
  test results.
- html(report): one self-contained page (report.html.j2 beside this file, autoescaped; inline CSS
  and SVG, no script, nothing fetched) with
  the verdict, the pairs' table with each side's GPU and its relation to the NIC, the problems
  and warnings, a bar chart of the average bandwidth per pair and rail against the threshold,
  the host checks with what to change, the NCCL runs with a plot of their bus bandwidth
  against the message size, the comparison with the cluster's baseline when the run was judged
  against one (each rail and NCCL run, baseline beside now), the narrowing of each slow NCCL run
  down to its slow node (its runs and verdict), and the NICs' firmware configuration when the
  report holds it. junit() then has a test suite of one case per compared row too, and one of a
  failed case per narrowing.
"""

from __future__ import annotations

import functools
import html as escape
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jinja2
from markupsafe import Markup

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
    keys = ("ranks", "transport", "gpudirect", "devices", "avg_busbw_gbps", "max_busbw_gbps")
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


def properties(suite: ET.Element, report: dict) -> None:
    """The run (date, cluster, inventory, versions) and the judging settings as the suite's
    properties."""
    run = report.get("run") or {}
    found = {
        "date": run.get("date"),
        "cluster": run.get("cluster"),
        "inventory": ", ".join(run.get("inventory") or []) or None,
        **{f"version {name}": v for name, v in (run.get("versions") or {}).items()},
        **{key: report.get(key) for key in ("min_gbps", "gpu_memory", "allow_cross_switch")},
    }
    properties = ET.SubElement(suite, "properties")
    for name, value in found.items():
        if value is not None and value != "":
            ET.SubElement(properties, "property", name=name, value=str(value))


def junit(report: dict) -> str:
    """JUnit XML of the report: a test suite of one test case per pair, one of a test case per
    host check, and one of a test case per NCCL run."""
    pairs = report.get("pairs") or []
    failed = [p for p in pairs if not p["passed"]]
    suites = ET.Element("testsuites", name=SUITE, tests=str(len(pairs)), failures=str(len(failed)))
    suite = _suite(suites, "GPUDirect RDMA bandwidth", len(pairs), len(failed))
    properties(suite, report)
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
    narrowings = report.get("nccl_narrowing") or []
    if narrowings:
        named = _suite(suites, "which node (NCCL narrowing)", len(narrowings), len(narrowings))
        for found in narrowings:
            case = ET.SubElement(
                named,
                "testcase",
                classname="gpudirect.rdma.nccl_narrowing"
                + (f".{found['group']}" if "group" in found else ""),
                name=_run_name(found),
            )
            # The narrowed run was too slow: its narrowing fails with what it found.
            failure = ET.SubElement(
                case, "failure", message="; ".join(found["verdict"]), type="SlowNode"
            )
            failure.text = "\n".join(found["verdict"]) + "\n"
            ET.SubElement(case, "system-out").text = "".join(
                f"run {r['run']} (round {r['round']}): {', '.join(r['nodes'])}: "
                f"{r['busbw_judged_gbps']} Gb/s, floor {r['floor_gbps']:g} Gb/s, "
                + ("pass" if r["passed"] else "FAIL")
                + "\n"
                for r in found["runs"]
            )
    comparison = report.get("baseline")
    if comparison:
        rows = comparison.get("rows") or []
        failed_rows = [r for r in rows if not r["passed"]]
        recorded = comparison.get("recorded") or "an earlier run"
        against = _suite(suites, f"against the baseline of {recorded}", len(rows), len(failed_rows))
        for row in rows:
            case = ET.SubElement(
                against,
                "testcase",
                classname="gpudirect.rdma.baseline",
                name=f"{row['what']} ({row.get('nodes') or '-'})",
            )
            if row["problems"]:
                failure = ET.SubElement(
                    case, "failure", message="; ".join(row["problems"]), type="Regression"
                )
                failure.text = "\n".join(row["problems"]) + "\n"
            ET.SubElement(case, "system-out").text = (
                f"baseline {row['before']} Gb/s, now {row['after']} Gb/s, change "
                f"{row['change_percent']}%; {row['before_transport']} -> {row['after_transport']}\n"
            )
    every = suites.findall("testsuite")
    suites.set("tests", str(sum(int(x.get("tests")) for x in every)))
    suites.set("failures", str(sum(int(x.get("failures")) for x in every)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


STYLE = """
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


def _row(status: str | None, *cells) -> dict:
    """A table row for the template: its class, and (value, numeric) per cell."""
    return {"status": status, "cells": [c if isinstance(c, tuple) else (c, False) for c in cells]}


def _result(passed: bool) -> str:
    return "passed" if passed else "failed"


def _pair_rows(pairs: list[dict], grouped: bool) -> list[dict]:
    return [
        _row(
            _result(pair["passed"]),
            *([pair.get("group")] if grouped else []),
            (pair["rail"], True),
            f"{pair['server_node']} -> {pair['client_node']}",
            pair.get("device"),
            pair.get("link_type"),
            (pair.get("gid_index"), True),
            _path(pair.get("server_gpu") or {}),
            _path(pair.get("client_gpu") or {}),
            (pair.get("bw_average_gbps"), True),
            (pair.get("floor_gbps"), True),
            (pair.get("msg_rate_mpps"), True),
            pair.get("gpu_memory"),
            "pass" if pair["passed"] else "FAIL",
        )
        for pair in pairs
    ]


def _check_rows(checks: list[dict]) -> list[dict]:
    rows = []
    for check in checks:
        row = _row(
            "failed" if check["status"] == "failure" else check["status"],
            check["node"],
            check["check"],
            (check.get("rail"), True),
            check["status"],
            check["detail"],
            check.get("fix") or "",
        )
        reference = check.get("reference") or ""
        if reference.startswith("https://"):
            row["link"] = Markup('<td><a href="{}">reference</a></td>').format(reference)
        else:
            row["cells"].append((reference, False))
        rows.append(row)
    return rows


def _nccl_rows(runs: list[dict], grouped: bool) -> list[dict]:
    return [
        _row(
            _result(run["passed"]),
            *([run.get("group")] if grouped else []),
            ", ".join(run["nodes"]),
            (run.get("ranks"), True),
            run.get("transport"),
            gpudirect_shown(run),
            ", ".join(run.get("devices") or []) or None,
            (run.get("avg_busbw_gbps"), True),
            (run.get("max_busbw_gbps"), True),
            (run.get("busbw_judged_gbps"), True),
            f"{run['floor_gbps']:g}: {run['floor']}",
            run["config_map"],
            "pass" if run["passed"] else "FAIL",
        )
        for run in runs
    ]


_PAIR_COLUMNS = ["rail", "server -> client", "NIC", "link", "GID", "server GPU", "client GPU"]
_PAIR_COLUMNS += ["avg Gb/s", "floor Gb/s", "Mpps", "GPU memory", "result"]
_CHECK_COLUMNS = ["node", "check", "rail", "status", "what was found", "what to change", "read"]
_NCCL_COLUMNS = ["nodes", "ranks", "transport", "GPUDirect", "NICs", "avg busbw Gb/s"]
_NCCL_COLUMNS += ["best busbw Gb/s", "judged Gb/s", "floor Gb/s", "NCCL settings", "result"]
_DEVICE_KEYS = ("node", "name", "type", "firmware", "configuration")
_BASELINE_COLUMNS = [
    "rail or run",
    "nodes",
    "baseline Gb/s",
    "now Gb/s",
    "change",
    "transport, baseline -> now",
    "result",
]


def _baseline_rows(comparison: dict) -> list[dict]:
    return [
        _row(
            None if row["passed"] else "failed",
            row["what"],
            row.get("nodes"),
            (row["before"], True),
            (row["after"], True),
            (None if row["change_percent"] is None else f"{row['change_percent']:+g}%", True),
            f"{row['before_transport'] or '-'} -> {row['after_transport'] or '-'}",
            _result(row["passed"]),
        )
        for row in comparison.get("rows") or []
    ]


_NARROWING_COLUMNS = ["run", "round", "tests", "nodes", "busbw Gb/s", "floor Gb/s", "result"]


def _narrowings(narrowings: list[dict]) -> list[dict]:
    """Each narrowing of a slow NCCL run for the page: its name, verdict and runs' rows."""
    return [
        {
            "name": _run_name(found)
            + f": {found['busbw_judged_gbps']:g} Gb/s, floor {found['floor_gbps']:g} Gb/s",
            "slow": found["slow"],
            "verdict": found["verdict"],
            "rows": [
                _row(
                    _result(r["passed"]),
                    (r["run"], True),
                    (r["round"], True),
                    "a half" if r["kind"] == "half" else f"suspect {r['of'][0]}",
                    ", ".join(r["nodes"]),
                    (r["busbw_judged_gbps"], True),
                    (f"{r['floor_gbps']:g}", True),
                    _result(r["passed"]),
                )
                for r in found["runs"]
            ],
        }
        for found in narrowings
    ]


_TEMPLATE = Path(__file__).with_name("report.html.j2")
_BETWEEN_TAGS = re.compile(r">\s+<")


@functools.cache
def _template(path: Path):
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return environment.from_string(path.read_text())


def page(template: Path, **values) -> str:
    """A report's page: template (a Jinja2 file beside this one, autoescaped) rendered with
    values, the white space between tags taken out."""
    text = _template(template).render(**values)
    return "<!DOCTYPE html>\n" + _BETWEEN_TAGS.sub("><", text.strip()) + "\n"


def html(report: dict, title: str = "GPUDirect RDMA verification") -> str:
    """One self-contained HTML page of the report (report.html.j2 beside this file)."""
    pairs = report.get("pairs") or []
    runs = report.get("nccl") or []
    checks = report.get("host_checks") or []
    grouped = any("group" in p for p in pairs)
    runs_grouped = any("group" in r for r in runs)
    reasons = sorted({(p.get("floor_gbps"), p.get("floor")) for p in pairs if p.get("floor")})
    findings = [
        {"name": _pair_name(p), "problems": p["problems"], "warnings": p.get("warnings", [])}
        for p in pairs
        if p["problems"] or p.get("warnings")
    ]
    run = report.get("run") or {}
    return page(
        _TEMPLATE,
        run=run,
        run_groups=[
            _row(None, g["name"] or "-", g["method"], g["fabric"], ", ".join(g["nodes"]) or None)
            for g in run.get("groups") or []
        ],
        title=title,
        style=STYLE,
        passed=bool(report.get("passed")),
        pairs=pairs,
        pairs_passed=len([p for p in pairs if p["passed"]]),
        floors="; ".join(f"{gbps:g} Gb/s ({why})" for gbps, why in reasons) or "-",
        gpu_memory=str(report.get("gpu_memory", "-")),
        allow_cross_switch=report.get("allow_cross_switch"),
        nccl_verdict=_nccl_verdict(runs),
        # The SVG builders escape every text they take from the report.
        bars=Markup(_bars(pairs)),  # noqa: S704
        pair_columns=(["group"] if grouped else []) + _PAIR_COLUMNS,
        pair_rows=_pair_rows(pairs, grouped),
        findings=findings,
        check_columns=_CHECK_COLUMNS,
        check_rows=_check_rows(checks),
        checks_passed=sum(c["status"] == "ok" for c in checks),
        curves=Markup(_curves(runs)) if runs else "",  # noqa: S704
        nccl_columns=(["group"] if runs_grouped else []) + _NCCL_COLUMNS,
        nccl_rows=_nccl_rows(runs, runs_grouped),
        nccl_problems=[
            {"name": _run_name(r), "problems": r["problems"]} for r in runs if r["problems"]
        ],
        narrowing_columns=_NARROWING_COLUMNS,
        narrowings=_narrowings(report.get("nccl_narrowing") or []),
        baseline=report.get("baseline"),
        baseline_columns=_BASELINE_COLUMNS,
        baseline_rows=_baseline_rows(report.get("baseline") or {}),
        baseline_problems=[
            r for r in (report.get("baseline") or {}).get("rows") or [] if r["problems"]
        ],
        device_columns=["node", "NicDevice", "type", "firmware", "configuration", "ports"],
        device_rows=[
            _row(None, *(d.get(k) for k in _DEVICE_KEYS), ", ".join(d.get("ports") or []))
            for d in report.get("nic_devices") or []
        ],
    )
