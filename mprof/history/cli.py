"""`mprof history`: keep gate and benchmark results per commit, show them as series, export them
to airspeed velocity and Bencher (docs/history.md)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..errors import MprofError
from ..files import write_file


def register(subparsers):
    parser = subparsers.add_parser(
        "history",
        help="results over commits: add gate or benchmark "
        "results, show series, export to asv or Bencher",
    )
    sub = parser.add_subparsers(dest="history_command", metavar="ACTION", required=True)

    p = sub.add_parser(
        "add", help="append results of one commit (a gate --json file or a benchmark's output)"
    )
    p.add_argument("history", help="history database (SQLite, created if missing)")
    p.add_argument(
        "results",
        nargs="+",
        help="`mprof gate --json` files, or benchmark output "
        "(lines with JSON objects, as benchmarks/*.py and `make bench` print)",
    )
    p.add_argument("--commit", help="commit hash (default: `git rev-parse HEAD` here)")
    p.add_argument(
        "--date", help="commit date, ISO 8601 (default: the commit's date from git, else now)"
    )
    p.add_argument("--branch", help="branch name (default: the current branch from git)")
    p.add_argument("--machine", help="machine name (default: this host's name)")
    p.add_argument(
        "--name",
        help="benchmark output: the benchmark's name (default: its "
        '"benchmark" field, the script in a `== ... (script.py)` header, or the '
        "file's name)",
    )
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("show", help="series over commits as text, or an HTML page of charts")
    p.add_argument("history")
    p.add_argument("--series", metavar="GLOB", help="only series matching this pattern")
    p.add_argument("--category", metavar="GLOB", help="only categories matching this pattern")
    p.add_argument("--machine", help="only this machine's results")
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write an HTML page with one chart per category (self-contained)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per measurement")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="airspeed velocity's results folder or Bencher's JSON")
    p.add_argument("history")
    p.add_argument(
        "--format",
        choices=("asv", "bencher"),
        required=True,
        help="asv: a results folder (benchmarks.json, <machine>/machine.json, a file "
        "per commit) for `asv publish`; bencher: Bencher Metric Format JSON of one "
        "commit",
    )
    p.add_argument(
        "-o",
        "--output",
        help="asv: the results folder (required); bencher: the file (default: standard output)",
    )
    p.add_argument("--commit", help="bencher: the commit (a unique prefix; default: the latest)")
    p.add_argument("--machine", help="only this machine's results")
    p.set_defaults(func=cmd_export)


def _git(*args) -> str | None:
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def _iso(date: str) -> str:
    try:
        d = datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        raise MprofError(f"--date {date}: not an ISO 8601 date (2026-11-26T12:00:00Z)") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cmd_add(args):
    from .store import History, read_result

    results = [(path, *read_result(path, args.name)) for path in args.results]
    commit = args.commit or _git("rev-parse", "HEAD")
    if not commit:
        raise MprofError("no --commit given and `git rev-parse HEAD` found none here")
    if not all(c in "0123456789abcdefABCDEF" for c in commit) or not 4 <= len(commit) <= 64:
        raise MprofError(f"--commit {commit}: not a commit hash")
    commit = commit.lower()
    if args.date is not None and not args.date.strip():
        raise MprofError("--date: empty; give an ISO 8601 date (2026-11-26T12:00:00Z)")
    date = args.date or _git("show", "-s", "--format=%cI", commit)
    date_known = bool(date)
    date = _iso(date) if date else datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    branch = args.branch or (_git("rev-parse", "--abbrev-ref", "HEAD") if not args.commit else None)
    machine = args.machine or socket.gethostname()
    with History(args.history) as history:
        for path, kind, measurements in results:
            n = history.add(commit, date, branch, machine, measurements, str(path), date_known)
            print(
                f"{path}: {n} {kind} measurement(s) for {commit[:12]} on {machine}", file=sys.stderr
            )
    return 0


def _points(args):
    from .store import History

    with History(args.history, create=False) as history:
        points = history.points(args.machine, args.series, args.category)
    if not points:
        raise MprofError(
            f"{args.history}: no measurement"
            + (" matches" if args.series or args.category or args.machine else "")
        )
    return points


def cmd_show(args):
    from .show import html_page, text

    points = _points(args)
    if args.html:
        page = html_page(points, f"mprof history: {Path(args.history).name}")
        write_file(args.html, page, what="history page")
        print(f"wrote {args.html}", file=sys.stderr)
        return 0
    if args.json:
        for p in points:
            print(
                json.dumps(
                    {
                        "commit": p.commit,
                        "date": p.date,
                        "branch": p.branch,
                        "machine": p.machine,
                        "series": p.m.series,
                        "category": p.m.category,
                        "kind": p.m.kind,
                        "value": p.m.value,
                        "low": p.m.low,
                        "high": p.m.high,
                        "unit": p.m.unit,
                        "source": p.source,
                    }
                )
            )
        return 0
    sys.stdout.write(text(points))
    return 0


def cmd_export(args):
    from .export import bencher_json, write_asv
    from .store import History

    with History(args.history, create=False) as history:
        if args.format == "asv":
            if args.commit:
                raise MprofError("--commit applies to --format bencher (asv gets every commit)")
            if not args.output:
                raise MprofError("--format asv needs -o DIR (the asv results folder)")
            paths = write_asv(history, Path(args.output), args.machine)
            print(
                f"wrote {len(paths) - 1} asv results file(s) and benchmarks.json under "
                f"{args.output}",
                file=sys.stderr,
            )
            return 0
        doc = bencher_json(history, args.commit, args.machine)
    text = json.dumps(doc, indent=2) + "\n"
    if args.output:
        write_file(args.output, text, what="export")
    else:
        sys.stdout.write(text)
    return 0
