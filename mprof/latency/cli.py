"""`mprof latency RUN.json`: latency per access category and the problematic dependence chains."""

from __future__ import annotations


from ..numbers import option

# The checked argparse types of the options `mprof report` shares (the same ranges there)
DIGITS = option("--digits", low=0, high=17, integer=True)
ROOTS = option("--roots", low=0, high=10**6, integer=True)
MIN_FRACTION = option("--min-fraction", low=0.0, high=1.0, open_high=True)


def register(subparsers):
    p = subparsers.add_parser(
        "latency",
        help="observed/critical latency and dependence chains of a run profile",
        description="Per access category of a run profile: how long its fibers waited "
        "(observed latency) and how much of that the PE spent idle because of it (critical "
        "latency), by the category that enabled it; then the dependence chains behind the "
        "largest latencies (docs/run-profile.md, Wen 1995 section 4.3).  Exit 0, 2 on a bad "
        "profile.",
    )
    p.add_argument("run", help="run profile (JSON, docs/run-profile.md)")
    p.add_argument("--per-pe", action="store_true", help="latency of every PE separately")
    p.add_argument(
        "--roots",
        type=ROOTS,
        default=3,
        help="walk chains back from this many accesses with the largest latency",
    )
    p.add_argument(
        "--min-fraction",
        type=MIN_FRACTION,
        default=0.05,
        help="ignore contributions below this fraction of the latency (default 0.05)",
    )
    p.add_argument("--digits", type=DIGITS, default=None, help="decimals of printed seconds")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_latency)


def cmd_latency(args):
    from ..db.validate import load_profile
    from ..profile import RunProfile
    from ..report.jsonout import dumps
    from .analysis import (
        METRICS,
        access_latency_json,
        build_graph,
        chain_json,
        display_names,
        find_chains,
        pes_of,
        rows_from_profile,
        summarize,
    )
    from .text import chains_section, latency_section

    run = RunProfile.from_document(load_profile(args.run), args.run)
    declared = run.accesses
    rows = rows_from_profile(run)
    graph = build_graph(rows, declared)
    names = display_names(graph.nodes)
    total = summarize(rows, declared)
    per_pe = {pe: summarize(rows, declared, pe) for pe in pes_of(rows)} if args.per_pe else None
    chains = {
        m: find_chains(graph, m, roots=args.roots, min_fraction=args.min_fraction) for m in METRICS
    }
    if args.json:
        out = {
            "run": args.run,
            "latency": access_latency_json(total),
            "chains": {m: [chain_json(c, names) for c in cs] for m, cs in chains.items()},
        }
        if per_pe is not None:
            out["latency_per_pe"] = {str(pe): access_latency_json(v) for pe, v in per_pe.items()}
        print(dumps(out, "latency", indent=2))
        return 0
    decimals = (
        args.digits
        if args.digits is not None
        else _decimals(max([a.observed_s for a in total] + [0.0]))
    )
    lines = latency_section(total, names, per_pe, decimals)
    if not rows:
        lines.append("(the run profile has no latency rows)")
    lines += chains_section(chains, names, decimals)
    print("\n".join(lines))
    return 0


def _decimals(largest: float) -> int:
    import math

    if largest <= 0 or largest >= 1:
        return 3
    return min(6, 3 + math.ceil(-math.log10(largest)))
