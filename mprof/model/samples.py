"""From profile databases and performance interfaces to a fitting design (docs/fitting.md).

A sample is one PE of one run (granularity "pe": t is that PE's elapsed_s) or one run with its
PEs summed (granularity "run").  For every object of every module whose interface is loaded the
terms are evaluated with the interface's own expression evaluator (Term.evaluate via
Interface.term_values), and objects of the same module add up.  Modules without a loaded
interface contribute nothing and are reported once as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..db.store import Condition, ProfileDB
from ..errors import MprofError
from .fit import Design

GRANULARITIES = ("pe", "run")


@dataclass
class LoadedInterface:
    module: str
    path: str
    iface: object  # mprof.iface.Interface

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
    modules_seen: set[str] = field(default_factory=set)
    fingerprints: set[str] = field(default_factory=set)

    @property
    def n(self) -> int:
        return len(self.t)


def term_row(interfaces: Mapping[str, LoadedInterface], objects, missing: set[str],
             columns: Mapping[str, int], width: int) -> np.ndarray:
    row = np.zeros(width)
    for _oid, module, stats in objects:
        loaded = interfaces.get(module)
        if loaded is None:
            missing.add(module)
            continue
        # A statistic the program never set is zero (profiles may omit untouched counters).
        record = dict.fromkeys(loaded.statistic_names, 0.0)
        record.update(stats)
        for term, value in loaded.iface.term_values(record).items():
            row[columns[f"{module}:{term}"]] += value
    return row


def load_samples(databases: Sequence[str | Path], interfaces: Mapping[str, LoadedInterface],
                 granularity: str = "pe", select: Sequence[Condition] = (),
                 warnings: list[str] | None = None) -> SampleSet:
    if granularity not in GRANULARITIES:
        raise MprofError(f"granularity must be one of {', '.join(GRANULARITIES)}")
    warnings = warnings if warnings is not None else []
    names = [f"{m}:{term}" for m, li in interfaces.items() for term in li.term_names]
    columns = {name: i for i, name in enumerate(names)}
    rows, times, labels = [], [], []
    missing: set[str] = set()
    seen: set[str] = set()
    fingerprints: set[str] = set()
    for db_path in databases:
        with ProfileDB(db_path, create=False) as db:
            runs = db.runs(select)
            ids = [r.id for r in runs]
            pes = db.pe_samples(ids)
            objects = db.object_stats(ids)
        tag = Path(db_path).name
        for run in runs:
            fingerprints.add(run.machine_fingerprint or "")
            per_pe = objects.get(run.id, {})
            for pe_objs in per_pe.values():
                seen.update(module for _, module, _ in pe_objs)
            pe_rows = [term_row(interfaces, per_pe.get(pe, []), missing, columns, len(names))
                       for pe in range(run.npes)]
            pe_times = [elapsed for elapsed, _idle in pes.get(run.id, [])]
            if granularity == "pe":
                rows.extend(pe_rows)
                times.extend(pe_times)
                labels.extend(f"{tag} run {run.id} PE {pe}" for pe in range(run.npes))
            else:
                rows.append(np.sum(pe_rows, axis=0))
                times.append(float(sum(pe_times)))
                labels.append(f"{tag} run {run.id}")
    for module in sorted(missing):
        warnings.append(f"module '{module}' has no loaded interface; its objects are ignored")
    if len(fingerprints) > 1:
        warnings.append(f"the samples come from {len(fingerprints)} different machines "
                        "(machine fingerprints differ)")
    F = np.array(rows, dtype=float).reshape(len(rows), len(names))
    return SampleSet(names, F, np.array(times, dtype=float), labels, seen, fingerprints)


def make_design(samples: SampleSet, imported: Mapping[str, float],
                ignored: set[str]) -> Design:
    """Fitted columns keep their order; imported columns move to the right-hand side as an
    offset (t - sum c_imp f); ignored columns are dropped."""
    fitted = [i for i, name in enumerate(samples.names)
              if name not in imported and name not in ignored]
    offset = np.zeros(samples.n)
    for i, name in enumerate(samples.names):
        if name in imported and name not in ignored:
            offset += imported[name] * samples.F[:, i]
    return Design(
        names=[samples.names[i] for i in fitted],
        A=samples.F[:, fitted],
        t=samples.t,
        offset=offset,
        labels=samples.labels,
    )
