"""`mprof bench SPEC.toml [SPEC.toml ...]`: run benchmark sweeps into profile databases."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path

from ..console import message_console
from ..db.store import ProfileDB
from ..errors import MprofError
from .procs import Interrupted
from .spec import check_database, check_runnable, load_spec
from .sweep import build_command, run_sweeps


def register(subparsers):
    p = subparsers.add_parser(
        "bench",
        help="sweep a benchmark over a parameter grid into a DB",
        description="Run sweeps into their profile databases.  Several sweeps given together "
        "run interleaved, repetition by repetition (each round runs every sweep's "
        "configurations once), so that a slow spell of a shared machine does not "
        "fall on all of one sweep, e.g. on a test set measured after its fit set.",
    )
    p.add_argument("spec", nargs="+", help="sweep specification (TOML)")
    p.add_argument("--db", help="record into this database instead of the spec's (one spec only)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args):
    specs = [load_spec(path) for path in args.spec]  # also checks the commands' placeholders
    if args.db and len(specs) > 1:
        raise MprofError("--db names one database: give one spec with it")
    databases = [Path(args.db) if args.db else spec.database for spec in specs]
    for spec, database in zip(specs, databases):  # dry runs too: they promise a real run works
        check_database(database, "--db" if args.db else spec.database_where or str(spec.path))
    # the same file however it is named (./x.db, an absolute path, a link)
    if len({os.path.realpath(db) for db in databases}) < len(databases):
        raise MprofError(
            "two of the specs record into the same database; a sweep's points "
            "are told apart by program, parameters and repetition only"
        )
    console = message_console()
    if args.dry_run:
        return max(_dry_run(spec, db) for spec, db in zip(specs, databases))
    for spec in specs:
        check_runnable(spec)  # before any database is created or any point runs
    try:
        summaries = run_sweeps(specs, databases=databases, console=console)
    except (KeyboardInterrupt, Interrupted) as exc:
        return _interrupted(exc, databases)
    for db, summary in zip(databases, summaries):
        print(
            f"{summary.total} point(s): {summary.ran} run, {summary.skipped} already "
            f"recorded, {len(summary.failures)} failed -> {db}"
        )
        for failure in summary.failures:
            lines = failure.reason.splitlines()
            first = lines[0].removesuffix("; stderr:")
            last = f" ({lines[-1].strip()})" if len(lines) > 1 and lines[-1].strip() else ""
            print(f"  failed: {failure.point.describe()}: {first}{last}", file=sys.stderr)
        if summary.probe_best is not None:
            print(
                f"  probe: at its best {summary.probe_best:.4g} s busy CPU; {summary.extra} "
                "extra repetition(s) for configurations measured only while it was slower"
            )
        if summary.unsteady:
            shown = "; ".join(p.describe().rsplit(" rep=", 1)[0] for p in summary.unsteady[:3])
            more = f" and {len(summary.unsteady) - 3} more" if len(summary.unsteady) > 3 else ""
            print(
                f"warning: {len(summary.unsteady)} configuration(s) have no run measured while "
                f"the probe was steady, their fastest run may be slowed: {shown}{more}",
                file=sys.stderr,
            )
    return 0 if all(summary.ok for summary in summaries) else 1


def _interrupted(exc, databases) -> int:
    """Stopped by SIGINT, SIGTERM or SIGHUP: the running point's processes are killed and its
    temporary files removed by now; say what was recorded, and exit 128 + the signal."""
    summaries = getattr(exc, "summaries", [])
    signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
    name = signal.Signals(signum).name
    recorded = sum(s.ran for s in summaries)
    where = ", ".join(str(db) for db in databases[: len(summaries)] or databases)
    print(
        f"mprof: bench: interrupted by {name}: {recorded} point(s) recorded in this run "
        f"({where}); the point running was stopped and not recorded; run the same command "
        "again to resume",
        file=sys.stderr,
    )
    return 128 + int(signum)


def _dry_run(spec, database: Path) -> int:
    """Print the commands of the points not yet recorded (the database is only read)."""
    points = spec.points()
    done: set[str] = set()
    if database.exists():
        with ProfileDB(database, create=False) as db:
            done = db.recorded_points()
    todo = [p for p in points if p.key not in done]
    for point in todo:
        print(
            " ".join(shlex.quote(a) for a in build_command(spec, point)) + f"  # {point.describe()}"
        )
    print(
        f"{len(todo)} of {len(points)} point(s) to run"
        + (
            f"; {len(points) - len(todo)} already recorded in {database}"
            if len(todo) < len(points)
            else ""
        ),
        file=sys.stderr,
    )
    return 0
