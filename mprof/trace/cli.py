"""`mprof trace`: convert the runtime's OTF2 traces (docs/tracing.md)."""

from __future__ import annotations

import sys


def register(subparsers):
    parser = subparsers.add_parser(
        "trace", help="OTF2 traces (MPROF_TRACE): convert to Perfetto / Chrome trace JSON"
    )
    sub = parser.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    p = sub.add_parser(
        "convert",
        help="write an OTF2 trace as Chrome / Perfetto trace JSON "
        "(ui.perfetto.dev, chrome://tracing): a track per PE, slices per "
        "access category and idle, flows for remote invocations, counters for "
        "the statistics",
    )
    p.add_argument("trace", help="the trace folder given as MPROF_TRACE, or its traces.otf2")
    p.add_argument("-o", "--output", help="output file (default: standard output)")
    p.add_argument(
        "--format",
        choices=("perfetto",),
        default="perfetto",
        help="perfetto (default): the Trace Event Format's JSON object",
    )
    p.set_defaults(func=cmd_convert)


def cmd_convert(args):
    from .perfetto import write

    data = write(args.trace, args.output)
    if args.output:
        kinds = {}
        for e in data["traceEvents"]:
            kinds[e["ph"]] = kinds.get(e["ph"], 0) + 1
        print(
            f"wrote {args.output}: {kinds.get('X', 0)} slices, "
            f"{data['otherData']['remote_invocations']} flows, {kinds.get('C', 0)} counter "
            "samples",
            file=sys.stderr,
        )
    return 0
