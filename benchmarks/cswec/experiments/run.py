#!/usr/bin/env python3
"""CSWEC study (Wen 1995, section 5.1.5, Figs 5.8-5.10) with mprof's own tools.

    .venv/bin/python benchmarks/cswec/experiments/run.py [--pes 2] [--reps 5] [--vectors 32]
        [--capacities 2,4,8,16,64,256] [--sweep-vectors 8] [--cap-reps 2]

Makes the netlists of ISCAS-85 C2670 (circuitgraph's c2670.v through
benchmarks/cswec/netlist.py) and the generated 32-bit REGFILE, then runs
build/benchmarks/cswec/cswec on each: on one PE (the sequential time), the initial
implementation (capacity 64, the paper's setting, 1 KiB aggregation) and 4 KiB aggregation
(Figs 5.8-5.9) and, beyond the paper, with the nodes placed in contiguous blocks of the
topological order (`--place=block`) --reps times, and the capacity sweep of Fig 5.10
--cap-reps times with --sweep-vectors vectors (small capacities need thousands of recovery
rounds: capacity 1 on C2670 takes minutes, so the default sweep starts at 2).  Every run
is reported with the runtime's fitted cost model (`mprof report RUN --model M`, default
build/workflows/rts.model.json from `make demo`).  Writes
benchmarks/cswec/experiments/results/<config>.txt and .../summary.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
import study  # noqa: E402

TAG = "cswec-study"
TOOL = study.ROOT / "benchmarks/cswec/netlist.py"
EVENTS = [("term", "cswec:TERM"), ("resource", "graph:ENQ"), ("data", "graph:DEQ")]
CIRCUITS = {"c2670": ["iscas", "c2670"], "regfile": ["regfile"]}
# Fig 5.8: sequential, total, idle, (observed, critical) of term, resource, data
PAPER_58 = {
    "regfile": {"CM5": (515, 19.5, 4.18, (0.8, 0.8), (3.21, 0.58), (10.4, 2.78)),
                "Paragon": (396, 51.2, 1.82, (0.20, 0.20), (0.76, 0.05), (6.32, 1.51)),
                "SP1": (214, 29.9, 2.24, (0.11, 0.11), (5.88, 0.10), (18.1, 2.01))},
    "c2670": {"CM5": (990, 42.9, 8.84, (0.46, 0.46), (52.5, 1.53), (185, 6.59)),
              "Paragon": (28172, 248, 63.5, (0.42, 0.42), (1843, 5.4), (1175, 57.6)),
              "SP1": (361, 62.3, 2.07, None, (24.5, 0.36), (47.0, 1.62))},
}
PAPER_59 = [("Initial implementation", (42.9, 248, 62.3)),
            ("+ preemptive scheduler", (38.3, 241, 56.7)),
            ("+ more aggregation (4K byte)", (36.9, 245, 49.5))]
PAPER_SPEEDUP = {"regfile": (23.6, 7.7, 7.2, 6.0), "c2670": (26.8, 117, 7.3, 3.0)}


def main(argv=None):
    ap = study.parser(__doc__, "cswec", 5)
    ap.add_argument("--vectors", type=int, default=32)
    ap.add_argument("--capacities", default="2,4,8,16,64,256")
    ap.add_argument("--sweep-vectors", type=int, default=8)
    ap.add_argument("--cap-reps", type=int, default=2)
    args = ap.parse_args(argv)
    args.caps = [int(c) for c in args.capacities.split(",")]
    rows = study.saved(args)
    if rows is not None:
        study.write(args.out, list(rows.values()), render(rows, args))
        return 0
    exe, model = study.setup(TAG, "cswec", args)
    rows = {}
    for circ, how in CIRCUITS.items():
        net = args.work / f"{circ}.net"
        net.parent.mkdir(parents=True, exist_ok=True)
        study.run(TAG, [sys.executable, TOOL, *how, "-o", net])
        base = [f"--netlist={net}", f"--vectors={args.vectors}"]

        def go(name, extra, env, reps, base=base):
            rows[name] = study.measure(TAG, name, exe, [*base, *extra], env, reps, model,
                                       args.work, args.out)

        go(f"{circ}-sequential", [], {"MPROF_PES": 1, "MPROF_AGG_BYTES": 1024}, 3)
        go(f"{circ}-initial", ["--capacity=64"], {"MPROF_PES": args.pes,
                                                  "MPROF_AGG_BYTES": 1024}, args.reps)
        go(f"{circ}-agg4k", ["--capacity=64"], {"MPROF_PES": args.pes,
                                                "MPROF_AGG_BYTES": 4096}, args.reps)
        go(f"{circ}-block", ["--capacity=64", "--place=block"],
           {"MPROF_PES": args.pes, "MPROF_AGG_BYTES": 1024}, args.reps)
        for cap in args.caps:
            go(f"{circ}-cap{cap}", [f"--capacity={cap}"],
               {"MPROF_PES": args.pes, "MPROF_AGG_BYTES": 1024}, args.cap_reps,
               [f"--netlist={net}", f"--vectors={args.sweep_vectors}"])
    study.write(args.out, list(rows.values()), render(rows, args))
    return 0


def pstat(row, key):
    return study.param_stat(row, key)[0]


def render(rows, args) -> str:
    f = study.fmt
    lines = [
        "# CSWEC (Wen 1995, §5.1.5, Figs 5.8-5.10) reproduced with mprof",
        "",
        f"`benchmarks/cswec/experiments/run.py`: ISCAS-85 C2670 (circuitgraph 0.2.1's "
        f"`c2670.v`, one subcircuit per gate) and the generated 32-bit REGFILE (32 large "
        f"bit-slice subcircuits of 63 gates among 37 small ones, plus the 1029 input drivers), "
        f"{args.vectors} input vectors, {args.pes} PEs on shared memory (the machine has 2 "
        f"cores), {args.reps} runs per configuration ({args.cap_reps} in the capacity sweep), "
        "3 sequential runs (1 PE).  Medians over the runs, seconds averaged over the PEs.  "
        "`sim` is the program's simulation time; latency columns are observed / critical: "
        "term = the recovery thread (barrier, freeze, min-reduction), resource = waiting for "
        "edge space (graph:ENQ), data = waiting for events (graph:DEQ).  `collapsed`: the "
        "share of event messages on edges that the event graph did not send as physical "
        "messages (same-PE sinks and identical copies to one PE).",
        "",
        "| configuration | sim (range) | speedup | idle | term | resource | data | events | "
        "nulls | recoveries | collapsed | explained |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for circ in CIRCUITS:
        seq = pstat(rows[f"{circ}-sequential"], "sim_s")
        for name in [f"{circ}-sequential", f"{circ}-initial", f"{circ}-agg4k", f"{circ}-block"]:
            row = rows[name]
            t, lo, hi = study.param_stat(row, "sim_s")
            sp = f"{seq / t:.2f}" if seq and t and not name.endswith("sequential") else ""
            lat = " | ".join(f"{f(row.get('obs:' + a), 4)} / {f(row.get('crit:' + a), 4)}"
                             for _, a in EVENTS)
            coll = pstat(row, "collapse")
            lines.append(
                f"| {name} | {f(t, 3)} ({f(lo, 3)}-{f(hi, 3)}) | {sp} | "
                f"{f(row.get('Idle'), 3)} | {lat} | {pstat(row, 'events'):.0f} | "
                f"{pstat(row, 'nulls'):.0f} | {pstat(row, 'recoveries'):.0f} | "
                f"{100 * coll:.1f} % | {row['explained']}/{row['runs']} |")
    lines += ["", study.EXPLAINED_NOTE]
    lines += ["", f"Fig 5.10 here ({args.sweep_vectors} vectors, {args.cap_reps} runs each): "
              "simulation time against edge capacity, normalised to the smallest capacity "
              "(medians), with the recovery rounds and null messages of the median run:", "",
              "| circuit | " + " | ".join(f"C={c}" for c in args.caps) + " |",
              "|---|" + "---|" * len(args.caps)]
    for circ in CIRCUITS:
        ts = [pstat(rows[f"{circ}-cap{c}"], "sim_s") for c in args.caps]
        lines.append(f"| {circ} | " + " | ".join(f"{t / ts[0]:.3g}" for t in ts) + " |")
        lines.append(f"| {circ} seconds | " + " | ".join(f"{t:.3f}" for t in ts) + " |")
        rec = [pstat(rows[f"{circ}-cap{c}"], "recoveries") for c in args.caps]
        nul = [pstat(rows[f"{circ}-cap{c}"], "nulls") for c in args.caps]
        lines.append(f"| {circ} recoveries | " + " | ".join(f"{r:.0f}" for r in rec) + " |")
        lines.append(f"| {circ} nulls | " + " | ".join(f"{n:.0f}" for n in nul) + " |")
    lines += ["", "The paper, Fig 5.8 (initial implementation, capacity 64; 32-PE CM5, 8-PE "
              "Paragon and SP1; seconds):", "",
              "| circuit | machine | sequential | total | idle | term | resource | data |",
              "|---|---|---|---|---|---|---|---|"]
    for circ, machines in PAPER_58.items():
        for m, (sq, t, i, *ev) in machines.items():
            cells = " | ".join("" if e is None else f"{e[0]} / {e[1]}" for e in ev)
            lines.append(f"| {circ} | {m} | {sq} | {t} | {i} | {cells} |")
    lines += ["", "Fig 5.9 (C2670, running time):", "", "| configuration | CM5 | Paragon | SP1 |",
              "|---|---|---|---|"]
    for label, (c, p, s) in PAPER_59:
        lines.append(f"| {label} | {c} | {p} | {s} |")
    lines += ["", "Best speedups (Fig 5.11; CM5, Paragon, SP1, Sparc cluster): " + "; ".join(
        f"{c} {', '.join(map(str, v))}" for c, v in PAPER_SPEEDUP.items()) + ".  Fig 5.10 "
        "gives no numbers in the text: larger capacity helps, C2670 is less sensitive to the "
        "first increases than REGFILE, and on the Paragon too large a capacity made C2670 3x "
        "slower (paging).  §2.2.4.3: the event graph removed more than 95 % of the event "
        "messages for both circuits."]
    lines += ["", "Findings:", ""] + findings(rows, args)
    lines += ["", "Commands:", ""] + [f"- `{row['cmd']}`" for row in rows.values()]
    return "\n".join(lines) + "\n"


def findings(rows, args) -> list[str]:
    sp = {c: pstat(rows[f"{c}-sequential"], "sim_s") / pstat(rows[f"{c}-initial"], "sim_s")
          for c in CIRCUITS}
    sp_block = {c: pstat(rows[f"{c}-sequential"], "sim_s") / pstat(rows[f"{c}-block"], "sim_s")
                for c in CIRCUITS}
    out = [
        f"- Speedup on {args.pes} PEs, initial implementation: C2670 {sp['c2670']:.2f}, REGFILE "
        f"{sp['regfile']:.2f} (paper, 32-PE CM5: 23.1 and 26.4).  Our subcircuits are single "
        "gates (C2670) simulated in microseconds per step, where the paper's took 0.1-10 ms, "
        "and the size-based placement deals C2670's equal-sized gates out round-robin, so "
        "half of its edges cross PEs: the message and thread overheads outweigh the "
        "parallel work on C2670.  REGFILE's 32 large bit slices carry most of its work and "
        "its wide fanouts collapse, so it gains a little.  Not reproduced.  Placing the nodes "
        "in contiguous blocks of the topological order instead (`-block` rows, not in the "
        f"paper) gives C2670 {sp_block['c2670']:.2f} and REGFILE {sp_block['regfile']:.2f}, "
        f"with {100 * pstat(rows['c2670-block'], 'collapse'):.1f} % of C2670's edge messages "
        "collapsed."]
    for circ in CIRCUITS:
        ini, agg = rows[f"{circ}-initial"], rows[f"{circ}-agg4k"]
        ti, ta = study.param_stat(ini, "sim_s"), study.param_stat(agg, "sim_s")
        named = sorted(((ev, ini.get("obs:" + a) or 0, ini.get("crit:" + a) or 0)
                        for ev, a in EVENTS), key=lambda x: -x[1])
        ranked = ", ".join(f"{ev} {o:.4f} / {c:.4f}" for ev, o, c in named)
        faster = ta[2] is not None and ti[1] is not None and ta[2] < ti[1]
        pct = 100 * (ta[0] - ti[0]) / ti[0] if ti[0] and ta[0] else float("nan")
        out.append(
            f"- {circ}: idle time by event (observed / critical, s per PE): {ranked}.  Paper: "
            "data first, then resource, term small; observed far above critical for data and "
            f"resource.  4 KiB aggregation vs 1 KiB: {pct:+.1f} % (paper, C2670: -4 % CM5, "
            f"-13 % SP1, -1 % .. +2 % Paragon); beyond the spread: {'yes' if faster else 'no'}.  "
            f"Collapsing: {100 * pstat(ini, 'collapse'):.1f} % of the event messages on edges "
            "sent no physical message.")
    cap_lines = []
    for circ in CIRCUITS:
        ts = [pstat(rows[f"{circ}-cap{c}"], "sim_s") for c in args.caps]
        cap_lines.append(f"{circ} {ts[-1] / ts[0]:.3g}x at C={args.caps[-1]}")
    ratio = {c: pstat(rows[f"{c}-cap{args.caps[-1]}"], "sim_s")
             / pstat(rows[f"{c}-cap{args.caps[0]}"], "sim_s") for c in CIRCUITS}
    less = "C2670" if ratio["c2670"] > ratio["regfile"] else "REGFILE"
    out.append(
        "- Capacity (Fig 5.10): time at the largest capacity relative to the smallest: "
        + ", ".join(cap_lines) + ".  The smallest capacities need many recovery rounds and "
        "null messages (table above): a sender blocked on a full edge cannot announce its "
        "time, so its receivers' other inputs stall until the recovery thread's global "
        f"minimum frees them.  Less sensitive to capacity here: {less} (paper: C2670, which "
        "has more parallelism).  REGFILE's sweep runs last 0.1-0.3 s and move within their "
        "noise; its few long bit slices rarely fill an edge.  The paper's memory-hierarchy "
        "penalty of very large capacities does not appear at these sizes.")
    out.append(
        "- Collapsing of identical messages: on 2 PEs most edges join nodes of the same PE "
        "(served inline, no message) or carry copies to the one other PE that are shipped "
        "once; the paper's > 95 % was measured on 32 PEs with its own partitioning.  Whether "
        "it reproduces depends on the circuit and the placement: REGFILE's wide fanouts "
        "(address decoders to 32 bit slices) collapse far more than C2670's gates, whose "
        "fanout is small, unless C2670 is placed in topological blocks.")
    out.append(
        "- Not studied: the preemptive scheduling of the event graph's accesses (Fig 5.9's "
        "second row).  The event graph (instrumented-lib/eventgraph) runs its fibers on the "
        "FIFO scheduler and has no option to choose; adding one is a change to the library.")
    return out


if __name__ == "__main__":
    sys.exit(main())
