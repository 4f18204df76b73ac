"""The console dashboard drawn as a page from its queries' results, for a real browser to render
(the console itself does not run here): the rows, each graph panel as wide as its span, a line
per series named by the target's legendFormat, and the unit of its y axis. Only the fields the
console's dashboards code reads (builders/dashboard.py lists them) are used."""

from __future__ import annotations

import html
import re

COLOURS = ("#0066cc", "#f0ab00", "#3e8635", "#c9190b", "#8476d1", "#009596", "#ec7a08", "#6a6e73")
WIDTH, HEIGHT = 560, 150


def legend(template: str, labels: dict) -> str:
    """legendFormat with each {{label}} replaced by the series' value, as Grafana does."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(labels.get(m.group(1), "")), template)


def _polyline(points: list[tuple[float, float]], bounds: tuple, colour: str) -> str:
    (t0, t1), (v0, v1) = bounds
    xs = [(t - t0) / ((t1 - t0) or 1) * WIDTH for t, _v in points]
    ys = [HEIGHT - (v - v0) / ((v1 - v0) or 1) * (HEIGHT - 10) - 5 for _t, v in points]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    return f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>'


def _panel(panel: dict, series: list[tuple[str, list[tuple[float, float]]]]) -> str:
    points = [p for _name, values in series for p in values]
    unit = html.escape(panel["yaxes"][0]["format"])
    if points:
        times = [t for t, _v in points]
        values = [v for _t, v in points]
        bounds = ((min(times), max(times)), (min(0.0, *values), max(values)))
        lines = "".join(
            _polyline(values, bounds, COLOURS[i % len(COLOURS)])
            for i, (_name, values) in enumerate(series)
        )
        top = f"{bounds[1][1]:.4g} {unit}"
    else:
        lines, top = '<text x="10" y="80">no data</text>', ""
    names = "".join(
        f'<li class="series"><span style="color:{COLOURS[i % len(COLOURS)]}">&#9644;</span> '
        f"{html.escape(name)}</li>"
        for i, (name, _values) in enumerate(series)
    )
    width = panel["span"] / 12 * 100
    return (
        f'<div class="panel" style="width:calc({width:.3f}% - 12px)">'
        f'<h3>{html.escape(panel["title"])}</h3><div class="axis">{top}</div>'
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none">{lines}</svg>'
        f"<ul>{names}</ul></div>"
    )


def page(board: dict, results: dict[int, list[tuple[str, list[tuple[float, float]]]]]) -> str:
    """The HTML of the dashboard; results: panel id -> [(legend, [(time, value)])]."""
    rows = "".join(
        f'<section class="row"><h2>{html.escape(row["title"])}</h2><div class="panels">'
        + "".join(_panel(p, results.get(p["id"], [])) for p in row["panels"])
        + "</div></section>"
        for row in board["rows"]
    )
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>'
        f"{html.escape(board['title'])}</title><style>"
        "body{font:13px sans-serif;margin:16px;background:#f0f0f0}"
        ".panels{display:flex;flex-wrap:wrap;gap:12px}"
        ".panel{background:#fff;border:1px solid #d2d2d2;padding:8px;box-sizing:border-box}"
        "svg{width:100%;height:150px;border-bottom:1px solid #8a8d90}"
        "h2{font-size:15px;margin:14px 0 6px}h3{font-size:13px;margin:0 0 4px}"
        ".axis{color:#6a6e73;font-size:11px}ul{list-style:none;padding:0;margin:4px 0 0}"
        "</style></head><body>"
        f"<h1>{html.escape(board['title'])}</h1>{rows}</body></html>"
    )
