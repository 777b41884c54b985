"""Building the units of a gate comparison and deciding their verdicts (docs/gate.md).

Units (ids are matched by the config's globs):

    CONFIG::time                     time per run: CPU (default) or elapsed (Mann-Whitney U /
                                     Hodges-Lehmann)
    cat:ACCESS                       measured CPU time of an access category per run (the
                                     profile's sampled `categories`), over every configuration
                                     compared (stratified Mann-Whitney); `cat:(busy)`, CPU time
                                     outside the idle loop, for runs without category times
    CONFIG::stat:MODULE.STAT         a statistic that is deterministic for the configuration:
                                     compared exactly (BEHAVIOUR CHANGE when it differs)
    CONFIG::cost:MODULE.CATEGORY     per-run category cost from --model (the model's unit costs
                                     times each run's counts): informational, never gating (it
                                     measures no time: the unit costs are the same on both sides)
    CONFIG::fit:MODULE.CATEGORY      the category's fitted parameters priced at the baseline's
                                     term values with each side's own fitted coefficients
                                     (--fit), compared with their errors; fixed and imported
                                     parameters are not compared (they were not measured)
    fit::MODULE.CATEGORY:TERM        a fitted coefficient (--fit), compared with its error

CONFIG is `program(npes=..,param=..,...)`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import MprofError
from ..profile import fallback_measure
from .config import GateConfig
from .data import (
    BUSY,
    RunData,
    Side,
    StatProperties,
    busy_time,
    config_labels,
    statistic_properties,
)
from .stats import Comparison, adjust, compare_estimates, compare_samples, compare_strata, untested

REGRESSION = "REGRESSION"
BEHAVIOUR = "BEHAVIOUR CHANGE"
INCONCLUSIVE = "INCONCLUSIVE"
ALLOWED = "ALLOWED"
INFO = "INFO"
PASS = "PASS"
# a `cat:` unit is compared (gates) only when its measured time rests on this many samples per
# run (median): below it, a sample period's error per change of category is a large change
MIN_CATEGORY_SAMPLES = 10
ORDER = [REGRESSION, BEHAVIOUR, INCONCLUSIVE, ALLOWED, INFO, PASS]

EXIT_PASS, EXIT_REGRESSION, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class CrossMachineError(MprofError):
    pass


@dataclass
class Unit:
    id: str
    kind: str  # time | cat | stat | cost | fit | coef
    config: str | None  # configuration label (None for fit coefficients)
    name: str  # what is compared within the configuration
    tolerance: float
    alpha: float
    comparison: Comparison | None = None
    p_adjusted: float | None = None
    verdict: str = INCONCLUSIVE
    note: str = ""
    category: str | None = None  # MODULE.CATEGORY where it applies
    config_key: str | None = None  # the configuration's identity (data.RunData.config_key)
    baseline_text: str = ""  # exact values for stat units
    candidate_text: str = ""
    # units with equal keys test one hypothesis and count once in the multiple-testing
    # correction (see _hypothesis); None: a hypothesis of its own
    hypothesis: tuple | None = None
    # decided with the family the user asked about (--focus); False: reported, not gating
    in_focus: bool = True
    informational: bool = False  # never a verdict that gates (e.g. model costs of counts)
    # why it is informational, said beside the verdict it would have (default: model costs)
    why_informational: str = "the model's unit costs times the run's counts, not a measured time"

    @property
    def module(self) -> str | None:
        """The module (data structure) the unit is about, if any."""
        if self.kind == "cat":
            access = self.name.split(" ", 1)[-1]
            return access.split(":", 1)[0] if ":" in access else None
        if self.kind == "stat":
            return self.name.split(" ", 1)[-1].split(".", 1)[0]
        if self.category:
            return self.category.split(".", 1)[0]
        return None

    def to_json(self) -> dict:
        c = self.comparison
        out = {
            "id": self.id,
            "kind": self.kind,
            "config": self.config,
            "name": self.name,
            "category": self.category,
            "verdict": self.verdict,
            "note": self.note,
            "in_focus": self.in_focus,
            "tolerance": self.tolerance,
            "alpha": self.alpha,
            "p_adjusted": _finite(self.p_adjusted),
        }
        if c is not None:
            # an untested comparison has no p-values and no bounds: null, as in the table's "-"
            out.update(
                {
                    "method": c.method,
                    "n_baseline": c.n_baseline,
                    "n_candidate": c.n_candidate,
                    "baseline": _finite(c.baseline),
                    "candidate": _finite(c.candidate),
                    "change": _finite(c.change),
                    "tested": c.tested,
                    "bounded": c.bounded,
                    "change_low": _finite(c.low) if c.bounded else None,
                    "change_high": _finite(c.high) if c.bounded else None,
                    "p_regression": _finite(c.p_regression) if c.tested else None,
                    "p_change": _finite(c.p_change) if c.tested else None,
                }
            )
        else:
            out.update({"baseline": self.baseline_text, "candidate": self.candidate_text})
        return out


def _finite(x):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return float(x)


@dataclass
class GateReport:
    units: list[Unit]
    baseline: Side
    candidate: Side
    config: GateConfig
    cross_machine: bool = False
    inconclusive_ok: bool = False
    warnings: list[str] = field(default_factory=list)
    unused_allow: list[str] = field(default_factory=list)
    # MODULE.STAT -> why it is never compared exactly (measured, or varies between runs)
    inexact_stats: dict[str, str] = field(default_factory=dict)
    # MODULE.CATEGORY or parameter -> why no fit unit compares it (fixed or imported only)
    not_compared: dict[str, str] = field(default_factory=dict)
    focus: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(ORDER, 0)
        for u in self.units:
            out[u.verdict] += 1
        return out

    @property
    def exit_code(self) -> int:
        counts = self.counts()
        if counts[REGRESSION]:
            return EXIT_REGRESSION
        if counts[BEHAVIOUR] and self.config.behaviour_change == "fail":
            return EXIT_REGRESSION
        if counts[INCONCLUSIVE] and not self.inconclusive_ok:
            return EXIT_INCONCLUSIVE
        return EXIT_PASS

    @property
    def status(self) -> str:
        return {EXIT_PASS: "PASS", EXIT_REGRESSION: "FAIL", EXIT_INCONCLUSIVE: "INCONCLUSIVE"}[
            self.exit_code
        ]

    def sorted_units(self) -> list[Unit]:
        return sorted(self.units, key=lambda u: (ORDER.index(u.verdict), u.id))

    def to_json(self) -> dict:
        return {
            "schema": "mprof.gate",
            "version": 1,
            "status": self.status,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "baseline": {
                "database": str(self.baseline.database),
                "runs": len(self.baseline.runs),
                "where": [f"{c.name}={c.value}" for c in self.baseline.where],
                "machines": sorted(self.baseline.fingerprints),
            },
            "candidate": {
                "database": str(self.candidate.database),
                "runs": len(self.candidate.runs),
                "where": [f"{c.name}={c.value}" for c in self.candidate.where],
                "machines": sorted(self.candidate.fingerprints),
            },
            "cross_machine": self.cross_machine,
            "settings": {
                "tolerance": self.config.tolerance,
                "alpha": self.config.alpha,
                "correction": self.config.correction,
                "behaviour_change": self.config.behaviour_change,
                "measure": self.config.measure,
                "fastest": self.config.fastest,
                "disturbed": self.config.disturbed_limit,
                "focus": self.focus,
                "config": self.config.source,
            },
            "warnings": self.warnings,
            "unused_allow": self.unused_allow,
            "inexact_statistics": dict(sorted(self.inexact_stats.items())),
            "not_compared": dict(sorted(self.not_compared.items())),
            "focus": self.focus,
            "units": [u.to_json() for u in self.sorted_units()],
        }


# -- fits ----------------------------------------------------------------------------------------


@dataclass
class SideFit:
    model: object  # mprof.model.Model
    dof: int
    se: dict[str, float]  # fitted parameter -> standard error
    warnings: list[str]
    undetermined: set[str] = field(default_factory=set)  # in a rank deficiency


def fit_side(script: str | Path, side: Side, unsafe_tcl: bool = False) -> SideFit:
    """Run a modeling script on this side's runs instead of the script's fit databases
    (mprof.model.script.fit_script_on: test databases and SaveModel are not used); the last
    fit counts."""
    from ..model.script import fit_script_on
    from ..model.terms import TermMatrix

    warnings: list[str] = []
    try:
        outcome = fit_script_on(script, side.run_set, warn=warnings.append, unsafe=unsafe_tcl)
    except MprofError as exc:
        raise MprofError(f"fitting the {side.name} ({side.database}): {exc}") from None
    if outcome is None:
        raise MprofError(f"{script}: the script made no fit")
    model = outcome.model
    # each fitted parameter's standard error: its unit term priced, all at once
    unit = model.price(TermMatrix(list(model.fitted), np.eye(len(model.fitted))))
    se = dict(zip(model.fitted, (float(sd) for sd in unit.sd)))
    undetermined = {name for group in model.flags.get("rank_deficient_terms", []) for name in group}
    return SideFit(
        model,
        int(outcome.result.dof),
        se,
        [f"{side.name} fit: {w}" for w in outcome.warnings],
        undetermined,
    )


def _fits(
    fit_script, baseline: Side, candidate: Side, config: GateConfig, warnings: list[str]
) -> tuple[SideFit, SideFit]:
    """Both sides' fits, each on its configurations' fastest runs (`fastest`) and without its
    runs disturbed by interference (`disturbed`); mprof.gate.disturbed."""
    from .disturbed import disturbed_runs, slower_than_fastest, without_runs

    limit = config.disturbed_limit
    sides = []
    for side in (baseline, candidate):
        slower = slower_than_fastest(side, config.fastest)
        left_out = {id(r) for r, _ in slower}
        bad = [(r, x) for r, x in disturbed_runs(side, limit) if id(r) not in left_out]
        if bad:
            warnings.append(
                f"{side.name}: {len(bad)} run(s) left out of the fit as disturbed (more "
                f"than {limit:.0%} slower than their configuration's lower median): "
                + ", ".join(f"run {r.id} +{x:.0%}" for r, x in bad)
            )
        if slower or bad:
            side = without_runs(side, [r for r, _ in slower + bad])
        sides.append(side)
    fits = (
        fit_side(fit_script, sides[0], config.unsafe_tcl),
        fit_side(fit_script, sides[1], config.unsafe_tcl),
    )
    for f in fits:
        warnings.extend(f.warnings)
    return fits


def _undetermined(names, fits) -> Comparison:
    return untested(
        "coefficient",
        fits[0].dof,
        fits[1].dof,
        math.nan,
        math.nan,
        math.nan,
        "not determined by the data (rank deficient fit): " + ", ".join(sorted(names)),
    )


def _fitted_names(fits, module: str, category: str) -> tuple[list[str], list[str]]:
    """(the category's parameters fitted on both sides, its priced parameters that are not:
    fixed by the script or imported from another model)."""
    fb = fits[0]
    names = [
        n
        for n in fb.model.categories_of(module).get(category, [])
        if n in fb.model.values and n not in fb.model.ignored
    ]
    fitted = [n for n in names if all(n in f.model.fitted for f in fits)]
    return fitted, [n for n in names if n not in fitted]


def _category_estimate(
    fit: SideFit, names: list[str], terms: dict[str, float]
) -> tuple[float, float]:
    """(cost, standard error) of some of a category's parameters for term values (parameter
    names as keys)."""
    estimate = fit.model.price({n: terms.get(n, 0.0) for n in names})
    return estimate.seconds, estimate.sd


def _mean_terms(model, module: str, runs: Sequence[RunData]) -> dict[str, float]:
    """Parameter name -> term value of the module, summed over PEs and averaged over runs."""
    if not runs:
        return {}
    terms = model.term_matrix(
        [
            [obj for pe in run.profile.pes for obj in pe.objects if obj.module == module]
            for run in runs
        ]
    )
    return {
        name: float(total) / len(runs) for name, total in zip(terms.names, terms.values.sum(axis=0))
    }


def _run_times(runs: Sequence[RunData], measure: str) -> list[float]:
    """What a `::time` unit compares: with `measure = "cpu"` the runs' CPU seconds summed over
    PEs when every PE of every run recorded them, else (and with "elapsed") their wall times.
    CPU time leaves out the time a PE was preempted or asleep: on a loaded machine wall times
    scatter so far beyond a 5 % tolerance that the rank test's A/A rate is nearly alpha itself
    (docs/measurements/gate-rates.md)."""
    measure = fallback_measure([pe for r in runs for pe in r.profile.pes], measure)
    return [r.profile.time(measure, wall=True) for r in runs]


def _hypothesis(
    fits, module: str, category: str, tb: dict[str, float], tc: dict[str, float], u: Unit
) -> tuple | None:
    """The hypothesis a configuration's category unit tests, as a key equal to that of every
    unit testing the same one; None when it is a hypothesis of its own.

    With the same term values x on both sides and only fitted parameters in the category, the
    unit tests x.(b_cand - (1 + tol) b_base) <= 0 with the t statistic of that combination, which
    does not change when x is scaled: the category in every configuration whose term values are
    proportional, and for a one-term category the coefficient unit (`fit::...`), test the same
    hypothesis with the same statistic and count once in the multiple-testing correction.
    Counting each copy would treat 2k + 1 identical tests as independent and ask a one-term
    category's slowdown to be k times as significant in a sweep of k configurations."""
    names, _ = _fitted_names(fits, module, category)
    if not names:
        return None
    x = [tb.get(n, 0.0) for n in names]
    if x != [tc.get(n, 0.0) for n in names]:
        return None
    norm = math.sqrt(sum(v * v for v in x))
    if norm == 0:
        return None
    return (
        "fit",
        tuple(sorted((n, round(v / norm, 12)) for n, v in zip(names, x) if v)),
        u.tolerance,
    )


