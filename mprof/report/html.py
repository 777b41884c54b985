"""The HTML report: one self-contained page (inline CSS, inline SVG, no scripts or fetches).

Plot geometry is computed here as lists of plain shapes; `templates/report.html.j2` renders
them as SVG elements, so the page needs nothing but a browser.
"""

from __future__ import annotations

import math
from pathlib import Path

import jinja2

from .. import __version__
from .build import Report
from .text import decimals_for, format_text

TEMPLATES = Path(__file__).with_name("templates")
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


class Figure:
    def __init__(self, title: str, width: int, height: int, kind: str, caption: str = ""):
        self.title, self.width, self.height, self.kind = title, width, height, kind
        self.caption = caption
        self.shapes: list[dict] = []

    def rect(self, x, y, w, h, fill, tip="", cls=""):
        self.shapes.append({"t": "rect", "x": x, "y": y, "w": max(w, 0), "h": max(h, 0),
                            "fill": fill, "tip": tip, "cls": cls})

    def line(self, x1, y1, x2, y2, stroke="#333", width=1.0, dash=""):
        self.shapes.append({"t": "line", "x1": x1, "y1": y1, "x2": x2, "y2": y2,
                            "stroke": stroke, "width": width, "dash": dash})

    def text(self, x, y, text, anchor="start", size=11, fill="#222", bold=False, rotate=None):
        self.shapes.append({"t": "text", "x": x, "y": y, "text": str(text), "anchor": anchor,
                            "size": size, "fill": fill, "bold": bold, "rotate": rotate})

    def path(self, d, stroke, width, tip="", marker=True, cls=""):
        self.shapes.append({"t": "path", "d": d, "stroke": stroke, "width": width, "tip": tip,
                            "marker": marker, "cls": cls})

    def circle(self, cx, cy, r, fill, stroke="#333", tip=""):
        self.shapes.append({"t": "circle", "cx": cx, "cy": cy, "r": r, "fill": fill,
                            "stroke": stroke, "tip": tip})


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= value:
            return m * exp
    return 10 * exp


def _fmt(v: float, d: int) -> str:
    return f"{v:.{d}f}" if abs(v) >= 10 ** -d or v == 0 else f"{v:.2g}"


def _axes(fig: Figure, x0, y0, x1, y1, vmax, d, label):
    """Left value axis from y1 (0) up to y0 (vmax), with 5 grid lines."""
    for i in range(6):
        v = vmax * i / 5
        y = y1 - (y1 - y0) * i / 5
        fig.line(x0, y, x1, y, stroke="#ddd", width=1)
        fig.text(x0 - 6, y + 4, _fmt(v, d), anchor="end", size=10)
    fig.line(x0, y0, x0, y1)
    fig.line(x0, y1, x1, y1)
    fig.text(14, (y0 + y1) / 2, label, anchor="middle", size=11, rotate=-90)


def stacked_costs(report: Report, d: int) -> Figure:
    pes = report.pes
    if report.model_total is not None:
        cats = []
        for pc in pes:
            for c in pc.categories:
                if c not in cats:
                    cats.append(c)
        series = {c: [pc.categories.get(c, 0.0) for pc in pes] for c in cats}
        title, caption = "Estimated cost per category and PE", \
            "Stacked model estimates (seconds) of every module:CATEGORY on each PE."
    else:
        series = {"busy (measured)": [max(pc.measured_s - pc.idle_s, 0.0) for pc in pes],
                  "idle (measured)": [pc.idle_s for pc in pes]}
        title, caption = "Busy and idle time per PE", "No model: measured busy and idle seconds."
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(series)}
    width = max(520, 90 + 46 * len(pes) + 220)
    fig = Figure(title, width, 360, "stacked", caption)
    x0, y0, x1, y1 = 70, 30, width - 220, 320
    vmax = _nice_max(max([sum(v[i] for v in series.values()) for i in range(len(pes))] + [0]))
    _axes(fig, x0, y0, x1, y1, vmax, d, "seconds")
    slot = (x1 - x0) / max(len(pes), 1)
    bar = min(40, slot * 0.7)
    for i, pc in enumerate(pes):
        x = x0 + slot * i + (slot - bar) / 2
        base = y1
        for c, vals in series.items():
            h = (y1 - y0) * vals[i] / vmax
            fig.rect(x, base - h, bar, h, colors[c], tip=f"PE{pc.pe} {c}: {_fmt(vals[i], d)} s",
                     cls="seg")
            base -= h
        fig.text(x + bar / 2, y1 + 16, f"PE{pc.pe}", anchor="middle", size=10)
    for j, c in enumerate(series):
        y = y0 + 16 * j
        fig.rect(x1 + 16, y, 12, 12, colors[c])
        fig.text(x1 + 34, y + 10, c, size=11)
    return fig


