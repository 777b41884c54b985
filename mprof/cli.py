"""The `mprof` command: one subcommand per workflow stage.

Each stage package that offers commands has a `cli` module with `register(subparsers)`;
the subcommand stores its handler in `func`.  Handlers return an exit code.
"""

import argparse
import importlib
import sys

from . import __version__
from .errors import MprofError

# Workflow order; a stage without a cli module yet is simply not offered.
STAGES = ["iface", "db", "bench", "model", "report", "latency", "gate"]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="mprof",
        description="Performance profiling and cost modelling for fine-grained parallel "
        "programs: performance interfaces, run profiles, SVD cost models, latency reports "
        "and regression gates.",
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
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except MprofError as exc:
        print(f"mprof: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
