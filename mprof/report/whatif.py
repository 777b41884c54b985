"""What if: the model's prediction of a run with a parameter or a statistic changed
(`mprof report RUN.json --model MODEL.json --what-if rts:Msg=0.5x`).

A change is `NAME=FACTORx` (scale) or `NAME=VALUE` (set):

    module:Term=0.5x     a model parameter (the cost of one unit of the term) halved
    module.Stat=2x       a statistic doubled in every record of the run (the term values follow
                         from the interface's formulas)

The run's statistics are priced as the report prices them (Model.price), once as they are and
once changed.  A category's change is priced from the difference of its term values, so its
band comes from the parameters' covariance (a scaled parameter keeps its relative
uncertainty); the predicted time's band is a prediction band as in the report (parameters plus
the fit's residual scatter).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field

from ..errors import MprofError
from ..numbers import percent_of
from ..profile import ObjectRecord, RunProfile, fallback_measure

_CHANGE = re.compile(r"^\s*([^=\s]+)\s*=\s*([^=\s]+?)\s*$")


@dataclass
class Change:
    text: str
    name: str
    kind: str  # "parameter" or "statistic"
    factor: float | None = None  # NAMEx
    value: float | None = None  # NAME=VALUE

    def describe(self) -> str:
        what = f"{self.factor:g}x" if self.factor is not None else f"{self.value:g}"
        return f"{self.name} = {what}"


@dataclass
class CategoryChange:
    name: str  # module:CATEGORY
    now_s: float
    new_s: float
    change_s: float
    halfwidth: float  # 90 % half width of the change (parameters' covariance)

    @property
    def relative(self) -> float:
        return self.change_s / self.now_s if self.now_s else math.nan


@dataclass
class WhatIf:
    changes: list[Change]
    categories: list[CategoryChange]  # the categories that change, largest change first
    now_s: float
    new_s: float
    change_halfwidth: float
    new_halfwidth: float  # prediction band of the new total
    measured_s: float  # the run's measured time (the model's measure)
    unit: str
    confidence: float = 0.90
    unchanged: list[str] = field(default_factory=list)

    @property
    def change_s(self) -> float:
        return self.new_s - self.now_s

    @property
    def title(self) -> str:
        return ", ".join(c.describe() for c in self.changes)


def parse_change(text: str, model) -> Change:
    m = _CHANGE.match(text)
    if not m:
        raise MprofError(
            f"--what-if '{text}': expected NAME=FACTORx or NAME=VALUE "
            "(e.g. rts:Msg=0.5x, rts.MsgSent=2x)"
        )
    name, amount = m.groups()
    factor = value = None
    try:
        if amount.lower().endswith("x"):
            factor = float(amount[:-1])
        else:
            value = float(amount)
    except ValueError:
        raise MprofError(
            f"--what-if '{text}': '{amount}' is not a number or a factor like 0.5x"
        ) from None
    number = factor if factor is not None else value
    if not math.isfinite(number):
        raise MprofError(f"--what-if '{text}': '{amount}' is not finite")
    if ":" in name:
        if name in model.ignored:
            raise MprofError(
                f"--what-if '{text}': '{name}' is ignored by the model (it costs "
                "nothing), so changing it changes nothing"
            )
        if name not in model.values:
            known = sorted(n for n in model.values if n not in model.ignored)
            close = difflib.get_close_matches(name, known, n=1)
            raise MprofError(
                f"--what-if '{text}': the model has no parameter '{name}'"
                + (f"; did you mean '{close[0]}'?" if close else "")
                + f" (parameters: {', '.join(known)})"
            )
        if value is not None and model.values[name] == 0:
            raise MprofError(
                f"--what-if '{text}': '{name}' is 0 in the model; scale another "
                "parameter or set a statistic"
            )
        return Change(text, name, "parameter", factor, value)
    module, dot, stat = name.partition(".")
    if dot and module in model.interfaces:
        stats = model.interfaces[module].statistics
        if stat in stats:
            _check_sign(text, name, number, model.interface(module))
            return Change(text, name, "statistic", factor, value)
        close = difflib.get_close_matches(stat, stats, n=1)
        raise MprofError(
            f"--what-if '{text}': module {module} has no statistic '{stat}'"
            + (f"; did you mean '{module}.{close[0]}'?" if close else "")
            + f" (statistics: {', '.join(stats)})"
        )
    raise MprofError(
        f"--what-if '{text}': '{name}' is neither a parameter of the model "
        "(module:Term, e.g. rts:Msg) nor a statistic of one of its modules "
        f"(module.Stat, e.g. rts.MsgSent; modules: {', '.join(model.interfaces)})"
    )


def _check_sign(text: str, name: str, number: float, iface) -> None:
    """A count (u64) cannot become negative: not by a value, and not by a factor, which would
    price a run that gave time back for every event it counted."""
    if iface.statistic(name.partition(".")[2]).type == "u64" and number < 0:
        raise MprofError(
            f"--what-if '{text}': {name} is a count (u64) and cannot be negative; "
            "use a factor between 0x and 1x to make it smaller"
        )


def _changed_records(run: RunProfile, changes: list[Change]) -> list[list[ObjectRecord]]:
    out = []
    for pe in run.pes:
        records = []
        for obj in pe.objects:
            stats = dict(obj.stats)
            for c in changes:
                module, _, stat = c.name.partition(".")
                if c.kind == "statistic" and obj.module == module:
                    now = stats.get(stat, 0)
                    stats[stat] = now * c.factor if c.factor is not None else c.value
            records.append(ObjectRecord(obj.id, obj.module, stats))
        out.append(records)
    return out


def _scale_parameters(terms: dict[str, float], changes: list[Change], model) -> dict:
    """Scaling a parameter by s prices like scaling its term values by s (cost c s f)."""
    out = dict(terms)
    for c in changes:
        if c.kind == "parameter" and c.name in out:
            s = c.factor if c.factor is not None else c.value / model.values[c.name]
            out[c.name] *= s
    return out


def _modules(model, records) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for obj in records:
        if obj.module in model.interfaces:
            terms = out.setdefault(obj.module, {})
            for name, value in model.priced_terms([obj]).items():
                terms[name] = terms.get(name, 0.0) + value
    return out


def what_if(run: RunProfile, model, texts: list[str], confidence: float = 0.90) -> WhatIf:
    """The run priced by `model` as it is and with the changes of `texts`."""
    changes = [parse_change(t, model) for t in texts]
    usable = {m for m in model.interfaces if _interface_ok(model, m)}
    now_pes = [[o for o in pe.objects if o.module in usable] for pe in run.pes]
    new_pes = [
        [o for o in records if o.module in usable] for records in _changed_records(run, changes)
    ]
    quantile = model.t_quantile(confidence)
    now = _modules(model, [o for recs in now_pes for o in recs])
    new = {
        m: _scale_parameters(t, changes, model)
        for m, t in _modules(model, [o for recs in new_pes for o in recs]).items()
    }
    cats, unchanged = [], []
    for module in sorted(set(now) | set(new)):
        a, b = now.get(module, {}), new.get(module, {})
        for cat, names in model.categories_of(module).items():
            before = model.price({n: a.get(n, 0.0) for n in names})
            after = model.price({n: b.get(n, 0.0) for n in names})
            diff = model.price({n: b.get(n, 0.0) - a.get(n, 0.0) for n in names})
            name = f"{module}:{cat}"
            if diff.seconds == 0 and diff.variance == 0:
                unchanged.append(name)
                continue
            cats.append(
                CategoryChange(
                    name, before.seconds, after.seconds, diff.seconds, diff.halfwidth(quantile)
                )
            )
    cats.sort(key=lambda c: (-abs(c.change_s), c.name))
    all_now = _sum_terms(now.values())
    all_new = _sum_terms(new.values())
    total_now, total_new = model.price(all_now), model.price(all_new)
    diff = model.price(
        {n: all_new.get(n, 0.0) - all_now.get(n, 0.0) for n in set(all_now) | set(all_new)}
    )
    per_pe = [
        model.price(_scale_parameters(model.priced_terms(recs), changes, model)).seconds
        for recs in new_pes
    ]
    if model.settings.get("granularity") == "run":
        per_pe = [total_new.seconds]
    residual = model.residual_variance(per_pe)
    band = (
        quantile * math.sqrt(max(total_new.variance, 0.0) + residual)
        if math.isfinite(residual)
        else math.nan
    )
    measure = model.settings.get("measure", "elapsed")
    measured = sum(pe.time(fallback_measure([pe], measure)) for pe in run.pes)
    unit = ("CPU seconds" if measure == "cpu" else "seconds") + " summed over PEs"
    result = WhatIf(
        changes,
        cats,
        total_now.seconds,
        total_new.seconds,
        diff.halfwidth(quantile),
        band,
        measured,
        unit,
        confidence,
        unchanged,
    )
    _check_finite(result)
    return result


def _check_finite(w: WhatIf) -> None:
    """A change so large that its price overflows (rts:Msg=1e308x) has no meaningful answer:
    refused, naming the change and the first figure that overflowed, rather than printed as
    inf or written as JSON's invalid Infinity.  (Bands may be undefined: they become n/a.)"""
    figures = [(c.name, v) for c in w.categories for v in (c.now_s, c.new_s, c.change_s)]
    figures += [("the total", v) for v in (w.now_s, w.new_s, w.change_s)]
    for name, value in figures:
        if not math.isfinite(value):
            raise MprofError(
                f"report: the what-if price overflows: with {w.title}, {name} "
                f"costs {value} s (the change is too large to price)"
            )


