"""The profile database: an SQLite file holding run profiles (step 4 of the workflow,
docs/architecture.md).

Writers use WAL mode, a busy timeout and a retry loop around BEGIN IMMEDIATE, so several
`mprof bench` or `mprof db import` processes can record into one database at once without
losing runs.  An import is all-or-nothing: documents are validated before the transaction
starts and every row of every document is written inside it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import random
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import MprofError
from ..files import note_input
from ..profile import CategoryTime, LatencyRow, ObjectRecord, PEProfile, RunProfile
from . import schema
from .validate import validate_profile

BUSY_TIMEOUT_MS = 2_000  # one wait of SQLite's; _retry bounds the whole wait
DEFAULT_LOCK_WAIT_S = 120.0  # MPROF_DB_LOCK_TIMEOUT


@dataclass(frozen=True)
class PETimes:
    """One PE's measured times (seconds); the CPU times are None for schema version 1 runs."""

    elapsed_s: float
    idle_s: float
    cpu_s: float | None = None
    idle_cpu_s: float | None = None


@dataclass
class RunSummary:
    id: int
    program: str
    npes: int
    elapsed_s: float | None
    started_at: str | None
    source: str | None
    machine_fingerprint: str | None
    params: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RunDetails:
    """What a run's profile said besides the columns of RunSummary (ProfileDB.run_details)."""

    backend: str | None
    hostname: str | None
    argv: list
    accesses: list
    bench: dict
    cpu: str | None
    cores: int | None
    fingerprint_derived: bool  # the profile named no fingerprint; mprof derived one
    profile_version: int


@dataclass
class ImportResult:
    stored: list[int] = field(default_factory=list)
    duplicates: list[tuple[str, int]] = field(default_factory=list)  # (source, existing id)


@dataclass(frozen=True)
class Condition:
    """`name=value` filter on run parameters and settings (also `program`, `npes`)."""

    name: str
    value: str

    @classmethod
    def parse(cls, text: str) -> "Condition":
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise MprofError(f"bad condition '{text}': expected name=value")
        return cls(name.strip(), value.strip())

    def matches(self, run: RunSummary) -> bool:
        if self.name == "program":
            return run.program == self.value
        if self.name == "npes":
            return _same(run.npes, self.value)
        for table in (run.params, run.settings):
            if self.name in table:
                return _same(table[self.name], self.value)
        return False


