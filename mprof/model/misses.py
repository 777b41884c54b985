"""The samples a fitted model misses most (`mprof fit --misses N`).

A test MRE says how far off the model is on average, not where: one configuration predicted
twice too high looks like a model a few percent off everywhere.  Listing the largest relative
misses with each sample's configuration (the parameters and settings that vary between the
samples) and the spread of that configuration's repetitions tells a missing term (a parameter
region missed in every repetition) from a run of another kind (one repetition far from its
siblings, the sample taken from it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ..numbers import percent_of
from .fit import Design, FitResult


@dataclass(frozen=True)
class Miss:
    which: str  # "fit" or "test"
    label: str  # database, run and PE
    config: str  # what varies between the samples' configurations, as k=v
    predicted: float
    measured: float
    runs: tuple[float, float, int] | None  # the configuration's repetitions: min, max, count

    @property
    def error(self) -> float:
        """Relative error of the prediction."""
        return self.predicted / self.measured - 1 if self.measured else float("inf")

    def to_json(self) -> dict:
        return {
            "set": self.which,
            "sample": self.label,
            "config": self.config,
            "predicted_s": self.predicted,
            "measured_s": self.measured,
            # null where the measured time rounds to zero beside the prediction (1e-300
            # s): the error is then past any number JSON holds
            "error_pct": 100 * self.error if math.isfinite(self.error) else None,
            "runs": None
            if self.runs is None
            else {"min_s": self.runs[0], "max_s": self.runs[1], "count": self.runs[2]},
        }


def _split(group: str) -> tuple[dict, str]:
    """A replicate group (`{config json} PE n`, or the JSON alone) as its configuration and
    the PE part."""
    head, sep, pe = group.rpartition(" PE ")
    text, suffix = (head, f"PE {pe}") if sep and pe.isdigit() else (group, "")
    try:
        config = json.loads(text)
    except ValueError:
        return {"config": text}, suffix
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(value)
        elif key != "program":
            flat[key] = value
    return flat, suffix


def describe(groups: list[str]) -> list[str]:
    """Each group as the values that vary between the groups (k=v, in the groups' key order),
    then its PE."""
    parsed = [_split(g) for g in groups]
    keys: list[str] = []
    for config, _ in parsed:
        keys.extend(k for k in config if k not in keys)
    varying = [k for k in keys if len({json.dumps(c.get(k)) for c, _ in parsed}) > 1]
    return [
        " ".join([*(f"{k}={c.get(k)}" for k in varying), pe]).strip() or "(one configuration)"
        for c, pe in parsed
    ]


def find(which: str, design: Design, result: FitResult, every: Design | None = None) -> list[Miss]:
    """Every sample of `design` with its prediction; `every` holds all repetitions (the
    design before Replicates picked one per configuration; None: `design` holds them all),
    for their spread."""
    predicted = result.predict(design)
    groups = design.groups or design.labels
    spread: dict[str, list[float]] = {}
    source = every if every is not None else design
    for g, t in zip(source.groups or source.labels, source.t):
        spread.setdefault(g, []).append(float(t))
    configs = describe(list(groups))
    out = []
    for label, group, config, p, t in zip(design.labels, groups, configs, predicted, design.t):
        runs = spread.get(group)
        out.append(
            Miss(
                which,
                label,
                config,
                float(p),
                float(t),
                (min(runs), max(runs), len(runs)) if runs else None,
            )
        )
    return out


def largest(misses: list[Miss], n: int) -> list[Miss]:
    """The n largest relative misses, largest first."""
    return sorted(misses, key=lambda m: -abs(m.error))[: max(n, 0)]


def worst_per_set(misses: list[Miss], n: int) -> list[tuple[str, list[Miss]]]:
    """The n largest misses of the test samples, then of the fit samples (sets with none
    left out)."""
    sets = [
        (which, largest([m for m in misses if m.which == which], n)) for which in ("test", "fit")
    ]
    return [(which, worst) for which, worst in sets if worst]


def format_lines(misses: list[Miss], n: int) -> list[str]:
    lines = []
    for which, worst in worst_per_set(misses, n):
        lines += [
            "",
            f"Largest misses ({which} samples): error, predicted / measured s, "
            "the configuration's repetitions, sample, configuration",
        ]
        for m in worst:
            runs = (
                f"runs {m.runs[0]:.4g}-{m.runs[1]:.4g} ({m.runs[2]})"
                if m.runs and m.runs[2] > 1
                else "one run"
            )
            lines.append(
                f"  {percent_of(m.error, '+.1f'):>9}  {m.predicted:.4g} / "
                f"{m.measured:.4g}  "
                f"{runs}  {m.label}  {m.config}"
            )
    return lines
