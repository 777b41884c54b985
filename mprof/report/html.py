"""The HTML report: one self-contained page (inline CSS, inline SVG, no scripts or fetches).

Plot geometry is computed here as lists of plain shapes; `templates/report.html.j2` renders
them as SVG elements, so the page needs nothing but a browser.
"""

from __future__ import annotations

import math
from pathlib import Path

import jinja2

from .. import __version__
from ..files import write_file
from ..numbers import percent, percent_of
from .build import Report
from .measured import NO_CATEGORIES
from .text import (
    format_text,
    idle_lines,
    imbalance_sentence,
    lead_rows,
    message_lines,
    wait_sentence,
)

TEMPLATES = Path(__file__).with_name("templates")
PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
]


class Figure:
    def __init__(self, title: str, width: int, height: int, kind: str, caption: str = ""):
        self.title, self.width, self.height, self.kind = title, width, height, kind
        self.caption = caption
        self.shapes: list[dict] = []

    def rect(self, x, y, w, h, fill, tip="", cls="", stroke="", dash=""):
        if w < 0:  # a bar drawn leftwards (negative value)
            x, w = x + w, -w
        if h < 0:
            y, h = y + h, -h
        self.shapes.append(
            {
                "t": "rect",
                "x": x,
                "y": y,
                "w": w,
                "h": h,
                "fill": fill,
                "tip": tip,
                "cls": cls,
                "stroke": stroke,
                "dash": dash,
            }
        )

    def line(self, x1, y1, x2, y2, stroke="#333", width=1.0, dash=""):
        self.shapes.append(
            {
                "t": "line",
                "x1": x1,
                "y1": y1,
                "x2": x2,
                "y2": y2,
                "stroke": stroke,
                "width": width,
                "dash": dash,
            }
        )

    def text(
        self,
        x,
        y,
        text,
        anchor="start",
        size=11,
        fill="#222",
        bold=False,
        rotate=None,
        halo=False,
        cls="",
    ):
        self.shapes.append(
            {
                "t": "text",
                "x": x,
                "y": y,
                "text": str(text),
                "anchor": anchor,
                "size": size,
                "fill": fill,
                "bold": bold,
                "rotate": rotate,
                "halo": halo,
                "cls": cls,
            }
        )

    def path(self, d, stroke, width, tip="", marker=True, cls=""):
        self.shapes.append(
            {
                "t": "path",
                "d": d,
                "stroke": stroke,
                "width": width,
                "tip": tip,
                "marker": marker,
                "cls": cls,
            }
        )

    def circle(self, cx, cy, r, fill, stroke="#333", tip=""):
        self.shapes.append(
            {"t": "circle", "cx": cx, "cy": cy, "r": r, "fill": fill, "stroke": stroke, "tip": tip}
        )


def _ticks(lo: float, hi: float) -> list[float]:
    """Tick values from at most `lo` to at least `hi`, a nice step apart (1, 2, 2.5 or 5 times a
    power of ten), zero among them when the range crosses it; about 5 intervals."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo <= 0 or not math.isfinite(hi - lo):
        return [0.0, 1.0] if hi <= 0 else [0.0, hi]
    raw = (hi - lo) / 5
    exp = 10 ** math.floor(math.log10(raw))
    step = next(m * exp for m in (1, 2, 2.5, 5, 10) if m * exp >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [i * step for i in range(first, last + 1)]


def _fmt(v: float, d: int) -> str:
    return f"{v:.{d}f}" if abs(v) >= 10**-d or v == 0 else f"{v:.2g}"


def _axes(fig: Figure, x0, y0, x1, y1, ticks, d, label, xlabel=""):
    """Left value axis from ticks[0] (at y1) up to ticks[-1] (at y0), a grid line per tick; the
    zero line is drawn dark when the axis reaches below zero.  Returns the zero line's y."""
    vmin, vmax = ticks[0], ticks[-1]
    for v in ticks:
        y = y1 - (y1 - y0) * (v - vmin) / (vmax - vmin)
        fig.line(x0, y, x1, y, stroke="#ddd", width=1)
        fig.text(x0 - 6, y + 4, _fmt(v, d), anchor="end", size=10)
    fig.line(x0, y0, x0, y1)
    zero = y1 - (y1 - y0) * (0 - vmin) / (vmax - vmin)
    fig.line(x0, zero, x1, zero, stroke="#333", width=1.2 if vmin < 0 else 1)
    fig.text(14, (y0 + y1) / 2, label, anchor="middle", size=11, rotate=-90, cls="axis-title")
    if xlabel:
        fig.text((x0 + x1) / 2, fig.height - 6, xlabel, anchor="middle", size=11, cls="axis-title")
    return zero