def explain_no_match(runs: Sequence[RunSummary], where: Sequence[Condition]) -> str:
    """Why `where` selects none of `runs`: the first condition whose name no run has, or whose
    value no run has, with the names or values that do exist; else that they exclude each
    other."""
    if not runs:
        return "the database holds no runs"
    for cond in where:
        if cond.name in ("program", "npes"):
            values = {str(r.program if cond.name == "program" else r.npes) for r in runs}
        else:
            values = {
                _text(t[cond.name]) for r in runs for t in (r.params, r.settings) if cond.name in t
            }
            if not values:
                names = [
                    "program",
                    "npes",
                    *sorted({n for r in runs for n in (*r.params, *r.settings)}),
                ]
                close = difflib.get_close_matches(cond.name, names, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                return (
                    f"no run has a parameter or setting '{cond.name}' (names: {_some(names)}){hint}"
                )
        if not any(cond.matches(r) for r in runs):
            return (
                f"no run has {cond.name}={cond.value} ({cond.name} is "
                f"{_some(sorted(values, key=_natural))})"
            )
    return (
        "no run matches all of "
        + " ".join(f"{c.name}={c.value}" for c in where)
        + " (each matches some runs, but not together)"
    )


def _text(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _natural(text: str):
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def _some(items: Sequence[str], limit: int = 12) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _same(stored, wanted: str) -> bool:
    if isinstance(stored, (int, float)) and not isinstance(stored, bool):
        try:
            return float(wanted) == float(stored)
        except ValueError:
            return False
    if isinstance(stored, bool):
        return wanted.lower() in (("true", "1") if stored else ("false", "0"))
    return str(stored) == wanted


def canonical_json(doc) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _may_write(path: Path) -> bool:
    """Whether this process may write the database file and create its journal files."""
    return os.access(path, os.W_OK) and os.access(path.resolve().parent, os.W_OK | os.X_OK)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already done so itself (it does after
    a full disk or an I/O error); a failing rollback must not hide the error that caused it."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _explain(exc: sqlite3.Error) -> str:
    text = str(exc)
    low = text.lower()
    if "disk i/o error" in low or "disk is full" in low:
        return f"{text} (is the disk full, or the file system read-only?); nothing was stored"
    if "malformed" in low or "not a database" in low:
        return (
            f"{text} (the file is damaged or not an mprof database; restore a copy, or "
            "import the run profiles into a new one)"
        )
    if "readonly" in low:
        return f"{text} (no write access to the file or its folder)"
    return text


def _is_space_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "disk i/o error" in text or "disk is full" in text or "readonly" in text


def _is_lock_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class ProfileDB:
    """An open profile database.  Use as a context manager or call close(); an SQLite error
    inside the `with` block (a damaged file, a full disk) leaves it as an MprofError naming the
    file.

    `create=False` opens an existing database for reading (`readonly` defaults to that).  When
    this process may not write the file or its folder, the database is opened read-only (an
    older schema is then read as it is), so a database the user may only read can still be
    listed, exported, fitted and gated."""

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        migrate: bool = True,
        readonly: bool | None = None,
    ):
        self.path = Path(path)
        note_input(self.path)  # a command's output file must not replace it (mprof.files)
        self.readonly = (not create) if readonly is None else readonly
        if not create and not self.path.exists():
            raise MprofError(f"{self.path}: no such profile database")
        if self.path.is_dir():
            raise MprofError(f"{self.path}: is a directory, not a profile database")
        if self.readonly and not _may_write(self.path):
            self.conn = self._connect_readonly()
            self._check_version()
            return
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves so the transaction
            # boundaries are exactly the ones described above.
            self.conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise MprofError(f"{self.path}: cannot open database: {exc}") from None
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._refuse_foreign(create)  # before anything is written to the file
            self._retry(lambda: self.conn.execute("PRAGMA journal_mode = WAL").fetchone())
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            if migrate:
                self._retry(lambda: schema.migrate(self.conn, name=str(self.path)))
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if self.readonly and _is_space_error(exc):
                # Reading never needs free space: a full disk (or a read-only file system)
                # refuses the journal-mode switch and the shared-memory file, not the data.
                self.conn = self._connect_readonly()
                self._check_version()
                return
            raise MprofError(
                f"{self.path}: not a usable profile database: {_explain(exc)}"
            ) from None

    def _refuse_foreign(self, create: bool) -> None:
        """An SQLite file without mprof's tables is another application's (or an empty file
        given where a database was expected): mprof adds no tables to it.  Only a new, empty
        database is set up, and only where one may be created."""
        if schema.current_version(self.conn) != 0:
            return
        tables = [
            r[0]
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 4"
            )
        ]
        if tables:
            self.conn.close()
            raise MprofError(
                f"{self.path}: not a profile database: an SQLite database of "
                f"another application (tables {', '.join(tables[:3])}"
                f"{', ...' if len(tables) > 3 else ''}; no mprof tables); "
                "nothing was changed"
            )
        if not create:
            self.conn.close()
            raise MprofError(f"{self.path}: not a profile database (it has no mprof tables)")

    def _connect_readonly(self) -> sqlite3.Connection:
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(
                f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
            )
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            text = str(exc).lower()
            if "readonly" not in text and "unable to open" not in text and not _is_space_error(exc):
                raise MprofError(f"{self.path}: cannot read database: {_explain(exc)}") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise MprofError(
                f"{self.path}: not a usable profile database: {_explain(exc)}"
            ) from None
        # A database in WAL mode needs its shared-memory file, which a reader without write
        # access to the folder cannot create.  Without a pending log nothing else can be
        # changing it, so it is read as an immutable file.
        wal = Path(f"{self.path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise MprofError(
                f"{self.path}: cannot read database: its write-ahead log {wal} "
                "holds changes that only a process with write access can apply "
                "(open it once with write access, e.g. mprof db list as its owner)"
            )
        try:
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.DatabaseError as exc:
            raise MprofError(f"{self.path}: cannot read database: {_explain(exc)}") from None

    def _check_version(self) -> None:
        try:
            version = schema.current_version(self.conn)
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise MprofError(
                f"{self.path}: not a usable profile database: {_explain(exc)}"
            ) from None
        if version == 0:
            self.conn.close()
            raise MprofError(f"{self.path}: not a profile database (it has no mprof tables)")
        if version > schema.LATEST_VERSION:
            self.conn.close()
            raise MprofError(
                f"{self.path}: database schema version {version} is newer than "
                f"this mprof understands ({schema.LATEST_VERSION})"
            )

    # -- plumbing ---------------------------------------------------------------------------

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        if isinstance(exc, sqlite3.Error):
            raise MprofError(f"{self.path}: database error: {_explain(exc)}") from None

    @property
    def version(self) -> int:
        return schema.current_version(self.conn)

    def _retry(self, action):
        """Run `action`, retrying while another process holds the lock, for at most
        MPROF_DB_LOCK_TIMEOUT seconds (default 120) in all; the wait is announced once, and
        its end is an MprofError that says who to look for."""
        from ..numbers import env_number

        bound = env_number("MPROF_DB_LOCK_TIMEOUT", DEFAULT_LOCK_WAIT_S, low=0, high=1e6)
        start = time.monotonic()
        announced = False
        attempt = 0
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_lock_error(exc):
                    raise
                waited = time.monotonic() - start
                if waited >= bound:
                    raise MprofError(
                        f"{self.path}: the database is locked by another process (an import or "
                        f"a sweep writing to it?); gave up after {waited:.0f} s "
                        "(MPROF_DB_LOCK_TIMEOUT sets the wait)"
                    ) from None
                if not announced:
                    print(
                        f"mprof: {self.path}: locked by another process; waiting up to {bound:g} s",
                        file=sys.stderr,
                    )
                    announced = True
                attempt += 1
                time.sleep(
                    min(0.01 + random.random() * 0.05 * attempt, 0.5, max(bound - waited, 0.0))
                )

    def transaction(self, body):
        """Run body(conn) inside BEGIN IMMEDIATE ... COMMIT, retrying on lock contention."""

        def attempt():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(self.conn)
                self.conn.execute("COMMIT")
                return result
            except BaseException:
                rollback(self.conn)
                raise

        return self._retry(attempt)

    # -- writing ----------------------------------------------------------------------------

    def import_documents(
        self, docs: Sequence[tuple[str, dict]], *, validate: bool = True, point=None
    ) -> ImportResult:
        """Store (source, document) pairs in one transaction.

        Every document is validated first; if any is malformed nothing is written.  A document
        identical to a stored one is skipped (imports are idempotent).  `point` optionally
        records a sweep point (mprof.bench) for the single document being imported.
        """
        if validate:
            for source, doc in docs:
                validate_profile(doc, source)
        prepared = [(_storable(source), doc, canonical_json(doc)) for source, doc in docs]

        def body(conn):
            result = ImportResult()
            for source, doc, text in prepared:
                digest = hashlib.sha256(text.encode()).hexdigest()
                row = conn.execute(
                    "SELECT id FROM runs WHERE document_sha256 = ?", (digest,)
                ).fetchone()
                if row:
                    result.duplicates.append((source, row[0]))
                    run_id = row[0]
                else:
                    run_id = _insert_run(conn, source, doc, digest)
                    result.stored.append(run_id)
                if point is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO sweep_points (point_key, run_id, program, "
                        "params_json, npes, env_json, repetition, recorded_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            point.key,
                            run_id,
                            point.program,
                            canonical_json(point.params),
                            point.npes,
                            canonical_json(point.env),
                            point.repetition,
                            _now(),
                        ),
                    )
            return result

        return self.transaction(body)

    def import_files(self, paths: Iterable[str | Path]) -> ImportResult:
        from .validate import load_profile

        docs = [(str(p), load_profile(p)) for p in paths]
        return self.import_documents(docs, validate=False)

    # -- reading ----------------------------------------------------------------------------

    def runs(self, where: Sequence[Condition] = ()) -> list[RunSummary]:
        rows = self.conn.execute(
            "SELECT id, program, npes, elapsed_s, started_at, source, machine_fingerprint "
            "FROM runs ORDER BY id"
        ).fetchall()
        runs = {r[0]: RunSummary(*r) for r in rows}
        for run in runs.values():
            run.npes = self._number(run.id, "runs", "npes", run.npes, integer=True)
            run.elapsed_s = self._number(run.id, "runs", "elapsed_s", run.elapsed_s, nullable=True)
        for run_id, kind, name, value in self.conn.execute(
            "SELECT run_id, kind, name, value_json FROM run_params ORDER BY run_id, kind, name"
        ):
            table = runs[run_id].params if kind == "param" else runs[run_id].settings
            table[name] = self._json(run_id, "run_params", "value_json", value, _SCALAR)
        return [r for r in runs.values() if all(c.matches(r) for c in where)]

    def document(self, run_id: int) -> dict:
        """The run profile document of run `run_id`, rebuilt from the tables
        (`stored_document`)."""
        profiles = self.profiles(run_ids=[run_id])
        if not profiles:
            raise MprofError(f"{self.path}: no run with id {run_id}")
        return stored_document(profiles[0], self.category_rows([run_id]).get(run_id, {}))

    def documents(self) -> Iterator[tuple[int, dict]]:
        """(run id, document) of every run, in id order, a chunk of runs read at a time."""
        ids = [r.id for r in self.runs()]
        for chunk in _chunks(ids, 50):
            rows = self.category_rows(chunk)
            for profile in self.profiles(run_ids=chunk):
                yield profile.id, stored_document(profile, rows.get(profile.id, {}))

    def category_rows(self, run_ids: Sequence[int]) -> dict[int, dict[int, list[dict]]]:
        """run id -> pe -> the PE's `categories` rows in the order of its profile (RunProfile
        keeps them largest first instead)."""
        out: dict[int, dict[int, list[dict]]] = {}
        if self.version < 5:  # a database opened read-only may be older
            return out
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, pe, access, cpu_s, samples in self.conn.execute(
                f"SELECT run_id, pe, access, cpu_s, samples FROM category_time "
                f"WHERE run_id IN ({marks}) ORDER BY run_id, pe, rowid",
                chunk,
            ):
                out.setdefault(run_id, {}).setdefault(pe, []).append(
                    {
                        "access": access,
                        "cpu_s": self._number(run_id, "category_time", "cpu_s", cpu_s),
                        "samples": self._u64(run_id, "category_time", "samples", samples),
                    }
                )
        return out

    def profiles(
        self, where: Sequence[Condition] = (), run_ids: Sequence[int] | None = None
    ) -> list[RunProfile]:
        """The runs matching `where` (and among them those of `run_ids`), read from the
        tables: everything their profiles held."""
        runs = self.runs(where)
        if run_ids is not None:
            wanted = set(run_ids)
            runs = [r for r in runs if r.id in wanted]
        ids = [r.id for r in runs]
        times = self.pe_samples(ids)
        objects = self.object_stats(ids)
        absent = self.absent_stats(ids)
        categories = self.category_times(ids)
        latency = self.latency_rows(ids)
        details = self.run_details(ids)
        interfaces = self.run_interfaces(ids)
        out = []
        for run in runs:
            pes = []
            for pe, t in enumerate(times.get(run.id, [])):
                pes.append(
                    PEProfile(
                        pe,
                        t.elapsed_s,
                        t.idle_s,
                        t.cpu_s,
                        t.idle_cpu_s,
                        _objects(
                            objects.get(run.id, {}).get(pe, []), absent.get(run.id, {}).get(pe, [])
                        ),
                        categories.get(run.id, {}).get(pe),
                        latency.get(run.id, {}).get(pe, []),
                    )
                )
            d = details[run.id]
            machine = {
                k: v
                for k, v in (("hostname", d.hostname), ("cpu", d.cpu), ("cores", d.cores))
                if v is not None
            }
            if not d.fingerprint_derived and run.machine_fingerprint:
                machine["fingerprint"] = run.machine_fingerprint
            out.append(
                RunProfile(
                    program=run.program,
                    npes=run.npes,
                    params=dict(run.params),
                    settings=dict(run.settings),
                    pes=pes,
                    fingerprint=run.machine_fingerprint or "",
                    elapsed_s=run.elapsed_s,
                    id=run.id,
                    source=str(self.path),
                    argv=d.argv,
                    interfaces=interfaces.get(run.id, {}),
                    accesses=d.accesses,
                    backend=d.backend,
                    started_at=run.started_at,
                    machine=machine,
                    bench=d.bench,
                    schema_version=d.profile_version,
                )
            )
        return out

    def run_details(self, run_ids: Sequence[int]) -> dict[int, RunDetails]:
        """run id -> what its profile said besides the columns of `runs()`."""
        if self.version >= 6:
            columns = (
                "argv, accesses, bench, machine_cpu, machine_cores, "
                "fingerprint_derived, profile_version"
            )
        else:  # a database opened read-only may be older: the document has them
            columns = (
                "json_extract(document, '$.argv'), json_extract(document, '$.accesses'), "
                "json_extract(document, '$.bench'), "
                "json_extract(document, '$.machine.cpu'), "
                "json_extract(document, '$.machine.cores'), "
                "coalesce(json_extract(document, '$.machine.fingerprint'), '') = '', "
                "json_extract(document, '$.schema_version')"
            )
        out = {}
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for (
                run_id,
                backend,
                hostname,
                argv,
                accesses,
                bench,
                cpu,
                cores,
                derived,
                version,
            ) in self.conn.execute(
                f"SELECT id, backend, hostname, {columns} FROM runs WHERE id IN ({marks})", chunk
            ):
                out[run_id] = RunDetails(
                    backend,
                    hostname,
                    self._json(run_id, "runs", "argv", argv or "[]", list),
                    self._json(run_id, "runs", "accesses", accesses or "[]", list),
                    self._json(run_id, "runs", "bench", bench or "{}", dict),
                    cpu,
                    self._number(
                        run_id, "runs", "machine_cores", cores, integer=True, nullable=True
                    ),
                    bool(derived),
                    self._number(run_id, "runs", "profile_version", version or 1, integer=True),
                )
        return out

    def run_interfaces(self, run_ids: Sequence[int]) -> dict[int, dict[str, str]]:
        """run id -> module -> digest of the interface the program was built with."""
        if self.version >= 6:
            query = (
                "SELECT run_id, name, digest FROM run_interfaces "
                "WHERE run_id IN ({marks}) ORDER BY run_id, rowid"
            )
        else:
            query = (
                "SELECT r.id, json_extract(i.value, '$.name'), "
                "json_extract(i.value, '$.digest') "
                "FROM runs AS r, json_each(r.document, '$.interfaces') AS i "
                "WHERE r.id IN ({marks}) ORDER BY r.id, i.key"
            )
        out: dict[int, dict[str, str]] = {}
        for run_id, name, digest in self._rows_of_runs(query, run_ids):
            out.setdefault(run_id, {})[name] = digest
        return out

    def _rows_of_runs(self, query: str, run_ids: Sequence[int]):
        """The rows of `query` (its `{marks}`: the placeholders of `run_ids`), run ids taken
        500 at a time (SQLite's limit on host parameters)."""
        for chunk in _chunks(run_ids):
            yield from self.conn.execute(query.format(marks=",".join("?" * len(chunk))), chunk)

    def absent_stats(self, run_ids: Sequence[int]) -> dict[int, dict[int, list]]:
        """run id -> pe -> [(position of the object in the PE's list, object id, module,
        statistic, why it was not counted)], in position order."""
        if self.version >= 6:
            query = (
                "SELECT run_id, pe, position, object_id, module, stat, reason "
                "FROM object_absent WHERE run_id IN ({marks}) "
                "ORDER BY run_id, pe, position, rowid"
            )
        else:
            query = (
                "SELECT r.id, json_extract(p.value, '$.pe'), o.key, "
                "json_extract(o.value, '$.id'), "
                "json_extract(o.value, '$.module'), a.key, a.value "
                "FROM runs AS r, json_each(r.document, '$.pes') AS p, "
                "json_each(p.value, '$.objects') AS o, json_each(o.value, '$.absent') AS a "
                "WHERE r.id IN ({marks}) ORDER BY r.id, p.key, o.key, a.key"
            )
        out: dict[int, dict[int, list]] = {}
        for run_id, pe, position, oid, module, stat, reason in self._rows_of_runs(query, run_ids):
            out.setdefault(run_id, {}).setdefault(pe, []).append(
                (
                    position,
                    self._u64(run_id, "object_absent", "object_id", oid),
                    module,
                    stat,
                    reason,
                )
            )
        return out

    def bench_metadata(self, run_ids: Sequence[int] | None = None) -> dict[int, dict]:
        """run id -> what `mprof bench` measured around the run (the profile's `bench`)."""
        ids = [r.id for r in self.runs()] if run_ids is None else list(run_ids)
        details = self.run_details(ids)
        return {run_id: details[run_id].bench for run_id in sorted(details)}

    def recorded_points(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT point_key FROM sweep_points")}

    def point_runs(self) -> dict[str, int]:
        """Sweep point key -> the run recorded for it."""
        return dict(self.conn.execute("SELECT point_key, run_id FROM sweep_points"))

    def pe_samples(self, run_ids: Sequence[int]) -> dict[int, list[PETimes]]:
        """run id -> the PEs' times, in PE order (CPU times are None for version 1 runs)."""
        out: dict[int, list] = {}
        # cpu_s, idle_cpu_s: migration 3 (a database opened read-only may be older)
        cpu_columns = "cpu_s, idle_cpu_s" if self.version >= 3 else "NULL, NULL"
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, *times in self.conn.execute(
                f"SELECT run_id, elapsed_s, idle_s, {cpu_columns} FROM pe_samples "
                f"WHERE run_id IN ({marks}) ORDER BY run_id, pe",
                chunk,
            ):
                out.setdefault(run_id, []).append(
                    PETimes(
                        *(
                            self._number(run_id, "pe_samples", column, value, nullable=nullable)
                            for (column, nullable), value in zip(_PE_TIME_COLUMNS, times)
                        )
                    )
                )
        return out

    def category_times(self, run_ids: Sequence[int]) -> dict[int, dict[int, list[CategoryTime]]]:
        """run id -> pe -> the PE's measured CPU time per access category, for the PEs whose
        profile had them (a run recorded before the runtime measured them is absent)."""
        out: dict[int, dict[int, list[CategoryTime]]] = {}
        if self.version < 5:  # a database opened read-only may be older
            return out
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, pe in self.conn.execute(
                f"SELECT run_id, pe FROM pe_samples WHERE run_id IN ({marks}) "
                "AND categories IS NOT NULL ORDER BY run_id, pe",
                chunk,
            ):
                out.setdefault(run_id, {})[pe] = []
            for run_id, pe, access, cpu_s, samples in self.conn.execute(
                f"SELECT run_id, pe, access, cpu_s, samples FROM category_time "
                f"WHERE run_id IN ({marks}) ORDER BY run_id, pe, cpu_s DESC, access",
                chunk,
            ):
                out.setdefault(run_id, {}).setdefault(pe, []).append(
                    CategoryTime(
                        access,
                        self._number(run_id, "category_time", "cpu_s", cpu_s),
                        self._u64(run_id, "category_time", "samples", samples),
                    )
                )
        return out

    def latency_rows(self, run_ids: Sequence[int]) -> dict[int, dict[int, list[LatencyRow]]]:
        """run id -> pe -> the PE's latency rows, in the order they were stored."""
        out: dict[int, dict[int, list[LatencyRow]]] = {}
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, pe, access, enabler, count, observed, critical in self.conn.execute(
                f"SELECT run_id, pe, access, enabler, count, observed_s, critical_s "
                f"FROM latency WHERE run_id IN ({marks}) ORDER BY run_id, pe, rowid",
                chunk,
            ):
                out.setdefault(run_id, {}).setdefault(pe, []).append(
                    LatencyRow(
                        access,
                        enabler,
                        self._u64(run_id, "latency", "count", count),
                        self._number(run_id, "latency", "observed_s", observed),
                        self._number(run_id, "latency", "critical_s", critical),
                        pe,
                    )
                )
        return out

    def object_stats(self, run_ids: Sequence[int]) -> dict[int, dict[int, list]]:
        """run id -> pe -> [(object id, module, {stat: value})] (long format regrouped), the
        objects in the order of the profile (their rows were inserted in that order).  Values
        are what the profile wrote: whole numbers are ints (`_whole`), exact over the whole
        u64 and i64 ranges (value_exact), others floats."""
        out: dict[int, dict[int, dict]] = {}
        first: dict[tuple[int, int, int], int] = {}  # the object's first rowid
        # value_exact: migration 4 (a database opened read-only may be older)
        exact_column = "value_exact" if self.version >= 4 else "NULL"
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, pe, oid, module, stat, value, exact, rowid in self.conn.execute(
                f"SELECT run_id, pe, object_id, module, stat, value, {exact_column}, rowid "
                f"FROM object_stats WHERE run_id IN ({marks}) ORDER BY run_id, pe, object_id",
                chunk,
            ):
                if exact is not None:
                    value = self._exact(run_id, exact)
                elif value.__class__ is float:  # the common case tested cheaply
                    if not math.isfinite(value):  # no profile holds one: imports refuse it
                        raise self._damaged(run_id, "object_stats", "value")
                    value = _whole(value)
                elif value.__class__ is not int:
                    raise self._damaged(run_id, "object_stats", "value")
                oid = self._u64(run_id, "object_stats", "object_id", oid)
                objects = out.setdefault(run_id, {}).setdefault(pe, {})
                objects.setdefault(oid, (oid, module, {}))[2][stat] = value
                key = (run_id, pe, oid)
                first[key] = min(first.get(key, rowid), rowid)
        return {
            r: {
                pe: sorted(objs.values(), key=lambda o, r=r, pe=pe: first[r, pe, o[0]])
                for pe, objs in pes.items()
            }
            for r, pes in out.items()
        }

    # -- decoding cells ---------------------------------------------------------------------
    # A value of the wrong type or JSON that does not parse can only come from a damaged file
    # or a hand edit (imports store validated documents): it is reported here, where the
    # table and column are known, instead of failing later in whatever reads the value.

    def _damaged(self, run_id, table: str, column: str) -> "DamagedValue":
        return DamagedValue(self.path, run_id, table, column)

    def _json(self, run_id, table: str, column: str, text, kinds):
        """The JSON text of a cell, which must decode to one of the types `kinds`."""
        try:
            value = json.loads(text)
        except (ValueError, TypeError, RecursionError):
            raise self._damaged(run_id, table, column) from None
        if not isinstance(value, kinds) or (isinstance(value, float) and not math.isfinite(value)):
            raise self._damaged(run_id, table, column)
        return value

    def _number(
        self,
        run_id,
        table: str,
        column: str,
        value,
        *,
        integer: bool = False,
        nullable: bool = False,
    ):
        """A numeric cell (SQLite keeps text stored in a numeric column as text)."""
        if value is None and nullable:
            return None
        if isinstance(value, int) or (
            isinstance(value, float) and not integer and math.isfinite(value)
        ):
            return value
        raise self._damaged(run_id, table, column)

    def _u64(self, run_id, table: str, column: str, value) -> int:
        return from_sql_u64(self._number(run_id, table, column, value, integer=True))

    def _exact(self, run_id, text) -> int:
        """object_stats.value_exact: the decimal text of an integer statistic."""
        try:
            return int(text)
        except (ValueError, TypeError):
            raise self._damaged(run_id, "object_stats", "value_exact") from None


class DamagedValue(MprofError):
    """A cell of a stored run that cannot be read back: the database file was damaged or
    edited by hand."""

    def __init__(self, path, run_id, table: str, column: str):
        self.run_id, self.table, self.column = run_id, table, column
        super().__init__(
            f"{path}: run {run_id}: damaged value in table {table} (column "
            f"{column}); restore a copy of the database, or import the run's "
            "profile into a new one"
        )


# A run_params value: what `params` and `settings` may hold.
_SCALAR = (int, float, str)  # bool is an int
# pe_samples' time columns in PETimes order, with whether each may be NULL (version 1 runs)
_PE_TIME_COLUMNS = (("elapsed_s", False), ("idle_s", False), ("cpu_s", True), ("idle_cpu_s", True))

# Integers a REAL holds exactly; SQLite's INTEGER range.
_EXACT_REAL = 2**53
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def to_sql_u64(value: int) -> int:
    """A u64 as SQLite's signed INTEGER: the same 64 bits (values from 2^63 on go negative)."""
    return value - 2**64 if value > _I64_MAX else value


def from_sql_u64(value: int) -> int:
    return value + 2**64 if value < 0 else value


def _stat_columns(value) -> tuple[float, str | None]:
    """(value, value_exact) of one statistic: value_exact keeps an integer a REAL would round."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _EXACT_REAL:
        return float(value), str(value)
    return value, None


def _objects(stats: list, absent: list) -> list[ObjectRecord]:
    """A PE's object records, in the order of its profile, from its object_stats rows (in
    that order) and its object_absent rows: an object whose statistics were all absent has
    only the latter, which say where it stood in the list."""
    records = [ObjectRecord(oid, module, values) for oid, module, values in stats]
    by_id = {r.id: r for r in records}
    for position, oid, module, stat, reason in absent:
        if oid not in by_id:
            by_id[oid] = ObjectRecord(oid, module, {})
            records.insert(min(position, len(records)), by_id[oid])
        by_id[oid].absent[stat] = reason
    return records


def stored_document(profile: RunProfile, category_rows: dict[int, list[dict]]) -> dict:
    """The run profile document of a run read from the tables, as it was imported, so that an
    exported run imported again is recognised as the same run (document_sha256):
    `to_document`, with each PE's category rows in their stored order (`category_rows`,
    ProfileDB.category_rows); its statistics that are whole numbers are JSON integers, as
    `object_stats` reads them (`_whole`)."""
    doc = profile.to_document()
    for pe in doc["pes"]:
        if "categories" in pe:
            pe["categories"] = category_rows.get(pe["pe"], [])
    return doc


def _whole(value: float) -> int | float:
    """A statistic read from object_stats.value, a REAL, which does not keep whether the
    profile wrote 5 or 5.0: the runtime writes every whole number without a fraction (%.17g,
    runtime/src/profile.c), so a whole value is the integer it wrote.  Reading it as such keeps
    a run the same from its file and from a database (document identity, exports: a column of
    integer statistics is an integer column, exact to the last digit of a u64)."""
    if value.is_integer() and abs(value) <= _EXACT_REAL:
        return int(value)
    return value


def _chunks(items, size=500):
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _storable(source):
    """A file name as the database keeps it: text.  A name with bytes that are not UTF-8
    (Python holds them as lone surrogates) keeps them as `\\xff` escapes."""
    if source is None or source.isascii():
        return source
    return source.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _insert_run(conn, source, doc, digest) -> int:
    machine = doc.get("machine", {})
    cur = conn.execute(
        "INSERT INTO runs (program, backend, npes, started_at, elapsed_s, hostname, "
        "machine_fingerprint, source, imported_at, document_sha256, argv, accesses, bench, "
        "machine_cpu, machine_cores, fingerprint_derived, profile_version) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            doc["program"],
            doc.get("backend"),
            doc["npes"],
            doc.get("started_at"),
            doc.get("elapsed_s"),
            machine.get("hostname"),
            machine_fingerprint(doc),
            source,
            _now(),
            digest,
            *(_json_or_null(doc.get(k)) for k in ("argv", "accesses", "bench")),
            machine.get("cpu"),
            machine.get("cores"),
            0 if machine.get("fingerprint") else 1,
            doc["schema_version"],
        ),
    )
    run_id = cur.lastrowid
    for kind, key in (("param", "params"), ("setting", "settings")):
        conn.executemany(
            "INSERT INTO run_params (run_id, kind, name, value_json, value_num) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    kind,
                    name,
                    json.dumps(value),
                    float(value)
                    if isinstance(value, (int, float)) and not isinstance(value, bool)
                    else None,
                )
                for name, value in doc.get(key, {}).items()
            ],
        )
    conn.executemany(
        "INSERT INTO run_interfaces (run_id, name, digest) VALUES (?, ?, ?)",
        [(run_id, i["name"], i["digest"]) for i in doc.get("interfaces", [])],
    )
    for pe in doc["pes"]:
        conn.execute(
            "INSERT INTO pe_samples (run_id, pe, elapsed_s, idle_s, cpu_s, idle_cpu_s, "
            "categories) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                pe["pe"],
                pe["elapsed_s"],
                pe["idle_s"],
                pe.get("cpu_s"),
                pe.get("idle_cpu_s"),
                1 if "categories" in pe else None,
            ),
        )
        conn.executemany(
            "INSERT INTO category_time (run_id, pe, access, cpu_s, samples) VALUES (?, ?, ?, ?, ?)",
            [
                (run_id, pe["pe"], row["access"], row["cpu_s"], to_sql_u64(row["samples"]))
                for row in pe.get("categories", [])
            ],
        )
        conn.executemany(
            "INSERT INTO object_stats (run_id, pe, object_id, module, stat, value, value_exact) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    pe["pe"],
                    to_sql_u64(obj["id"]),
                    obj["module"],
                    stat,
                    *_stat_columns(value),
                )
                for obj in pe["objects"]
                for stat, value in obj["stats"].items()
            ],
        )
        conn.executemany(
            "INSERT INTO object_absent (run_id, pe, position, object_id, module, stat, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (run_id, pe["pe"], position, to_sql_u64(obj["id"]), obj["module"], stat, reason)
                for position, obj in enumerate(pe["objects"])
                for stat, reason in obj.get("absent", {}).items()
            ],
        )
        conn.executemany(
            "INSERT INTO latency (run_id, pe, access, enabler, count, observed_s, critical_s) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    pe["pe"],
                    row["access"],
                    row["enabler"],
                    to_sql_u64(row["count"]),
                    row["observed_s"],
                    row["critical_s"],
                )
                for row in pe.get("latency", [])
            ],
        )
    return run_id


def _json_or_null(value) -> str | None:
    return None if value is None else canonical_json(value)


def machine_fingerprint(doc: dict) -> str:
    """The run's machine fingerprint; derived from hostname/cpu/cores when the runtime gave none,
    so that runs from different machines are never silently mixed in one fit."""
    machine = doc.get("machine", {})
    if machine.get("fingerprint"):
        return machine["fingerprint"]
    basis = canonical_json({k: machine.get(k) for k in ("hostname", "cpu", "cores")})
    return hashlib.sha256(basis.encode()).hexdigest()
