"""Runs of one program at several PE counts, side by side: `mprof report RUN_2.json RUN_4.json
... [--model MODEL.json]`.

For every run: its wall-clock time, speed-up and parallel efficiency relative to the run with
the fewest PEs (`E(P) = P0 T(P0) / (P T(P))`), and its time per category summed over PEs
(measured CPU time per access category, plus the wall-clock time the PEs were not on a CPU, so
that a run's rows add up to its PE-seconds; per PE: divided by P).  The PE-seconds a run spends
beyond the smallest run's are the efficiency lost; each category's growth is its part of that
loss, and the category that grew most is named.  With a model, the model's prediction of each
run (in the model's measure) beside the measured time.

Runs without measured categories fall back to busy and idle CPU time (or wall-clock time for
runs without CPU times), and the comparison says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import MprofError
from ..numbers import bounded, percent, percent_of
from ..profile import IDLE, RunProfile
from .build import Report, build_report, decimals_for
from .measured import NO_CATEGORIES

NOT_ON_CPU = "(not on a CPU)"
BUSY, IDLE_WALL = "(busy)", "(idle, wall clock)"


@dataclass
class ScaledRun:
    source: str
    npes: int
    elapsed_s: float  # the run's wall-clock time (its slowest PE)
    pe_seconds: float  # the PEs' wall-clock times summed
    categories: dict[str, float]  # seconds summed over PEs, adding up to pe_seconds
    has_categories: bool
    report: Report  # the run's own report (model pricing, measure)

    @property
    def model_s(self) -> float | None:
        return self.report.model_total

    @property
    def measured_s(self) -> float:
        """The run's time by the model's measure (summed over PEs), as the model predicts it."""
        return self.report.measured_total


@dataclass
class Comparison:
    program: str
    runs: list[ScaledRun]
    rows: list[str]  # categories, by growth of their total from the first run to the last
    measure: str  # of the model's figures (cpu or elapsed)
    model_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    decimals: int = 3

    @property
    def base(self) -> ScaledRun:
        return self.runs[0]

    def speedup(self, run: ScaledRun) -> float:
        """NaN (shown n/a) where either run took no time: no ratio means anything then."""
        ok = run.elapsed_s > 0 and self.base.elapsed_s > 0
        return self.base.elapsed_s / run.elapsed_s if ok else math.nan

    def efficiency(self, run: ScaledRun) -> float:
        ideal = self.base.npes * self.base.elapsed_s
        actual = run.npes * run.elapsed_s
        return ideal / actual if actual > 0 and ideal > 0 else math.nan

    def lost(self, run: ScaledRun) -> float:
        """PE-seconds beyond the smallest run's."""
        return run.pe_seconds - self.base.pe_seconds

    def total(self, run: ScaledRun, row: str) -> float:
        return run.categories.get(row, 0.0)

    def growth(self, row: str, run: ScaledRun | None = None) -> float:
        run = run or self.runs[-1]
        return self.total(run, row) - self.total(self.base, row)

    def loss_by_category(self, run: ScaledRun | None = None) -> list[tuple[str, float, float]]:
        """(category, growth s, share of the lost PE-seconds) of the categories that grew,
        largest first."""
        run = run or self.runs[-1]
        lost = self.lost(run)
        out = [(r, self.growth(r, run)) for r in self.rows]
        out = [(r, g, g / lost if lost > 0 else math.nan) for r, g in out if g > 0]
        return sorted(out, key=lambda t: (-t[1], t[0]))


def scaled_run(doc, source: str, model=None) -> ScaledRun:
    run = RunProfile.from_document(doc, source)
    report = build_report(run, model, source=source)
    pe_seconds = run.time("elapsed")
    elapsed = max([pe.elapsed_s for pe in run.pes] + [0.0])
    if run.has_categories:
        cats = run.category_totals()
        cats[NOT_ON_CPU] = max(pe_seconds - sum(cats.values()), 0.0)
    elif all(pe.cpu_s is not None for pe in run.pes):
        cpu = sum(pe.cpu_s for pe in run.pes)
        idle = sum(pe.idle_cpu_s or 0.0 for pe in run.pes)
        cats = {BUSY: cpu - idle, IDLE: idle, NOT_ON_CPU: max(pe_seconds - cpu, 0.0)}
    else:
        idle = sum(pe.idle_s for pe in run.pes)
        cats = {BUSY: pe_seconds - idle, IDLE_WALL: idle}
    return ScaledRun(source, run.npes, elapsed, pe_seconds, cats, run.has_categories, report)