def _value_axis(fig: Figure, x, ticks, x0, x1, bottom, d: int, title: str) -> None:
    """The value axis of a chart of horizontal bars (rows from y = 14 down to `bottom`): a grid
    line and a label per tick, the zero line, and the axis title."""
    for v in ticks:
        fig.line(x(v), 14, x(v), bottom, stroke="#eee")
        fig.text(x(v), bottom + 14, _fmt(v, d), anchor="middle", size=10)
    fig.line(x(0), 14, x(0), bottom, stroke="#333")
    fig.text((x0 + x1) / 2, bottom + 32, title, anchor="middle", size=11, cls="axis-title")


def _value_bar(fig: Figure, x, y, seconds, share, d: int, fill, tip, cls, bold=False) -> None:
    """One row's bar from 0 to `seconds`, and its value and share after it; a negative value's
    bar red, outlined and dashed."""
    neg = seconds < 0
    fig.rect(
        x(0),
        y + 2,
        x(seconds) - x(0),
        18,
        "#c44e52" if neg else fill,
        tip=tip,
        cls=cls,
        stroke="#7a1f22" if neg else "",
        dash="3,2" if neg else "",
    )
    text = f"{_fmt(seconds, d)} s  ·  {percent_of(share)}"
    fig.text(max(x(seconds), x(0)) + 6, y + 15, text, size=11, bold=bold)


def where_bars(report: Report, d: int) -> Figure:
    """The lead figure: every category's cost as a bar, largest first, with its share."""
    rows, rest = lead_rows(report, limit=8)
    rows = rows + ([rest] if rest else [])
    modelled = report.model_total is not None
    height = 58 + 26 * max(len(rows), 1)
    fig = Figure(
        "Where the time went",
        900,
        height,
        "where",
        f"{'Model estimate' if modelled else 'Measured time'} of each category "
        f"({report.seconds_unit}), largest first, with its share of the "
        f"{'model' if modelled else 'measured'} total "
        f"{_fmt(report.where_total, d)} s.",
    )
    x0, x1 = 170, 660
    lo = min([r.seconds for r in rows] + [0.0])
    hi = max([r.seconds for r in rows] + [0.0])
    ticks = _ticks(lo, hi)
    vmin, vmax = ticks[0], ticks[-1]

    def x(v):
        return x0 + (x1 - x0) * (v - vmin) / (vmax - vmin)

    _value_axis(fig, x, ticks, x0, x1, height - 40, d, report.seconds_unit)
    for i, r in enumerate(rows):
        y = 16 + 26 * i
        label = r.name if r.module else r.category
        fig.text(x0 - 8, y + 14, label, anchor="end", size=12, bold=i == 0)
        _value_bar(
            fig,
            x,
            y,
            r.seconds,
            r.share,
            d,
            PALETTE[0] if r.module else "#bab0ac",
            tip=f"{label}: {_fmt(r.seconds, d)} s, {percent_of(r.share)}",
            cls="where",
            bold=i == 0,
        )
    return fig


