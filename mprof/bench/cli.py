"""`mprof bench SPEC.toml`: run a benchmark sweep into a profile database."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from .spec import load_spec
from .sweep import run_sweep


def register(subparsers):
    p = subparsers.add_parser("bench", help="sweep a benchmark over a parameter grid into a DB")
    p.add_argument("spec", help="sweep specification (TOML)")
    p.add_argument("--db", help="record into this database instead of the spec's")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args):
    spec = load_spec(args.spec)
    console = Console(stderr=True)
    summary = run_sweep(spec, database=Path(args.db) if args.db else None,
                        dry_run=args.dry_run, console=console)
    if args.dry_run:
        return 0
    db = args.db or spec.database
    print(f"{summary.total} point(s): {summary.ran} run, {summary.skipped} already recorded, "
          f"{len(summary.failures)} failed -> {db}")
    for failure in summary.failures:
        first = failure.reason.splitlines()[0]
        print(f"  failed: {failure.point.describe()}: {first}", file=sys.stderr)
    return 0 if summary.ok else 1
