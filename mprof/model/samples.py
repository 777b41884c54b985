"""From profile databases and performance interfaces to a fitting design (docs/fitting.md).

A sample is one PE of one run (granularity "pe": t is that PE's time by the session's measure,
mprof.profile) or one run with its PEs summed (granularity "run").  For every object of every
module whose interface is loaded the terms are evaluated by the one term evaluator that pricing
uses too (mprof.model.terms: a PAPI statistic a run could not count makes the terms that need it
absent, any other statistic a record lacks is 0), and objects of the same module add up.
Modules without a loaded interface contribute nothing and are reported once as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..db.store import Condition
from ..errors import MprofError
from ..profile import DEFAULT_MEASURE, MEASURES, fallback_measure
from .fit import Design, replicate_groups
from .pricing import known_cost
from .runset import RunSet
from .filecheck import GRANULARITIES
from .terms import TermEvaluator


@dataclass
class LoadedInterface:
    module: str
    path: str
    iface: object  # mprof.iface.Interface
    source: str | None = None  # the interface's text, which model files carry

    @property
    def term_names(self) -> list[str]:
        return [term.name for term in self.iface.terms]

    @property
    def statistic_names(self) -> list[str]:
        return [stat.name for stat in self.iface.statistics]


@dataclass
class SampleSet:
    """All term values of all loaded modules, before imports and ignores are applied."""

    names: list[str]  # "module:term", every term of every loaded interface
    F: np.ndarray  # n x K
    t: np.ndarray
    labels: list[str]
    groups: list[str] = field(default_factory=list)  # replicates share a group (config + PE)
    modules_seen: set[str] = field(default_factory=set)
    fingerprints: set[str] = field(default_factory=set)
    measure: str = DEFAULT_MEASURE  # what t is
    # "module:term" -> why the term cannot be fitted: it needs a statistic bound to a PAPI
    # event that some runs could not count (absent from their profiles, docs/papi.md)
    absent_terms: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.t)

    def representatives(self, how: str) -> SampleSet:
        """One sample per replicate group, with its own term values: the run whose time is the
        group's median (the lower median of an even count) or its minimum.

        A shared machine slows whole runs down now and then, by up to 2-4x for tens of seconds
        on the 2-core VM this was built on, and never speeds one up: interference only adds
        time.  Least squares over every run chases the slow ones.  The median sheds a slow
        spell that hits fewer than half of a configuration's runs; the minimum sheds any that
        leaves one run untouched, which is why benchmark harnesses time deterministic code by
        its fastest run (Chen and Revels, "Robust benchmarking in noisy environments", 2016)."""
        groups = replicate_groups(self.groups)
        if groups is None:  # no sample has a replicate
            return self
        pick = {"median": lambda ix: (len(ix) - 1) // 2, "min": lambda ix: 0}[how]
        keep = sorted(sorted(ix, key=lambda i: self.t[i])[pick(ix)] for ix in groups)
        return replace(
            self,
            F=self.F[keep],
            t=self.t[keep],
            labels=[self.labels[i] for i in keep],
            groups=[self.groups[i] for i in keep],
        )


def load_samples(
    source: RunSet | Sequence[str | Path],
    interfaces: Mapping[str, LoadedInterface],
    granularity: str = "pe",
    select: Sequence[Condition] = (),
    warnings: list[str] | None = None,
    measure: str | None = DEFAULT_MEASURE,
) -> SampleSet:
    """One sample per PE of every run of `source` (a run set, or database paths) that `select`
    keeps (granularity "pe"), or per run (PEs summed); its time is the PE's (the run's) time by
    `measure` (mprof.profile).  With measure None, the default measure is used where every run
    has it, else elapsed time with a warning (databases of schema version 1 profiles)."""
    if granularity not in GRANULARITIES:
        raise MprofError(f"granularity must be one of {', '.join(GRANULARITIES)}")
    if measure is not None and measure not in MEASURES:
        raise MprofError(f"measure must be one of {', '.join(MEASURES)}")
    warnings = warnings if warnings is not None else []
    if isinstance(source, RunSet):
        run_set = source.where(select)
    else:
        run_set = RunSet.from_databases(source, select)
    runs = [(Path(run.source).name, run) for run in run_set]
    if measure is None:
        measure = fallback_measure(pe for _, run in runs for pe in run.pes)
        if measure != DEFAULT_MEASURE:
            warnings.append(
                "some runs have no CPU times (run profiles of schema version 1): "
                "samples are elapsed times (`Measure elapsed`)"
            )
    evaluator = TermEvaluator({m: li.iface for m, li in interfaces.items()})
    names = evaluator.names
    rows, times, labels, groups = [], [], [], []
    missing: set[str] = set()
    absent: dict[str, str] = {}
    seen: set[str] = set()
    fingerprints: set[str] = set()
    for tag, run in runs:
        fingerprints.add(run.fingerprint)
        try:
            pe_times = [pe.time(measure) for pe in run.pes]
        except MprofError as exc:
            raise MprofError(f"{tag} run {run.id}: {exc}") from None
        seen.update(obj.module for pe in run.pes for obj in pe.objects)
        terms = evaluator.matrix([pe.objects for pe in run.pes], missing)
        for term, why in terms.absent.items():
            absent.setdefault(term, f"{why}: the term is ignored")
        pe_rows = list(terms.values)
        if granularity == "pe":
            rows.extend(pe_rows)
            times.extend(pe_times)
            labels.extend(f"{tag} run {run.id} PE {pe.pe}" for pe in run.pes)
            groups.extend(f"{run.config_key} PE {pe.pe}" for pe in run.pes)
        else:
            rows.append(np.sum(pe_rows, axis=0))
            times.append(float(sum(pe_times)))
            labels.append(f"{tag} run {run.id}")
            groups.append(run.config_key)
    for module in sorted(missing):
        warnings.append(f"module '{module}' has no loaded interface; its objects are ignored")
    if len(fingerprints) > 1:
        warnings.append(
            f"the samples come from {len(fingerprints)} different machines "
            "(machine fingerprints differ)"
        )
    F = np.array(rows, dtype=float).reshape(len(rows), len(names))
    return SampleSet(
        names, F, np.array(times, dtype=float), labels, groups, seen, fingerprints, measure, absent
    )


def make_design(
    samples: SampleSet,
    imported: Mapping[str, float],
    ignored: set[str],
    imported_cov: np.ndarray | None = None,
) -> Design:
    """Fitted columns keep their order; imported columns move to the right-hand side as an
    offset (t - sum c_imp f) and keep their values (B) for the propagation of their covariance
    (`imported_cov`, in the order of `imported`); ignored columns are dropped."""
    fitted = [
        i for i, name in enumerate(samples.names) if name not in imported and name not in ignored
    ]
    names_imp = [name for name in imported if name not in ignored]
    column = {name: i for i, name in enumerate(samples.names)}
    B = samples.F[:, [column[name] for name in names_imp]]
    values = np.array([imported[name] for name in names_imp], dtype=float)
    if imported_cov is None:
        imported_cov = np.zeros((len(names_imp), len(names_imp)))
    else:
        keep = [i for i, name in enumerate(imported) if name not in ignored]
        imported_cov = np.asarray(imported_cov, dtype=float)[np.ix_(keep, keep)]
    return Design(
        names=[samples.names[i] for i in fitted],
        A=samples.F[:, fitted],
        t=samples.t,
        offset=known_cost(B, values),
        labels=samples.labels,
        groups=samples.groups,
        imported=names_imp,
        B=B,
        imported_values=values,
        imported_cov=imported_cov,
    )
