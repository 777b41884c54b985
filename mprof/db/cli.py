"""`mprof db`: import, list, show and export run profiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import MprofError
from .store import Condition, ProfileDB, canonical_json, explain_no_match
from .validate import parse_profile, read_text


def register(subparsers):
    parser = subparsers.add_parser("db", help="profile database: import, list, show, export runs")
    sub = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)

    p = sub.add_parser("import", help="import run profiles (all or nothing)")
    p.add_argument("db", help="database file (created if missing)")
    p.add_argument("profiles", nargs="+", help="run profile JSON files, or JSON-lines exports")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("list", help="list runs with their parameters")
    p.add_argument("db")
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="keep runs whose parameter or setting NAME equals VALUE (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="print one run profile")
    p.add_argument("db")
    p.add_argument("run_id", type=int)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="export all runs as JSON lines (one profile per line)")
    p.add_argument("db")
    p.add_argument("-o", "--output", help="output file (default: standard output)")
    p.set_defaults(func=cmd_export)


def _open_existing(path) -> ProfileDB:
    return ProfileDB(path, create=False)


def _read_sources(path: str) -> list[tuple[str, dict]]:
    """A file holds one run profile, or (as written by `mprof db export`) one per line."""
    text = read_text(path)
    stripped = text.strip()
    lines = [line for line in stripped.splitlines() if line.strip()]
    if len(lines) > 1 and all(line.lstrip().startswith("{") for line in lines):
        try:
            json.loads(lines[0])
            is_jsonl = True
        except (ValueError, RecursionError):  # not one document per line
            is_jsonl = False
        if is_jsonl:
            return [(f"{path}:{i}", parse_profile(line, f"{path}:{i}"))
                    for i, line in enumerate(lines, 1)]
    return [(path, parse_profile(text, path))]


def cmd_import(args):
    docs = []
    for path in args.profiles:  # validate everything before opening the database
        docs.extend(_read_sources(path))
    with ProfileDB(args.db) as db:
        result = db.import_documents(docs, validate=False)
    for source, run_id in result.duplicates:
        print(f"{source}: already stored as run {run_id}, skipped", file=sys.stderr)
    print(f"imported {len(result.stored)} run(s) into {args.db}"
          + (f": ids {', '.join(map(str, result.stored))}" if result.stored else ""))
    return 0


def cmd_list(args):
    where = [Condition.parse(w) for w in args.where]
    with _open_existing(args.db) as db:
        runs = db.runs(where)
        if where and not runs:  # a misspelled name or value is an input error, not "0 runs"
            raise MprofError(f"{args.db}: --where "
                             + " ".join(f"{c.name}={c.value}" for c in where)
                             + f" selects no run: {explain_no_match(db.runs(), where)}")
    if args.json:
        for run in runs:
            print(json.dumps({"id": run.id, "program": run.program, "npes": run.npes,
                              "elapsed_s": run.elapsed_s, "params": run.params,
                              "settings": run.settings}))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{args.db}: {len(runs)} run(s)")
    for column in ("id", "program", "npes", "elapsed_s", "params", "settings"):
        table.add_column(column, justify="right" if column in ("id", "npes", "elapsed_s")
                         else "left")
    for run in runs:
        table.add_row(
            str(run.id), run.program, str(run.npes),
            "" if run.elapsed_s is None else f"{run.elapsed_s:.6g}",
            " ".join(f"{k}={v}" for k, v in run.params.items()),
            " ".join(f"{k}={v}" for k, v in run.settings.items()),
        )
    Console(width=160).print(table)
    return 0


def cmd_show(args):
    with _open_existing(args.db) as db:
        doc = db.document(args.run_id)
    print(json.dumps(doc, indent=2))
    return 0


def cmd_export(args):
    with _open_existing(args.db) as db:
        lines = [canonical_json(doc) + "\n" for _, doc in db.documents()]
    if args.output:
        Path(args.output).write_text("".join(lines))
        print(f"exported {len(lines)} run(s) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.writelines(lines)
    return 0
