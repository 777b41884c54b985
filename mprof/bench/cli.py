"""`mprof bench SPEC.toml`: run a benchmark sweep into a profile database."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..console import message_console
from ..db.store import ProfileDB
from .spec import check_runnable, load_spec
from .sweep import build_command, run_sweep


def register(subparsers):
    p = subparsers.add_parser("bench", help="sweep a benchmark over a parameter grid into a DB")
    p.add_argument("spec", help="sweep specification (TOML)")
    p.add_argument("--db", help="record into this database instead of the spec's")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args):
    spec = load_spec(args.spec)  # also checks the command's placeholders
    console = message_console()
    if args.dry_run:
        return _dry_run(spec, Path(args.db) if args.db else spec.database)
    check_runnable(spec)  # before the database is created or any point runs
    summary = run_sweep(spec, database=Path(args.db) if args.db else None, console=console)
    db = args.db or spec.database
    print(f"{summary.total} point(s): {summary.ran} run, {summary.skipped} already recorded, "
          f"{len(summary.failures)} failed -> {db}")
    for failure in summary.failures:
        lines = failure.reason.splitlines()
        first = lines[0].removesuffix("; stderr:")
        last = f" ({lines[-1].strip()})" if len(lines) > 1 and lines[-1].strip() else ""
        print(f"  failed: {failure.point.describe()}: {first}{last}", file=sys.stderr)
    return 0 if summary.ok else 1


def _dry_run(spec, database: Path) -> int:
    """Print the commands of the points not yet recorded (the database is only read)."""
    points = spec.points()
    done: set[str] = set()
    if database.exists():
        with ProfileDB(database, create=False) as db:
            done = db.recorded_points()
    todo = [p for p in points if p.key not in done]
    for point in todo:
        print(" ".join(shlex.quote(a) for a in build_command(spec, point))
              + f"  # {point.describe()}")
    print(f"{len(todo)} of {len(points)} point(s) to run"
          + (f"; {len(points) - len(todo)} already recorded in {database}"
             if len(todo) < len(points) else ""), file=sys.stderr)
    return 0
