"""The run profile as the stages after the database see it: one data type for model, report
and gate (docs/run-profile.md describes the JSON it is read from).

A `RunProfile` is one run, everything its profile holds: its configuration (program, argv,
PEs, params, settings), its machine, the access categories it declared, what `mprof bench`
measured around it, and per PE the measured times, the statistics records of every object
(with the statistics that could not be counted), the latency rows and the CPU time per access
category.  It is built from a profile document (`RunProfile.from_document`) or from the tables
of a profile database (`load_profiles`), so a report of a JSON file and a fit over a database
read the same fields the same way; `to_document` writes the document back.

What a sample's time is, is the *measure* (`RunProfile.time`, `PEProfile.time`):

    elapsed  wall time from the PE's start to the end of the run (the dissertation's choice)
    cpu      the PE thread's CPU time: what the PE computed, spinning in its idle loop
             included, without the time it was preempted or asleep

`cpu` is the default of fits (docs/fitting.md explains the evidence); runs of schema version 1
have no CPU times, and where a measure is not named, their time is elapsed time
(`fallback_measure`).

Runs recorded since the runtime samples its CPU clocks also carry, per PE, the measured CPU
time per access category (`PEProfile.categories`, `RunProfile.category_totals()`); older runs
have None there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
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
    # statistic -> why it could not be counted (a PAPI event, docs/papi.md); not in stats
    absent: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LatencyRow:
    """One synchronization event `enabler -> access` on one PE (`pe` None: already summed over
    PEs) with the idle time it accounted for (docs/run-profile.md, `latency`)."""

    access: str
    enabler: str
    count: int = 0
    observed_s: float = 0.0
    critical_s: float = 0.0
    pe: int | None = None

    def value(self, metric: str) -> float:
        return self.observed_s if metric == "observed" else self.critical_s


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
    latency: list[LatencyRow] = field(default_factory=list)

    def time(self, measure: str) -> float:
        """The PE's time by `measure` (seconds): with "elapsed" its wall time from its start
        to the end of the run."""
        if measure == "elapsed":
            return self.elapsed_s
        if measure == "cpu":
            if self.cpu_s is None:
                raise MprofError(
                    "the run has no CPU times (recorded from a run profile of "
                    "schema version 1); measure elapsed time instead "
                    "(`--measure elapsed`, or `Measure elapsed` in a modeling "
                    "script) or record it again"
                )
            return self.cpu_s
        raise MprofError(f"unknown measure '{measure}' (known: {', '.join(MEASURES)})")

    def idle_time(self, measure: str) -> float:
        """The part of `time(measure)` the PE spent in its idle loop."""
        if measure == "cpu":
            return self.idle_cpu_s if self.idle_cpu_s is not None else 0.0
        return self.idle_s


def fallback_measure(pes: Iterable[PEProfile], measure: str | None = None) -> str:
    """The measure times are taken by: `measure` (None: the default, cpu), except that cpu
    falls back to elapsed where some PE of `pes` did not record CPU time (schema version 1).
    The callers that must not fall back (a fit told `Measure cpu`) call `time("cpu")`, which
    then raises."""
    measure = DEFAULT_MEASURE if measure is None else measure
    if measure == "cpu" and any(pe.cpu_s is None for pe in pes):
        return "elapsed"
    return measure


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
    # module -> digest of the interface (.perf text) the program was built with, from the
    # profile's `interfaces` (mprof.iface.registry.find_by_digest finds that file); empty for
    # runs recorded before profiles carried them
    interfaces: dict[str, str] = field(default_factory=dict)
    accesses: list[str] = field(default_factory=list)  # declared access categories, in order
    backend: str | None = None
    started_at: str | None = None
    # the host: hostname, cpu, cores, fingerprint (as the document's `machine`)
    machine: dict = field(default_factory=dict)
    bench: dict = field(default_factory=dict)  # what `mprof bench` measured around the run
    schema_version: int = 2

    def time(self, measure: str | None, *, wall: bool = False) -> float:
        """The run's time by `measure` (seconds): the one definition of "a run's time".

        `measure` "cpu" is the PEs' CPU time summed over PEs; "elapsed" is each PE's wall
        time from its start to the end of the run, summed over PEs (the dissertation sums
        over PEs: the cost models price per PE).  None: cpu, falling back to elapsed where
        some PE did not record CPU time (`fallback_measure`).

        "elapsed" is not the run's wall time `elapsed_s` (that of its slowest PE, about a
        PE's elapsed time, not their sum).  With `wall`, an elapsed time (named, or fallen
        back to) is that wall time instead: what the gate's `::time` units compare, runs
        against runs rather than PEs against a model; there cpu falls back to it too."""
        if measure is None or wall:
            measure = fallback_measure(self.pes, measure)
        if wall and measure == "elapsed":
            return float(self.elapsed_s or 0.0)
        return sum(pe.time(measure) for pe in self.pes)

    def idle_time(self, measure: str | None) -> float:
        """The part of `time(measure)` the PEs spent in their idle loops, summed over PEs."""
        measure = fallback_measure(self.pes) if measure is None else measure
        return sum(pe.idle_time(measure) for pe in self.pes)

    @property
    def latency(self) -> list[LatencyRow]:
        """The latency rows of every PE, in PE order, each tagged with its PE."""
        return [row for pe in self.pes for row in pe.latency]

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
        return json.dumps(
            {
                "program": self.program,
                "npes": self.npes,
                "params": self.params,
                "settings": self.settings,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_document(cls, doc: Mapping, source: str = "<run>") -> RunProfile:
        """From a validated run profile document (mprof.db.validate)."""
        pes = []
        for p in sorted(doc["pes"], key=lambda p: p["pe"]):
            pe = int(p["pe"])
            pes.append(
                PEProfile(
                    pe,
                    float(p["elapsed_s"]),
                    float(p.get("idle_s", 0.0)),
                    _opt_float(p.get("cpu_s")),
                    _opt_float(p.get("idle_cpu_s")),
                    [
                        ObjectRecord(
                            int(o["id"]),
                            str(o["module"]),
                            dict(o.get("stats", {})),
                            dict(o.get("absent", {})),
                        )
                        for o in p.get("objects", [])
                    ],
                    _categories(p.get("categories")),
                    [
                        LatencyRow(
                            str(r["access"]),
                            str(r["enabler"]),
                            int(r.get("count", 0)),
                            float(r.get("observed_s", 0.0)),
                            float(r.get("critical_s", 0.0)),
                            pe,
                        )
                        for r in p.get("latency", [])
                    ],
                )
            )
        machine = dict(doc.get("machine", {}))
        return cls(
            program=str(doc.get("program", "")),
            npes=int(doc.get("npes", len(pes))),
            params=dict(doc.get("params", {})),
            settings=dict(doc.get("settings", {})),
            pes=pes,
            fingerprint=str(machine.get("fingerprint", "")),
            elapsed_s=_opt_float(doc.get("elapsed_s")),
            source=source,
            argv=list(doc.get("argv", [])),
            interfaces={str(i["name"]): str(i["digest"]) for i in doc.get("interfaces", [])},
            accesses=list(doc.get("accesses", [])),
            backend=doc.get("backend"),
            started_at=doc.get("started_at"),
            machine=machine,
            bench=dict(doc.get("bench", {})),
            schema_version=int(doc.get("schema_version", 2)),
        )

    def to_document(self) -> dict:
        """The run profile document of the run (docs/run-profile.md): what `from_document`
        reads, so that a run read from a database can be exported again.  Optional fields
        the run does not have are left out; category rows in the order stored."""
        doc: dict = {
            "schema": "mprof.run-profile",
            "schema_version": self.schema_version,
            "program": self.program,
        }
        if self.argv:
            doc["argv"] = list(self.argv)
        if self.backend is not None:
            doc["backend"] = self.backend
        doc["npes"] = self.npes
        if self.started_at is not None:
            doc["started_at"] = self.started_at
        if self.elapsed_s is not None:
            doc["elapsed_s"] = self.elapsed_s
        if self.machine:
            doc["machine"] = dict(self.machine)
        doc["settings"] = dict(self.settings)
        doc["params"] = dict(self.params)
        if self.accesses:
            doc["accesses"] = list(self.accesses)
        if self.bench:
            doc["bench"] = dict(self.bench)
        if self.interfaces:
            doc["interfaces"] = [{"name": k, "digest": v} for k, v in self.interfaces.items()]
        doc["pes"] = [_pe_document(pe) for pe in self.pes]
        return doc


def _pe_document(pe: PEProfile) -> dict:
    out: dict = {"pe": pe.pe, "elapsed_s": pe.elapsed_s, "idle_s": pe.idle_s}
    if pe.cpu_s is not None:
        out["cpu_s"] = pe.cpu_s
    if pe.idle_cpu_s is not None:
        out["idle_cpu_s"] = pe.idle_cpu_s
    out["objects"] = []
    for obj in pe.objects:
        record = {"id": obj.id, "module": obj.module, "stats": dict(obj.stats)}
        if obj.absent:
            record["absent"] = dict(obj.absent)
        out["objects"].append(record)
    out["latency"] = [
        {
            "access": r.access,
            "enabler": r.enabler,
            "count": r.count,
            "observed_s": r.observed_s,
            "critical_s": r.critical_s,
        }
        for r in pe.latency
    ]
    if pe.categories is not None:
        out["categories"] = [
            {"access": c.access, "cpu_s": c.cpu_s, "samples": c.samples} for c in pe.categories
        ]
    return out


def _opt_float(value) -> float | None:
    return None if value is None else float(value)


def _categories(rows) -> list[CategoryTime] | None:
    if rows is None:
        return None
    out = [CategoryTime(str(r["access"]), float(r["cpu_s"]), int(r["samples"])) for r in rows]
    return sorted(out, key=lambda r: (-r.cpu_s, r.access))


def load_profiles(
    database: str | Path, where: Sequence = (), run_ids: Sequence[int] | None = None
) -> list[RunProfile]:
    """Every run of a profile database matching the conditions (mprof.db.store.Condition), or
    the runs `run_ids`, read from the database's tables (mprof.db.store.ProfileDB.profiles):
    everything their profiles held, so that `to_document` gives back the imported document."""
    from .db.store import ProfileDB

    with ProfileDB(database, create=False) as db:
        return db.profiles(where, run_ids)
