#!/usr/bin/env python3
"""CSWEC study (Wen 1995, section 5.1.5, Figs 5.8-5.10) with mprof's own tools.

    .venv/bin/python benchmarks/cswec/experiments/run.py [--size small|paper] [--pes 2]
        [--flush default,4:0] [--reps N] [--vectors V] [--capacities 2,4,8,16,64,256]
        [--sweep-vectors V] [--cap-reps N] [--callgrind-vectors V] [--callgrind-reps N]
        [--grain ccc|stage|gate] [--calibrate]

The options' defaults come from --size (SIZES).  Makes the netlists (benchmarks/cswec/
netlist.py) of ISCAS-85 C2670 and the generated 32-bit REGFILE at the --grain (GRAINS): ccc,
the default, the paper's channel-connected components of the static CMOS transistor netlist
(the original C2670, benchmarks/cswec/data/c2670.bench, and REGFILE's transmission-gate bit
lines); stage, circuitgraph's c2670.v in static CMOS stages and REGFILE in gate-level bit
slices; gate, a subcircuit per gate of both.  Then runs build/benchmarks/cswec/cswec on each:
on one PE (the sequential time); then, interleaved in --reps rounds (every configuration
once per round, so that the load of a shared machine falls on all alike, and ratios are
taken within a round) at every PE count of --pes, the initial implementation (also at every
other --flush setting) (capacity 64, the paper's setting, 1 KiB aggregation, the event
graph's fibers FIFO), the event graph's fibers on the preemptive scheduler
(`--sched=preempt`), 4 KiB aggregation with each scheduler (Figs 5.8-5.9) and, beyond the
paper, with the nodes placed in contiguous blocks of the topological order
(`--place=block`); the instructions of FIFO and preemptive scheduling counted by `valgrind
--tool=callgrind` (--callgrind-vectors vectors; on 1 PE, where the count is deterministic,
and --callgrind-reps times on the largest PE count of --pes, where it is not: the schedule,
and an idle PE's spinning, vary), a figure the machine's load does not disturb (0 vectors:
skip); and the capacity sweep of Fig 5.10 at the largest PE count, --cap-reps times with
--sweep-vectors vectors (small capacities
need thousands of recovery rounds: capacity 1 on C2670 takes minutes, so the default sweep
starts at 2).  Every run is reported with the runtime's fitted cost model (`mprof report RUN
--model M`, default build/workflows/rts.model.json from `make demo`).  Writes
benchmarks/cswec/experiments/results/<config>.txt and .../summary.md.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
import study  # noqa: E402

TAG = "cswec-study"
TOOL = study.ROOT / "benchmarks/cswec/netlist.py"
EVENTS = [("term", "cswec:TERM"), ("resource", "graph:ENQ"), ("data", "graph:DEQ")]
CIRCUITS = ["c2670", "regfile"]
BENCH = study.ROOT / "benchmarks/cswec/data/c2670.bench"
# netlist.py's arguments per grain and circuit
GRAINS = {
    "ccc": {"c2670": ["bench", BENCH, "--grain", "ccc"], "regfile": ["regfile", "--grain", "ccc"]},
    "stage": {"c2670": ["iscas", "c2670", "--stages"], "regfile": ["regfile"]},
    "gate": {"c2670": ["iscas", "c2670"], "regfile": ["regfile"]},
}
# Fig 5.8: sequential, total, idle, (observed, critical) of term, resource, data
PAPER_58 = {
    "regfile": {
        "CM5": (515, 19.5, 4.18, (0.8, 0.8), (3.21, 0.58), (10.4, 2.78)),
        "Paragon": (396, 51.2, 1.82, (0.20, 0.20), (0.76, 0.05), (6.32, 1.51)),
        "SP1": (214, 29.9, 2.24, (0.11, 0.11), (5.88, 0.10), (18.1, 2.01)),
    },
    "c2670": {
        "CM5": (990, 42.9, 8.84, (0.46, 0.46), (52.5, 1.53), (185, 6.59)),
        "Paragon": (28172, 248, 63.5, (0.42, 0.42), (1843, 5.4), (1175, 57.6)),
        "SP1": (361, 62.3, 2.07, None, (24.5, 0.36), (47.0, 1.62)),
    },
}
PAPER_59 = [
    ("Initial implementation", (42.9, 248, 62.3)),
    ("+ preemptive scheduler", (38.3, 241, 56.7)),
    ("+ more aggregation (4K byte)", (36.9, 245, 49.5)),
]
# The interleaved configurations at capacity 64: name, extra options, aggregation bytes.
FIG59 = [
    ("initial", [], 1024),
    ("preempt", ["--sched=preempt"], 1024),
    ("agg4k", [], 4096),
    ("preempt-agg4k", ["--sched=preempt"], 4096),
    ("block", ["--place=block"], 1024),
]
PAPER_SPEEDUP = {"regfile": (23.6, 7.7, 7.2, 6.0), "c2670": (26.8, 117, 7.3, 3.0)}
# Fig 5.8's runtime layer: threads, communication start-up / transfer
PAPER_RUNTIME = {
    "regfile": {
        "CM5": (0.20, 0.02, 0.10),
        "Paragon": (0.55, 0.11, 0.18),
        "SP1": (0.36, 0.05, 0.15),
    },
    "c2670": {"CM5": (4.17, 0.52, 3.32), "Paragon": (18.3, 8.0, 8.5), "SP1": (10.03, 1.70, 6.75)},
}
PAPER_RATIO = {
    c: {
        m: study.paper_ratio(PAPER_58[c][m][1], PAPER_58[c][m][2], *rt)
        for m, rt in machines.items()
    }
    for c, machines in PAPER_RUNTIME.items()
}
PAPER_SUBCIRCUITS = {"c2670": 2033, "regfile": 325}
SIZES = {
    "small": {
        "vectors": 4,
        "reps": 3,
        "capacities": "4,64",
        "sweep_vectors": 2,
        "cap_reps": 1,
        "callgrind_vectors": 0,
        "callgrind_reps": 1,
        "grain": "ccc",
        "label": "4 vectors, 3 rounds, capacities 4 and 64 (2 vectors, 1 run), no callgrind",
    },
    "paper": {
        "vectors": 32,
        "reps": 9,
        "capacities": "2,4,8,16,64,256",
        "sweep_vectors": 8,
        "cap_reps": 2,
        "callgrind_vectors": 8,
        "callgrind_reps": 3,
        "grain": "ccc",
        "label": "32 vectors, 9 rounds, capacities 2-256 (8 vectors, 2 runs), callgrind "
        "on 8 vectors",
    },
}
GRAIN_NOUN = {
    "ccc": "channel-connected components",
    "stage": "CMOS stages (C2670)",
    "gate": "single gates",
}
CANDIDATES = [4, 16, 32]  # vectors on C2670, for --calibrate


def netlist(circ, args) -> Path:
    """The circuit's netlist at the --grain; its subcircuit count in args.subs."""
    net = args.work / f"{circ}.net"
    net.parent.mkdir(parents=True, exist_ok=True)
    study.run(TAG, [sys.executable, TOOL, *GRAINS[args.grain][circ], "-o", net])
    head = net.read_text().split("\n", 2)[1].split()
    args.subs[circ] = int(head[head.index("subcircuits") + 1])
    return net


