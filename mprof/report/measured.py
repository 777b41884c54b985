"""What a report shows from measured times: where the CPU time went by access category (the
run profile's per-PE `categories`), the model's estimate beside each, wall-clock idle beside
CPU idle, per-PE figures and the load-imbalance finding.

Everything here is computed once into the Report (mprof.report.build), so that the text,
terminal, JSON and HTML outputs cannot disagree.

Measured rows and the model beside them.  The measured rows are access categories (CPU seconds
summed over PEs), grouped by what a model prices them with:

    module:NAME      the module's cost categories (`pipe:consume` beside `pipe:COMP`); a
                     module with several measured categories gets a subtotal row carrying
                     the estimate, one with a single category carries it on that row
    (idle)           the runtime's IDLE category
    (scheduler)      the runtime's other categories (thread steps, communication): runtime
                     work, which the scheduler runs between fibers (some of it runs inside
                     fibers and is sampled there)
    unclassified     fibers without a category: nothing prices them
    (not sampled)    the CPU time of PEs that took no sample (less than a sampling period)

A cost category of a module without measured rows is listed on its own, without a measured
figure.  The last row, "not explained by any model term", is the measured total minus the
model total: the time no term of the model accounts for (negative when the model predicts
more than was measured).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..profile import IDLE, NOT_SAMPLED, SCHEDULER, RunProfile

NO_CATEGORIES = "no measured category times in this profile"
IMBALANCE_THRESHOLD = 0.30  # busiest PE's busy time over the mean, as a fraction of the mean
UNEXPLAINED = "not explained by any model term"

# Statistics that record waiting rather than work: never "the statistic that differs most".
_WAIT_STATS = {
    ("rts", "IdleNs"),
    ("rts", "IdleCpuNs"),
    ("rts", "IdleCycle"),
    ("rts", "P"),
    ("rts", "Wakes"),
    ("rts", "FlowWait"),
}


@dataclass
class MeasuredRow:
    """A row of "Where the time went" (measured CPU seconds summed over PEs).

    kind: `category` (an access category, `(scheduler)`, `(idle)`), `subtotal` (a module's
    categories together, carrying the model's estimate), `model` (cost categories of a
    module nothing was measured in), `unexplained` (measured minus model)."""

    label: str
    kind: str
    group: str
    cpu_s: float | None
    share: float  # of the measured total (nan when cpu_s is None)
    samples: int = 0
    model_s: float | None = None  # the model's estimate for this row (None: none here)
    model_halfwidth: float = math.nan
    model_categories: list[str] = field(default_factory=list)  # what the estimate prices


@dataclass
class PEMeasured:
    """One PE's measured figures (seconds)."""

    pe: int
    elapsed_s: float
    idle_s: float  # wall-clock idle
    cpu_s: float | None
    idle_cpu_s: float | None
    categories: dict[str, float] | None  # measured CPU seconds per access category
    stats: dict[str, float]  # "module:Stat" -> value summed over the PE's objects

    @property
    def busy_s(self) -> float:
        """Wall-clock time the PE was not idle."""
        return max(self.elapsed_s - self.idle_s, 0.0)

    @property
    def busy_cpu_s(self) -> float | None:
        """CPU time outside the idle loop (None: CPU time not measured)."""
        if self.cpu_s is None:
            return None
        return max(self.cpu_s - (self.idle_cpu_s or 0.0), 0.0)


@dataclass
class Imbalance:
    """The load-imbalance finding: the busiest PE's busy time exceeds the mean by 30 % or
    more.  Busy time is CPU time outside the idle loop where the run measured CPU time (time
    a PE was preempted on a busy machine does not count), else wall-clock time minus idle."""

    busiest: list[int]  # PEs whose busy time exceeds the mean by the threshold, busiest first
    busiest_s: float
    mean_s: float
    idlest: list[int]  # the least busy PEs (busy time under half the mean), least busy first
    caused_s: float  # sum over PEs of (busiest busy time - their busy time)
    idle_s: float  # the PEs' wall-clock idle time
    statistic: str | None  # "module:Stat" whose per-PE values differ most
    stat_values: list[float] = field(default_factory=list)  # per PE
    measure: str = "cpu"  # of the busy times: "cpu" or "wall"

    @property
    def excess(self) -> float:
        return self.busiest_s / self.mean_s - 1 if self.mean_s > 0 else math.inf

    @property
    def idle_share(self) -> float:
        """The share of the PEs' wall-clock idle time that waiting for the busiest PE can
        account for: caused_s over idle_s, at most 1 (caused_s is busy time, not idle time: a
        gap larger than the idle time was partly spent off a CPU)."""
        return min(self.caused_s / self.idle_s, 1.0) if self.idle_s > 0 else math.nan


def pe_measured(run: RunProfile) -> list[PEMeasured]:
    out = []
    for pe in run.pes:
        stats: dict[str, float] = {}
        for obj in pe.objects:
            for name, value in obj.stats.items():
                key = f"{obj.module}:{name}"
                stats[key] = stats.get(key, 0) + value
        cats = None if pe.categories is None else {c.access: c.cpu_s for c in pe.categories}
        out.append(PEMeasured(pe.pe, pe.elapsed_s, pe.idle_s, pe.cpu_s, pe.idle_cpu_s, cats, stats))
    return out


def _group(access: str) -> str:
    if access in (IDLE, SCHEDULER, NOT_SAMPLED, "unclassified"):
        return access
    return access.split(":", 1)[0] if ":" in access else access


