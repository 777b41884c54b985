"""`mprof fit SCRIPT.tcl` and `mprof model show|export-c`."""

from __future__ import annotations

import sys

from ..errors import MprofError
from ..numbers import option


def register(subparsers):
    p = subparsers.add_parser(
        "fit",
        help="instantiate cost models with a Tcl modeling script",
        description="Run a modeling script (Tcl with mprof's directives, docs/fitting.md): it "
        "names the fit databases (FitDatabase), the interfaces whose terms are the model "
        "(Interface), imported, fixed and ignored parameters; each Fit solves for the unit "
        "costs by SVD over the runs and prints the result (chi-square, singular values, "
        "sample and test MRE, each parameter with its interval); SaveModel writes the model "
        "file that mprof report, model and gate read.  Exit 0, 2 on an error in the script "
        "(with its line).",
    )
    p.add_argument("script", help="modeling script (Tcl); paths in it are relative to it")
    p.add_argument("--json", action="store_true", help="print each fit as one JSON line")
    p.add_argument(
        "--misses",
        type=option("--misses", low=0, high=10**6, integer=True),
        default=0,
        metavar="N",
        help="also print the N largest relative misses of the test samples and of "
        "the fit samples, each with its configuration (what varies between the "
        "samples) and the spread of its repetitions (JSON: a `misses` list)",
    )
    p.add_argument(
        "--unsafe-tcl",
        action="store_true",
        help="run the script with full Tcl (exec, open, socket, file, source ...); "
        "by default it runs in a safe interpreter with pure Tcl and the directives",
    )
    p.set_defaults(func=cmd_fit)

    parser = subparsers.add_parser(
        "model",
        help="inspect and export instantiated models",
        description="Inspect a model file written by SaveModel (mprof fit): `show` prints its "
        "quality and every parameter by category, `export-c` writes C functions that price "
        "a run's statistics per category (for a program that predicts its own costs).",
    )
    sub = parser.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    p = sub.add_parser(
        "show",
        help="print a model file",
        description="Print a model file: fit quality, settings, and per module "
        "and category each parameter with its 90 % half width and the notes "
        "the fit printed (imported, fixed, interval contains 0, not determined: "
        "rank deficient).",
    )
    p.add_argument("model", help="model file (JSON, written by SaveModel)")
    p.add_argument("--json", action="store_true", help="print the model file's JSON")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser(
        "export-c",
        help="emit C functions computing per-category costs",
        description="Write a C header and source with, per module, one "
        "function per category that prices the module's statistics with the "
        "model's parameters, and one for all of its categories.",
    )
    p.add_argument("model", help="model file (JSON, written by SaveModel)")
    p.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="folder of the generated files"
    )
    p.add_argument("--prefix", default="mpm", help="prefix of generated names (default mpm)")
    p.set_defaults(func=cmd_export_c)


def cmd_fit(args):
    from .isolate import run_isolated
    from .report import format_json, format_text
    from .script import ModelingScript

    def show(outcome):
        sys.stdout.write(
            format_json(outcome, args.misses) + "\n"
            if args.json
            else format_text(outcome, args.misses)
        )
        sys.stdout.flush()

    def fit():  # in a child process: a script that kills Tcl is an error, not mprof's crash
        ModelingScript(args.script, on_fit=show, unsafe=args.unsafe_tcl).run()

    run_isolated(args.script, fit)
    return 0


def cmd_show(args):
    from ..report.jsonout import dumps
    from .modelfile import FIXED, load_model
    from .report import fixed_text, mre_text, parameter_notes

    model = load_model(args.model)
    if args.json:
        print(dumps(model.to_json(), str(args.model), indent=2))
        return 0
    q = model.quality
    print(f"Model {args.model} (created {model.created_at})")
    chi = q.get("chi_square")  # null in a file when the fit had none
    print(
        f"Chi-square: {'n/a' if chi is None else fixed_text(chi)}   dof: {q.get('dof')}   "
        f"rank: {q.get('rank')}/{q.get('n_parameters')}"
    )
    print(
        f"Sample MRE: {mre_text(q.get('sample_mre_percent'))}   "
        f"Test MRE: {mre_text(q.get('test_mre_percent'))}"
    )
    print(
        "Settings: "
        + ", ".join(
            f"{k}={v}"
            for k, v in model.settings.items()
            if k in ("granularity", "normalize", "cutoff")
        )
    )
    # the fit's warning, from the file: which terms the data could not tell apart
    for group in model.flags.get("rank_deficient_terms", []):
        print("Not determined (rank deficient), linearly dependent: " + ", ".join(group))
    for module, info in model.interfaces.items():
        print(f"\n{module}  ({info.path})")
        for cat, terms in info.categories.items():
            parts = []
            for term in terms:
                name = f"{module}:{term}"
                if name in model.values:
                    half = model.halfwidths.get(name)
                    tag = (
                        ""
                        if name not in model.imported
                        else " (fixed)"
                        if model.imported[name] == FIXED
                        else " (imported)"
                    )
                    # a halfwidth the file records as null is read as nan: none to show
                    hw = f" +- {half:g}" if half is not None and half == half else ""
                    notes = parameter_notes(model, name, source=False)
                    parts.append(
                        f"{term}={model.values[name]:g}{hw}{tag}"
                        + (f" [{'; '.join(notes)}]" if notes else "")
                    )
                else:
                    parts.append(f"{term}=ignored")
            print(f"  {cat:<12} " + ", ".join(parts))
    return 0


def cmd_export_c(args):
    from .export_c import export_c
    from .modelfile import load_model

    model = load_model(args.model)
    if not model.interfaces:
        raise MprofError(f"{args.model}: the model records no interfaces to export")
    paths = export_c(model, args.output, prefix=args.prefix)
    for path in paths:
        print(path)
    return 0