def measured_bars(report: Report, d: int) -> Figure:
    """The lead figure when the run measured its categories: each row's measured CPU time as a
    bar, largest group first, and the model's estimate as a thinner bar under it."""
    rows = report.measured_rows
    beside = report.model_beside
    step = 34 if beside else 26
    height = 78 + step * max(len(rows), 1)
    fig = Figure(
        "Where the time went, measured",
        900,
        height,
        "measured",
        "Measured CPU time of each access category (CPU seconds summed over PEs), "
        "with its share of the measured total "
        f"{_fmt(report.measured_cpu_total, d)} s"
        + (
            "; under it, the model's estimate for the category's module (on the "
            "module's subtotal row when it has several categories), and the time no "
            "model term explains."
            if beside
            else "."
        ),
    )
    x0, x1 = 250, 610  # room right of the bars for their labels, then the legend
    values = (
        [r.cpu_s for r in rows if r.cpu_s is not None]
        + [r.model_s for r in rows if r.model_s is not None]
        + [0.0]
    )
    ticks = _ticks(min(values), max(values))
    vmin, vmax = ticks[0], ticks[-1]

    def x(v):
        return x0 + (x1 - x0) * (v - vmin) / (vmax - vmin)

    bottom = height - 60
    _value_axis(fig, x, ticks, x0, x1, bottom, d, "CPU seconds summed over PEs")
    for i, r in enumerate(rows):
        y = 16 + step * i
        bold = r.kind != "category"
        fig.text(x0 - 8, y + 14, r.label, anchor="end", size=12, bold=bold)
        if r.cpu_s is not None:
            color = (
                "#bab0ac"
                if r.kind == "unexplained"
                else ("#2f5d8a" if r.kind == "subtotal" else PALETTE[0])
            )
            _value_bar(
                fig,
                x,
                y,
                r.cpu_s,
                r.share,
                d,
                color,
                tip=f"{r.label}: measured {_fmt(r.cpu_s, d)} CPU s, {percent_of(r.share)}",
                cls="measured",
            )
        if beside and r.model_s is not None:
            fig.rect(
                x(0),
                y + 22,
                x(r.model_s) - x(0),
                8,
                PALETTE[1],
                tip=f"{r.label}: model {_fmt(r.model_s, d)} CPU s "
                f"({', '.join(r.model_categories)})",
                cls="model-estimate",
            )
            fig.text(
                max(x(r.model_s), x(0)) + 6,
                y + 30,
                f"model {_fmt(r.model_s, d)} s",
                size=10,
                fill="#8a4b08",
            )
    legend = [("measured", PALETTE[0])] + ([("model estimate", PALETTE[1])] if beside else [])
    for j, (label, color) in enumerate(legend):
        fig.rect(x1 + 165, 16 + 16 * j, 12, 12, color)
        fig.text(x1 + 183, 26 + 16 * j, label, size=11)
    return fig


def category_stack(report: Report, d: int) -> Figure:
    """Per PE, its measured CPU time stacked by access category, beside its wall-clock time
    (a thin grey bar): where the PEs' busy time went and which PEs had little."""
    pes = report.pe_measured
    order = [r.label for r in report.measured_rows if r.kind == "category"]
    series = {c: [(p.categories or {}).get(c, 0.0) for p in pes] for c in order}
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(series)}
    width = max(620, 90 + 46 * len(pes) + 260)
    fig = Figure(
        "CPU time per PE by category",
        width,
        380,
        "pe-categories",
        "Measured CPU seconds of each PE, stacked by access category (largest "
        "first in the legend); the idle loop is the (idle) segment.",
    )
    x0, y0, x1, y1 = 70, 30, width - 260, 330
    top = max([sum(v[i] for v in series.values()) for i in range(len(pes))] + [0.0])
    ticks = _ticks(0.0, top)
    zero = _axes(fig, x0, y0, x1, y1, ticks, d, "CPU seconds", xlabel="PE")
    scale = (y1 - y0) / (ticks[-1] - ticks[0])
    slot = (x1 - x0) / max(len(pes), 1)
    bar = min(40, slot * 0.7)
    for i, p in enumerate(pes):
        xb = x0 + slot * i + (slot - bar) / 2
        _stack(
            fig,
            xb,
            bar,
            zero,
            scale,
            series,
            colors,
            i,
            lambda c, v: f"PE{p.pe} {c}: {_fmt(v, d)} CPU s",
        )
        fig.text(xb + bar / 2, y1 + 16, f"PE{p.pe}", anchor="middle", size=10)
    for j, c in enumerate(list(series)[:18]):
        fig.rect(x1 + 16, y0 + 16 * j, 12, 12, colors[c])
        fig.text(x1 + 34, y0 + 16 * j + 10, c, size=11)
    return fig


