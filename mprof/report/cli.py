"""`mprof report RUN.json [--model MODEL.json]`: Cost Profile, latency and dependence chains."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import MprofError
from ..files import make_folder, read_bytes, write_file
from ..numbers import option


def register(subparsers):
    p = subparsers.add_parser(
        "report", help="post-run report: Cost Profile, observed/critical latency, chains",
        description="Combine a run profile with a cost model (mprof fit) into the paper's Cost "
        "Profile, observed and critical latency per access category, and the dependence chains "
        "of synchronization events.  Text, terminal tables, JSON or one self-contained HTML "
        "page.")
    p.add_argument("run", nargs="?", help="run profile (JSON, docs/run-profile.md)")
    p.add_argument("--model", help="model file written by `mprof fit` (SaveModel)")
    p.add_argument("--per-pe", action="store_true",
                   help="also show model/measured time and latency of every PE")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--format", choices=["text", "rich"],
                     help="text keeps the paper's shape; rich draws terminal tables "
                     "(default: rich on a terminal, text otherwise)")
    fmt.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--html", metavar="OUT", nargs="?", const="reports/",
                   help="also write a self-contained HTML page with plots; OUT is a file, or a "
                   "folder (ending in / or existing) that gets RUN's name with .html; without "
                   "OUT: reports/ (the default output folder)")
    p.add_argument("--digits", type=option("--digits", low=0, high=17, integer=True),
                   help="decimals of printed seconds")
    p.add_argument("--roots", type=option("--roots", low=0, high=10**6, integer=True), default=3,
                   help="walk chains back from this many accesses (default 3)")
    p.add_argument("--min-fraction", type=option("--min-fraction", low=0.0, high=1.0,
                                                 open_high=True), default=0.05,
                   help="chains stop at contributions below this fraction (default 0.05)")
    p.add_argument("--c-helper", metavar="DIR",
                   help="copy the C Cost Profile helper (mprof_report.h/.c) to DIR and exit")
    p.set_defaults(func=cmd_report)


def cmd_report(args):
    if args.c_helper:
        return _copy_c_helper(Path(args.c_helper))
    if not args.run:
        raise MprofError("report: a run profile is required (mprof report RUN.json)")
    from ..db.validate import load_profile
    from .build import build_report
    from .text import format_text, report_json

    doc = load_profile(args.run)
    model = None
    if args.model:
        from ..model import load_model

        model = load_model(args.model)
    report = build_report(doc, model, source=args.run, model_path=args.model,
                          roots=args.roots, min_fraction=args.min_fraction)
    if args.html:
        from .html import write_html

        out = Path(args.html)
        if args.html.endswith("/") or out.is_dir():
            out = out / (Path(args.run).stem + ".html")
        args.html = str(write_html(report, out, digits=args.digits))
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        fmt = args.format or ("rich" if sys.stdout.isatty() else "text")
        if fmt == "rich":
            from .terminal import print_rich

            print_rich(report, per_pe=args.per_pe, digits=args.digits)
        else:
            sys.stdout.write(format_text(report, per_pe=args.per_pe, digits=args.digits))
    if args.html:
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


C_HELPER = Path(__file__).with_name("c")


def _copy_c_helper(dest: Path) -> int:
    make_folder(dest)
    for name in ("mprof_report.h", "mprof_report.c"):
        src = C_HELPER / name
        if not src.exists():
            raise MprofError(f"{src} is missing from this installation")
        write_file(dest / name, read_bytes(src, "C helper"), what="C file")
        print(dest / name)
    return 0