def main(argv=None):
    ap = study.parser(__doc__, "cswec", SIZES)
    ap.add_argument("--vectors", type=int, default=None)
    ap.add_argument("--capacities", default=None)
    ap.add_argument("--sweep-vectors", type=int, default=None)
    ap.add_argument("--cap-reps", type=int, default=None)
    ap.add_argument("--callgrind-vectors", type=int, default=None)
    ap.add_argument("--callgrind-reps", type=int, default=None)
    ap.add_argument(
        "--grain",
        choices=list(GRAINS),
        default=None,
        help="the subcircuits: channel-connected components (the default), "
        "static CMOS stages of circuitgraph's C2670, or gates",
    )
    args = study.settings(ap, argv)
    args.subs = {}
    return study.drive(
        TAG, "cswec", args, render, candidates, lambda exe, model: measure(exe, model, args)
    )


def candidates(args) -> list:
    net = netlist("c2670", args)
    return [
        (
            f"C2670, {v} vectors",
            [f"--netlist={net}", f"--vectors={v}", "--capacity=64"],
            {"MPROF_AGG_BYTES": 1024},
        )
        for v in CANDIDATES
    ]


def capacities(args) -> list[int]:
    """The capacity sweep's edge capacities (--capacities, or the saved study's)."""
    return [int(c) for c in args.capacities.split(",")]