def _stack(
    fig: Figure,
    xb: float,
    bar: float,
    zero: float,
    scale: float,
    series: dict[str, list[float]],
    colors: dict[str, str],
    i: int,
    tip,
) -> float:
    """Bar i of a stacked chart: each series' positive value upwards from `zero`, in order,
    with tip(series name, value) as its tooltip.  Returns the top of the stack."""
    up = zero
    for c, vals in series.items():
        v = vals[i]
        if v > 0:
            fig.rect(xb, up - scale * v, bar, scale * v, colors[c], tip=tip(c, v), cls="seg")
            up -= scale * v
    return up


def stacked_costs(report: Report, d: int) -> Figure:
    """Per PE, the categories stacked: positive costs upwards from zero, negative costs (a
    fitted parameter below zero) downwards, outlined, so that they stay visible."""
    pes = report.pes
    if report.model_total is not None:
        order = [r.name for r in report.where]  # largest first: the legend reads like the lead
        cats = [c for c in order if any(c in pc.categories for pc in pes)]
        cats += [c for pc in pes for c in pc.categories if c not in cats]
        series = {c: [pc.categories.get(c, 0.0) for pc in pes] for c in dict.fromkeys(cats)}
        title, caption = (
            "Estimated cost per category and PE",
            (
                f"Stacked model estimates ({report.seconds_unit.replace(' summed over PEs', '')})"
                " of every module:CATEGORY on each PE; negative estimates are drawn below zero, "
                "outlined."
            ),
        )
    else:
        series = {
            "busy (measured)": [max(pc.measured_s - pc.idle_s, 0.0) for pc in pes],
            "idle (measured)": [pc.idle_s for pc in pes],
        }
        title, caption = "Busy and idle time per PE", "No model: measured busy and idle seconds."
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(series)}
    width = max(560, 90 + 46 * len(pes) + 240)
    fig = Figure(title, width, 380, "stacked", caption)
    x0, y0, x1, y1 = 70, 30, width - 240, 330
    pos_max = max([sum(max(v[i], 0.0) for v in series.values()) for i in range(len(pes))] + [0])
    neg_min = min([sum(min(v[i], 0.0) for v in series.values()) for i in range(len(pes))] + [0])
    ticks = _ticks(neg_min, pos_max)
    vmin, vmax = ticks[0], ticks[-1]
    zero = _axes(
        fig,
        x0,
        y0,
        x1,
        y1,
        ticks,
        d,
        "CPU seconds" if report.measure == "cpu" else "seconds",
        xlabel="PE",
    )
    scale = (y1 - y0) / (vmax - vmin)
    slot = (x1 - x0) / max(len(pes), 1)
    bar = min(40, slot * 0.7)
    for i, pc in enumerate(pes):
        x = x0 + slot * i + (slot - bar) / 2
        up, down = zero, zero
        for c, vals in series.items():
            v = vals[i]
            tip = f"PE{pc.pe} {c}: {_fmt(v, d)} s"
            if v >= 0:
                fig.rect(x, up - scale * v, bar, scale * v, colors[c], tip=tip, cls="seg")
                up -= scale * v
            else:
                fig.rect(
                    x,
                    down,
                    bar,
                    -scale * v,
                    colors[c],
                    tip=tip,
                    cls="seg neg",
                    stroke="#111",
                    dash="3,2",
                )
                down -= scale * v
        fig.text(x + bar / 2, y1 + 16, f"PE{pc.pe}", anchor="middle", size=10)
    for j, c in enumerate(series):
        y = y0 + 16 * j
        negative = any(v < 0 for v in series[c])
        fig.rect(
            x1 + 16,
            y,
            12,
            12,
            colors[c],
            stroke="#111" if negative else "",
            dash="3,2" if negative else "",
        )
        fig.text(x1 + 34, y + 10, c + (" (negative)" if negative else ""), size=11)
    return fig


