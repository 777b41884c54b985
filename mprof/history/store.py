"""The history database: one SQLite file of measurements per (commit, machine, series).

    commits       hash, date (ISO 8601), branch
    measurements  commit, machine, series, category, kind, value, low, high, unit, source

A *series* is one quantity followed over commits: a gate unit (`<configuration>::cost:rts.IDLE`,
its candidate value) or a benchmark figure (`rt_micro/spawn_dispatch_ns`).  Its *category* groups
series for display: a gate unit's cost category (`rts.IDLE`) or kind, a benchmark's name.
Adding a result for a commit and machine replaces the series it has again (a re-run)."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .. import jsontext
from ..db.validate import read_text
from ..errors import MprofError
from ..files import note_input

SCHEMA = """
CREATE TABLE IF NOT EXISTS history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    hash   TEXT PRIMARY KEY,
    date   TEXT NOT NULL,
    branch TEXT
);
CREATE TABLE IF NOT EXISTS measurements (
    commit_hash TEXT NOT NULL REFERENCES commits(hash) ON DELETE CASCADE,
    machine     TEXT NOT NULL,
    series      TEXT NOT NULL,
    category    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    value       REAL NOT NULL,
    low         REAL,
    high        REAL,
    unit        TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL DEFAULT '',
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (commit_hash, machine, series)
);
"""
FORMAT = "mprof.history"
VERSION = 1


@dataclass
class Measurement:
    series: str
    category: str
    kind: str  # gate unit kind (time, cost, stat, fit, coef) or "bench"
    value: float
    low: float | None = None
    high: float | None = None
    unit: str = ""


@dataclass
class Point:
    commit: str
    date: str
    branch: str | None
    machine: str
    m: Measurement
    source: str


class History:
    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise MprofError(f"{self.path}: no such history database")
        if self.path.exists() and not self.path.is_file():
            raise MprofError(f"{self.path}: not a file")
        note_input(self.path)  # a command's output file must not replace it (mprof.files)
        try:
            with self.path.open("ab") if create else self.path.open("rb"):
                pass
        except OSError as exc:
            raise MprofError(f"{self.path}: cannot open: {exc.strerror or exc}") from None
        try:
            self.conn = sqlite3.connect(self.path)
            self.conn.execute("PRAGMA foreign_keys = ON")
            tables = {
                r[0]
                for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if tables and "history_meta" not in tables:
                raise MprofError(
                    f"{self.path}: not an mprof history database (a profile "
                    "database? history files are separate)"
                )
            if not tables and not create:  # an empty file given to show or export
                self.conn.close()
                raise MprofError(
                    f"{self.path}: not an mprof history database (it has no "
                    "tables; `mprof history add` makes one)"
                )
            if not tables:
                with self.conn:
                    self.conn.executescript(SCHEMA)
                    self.conn.execute(
                        "INSERT INTO history_meta VALUES ('format', ?), ('version', ?)",
                        (FORMAT, str(VERSION)),
                    )
            version = dict(self.conn.execute("SELECT key, value FROM history_meta"))
            if version.get("format") != FORMAT or int(version.get("version", 0)) > VERSION:
                raise MprofError(
                    f"{self.path}: history format {version} is not one this "
                    f"mprof reads ({FORMAT} {VERSION})"
                )
        except sqlite3.DatabaseError as exc:
            raise MprofError(f"{self.path}: not a usable history database: {exc}") from None

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def add(
        self,
        commit: str,
        date: str,
        branch: str | None,
        machine: str,
        measurements: list[Measurement],
        source: str,
        date_known: bool = True,
    ) -> int:
        """Stores the measurements of one commit and machine.  `date_known` False: `date` is
        only a fallback (now), kept for a new commit but not replacing a recorded one."""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            with self.conn:
                self.conn.execute(
                    "INSERT INTO commits (hash, date, branch) VALUES (?, ?, ?) "
                    "ON CONFLICT(hash) DO UPDATE SET date = CASE WHEN ? THEN excluded.date "
                    "ELSE commits.date END, branch = COALESCE(excluded.branch, commits.branch)",
                    (commit, date, branch, date_known),
                )
                self.conn.executemany(
                    "INSERT OR REPLACE INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    [
                        (
                            commit,
                            machine,
                            m.series,
                            m.category,
                            m.kind,
                            m.value,
                            m.low,
                            m.high,
                            m.unit,
                            source,
                            now,
                        )
                        for m in measurements
                    ],
                )
        except sqlite3.Error as exc:
            raise MprofError(f"{self.path}: cannot store: {exc}") from None
        return len(measurements)

    def points(
        self, machine: str | None = None, series: str | None = None, category: str | None = None
    ) -> list[Point]:
        """Every measurement, oldest commit first (by commit date, then hash)."""
        sql = (
            "SELECT c.hash, c.date, c.branch, m.machine, m.series, m.category, m.kind, "
            "m.value, m.low, m.high, m.unit, m.source FROM measurements m "
            "JOIN commits c ON c.hash = m.commit_hash"
        )
        rows = self.conn.execute(sql + " ORDER BY c.date, c.hash, m.series").fetchall()
        out = [
            Point(h, d, b, mach, Measurement(s, cat, k, v, lo, hi, u), src)
            for h, d, b, mach, s, cat, k, v, lo, hi, u, src in rows
        ]
        return [
            p
            for p in out
            if (machine is None or p.machine == machine)
            and (series is None or _glob(series, p.m.series))
            and (category is None or _glob(category, p.m.category))
        ]

    def commits(self) -> list[tuple[str, str, str | None]]:
        return self.conn.execute(
            "SELECT hash, date, branch FROM commits ORDER BY date, hash"
        ).fetchall()

    def machines(self) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute("SELECT DISTINCT machine FROM measurements ORDER BY machine")
        ]


def _glob(pattern: str, text: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(text, pattern)


# -- reading results ------------------------------------------------------------------------


def read_result(path: str | Path, name: str | None = None) -> tuple[str, list[Measurement]]:
    """A gate result (`mprof gate --json FILE`) or a benchmark output (JSON objects, one per
    line, as the scripts under benchmarks/ and `make bench` print them) as measurements.
    Returns (kind of file, measurements)."""
    path = Path(path)
    # at most MPROF_MAX_INPUT_MB (an endless input, /dev/zero, is refused, not read until
    # memory runs out); bytes that are not UTF-8 are named by their place
    text = read_text(path, "gate JSON or benchmark output")
    try:
        whole = jsontext.loads(text, str(path))  # a key given twice is refused at its place
    except (ValueError, RecursionError):
        whole = None
    if _looks_like_gate(whole):
        _check_gate(whole, text, path)
        return "gate", _gate_measurements(whole, path)
    return "bench", _bench_measurements(text, path, name)


# -- gate results -----------------------------------------------------------------------------
# What `mprof gate --json` writes (mprof/gate/evaluate.py, GateReport.to_json and Unit.to_json).
# A result is checked whole before anything is stored: a value that is read wrongly would sit
# in the history as a measurement of the commit.

GATE_SCHEMA = "mprof.gate"
GATE_VERSIONS = (1,)
# A unit's compared values: numbers (null where the gate could not compute one), or the exact
# text of both sides for statistics compared exactly.
_VALUE_FIELDS = ("baseline", "candidate")
_CHANGE_FIELDS = ("change_low", "change_high")


def _looks_like_gate(doc) -> bool:
    """A gate result, or a document meant to be one (the gate's `units` beside a `schema` or
    `version`): such a file with a wrong schema is an error, not benchmark output whose every
    number becomes a series."""
    return isinstance(doc, dict) and (
        doc.get("schema") == GATE_SCHEMA
        or ("units" in doc and ("schema" in doc or "version" in doc))
    )


def _located(path: Path, text: str, where: str, message: str) -> MprofError:
    """`path:line:column: json.path: message`, as the run profile validator writes them."""
    from ..db.validate import locate, shown_text

    place = locate(text, where)
    at = f":{place[0]}:{place[1]}" if place else ""
    shown = shown_text(where)
    return MprofError(f"{path}{at}: {shown + ': ' if shown else ''}{message}")


def _check_gate(doc: dict, text: str, path: Path) -> None:
    from ..db.validate import NOT_UNICODE, find_lone_surrogate, value_kind

    def fail(where: str, message: str):
        raise _located(path, text, where, message)

    bad_text = find_lone_surrogate(doc)
    if bad_text:
        fail(bad_text[0], f"the name is {NOT_UNICODE}" if bad_text[1] else NOT_UNICODE)
    if doc.get("schema") != GATE_SCHEMA:
        fail(
            "schema",
            f"expected '{GATE_SCHEMA}' (a result of `mprof gate --json`), got "
            f"{value_kind(doc.get('schema'))}",
        )
    version = doc.get("version")
    if not _is_integer(version) or version not in GATE_VERSIONS:
        shown = version if _is_integer(version) else value_kind(version)
        fail(
            "version",
            f"gate result version {shown} is not supported (known: "
            f"{', '.join(map(str, GATE_VERSIONS))}); is this mprof older than the gate's?",
        )
    if "units" not in doc:
        fail("", "missing 'units' (the gate's compared units): not a result of `mprof gate --json`")
    if not isinstance(doc["units"], list):
        fail("units", f"expected an array of units, got {value_kind(doc['units'])}")
    for index, unit in enumerate(doc["units"]):
        _check_unit(unit, f"units[{index}]", fail)


def _check_unit(unit, where: str, fail) -> None:
    from ..db.validate import value_kind

    if not isinstance(unit, dict):
        fail(where, f"expected a unit (an object), got {value_kind(unit)}")
    if not isinstance(unit.get("id"), str) or not unit["id"]:
        fail(f"{where}.id", f"expected the unit's id (a string), got {value_kind(unit.get('id'))}")
    for key, kinds in (("kind", (str,)), ("category", (str, type(None)))):
        if key in unit and not isinstance(unit[key], kinds):
            fail(f"{where}.{key}", f"expected a string, got {value_kind(unit[key])}")
    for key in _VALUE_FIELDS + _CHANGE_FIELDS:
        value = unit.get(key)
        texts_allowed = key in _VALUE_FIELDS
        if value is None or (texts_allowed and isinstance(value, str)):
            continue
        if not _is_number(value):
            fail(f"{where}.{key}", f"expected a number or null, got {value_kind(value)}")
        if not _finite(value):
            fail(
                f"{where}.{key}",
                f"must be a finite number, got {value} (the gate writes "
                "null where it has no value)",
            )
    texts = [isinstance(unit.get(key), str) for key in _VALUE_FIELDS]
    if any(texts) and not all(texts):
        key = _VALUE_FIELDS[texts.index(True)]
        fail(
            f"{where}.{key}",
            f"expected a number or null like the other side's value, got "
            f"{value_kind(unit[key])} (only exactly compared statistics have text on both "
            "sides)",
        )


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _gate_measurements(doc: dict, path: Path) -> list[Measurement]:
    out = []
    units = doc.get("units")
    if not isinstance(units, list):
        raise MprofError(f"{path}: a gate result without units")
    for u in units:
        if not isinstance(u, dict) or not isinstance(u.get("id"), str):
            raise MprofError(f"{path}: a gate unit without an id")
        value = u.get("candidate")
        if not _finite(value):  # exact statistics compare text; fits have no single value
            continue
        low = high = None
        base, lo, hi = u.get("baseline"), u.get("change_low"), u.get("change_high")
        if _finite(base) and _finite(lo) and _finite(hi):
            low, high = base * (1 + lo), base * (1 + hi)
        kind = str(u.get("kind", "gate"))
        unit = "s" if kind in ("time", "cost") else ""
        out.append(
            Measurement(
                u["id"], str(u.get("category") or kind), kind, float(value), low, high, unit
            )
        )
    if not out:
        raise MprofError(f"{path}: the gate result has no unit with a numeric value")
    return out


_HEADER = re.compile(r"^==.*\((?:\S*/)?([A-Za-z0-9_.-]+?)(?:\.py|\.c|\.sh)?\)\s*$")


def _bench_measurements(text: str, path: Path, name: str | None) -> list[Measurement]:
    """Numeric leaves of every JSON object line, as series `<benchmark>/<key>/<key>...`: the
    benchmark is --name, else the object's "benchmark" field, else the script named in the
    latest `== title (benchmarks/.../script.py)` header line (`make bench`), else the file's
    name."""
    found: dict[str, Measurement] = {}
    header = None
    for number, line in enumerate(text.splitlines(), 1):
        indent = len(line) - len(line.lstrip())
        line = line.strip()
        match = _HEADER.match(line)
        if match:
            header = match.group(1)
            continue
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line, object_pairs_hook=jsontext.unique_keys)
        except jsontext.DuplicateKey:
            offset, key = jsontext.duplicate_key(line) or (0, "?")
            raise MprofError(
                f"{path}:{number}:{indent + offset + 1}: key {json.dumps(key)} "
                "appears twice in one object (each key once)"
            ) from None
        except json.JSONDecodeError as exc:
            # a line cut off (an interrupted benchmark) loses its figures: say so, and go on
            # with the others, as for the text lines around them
            print(
                f"{path}:{number}:{indent + exc.colno}: warning: skipped a line that begins "
                f"like a JSON object but is not one ({exc.msg})",
                file=sys.stderr,
            )
            continue
        except (ValueError, RecursionError):
            print(
                f"{path}:{number}: warning: skipped a line too large or deep to read",
                file=sys.stderr,
            )
            continue
        if not isinstance(obj, dict):
            continue
        _check_text(obj, line, f"{path}:{number}", indent)
        if "benchmark" in obj and not isinstance(obj["benchmark"], str):
            raise MprofError(
                f"{path}:{number}: benchmark: expected the benchmark's name (a string), "
                f"got {json.dumps(obj['benchmark'])[:60]}"
            )
        bench = name or obj.get("benchmark") or header or path.stem
        in_line: set[str] = set()
        for key, value in _leaves(obj):
            if key == "benchmark":
                continue
            series = f"{bench}/{key}"
            if series in in_line:  # {"a/b": 1, "a": {"b": 2}}: one value would be lost
                raise MprofError(
                    f"{path}:{number}: two keys of one object make the series {series} "
                    "(nested keys are joined by '/'): rename one"
                )
            in_line.add(series)
            found[series] = Measurement(
                series,
                bench,
                "bench",
                float(value),
                unit="s" if key.endswith(("_s", "seconds")) else "",
            )
    if not found:
        raise MprofError(
            f"{path}: neither a gate result (mprof gate --json) nor benchmark "
            "output with a JSON object of numbers on a line"
        )
    return list(found.values())


def _check_text(obj: dict, line: str, place: str, indent: int) -> None:
    """A benchmark's names become series names: a lone surrogate (`\\ud800` in the JSON) is
    an error at `place` (file:line), as no UTF-8 text can hold it."""
    from ..db.validate import NOT_UNICODE, find_lone_surrogate, locate, shown_text

    bad = find_lone_surrogate(obj)
    if bad:
        column = (locate(line, bad[0]) or (1, 1))[1] + indent
        what = f"the name is {NOT_UNICODE}" if bad[1] else NOT_UNICODE
        raise MprofError(f"{place}:{column}: {shown_text(bad[0])}: {what}")


def _leaves(obj, prefix: str = ""):
    """(path, number) for every finite number in nested objects and lists, paths joined by /."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, f"{prefix}/{k}" if prefix else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, f"{prefix}/{i}" if prefix else str(i))
    elif _finite(obj):
        yield prefix, float(obj)


def _finite(x) -> bool:
    """A number that is finite as a float (the measurements' REAL): an integer of 400 digits
    is not."""
    if not _is_number(x):
        return False
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False
