"""History in other tools' formats: airspeed velocity's results folder and Bencher's JSON.

asv (https://asv.readthedocs.io, results layout version 2):

    DIR/benchmarks.json                          every series as an asv benchmark
    DIR/<machine>/machine.json                   the machine
    DIR/<machine>/<hash[:8]>-mprof.json          one results file per commit

A series becomes the benchmark `mprof.<series>` with every character outside letters, digits,
`_` and `.` replaced by `_` (asv uses the names in file paths); `pretty_name` keeps the series.
Seconds are `time` benchmarks, other series `track` ones.  The results folder is asv's
`results_dir`: `asv publish` draws it (with the project's repository as `repo`).

Bencher Metric Format (https://bencher.dev/docs/reference/bencher-metric-format/), one commit:

    {"<series>": {"<measure>": {"value": v, "lower_value": lo, "upper_value": hi}}}

The measure is the series' kind (`time`, `cost`, `bench`, ...); `bencher run --adapter json`
reads it."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from ..errors import MprofError
from ..files import make_folder, write_files
from .store import History, Point

ENV_NAME = "mprof"


def asv_name(series: str) -> str:
    return "mprof." + re.sub(r"[^A-Za-z0-9_.]", "_", series)


def _epoch_ms(date: str) -> int:
    try:
        return int(datetime.fromisoformat(date.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        raise MprofError(f"commit date '{date}' is not ISO 8601") from None


def write_asv(history: History, out: Path, machine: str | None = None) -> list[Path]:
    points = history.points(machine=machine)
    if not points:
        raise MprofError(
            f"{history.path}: nothing recorded" + (f" for machine {machine}" if machine else "")
        )
    names: dict[str, Point] = {}
    for p in points:
        other = names.setdefault(asv_name(p.m.series), p)
        if other.m.series != p.m.series:
            raise MprofError(
                f"series '{p.m.series}' and '{other.m.series}' have the same asv "
                f"name {asv_name(p.m.series)}"
            )
    benchmarks = {
        name: {
            "code": f"mprof history series {p.m.series}",
            "name": name,
            "pretty_name": p.m.series,
            "param_names": [],
            "params": [],
            "timeout": 60.0,
            "type": "time" if p.m.unit == "s" else "track",
            "unit": "seconds" if p.m.unit == "s" else (p.m.unit or "unit"),
            "version": "1",
        }
        for name, p in sorted(names.items())
    }
    benchmarks["version"] = 2
    files = [(out / "benchmarks.json", json.dumps(benchmarks, indent=1) + "\n")]
    by_file: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        by_file.setdefault((p.machine, p.commit), []).append(p)
    machines = sorted({m for m, _ in by_file})
    for mach in machines:
        files.append(
            (
                out / _safe_machine(mach) / "machine.json",
                json.dumps(
                    {
                        "machine": mach,
                        "os": "",
                        "arch": "",
                        "cpu": "",
                        "num_cpu": "",
                        "ram": "",
                        "version": 1,
                    },
                    indent=1,
                )
                + "\n",
            )
        )
    for (mach, commit), pts in sorted(by_file.items()):
        columns = [
            "result",
            "params",
            "version",
            "started_at",
            "duration",
            "stats_ci_99_a",
            "stats_ci_99_b",
        ]
        date = _epoch_ms(pts[0].date)
        results = {}
        for p in pts:
            row = [[p.m.value], [], "1", date, 0.0]
            if p.m.low is not None and p.m.high is not None:
                row += [[p.m.low], [p.m.high]]
            results[asv_name(p.m.series)] = row
        doc = {
            "commit_hash": commit,
            "env_name": ENV_NAME,
            "date": date,
            "params": {"machine": mach, "python": ""},
            "python": "",
            "requirements": {},
            "env_vars": {},
            "result_columns": columns,
            "results": results,
            "durations": {},
            "version": 2,
        }
        files.append(
            (out / _safe_machine(mach) / f"{commit[:8]}-{ENV_NAME}.json", json.dumps(doc) + "\n")
        )
    # every file as mprof writes files (mprof.files): atomically, never over an input, and
    # the folders first, each named when it cannot be made
    for folder in [out, *(out / _safe_machine(m) for m in machines)]:
        make_folder(folder, what="asv results folder")
    write_files(files, what="asv results")
    return [path for path, _ in files]


def _safe_machine(name: str) -> str:
    if not name or name in (".", "..") or "/" in name:
        raise MprofError(f"machine name '{name}' cannot be an asv folder name")
    return name


def bencher_json(history: History, commit: str | None = None, machine: str | None = None) -> dict:
    points = history.points(machine=machine)
    if not points:
        raise MprofError(
            f"{history.path}: nothing recorded" + (f" for machine {machine}" if machine else "")
        )
    commits = [c for c, *_ in history.commits() if any(p.commit == c for p in points)]
    if commit is None:
        commit = commits[-1]
    else:
        matches = [c for c in commits if c.startswith(commit)]
        if len(matches) != 1:
            raise MprofError(
                f"commit '{commit}' "
                + (
                    "is not in the history"
                    if not matches
                    else f"is ambiguous ({len(matches)} commits)"
                )
            )
        commit = matches[0]
    machines = {p.machine for p in points if p.commit == commit}
    if len(machines) > 1:
        raise MprofError(
            f"commit {commit[:12]} has results of several machines "
            f"({', '.join(sorted(machines))}): choose one with --machine"
        )
    out: dict[str, dict] = {}
    for p in points:
        if p.commit != commit:
            continue
        metric = {"value": p.m.value}
        if p.m.low is not None and p.m.high is not None:
            metric["lower_value"] = min(p.m.low, p.m.value)
            metric["upper_value"] = max(p.m.high, p.m.value)
        out.setdefault(p.m.series, {})[p.m.kind] = metric
    return out