def model_vs_measured(report: Report, d: int) -> Figure:
    pes = report.pes
    width = max(520, 90 + 70 * len(pes) + 160)
    fig = Figure(
        "Model vs measured time per PE",
        width,
        380,
        "model",
        f"Model estimate (with its 90 % prediction band) and measured "
        f"{'CPU' if report.measure == 'cpu' else 'elapsed'} time per "
        "PE; the label under each pair is the model's error relative to the measured "
        "time.",
    )
    x0, y0, x1, y1 = 70, 30, width - 160, 320
    top = max(
        [pc.measured_s for pc in pes]
        + [
            (pc.model_s or 0) + (pc.halfwidth or 0)
            for pc in pes
            if pc.halfwidth is not None and math.isfinite(pc.halfwidth)
        ]
        + [pc.model_s or 0 for pc in pes]
    )
    ticks = _ticks(0.0, top)
    vmax = ticks[-1]
    fig.height += 14
    _axes(
        fig,
        x0,
        y0,
        x1,
        y1,
        ticks,
        d,
        "CPU seconds" if report.measure == "cpu" else "seconds",
        xlabel="PE (label: model error relative to measured)",
    )
    slot = (x1 - x0) / max(len(pes), 1)
    bar = min(26, slot * 0.35)

    def y(v):
        return y1 - (y1 - y0) * v / vmax

    for i, pc in enumerate(pes):
        xm = x0 + slot * i + slot / 2 - bar
        fig.rect(
            xm,
            y(pc.model_s or 0),
            bar,
            y1 - y(pc.model_s or 0),
            PALETTE[0],
            tip=f"PE{pc.pe} model {_fmt(pc.model_s or 0, d)} s",
            cls="model",
        )
        if pc.halfwidth is not None and math.isfinite(pc.halfwidth):
            cx = xm + bar / 2
            lo, hi = (
                y(max((pc.model_s or 0) - pc.halfwidth, 0)),
                y((pc.model_s or 0) + pc.halfwidth),
            )
            fig.line(cx, lo, cx, hi, stroke="#111", width=1.5)
            fig.line(cx - 5, lo, cx + 5, lo, stroke="#111", width=1.5)
            fig.line(cx - 5, hi, cx + 5, hi, stroke="#111", width=1.5)
        fig.rect(
            xm + bar,
            y(pc.measured_s),
            bar,
            y1 - y(pc.measured_s),
            PALETTE[1],
            tip=f"PE{pc.pe} measured {_fmt(pc.measured_s, d)} s",
            cls="measured",
        )
        fig.text(xm + bar, y1 + 15, f"PE{pc.pe}", anchor="middle", size=10)
        err = pc.error_percent
        if err is not None:
            fig.text(
                xm + bar,
                y1 + 30,
                percent(err, "+.1f", "%"),
                anchor="middle",
                size=10,
                fill="#b00" if abs(err) > 10 else "#222",
            )
    for j, (label, color) in enumerate((("model", PALETTE[0]), ("measured", PALETTE[1]))):
        fig.rect(x1 + 16, y0 + 16 * j, 12, 12, color)
        fig.text(x1 + 34, y0 + 16 * j + 10, label)
    return fig


def latency_bars(report: Report, d: int) -> Figure:
    items = report.latency_by_cost
    names = report.names
    height = 88 + 40 * max(len(items), 1)
    fig = Figure(
        "Latency per access category",
        760,
        height,
        "latency",
        "Observed and critical-path latency of each access category (seconds of idle "
        "time, summed over PEs), largest observed latency first.",
    )
    x0, x1, top, bottom = 150, 620, 20, height - 50
    ticks = _ticks(0.0, max([a.observed_s for a in items] + [a.critical_s for a in items] + [0]))
    vmax = ticks[-1]
    for v in ticks:
        x = x0 + (x1 - x0) * v / vmax
        fig.line(x, top, x, bottom, stroke="#ddd")
        fig.text(x, bottom + 16, _fmt(v, d), anchor="middle", size=10)
    fig.line(x0, top, x0, bottom)
    fig.text(
        (x0 + x1) / 2,
        height - 10,
        "latency (seconds of idle time, summed over PEs)",
        anchor="middle",
        size=11,
        cls="axis-title",
    )
    fig.text(
        16,
        (top + bottom) / 2,
        "access category",
        anchor="middle",
        size=11,
        rotate=-90,
        cls="axis-title",
    )
    for i, a in enumerate(items):
        yb = top + 6 + 40 * i
        fig.text(x0 - 8, yb + 18, names.get(a.access, a.access), anchor="end", size=12)
        for j, (metric, color) in enumerate((("observed", PALETTE[2]), ("critical", PALETTE[3]))):
            v = a.value(metric)
            fig.rect(
                x0,
                yb + 15 * j,
                (x1 - x0) * v / vmax,
                13,
                color,
                tip=f"{names.get(a.access, a.access)} {metric}: {_fmt(v, d)} s",
                cls=metric,
            )
            fig.text(x0 + (x1 - x0) * v / vmax + 4, yb + 15 * j + 11, f"{_fmt(v, d)} s", size=10)
    for j, (label, color) in enumerate((("observed", PALETTE[2]), ("critical", PALETTE[3]))):
        fig.rect(x1 + 50, 24 + 16 * j, 12, 12, color)
        fig.text(x1 + 68, 34 + 16 * j, label)
    return fig


