"""`mprof gate`: the CI performance regression gate (docs/gate.md).

    mprof gate --baseline B.db --candidate C.db [--model M.json] [--fit S.tcl] [options]
    mprof gate run --spec SWEEP.toml --baseline-bin X --candidate-bin Y [--budget N] [options]

Exit codes: 0 pass, 1 regression (or behaviour change), 2 tool or input error,
3 inconclusive (0 with --inconclusive-ok).  Errors are caught here and mapped to 2, whatever
their kind, so that CI can tell "the code got slower" from "the gate could not decide".
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import traceback

from ..bench.procs import Interrupted, interruptible
from ..db.store import Condition
from ..errors import MprofError, bounded_message

# The statistics (SciPy) are imported when a gate runs, not whenever `mprof` starts.
EXIT_ERROR = 2  # = evaluate.EXIT_ERROR

HELP = "compare candidate runs against a baseline; exit 1 on a significant regression"


def register(subparsers):
    p = subparsers.add_parser(
        "gate",
        help=HELP,
        usage="mprof gate --baseline DB --candidate DB [options]\n"
        "       mprof gate run --spec SWEEP.toml (--baseline-bin X | --baseline-cmd T) "
        "(--candidate-bin Y | --candidate-cmd T) [options]\n"
        "       mprof gate power --baseline DB [options]",
        description=HELP + ". Exit codes: 0 pass, 1 regression, 2 tool or input error, "
        "3 inconclusive.  Compared: each configuration's time, the measured CPU time per access "
        "category over all configurations (cat:), deterministic statistics, and with --fit the "
        "refitted unit costs (fixed and imported parameters are not compared: they were not "
        "measured); --model costs are informational.  --focus names the family the "
        "multiple-testing correction counts.  The table's baseline and candidate are medians "
        "of the runs (or fitted values); its change is the Hodges-Lehmann estimate of "
        "candidate/baseline - 1 (docs/gate.md).  `mprof gate power` says beforehand how small "
        "a change the runs can show.",
    )
    p.add_argument("--baseline", metavar="DB", help="baseline profile database")
    p.add_argument("--candidate", metavar="DB", help="candidate profile database")
    p.add_argument(
        "--same-program",
        action="store_true",
        help="each side holds one program under another name (two builds named "
        "after their binaries): compare them as one program",
    )
    p.add_argument(
        "--baseline-where",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="select baseline runs only (repeatable)",
    )
    p.add_argument(
        "--candidate-where",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="select candidate runs only (repeatable)",
    )
    _evaluation_options(p)
    p.set_defaults(func=cmd_gate)
    sub = p.add_subparsers(
        dest="gate_command", metavar="run|power", title="optional action", required=False
    )
    r = sub.add_parser(
        "run",
        prog="mprof gate run",
        help="run a sweep for both builds (interleaved), then gate; "
        "extra repetitions only for inconclusive units",
    )
    r.add_argument("--spec", required=True, help="sweep specification (TOML, as mprof bench)")
    b = r.add_mutually_exclusive_group(required=True)
    b.add_argument("--baseline-cmd", help="command template of the baseline build")
    b.add_argument("--baseline-bin", help="program of the baseline build ({program})")
    c = r.add_mutually_exclusive_group(required=True)
    c.add_argument("--candidate-cmd", help="command template of the candidate build")
    c.add_argument("--candidate-bin", help="program of the candidate build ({program})")
    r.add_argument(
        "--budget",
        type=int,
        default=0,
        metavar="N",
        help="extra runs (both builds counted) for inconclusive units; default 0",
    )
    r.add_argument(
        "--out-dir",
        default="gate-out",
        metavar="DIR",
        help="where baseline.db and candidate.db are recorded (default gate-out)",
    )
    r.add_argument(
        "--adaptive",
        action="store_true",
        help="raise the repetitions to what the power check recommends for "
        "--change, within --budget, before the first evaluation",
    )
    r.add_argument(
        "--noise-from",
        metavar="DB",
        help="baseline runs recorded earlier (e.g. the last CI run's baseline.db): "
        "the power check before any run, and with --adaptive the repetitions "
        "from the start",
    )
    r.add_argument(
        "--change",
        type=float,
        metavar="X",
        help="the relative change the power check asks to see (default twice the tolerance)",
    )
    _evaluation_options(r)
    r.set_defaults(func=cmd_run)
    w = sub.add_parser(
        "power",
        prog="mprof gate power",
        help="the smallest change the gate can see with the recorded noise, "
        "and the repetitions a change needs (runs nothing)",
        description="From the repeated runs of a database (normally the "
        "baseline): per unit the noise per run, the smallest relative change "
        "the gate can flag with the repetitions recorded (or --repetitions), "
        "and the repetitions per point and build that see --change, at the "
        "tolerance and alpha given, with the correction over --tests tests and "
        '80 % power (docs/gate.md, "Power").  Exit 0, 2 on bad input.',
    )
    w.add_argument("--baseline", required=True, metavar="DB", help="profile database")
    w.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="select runs (repeatable)",
    )
    w.add_argument(
        "--program", action="append", default=[], help="only runs of this program (repeatable)"
    )
    w.add_argument(
        "--change",
        type=float,
        metavar="X",
        help="the relative change to see (default twice the tolerance)",
    )
    w.add_argument(
        "--repetitions",
        type=int,
        metavar="N",
        help="repetitions to assess (default: those recorded)",
    )
    w.add_argument(
        "--tests",
        type=int,
        metavar="K",
        help="tests the correction counts (default: the time and category units "
        "of the runs, or of --focus)",
    )
    w.add_argument(
        "--focus",
        action="append",
        default=[],
        metavar="MODULE|GLOB",
        help="only these units (as `mprof gate --focus`)",
    )
    w.add_argument("--config", metavar="GATE.toml", help="tolerance and alpha")
    w.add_argument("--tolerance", type=float, help="relative tolerance (e.g. 0.05)")
    w.add_argument("--alpha", type=float, help="significance level (e.g. 0.05)")
    w.add_argument("--correction", help=argparse.SUPPRESS)
    w.add_argument("--json", metavar="FILE", help="write the check as JSON")
    w.set_defaults(func=cmd_power)


def _evaluation_options(p):
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="select runs on both sides (params, settings, npes, program)",
    )
    p.add_argument(
        "--program",
        action="append",
        default=[],
        help="only runs of this program (repeatable: any of them)",
    )
    p.add_argument(
        "--model",
        metavar="MODEL.json",
        help="compare per-run category costs estimated by this model",
    )
    p.add_argument(
        "--fit",
        metavar="SCRIPT.tcl",
        help="fit this modeling script on each side and compare coefficients (in a "
        "safe Tcl interpreter: no exec, open, socket or file access)",
    )
    p.add_argument(
        "--unsafe-tcl",
        action="store_true",
        help="run the --fit script with full Tcl (exec, open, file ...): only for "
        "a script you trust, never one from the change under test",
    )
    p.add_argument(
        "--interface",
        action="append",
        default=[],
        metavar="PERF",
        help="a .perf file, or a folder of MODULE.perf files, declaring which "
        "statistics are measured (never compared exactly); searched before "
        "$MPROF_PERF_PATH and the source tree (repeatable)",
    )
    p.add_argument(
        "--focus",
        action="append",
        default=[],
        metavar="MODULE|GLOB",
        help="the family to gate: a module's categories, fitted costs and "
        "statistics, or unit ids matching a glob (e.g. 'cat:*'); the "
        "multiple-testing correction counts only these, the other units are "
        "reported as INFO (repeatable)",
    )
    p.add_argument("--config", metavar="GATE.toml", help="tolerances, alphas, allow-list")
    # checked (finite, in range) with the configuration's values, as one error of the gate
    p.add_argument("--tolerance", type=float, help="default relative tolerance (e.g. 0.05)")
    p.add_argument("--alpha", type=float, help="default significance level (e.g. 0.05)")
    p.add_argument("--correction", help="multiple-testing correction: holm, bh or none")
    p.add_argument(
        "--allow-cross-machine",
        action="store_true",
        help="compare runs of different machines (verdicts become informational)",
    )
    p.add_argument(
        "--inconclusive-ok",
        action="store_true",
        help="exit 0 instead of 3 when some units are inconclusive",
    )
    p.add_argument("--show-pass", action="store_true", help="list passing units too")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (one testcase per unit)")
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")


def _conditions(texts) -> list[Condition]:
    return [Condition.parse(t) for t in texts]


def _config(args):
    from .config import check_alpha, check_correction, check_tolerance, load_config

    config = load_config(args.config)
    if args.tolerance is not None:
        config.tolerance = check_tolerance(args.tolerance, "--tolerance")
    if args.alpha is not None:
        config.alpha = check_alpha(args.alpha, "--alpha")
    if args.correction is not None:
        config.correction = check_correction(args.correction, "--correction")
    config.unsafe_tcl = bool(getattr(args, "unsafe_tcl", False))
    return config


def _model(args):
    if not args.model:
        return None
    from ..model import load_model

    return load_model(args.model)


def _program_filter(side, programs):
    if programs:
        kept = [r for r in side.runs if r.program in programs]
        if side.runs and not kept:
            raise MprofError(
                f"no {side.name} run of program {' or '.join(programs)} in "
                f"{side.database} (programs: "
                f"{', '.join(sorted({r.program for r in side.runs}))})"
            )
        side.runs = kept
    return side


def _emit(report, args) -> int:
    from . import output

    if args.quiet:
        print(output.summary_line(report))
    else:
        output.print_terminal(report, show_pass=args.show_pass)
    if args.markdown:
        output.write(args.markdown, output.markdown(report, show_pass=args.show_pass))
    if args.junit:
        output.write(args.junit, output.junit(report))
    if args.json:
        output.write(args.json, output.to_json(report))
    return report.exit_code


def _distinct_outputs(args) -> None:
    """--markdown, --junit and --json each name a file of their own: two naming one file would
    leave only the last written, with nothing said."""
    seen: dict[str, str] = {}
    for option in ("markdown", "junit", "json"):
        path = getattr(args, option, None)
        if not path:
            continue
        key = os.path.realpath(path) if "\0" not in path else path
        if key in seen:
            raise MprofError(
                f"--{seen[key]} and --{option} name the same file {path}: give each its own"
            )
        seen[key] = option


def _guard(body, args) -> int:
    try:
        with interruptible():  # SIGTERM, SIGHUP: the running benchmark's group is killed
            _distinct_outputs(args)
            return body(args)
    except MprofError as exc:
        print(f"mprof gate: error: {bounded_message(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except (KeyboardInterrupt, Interrupted) as exc:
        print(f"mprof gate: interrupted{f' by {exc}' if str(exc) else ''}", file=sys.stderr)
        return EXIT_ERROR
    except Exception:  # a bug is still "the tool failed", never a pass or a regression
        traceback.print_exc()
        print("mprof gate: internal error (exit 2)", file=sys.stderr)
        return EXIT_ERROR


def cmd_gate(args) -> int:
    return _guard(_gate, args)


def cmd_run(args) -> int:
    return _guard(_run, args)


def cmd_power(args) -> int:
    return _guard(_power, args)


def _positive(value, name: str, *, integer: bool = False):
    if value is None:
        return None
    if integer:
        if value < 2:
            raise MprofError(f"{name} must be at least 2, got {value}")
        return value
    if not math.isfinite(value) or value <= 0:
        raise MprofError(f"{name} must be a positive number, got {value}")
    return value


def _power(args) -> int:
    from rich.console import Console

    from ..report.jsonout import dumps

    from .data import load_side
    from .power import check, print_check

    config = _config(args)
    side = _program_filter(
        load_side("baseline", args.baseline, _conditions(args.where)), args.program
    )
    if not side.runs:
        raise MprofError(f"no runs in {args.baseline}")
    tests = args.tests
    if tests is not None and tests < 1:
        raise MprofError(f"--tests must be at least 1, got {tests}")
    result = check(
        side,
        config,
        change=_positive(args.change, "--change"),
        tests=tests,
        repetitions=_positive(args.repetitions, "--repetitions", integer=True),
        focus=args.focus,
    )
    if not result.lines:
        raise MprofError(
            f"no configuration of {args.baseline} has 2 or more runs: the noise is unknown"
        )
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 120))
    print_check(result, console)
    if args.json:
        from . import output

        output.write(args.json, dumps(result.to_json(), "gate power", indent=2) + "\n")
    return 0


def _gate(args) -> int:
    from .data import load_side
    from .evaluate import evaluate

    if not args.baseline or not args.candidate:
        raise MprofError(
            "--baseline and --candidate databases are required (or use `mprof gate run`)"
        )
    config = _config(args)
    where = _conditions(args.where)
    baseline = _program_filter(
        load_side("baseline", args.baseline, where + _conditions(args.baseline_where)), args.program
    )
    candidate = _program_filter(
        load_side("candidate", args.candidate, where + _conditions(args.candidate_where)),
        args.program,
    )
    report = evaluate(
        baseline,
        candidate,
        config,
        model=_model(args),
        fit_script=args.fit,
        allow_cross_machine=args.allow_cross_machine,
        inconclusive_ok=args.inconclusive_ok,
        interfaces=args.interface,
        focus=args.focus,
        same_program=args.same_program,
    )
    return _emit(report, args)


def _run(args) -> int:
    from .runner import run_gate

    where = _conditions(args.where)
    if len(args.program) == 1:
        where.append(Condition("program", args.program[0]))
    elif args.program:
        raise MprofError("gate run takes at most one --program")
    report, log = run_gate(
        args.spec,
        baseline_cmd=args.baseline_cmd,
        baseline_bin=args.baseline_bin,
        candidate_cmd=args.candidate_cmd,
        candidate_bin=args.candidate_bin,
        out_dir=args.out_dir,
        budget=args.budget,
        config=_config(args),
        model=_model(args),
        fit_script=args.fit,
        where=where,
        allow_cross_machine=args.allow_cross_machine,
        inconclusive_ok=args.inconclusive_ok,
        interfaces=args.interface,
        focus=args.focus,
        adaptive=args.adaptive,
        noise_from=args.noise_from,
        change=_positive(args.change, "--change"),
    )
    print(
        f"gate run: {log.runs} run(s), {log.extra_runs} extra in {log.rounds} round(s) -> "
        f"{args.out_dir}",
        file=sys.stderr,
    )
    return _emit(report, args)
