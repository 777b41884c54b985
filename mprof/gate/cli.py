"""`mprof gate`: the CI performance regression gate (docs/gate.md).

    mprof gate --baseline B.db --candidate C.db [--model M.json] [--fit S.tcl] [options]
    mprof gate run --spec SWEEP.toml --baseline-bin X --candidate-bin Y [--budget N] [options]

Exit codes: 0 pass, 1 regression (or behaviour change), 2 tool or input error,
3 inconclusive (0 with --inconclusive-ok).  Errors are caught here and mapped to 2, whatever
their kind, so that CI can tell "the code got slower" from "the gate could not decide".
"""

from __future__ import annotations

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
        "gate", help=HELP,
        usage="mprof gate --baseline DB --candidate DB [options]\n"
              "       mprof gate run --spec SWEEP.toml (--baseline-bin X | --baseline-cmd T) "
              "(--candidate-bin Y | --candidate-cmd T) [options]",
        description=HELP + ". Exit codes: 0 pass, 1 regression, 2 tool or input error, "
        "3 inconclusive.  The table's baseline and candidate are medians of the runs (or "
        "fitted values); its change is the Hodges-Lehmann estimate of candidate/baseline - 1 "
        "(docs/gate.md).")
    p.add_argument("--baseline", metavar="DB", help="baseline profile database")
    p.add_argument("--candidate", metavar="DB", help="candidate profile database")
    p.add_argument("--baseline-where", action="append", default=[], metavar="NAME=VALUE",
                   help="select baseline runs only (repeatable)")
    p.add_argument("--candidate-where", action="append", default=[], metavar="NAME=VALUE",
                   help="select candidate runs only (repeatable)")
    _evaluation_options(p)
    p.set_defaults(func=cmd_gate)
    sub = p.add_subparsers(dest="gate_command", metavar="run", title="optional action",
                           required=False)
    r = sub.add_parser("run", prog="mprof gate run",
                       help="run a sweep for both builds (interleaved), then gate; "
                       "extra repetitions only for inconclusive units")
    r.add_argument("--spec", required=True, help="sweep specification (TOML, as mprof bench)")
    b = r.add_mutually_exclusive_group(required=True)
    b.add_argument("--baseline-cmd", help="command template of the baseline build")
    b.add_argument("--baseline-bin", help="program of the baseline build ({program})")
    c = r.add_mutually_exclusive_group(required=True)
    c.add_argument("--candidate-cmd", help="command template of the candidate build")
    c.add_argument("--candidate-bin", help="program of the candidate build ({program})")
    r.add_argument("--budget", type=int, default=0, metavar="N",
                   help="extra runs (both builds counted) for inconclusive units; default 0")
    r.add_argument("--out-dir", default="gate-out", metavar="DIR",
                   help="where baseline.db and candidate.db are recorded (default gate-out)")
    _evaluation_options(r)
    r.set_defaults(func=cmd_run)


def _evaluation_options(p):
    p.add_argument("--where", action="append", default=[], metavar="NAME=VALUE",
                   help="select runs on both sides (params, settings, npes, program)")
    p.add_argument("--program", action="append", default=[],
                   help="only runs of this program (repeatable: any of them)")
    p.add_argument("--model", metavar="MODEL.json",
                   help="compare per-run category costs estimated by this model")
    p.add_argument("--fit", metavar="SCRIPT.tcl",
                   help="fit this modeling script on each side and compare coefficients (in a "
                   "safe Tcl interpreter: no exec, open, socket or file access)")
    p.add_argument("--unsafe-tcl", action="store_true",
                   help="run the --fit script with full Tcl (exec, open, file ...): only for "
                   "a script you trust, never one from the change under test")
    p.add_argument("--interface", action="append", default=[], metavar="PERF",
                   help="a .perf file, or a folder of MODULE.perf files, declaring which "
                   "statistics are measured (never compared exactly); searched before "
                   "$MPROF_PERF_PATH and the source tree (repeatable)")
    p.add_argument("--config", metavar="GATE.toml", help="tolerances, alphas, allow-list")
    # checked (finite, in range) with the configuration's values, as one error of the gate
    p.add_argument("--tolerance", type=float, help="default relative tolerance (e.g. 0.05)")
    p.add_argument("--alpha", type=float, help="default significance level (e.g. 0.05)")
    p.add_argument("--correction", help="multiple-testing correction: holm, bh or none")
    p.add_argument("--allow-cross-machine", action="store_true",
                   help="compare runs of different machines (verdicts become informational)")
    p.add_argument("--inconclusive-ok", action="store_true",
                   help="exit 0 instead of 3 when some units are inconclusive")
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
            raise MprofError(f"no {side.name} run of program {' or '.join(programs)} in "
                             f"{side.database} (programs: "
                             f"{', '.join(sorted({r.program for r in side.runs}))})")
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


def _guard(body, args) -> int:
    try:
        with interruptible():  # SIGTERM, SIGHUP: the running benchmark's group is killed
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


def _gate(args) -> int:
    from .data import load_side
    from .evaluate import evaluate

    if not args.baseline or not args.candidate:
        raise MprofError("--baseline and --candidate databases are required "
                         "(or use `mprof gate run`)")
    config = _config(args)
    where = _conditions(args.where)
    baseline = _program_filter(
        load_side("baseline", args.baseline, where + _conditions(args.baseline_where)),
        args.program)
    candidate = _program_filter(
        load_side("candidate", args.candidate, where + _conditions(args.candidate_where)),
        args.program)
    report = evaluate(baseline, candidate, config, model=_model(args), fit_script=args.fit,
                      allow_cross_machine=args.allow_cross_machine,
                      inconclusive_ok=args.inconclusive_ok, interfaces=args.interface)
    return _emit(report, args)


def _run(args) -> int:
    from .runner import run_gate

    where = _conditions(args.where)
    if len(args.program) == 1:
        where.append(Condition("program", args.program[0]))
    elif args.program:
        raise MprofError("gate run takes at most one --program")
    report, log = run_gate(
        args.spec, baseline_cmd=args.baseline_cmd, baseline_bin=args.baseline_bin,
        candidate_cmd=args.candidate_cmd, candidate_bin=args.candidate_bin,
        out_dir=args.out_dir, budget=args.budget, config=_config(args), model=_model(args),
        fit_script=args.fit, where=where, allow_cross_machine=args.allow_cross_machine,
        inconclusive_ok=args.inconclusive_ok, interfaces=args.interface)
    print(f"gate run: {log.runs} run(s), {log.extra_runs} extra in {log.rounds} round(s) -> "
          f"{args.out_dir}", file=sys.stderr)
    return _emit(report, args)