def _interface_ok(model, module: str) -> bool:
    try:
        model.interface(module)
        return True
    except MprofError:
        return False


def _sum_terms(dicts) -> dict[str, float]:
    out: dict[str, float] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0.0) + v
    return out


def _hw(v: float, d: int) -> str:
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.{d}f}" if v >= 10**-d or v == 0 else f"{v:.2g}"


def what_if_lines(w: WhatIf, d: int) -> list[str]:
    pct = int(round(w.confidence * 100))
    out = [f"*** What if {w.title} (model, {w.unit}) ***"]
    if not w.categories:
        out.append(f"  (no category of the model depends on {w.title} in this run)")
    names = [c.name for c in w.categories]
    width = max([len(n) for n in names] + [len("total (model)")])
    cw = d + 6
    out.append(f"  {'category':<{width}} {'now':>{cw}} {'what if':>{cw}}   change ({pct} % band)")
    for c in w.categories:
        out.append(
            f"  {c.name:<{width}} {c.now_s:>{cw - 2}.{d}f} s {c.new_s:>{cw - 2}.{d}f} s"
            f"   {c.change_s:+.{d}f} s +-{_hw(c.halfwidth, d)} "
            f"({percent_of(c.relative, '+.1f')})"
        )
    rel = w.change_s / w.now_s if w.now_s else math.nan
    out.append(
        f"  {'total (model)':<{width}} {w.now_s:>{cw - 2}.{d}f} s "
        f"{w.new_s:>{cw - 2}.{d}f} s   {w.change_s:+.{d}f} s "
        f"+-{_hw(w.change_halfwidth, d)} ({percent_of(rel, '+.1f')})"
    )
    out.append(
        f"  predicted time {w.new_s:.{d}f} s +-{_hw(w.new_halfwidth, d)} ({pct} % "
        f"prediction band); measured now {w.measured_s:.{d}f} s"
    )
    return out


def what_if_json(w: WhatIf) -> dict:
    def fin(v):
        return v if v is not None and math.isfinite(v) else None

    return {
        "changes": [
            {"name": c.name, "kind": c.kind, "factor": c.factor, "value": c.value}
            for c in w.changes
        ],
        "unit": w.unit,
        "categories": [
            {
                "category": c.name,
                "now_s": c.now_s,
                "what_if_s": c.new_s,
                "change_s": c.change_s,
                "change_halfwidth_s": fin(c.halfwidth),
                "relative": fin(c.relative),
            }
            for c in w.categories
        ],
        "unchanged": w.unchanged,
        "now_s": w.now_s,
        "what_if_s": w.new_s,
        "change_s": w.change_s,
        "change_halfwidth_s": fin(w.change_halfwidth),
        "prediction_halfwidth_s": fin(w.new_halfwidth),
        "measured_s": w.measured_s,
    }
