"""Loading the two sides of a gate comparison from profile databases.

A side is a selection of runs (database + `--where` conditions).  Runs are grouped into
benchmark configurations: program + params + npes + settings.  For each run the gate keeps
its run profile (mprof.profile: times and per-PE objects, for model costs) and its statistics
summed over PEs and objects per (module, statistic).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..db.store import Condition, ProfileDB, explain_no_match
from ..errors import MprofError
from ..model.runset import RunSet
from ..profile import RunProfile


@dataclass
class RunData:
    """One run as the gate compares it: the run profile (mprof.profile) and its statistics
    summed over PEs and objects per (module, statistic)."""

    profile: RunProfile
    stats: dict[tuple[str, str], float] = field(default_factory=dict)
    # access category -> measured CPU seconds summed over PEs (the profile's per-PE
    # `categories`); None: the run did not measure them
    categories: dict[str, float] | None = None

    def __post_init__(self):
        if not self.stats:
            self.stats = self.profile.stat_totals()

    @property
    def id(self) -> int | None:
        return self.profile.id

    def category_samples(self) -> dict[str, int] | None:
        """Access category -> samples its measured time rests on, summed over PEs; None when the
        profile does not say (runs whose category times come from stored documents)."""
        if not self.profile.has_categories:
            return None
        out: dict[str, int] = {}
        for pe in self.profile.pes:
            for row in pe.categories or []:
                out[row.access] = out.get(row.access, 0) + row.samples
        return out

    @property
    def program(self) -> str:
        return self.profile.program

    @property
    def npes(self) -> int:
        return self.profile.npes

    @property
    def params(self) -> dict:
        return self.profile.params

    @property
    def settings(self) -> dict:
        return self.profile.settings

    @property
    def elapsed_s(self) -> float:
        return float(self.profile.elapsed_s or 0.0)

    @property
    def fingerprint(self) -> str:
        return self.profile.fingerprint

    @property
    def config_key(self) -> str:
        return self.profile.config_key


@dataclass
class Side:
    name: str  # "baseline" or "candidate"
    database: Path
    where: list[Condition]
    runs: list[RunData] = field(default_factory=list)
    # what the side's fits read (mprof.model.runset): the profiles of `runs`, and the modules
    # the database records
    run_set: RunSet = field(default_factory=lambda: RunSet(()))

    @property
    def fingerprints(self) -> set[str]:
        return {r.fingerprint for r in self.runs}

    def by_config(self) -> dict[str, list[RunData]]:
        out: dict[str, list[RunData]] = {}
        for run in self.runs:
            out.setdefault(run.config_key, []).append(run)
        return out


def load_side(name: str, database: str | Path, where: Sequence[Condition] = ()) -> Side:
    path = Path(database)
    if not path.exists():
        raise MprofError(f"{name} database {path} does not exist")
    side = Side(name, path, list(where))
    side.run_set = RunSet.from_databases([path], where)
    side.runs = [RunData(p, categories=category_totals(p)) for p in side.run_set]
    if where and not side.runs:
        with ProfileDB(path, create=False) as db:
            explanation = explain_no_match(db.runs(), where)
        raise MprofError(
            f"the {name} selection ("
            + " ".join(f"{c.name}={c.value}" for c in where)
            + f") matches no run of {path}: {explanation}"
        )
    return side


BUSY = "(busy)"  # CPU time outside the idle loop, where a run has no category times


def category_totals(profile: RunProfile) -> dict[str, float] | None:
    """Access category -> CPU seconds summed over PEs (RunProfile.category_totals); None when
    no PE of the run measured category times."""
    return profile.category_totals() if profile.has_categories else None


def busy_time(profile: RunProfile) -> float | None:
    """CPU seconds outside the idle loop, summed over PEs; None without CPU times."""
    if any(pe.cpu_s is None for pe in profile.pes):
        return None
    return sum(pe.cpu_s - (pe.idle_cpu_s or 0.0) for pe in profile.pes)


def _fmt(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def config_labels(keys: Sequence[str]) -> dict[str, str]:
    """Short, readable, unique names of configurations: `program(npes=2,fibers=500,...)`,
    with only the settings that differ between the configurations."""
    decoded = {k: json.loads(k) for k in keys}
    varying: set[str] = set()
    all_settings: dict[str, set] = {}
    for d in decoded.values():
        for name, value in d["settings"].items():
            all_settings.setdefault(name, set()).add(json.dumps(value))
    for name, values in all_settings.items():
        present = sum(1 for d in decoded.values() if name in d["settings"])
        if len(values) > 1 or present != len(decoded):
            varying.add(name)
    labels = {}
    for key, d in decoded.items():
        parts = [f"npes={d['npes']}"]
        parts += [f"{k}={_fmt(v)}" for k, v in d["params"].items()]
        parts += [f"{k}={_fmt(v)}" for k, v in sorted(d["settings"].items()) if k in varying]
        labels[key] = f"{d['program']}({','.join(parts)})"
    return labels


@dataclass
class StatProperties:
    """What the interfaces say about the statistics of the compared modules."""

    measured: dict[str, set[str]] = field(default_factory=dict)  # module -> measured stats
    sources: dict[str, str] = field(default_factory=dict)  # module -> its .perf file
    warnings: list[str] = field(default_factory=list)

    def is_measured(self, module: str, stat: str) -> bool:
        return stat in self.measured.get(module, ())


def statistic_properties(
    modules,
    interfaces: Sequence[str | Path] = (),
    digests: Mapping[str, Iterable[str]] | None = None,
) -> StatProperties:
    """Find the interface (.perf) of each module: first among `interfaces` (files), then the
    text the runs recorded (`digests`: module -> the digests of the compared runs, from their
    profiles' `interfaces`) or the MODULE.perf in the folders of `interfaces` and on the
    interface search path (mprof.iface.registry.for_runs, which warns when the file found by
    name is not the runs' text).  Files given explicitly must be valid; a broken file on the
    search path is a warning."""
    from ..iface import load_interface, registry

    props = StatProperties()
    wanted = set(modules)
    dirs: list[Path] = []
    for item in interfaces:
        path = Path(item)
        if path.is_dir():
            dirs.append(path)
            continue
        if not path.is_file():
            raise MprofError(f"interface {path} does not exist")
        iface = load_interface(path)
        props.measured.setdefault(iface.name, {s.name for s in iface.statistics if s.measured})
        props.sources.setdefault(iface.name, str(path))
    for module in sorted(wanted - set(props.measured)):
        path, warnings = registry.for_runs(module, (digests or {}).get(module, ()), dirs)
        props.warnings.extend(warnings)
        if path is None:
            continue
        try:
            iface = load_interface(path)
        except MprofError as exc:
            if path.parent in dirs:
                raise
            props.warnings.append(
                f"interface of module {module} not used: {str(exc).splitlines()[0]}"
            )
            continue
        if iface.name == module:
            props.measured[module] = {s.name for s in iface.statistics if s.measured}
            props.sources[module] = str(path)
    return props