def _model_group(module: str, category: str) -> str:
    if module == "rts":
        return IDLE if category == "IDLE" else SCHEDULER
    return module


def measured_rows(run: RunProfile, model_rows=None) -> tuple[list[MeasuredRow], float]:
    """The rows of "Where the time went" and their total (measured CPU seconds summed over
    PEs).  `model_rows`: the model's (module, category, seconds, halfwidth) by module, to set
    beside the measured rows (in CPU seconds: a model of the `cpu` measure)."""
    totals = run.category_totals()
    samples: dict[str, int] = {}
    for pe in run.pes:
        for c in pe.categories or []:
            samples[c.access] = samples.get(c.access, 0) + c.samples
    total = sum(totals.values())

    def share(v):
        return v / total if total > 0 else math.nan

    groups: dict[str, list[str]] = {}
    for access in sorted(totals, key=lambda a: (-totals[a], a)):
        groups.setdefault(_group(access), []).append(access)
    estimates: dict[str, list] = {}
    for module, category, seconds, halfwidth in model_rows or []:
        estimates.setdefault(_model_group(module, category), []).append(
            (f"{module}:{category}", seconds, halfwidth)
        )
    order = sorted(
        set(groups) | set(estimates),
        key=lambda g: (
            -sum(totals[a] for a in groups.get(g, [])),
            -sum(e[1] for e in estimates.get(g, [])),
            g,
        ),
    )
    rows: list[MeasuredRow] = []
    for g in order:
        members = groups.get(g, [])
        est = estimates.get(g)
        model = {}
        if est:
            model = dict(
                model_s=sum(e[1] for e in est),
                model_halfwidth=math.sqrt(sum(e[2] ** 2 for e in est))
                if all(math.isfinite(e[2]) for e in est)
                else math.nan,
                model_categories=[e[0] for e in est],
            )
        for a in members:
            rows.append(
                MeasuredRow(
                    a,
                    "category",
                    g,
                    totals[a],
                    share(totals[a]),
                    samples.get(a, 0),
                    **(model if len(members) == 1 else {}),
                )
            )
        if est and len(members) > 1:
            sub = sum(totals[a] for a in members)
            rows.append(MeasuredRow(f"{g} (all)", "subtotal", g, sub, share(sub), **model))
        elif est and not members:
            rows.append(MeasuredRow(f"{g} (nothing measured)", "model", g, None, math.nan, **model))
    return rows, total


def add_unexplained(rows: list[MeasuredRow], total: float, model_total: float) -> MeasuredRow:
    diff = total - model_total
    row = MeasuredRow(UNEXPLAINED, "unexplained", "", diff, diff / total if total > 0 else math.nan)
    rows.append(row)
    return row


def idle_by_enabler(run: RunProfile) -> list[tuple[str, float]]:
    """Wall-clock idle by the category that ended the wait: the latency rows' critical
    latency summed by enabler (each idle period is charged once), largest first."""
    out: dict[str, float] = {}
    for row in run.latency:
        out[row.enabler] = out.get(row.enabler, 0.0) + row.critical_s
    return sorted(((k, v) for k, v in out.items() if v > 0), key=lambda kv: (-kv[1], kv[0]))


def find_imbalance(
    pes: list[PEMeasured], threshold: float = IMBALANCE_THRESHOLD
) -> Imbalance | None:
    """The load-imbalance finding, or None when the busiest PE is within `threshold` of the
    mean (or the run has one PE)."""
    if len(pes) < 2:
        return None
    cpu = all(p.busy_cpu_s is not None for p in pes)
    busy = [p.busy_cpu_s if cpu else p.busy_s for p in pes]
    mean = sum(busy) / len(busy)
    top = max(busy)
    if mean <= 0 or top < (1 + threshold) * mean:
        return None
    index = {p.pe: i for i, p in enumerate(pes)}
    busiest = sorted(
        (p.pe for p, b in zip(pes, busy) if b >= (1 + threshold) * mean),
        key=lambda n: (-busy[index[n]], n),
    )
    idlest = sorted(
        (p.pe for p, b in zip(pes, busy) if b < 0.5 * mean), key=lambda n: (busy[index[n]], n)
    )
    caused = sum(top - b for b in busy)
    stat, values = differs_most(pes)
    return Imbalance(
        busiest,
        top,
        mean,
        idlest,
        caused,
        sum(p.idle_s for p in pes),
        stat,
        values,
        "cpu" if cpu else "wall",
    )


def differs_most(pes: list[PEMeasured]) -> tuple[str | None, list[float]]:
    """The statistic whose per-PE values differ most: the largest (max - min) / mean over the
    statistics every PE records, leaving out those that count waiting (idle time, idle
    cycles, wake-ups); ties go to the program's own modules before the runtime's."""
    names = set(pes[0].stats)
    for p in pes[1:]:
        names &= set(p.stats)
    best, best_key = None, None
    for name in sorted(names):
        module, _, stat = name.partition(":")
        if (module, stat) in _WAIT_STATS:
            continue
        values = [float(p.stats[name]) for p in pes]
        mean = sum(values) / len(values)
        if mean <= 0:
            continue
        spread = (max(values) - min(values)) / mean
        if spread <= 0:
            continue
        key = (round(spread, 9), module != "rts")
        if best_key is None or key > best_key:
            best, best_key = name, key
    if best is None:
        return None, []
    return best, [float(p.stats[best]) for p in pes]