def _label_box(x, y, text, size):
    """The box a label centred at x with baseline y covers (approximate glyph widths)."""
    w = 0.6 * size * len(text) + 4
    return (x - w / 2, y - size, x + w / 2, y + 4)


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _hits_node(box, pos, r) -> bool:
    for cx, cy in pos.values():
        nx, ny = min(max(cx, box[0]), box[2]), min(max(cy, box[1]), box[3])
        if (nx - cx) ** 2 + (ny - cy) ** 2 < r * r:
            return True
    return False


def _place_label(candidates, text, size, placed, pos, r):
    """The first candidate point whose label box overlaps no placed label and no node (the
    least crowded one when every candidate collides)."""
    best, best_hits = None, None
    for x, y in candidates:
        box = _label_box(x, y, text, size)
        hits = sum(_overlaps(box, b) for b in placed) * 10 + _hits_node(box, pos, r)
        if best_hits is None or hits < best_hits:
            best, best_hits = (x, y, box), hits
        if hits == 0:
            break
    placed.append(best[2])
    return best[0], best[1]


def dependence_graph(report: Report, d: int) -> Figure:
    """Access categories on a circle, synchronization events as curved arrows.  Only nodes
    with at least one drawn edge appear; edge labels are placed where they overlap no other
    label and no node."""
    g = report.graph
    names = report.names
    edges = [e for e in g.edges if e.observed_s > 0 or e.critical_s > 0]
    used = {e.enabler for e in edges} | {e.access for e in edges}
    nodes = [n for n in g.nodes if n in used]
    fig = Figure(
        "Dependence graph of synchronization events",
        760,
        560,
        "graph",
        "Nodes are access categories; an arrow enabler -> access carries the latency "
        "of that synchronization event (observed / critical, seconds; width ~ "
        "observed). Red arrows lie on the problematic chains. Categories without "
        "latency are left out.",
    )
    if not nodes:
        fig.text(380, 280, "no latency rows in this run", anchor="middle", size=14)
        return fig
    cx, cy, radius = 380, 290, 200 if len(nodes) > 2 else 140
    pos = {}
    for i, n in enumerate(nodes):
        a = -math.pi / 2 + 2 * math.pi * i / len(nodes)
        pos[n] = (cx + radius * math.cos(a), cy + radius * math.sin(a))
    on_chain = {
        (c.nodes[i], c.nodes[i + 1])
        for cs in report.chains.values()
        for c in cs
        for i in range(len(c.nodes) - 1)
    }
    wmax = max([e.observed_s for e in edges] + [1e-300])
    node_r = 34
    placed: list[tuple] = []
    labels = []
    for e in sorted(edges, key=lambda e: -e.observed_s):
        (xa, ya), (xb, yb) = pos[e.enabler], pos[e.access]
        width = 1.5 + 7 * e.observed_s / wmax
        color = "#d62728" if (e.enabler, e.access) in on_chain else "#777"
        tip = (
            f"{names.get(e.enabler, e.enabler)} -> {names.get(e.access, e.access)}: "
            f"observed {_fmt(e.observed_s, d)} s, critical {_fmt(e.critical_s, d)} s, "
            f"{e.count} events"
        )
        label = f"{_fmt(e.observed_s, d)} / {_fmt(e.critical_s, d)} s"
        if e.enabler == e.access:  # self loop above the node
            path = (
                f"M {xa - 12:.1f} {ya - node_r + 4:.1f} C {xa - 50:.1f} {ya - 110:.1f} "
                f"{xa + 50:.1f} {ya - 110:.1f} {xa + 12:.1f} {ya - node_r + 4:.1f}"
            )
            fig.path(path, color, width, tip, cls="edge")
            candidates = [(xa, ya - 92 - k) for k in (0, 14, -14, 28)]
        else:
            dx, dy = xb - xa, yb - ya
            dist = math.hypot(dx, dy) or 1
            ux, uy = dx / dist, dy / dist
            nx, ny = -uy, ux  # bend to the left of the direction: A->B and B->A separate
            bend = 0.18 * dist
            sx, sy = xa + ux * node_r + nx * 8, ya + uy * node_r + ny * 8
            ex, ey = xb - ux * (node_r + 6) + nx * 8, yb - uy * (node_r + 6) + ny * 8
            mx, my = (xa + xb) / 2 + nx * bend, (ya + yb) / 2 + ny * bend
            fig.path(
                f"M {sx:.1f} {sy:.1f} Q {mx:.1f} {my:.1f} {ex:.1f} {ey:.1f}",
                color,
                width,
                tip,
                cls="edge",
            )

            def on_curve(t, off=0.0):  # a point of the quadratic curve, moved off it
                px = (1 - t) ** 2 * sx + 2 * (1 - t) * t * mx + t * t * ex
                py = (1 - t) ** 2 * sy + 2 * (1 - t) * t * my + t * t * ey
                return px + nx * off, py + ny * off + 4

            candidates = [
                on_curve(t, off) for off in (10, 24, -10) for t in (0.5, 0.38, 0.62, 0.28, 0.72)
            ]
        lx, ly = _place_label(candidates, label, 10, placed, pos, node_r)
        labels.append((lx, ly, label))
    for lx, ly, label in labels:  # above every arrow
        fig.text(lx, ly, label, anchor="middle", size=10, fill="#222", halo=True, cls="edge-label")
    lat = {a.access: a for a in report.latency}
    for n in nodes:
        x, y = pos[n]
        a = lat.get(n)
        tip = names.get(n, n) + (
            f": observed {_fmt(a.observed_s, d)} s, critical {_fmt(a.critical_s, d)} s" if a else ""
        )
        fig.circle(x, y, node_r, "#eef3fa" if n != "unclassified" else "#f3f3f3", tip=tip)
        fig.text(x, y + 4, names.get(n, n), anchor="middle", size=12, bold=True)
    return fig