def measure(exe, model, args) -> dict:
    """The study's rows: per circuit, the 1-PE runs, each PE count's configurations in rounds,
    callgrind's counts and the capacity sweep at the largest PE count."""
    args.caps = capacities(args)
    rows = {"_machine": study.machine_load()}
    for circ in CIRCUITS:
        net = netlist(circ, args)
        base = [f"--netlist={net}", f"--vectors={args.vectors}"]

        def go(name, extra, env, reps, base=base):
            rows[name] = study.measure(
                TAG, name, exe, [*base, *extra], env, reps, model, args.work, args.out
            )

        go(f"{circ}-sequential", [], {"MPROF_PES": 1, "MPROF_AGG_BYTES": 1024}, 3)
        for pes in args.pes:
            group = {}
            for name, extra, agg in FIG59:
                group[f"{circ}-{name}@{pes}"] = (
                    [*base, "--capacity=64", *extra],
                    {"MPROF_PES": pes, "MPROF_AGG_BYTES": agg},
                )
            for spec in args.flush[1:]:
                group[f"{circ}-initial{study.flush_name(spec)}@{pes}"] = (
                    [*base, "--capacity=64"],
                    {"MPROF_PES": pes, "MPROF_AGG_BYTES": 1024, **study.flush_env(spec)},
                )
            rows.update(
                study.measure_interleaved(TAG, group, exe, args.reps, model, args.work, args.out)
            )
        pes = study.headline_pes(args)
        if args.callgrind_vectors:
            rows[f"_callgrind-{circ}"] = callgrind(exe, net, args)
        for cap in args.caps:
            go(
                f"{circ}-cap{cap}@{pes}",
                [f"--capacity={cap}"],
                {"MPROF_PES": pes, "MPROF_AGG_BYTES": 1024},
                args.cap_reps,
                [f"--netlist={net}", f"--vectors={args.sweep_vectors}"],
            )
    study.machine_load(rows["_machine"])
    rows["_study"] = study.study_row(
        args,
        (
            "vectors",
            "capacities",
            "sweep_vectors",
            "cap_reps",
            "callgrind_vectors",
            "callgrind_reps",
            "grain",
            "subs",
        ),
    )
    return rows


def callgrind(exe, net, args) -> dict:
    """Instructions (callgrind's "Collected") of FIFO and preemptive scheduling, with the null
    messages and recovery rounds of each run: {"name", "<sched>-<P>": [(Ir, nulls, rounds)]}."""
    if not shutil.which("valgrind"):
        sys.exit(f"[{TAG}] valgrind not found (apt-get install valgrind, or --callgrind-vectors 0)")
    out = {"name": f"_callgrind-{Path(net).stem}", "vectors": args.callgrind_vectors}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    for pes, reps in ((1, 1), (study.headline_pes(args), args.callgrind_reps)):
        for sched in ("fifo", "preempt"):
            runs = []
            for _ in range(reps):
                cmd = [
                    "valgrind",
                    "--tool=callgrind",
                    "--callgrind-out-file=/dev/null",
                    exe,
                    f"--netlist={net}",
                    f"--vectors={args.callgrind_vectors}",
                    f"--sched={sched}",
                ]
                proc = study.run(
                    TAG, cmd, env={**env, "MPROF_PES": str(pes)}, capture_output=True, text=True
                )
                ir = re.search(r"Collected : (\d+)", proc.stderr)
                stats = re.search(r"(\d+) nulls, .* (\d+) recovery rounds", proc.stdout)
                if not ir or not stats:
                    sys.exit(f"[{TAG}] cannot read the callgrind run: {proc.stderr[-500:]}")
                runs.append((int(ir.group(1)), int(stats.group(1)), int(stats.group(2))))
            out[f"{sched}-{pes}"] = runs
    return out


def callgrind_lines(rows, args) -> list[str]:
    cg = {c: rows.get(f"_callgrind-{c}") for c in CIRCUITS}
    if not all(cg.values()):
        return []
    lines = [
        "",
        f"Instructions counted by callgrind ({cg['c2670']['vectors']} vectors; millions; "
        "the median run where there are several, with the null messages and recovery "
        "rounds of the runs), preemptive over FIFO:",
        "",
        "| circuit | PEs | FIFO | preemptive | ratio | nulls FIFO / preemptive | "
        "recoveries FIFO / preemptive |",
        "|---|---|---|---|---|---|---|",
    ]
    for circ, c in cg.items():
        for pes in sorted({int(k.split("-")[1]) for k in c if "-" in k}):
            fi, pr = c[f"fifo-{pes}"], c[f"preempt-{pes}"]
            a, b = statistics.median(r[0] for r in fi), statistics.median(r[0] for r in pr)
            lines.append(
                f"| {circ} | {pes} | {a / 1e6:.1f} | {b / 1e6:.1f} | {b / a:.3f} | "
                f"{', '.join(str(r[1]) for r in fi)} / {', '.join(str(r[1]) for r in pr)} | "
                f"{', '.join(str(r[2]) for r in fi)} / {', '.join(str(r[2]) for r in pr)} |"
            )
    return lines


def cg_ratio(rows, circ, pes):
    c = rows.get(f"_callgrind-{circ}")
    if not c or f"fifo-{pes}" not in c:
        return None
    return statistics.median(r[0] for r in c[f"preempt-{pes}"]) / statistics.median(
        r[0] for r in c[f"fifo-{pes}"]
    )


