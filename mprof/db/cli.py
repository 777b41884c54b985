"""`mprof db`: import, list, show and export run profiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import MprofError
from ..files import write_file
from ..numbers import option
from ..profile import DEFAULT_MEASURE, MEASURES, RunProfile
from .store import Condition, ProfileDB, canonical_json, explain_no_match
from .validate import parse_profile, read_text


def register(subparsers):
    parser = subparsers.add_parser(
        "db",
        help="profile database: import, list, show, export runs",
        description="The profile database (SQLite, docs/database.md) that mprof bench fills "
        "and fits, reports and gates read: import run profiles, list runs with their "
        "parameters and settings, show one run's profile, export them (profiles, Extra-P, "
        "CUBE).  A file of another application is refused and left unchanged.",
    )
    sub = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)

    p = sub.add_parser("import", help="import run profiles (all or nothing)")
    p.add_argument("db", help="database file (created if missing)")
    p.add_argument("profiles", nargs="+", help="run profile JSON files, or JSON-lines exports")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("list", help="list runs with their parameters")
    p.add_argument("db", help="profile database")
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="keep runs whose parameter or setting NAME equals VALUE (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="print one run profile")
    p.add_argument("db", help="profile database")
    p.add_argument(
        "run_id",
        type=option("RUN_ID", low=1, high=2**63 - 1, integer=True),
        help="run id (the first column of mprof db list)",
    )
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "export",
        help="export runs: JSON lines (one profile per line), Extra-P "
        "JSON Lines, CUBE4 experiment folders (docs/exports.md), or tables as "
        "CSV or Parquet (docs/frames.md)",
    )
    p.add_argument("db", help="profile database")
    p.add_argument(
        "-o",
        "--output",
        help="output file (default: standard output); for "
        "--format cube the experiment folder (required); for csv and parquet the "
        "folder that receives one file per table, or with --table the file "
        "(csv: default standard output)",
    )
    p.add_argument(
        "--format",
        choices=("profiles", "extrap", "cube", "csv", "parquet"),
        default="profiles",
        help="profiles (default): the stored run profiles; extrap: Extra-P JSON "
        "Lines; cube: one CUBE4 profile.cubex per run; csv, parquet: the tables "
        "runs, pe_times, statistics, latency, category_times (with --model also "
        "cost_categories and fits)",
    )
    p.add_argument("--table", choices=TABLE_NAMES, help="csv and parquet: write this table only")
    p.add_argument(
        "--model",
        metavar="MODEL",
        help="csv and parquet: a model file; adds the tables cost_categories (the "
        "Cost Profile per run, PE and category) and fits (its parameters)",
    )
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="export only runs whose parameter or setting NAME equals VALUE",
    )
    p.add_argument(
        "--measure",
        choices=MEASURES,
        default=DEFAULT_MEASURE,
        help="time measure of the extrap and cube formats (default: %(default)s)",
    )
    p.add_argument(
        "--params",
        metavar="A,B",
        help="parameters of the extrap and cube formats (default: every numeric "
        "parameter, PE count as npes, that varies across the exported runs, "
        "except settings: on/off switches with values 0 and one other, and "
        "parameters equal to a runtime setting in every run)",
    )
    p.set_defaults(func=cmd_export)


TABLE_NAMES = (
    "runs",
    "pe_times",
    "statistics",
    "latency",
    "category_times",
    "cost_categories",
    "fits",
)


def _open_existing(path) -> ProfileDB:
    return ProfileDB(path, create=False)


def _read_sources(path: str) -> list[tuple[str, dict]]:
    """A file holds one run profile, or (as written by `mprof db export`) one per line."""
    text = read_text(path)
    # (line number in the file, text) of each line that is not blank
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > 1 and all(line.lstrip().startswith("{") for _, line in lines):
        try:
            json.loads(lines[0][1])
            is_jsonl = True
        except (ValueError, RecursionError):  # not one document per line
            is_jsonl = False
        if is_jsonl:  # a run's name is its line; errors give the file's line and column
            return [(f"{path}:{i}", parse_profile(line, path, first_line=i)) for i, line in lines]
    return [(path, parse_profile(text, path))]


def cmd_import(args):
    docs = []
    for path in args.profiles:  # validate everything before opening the database
        docs.extend(_read_sources(path))
    with ProfileDB(args.db) as db:
        result = db.import_documents(docs, validate=False)
    for source, run_id in result.duplicates:
        print(f"{source}: already stored as run {run_id}, skipped", file=sys.stderr)
    print(
        f"imported {len(result.stored)} run(s) into {args.db}"
        + (f": ids {', '.join(map(str, result.stored))}" if result.stored else "")
    )
    return 0


def cmd_list(args):
    where = [Condition.parse(w) for w in args.where]
    with _open_existing(args.db) as db:
        runs = db.runs(where)
        if where and not runs:  # a misspelled name or value is an input error, not "0 runs"
            raise MprofError(
                f"{args.db}: --where "
                + " ".join(f"{c.name}={c.value}" for c in where)
                + f" selects no run: {explain_no_match(db.runs(), where)}"
            )
    if args.json:
        for run in runs:
            print(
                json.dumps(
                    {
                        "id": run.id,
                        "program": run.program,
                        "npes": run.npes,
                        "elapsed_s": run.elapsed_s,
                        "params": run.params,
                        "settings": run.settings,
                    }
                )
            )
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{args.db}: {len(runs)} run(s)")
    for column in ("id", "program", "npes", "elapsed_s", "params", "settings"):
        table.add_column(
            column, justify="right" if column in ("id", "npes", "elapsed_s") else "left"
        )
    for run in runs:
        table.add_row(
            str(run.id),
            run.program,
            str(run.npes),
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


def _selected_runs(args) -> list[RunProfile]:
    where = [Condition.parse(w) for w in args.where]
    with _open_existing(args.db) as db:
        runs = db.runs(where)
        if not runs:
            raise MprofError(
                f"{args.db}: no run to export"
                + (f": {explain_no_match(db.runs(), where)}" if where else "")
            )
    from .. import io

    return io.reader("sqlite")(Path(args.db), where)  # from the tables, latency included


def cmd_export(args):
    if args.format in ("csv", "parquet"):
        return _export_tables(args)
    if args.table or args.model:
        raise MprofError("--table and --model apply to --format csv and parquet")
    if args.format != "profiles":
        return _export_for_tools(args)
    if args.where or args.params:
        raise MprofError("--where and --params apply to --format extrap and cube")
    with _open_existing(args.db) as db:  # rebuilt from the tables
        lines = [canonical_json(doc) + "\n" for _, doc in db.documents()]
    if args.output:
        write_file(args.output, "".join(lines), what="export")
        print(f"exported {len(lines)} run(s) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.writelines(lines)
    return 0


def _export_for_tools(args):
    from .. import io

    runs = _selected_runs(args)
    params = None
    if args.params is not None:
        params = [p.strip() for p in args.params.split(",") if p.strip()]
        if not params:  # "" or ",,": a model over no parameter is not what was asked for
            raise MprofError(f"--params {args.params!r}: names no parameter (--params A,B)")
        twice = sorted({p for p in params if params.count(p) > 1})
        if twice:
            raise MprofError(f"--params: {', '.join(twice)} named more than once")
        from ..exports.calltree import numeric_params

        for run in runs:
            missing = [p for p in params if p not in numeric_params(run)]
            if missing:
                raise MprofError(
                    f"--params: run {run.id} has no numeric parameter {', '.join(missing)}"
                )
    from ..exports.calltree import model_params

    params, warnings = model_params(runs, params)
    for warning in warnings:
        print(f"mprof: warning: {warning}", file=sys.stderr)
    done = io.writer(args.format)(
        runs,
        Path(args.output) if args.output else None,
        io.WriteOptions(measure=args.measure, params=params),
    )
    if done:
        print(done, file=sys.stderr)
    return 0


def _export_tables(args):
    """The tidy tables of mprof.frames as CSV or Parquet files (docs/frames.md)."""
    from .. import frames, io

    if args.params:
        raise MprofError("--params applies to --format extrap and cube")
    if args.measure != DEFAULT_MEASURE:
        raise MprofError(
            "--measure applies to --format extrap and cube (the tables hold every measure)"
        )
    names = [args.table] if args.table else list(TABLE_NAMES[:5])
    if not args.table and args.model:
        names += ["cost_categories", "fits"]
    if args.table in ("cost_categories", "fits") and not args.model:
        raise MprofError(f"--table {args.table} needs --model MODEL")
    if args.model and args.table and args.table not in ("cost_categories", "fits"):
        raise MprofError(
            f"--model adds the tables cost_categories and fits; --table {args.table} "
            "does not use it (leave it out, or name one of those tables)"
        )
    to_stdout = bool(args.table) and args.format == "csv" and not args.output
    if not args.output and not to_stdout:
        raise MprofError(
            f"--format {args.format} needs -o "
            + ("FILE" if args.table else "DIR (a folder, one file per table)")
        )
    where = [Condition.parse(w) for w in args.where]
    with _open_existing(args.db) as db:  # a clear message for a missing or foreign file
        if where and not db.runs(where):
            raise MprofError(
                f"{args.db}: --where selects no run: {explain_no_match(db.runs(), where)}"
            )
    runs = frames.load_runs(args.db, where=where)
    done = io.writer(args.format)(
        runs,
        None if to_stdout else Path(args.output),
        io.WriteOptions(tables=names, model=args.model),
    )
    if done:
        print(done, file=sys.stderr)
    return 0
