"""The run profile as the stages after the database see it: one data type for model, report
and gate (docs/run-profile.md describes the JSON it is read from).

A `RunProfile` is one run: its configuration (program, PEs, params, settings), its machine, and
per PE the measured times and the statistics records of every object.  It is built from a
profile document (`RunProfile.from_document`) or from a profile database
(`load_profiles`), so a report of a JSON file and a fit over a database read the same fields
the same way.

What a sample's time is, is the *measure* (`PEProfile.time`):

    elapsed  wall time from the PE's start to the end of the run (the dissertation's choice)
    cpu      the PE thread's CPU time: what the PE computed, spinning in its idle loop
             included, without the time it was preempted or asleep

`cpu` is the default of fits (docs/fitting.md explains the evidence).

Runs recorded since the runtime samples its CPU clocks also carry, per PE, the measured CPU
time per access category (`PEProfile.categories`, `RunProfile.category_totals()`); older runs
have None there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MprofError

MEASURES = ("elapsed", "cpu")
DEFAULT_MEASURE = "cpu"


@dataclass
class ObjectRecord:
    id: int
    module: str
    stats: dict[str, float]


@dataclass(frozen=True)
class CategoryTime:
    """A PE's measured CPU time in one access category, and how many CPU-clock samples it
    rests on.  Besides the access categories of the run (`unclassified` included) there are
    SCHEDULER (runtime code between fibers: polls, flushes) and IDLE (the idle loop)."""

    access: str
    cpu_s: float
    samples: int


SCHEDULER, IDLE = "(scheduler)", "(idle)"
NOT_SAMPLED = "(not sampled)"  # CPU time of PEs that took no sample


@dataclass
class PEProfile:
    pe: int
    elapsed_s: float
    idle_s: float
    cpu_s: float | None = None  # None: recorded by a runtime that did not measure it
    idle_cpu_s: float | None = None
    objects: list[ObjectRecord] = field(default_factory=list)
    # measured CPU time per access category, largest first; None: the runtime that recorded
    # the run did not measure it
    categories: list[CategoryTime] | None = None

    def time(self, measure: str) -> float:
        """The PE's time by `measure` (seconds)."""
        if measure == "elapsed":
            return self.elapsed_s
        if measure == "cpu":
            if self.cpu_s is None:
                raise MprofError("the run has no CPU times (recorded from a run profile of "
                                 "schema version 1); use `Measure elapsed` or record it again")
            return self.cpu_s
        raise MprofError(f"unknown measure '{measure}' (known: {', '.join(MEASURES)})")

    def idle_time(self, measure: str) -> float:
        """The part of `time(measure)` the PE spent in its idle loop."""
        if measure == "cpu":
            return self.idle_cpu_s if self.idle_cpu_s is not None else 0.0
        return self.idle_s


