"""Database schema: numbered SQL migrations kept in `mprof/db/migrations/`.

Migration files are named `NNNN_description.sql`; the database records the highest applied
number in `schema_version`.  Opening a database applies whatever is missing, in order, each in
its own transaction, so an older database is brought up to date the first time a newer mprof
touches it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import MprofError

# The SQL is package data (installed with the package, docs/install.md); profile-db/migrations
# in the source tree is a link to this folder.
MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")
_NAME = re.compile(r"^(\d{4})_[A-Za-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    if not directory.is_dir():
        raise MprofError(f"database migrations not found in {directory}")
    found = []
    for path in sorted(directory.iterdir()):
        match = _NAME.match(path.name)
        if match:
            found.append(Migration(int(match.group(1)), path.stem, path.read_text()))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise MprofError(f"migrations in {directory} are not numbered 1..N: {versions}")
    return found


LATEST_VERSION = len(migrations())


def current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if row is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return row[0] or 0


def migrate(conn: sqlite3.Connection, target: int | None = None, name: str = "") -> int:
    """Apply missing migrations up to `target` (default: all).  Returns the resulting version.
    `name` (the database's path) begins the error for a database of a newer mprof.

    Each step runs under BEGIN IMMEDIATE and re-reads the version inside the transaction, so two
    processes opening a fresh database at once do not both apply the same step.
    """
    steps = migrations()
    target = len(steps) if target is None else target
    for step in steps[:target]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = current_version(conn)
            if version > len(steps):
                raise MprofError(
                    f"{name + ': ' if name else ''}database schema version {version} is newer "
                    f"than this mprof understands ({len(steps)})"
                )
            if version < step.version:
                if version == 0:
                    conn.execute(
                        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                        "name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT "
                        "(strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))"
                    )
                # executescript() would COMMIT on its own; run statement by statement instead
                # so that the step and its version row commit together.
                for statement in _statements(step.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version, name) VALUES (?, ?)",
                    (step.version, step.name),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (I/O error)
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise
    return current_version(conn)


def _statements(sql: str):
    """Split a migration into statements (sqlite3.complete_statement knows about quoting)."""
    pending = ""
    for line in sql.splitlines(keepends=True):
        if not pending and line.strip().startswith("--"):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                yield pending
            pending = ""
    if pending.strip():
        yield pending