def model_vs_measured(report: Report, d: int) -> Figure:
    pes = report.pes
    width = max(520, 90 + 70 * len(pes) + 160)
    fig = Figure("Model vs measured time per PE", width, 380, "model",
                 f"Model estimate (with its 90 % prediction band) and measured "
                 f"{'CPU' if report.measure == 'cpu' else 'elapsed'} time per "
                 "PE; the label under each pair is the model's error relative to the measured "
                 "time.")
    x0, y0, x1, y1 = 70, 30, width - 160, 320
    top = max([pc.measured_s for pc in pes] + [(pc.model_s or 0) + (pc.halfwidth or 0)
                                                for pc in pes if pc.halfwidth is not None
                                                and math.isfinite(pc.halfwidth)]
              + [pc.model_s or 0 for pc in pes])
    vmax = _nice_max(top)
    _axes(fig, x0, y0, x1, y1, vmax, d, "seconds")
    slot = (x1 - x0) / max(len(pes), 1)
    bar = min(26, slot * 0.35)

    def y(v):
        return y1 - (y1 - y0) * v / vmax

    for i, pc in enumerate(pes):
        xm = x0 + slot * i + slot / 2 - bar
        fig.rect(xm, y(pc.model_s or 0), bar, y1 - y(pc.model_s or 0), PALETTE[0],
                 tip=f"PE{pc.pe} model {_fmt(pc.model_s or 0, d)} s", cls="model")
        if pc.halfwidth is not None and math.isfinite(pc.halfwidth):
            cx = xm + bar / 2
            lo, hi = y(max((pc.model_s or 0) - pc.halfwidth, 0)), y((pc.model_s or 0)
                                                                     + pc.halfwidth)
            fig.line(cx, lo, cx, hi, stroke="#111", width=1.5)
            fig.line(cx - 5, lo, cx + 5, lo, stroke="#111", width=1.5)
            fig.line(cx - 5, hi, cx + 5, hi, stroke="#111", width=1.5)
        fig.rect(xm + bar, y(pc.measured_s), bar, y1 - y(pc.measured_s), PALETTE[1],
                 tip=f"PE{pc.pe} measured {_fmt(pc.measured_s, d)} s", cls="measured")
        fig.text(xm + bar, y1 + 15, f"PE{pc.pe}", anchor="middle", size=10)
        err = pc.error_percent
        if err is not None:
            fig.text(xm + bar, y1 + 30, f"{err:+.1f}%", anchor="middle", size=10,
                     fill="#b00" if abs(err) > 10 else "#222")
    for j, (label, color) in enumerate((("model", PALETTE[0]), ("measured", PALETTE[1]))):
        fig.rect(x1 + 16, y0 + 16 * j, 12, 12, color)
        fig.text(x1 + 34, y0 + 16 * j + 10, label)
    return fig


def latency_bars(report: Report, d: int) -> Figure:
    items = report.latency
    names = report.names
    height = 60 + 40 * max(len(items), 1)
    fig = Figure("Latency per access category", 760, height, "latency",
                 "Observed and critical-path latency (seconds of idle time, summed over PEs).")
    x0, x1 = 140, 620
    vmax = _nice_max(max([a.observed_s for a in items] + [a.critical_s for a in items] + [0]))
    for i in range(6):
        x = x0 + (x1 - x0) * i / 5
        fig.line(x, 20, x, height - 30, stroke="#ddd")
        fig.text(x, height - 14, _fmt(vmax * i / 5, d), anchor="middle", size=10)
    for i, a in enumerate(items):
        yb = 26 + 40 * i
        fig.text(x0 - 8, yb + 18, names.get(a.access, a.access), anchor="end", size=12)
        for j, (metric, color) in enumerate((("observed", PALETTE[2]), ("critical", PALETTE[3]))):
            v = a.value(metric)
            fig.rect(x0, yb + 15 * j, (x1 - x0) * v / vmax, 13, color,
                     tip=f"{names.get(a.access, a.access)} {metric}: {_fmt(v, d)} s", cls=metric)
            fig.text(x0 + (x1 - x0) * v / vmax + 4, yb + 15 * j + 11, _fmt(v, d), size=10)
    for j, (label, color) in enumerate((("observed", PALETTE[2]), ("critical", PALETTE[3]))):
        fig.rect(x1 + 50, 24 + 16 * j, 12, 12, color)
        fig.text(x1 + 68, 34 + 16 * j, label)
    return fig