def compare(docs: list[tuple[str, dict]], model=None, model_path: str | None = None) -> Comparison:
    """The comparison of the runs (source, validated document), ordered by PE count."""
    programs = sorted({str(doc.get("program", "")) for _, doc in docs})
    if len(programs) > 1:
        raise MprofError(
            "report: the runs are of different programs ("
            + ", ".join(programs)
            + "); a comparison across PE counts needs runs of one program"
        )
    runs = sorted(
        (scaled_run(doc, source, model) for source, doc in docs), key=lambda r: (r.npes, r.source)
    )
    warnings = []
    params = [(source, doc.get("params", {})) for source, doc in docs]
    differ = sorted(
        {k for _, p in params for k in p if len({repr(q.get(k)) for _, q in params}) > 1}
    )
    if differ:
        warnings.append(
            "the runs' parameters differ (" + ", ".join(differ) + "): the "
            "comparison assumes the same problem at every PE count"
        )
    without = [r.source for r in runs if not r.has_categories]
    if without:
        warnings.append(
            f"{NO_CATEGORIES}: " + ", ".join(without) + " (compared by busy and idle time)"
        )
    if without:  # runs with and without categories meet at busy and idle time
        runs = [_busy_idle(r) for r in runs]
    names = dict.fromkeys(k for r in runs for k in r.categories)
    cmp = Comparison(
        program=programs[0],
        runs=runs,
        rows=list(names),
        measure=runs[0].report.measure,
        model_path=model_path,
        warnings=warnings,
    )
    cmp.rows.sort(key=lambda r: (-cmp.growth(r), -cmp.total(runs[-1], r), r))
    largest = max([r.pe_seconds for r in runs] + [r.model_s or 0.0 for r in runs])
    cmp.decimals = (
        3 if largest >= 1 or largest <= 0 else min(9, 3 + math.ceil(-math.log10(largest)))
    )
    for r in runs:
        r.report.decimals = decimals_for(r.report)
    return cmp


def _busy_idle(run: ScaledRun) -> ScaledRun:
    cats = run.categories
    if BUSY in cats:
        return run
    not_on_cpu = cats.get(NOT_ON_CPU, 0.0)
    idle = cats.get(IDLE, 0.0)
    busy = run.pe_seconds - not_on_cpu - idle
    return ScaledRun(
        run.source,
        run.npes,
        run.elapsed_s,
        run.pe_seconds,
        {BUSY: busy, IDLE: idle, NOT_ON_CPU: not_on_cpu},
        False,
        run.report,
    )


# -- renderings -----------------------------------------------------------------------------


def speedup_text(v: float) -> str:
    return bounded(v)


