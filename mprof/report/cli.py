"""`mprof report RUN.json [--model MODEL.json]`: measured time per category, Cost Profile,
latency and dependence chains; `mprof report RUN_1.json RUN_2.json ...`: the runs across PE
counts."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import MprofError
from ..files import make_folder, read_bytes, write_file
from ..latency.cli import DIGITS, MIN_FRACTION, ROOTS
from .jsonout import dumps


def register(subparsers):
    p = subparsers.add_parser(
        "report",
        help="post-run report: Cost Profile, observed/critical latency, chains",
        description="Combine a run profile with a cost model (mprof fit) into the paper's Cost "
        "Profile, observed and critical latency per access category, and the dependence chains "
        "of synchronization events, led by the measured CPU time per access category (with "
        "the model's estimate beside it) and, when the PEs were busy unevenly, load imbalance.  "
        "Several runs of one program are compared across PE counts.  Text, terminal tables, "
        "JSON or one self-contained HTML page.",
    )
    p.add_argument(
        "run",
        nargs="*",
        metavar="RUN",
        help="run profile (JSON, docs/run-profile.md); several runs of one program "
        "at different PE counts are compared across P",
    )
    p.add_argument("--model", help="model file written by `mprof fit` (SaveModel)")
    p.add_argument(
        "--per-pe",
        action="store_true",
        help="also show every PE's wall-clock, CPU and category times, "
        "statistics, model time and latency (one run)",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument(
        "--format",
        choices=["text", "rich"],
        help="text keeps the paper's shape; rich draws terminal tables "
        "(default: rich on a terminal, text otherwise)",
    )
    fmt.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--html",
        metavar="OUT",
        nargs="?",
        const="reports/",
        help="also write a self-contained HTML page with plots; OUT is a file, or a "
        "folder (ending in / or existing) that gets RUN's name with .html (with "
        "several runs: the first's name with -compare.html); without OUT: reports/ "
        "(the default output folder)",
    )
    p.add_argument(
        "--what-if",
        metavar="NAME=FACTORx",
        action="append",
        help="with --model: the model's prediction with a parameter (module:Term, "
        "e.g. rts:Msg=0.5x) or a statistic (module.Stat, e.g. rts.MsgSent=2x) "
        "scaled by a factor or set to a value (NAME=VALUE), per category with its "
        "band; may be given several times",
    )
    p.add_argument("--digits", type=DIGITS, help="decimals of printed seconds")
    p.add_argument(
        "--roots",
        type=ROOTS,
        default=3,
        help="walk chains back from this many accesses (default 3)",
    )
    p.add_argument(
        "--min-fraction",
        type=MIN_FRACTION,
        default=0.05,
        help="chains stop at contributions below this fraction (default 0.05)",
    )
    p.add_argument(
        "--c-helper",
        metavar="DIR",
        help="copy the C Cost Profile helper (mprof_report.h/.c) to DIR and exit",
    )
    p.set_defaults(func=cmd_report)


def cmd_report(args):
    if args.c_helper:
        if args.run or args.model:  # nothing would read them: not a report that went missing
            raise MprofError(
                "report: --c-helper DIR only copies the C helper; give run profiles "
                "(and --model) in a command of their own"
            )
        return _copy_c_helper(Path(args.c_helper))
    if not args.run:
        raise MprofError("report: a run profile is required (mprof report RUN.json)")
    from ..db.validate import load_profile
    from ..profile import RunProfile
    from .build import build_report
    from .text import format_text, report_json

    docs = [(path, load_profile(path)) for path in args.run]
    model = None
    if args.model:
        from ..model import load_model

        model = load_model(args.model)
    if len(docs) > 1:
        return _compare(args, docs, model)
    run_path, doc = docs[0]
    report = build_report(
        RunProfile.from_document(doc, run_path),
        model,
        source=run_path,
        model_path=args.model,
        roots=args.roots,
        min_fraction=args.min_fraction,
        what_if=args.what_if,
    )
    # every format shows the figures of the JSON: one that overflowed (a model parameter of
    # 1e308) is an error before anything is written, not "inf s" in a table or a plot
    text = dumps(report_json(report), "report", "nothing was written", indent=2)
    if args.html:
        from .html import write_html

        args.html = str(
            write_html(report, _html_path(args.html, Path(run_path).stem), digits=args.digits)
        )
    if args.json:
        print(text)
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


def _html_path(option: str, stem: str) -> Path:
    out = Path(option)
    if option.endswith("/") or out.is_dir():
        out = out / (stem + ".html")
    return out


def _compare(args, docs, model) -> int:
    """Several runs: the comparison across PE counts (mprof.report.compare)."""
    if args.per_pe or args.what_if:
        raise MprofError(
            f"report: {'--per-pe' if args.per_pe else '--what-if'} applies to "
            "one run; give one run profile"
        )
    from .compare import compare, compare_json, format_compare

    cmp = compare(docs, model, model_path=args.model)
    text = dumps(compare_json(cmp), "report", "nothing was written", indent=2)  # as above
    if args.html:
        from .html import write_compare_html

        stem = Path(docs[0][0]).stem + "-compare"
        args.html = str(write_compare_html(cmp, _html_path(args.html, stem), digits=args.digits))
    if args.json:
        print(text)
    else:
        sys.stdout.write(format_compare(cmp, digits=args.digits))
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
