"""Term values of statistics records: the one evaluation of interfaces' terms, for the fit
(samples.py) and for pricing (Model.term_matrix, Model.price).

A statistics record (one object of one PE: `module` and `stats`) gives every term of its
module's interface a value.  A statistic the record lacks is read as follows, the same way
everywhere:

* bound to a PAPI event (`papi EVENT`, docs/papi.md): it is *absent*, not zero -- the run could
  not count it -- so every term that needs it (directly or through other terms) cannot be
  evaluated: its value is NaN and the term is listed in `TermMatrix.absent` with the reason.
  The fit leaves such a term out; pricing refuses to price a term the model has a parameter
  for (Model.term_matrix), since a cost without it would be silently too low;
* any other statistic is 0: profiles may leave out counters the program never touched, and a
  run recorded with another version of the interface lacks the new ones (pricing warns about
  those, `lacking_statistics`).

Term values of records add up: a row of a TermMatrix is a sample (a PE, a run, an object...),
the sum of its records' terms, in the records' order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..iface.expr import STATISTIC


@dataclass
class TermMatrix:
    """Term values of samples: one row per sample, one column per parameter (`module:term`)."""

    names: list[str]
    values: np.ndarray  # rows x names; NaN where a term needs an absent statistic
    # parameter -> why it cannot be evaluated in some row (a PAPI statistic absent there)
    absent: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=float)
        if self.values.ndim != 2:  # one sample as a vector
            self.values = self.values.reshape(1, len(self.names))
        self._column = {name: i for i, name in enumerate(self.names)}

    @property
    def rows(self) -> int:
        return self.values.shape[0]

    def columns(self, names: Sequence[str]) -> np.ndarray:
        """rows x len(names): the values of those parameters, 0 for one the matrix lacks."""
        out = np.zeros((self.rows, len(names)))
        for j, name in enumerate(names):
            i = self._column.get(name)
            if i is not None:
                out[:, j] = self.values[:, i]
        return out

    def restrict(self, names: Sequence[str]) -> TermMatrix:
        """The same rows with only `names` as columns (0 where the matrix lacks one)."""
        return TermMatrix(
            list(names),
            self.columns(names),
            {n: why for n, why in self.absent.items() if n in names},
        )

    def sum_rows(self, groups: Iterable[Sequence[int]]) -> TermMatrix:
        """One row per group of rows, their sum (added in the group's order, like the samples'
        records: the same numbers in the same order give the same doubles)."""
        rows = [
            self.values[list(group)].sum(axis=0) if len(group) else np.zeros(len(self.names))
            for group in groups
        ]
        return TermMatrix(list(self.names), _stack(rows, len(self.names)), dict(self.absent))

    def row(self, i: int) -> dict[str, float]:
        return dict(zip(self.names, (float(v) for v in self.values[i])))

    @classmethod
    def of(cls, terms: Mapping[str, float]) -> TermMatrix:
        """One sample from a mapping parameter -> term value."""
        return cls(list(terms), np.array([list(terms.values())], dtype=float))


def _stack(rows: list[np.ndarray], width: int) -> np.ndarray:
    """Rows of `width` values as a matrix, also with no rows or no columns."""
    out = np.zeros((len(rows), width))
    for i, row in enumerate(rows):
        out[i] = row
    return out


def term_statistics(iface) -> dict[str, set[str]]:
    """term name -> the statistics its value depends on (through other terms too)."""
    out = {}
    for term in iface.terms:
        out[term.name] = {
            ref.name
            for dep in (term.plan or [term])
            for ref in dep.expr.refs()
            if ref.kind == STATISTIC
        }
    return out


class TermEvaluator:
    """Evaluates the terms of some modules' interfaces (module -> mprof.iface.Interface) for
    statistics records, with the policy above."""

    def __init__(self, interfaces: Mapping[str, object]):
        self.interfaces = dict(interfaces)
        self.names = [f"{m}:{t.name}" for m, iface in self.interfaces.items() for t in iface.terms]
        self._column = {name: i for i, name in enumerate(self.names)}
        self._papi = {
            m: {s.name: s.papi_event for s in iface.statistics if s.papi_event}
            for m, iface in self.interfaces.items()
        }
        self._needs = {m: term_statistics(iface) for m, iface in self.interfaces.items()}

    def record(
        self, module: str, stats: Mapping[str, float]
    ) -> tuple[dict[str, float], dict[str, str]]:
        """(term -> value, term -> why it cannot be evaluated) for one record of `module`."""
        iface = self.interfaces[module]
        gone = {name for name in self._papi[module] if name not in stats}
        record = dict.fromkeys((s.name for s in iface.statistics), 0.0)
        record.update(stats)
        values = iface.term_values(record)
        absent = {}
        if gone:
            for term, needs in self._needs[module].items():
                needed = sorted(needs & gone)
                if needed:
                    values[term] = float("nan")
                    absent[term] = (
                        f"term {module}:{term} needs statistic {module}::"
                        f"{needed[0]} (PAPI event {self._papi[module][needed[0]]}), "
                        "which some runs could not count (absent from their "
                        "profiles, not zero)"
                    )
        return values, absent

    def matrix(self, samples: Iterable[Iterable], missing: set[str] | None = None) -> TermMatrix:
        """One row per sample, each the sum of its records' term values (records are anything
        with `module` and `stats`, e.g. mprof.profile.ObjectRecord).  Records of a module
        without an interface add nothing; their modules go into `missing`."""
        rows = []
        absent: dict[str, str] = {}
        for records in samples:
            row = np.zeros(len(self.names))
            for obj in records:
                if obj.module not in self.interfaces:
                    if missing is not None:
                        missing.add(obj.module)
                    continue
                values, gone = self.record(obj.module, obj.stats)
                for term, value in values.items():
                    row[self._column[f"{obj.module}:{term}"]] += value
                for term, why in gone.items():
                    absent.setdefault(f"{obj.module}:{term}", why)
            rows.append(row)
        return TermMatrix(list(self.names), _stack(rows, len(self.names)), absent)


def lacking_statistics(interfaces: Mapping[str, object], records: Iterable) -> dict[str, list[str]]:
    """Module -> statistics of its interface that some record lacks and that are not bound to a
    PAPI event (those are absent, above): read as 0, which a caller pricing a run says.  Each
    module's list names the statistics some term uses first, then the others, each by name."""
    lacking: dict[str, set[str]] = {}
    priced: dict[str, set[str]] = {}
    for obj in records:
        iface = interfaces.get(obj.module)
        if iface is None:
            continue
        names = [s.name for s in iface.statistics if not s.papi_event and s.name not in obj.stats]
        if names:
            lacking.setdefault(obj.module, set()).update(names)
            if obj.module not in priced:
                priced[obj.module] = {ref.name for t in iface.terms for ref in t.expr.refs()}
    # those a term prices first: a warning that shows a few names shows the ones that matter
    return {
        m: sorted(names, key=lambda n: (n not in priced[m], n))
        for m, names in sorted(lacking.items())
    }