def _environment(d: int) -> jinja2.Environment:
    """The templates' environment: strict, escaped, with the `num` filter at `d` digits."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda v, dd=d: (
        "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else _fmt(v, dd)
    )
    return env


def render_html(report: Report, *, digits: int | None = None) -> str:
    d = digits if digits is not None else report.decimals
    env = _environment(d)
    figures = [where_bars(report, d), stacked_costs(report, d)]
    if report.has_categories:
        figures += [measured_bars(report, d), category_stack(report, d)]
    if report.model_total is not None:
        figures.append(model_vs_measured(report, d))
    figures += [latency_bars(report, d), dependence_graph(report, d)]
    css = (TEMPLATES / "report.css").read_text()
    return env.get_template("report.html.j2").render(
        r=report,
        d=d,
        figures={f.kind: f for f in figures},
        css=css,
        version=__version__,
        text=format_text(report, per_pe=False, digits=digits),
        names=report.names,
        share=percent_of,
        relative=_relative,
        no_categories=NO_CATEGORIES,
        imbalance=imbalance_sentence(report, d) if report.imbalance else None,
        wait=wait_sentence(report, d) if report.lead_access else None,
        idle=idle_lines(report, d)[1:],
        messages=message_lines(report)[1:],
        stat=_stat_text,
    )


def _relative(change: float, now: float) -> str:
    """A change relative to what it changes, signed and bounded (numbers.percent)."""
    return percent_of(change / now, "+.1f") if now else "n/a"


def _stat_text(v) -> str:
    if v is None:
        return ""
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def write_html(report: Report, path: str | Path, *, digits: int | None = None) -> Path:
    path = Path(path)
    write_file(path, render_html(report, digits=digits), what="report")
    return path


def scaling_chart(cmp, d: int) -> Figure:
    """Runs at several PE counts: each run's PE-seconds stacked by category (the smallest run's
    total as the dashed line of perfect scaling), its efficiency above the bar, and the
    model's prediction as a marker."""

    runs = cmp.runs
    series = {c: [cmp.total(r, c) for r in runs] for c in cmp.rows}
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(series)}
    modelled = any(r.model_s is not None for r in runs)
    width = max(640, 110 + 80 * len(runs) + 280)
    fig = Figure(
        "Time per category across PE counts",
        width,
        420,
        "scaling",
        "Seconds summed over PEs of each run, stacked by category (CPU time per "
        "access category; the top segment is wall-clock time the PEs were not on a "
        "CPU), so a bar is the run's PE-seconds. Above each bar: its parallel "
        "efficiency relative to the run with the fewest PEs; the dashed line is that "
        "run's PE-seconds, what every run would take if it scaled perfectly"
        + ("; diamonds: the model's prediction." if modelled else "."),
    )
    x0, y0, x1, y1 = 80, 40, width - 280, 360
    top = max([r.pe_seconds for r in runs] + [r.model_s or 0.0 for r in runs] + [0.0])
    ticks = _ticks(0.0, top * 1.05)
    zero = _axes(fig, x0, y0, x1, y1, ticks, d, "seconds summed over PEs", xlabel="PEs (P)")
    scale = (y1 - y0) / (ticks[-1] - ticks[0])
    slot = (x1 - x0) / max(len(runs), 1)
    bar = min(48, slot * 0.6)
    ideal = zero - scale * cmp.base.pe_seconds
    fig.line(x0, ideal, x1, ideal, stroke="#555", width=1.2, dash="5,4")
    for i, r in enumerate(runs):
        xb = x0 + slot * i + (slot - bar) / 2
        up = _stack(
            fig,
            xb,
            bar,
            zero,
            scale,
            series,
            colors,
            i,
            lambda c, v: f"P={r.npes} {c}: {_fmt(v, d)} s ({_fmt(v / r.npes, d)} s per PE)",
        )
        fig.text(
            xb + bar / 2,
            up - 6,
            percent_of(cmp.efficiency(r)),
            anchor="middle",
            size=10,
            bold=True,
            cls="efficiency",
        )
        fig.text(xb + bar / 2, y1 + 16, f"P={r.npes}", anchor="middle", size=11)
        if r.model_s is not None:
            ym = zero - scale * r.model_s
            cx = xb + bar + 9
            fig.path(
                f"M {cx:.1f} {ym - 6:.1f} L {cx + 6:.1f} {ym:.1f} L {cx:.1f} {ym + 6:.1f} "
                f"L {cx - 6:.1f} {ym:.1f} Z",
                "#111",
                1.5,
                tip=f"P={r.npes} model {_fmt(r.model_s, d)} s, measured {_fmt(r.measured_s, d)} s",
                marker=False,
                cls="model-marker",
            )
    legend = list(series) + (["model prediction"] if modelled else []) + ["perfect scaling"]
    for j, c in enumerate(legend[:20]):
        y = y0 + 16 * j
        if c in colors:
            fig.rect(x1 + 16, y, 12, 12, colors[c])
        elif c == "model prediction":
            fig.path(
                f"M {x1 + 22} {y} L {x1 + 28} {y + 6} L {x1 + 22} {y + 12} L {x1 + 16} {y + 6} Z",
                "#111",
                1.5,
                marker=False,
            )
        else:
            fig.line(x1 + 14, y + 6, x1 + 30, y + 6, stroke="#555", width=1.2, dash="5,4")
        fig.text(x1 + 34, y + 10, c, size=11)
    return fig


def render_compare_html(cmp, *, digits: int | None = None) -> str:
    from .compare import format_compare, loss_sentence, speedup_text

    d = digits if digits is not None else cmp.decimals
    env = _environment(d)
    css = (TEMPLATES / "report.css").read_text()
    return env.get_template("compare.html.j2").render(
        c=cmp,
        d=d,
        fig=scaling_chart(cmp, d),
        css=css,
        version=__version__,
        lead=loss_sentence(cmp, d),
        pct=percent_of,
        speedup_text=speedup_text,
        text=format_compare(cmp, digits),
    )


def write_compare_html(cmp, path: str | Path, *, digits: int | None = None) -> Path:
    path = Path(path)
    write_file(path, render_compare_html(cmp, digits=digits), what="report")
    return path
