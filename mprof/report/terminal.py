"""Terminal rendering of a Report with rich tables (the default when stdout is a terminal)."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from .build import Report
from .text import decimals_for, raw_lines


def _s(value, d):
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.{d}f}" if abs(value) >= 10 ** -d or value == 0 else f"{value:.2g}"


def print_rich(report: Report, *, per_pe: bool = False, digits: int | None = None,
               console: Console | None = None) -> None:
    console = console or Console()
    d = digits if digits is not None else decimals_for(report)
    console.print(f"[bold]% {' '.join(report.argv) or report.program}[/bold]  "
                  f"({report.npes} PEs, run {report.source}"
                  + (f", model {report.model_path})" if report.model_path else ")"))
    if report.model_total is not None:
        pct = int(round(report.confidence * 100))
        t = Table(title="Cost Profile (summed over PEs)")
        for col, just in (("Id", "right"), ("module", "left"), ("category", "left"),
                          ("seconds", "right"), (f"± {pct} %", "right"), ("share", "right")):
            t.add_column(col, justify=just)
        for oc in report.objects:
            if not oc.modelled:
                continue
            for c in oc.categories:
                share = 100 * c.seconds / report.model_total if report.model_total else 0.0
                t.add_row(str(oc.id), oc.module, c.name, _s(c.seconds, d), _s(c.halfwidth, d),
                          f"{share:.1f}%")
        t.add_section()
        t.add_row("", "", "[bold]Model[/bold]", _s(report.model_total, d),
                  _s(report.band_halfwidth, d), "")
        t.add_row("", "", "[bold]Total[/bold] (measured)", _s(report.measured_total, d), "", "")
        console.print(t)
        if report.unmodelled:
            console.print("Unmodelled: " + ", ".join(report.unmodelled))
        verdict = report.verdict()
        console.print(f"[bold red]{verdict}[/bold red]" if report.explained is False else verdict)
        if per_pe:
            t = Table(title="Time per PE")
            for col in ("PE", "model", f"± {pct} %", "measured", "idle", "error"):
                t.add_column(col, justify="right")
            for pc in report.pes:
                err = pc.error_percent
                t.add_row(str(pc.pe), _s(pc.model_s, d), _s(pc.halfwidth, d),
                          _s(pc.measured_s, d), _s(pc.idle_s, d),
                          f"{err:+.1f}%" if err is not None else "")
            console.print(t)
    else:
        for line in raw_lines(report):
            console.print(line, highlight=False, markup=False)

    names = report.names
    groups = {None: report.latency}
    if per_pe:
        groups.update(report.latency_per_pe)
    t = Table(title="Latency per access category (seconds of idle time)")
    for col, just in (("PE", "right"), ("access", "left"), ("observed", "right"),
                      ("critical", "right"), ("count", "right"), ("by enabler (observed / critical)",
                                                                  "left")):
        t.add_column(col, justify=just)
    for pe, items in groups.items():
        for a in items:
            parts = ", ".join(f"{names.get(e.enabler, e.enabler)}: {_s(e.observed_s, d)} / "
                              f"{_s(e.critical_s, d)}" for e in a.breakdown("observed"))
            t.add_row("all" if pe is None else str(pe), names.get(a.access, a.access),
                      _s(a.observed_s, d), _s(a.critical_s, d), str(a.count), parts)
    if report.latency:
        console.print(t)
    else:
        console.print("(the run profile has no latency rows)")
    t = Table(title="Dependence chains")
    for col, just in (("metric", "left"), ("chain", "left"), ("latency", "right"),
                      ("stops at", "left")):
        t.add_column(col, justify=just)
    for metric, chains in report.chains.items():
        for c in chains:
            t.add_row(metric, c.name(names), _s(c.latency, d),
                      c.stop + (f" ({names.get(c.closes_at, c.closes_at)})" if c.closes_at
                                else ""))
    if any(report.chains.values()):
        console.print(t)
    for w in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")
