"""Terminal rendering of a Report with rich tables (the default when stdout is a terminal).

One pass over the Report (mprof.report.build), in the order of the text report: where the time
went, the chain behind the waits, model quality, then the tables sorted by cost."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from ..numbers import percent, percent_of
from .build import Report
from .measured import NO_CATEGORIES
from .text import idle_lines, imbalance_sentence, message_lines, wait_sentence


def _s(value, d):
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.{d}f}" if abs(value) >= 10**-d or value == 0 else f"{value:.2g}"


_share = percent_of


def _bar(share: float, width: int = 20) -> str:
    if not math.isfinite(share) or share <= 0:
        return ""
    return "█" * max(1, round(min(share, 1.0) * width))


def print_rich(
    report: Report,
    *,
    per_pe: bool = False,
    digits: int | None = None,
    console: Console | None = None,
) -> None:
    console = console or Console()
    d = digits if digits is not None else report.decimals
    names = report.names
    modelled = report.model_total is not None
    pct = int(round(report.confidence * 100))
    console.print(
        f"[bold]% {' '.join(report.argv) or report.program}[/bold]  "
        f"({report.npes} PEs, run {report.source}"
        + (f", model {report.model_path})" if report.model_path else ")")
    )

    # 0. load imbalance, when the PEs were not busy alike
    if report.imbalance is not None:
        console.print(
            f"[bold red]Load imbalance:[/bold red] {imbalance_sentence(report, d)}", highlight=False
        )

    # 1. where the time went: measured first
    if report.has_categories:
        console.print(_measured_table(report, d))
        if modelled and not report.model_beside:
            console.print("(the model prices elapsed seconds: its estimates follow, not beside)")
    if not report.has_categories or (modelled and not report.model_beside):
        _model_where(console, report, d)
    if not report.has_categories:
        console.print(f"({NO_CATEGORIES})")
    for line in idle_lines(report, d)[1:]:
        console.print("Idle (wall-clock):" + line[1:], highlight=False)
    for line in message_lines(report)[1:]:
        console.print("Messages:" + line[1:], highlight=False)

    # 2. the chain behind the waits
    chain = report.lead_chain
    if chain is None and report.lead_access is not None:
        console.print("Why the PEs waited: " + wait_sentence(report, d), highlight=False)
    elif chain is None:
        console.print("No dependence chain: the run profile has no latency to explain.")
    else:
        last = names.get(chain.nodes[-1], chain.nodes[-1])
        share = chain.latency / report.lead_access_latency if report.lead_access_latency else 0
        console.print(
            f"Why the PEs waited: [bold]{last}[/bold] waited "
            f"{_s(report.lead_access_latency, d)} s; {_s(chain.latency, d)} s "
            f"({_share(share)}) along [bold]{chain.name(names)}[/bold]",
            highlight=False,
        )
    _rest(console, report, d, per_pe, pct)


def _measured_table(report: Report, d: int) -> Table:
    t = Table(
        title="Where the time went (measured, CPU seconds summed over PEs"
        + ("; the model's estimate beside)" if report.model_beside else ")")
    )
    cols = [("category", "left"), ("measured s", "right"), ("share", "right"), ("", "left")]
    if report.model_beside:
        cols += [("model s", "right"), ("± 90 %", "right"), ("model categories", "left")]
    for col, just in cols:
        t.add_column(col, justify=just)
    for r in report.measured_rows:
        label = f"[bold]{r.label}[/bold]" if r.kind != "category" else r.label
        row = [
            label,
            _s(r.cpu_s, d) if r.cpu_s is not None else "-",
            _share(r.share) if r.cpu_s is not None else "",
            _bar(r.share),
        ]
        if report.model_beside:
            row += (
                [_s(r.model_s, d), _s(r.model_halfwidth, d), ", ".join(r.model_categories)]
                if r.model_s is not None
                else ["", "", ""]
            )
        t.add_row(*row)
    t.add_section()
    row = ["[bold]total[/bold]", _s(report.measured_cpu_total, d), _share(1.0), ""]
    if report.model_beside:
        row += [_s(report.model_total, d), _s(report.band_halfwidth, d), "(model)"]
    t.add_row(*row)
    return t


def _model_where(console, report: Report, d: int) -> None:
    modelled = report.model_total is not None
    t = Table(
        title=f"Where the time went ({'model' if modelled else 'measured'}, {report.seconds_unit})"
    )
    for col, just in (("category", "left"), ("seconds", "right"), ("share", "right"), ("", "left")):
        t.add_column(col, justify=just)
    for r in report.where:
        t.add_row(r.name, _s(r.seconds, d), _share(r.share), _bar(r.share))
    t.add_section()
    t.add_row(
        "[bold]total[/bold]" + (" (model)" if modelled else ""), _s(report.where_total, d), "", ""
    )
    if modelled:
        t.add_row("measured", _s(report.measured_total, d), "", "")
    console.print(t)


def _rest(console, report: Report, d: int, per_pe: bool, pct: int) -> None:
    names = report.names
    modelled = report.model_total is not None
    # 3. model quality
    if modelled:
        verdict = report.verdict()
        console.print(
            f"[bold red]{verdict}[/bold red]"
            if report.explained is False
            else f"Model quality: {verdict}",
            highlight=False,
        )
        if report.what_if is not None:
            _what_if_table(console, report, d, pct)

        t = Table(title=f"Cost Profile by cost ({report.seconds_unit})")
        for col, just in (
            ("Id", "right"),
            ("module", "left"),
            ("category", "left"),
            ("seconds", "right"),
            (f"± {pct} %", "right"),
            ("share", "right"),
        ):
            t.add_column(col, justify=just)
        for r in report.cost_rows:
            t.add_row(
                str(r.id),
                r.module,
                r.category,
                _s(r.seconds, d),
                _s(r.halfwidth, d),
                _share(r.share),
            )
        t.add_section()
        t.add_row(
            "",
            "",
            "[bold]Model[/bold]",
            _s(report.model_total, d),
            _s(report.band_halfwidth, d),
            "",
        )
        t.add_row("", "", "[bold]Total[/bold] (measured)", _s(report.measured_total, d), "", "")
        console.print(t)
        if report.unmodelled:
            console.print("Unmodelled: " + ", ".join(report.unmodelled))
        if per_pe:
            unit = "CPU seconds" if report.measure == "cpu" else "wall-clock seconds"
            t = Table(title=f"Time per PE ({unit})")
            for col in ("PE", "model", f"± {pct} %", "measured", "idle", "error"):
                t.add_column(col, justify="right")
            for pc in report.pes:
                err = pc.error_percent
                t.add_row(
                    str(pc.pe),
                    _s(pc.model_s, d),
                    _s(pc.halfwidth, d),
                    _s(pc.measured_s, d),
                    _s(pc.measured_idle_s, d) if pc.measured_idle_s is not None else "n/a",
                    percent(err, "+.1f", "%") if err is not None else "",
                )
            console.print(t)
    else:
        t = Table(title="Statistics (summed over PEs)")
        for col, just in (("Id", "right"), ("module", "left"), ("statistics", "left")):
            t.add_column(col, justify=just)
        for oc in report.objects:
            t.add_row(
                str(oc.id),
                oc.module,
                " ".join(
                    f"{k}={int(v) if float(v).is_integer() else f'{v:.6g}'}"
                    for k, v in oc.stats.items()
                )
                or "(no statistics)",
            )
        console.print(t)

    if per_pe:
        _per_pe_tables(console, report, d)
    groups = {None: report.latency_by_cost}
    if per_pe:
        groups.update(report.latency_per_pe)
    t = Table(title="Latency per access category, by observed latency (seconds of idle time)")
    for col, just in (
        ("PE", "right"),
        ("access", "left"),
        ("observed s", "right"),
        ("critical s", "right"),
        ("count", "right"),
        ("by enabler (observed / critical s)", "left"),
    ):
        t.add_column(col, justify=just)
    for pe, items in groups.items():
        for a in items:
            parts = ", ".join(
                f"{names.get(e.enabler, e.enabler)}: {_s(e.observed_s, d)} / {_s(e.critical_s, d)}"
                for e in a.breakdown("observed")
            )
            t.add_row(
                "all" if pe is None else str(pe),
                names.get(a.access, a.access),
                _s(a.observed_s, d),
                _s(a.critical_s, d),
                str(a.count),
                parts,
            )
    if report.latency:
        console.print(t)
    else:
        console.print("(the run profile has no latency rows)")
    t = Table(title="Dependence chains")
    for col, just in (
        ("metric", "left"),
        ("chain", "left"),
        ("latency s", "right"),
        ("stops at", "left"),
    ):
        t.add_column(col, justify=just)
    for metric, chains in report.chains.items():
        for c in chains:
            t.add_row(
                metric,
                c.name(names),
                _s(c.latency, d),
                c.stop + (f" ({names.get(c.closes_at, c.closes_at)})" if c.closes_at else ""),
            )
    if any(report.chains.values()):
        console.print(t)
    for w in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")


def _per_pe_tables(console, report: Report, d: int) -> None:
    t = Table(title="Per PE (wall-clock seconds)")
    for col in ("PE", "elapsed", "busy", "idle"):
        t.add_column(col, justify="right")
    for p in report.pe_measured:
        t.add_row(str(p.pe), _s(p.elapsed_s, d), _s(p.busy_s, d), _s(p.idle_s, d))
    console.print(t)
    cats = list(dict.fromkeys(r.label for r in report.measured_rows if r.kind == "category"))
    t = Table(title="Per PE (CPU seconds by category)")
    for col in ("PE", "cpu", "idle loop", *cats):
        t.add_column(col, justify="right")
    for p in report.pe_measured:
        t.add_row(
            str(p.pe),
            _s(p.cpu_s, d),
            _s(p.idle_cpu_s, d),
            *[_s((p.categories or {}).get(c, 0.0), d) for c in cats],
        )
    console.print(t)
    if not report.has_categories:
        console.print(f"({NO_CATEGORIES})")
    t = Table(title="Per PE (statistics, summed over the PE's objects)")
    names = list(dict.fromkeys(n for p in report.pe_measured for n in p.stats))
    t.add_column("statistic", justify="left")
    for p in report.pe_measured:
        t.add_column(f"PE{p.pe}", justify="right")
    for n in names:
        t.add_row(n, *[_stat(p.stats.get(n)) for p in report.pe_measured])
    console.print(t)


def _stat(v) -> str:
    if v is None:
        return ""
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def _what_if_table(console, report: Report, d: int, pct: int) -> None:
    w = report.what_if
    t = Table(title=f"What if {w.title} (model, {w.unit})")
    for col, just in (
        ("category", "left"),
        ("now", "right"),
        ("what if", "right"),
        ("change", "right"),
        (f"± {pct} %", "right"),
        ("relative", "right"),
    ):
        t.add_column(col, justify=just)
    for c in w.categories:
        t.add_row(
            c.name,
            _s(c.now_s, d),
            _s(c.new_s, d),
            f"{c.change_s:+.{d}f}",
            _s(c.halfwidth, d),
            percent_of(c.relative, "+.1f"),
        )
    t.add_section()
    rel = w.change_s / w.now_s if w.now_s else math.nan
    t.add_row(
        "[bold]total (model)[/bold]",
        _s(w.now_s, d),
        _s(w.new_s, d),
        f"{w.change_s:+.{d}f}",
        _s(w.change_halfwidth, d),
        percent_of(rel, "+.1f"),
    )
    console.print(t)
    console.print(
        f"Predicted time {_s(w.new_s, d)} s ± {_s(w.new_halfwidth, d)} ({pct} % "
        f"prediction band); measured now {_s(w.measured_s, d)} s",
        highlight=False,
    )
