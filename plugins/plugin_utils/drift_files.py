"""The drift report (the gpudirect.rdma.drift module's result, with the run's date and inventory)
as files people and CI systems read (pure: report in, text out).

- junit(report): JUnit XML, one test case per step of the table and one for the cluster's own
  (nodes, the preflight checks of every run), classname gpudirect.rdma.drift.<step>; a step
  with differences fails, its failure element holding one line per difference, the details in
  system-out. AAP, Jenkins and GitLab show it as test results.
- html(report): one self-contained page (drift.html.j2 beside this file, autoescaped, the verify
  page's style; no script, nothing fetched): the verdict and the counts by kind, then per step
  its differences with the field, the planned and found values and who changed them.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.report_files import (
    STYLE,
    page,
    properties,
)

SUITE = "gpudirect.rdma drift"
_TEMPLATE = Path(__file__).with_name("drift.html.j2")


def _who(found: dict) -> str:
    return ", ".join(
        " ".join(part for part in (w["manager"], w.get("operation"), w.get("time")) if part)
        for w in found.get("changed_by") or []
    )


def _value(value) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _line(found: dict) -> str:
    return f"{found['kind']}: {found['object']}: {found['message']}"


def _details(found: dict) -> str:
    lines = [_line(found)]
    if "field" in found:
        lines.append(f"  field: {found['field']}")
    if "planned" in found or "found" in found:
        lines.append(f"  planned: {_value(found.get('planned'))}")
        lines.append(f"  found: {_value(found.get('found'))}")
    if found.get("changed_by"):
        lines.append(f"  changed by: {_who(found)}")
    return "\n".join(lines)


def junit(report: dict) -> str:
    """JUnit XML: one test case per step (and the cluster's), failed where something differs."""
    steps = report.get("steps") or []
    failed = [s for s in steps if s["differences"]]
    suites = ET.Element("testsuites", name=SUITE, tests=str(len(steps)), failures=str(len(failed)))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"{SUITE}: the cluster against the plan",
        tests=str(len(steps)),
        failures=str(len(failed)),
        errors="0",
        skipped="0",
    )
    properties(suite, report)
    for step in steps:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"gpudirect.rdma.drift.{step['step']}",
            name=f"{step['step']}: {step.get('title') or step['step']}",
        )
        if step["differences"]:
            failure = ET.SubElement(
                case,
                "failure",
                message=f"{len(step['differences'])} difference(s) from the plan",
                type="Drift",
            )
            failure.text = "\n".join(_line(i) for i in step["differences"]) + "\n"
            ET.SubElement(case, "system-out").text = (
                "\n".join(_details(i) for i in step["differences"]) + "\n"
            )
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


def html(report: dict, title: str = "GPUDirect RDMA drift") -> str:
    """One self-contained HTML page of the report (drift.html.j2 beside this file)."""
    steps = [
        {
            "step": s["step"],
            "title": s.get("title") or s["step"],
            "rows": [
                {
                    "kind": i["kind"],
                    "object": i["object"],
                    "field": i.get("field"),
                    "planned": _value(i["planned"]) if "planned" in i else None,
                    "found": _value(i.get("found")) if "planned" in i else None,
                    "who": _who(i) or None,
                    "message": i["message"],
                }
                for i in s["differences"]
            ],
        }
        for s in report.get("steps") or []
    ]
    return page(
        _TEMPLATE,
        title=title,
        style=STYLE,
        drifted=bool(report.get("drifted")),
        msg=report.get("msg", ""),
        run=report.get("run") or {},
        counts=[(kind, count) for kind, count in (report.get("counts") or {}).items() if count],
        steps=steps,
        clean=[s for s in steps if not s["rows"]],
    )
