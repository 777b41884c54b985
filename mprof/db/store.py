"""The profile database: an SQLite file holding run profiles (DESIGN.md §1 step 4).

Writers use WAL mode, a busy timeout and a retry loop around BEGIN IMMEDIATE, so several
`mprof bench` or `mprof db import` processes can record into one database at once without
losing runs.  An import is all-or-nothing: documents are validated before the transaction
starts and every row of every document is written inside it.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import MprofError
from . import schema
from .validate import validate_profile

BUSY_TIMEOUT_MS = 30_000
LOCK_RETRIES = 50


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


def _is_lock_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class ProfileDB:
    """An open profile database.  Use as a context manager or call close()."""

    def __init__(self, path: str | Path, *, create: bool = True, migrate: bool = True):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise MprofError(f"{self.path}: no such profile database")
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
            self._retry(lambda: self.conn.execute("PRAGMA journal_mode = WAL").fetchone())
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            if migrate:
                self._retry(lambda: schema.migrate(self.conn))
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise MprofError(f"{self.path}: not a usable profile database: {exc}") from None

    # -- plumbing ---------------------------------------------------------------------------

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def version(self) -> int:
        return schema.current_version(self.conn)

    def _retry(self, action):
        """Run `action`, retrying when another process holds the write lock past the timeout."""
        for attempt in range(LOCK_RETRIES):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_lock_error(exc) or attempt == LOCK_RETRIES - 1:
                    raise
                time.sleep(0.01 + random.random() * 0.05 * (attempt + 1))

    def transaction(self, body):
        """Run body(conn) inside BEGIN IMMEDIATE ... COMMIT, retrying on lock contention."""

        def attempt():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(self.conn)
                self.conn.execute("COMMIT")
                return result
            except BaseException:
                self.conn.execute("ROLLBACK")
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
        prepared = [(source, doc, canonical_json(doc)) for source, doc in docs]

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
                    run_id = _insert_run(conn, source, doc, text, digest)
                    result.stored.append(run_id)
                if point is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO sweep_points (point_key, run_id, program, "
                        "params_json, npes, env_json, repetition, recorded_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (point.key, run_id, point.program, canonical_json(point.params),
                         point.npes, canonical_json(point.env), point.repetition, _now()),
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
        for run_id, kind, name, value in self.conn.execute(
            "SELECT run_id, kind, name, value_json FROM run_params ORDER BY run_id, kind, name"
        ):
            table = runs[run_id].params if kind == "param" else runs[run_id].settings
            table[name] = json.loads(value)
        return [r for r in runs.values() if all(c.matches(r) for c in where)]

    def document(self, run_id: int) -> dict:
        row = self.conn.execute("SELECT document FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise MprofError(f"{self.path}: no run with id {run_id}")
        return json.loads(row[0])

    def documents(self) -> Iterator[tuple[int, dict]]:
        for run_id, text in self.conn.execute("SELECT id, document FROM runs ORDER BY id"):
            yield run_id, json.loads(text)

    def recorded_points(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT point_key FROM sweep_points")}

    def pe_samples(self, run_ids: Sequence[int]) -> dict[int, list[PETimes]]:
        """run id -> the PEs' times, in PE order (CPU times are None for version 1 runs)."""
        out: dict[int, list] = {}
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, *times in self.conn.execute(
                "SELECT run_id, elapsed_s, idle_s, cpu_s, idle_cpu_s FROM pe_samples "
                f"WHERE run_id IN ({marks}) ORDER BY run_id, pe",
                chunk,
            ):
                out.setdefault(run_id, []).append(PETimes(*times))
        return out

    def object_stats(self, run_ids: Sequence[int]) -> dict[int, dict[int, list]]:
        """run id -> pe -> [(object id, module, {stat: value})] (long format regrouped)."""
        out: dict[int, dict[int, dict]] = {}
        for chunk in _chunks(run_ids):
            marks = ",".join("?" * len(chunk))
            for run_id, pe, oid, module, stat, value in self.conn.execute(
                "SELECT run_id, pe, object_id, module, stat, value FROM object_stats "
                f"WHERE run_id IN ({marks}) ORDER BY run_id, pe, object_id",
                chunk,
            ):
                objects = out.setdefault(run_id, {}).setdefault(pe, {})
                objects.setdefault(oid, (oid, module, {}))[2][stat] = value
        return {r: {pe: list(objs.values()) for pe, objs in pes.items()} for r, pes in out.items()}


def _chunks(items, size=500):
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _insert_run(conn, source, doc, text, digest) -> int:
    machine = doc.get("machine", {})
    cur = conn.execute(
        "INSERT INTO runs (program, backend, npes, started_at, elapsed_s, hostname, "
        "machine_fingerprint, source, imported_at, document_sha256, document) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (doc["program"], doc.get("backend"), doc["npes"], doc.get("started_at"),
         doc.get("elapsed_s"), machine.get("hostname"), machine_fingerprint(doc), source,
         _now(), digest, text),
    )
    run_id = cur.lastrowid
    for kind, key in (("param", "params"), ("setting", "settings")):
        conn.executemany(
            "INSERT INTO run_params (run_id, kind, name, value_json, value_num) "
            "VALUES (?, ?, ?, ?, ?)",
            [(run_id, kind, name, json.dumps(value),
              float(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
              else None)
             for name, value in doc.get(key, {}).items()],
        )
    for pe in doc["pes"]:
        conn.execute(
            "INSERT INTO pe_samples (run_id, pe, elapsed_s, idle_s, cpu_s, idle_cpu_s) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, pe["pe"], pe["elapsed_s"], pe["idle_s"], pe.get("cpu_s"),
             pe.get("idle_cpu_s")),
        )
        conn.executemany(
            "INSERT INTO object_stats (run_id, pe, object_id, module, stat, value) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, pe["pe"], obj["id"], obj["module"], stat, value)
             for obj in pe["objects"] for stat, value in obj["stats"].items()],
        )
        conn.executemany(
            "INSERT INTO latency (run_id, pe, access, enabler, count, observed_s, critical_s) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(run_id, pe["pe"], row["access"], row["enabler"], row["count"],
              row["observed_s"], row["critical_s"]) for row in pe.get("latency", [])],
        )
    return run_id


def machine_fingerprint(doc: dict) -> str:
    """The run's machine fingerprint; derived from hostname/cpu/cores when the runtime gave none,
    so that runs from different machines are never silently mixed in one fit."""
    machine = doc.get("machine", {})
    if machine.get("fingerprint"):
        return machine["fingerprint"]
    basis = canonical_json({k: machine.get(k) for k in ("hostname", "cpu", "cores")})
    return hashlib.sha256(basis.encode()).hexdigest()