def format_compare(cmp: Comparison, digits: int | None = None) -> str:
    d = digits if digits is not None else cmp.decimals
    runs = cmp.runs
    pes = ", ".join(str(r.npes) for r in runs)
    out = [f"% {cmp.program}: {len(runs)} runs at P = {pes}", ""]
    out.append(loss_sentence(cmp, d))
    out.append("*** Scaling (wall-clock seconds) ***")
    w = d + 6
    out.append(
        f"  {'P':>4} {'elapsed':>{w}} {'speed-up':>9} {'efficiency':>11} "
        f"{'PE-seconds':>{w + 2}} {'lost':>{w}}  run"
    )
    for r in runs:
        out.append(
            f"  {r.npes:>4} {r.elapsed_s:>{w}.{d}f} {speedup_text(cmp.speedup(r)):>9} "
            f"{percent_of(cmp.efficiency(r)):>11} {r.pe_seconds:>{w + 2}.{d}f} "
            f"{cmp.lost(r):>+{w}.{d}f}  {r.source}"
        )
    out.append(
        "*** Time per category across P (seconds summed over PEs: CPU time per category, "
        "and the wall-clock time not on a CPU; per PE in brackets) ***"
    )
    width = max([len(r) for r in cmp.rows] + [len("category"), len("total")])
    cell = 2 * w + 4
    out.append(
        f"  {'category':<{width}} "
        + " ".join(f"{'P=' + str(r.npes):>{cell}}" for r in runs)
        + f" {'growth':>{w + 2}} {'ratio':>6}"
    )
    for row in cmp.rows + ["total"]:
        vals = [r.pe_seconds if row == "total" else cmp.total(r, row) for r in runs]
        cells = " ".join(f"{f'{v:.{d}f} ({v / r.npes:.{d}f})':>{cell}}" for v, r in zip(vals, runs))
        growth = vals[-1] - vals[0]
        ratio = bounded(vals[-1] / vals[0]) if vals[0] > 0 else "-"
        out.append(f"  {row:<{width}} {cells} {growth:>+{w + 2}.{d}f} {ratio:>6}")
    if any(r.model_s is not None for r in runs):
        unit = "CPU seconds" if cmp.measure == "cpu" else "seconds"
        out.append(f"*** Model across P ({unit} summed over PEs) ***")
        out.append(
            f"  {'P':>4} {'measured':>{w}} {'model':>{w}} {'+- 90 %':>{w}} {'error':>8}  verdict"
        )
        for r in runs:
            rep = r.report
            err = (
                100 * (rep.model_total - rep.measured_total) / rep.measured_total
                if rep.measured_total > 0
                else math.nan
            )
            inside = (
                "inside the band"
                if rep.explained
                else "outside the band"
                if rep.explained is False
                else "band unknown"
            )
            hw = (
                rep.band_halfwidth
                if rep.band_halfwidth is not None and math.isfinite(rep.band_halfwidth)
                else math.nan
            )
            err_text = percent(err, "+.1f", "%")
            hw_text = f"{hw:.{d}f}" if math.isfinite(hw) else "n/a"
            out.append(
                f"  {r.npes:>4} {rep.measured_total:>{w}.{d}f} "
                f"{rep.model_total:>{w}.{d}f} {hw_text:>{w}} {err_text:>8}  {inside}"
            )
    for warning in cmp.warnings:
        out.append(f"warning: {warning}")
    return "\n".join(out) + "\n"


def loss_sentence(cmp: Comparison, d: int) -> str:
    first, last = cmp.base, cmp.runs[-1]
    if len(cmp.runs) < 2 or first.npes == last.npes:
        return "(one PE count: nothing to compare across P)"
    lost = cmp.lost(last)
    head = (
        f"From P={first.npes} to P={last.npes}: efficiency {percent_of(cmp.efficiency(last))}, "
        f"speed-up {speedup_text(cmp.speedup(last))}"
    )
    if lost <= 0:
        return head + f"; the PEs spent no more PE-seconds than at P={first.npes}."
    head += f"; the PEs spent {lost:.{d}f} s more than at P={first.npes} (summed over PEs)"
    grew = cmp.loss_by_category(last)
    if not grew:
        return head + "."
    parts = [f"{name} grew {g:+.{d}f} s ({percent_of(share)} of it)" for name, g, share in grew[:3]]
    return head + ": " + ", then ".join(parts) + "."


def compare_json(cmp: Comparison) -> dict:
    return {
        "schema": "mprof.report-compare",
        "version": 1,
        "program": cmp.program,
        "model": cmp.model_path,
        "measure": cmp.measure,
        "unit": "seconds summed over PEs (CPU time per category; not on a CPU: wall clock)",
        "runs": [
            {
                "run": r.source,
                "npes": r.npes,
                "elapsed_s": r.elapsed_s,
                "pe_seconds": r.pe_seconds,
                "speedup": _finite(cmp.speedup(r)),
                "efficiency": _finite(cmp.efficiency(r)),
                "lost_pe_seconds": cmp.lost(r),
                "categories_measured": r.has_categories,
                "categories": r.categories,
                "per_pe": {k: v / r.npes for k, v in r.categories.items()},
                "model_s": r.model_s,
                "measured_s": r.measured_s if r.model_s is not None else None,
                "model_band_halfwidth_s": _finite(r.report.band_halfwidth)
                if r.model_s is not None
                else None,
                "explained": r.report.explained,
            }
            for r in cmp.runs
        ],
        "categories": [
            {
                "category": row,
                "totals_s": [cmp.total(r, row) for r in cmp.runs],
                "per_pe_s": [cmp.total(r, row) / r.npes for r in cmp.runs],
                "growth_s": cmp.growth(row),
            }
            for row in cmp.rows
        ],
        "loss": [
            {"category": n, "growth_s": g, "share": _finite(s)}
            for n, g, s in cmp.loss_by_category()
        ],
        "lead": loss_sentence(cmp, cmp.decimals),
        "warnings": cmp.warnings,
    }


def _finite(v):
    return v if v is not None and math.isfinite(v) else None
