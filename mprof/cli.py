"""The `mprof` command: one subcommand per workflow stage.

Each stage package that offers commands has a `cli` module with `register(subparsers)`;
the subcommand stores its handler in `func`.  Handlers return an exit code.

Exit codes, the same for every command (README.md, "Exit codes"):
    0    success
    1    the command ran and reports a failure it exists to detect: a gate regression or
         behaviour change, sweep points that failed
    2    an error: bad usage or input (a file, an option, a database), or a failing environment;
         nothing was produced, or (imports) nothing was stored
    3    `mprof gate` only: inconclusive
    130  interrupted (Ctrl-C); `mprof bench` also 143 (SIGTERM) and 129 (SIGHUP)
    141  the output was closed early (`mprof ... | head`)
"""

import argparse
import importlib
import sys

from . import __version__
from .errors import MprofError, bounded_message
from .files import ClosedOutput, discard_stdout, forget_inputs, stdout_error

# Workflow order; a stage without a cli module yet is simply not offered.
STAGES = ["iface", "db", "bench", "model", "report", "latency", "gate", "trace", "history"]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="mprof",
        description="Performance profiling and cost modelling for fine-grained parallel "
        "programs: performance interfaces, run profiles, SVD cost models, latency reports, "
        "regression gates, trace conversion and result history.",
    )
    parser.add_argument("--version", action="version", version=f"mprof {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for stage in STAGES:
        try:
            module = importlib.import_module(f"mprof.{stage}.cli")
        except ModuleNotFoundError as exc:
            if exc.name != f"mprof.{stage}.cli":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv=None):
    if sys.stdout is None:  # started with standard output closed
        sys.stdout = ClosedOutput()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    forget_inputs()
    try:
        code = args.func(args) or 0
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except MprofError as exc:
        print(f"mprof: {bounded_message(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of our output went away (`| head`): Python's final flush must not
        # complain about the pipe again.
        discard_stdout()
        return 141
    except OSError as exc:
        message = stdout_error(exc)
        if message is None:
            raise
        discard_stdout()  # what is still buffered would fail again at exit
        print(f"mprof: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if str(exc):  # where it stopped (a modeling script: mprof.model.script)
            print(f"mprof: {bounded_message(str(exc))}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