def _run_costs(model, runs: Sequence[RunData]) -> list[dict[str, float]]:
    """Per run, MODULE.CATEGORY -> estimated seconds (summed over PEs and objects) of the
    modules the run has: every run priced at once, module by module."""
    objects = [[obj for pe in run.profile.pes for obj in pe.objects] for run in runs]
    out: list[dict[str, float]] = [{} for _ in runs]
    for module in sorted(
        {obj.module for objs in objects for obj in objs if obj.module in model.interfaces}
    ):
        terms = model.term_matrix(
            [[obj for obj in objs if obj.module == module] for objs in objects]
        )
        has = [any(obj.module == module for obj in objs) for objs in objects]
        for cat, est in model.price_categories(module, terms).items():
            for i in (i for i, yes in enumerate(has) if yes):
                out[i][f"{module}.{cat}"] = float(est.seconds[i])
    return out


# -- evaluation ----------------------------------------------------------------------------------


def _fmt_value(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def evaluate(
    baseline: Side,
    candidate: Side,
    config: GateConfig | None = None,
    *,
    model=None,
    fit_script: str | Path | None = None,
    allow_cross_machine: bool = False,
    inconclusive_ok: bool = False,
    unit_filter=None,
    interfaces: Sequence[str | Path] = (),
    focus: Sequence[str] = (),
    same_program: bool = False,
) -> GateReport:
    """Compare two sides.  `unit_filter(unit) -> bool` keeps only some units (before the
    multiple-testing correction, which then counts only those).  `interfaces` (.perf files or
    folders) declare which statistics are measurements, before the interface search path.
    `focus` (module names or unit id globs) is the family the user asks about: the correction
    counts only its units, and the others are reported but do not gate.  `same_program`:
    two builds of one program whose profiles name it differently (`same_program()`).

    Nothing to compare is an input error (MprofError): no configuration with runs on both
    sides, or (after `unit_filter`) only units that compare nothing."""
    config = config or GateConfig()
    if not baseline.runs:
        raise MprofError(
            f"no baseline runs in {baseline.database}"
            + (" matching the selection" if baseline.where else "")
        )
    if not candidate.runs:
        raise MprofError(
            f"no candidate runs in {candidate.database}"
            + (" matching the selection" if candidate.where else "")
        )
    cross = baseline.fingerprints != candidate.fingerprints
    if cross and not allow_cross_machine:
        raise CrossMachineError(
            "baseline and candidate runs come from different machines (fingerprints "
            f"{', '.join(sorted(f[:12] for f in baseline.fingerprints))} vs "
            f"{', '.join(sorted(f[:12] for f in candidate.fingerprints))}); refusing to "
            "compare (--allow-cross-machine makes the comparison informational)"
        )
    report = GateReport(
        [],
        baseline,
        candidate,
        config,
        cross_machine=cross,
        inconclusive_ok=inconclusive_ok,
        focus=list(focus),
    )
    renamed = rename_candidate_program(baseline, candidate) if same_program else None
    if renamed:
        report.warnings.append(renamed)
    base_cfg, cand_cfg = baseline.by_config(), candidate.by_config()
    keys = list(dict.fromkeys([*base_cfg, *cand_cfg]))
    labels = config_labels(keys)
    if not any(base_cfg.get(k) and cand_cfg.get(k) for k in keys):
        raise MprofError(_nothing_shared(baseline, candidate, base_cfg, cand_cfg, labels))
    units = report.units
    modules = {m for side in (baseline, candidate) for r in side.runs for m, _ in r.stats}
    digests: dict[str, set[str]] = {}  # the interface texts the runs were recorded with
    for side in (baseline, candidate):
        for r in side.runs:
            for module, digest in r.profile.interfaces.items():
                digests.setdefault(module, set()).add(digest)
    props = statistic_properties(modules, interfaces, digests)
    report.warnings.extend(props.warnings)
    report.inexact_stats = _inexact_stats(base_cfg, props)

    def unit(uid, kind, cfg_label, name, category=None) -> Unit:
        tol, alpha = config.settings_for(uid)
        key = next((k for k, v in labels.items() if v == cfg_label), None)
        u = Unit(uid, kind, cfg_label, name, tol, alpha, category=category, config_key=key)
        units.append(u)
        return u

    if model is not None:
        from ..model.modelfile import missing_text

        for side in (baseline, candidate):
            objects = [obj for r in side.runs for pe in r.profile.pes for obj in pe.objects]
            for module, names in model.missing_statistics(objects).items():
                report.warnings.append(f"{side.name}: {missing_text(module, names)}")

    fits = None
    if fit_script is not None:
        fits = _fits(fit_script, baseline, candidate, config, report.warnings)

    shared = []
    for key in keys:
        label = labels[key]
        b_runs, c_runs = base_cfg.get(key, []), cand_cfg.get(key, [])
        if not b_runs or not c_runs:
            u = unit(f"{label}::time", "time", label, "time")
            if not c_runs:
                u.verdict, u.note = INCONCLUSIVE, "no candidate runs of this configuration"
            else:
                u.verdict, u.note = INFO, "no baseline runs of this configuration (new)"
            continue
        shared.append((b_runs, c_runs))
        u = unit(f"{label}::time", "time", label, "time")
        u.comparison = compare_samples(
            _run_times(b_runs, config.measure),
            _run_times(c_runs, config.measure),
            u.tolerance,
            u.alpha,
        )
        _stat_units(unit, label, b_runs, c_runs, report.inexact_stats)
        if model is not None:
            b_costs, c_costs = _run_costs(model, b_runs), _run_costs(model, c_runs)
            names = sorted({n for costs in (*b_costs, *c_costs) for n in costs})
            for name in names:
                u = unit(f"{label}::cost:{name}", "cost", label, f"cost {name}", name)
                u.comparison = compare_samples(
                    [c.get(name, 0.0) for c in b_costs],
                    [c.get(name, 0.0) for c in c_costs],
                    u.tolerance,
                    u.alpha,
                )
                u.informational = True
        if fits is not None:
            fb, fc = fits
            for module, info in fb.model.interfaces.items():
                if module not in fc.model.interfaces:
                    continue
                tb = _mean_terms(fb.model, module, b_runs)
                tc = _mean_terms(fc.model, module, c_runs)
                if not tb and not tc:
                    continue
                for cat in info.categories:
                    name = f"{module}.{cat}"
                    fitted, other = _fitted_names(fits, module, cat)
                    for n in other:
                        report.not_compared.setdefault(
                            n,
                            "fixed by the modeling script"
                            if _is_fixed(fb.model, n)
                            else "imported from another model"
                            if n in fb.model.imported
                            else "not fitted on both sides",
                        )
                    if not fitted:
                        if other:
                            report.not_compared.setdefault(
                                name, "a category without a fitted parameter"
                            )
                        continue
                    u = unit(f"{label}::fit:{name}", "fit", label, f"fitted cost {name}", name)
                    bad = {n for n in fitted if tb.get(n) or tc.get(n)} & (
                        fb.undetermined | fc.undetermined
                    )
                    if bad:
                        u.comparison = _undetermined(bad, fits)
                        continue
                    # the baseline's term values on both sides: the unit compares the unit
                    # costs; a change in the counts is the stat units' business
                    cb, sb = _category_estimate(fb, fitted, tb)
                    cc, sc = _category_estimate(fc, fitted, tb)
                    u.comparison = compare_estimates(
                        cb, sb, fb.dof, cc, sc, fc.dof, u.tolerance, u.alpha
                    )
                    if other:
                        u.comparison.note = "; ".join(
                            filter(
                                None,
                                [
                                    u.comparison.note,
                                    "fitted parameters only; not compared: " + ", ".join(other),
                                ],
                            )
                        )
                    u.hypothesis = _hypothesis(fits, module, cat, tb, tb, u)
    _category_units(unit, shared)
    if fits is not None:
        fb, fc = fits
        for name in fb.model.fitted:
            if name not in fc.se:
                continue
            module, term = name.split(":", 1)
            cats = [c for c, ts in fb.model.interfaces[module].categories.items() if term in ts]
            category = f"{module}.{cats[0]}" if cats else module
            u = unit(f"fit::{category}:{term}", "coef", None, f"coefficient {name}", category)
            if name in fb.undetermined | fc.undetermined:
                u.comparison = _undetermined({name}, fits)
                continue
            u.comparison = compare_estimates(
                fb.model.values[name],
                fb.se[name],
                fb.dof,
                fc.model.values[name],
                fc.se[name],
                fc.dof,
                u.tolerance,
                u.alpha,
            )
            u.hypothesis = ("fit", ((name, 1.0),), u.tolerance)

    if unit_filter is not None:
        report.units[:] = [u for u in report.units if unit_filter(u)]
    if report.units and not any(_compares(u) for u in report.units):
        raise MprofError(
            "no unit compares baseline with candidate runs (every selected "
            "configuration lacks runs on one side): "
            + "; ".join(f"{u.id}: {u.note}" for u in report.units[:4])
            + (" ..." if len(report.units) > 4 else "")
        )
    if focus:
        for u in report.units:
            u.in_focus = in_focus(u, focus)
        if not any(u.in_focus for u in report.units):
            modules = sorted({m for u in report.units if (m := u.module)})
            raise MprofError(
                f"--focus {' '.join(focus)} matches no unit (modules: "
                f"{', '.join(modules) or 'none'}; or give a unit id glob such "
                "as 'cat:*')"
            )
    decide(report)
    return report


def _is_fixed(model, name: str) -> bool:
    from ..model.modelfile import FIXED

    return model.imported.get(name) == FIXED


def in_focus(u: Unit, focus: Sequence[str]) -> bool:
    """Whether a unit belongs to the family asked about: a module name (its categories, costs,
    coefficients and statistics) or a glob on unit ids."""
    import fnmatch

    for pattern in focus:
        if any(ch in pattern for ch in "*?[:") or "::" in pattern:
            if fnmatch.fnmatchcase(u.id, pattern):
                return True
        elif u.module == pattern:
            return True
    return False


def rename_candidate_program(baseline: Side, candidate: Side) -> str | None:
    """Two builds of one program under different names (a candidate binary `x_slow` whose
    profiles name the program after the binary): when each side has a single program, they
    differ, and no configuration is shared otherwise, the candidate's runs are compared as
    the baseline's program.  Returns the warning saying so, or None."""
    b = {r.program for r in baseline.runs}
    c = {r.program for r in candidate.runs}
    if len(b) != 1 or len(c) != 1 or b == c:
        return None
    if set(baseline.by_config()) & set(candidate.by_config()):
        return None
    old, new = c.pop(), next(iter(b))
    for r in candidate.runs:
        r.profile.program = new
    return (
        f"the candidate's program {old} is compared as the baseline's {new} (each side "
        "holds one program)"
    )


def _category_units(unit, shared) -> None:
    """`cat:ACCESS` units: the measured CPU time of each access category per run, compared
    over every configuration with runs on both sides at once (stratified by configuration:
    the configurations' categories take different times, a change is relative).  A
    configuration where some run has no category times contributes CPU time outside the idle
    loop instead (`cat:(busy)`)."""
    strata: dict[str, list] = {}
    samples = typical_category_samples([r for pair in shared for runs in pair for r in runs])
    for b_runs, c_runs in shared:
        runs = [*b_runs, *c_runs]
        if all(r.categories is not None for r in runs):
            names = sorted({n for r in runs for n in r.categories})
            for name in names:
                strata.setdefault(name, []).append(
                    (
                        [r.categories.get(name, 0.0) for r in b_runs],
                        [r.categories.get(name, 0.0) for r in c_runs],
                    )
                )
            continue
        b = [busy_time(r.profile) for r in b_runs]
        c = [busy_time(r.profile) for r in c_runs]
        if None not in b and None not in c:
            strata.setdefault(BUSY, []).append((b, c))
    for name, groups in strata.items():
        u = unit(f"cat:{name}", "cat", None, f"measured {name}")
        u.comparison = compare_strata(groups, u.tolerance, u.alpha)
        if len(groups) > 1 and not u.comparison.note:
            u.comparison.note = f"over {len(groups)} configurations"
        few = samples.get(name)
        if few is not None and few < MIN_CATEGORY_SAMPLES:
            # its time is a few sample periods: the error of the sampling (up to a period per
            # change of category) is then the size of the changes the gate looks for
            u.informational = True
            u.why_informational = (
                f"{few:g} samples per run (median), fewer than "
                f"{MIN_CATEGORY_SAMPLES}: too few to compare"
            )


def typical_category_samples(runs) -> dict[str, float]:
    """Access category -> the median over runs of the samples its measured time rests on
    (0 in a run without it), for the categories of runs whose profiles count samples."""
    counts = [c for c in (r.category_samples() for r in runs) if c is not None]
    names = {n for c in counts for n in c}
    return {n: float(np.median([c.get(n, 0) for c in counts])) for n in names}


def _compares(u: Unit) -> bool:
    return u.comparison is not None or u.kind == "stat"


def _nothing_shared(baseline: Side, candidate: Side, base_cfg, cand_cfg, labels) -> str:
    """Why no configuration has runs on both sides, naming what differs."""

    def some(cfgs):
        names = sorted(labels[k] for k in cfgs)
        return ", ".join(names[:3]) + (f", ... ({len(names)} in all)" if len(names) > 3 else "")

    hint = ""
    for what, get in (
        ("programs", lambda r: r.program),
        ("PE counts", lambda r: r.npes),
        ("parameter names", lambda r: ",".join(sorted(r.params)) or "(none)"),
        ("parameter values", lambda r: json.dumps(r.params, sort_keys=True)),
        ("settings", lambda r: json.dumps(r.settings, sort_keys=True)),
    ):
        b = {str(get(r)) for r in baseline.runs}
        c = {str(get(r)) for r in candidate.runs}
        if not b & c:
            hint = (
                f"; their {what} differ: baseline {', '.join(sorted(b)[:4])}, candidate "
                f"{', '.join(sorted(c)[:4])}"
            )
            if what == "programs" and len(b) == len(c) == 1:
                hint += (
                    " (two builds of one program named after their binaries: "
                    "--same-program compares them as one)"
                )
            break
    return (
        f"nothing to compare: no configuration has runs in both {baseline.database} "
        f"and {candidate.database} (baseline: {some(base_cfg)}; candidate: "
        f"{some(cand_cfg)}){hint}"
    )


def _inexact_stats(base_cfg: dict[str, list[RunData]], props: StatProperties) -> dict[str, str]:
    """MODULE.STAT -> why the statistic is never compared exactly.  What a statistic is
    decides, not a coincidence in a few runs: it is declared `measured` in its interface, or
    it varies between the baseline repetitions of some configuration (then it depends on
    timing, and equal values elsewhere are luck)."""
    out: dict[str, str] = {}
    for runs in base_cfg.values():
        for module, stat in sorted({k for r in runs for k in r.stats}):
            name = f"{module}.{stat}"
            if name in out:
                continue
            if props.is_measured(module, stat):
                out[name] = f"declared measured in {props.sources[module]}"
            elif len({r.stats.get((module, stat), 0.0) for r in runs}) > 1:
                out[name] = (
                    "varies between baseline repetitions of "
                    f"{runs[0].program}(npes={runs[0].npes}, ...)"
                )
    return out


def _stat_units(
    unit, label: str, b_runs: list[RunData], c_runs: list[RunData], inexact: dict[str, str]
) -> None:
    if len(b_runs) < 2:
        return  # one run cannot show that a statistic is deterministic
    names = sorted({k for r in (*b_runs, *c_runs) for k in r.stats})
    for module, stat in names:
        name = f"{module}.{stat}"
        if name in inexact:
            continue
        bvals = [r.stats.get((module, stat), 0.0) for r in b_runs]
        cvals = [r.stats.get((module, stat), 0.0) for r in c_runs]
        u = unit(f"{label}::stat:{name}", "stat", label, f"stat {name}", None)
        base = bvals[0]
        u.baseline_text = _fmt_value(base)
        cset = sorted(set(cvals))
        u.candidate_text = ", ".join(_fmt_value(v) for v in cset[:4]) + (
            ", ..." if len(cset) > 4 else ""
        )
        if cset == [base]:
            u.verdict = PASS
            u.note = f"identical in all {len(b_runs)} + {len(c_runs)} runs"
        elif base not in cset:
            u.verdict = BEHAVIOUR
            change = f" ({100 * (cset[0] / base - 1):+.3g} %)" if len(cset) == 1 and base else ""
            u.note = (
                f"{_fmt_value(base)} in every baseline run, "
                f"{u.candidate_text} in the candidate{change}"
            )
        else:
            u.verdict = INFO
            u.note = "deterministic in the baseline but varies in the candidate"


def decide(report: GateReport) -> None:
    """Correct the p-values, then set each statistical unit's verdict; apply the allow-list
    and the cross-machine rule.  The correction runs within the focus (every unit without
    one); the units outside it are corrected among themselves and reported as INFO when they
    would not pass.  Informational units (model costs of counts) never gate."""
    # a comparison without a test (too few runs, no error estimate) is no hypothesis tested:
    # it is INCONCLUSIVE and the correction does not count it
    compared = [u for u in report.units if u.comparison is not None]
    tested = [u for u in compared if u.comparison.tested]
    for family in (
        [u for u in tested if u.in_focus and not u.informational],
        [u for u in tested if not u.in_focus or u.informational],
    ):
        _correct(family, report.config.correction)
    for u in compared:
        c = u.comparison
        notes = [c.note] if c.note else []
        if not c.tested:
            u.verdict = INCONCLUSIVE
        elif u.p_adjusted < u.alpha:
            u.verdict = REGRESSION
        elif c.bounded and c.high <= u.tolerance:
            u.verdict = PASS
        else:
            u.verdict = INCONCLUSIVE
            if not notes:
                notes.append("upper bound above the tolerance; more runs may decide")
        u.note = "; ".join(notes)
    used = set()
    for u in report.units:
        rule = report.config.allowed(u.id)
        if rule is None:
            continue
        used.add(rule.match)
        if u.verdict in (REGRESSION, BEHAVIOUR):
            u.note = f"allowed ({rule.reason}); was {u.verdict}" + (f"; {u.note}" if u.note else "")
            u.verdict = ALLOWED
    report.unused_allow = [r.match for r in report.config.allow if r.match not in used]
    for u in report.units:
        if u.verdict in (PASS, INFO, ALLOWED):
            continue
        if u.informational:
            u.note = f"{u.why_informational}: would be {u.verdict}" + (
                f"; {u.note}" if u.note else ""
            )
            u.verdict = INFO
        elif not u.in_focus:
            u.note = f"outside the focus ({', '.join(report.focus)}): would be {u.verdict}" + (
                f"; {u.note}" if u.note else ""
            )
            u.verdict = INFO
    if report.cross_machine:
        for u in report.units:
            if u.verdict != INFO:
                u.note = f"cross-machine comparison: would be {u.verdict}" + (
                    f"; {u.note}" if u.note else ""
                )
                u.verdict = INFO


def _correct(tested: list[Unit], correction: str) -> None:
    """Adjusted p-values of one family; units testing one hypothesis count once."""
    families: dict = {}
    for i, u in enumerate(tested):
        key = ("unit", i) if u.hypothesis is None else (u.hypothesis, u.alpha)
        families.setdefault(key, []).append(u)
    groups = list(families.values())
    q_group = adjust([max(u.comparison.p_regression for u in g) for g in groups], correction)
    for g, q in zip(groups, q_group):
        for u in g:
            u.p_adjusted = q


def hypotheses(units) -> int:
    """How many tests the correction counts among these units."""
    keys = set()
    for i, u in enumerate(units):
        keys.add(("unit", i) if u.hypothesis is None else (u.hypothesis, u.alpha))
    return len(keys)
