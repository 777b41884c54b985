"""Fit results as text in the shape of the paper's Fig 4.10, and as JSON."""

from __future__ import annotations

import math

from ..numbers import percent, percent_of
from ..report.jsonout import dumps
from .misses import format_lines as format_misses
from .misses import worst_per_set
from .modelfile import FIXED
from .session import FitOutcome


def mre_text(value) -> str:
    """An MRE (percent) as the paper prints it (%f), bounded: nan is an MRE whose figures
    overflowed (fit.mre), inf or a huge one a model off by more than the bound (measured
    times that round to zero beside its predictions: 1e-300 s)."""
    if value is None:
        return "n/a"
    if value != value:
        return "n/a (overflows)"
    return percent(value, "f", "%")


def fixed_text(value: float) -> str:
    """The paper prints %f; keep that unless it would round a small value away or run to
    more digits than a reader can take in (a chi-square of 1e300)."""
    if value == 0 or 0.01 <= abs(value) < 1e15:
        return f"{value:f}"
    return f"{value:.6g}" if math.isfinite(value) else _g(value)


def _g(value: float, unit: str = "") -> str:
    """A figure of the fit by %g, `unit` after it; one that overflowed (times of 1e308 s: the
    fit then refuses to save) says so instead of printing inf or nan."""
    return f"{value:g}{unit}" if math.isfinite(value) else "n/a (overflows)"


def _residual_line(r) -> str:
    unit = "relative" if r.options.normalize else "seconds"
    se = percent_of(r.residual_se, ".3g", "%") if r.options.normalize else _g(r.residual_se, " s")
    return (
        f"Residual standard error: {se} ({unit}, {r.dof} degrees of freedom); "
        f"t(0.95; {r.dof}) = {r.t_quantile:.4f}"
    )


def _noise_lines(r) -> list[str]:
    """Noise against model error: what replicates say about the residual."""
    lof = r.lack_of_fit
    if lof is None and r.replicates != "all" and r.noise_mre is not None:
        which = {"median": "median", "min": "fastest"}[r.replicates]
        return [
            f"Replicate noise floor (MRE of each run against its replicates' mean): "
            f"{mre_text(r.noise_mre)}",
            f"Samples are each configuration's {which} run (Replicates {r.replicates}): no "
            "lack-of-fit test",
        ]
    if lof is None:
        return [
            "Lack of fit: no replicated configurations (repeat runs to tell noise from model error)"
        ]
    lines = [
        f"Replicate noise floor (MRE of each sample against its replicates' mean): "
        f"{mre_text(r.noise_mre)}",
        f"Pure error: {percent_of(lof.noise_share, '.1f', '%')} of the residual sum of "
        "squares "
        f"({lof.groups} configurations, {lof.pure_error_dof} replicate degrees of freedom)",
    ]
    if lof.p_value == lof.p_value:
        verdict = (
            "the model misses something the noise does not explain"
            if lof.p_value < 0.01
            else "the remaining error is consistent with noise"
        )
        lines.append(
            f"Lack-of-fit F test: F({lof.lack_of_fit_dof}, {lof.pure_error_dof}) = "
            f"{lof.f_statistic:.3g}, p = {lof.p_value:.3g}: {verdict}"
        )
    return lines


def format_text(outcome: FitOutcome, misses: int = 0) -> str:
    """The fit as `mprof fit` prints it; with misses > 0, also that many of the largest
    relative misses of the test and of the fit samples (misses.py)."""
    r = outcome.result
    lines = [
        f"Chi-square: {fixed_text(r.chi_square)}",
        "Singular values: " + " ".join(f"{w:f}" for w in r.singular_values),
        f"Sample MRE: {mre_text(r.sample_mre)}",
        f"Test MRE: {mre_text(r.test_mre)}"
        + (f" (single runs: {mre_text(r.run_test_mre)})" if r.run_test_mre is not None else ""),
        "",
        f"Samples: {r.n_samples} fit, {r.n_test} test; parameters: {len(r.names)}"
        + (f" fitted, {len(r.imported)} imported" if r.imported else "")
        + f"; rank: {r.rank}; SSE: {_g(r.sse)}; measure: "
        f"{outcome.model.settings.get('measure')}",
        _residual_line(r),
        *_noise_lines(r),
    ]
    model = outcome.model
    modules: dict[str, list[str]] = {}
    for name in model.values:  # fitted first, then imported, in interface order
        modules.setdefault(name.split(":", 1)[0], []).append(name)
    for module, names in modules.items():
        lines.append("")
        for name in names:
            half = model.halfwidths.get(name)
            text = f"{name}: {_g(model.values[name])}" + (
                f" +- {_g(half)}" if half is not None else ""
            )
            notes = parameter_notes(model, name)
            lines.append(text + (f"   [{'; '.join(notes)}]" if notes else ""))
    if model.ignored:
        lines.append("")
        lines.append("Ignored: " + " ".join(model.ignored))
    if misses > 0:
        lines += format_misses(outcome.misses(), misses)
    return "\n".join(lines) + "\n"


def parameter_notes(model, name: str, source: bool = True) -> list[str]:
    """What the fit says about a parameter beside its value: where it came from (`source`:
    fixed, imported), an interval that contains 0, and a parameter the data could not
    determine (rank deficient).  Read from the model's `flags`, which the fit sets and the
    model file keeps, so `mprof fit` and `mprof model show` say the same."""
    notes = []
    if source and name in model.imported:
        notes.append("fixed" if model.imported[name] == FIXED else "imported")
    if name in model.flags.get("interval_contains_zero", []):
        notes.append("interval contains 0")
    if any(name in group for group in model.flags.get("rank_deficient_terms", [])):
        notes.append("not determined (rank deficient)")
    return notes


def format_json(outcome: FitOutcome, misses: int = 0) -> str:
    data = outcome.model.to_json()
    data["warnings"] = outcome.warnings
    if misses > 0:
        data["misses"] = [
            m.to_json() for _, worst in worst_per_set(outcome.misses(), misses) for m in worst
        ]
    return dumps(data, "fit")
