"""The power check of `mprof gate` (docs/gate.md, "Power"): from the noise of recorded runs,
the smallest change the gate can flag with the repetitions at hand, and the repetitions a
given change needs.

The noise is the standard deviation of the log times of a configuration's repetitions, pooled
over configurations: for `::time` units the runs' times, for `cat:` units each access
category's measured CPU time per run.  The detectable change is that of the (stratified)
Mann-Whitney comparison the gate makes (mprof.gate.stats.smallest_detectable), at the
significance level the correction leaves for the most significant of K tests (alpha / K with
Holm or Bonferroni; BH is no stricter for one true change), with 80 % power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .config import GateConfig
from .data import BUSY, Side, busy_time
from .stats import log_spread, repetitions_for, smallest_detectable

POWER = 0.8


@dataclass
class PowerLine:
    unit: str  # `::time` or `cat:ACCESS`
    configurations: int
    sigma: float  # noise: standard deviation of log values per run
    dof: int
    repetitions: int  # per configuration and build, as recorded (the smallest count)
    smallest: float  # the smallest relative change seen with `repetitions`
    needed: int | None  # repetitions for `change`; None: more than the most tried

    def to_json(self) -> dict:
        return {
            "unit": self.unit,
            "configurations": self.configurations,
            "noise": _finite(self.sigma),
            "dof": self.dof,
            "repetitions": self.repetitions,
            "smallest_change": _finite(self.smallest),
            "repetitions_needed": self.needed,
        }


@dataclass
class PowerCheck:
    change: float  # the change asked about (e.g. 0.10)
    tolerance: float
    alpha: float
    tests: int  # K, the tests the correction counts
    lines: list[PowerLine] = field(default_factory=list)

    @property
    def best(self) -> PowerLine | None:
        """The unit that sees the smallest change (the one a slowdown is caught by first)."""
        usable = [p for p in self.lines if math.isfinite(p.sigma)]
        return min(usable, key=lambda p: (p.smallest, p.needed or 10**9), default=None)

    @property
    def recommended(self) -> int | None:
        """Repetitions per configuration and build with which every category unit sees the
        change: where a slower operation shows, compared over all configurations at once.  The
        runtime's own rows, `(idle)`, `(scheduler)`, `(not sampled)`, count only where they
        are all there is, and `::time` (each configuration's total, one test per
        configuration) only where the runs have no category times."""
        lines = [p for p in self.lines if math.isfinite(p.sigma)]
        cats = [p for p in lines if p.unit.startswith("cat:")]
        own = [p for p in cats if not p.unit.startswith("cat:(") or p.unit == f"cat:{BUSY}"]
        needed = [p.needed for p in (own or cats or lines)]
        if not needed or any(n is None for n in needed):
            return None
        return max(needed)

    def sentence(self) -> str:
        if not self.lines or self.best is None:
            return "power check: no configuration has 2 or more baseline runs: the noise is unknown"
        best = self.best
        reps = min(p.repetitions for p in self.lines)
        text = (
            f"power check: with {reps} repetition(s) and this noise, the smallest change "
            f"this gate can see is {_pct(best.smallest)} ({best.unit}, noise "
            f"{100 * best.sigma:.2g} % per run)"
        )
        blind = [p.unit for p in self.lines if not math.isfinite(p.smallest)]
        if blind:
            text += f"; {', '.join(blind)} cannot flag any change with {reps} run(s) per side"
        rec = self.recommended
        if rec is None:
            text += (
                f"; a {100 * self.change:g} % change is out of reach of some units even "
                "with 200 repetitions"
            )
        elif rec > reps:
            text += f": use {rec} repetitions to see a {100 * self.change:g} % change"
        else:
            text += f": {reps} repetitions see a {100 * self.change:g} % change"
        return text + (
            f" (tolerance {100 * self.tolerance:g} %, alpha {self.alpha:g} over "
            f"{self.tests} test(s), power {POWER:.0%})"
        )

    def to_json(self) -> dict:
        return {
            "change": self.change,
            "tolerance": self.tolerance,
            "alpha": self.alpha,
            "tests": self.tests,
            "power": POWER,
            "recommended": self.recommended,
            "units": [p.to_json() for p in self.lines],
            "summary": self.sentence(),
        }


def _finite(x):
    return float(x) if x is not None and math.isfinite(x) else None


def _pct(x: float) -> str:
    return "none" if not math.isfinite(x) else f"{100 * x:.3g} %"


def check(
    side: Side,
    config: GateConfig | None = None,
    *,
    change: float | None = None,
    tests: int | None = None,
    repetitions: int | None = None,
    focus=(),
) -> PowerCheck:
    """The power check from one side's recorded runs (normally the baseline).  `change`: the
    change to see (default twice the tolerance); `tests`: how many tests the correction counts
    (default: the time units and category units the runs give, or those of the focus);
    `repetitions`: the repetitions to assess (default: those recorded)."""
    from .evaluate import MIN_CATEGORY_SAMPLES, Unit, in_focus, typical_category_samples

    config = config or GateConfig()
    tol, alpha = config.tolerance, config.alpha
    change = 2 * tol if change is None else change
    groups = [g for g in side.by_config().values()]
    # what the `::time` units compare: CPU time, or the run's wall time without it
    time_groups = [[r.profile.time(None, wall=True) for r in g] for g in groups]
    cat_groups: dict[str, list[list[float]]] = {}
    for g in groups:
        if all(r.categories is not None for r in g):
            for name in sorted({n for r in g for n in r.categories}):
                cat_groups.setdefault(name, []).append([r.categories.get(name, 0.0) for r in g])
        else:
            b = [busy_time(r.profile) for r in g]
            if None not in b:
                cat_groups.setdefault(BUSY, []).append(b)
    # categories the gate reports without comparing (too few samples) are not in its tests
    samples = typical_category_samples(side.runs)
    units = [("::time", time_groups)] + [
        (f"cat:{n}", v)
        for n, v in sorted(cat_groups.items())
        if samples.get(n, MIN_CATEGORY_SAMPLES) >= MIN_CATEGORY_SAMPLES
    ]
    if focus:

        def keep(uid):
            kind = "time" if uid == "::time" else "cat"
            u = Unit(uid, kind, None, "time" if kind == "time" else f"measured {uid[4:]}", 0, 0)
            return in_focus(u, focus)

        units = [(uid, v) for uid, v in units if keep(uid)] or units
    if tests is None:
        tests = sum(len(v) if uid == "::time" else 1 for uid, v in units)
    tests = max(1, tests)
    result = PowerCheck(change, tol, alpha, tests)
    level = alpha / tests
    for uid, values in units:
        sigma, dof = log_spread(values)
        counts = [len(v) for v in values if len(v) >= 2]
        if not counts:
            continue
        reps = repetitions or min(counts)
        strata = 1 if uid == "::time" else len(counts)
        if not math.isfinite(sigma):
            continue
        smallest = smallest_detectable(sigma, [(reps, reps)] * strata, tol, level, POWER)
        needed = repetitions_for(change, sigma, strata, tol, level, POWER)
        result.lines.append(PowerLine(uid, len(counts), sigma, dof, reps, smallest, needed))
    return result


def print_check(result: PowerCheck, console) -> None:
    from rich.table import Table

    table = Table(title="power check", caption=result.sentence(), caption_justify="left")
    for name in (
        "unit",
        "configurations",
        "noise per run",
        "repetitions",
        "smallest change seen",
        f"repetitions for {100 * result.change:g} %",
    ):
        table.add_column(name, justify="left" if name == "unit" else "right")
    for p in result.lines:
        table.add_row(
            p.unit,
            str(p.configurations),
            f"{100 * p.sigma:.2g} %",
            str(p.repetitions),
            _pct(p.smallest),
            str(p.needed) if p.needed is not None else "> 200",
        )
    console.print(table)
