"""`mprof history show`: the series over commits, as text or a self-contained HTML page with
one SVG chart per category (no scripts, no network)."""

from __future__ import annotations

import html
import math
from collections import OrderedDict

from .store import Point


def by_series(points: list[Point]) -> "OrderedDict[tuple[str, str, str], list[Point]]":
    """(category, series, machine) -> points in commit order, categories and series sorted."""
    out: dict = {}
    for p in points:
        out.setdefault((p.m.category, p.m.series, p.machine), []).append(p)
    return OrderedDict(sorted(out.items()))


def text(points: list[Point]) -> str:
    lines = []
    category = None
    for (cat, series, machine), pts in by_series(points).items():
        if cat != category:
            lines.append(f"== {cat}")
            category = cat
        unit = f" ({pts[0].m.unit})" if pts[0].m.unit else ""
        lines.append(f"{series}{unit}  [{machine}]")
        previous = None
        for p in pts:
            change = ""
            if previous not in (None, 0.0):
                change = f"  {100 * (p.m.value / previous - 1):+.1f} %"
            band = ""
            if p.m.low is not None and p.m.high is not None:
                band = f"  [{p.m.low:.6g}, {p.m.high:.6g}]"
            lines.append(f"  {p.date[:10]}  {p.commit[:10]}  {p.m.value:.6g}{band}{change}")
            previous = p.m.value
    return "\n".join(lines) + "\n"


_COLOURS = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]


def html_page(points: list[Point], title: str) -> str:
    commits = []
    for p in points:
        if p.commit not in commits:
            commits.append(p.commit)
    groups: dict[str, list] = OrderedDict()
    for (cat, series, machine), pts in by_series(points).items():
        groups.setdefault(cat, []).append((series, machine, pts))
    parts = [
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:1.5em}svg{background:#fafafa;"
        "border:1px solid #ddd}table{border-collapse:collapse;margin:.5em 0 2em}"
        "td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}"
        "td:first-child,th:first-child{text-align:left}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{len(commits)} commit(s), {sum(len(v) for v in groups.values())} series. "
        "Each chart is one category; a point is a commit's value, a bar its interval "
        "where the result had one.</p>",
    ]
    for cat, members in groups.items():
        parts.append(f"<h2>{html.escape(cat)}</h2>")
        parts.append(_chart(cat, members, commits))
        parts.append(_table(members, commits))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _chart(cat: str, members: list, commits: list[str]) -> str:
    width, height, left, right, top, bottom = 720, 260, 70, 20, 15, 45
    values = [
        v
        for _, _, pts in members
        for p in pts
        for v in (p.m.value, p.m.low, p.m.high)
        if v is not None and math.isfinite(v)
    ]
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - (abs(lo) or 1) * 0.05, hi + (abs(hi) or 1) * 0.05
    n = max(len(commits) - 1, 1)

    def x(commit):
        return left + (width - left - right) * commits.index(commit) / n

    def y(v):
        return top + (height - top - bottom) * (hi - v) / (hi - lo)

    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"role='img' aria-label='{html.escape(cat, quote=True)}'>"
    ]
    for v in (lo, (lo + hi) / 2, hi):
        out.append(
            f"<text x='{left - 5}' y='{y(v) + 4:.1f}' font-size='10' "
            f"text-anchor='end'>{v:.4g}</text>"
        )
        out.append(
            f"<line x1='{left}' x2='{width - right}' y1='{y(v):.1f}' y2='{y(v):.1f}' "
            "stroke='#ddd'/>"
        )
    for c in commits:
        out.append(
            f"<text x='{x(c):.1f}' y='{height - bottom + 14}' font-size='10' "
            f"text-anchor='middle'>{html.escape(c[:7])}</text>"
        )
    for i, (series, machine, pts) in enumerate(members):
        colour = _COLOURS[i % len(_COLOURS)]
        path = " ".join(f"{x(p.commit):.1f},{y(p.m.value):.1f}" for p in pts)
        label = html.escape(f"{series} [{machine}]", quote=True)
        out.append(
            f"<polyline class='series' data-series='{label}' fill='none' "
            f"stroke='{colour}' stroke-width='1.5' points='{path}'/>"
        )
        for p in pts:
            if p.m.low is not None and p.m.high is not None:
                out.append(
                    f"<line x1='{x(p.commit):.1f}' x2='{x(p.commit):.1f}' "
                    f"y1='{y(p.m.low):.1f}' y2='{y(p.m.high):.1f}' stroke='{colour}'/>"
                )
            out.append(
                f"<circle cx='{x(p.commit):.1f}' cy='{y(p.m.value):.1f}' r='3' "
                f"fill='{colour}'><title>{label} {html.escape(p.commit[:10])}: "
                f"{p.m.value:.6g}</title></circle>"
            )
        out.append(
            f"<text x='{left + 5}' y='{height - 8 - 11 * (len(members) - 1 - i)}' "
            f"font-size='10' fill='{colour}'>{label}</text>"
            if len(members) <= 2
            else ""
        )
    out.append("</svg>")
    return "".join(out)


def _table(members: list, commits: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c[:10])}</th>" for c in commits)
    rows = [f"<table><tr><th>series</th>{head}</tr>"]
    for i, (series, machine, pts) in enumerate(members):
        values = {p.commit: p.m.value for p in pts}
        cells = "".join(
            f"<td>{values[c]:.6g}</td>" if c in values else "<td></td>" for c in commits
        )
        colour = _COLOURS[i % len(_COLOURS)]
        rows.append(
            f"<tr><td><span style='color:{colour}'>&#9632;</span> "
            f"{html.escape(series)} [{html.escape(machine)}]</td>{cells}</tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)