@dataclass
class RunProfile:
    program: str
    npes: int
    params: dict
    settings: dict
    pes: list[PEProfile]
    fingerprint: str = ""
    elapsed_s: float | None = None  # the run's wall time (the slowest PE)
    id: int | None = None  # run id in its database
    source: str = ""  # file or database it came from
    argv: list[str] = field(default_factory=list)
    document: Mapping | None = None  # the JSON document, when read from one
    # module -> digest of the interface (.perf text) the program was built with, from the
    # profile's `interfaces` (mprof.iface.registry.find_by_digest finds that file); empty for
    # runs recorded before profiles carried them
    interfaces: dict[str, str] = field(default_factory=dict)

    def time(self, measure: str) -> float:
        """The run's time by `measure`, summed over PEs (the dissertation sums over PEs)."""
        return sum(pe.time(measure) for pe in self.pes)

    @property
    def has_categories(self) -> bool:
        """Whether the run measured CPU time per access category: some PE carries it (a PE
        that took no sample, with less CPU time than a sampling period, has none)."""
        return any(pe.categories is not None for pe in self.pes)

    def category_totals(self) -> dict[str, float]:
        """Access category -> measured CPU seconds summed over PEs (empty without them); in a
        run that measured them, the CPU time of PEs without samples as NOT_SAMPLED."""
        totals: dict[str, float] = {}
        for pe in self.pes:
            for row in pe.categories or []:
                totals[row.access] = totals.get(row.access, 0.0) + row.cpu_s
        if self.has_categories:
            rest = sum(pe.cpu_s or 0.0 for pe in self.pes if pe.categories is None)
            if rest > 0:
                totals[NOT_SAMPLED] = totals.get(NOT_SAMPLED, 0.0) + rest
        return totals

    def stat_totals(self) -> dict[tuple[str, str], float]:
        """(module, statistic) -> value summed over PEs and objects (integers stay exact, also
        u64 counters near 2^64)."""
        totals: dict[tuple[str, str], float] = {}
        for pe in self.pes:
            for obj in pe.objects:
                for stat, value in obj.stats.items():
                    totals[(obj.module, stat)] = totals.get((obj.module, stat), 0) + value
        return totals

    @property
    def config_key(self) -> str:
        """The benchmark configuration: runs with equal keys are repetitions of each other."""
        return json.dumps({"program": self.program, "npes": self.npes, "params": self.params,
                           "settings": self.settings}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_document(cls, doc: Mapping, source: str = "<run>") -> RunProfile:
        """From a validated run profile document (mprof.db.validate)."""
        pes = []
        for p in sorted(doc["pes"], key=lambda p: p["pe"]):
            pes.append(PEProfile(
                int(p["pe"]), float(p["elapsed_s"]), float(p.get("idle_s", 0.0)),
                _opt_float(p.get("cpu_s")), _opt_float(p.get("idle_cpu_s")),
                [ObjectRecord(int(o["id"]), str(o["module"]), dict(o.get("stats", {})))
                 for o in p.get("objects", [])],
                _categories(p.get("categories"))))
        machine = doc.get("machine", {})
        return cls(program=str(doc.get("program", "")), npes=int(doc.get("npes", len(pes))),
                   params=dict(doc.get("params", {})), settings=dict(doc.get("settings", {})),
                   pes=pes, fingerprint=str(machine.get("fingerprint", "")),
                   elapsed_s=_opt_float(doc.get("elapsed_s")), source=source,
                   argv=list(doc.get("argv", [])), document=doc,
                   interfaces={str(i["name"]): str(i["digest"])
                               for i in doc.get("interfaces", [])})


def _opt_float(value) -> float | None:
    return None if value is None else float(value)


def _categories(rows) -> list[CategoryTime] | None:
    if rows is None:
        return None
    out = [CategoryTime(str(r["access"]), float(r["cpu_s"]), int(r["samples"])) for r in rows]
    return sorted(out, key=lambda r: (-r.cpu_s, r.access))


def load_profiles(database: str | Path, where: Sequence = ()) -> list[RunProfile]:
    """Every run of a profile database matching the conditions (mprof.db.store.Condition)."""
    from .db.store import ProfileDB

    with ProfileDB(database, create=False) as db:
        runs = db.runs(where)
        ids = [r.id for r in runs]
        times = db.pe_samples(ids)
        objects = db.object_stats(ids)
        categories = db.category_times(ids)
    out = []
    for run in runs:
        per_pe = objects.get(run.id, {})
        pes = []
        for pe, t in enumerate(times.get(run.id, [])):
            records = [ObjectRecord(oid, module, stats) for oid, module, stats in
                       per_pe.get(pe, [])]
            pes.append(PEProfile(pe, t.elapsed_s, t.idle_s, t.cpu_s, t.idle_cpu_s, records,
                                 categories.get(run.id, {}).get(pe)))
        out.append(RunProfile(program=run.program, npes=run.npes, params=dict(run.params),
                              settings=dict(run.settings), pes=pes,
                              fingerprint=run.machine_fingerprint or "",
                              elapsed_s=run.elapsed_s, id=run.id, source=str(database)))
    return out