def pstat(row, key):
    return study.param_stat(row, key)[0]


def ratio(rows, circ, name):
    """Simulation time of configuration `name` over the initial one's in the same round."""
    return study.round_ratio(rows[f"{circ}-{name}"], rows[f"{circ}-initial"], "sim_s")


def fmt_ratio(r) -> str:
    return "" if r[0] is None else f"{r[0]:.3f} ({r[1]:.3f}-{r[2]:.3f})"


def ratio_text(circ) -> str:
    return ", ".join(f"{m} {r:.1f}" for m, r in PAPER_RATIO[circ].items())


def table(rows, args, pes) -> list[str]:
    """The configurations at capacity 64 on `pes` PEs, both circuits."""
    f = study.fmt
    view = study.at(rows, pes)
    lines = [
        f"## {pes} PEs",
        "",
        "| configuration | sim (range) | speedup | idle | comp/rt (range) | term | resource | "
        "data | events | nulls | recoveries | collapsed | explained |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for circ in CIRCUITS:
        seq = pstat(view[f"{circ}-sequential"], "sim_s")
        names = (
            [f"{circ}-sequential"]
            + [f"{circ}-{n}" for n, _, _ in FIG59]
            + [f"{circ}-initial{study.flush_name(s)}" for s in args.flush[1:]]
        )
        for name in names:
            row = view[name]
            time, sp = study.time_cells(row, "sim_s", seq, name.endswith("sequential"))
            lat = study.latency_cells(row, [a for _, a in EVENTS], 4)
            coll = pstat(row, "collapse")
            lines.append(
                f"| {name} | {time} | {sp} | "
                f"{f(row.get('Idle'), 3)} | {study.ratio_cell(row)} | {lat} | "
                f"{pstat(row, 'events'):.0f} | {pstat(row, 'nulls'):.0f} | "
                f"{pstat(row, 'recoveries'):.0f} | {100 * coll:.1f} % | "
                f"{row['explained']}/{row['runs']} |"
            )
    for spec in args.flush[1:]:
        lines += [
            "",
            f"Message service, {study.flush_label(spec)} (the modern counterpart of "
            "lower aggregation), time relative to the initial implementation in the same "
            "round: "
            + "; ".join(
                f"{c} {fmt_ratio(ratio(view, c, 'initial' + study.flush_name(spec)))}"
                for c in CIRCUITS
            )
            + ".",
        ]
    return lines + [""]


def grain_text(args) -> str:
    subs = args.subs or {}
    c, r = subs.get("c2670", "?"), subs.get("regfile", "?")
    paper = (
        f"the paper's {PAPER_SUBCIRCUITS['c2670']} and "
        f"{PAPER_SUBCIRCUITS['regfile']}, 32 very large"
    )
    if args.grain == "ccc":
        return (
            f"a subcircuit per channel-connected component of the static CMOS transistor "
            f"netlist, as in the paper: C2670 from the original ISCAS-85 netlist (1193 "
            f"gates; `netlist.py bench benchmarks/cswec/data/c2670.bench --grain ccc`), "
            f"{c} CCCs, and REGFILE (`netlist.py regfile --grain ccc`: 32 bit lines of 32 "
            f"cell inverters and transmission gates among the decoder's and output "
            f"inverters' small CCCs), {r}, against {paper} (the counts compared in "
            "docs/measurements/chapter5-notes.md); plus the input drivers (233 and 1029)"
        )
    if args.grain == "stage":
        c = (
            f"a subcircuit per static CMOS stage: `netlist.py iscas c2670 --stages` splits "
            f"circuitgraph's 699 gates into NAND/NOR/inverter stages, {c} "
            f"subcircuits against the paper's {PAPER_SUBCIRCUITS['c2670']} (its C2670 netlist "
            "is the original ISCAS one at transistor level, partitioned into "
            "channel-connected components; circuitgraph's version has fewer gates)"
        )
    else:
        c = f"a subcircuit per gate, {c} subcircuits"
    return (
        f"C2670 at {c}; REGFILE: {r} subcircuits (32 large "
        "bit-slice subcircuits of 63 gates among the small decoder ones, plus the 1029 "
        f"input drivers; the paper's has {PAPER_SUBCIRCUITS['regfile']} subcircuits, 32 "
        "very large)"
    )


def readme(rows, args) -> str:
    pes = study.headline_pes(args)
    view = study.at(rows, pes)
    sp = {
        c: study.speedup(view[f"{c}-sequential"], view[f"{c}-initial"], "sim_s") for c in CIRCUITS
    }
    return study.in_short(
        f"at the {args.size} size ({study.size_label(args)}) on {pes} PEs, with "
        f"{(args.subs or {}).get('c2670', '?')} subcircuits on C2670 (the paper: 2033), the "
        "ratio of computation to runtime overhead is "
        f"{study.fmt(view['c2670-initial'].get('ratio'), 1)} on C2670 and "
        f"{study.fmt(view['regfile-initial'].get('ratio'), 1)} on REGFILE (the paper's: "
        f"{ratio_text('c2670')} and {ratio_text('regfile')}); the initial implementation's "
        f"speedup over 1 PE is {study.fmt(sp['c2670'], 2)} on C2670 and "
        f"{study.fmt(sp['regfile'], 2)} on REGFILE (paper, 32-PE CM5: 23.1 and 26.4); the "
        "preemptive scheduling of the event graph's fibers gives "
        f"{fmt_ratio(ratio(view, 'c2670', 'preempt'))} of the initial time on C2670 in the "
        "same round (paper: 0.89-0.97); the event graph collapses "
        f"{100 * pstat(view['regfile-initial'], 'collapse'):.0f} % of REGFILE's edge messages "
        f"and {100 * pstat(view['c2670-initial'], 'collapse'):.0f} % of C2670's (paper: > 95 %)."
    )


def render(rows, args) -> str:
    args.subs = rows.get("_study", {}).get("subs") or args.subs
    args.caps = capacities(args)
    lines = [
        "# CSWEC (Wen 1995, §5.1.5, Figs 5.8-5.10) reproduced with mprof",
        "",
        readme(rows, args),
        "",
        f"`benchmarks/cswec/experiments/run.py --size {args.size}`: {grain_text(args)}; "
        f"{args.vectors} input vectors, PE counts {', '.join(map(str, args.pes))} on shared "
        f"memory (the machine has {rows['_study']['cores']} cores), {args.reps} runs per "
        f"configuration at capacity 64, interleaved in rounds ({args.cap_reps} in the "
        "capacity sweep), 3 sequential runs (1 PE).  Medians over the runs, seconds averaged "
        "over the PEs.  `sim` is the program's simulation time; latency columns are observed / "
        "critical: term = the recovery thread (barrier, freeze, min-reduction), resource = "
        "waiting for edge space (graph:ENQ), data = waiting for events (graph:DEQ).  "
        "`collapsed`: the share of event messages on edges that the event graph did not send "
        "as physical messages (same-PE sinks and identical copies to one PE).  Rows "
        "`-initial-flushK.D`: the initial implementation with MPROF_FLUSH_FIBERS=K, "
        "MPROF_FLUSH_DELAY_US=D.  "
        + study.load_note(rows.get("_machine"))
        + "  "
        + study.pending_note(args, "cswec"),
        "",
        "Ratio of computation to runtime overhead (comp/rt), the paper's (Fig 5.8): C2670 "
        f"{ratio_text('c2670')}; REGFILE {ratio_text('regfile')}.",
        "",
    ]
    lines += study.tables(
        rows, args, table, SIZES, list(PAPER_RATIO["c2670"].values()), explained=False
    )
    fig59 = {f"c2670-{n}": (label, t) for (label, t), (n, *_) in zip(PAPER_59, FIG59)}
    lines += study.beside(
        "Fig 5.9 (C2670)",
        {n: t for n, (_, t) in fig59.items()},
        {n: label for n, (label, _) in fig59.items()},
        "c2670-initial",
        "sim_s",
        rows,
        args,
    )
    pes = study.headline_pes(args)
    lines += ["", f"## Details on {pes} PEs"]
    return details(study.at(rows, pes), args, pes, lines)


def details(rows, args, pes, lines) -> str:
    lines += ["", study.EXPLAINED_NOTE]
    lines += [
        "",
        f"Fig 5.10 here ({args.sweep_vectors} vectors, {args.cap_reps} runs each): "
        "simulation time against edge capacity, normalised to the smallest capacity "
        "(medians), with the recovery rounds and null messages of the median run:",
        "",
        "| circuit | " + " | ".join(f"C={c}" for c in args.caps) + " |",
        "|---|" + "---|" * len(args.caps),
    ]
    for circ in CIRCUITS:
        ts = [pstat(rows[f"{circ}-cap{c}"], "sim_s") for c in args.caps]
        lines.append(f"| {circ} | " + " | ".join(f"{t / ts[0]:.3g}" for t in ts) + " |")
        lines.append(f"| {circ} seconds | " + " | ".join(f"{t:.3f}" for t in ts) + " |")
        rec = [pstat(rows[f"{circ}-cap{c}"], "recoveries") for c in args.caps]
        nul = [pstat(rows[f"{circ}-cap{c}"], "nulls") for c in args.caps]
        lines.append(f"| {circ} recoveries | " + " | ".join(f"{r:.0f}" for r in rec) + " |")
        lines.append(f"| {circ} nulls | " + " | ".join(f"{n:.0f}" for n in nul) + " |")
    lines += [
        "",
        "The paper, Fig 5.8 (initial implementation, capacity 64; 32-PE CM5, 8-PE "
        "Paragon and SP1; seconds):",
        "",
        "| circuit | machine | sequential | total | idle | term | resource | data |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for circ, machines in PAPER_58.items():
        for m, (sq, t, i, *ev) in machines.items():
            cells = " | ".join("" if e is None else f"{e[0]} / {e[1]}" for e in ev)
            lines.append(f"| {circ} | {m} | {sq} | {t} | {i} | {cells} |")
    lines += [
        "",
        "Fig 5.9 (C2670, running time; paper in seconds, ours as the median over the "
        "rounds of the time relative to the initial implementation in the same round, "
        "with its range, and the median simulation time):",
        "",
        "| configuration | CM5 | Paragon | SP1 | ours, C2670 | ours, REGFILE |",
        "|---|---|---|---|---|---|",
    ]
    for (label, (c, p, s)), name in zip(PAPER_59, ["initial", "preempt", "preempt-agg4k"]):
        ours = [
            f"{fmt_ratio(ratio(rows, circ, name))}, {pstat(rows[f'{circ}-{name}'], 'sim_s'):.3f} s"
            for circ in CIRCUITS
        ]
        lines.append(f"| {label} | {c} | {p} | {s} | {ours[0]} | {ours[1]} |")
    lines += callgrind_lines(rows, args) if args.callgrind_vectors else []
    lines += [
        "",
        "Ours also: 4 KiB aggregation with FIFO scheduling (`agg4k`) relative to the "
        "initial implementation: "
        + "; ".join(f"{circ} {fmt_ratio(ratio(rows, circ, 'agg4k'))}" for circ in CIRCUITS)
        + ".",
    ]
    lines += [
        "",
        "Best speedups (Fig 5.11; CM5, Paragon, SP1, Sparc cluster): "
        + "; ".join(f"{c} {', '.join(map(str, v))}" for c, v in PAPER_SPEEDUP.items())
        + ".  Fig 5.10 "
        "gives no numbers in the text: larger capacity helps, C2670 is less sensitive to the "
        "first increases than REGFILE, and on the Paragon too large a capacity made C2670 3x "
        "slower (paging).  §2.2.4.3: the event graph removed more than 95 % of the event "
        "messages for both circuits.",
    ]
    lines += ["", "Findings:", ""] + findings(rows, args, pes)
    lines += ["", "Commands:", ""] + [f"- `{row['cmd']}`" for row in rows.values() if "cmd" in row]
    return "\n".join(lines) + "\n"


def direct_text(rows) -> str:
    """How many records of each circuit's preemptive run ran from the message buffer (rts
    ThreadDirect), against the remote invocations a PE made (RemoteOp), per PE."""
    parts = []
    for circ in CIRCUITS:
        row = rows[f"{circ}-preempt"]
        if row.get("ThreadDirect") is None or row.get("RemoteOp") is None:
            return "the study's rows do not hold the counts (run it again)."
        parts.append(f"{circ} {row['ThreadDirect']:.0f} of {row['RemoteOp']:.0f}")
    return (
        "records run from the buffer against remote invocations, per PE: "
        + ", ".join(parts)
        + " (rts ThreadDirect and RemoteOp)."
    )


def thread_share_text(rows) -> str:
    """What the runtime model says preemption can save: the thread costs of C2670's FIFO and
    preemptive runs against its simulation time."""
    ini, pre = rows["c2670-initial"], rows["c2670-preempt"]
    a, b, sim = ini.get("THREAD"), pre.get("THREAD"), pstat(ini, "sim_s")
    if a is None or b is None or not sim:
        return "The runtime model priced no thread costs for these runs."
    return (
        f"On C2670 the model prices the threads at {a:.4f} s per PE under FIFO and "
        f"{b:.4f} s preemptive, {100 * a / sim:.1f} % of the simulation time: all that "
        "preemption can save in thread costs."
    )


def findings(rows, args, pes) -> list[str]:
    f = study.fmt
    sp = {
        c: pstat(rows[f"{c}-sequential"], "sim_s") / pstat(rows[f"{c}-initial"], "sim_s")
        for c in CIRCUITS
    }
    sp_block = {
        c: pstat(rows[f"{c}-sequential"], "sim_s") / pstat(rows[f"{c}-block"], "sim_s")
        for c in CIRCUITS
    }
    c_slow, r_gain = sp["c2670"] < 1, sp["regfile"] > 1
    # the paper's initial implementation on the 32-PE CM5: sequential time over parallel
    paper_eff = {c: PAPER_58[c]["CM5"][0] / PAPER_58[c]["CM5"][1] / 32 for c in CIRCUITS}
    reached = [c for c in CIRCUITS if sp[c] / pes >= paper_eff[c]]
    out = [
        f"- Speedup on {pes} PEs, initial implementation: C2670 {sp['c2670']:.2f}, REGFILE "
        f"{sp['regfile']:.2f} (paper, 32-PE CM5: 23.1 and 26.4), parallel efficiency "
        f"{sp['c2670'] / pes:.2f} and {sp['regfile'] / pes:.2f} against the paper's "
        f"{paper_eff['c2670']:.2f} and {paper_eff['regfile']:.2f}.  Our subcircuits are "
        f"{GRAIN_NOUN[args.grain]} simulated in microseconds per step, where the paper's took "
        "0.1-10 ms, and the size-based placement deals C2670's equal-sized subcircuits out "
        f"round-robin, so about {100 * (pes - 1) / pes:.0f} % of its edges cross PEs"
        + (
            ": the message and thread overheads outweigh the parallel work on C2670.  "
            if c_slow
            else ", yet C2670 gains.  "
        )
        + (
            "REGFILE's 32 large bit slices carry most of its work and its wide fanouts "
            "collapse, so it gains.  "
            if r_gain
            else "REGFILE does not gain either.  "
        )
        + (
            f"The paper's 32-PE efficiency reached here on "
            f"{' and '.join(c.upper() for c in reached)}.  "
            if reached
            else "Not reproduced: neither circuit reaches the paper's 32-PE efficiency.  "
        )
        + "Placing the nodes in contiguous blocks of the topological order instead (`-block` "
        f"rows, not in the paper) gives C2670 {sp_block['c2670']:.2f} and REGFILE "
        f"{sp_block['regfile']:.2f}, with {100 * pstat(rows['c2670-block'], 'collapse'):.1f} % "
        "of C2670's edge messages collapsed."
    ]
    for circ in CIRCUITS:
        ini = rows[f"{circ}-initial"]
        named = sorted(
            ((ev, ini.get("obs:" + a) or 0, ini.get("crit:" + a) or 0) for ev, a in EVENTS),
            key=lambda x: -x[1],
        )
        ranked = ", ".join(f"{ev} {o:.4f} / {c:.4f}" for ev, o, c in named)
        above = all(o > 2 * c for ev, o, c in named if ev in ("data", "resource"))
        out.append(
            f"- {circ}: idle time by event (observed / critical, s per PE): {ranked}.  Paper: "
            "data first, then resource, term small; observed far above critical for data and "
            f"resource.  Here data first: {'yes' if named[0][0] == 'data' else 'no'}; observed "
            f"above twice the critical for data and resource: {'yes' if above else 'no'}.  "
            "4 KiB aggregation vs 1 KiB (FIFO), same-round ratio: "
            f"{fmt_ratio(ratio(rows, circ, 'agg4k'))}, {verdict(ratio(rows, circ, 'agg4k'))} "
            "(paper, C2670: 0.96 CM5, 0.87 SP1, 1.02 Paragon, on top of the preemptive "
            f"scheduler).  Collapsing: {100 * pstat(ini, 'collapse'):.1f} % of the event "
            "messages on edges sent no physical message."
        )
    for circ in CIRCUITS:
        pre = ratio(rows, circ, "preempt")
        both = ratio(rows, circ, "preempt-agg4k")
        ini, prow = rows[f"{circ}-initial"], rows[f"{circ}-preempt"]
        cg1, cgp = cg_ratio(rows, circ, 1), cg_ratio(rows, circ, pes)
        cg = (
            ""
            if cg1 is None
            else f"  Instructions (callgrind), preemptive over FIFO: {cg1:.3f} on 1 PE, "
            f"{cgp:.3f} on {pes}."
        )
        out.append(
            f"- {circ}, the event graph's fibers on the preemptive scheduler (`--sched=preempt`, "
            f"Fig 5.9's second row): time relative to FIFO in the same round "
            f"{fmt_ratio(pre)}, {verdict(pre)}; with 4 KiB aggregation on top {fmt_ratio(both)}, "
            f"{verdict(both)} (paper, C2670: 0.89 CM5, 0.97 Paragon, 0.91 SP1, then 0.86, "
            f"0.99, 0.79).{cg}  Thread cost priced by the runtime model (s per PE): "
            f"{f(ini.get('THREAD'), 4)} FIFO, {f(prow.get('THREAD'), 4)} preemptive; null "
            f"messages {pstat(ini, 'nulls'):.0f} and {pstat(prow, 'nulls'):.0f}; recovery "
            f"rounds {pstat(ini, 'recoveries'):.0f} and {pstat(prow, 'recoveries'):.0f}."
        )
    pre = ratio(rows, "c2670", "preempt")
    pays = pre[0] is not None and pre[2] < 1
    out.append(
        (
            "- Preemption pays on C2670 here, as in the paper (faster in every round)."
            if pays
            else "- Why preemption does not pay on C2670 here as it did in the paper."
        )
        + "  As in Multipol (Wen 1995, §3.3.3), a preemptive invocation that arrives in a "
        f"message runs straight from the buffer, without a fiber: {direct_text(rows)}  "
        f"{thread_share_text(rows)}  The earlier wake-ups also change the simulation's "
        "schedule: a node woken by the first element of a burst runs sooner, with fewer "
        "inputs, and may send a null message and wait again (null messages "
        f"{pstat(rows['c2670-initial'], 'nulls'):.0f} FIFO, "
        f"{pstat(rows['c2670-preempt'], 'nulls'):.0f} preemptive on C2670)."
    )
    cap_lines = []
    for circ in CIRCUITS:
        ts = [pstat(rows[f"{circ}-cap{c}"], "sim_s") for c in args.caps]
        cap_lines.append(f"{circ} {ts[-1] / ts[0]:.3g}x at C={args.caps[-1]}")
    cap_ratio = {
        c: pstat(rows[f"{c}-cap{args.caps[-1]}"], "sim_s")
        / pstat(rows[f"{c}-cap{args.caps[0]}"], "sim_s")
        for c in CIRCUITS
    }
    less = "C2670" if cap_ratio["c2670"] > cap_ratio["regfile"] else "REGFILE"
    lo, hi = args.caps[0], args.caps[-1]

    def from_lo_to_hi(circ, key, what):
        a, b = (pstat(rows[f"{circ}-cap{c}"], key) for c in (lo, hi))
        return f"{a:.0f} -> {b:.0f} {what}"

    stalls = "; ".join(
        f"{circ} {from_lo_to_hi(circ, 'recoveries', 'recovery rounds')}, "
        f"{from_lo_to_hi(circ, 'nulls', 'null messages')}"
        for circ in CIRCUITS
    )
    penalty = [
        circ
        for circ in CIRCUITS
        if pstat(rows[f"{circ}-cap{hi}"], "sim_s")
        > 1.1 * min(pstat(rows[f"{circ}-cap{c}"], "sim_s") for c in args.caps)
    ]
    out.append(
        "- Capacity (Fig 5.10): time at the largest capacity relative to the smallest: "
        + ", ".join(cap_lines)
        + f".  From C={lo} to C={hi}: {stalls}.  A sender blocked on a full edge cannot "
        "announce its time, so its receivers' other inputs stall until the recovery thread's "
        f"global minimum frees them.  Less sensitive to capacity here: {less} (paper: C2670, "
        "which has more parallelism).  The largest capacity more than 10 % slower than the "
        "best (the paper's memory-hierarchy penalty, 3x on the Paragon): "
        + (", ".join(c.upper() for c in penalty) if penalty else "neither circuit")
        + "."
    )
    coll = {c: 100 * pstat(rows[f"{c}-initial"], "collapse") for c in CIRCUITS}
    block = 100 * pstat(rows["c2670-block"], "collapse")
    out.append(
        f"- Collapsing of identical messages on {pes} PEs: {coll['regfile']:.0f} % of "
        f"REGFILE's edge messages and {coll['c2670']:.0f} % of C2670's (with C2670 placed in "
        f"topological blocks: {block:.0f} %); the paper's > 95 % was measured on 32 PEs with "
        "its own partitioning: "
        + (
            "reproduced."
            if min(coll.values()) > 95
            else "reproduced on REGFILE only."
            if coll["regfile"] > 95
            else "not reproduced."
        )
        + "  An edge between nodes of one PE is served inline, and copies of an event to "
        "one other PE are shipped once, so the share depends on the circuit and the "
        "placement: "
        + (
            "REGFILE's wide fanouts (address decoders to 32 bit slices) collapse more than "
            "C2670's gates, whose fanout is small."
            if coll["regfile"] > coll["c2670"]
            else "C2670's edges collapse as much as REGFILE's wide fanouts here."
        )
    )
    return out


def verdict(r) -> str:
    """Whether every round agrees on the direction of a same-round ratio."""
    return "not measured" if r[0] is None else study.round_verdict(r[1], r[2])


if __name__ == "__main__":
    sys.exit(main())
