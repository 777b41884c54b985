"""A run set: the runs a fit reads, as run profiles (mprof.profile) selected from one or more
profile databases.

A modelling script names databases (`FitDatabase`, `TestDatabase`); a caller that already has
runs in memory (the gate, which leaves some out of its fits) hands the session a run set
instead, so nobody copies a database to change what a fit sees.  Selecting from a run set
(`where`, `without`) happens in memory and keeps the order of the runs (their database ids).

A run set also keeps the modules recorded in the databases it was drawn from: a script without
`Interface` directives fits every one of them that has an interface, whatever `Select` keeps,
so a selection leaves the fit's columns as the whole databases give them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..db.store import Condition, ProfileDB
from ..profile import RunProfile, load_profiles


@dataclass(frozen=True)
class RunSet:
    runs: tuple[RunProfile, ...]
    sources: tuple[str, ...] = ()  # the databases the runs come from, in order
    modules: frozenset[str] = frozenset()  # every module those databases record

    @classmethod
    def from_databases(
        cls, databases: Iterable[str | Path], where: Sequence[Condition] = ()
    ) -> RunSet:
        """The runs of the databases that match every condition, database by database."""
        paths = list(databases)
        runs: list[RunProfile] = []
        for path in paths:
            runs.extend(load_profiles(path, where))
        return cls(tuple(runs), tuple(str(p) for p in paths), database_modules(paths))

    def where(self, conditions: Sequence[Condition]) -> RunSet:
        """The runs that match every condition (Condition.matches: program, npes, params and
        settings), as the databases select them."""
        if not conditions:
            return self
        keep = tuple(r for r in self.runs if all(c.matches(r) for c in conditions))
        return RunSet(keep, self.sources, self.modules)

    def without(self, runs: Iterable[RunProfile]) -> RunSet:
        """The set less the given runs (the same objects)."""
        drop = {id(r) for r in runs}
        return RunSet(tuple(r for r in self.runs if id(r) not in drop), self.sources, self.modules)

    def interface_digests(self) -> dict[str, set[str]]:
        """module -> the digests of its interface text that the runs recorded (RunProfile
        .interfaces; runs recorded before profiles carried them add none)."""
        out: dict[str, set[str]] = {}
        for run in self.runs:
            for module, digest in run.interfaces.items():
                out.setdefault(module, set()).add(digest)
        return out

    def __iter__(self) -> Iterator[RunProfile]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)


def database_modules(databases: Iterable[str | Path]) -> frozenset[str]:
    """Every module with statistics records in the databases."""
    modules: set[str] = set()
    for path in databases:
        with ProfileDB(path, create=False) as db:
            modules.update(
                r[0] for r in db.conn.execute("SELECT DISTINCT module FROM object_stats")
            )
    return frozenset(modules)


def database_interface_digests(databases: Iterable[str | Path]) -> dict[str, set[str]]:
    """module -> the digests of its interface text that the databases' runs recorded, read
    from their run_interfaces tables (without loading the runs)."""
    out: dict[str, set[str]] = {}
    for path in databases:
        with ProfileDB(path, create=False) as db:
            for per_run in db.run_interfaces([r.id for r in db.runs()]).values():
                for module, digest in per_run.items():
                    out.setdefault(module, set()).add(digest)
    return out


__all__ = ["RunSet", "database_interface_digests", "database_modules"]