def dependence_graph(report: Report, d: int) -> Figure:
    g = report.graph
    names = report.names
    nodes = list(g.nodes)
    fig = Figure("Dependence graph of synchronization events", 760, 560, "graph",
                 "Nodes are access categories; an edge enabler -> access carries the latency "
                 "of that synchronization event (observed / critical seconds, width ~ observed). "
                 "Red edges lie on the problematic chains.")
    if not nodes:
        fig.text(380, 280, "no latency rows in this run", anchor="middle", size=14)
        return fig
    cx, cy, radius = 380, 290, 200 if len(nodes) > 2 else 140
    pos = {}
    for i, n in enumerate(nodes):
        a = -math.pi / 2 + 2 * math.pi * i / len(nodes)
        pos[n] = (cx + radius * math.cos(a), cy + radius * math.sin(a))
    on_chain = {(c.nodes[i], c.nodes[i + 1]) for cs in report.chains.values() for c in cs
                for i in range(len(c.nodes) - 1)}
    wmax = max([e.observed_s for e in g.edges] + [1e-300])
    node_r = 34
    for e in g.edges:
        if e.observed_s <= 0 and e.critical_s <= 0:
            continue
        (xa, ya), (xb, yb) = pos[e.enabler], pos[e.access]
        width = 1.5 + 7 * e.observed_s / wmax
        color = "#d62728" if (e.enabler, e.access) in on_chain else "#777"
        tip = (f"{names.get(e.enabler, e.enabler)} -> {names.get(e.access, e.access)}: "
               f"observed {_fmt(e.observed_s, d)} s, critical {_fmt(e.critical_s, d)} s, "
               f"{e.count} events")
        label = f"{_fmt(e.observed_s, d)} / {_fmt(e.critical_s, d)}"
        if e.enabler == e.access:  # self loop above the node
            path = (f"M {xa - 12:.1f} {ya - node_r + 4:.1f} C {xa - 50:.1f} {ya - 110:.1f} "
                    f"{xa + 50:.1f} {ya - 110:.1f} {xa + 12:.1f} {ya - node_r + 4:.1f}")
            fig.path(path, color, width, tip, cls="edge")
            fig.text(xa, ya - 92, label, anchor="middle", size=10)
            continue
        dx, dy = xb - xa, yb - ya
        dist = math.hypot(dx, dy) or 1
        ux, uy = dx / dist, dy / dist
        nx, ny = -uy, ux  # bend to the left of the direction: A->B and B->A separate
        bend = 0.18 * dist
        sx, sy = xa + ux * node_r + nx * 8, ya + uy * node_r + ny * 8
        ex, ey = xb - ux * (node_r + 6) + nx * 8, yb - uy * (node_r + 6) + ny * 8
        mx, my = (xa + xb) / 2 + nx * bend, (ya + yb) / 2 + ny * bend
        fig.path(f"M {sx:.1f} {sy:.1f} Q {mx:.1f} {my:.1f} {ex:.1f} {ey:.1f}", color, width,
                 tip, cls="edge")
        lx, ly = (xa + xb) / 2 + nx * bend * 0.55, (ya + yb) / 2 + ny * bend * 0.55
        fig.text(lx, ly, label, anchor="middle", size=10, fill="#222")
    lat = {a.access: a for a in report.latency}
    for n in nodes:
        x, y = pos[n]
        a = lat.get(n)
        tip = names.get(n, n) + (f": observed {_fmt(a.observed_s, d)} s, critical "
                                 f"{_fmt(a.critical_s, d)} s" if a else "")
        fig.circle(x, y, node_r, "#eef3fa" if n != "unclassified" else "#f3f3f3", tip=tip)
        fig.text(x, y + 4, names.get(n, n), anchor="middle", size=12, bold=True)
    return fig


def render_html(report: Report, *, digits: int | None = None) -> str:
    d = digits if digits is not None else decimals_for(report)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["num"] = lambda v, dd=d: "n/a" if v is None or (
        isinstance(v, float) and not math.isfinite(v)) else _fmt(v, dd)
    figures = [stacked_costs(report, d)]
    if report.model_total is not None:
        figures.append(model_vs_measured(report, d))
    figures += [latency_bars(report, d), dependence_graph(report, d)]
    css = (TEMPLATES / "report.css").read_text()
    return env.get_template("report.html.j2").render(
        r=report, d=d, figures=figures, css=css, version=__version__,
        text=format_text(report, per_pe=False, digits=digits), names=report.names)


def write_html(report: Report, path: str | Path, *, digits: int | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report, digits=digits))
    return path
