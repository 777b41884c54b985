#!/usr/bin/env python3
"""Phylogeny study (Wen 1995, section 5.1.4, Figs 5.6-5.7) with mprof's own tools.

    .venv/bin/python benchmarks/phylogeny/experiments/run.py [--pes 2] [--reps 5]
        [--species 14] [--chars 50]

Runs build/benchmarks/phylogeny/phylogeny on the paper's input size (14 species, 50 seeded
random binary characters) 3 times on one PE (the sequential time) and --reps times in each
configuration of Figs 5.6-5.7, interleaved in rounds (every configuration once per round, so
that the load of a shared machine falls on all alike; ratios are taken within a round):
stealing and pushing with 1 KiB aggregation (the initial implementation), and stealing
without aggregation.  Every run is reported with the runtime's
fitted cost model (`mprof report RUN --model M`, default build/workflows/rts.model.json from
`make demo`).  Writes benchmarks/phylogeny/experiments/results/<config>.txt and
benchmarks/phylogeny/experiments/results/summary.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
import study  # noqa: E402

TAG = "phylogeny-study"
EVENTS = [("fetch", "phylogeny:FETCH"), ("remove", "taskstealer:REMOVE"),
          ("comb", "phylogeny:COMBINE")]
CONFIGS = [  # name, balance, aggregation bytes, label
    ("steal", "steal", 1024, "Stealing, initial implementation"),
    ("steal-noagg", "steal", 0, "+ no aggregation"),
    ("push", "push", 1024, "Pushing, initial implementation"),
]
# Fig 5.6: sequential, total, idle, (observed, critical) of fetch, remove, comb
PAPER_56 = {
    "steal": {"CM5": (1089, 137.6, 37.5, (30.8, 30.4), (1.05, 0.96), (5.43, 5.38)),
              "Paragon": (516, 151.75, 77.5, (2.07, 2.07), (74.0, 73.1), (1.21, 1.16)),
              "SP1": (308, 50.3, 4.22, (6.10, 2.73), (0.37, 0.26), (1.90, 1.00))},
    "push": {"CM5": (1089, 434.4, 170.9, (95.1, 95.1), (33.3, 28.6), (46.8, 46.8)),
             "Paragon": (516, 305.1, 119.6, (103, 103), (13.2, 9.71), (6.61, 6.61)),
             "SP1": (308, 156.9, 49.0, (43.3, 43.3), (3.7, 3.7), (34.8, 1.95))},
}
PAPER_57 = {"steal": (137.6, 151.8, 50.2), "steal-noagg": (112.3, 164.0, 50.0)}
PAPER_TASKS = {"steal": 2838, "push": 2862}  # Fig 2.11, per PE (32 PEs)


def main(argv=None):
    ap = study.parser(__doc__, "phylogeny", 5)
    ap.add_argument("--species", type=int, default=14)
    ap.add_argument("--chars", type=int, default=50)
    args = ap.parse_args(argv)
    rows = study.saved(args)
    if rows is not None:
        study.write(args.out, list(rows.values()), render(rows, args))
        return 0
    exe, model = study.setup(TAG, "phylogeny", args)
    size = [f"--species={args.species}", f"--chars={args.chars}"]
    machine = study.machine_load()
    rows = {"sequential": study.measure(TAG, "sequential", exe, size,
                                        {"MPROF_PES": 1, "MPROF_AGG_BYTES": 1024}, 3, model,
                                        args.work, args.out)}
    group = {name: ([*size, f"--balance={balance}"],
                    {"MPROF_PES": args.pes, "MPROF_AGG_BYTES": agg})
             for name, balance, agg, _ in CONFIGS}
    rows.update(study.measure_interleaved(TAG, group, exe, args.reps, model, args.work,
                                          args.out))
    rows["_machine"] = study.machine_load(machine)
    study.write(args.out, list(rows.values()), render(rows, args))
    return 0


def render(rows, args) -> str:
    f = study.fmt
    seq = study.param_stat(rows["sequential"], "solve_s")[0]
    lines = [
        "# Phylogeny (Wen 1995, §5.1.4, Figs 5.6-5.7) reproduced with mprof",
        "",
        f"`benchmarks/phylogeny/experiments/run.py`: {args.species} species, {args.chars} "
        f"seeded random binary characters, {args.pes} PEs on shared memory (the machine has 2 "
        f"cores), {args.reps} runs per configuration interleaved in rounds, 3 sequential runs "
        "(1 PE).  Medians over the runs, seconds averaged over the PEs.  `solve` is the "
        "program's time from the first task to termination; latency columns are observed / "
        "critical; tasks, tests (perfect-phylogeny tests actually run: the redundant work), "
        "fetches and combinations are totals over the PEs of the median run.  "
        + study.load_note(rows.get("_machine")),
        "",
        "| configuration | solve (range) | speedup | idle | fetch | remove | comb | tasks | "
        "tests | fetches | combines | explained |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        if name.startswith("_"):
            continue
        t, lo, hi = study.param_stat(row, "solve_s")
        sp = f"{seq / t:.2f}" if seq and t and name != "sequential" else ""
        lat = " | ".join(f"{f(row.get('obs:' + a), 3)} / {f(row.get('crit:' + a), 3)}"
                         for _, a in EVENTS)
        counts = " | ".join(f"{study.param_stat(row, k)[0]:.0f}"
                            if study.param_stat(row, k)[0] is not None else ""
                            for k in ("tasks", "tests", "fetches", "combines"))
        lines.append(f"| {name} | {f(t, 3)} ({f(lo, 3)}-{f(hi, 3)}) | {sp} | "
                     f"{f(row.get('Idle'), 3)} | {lat} | {counts} | "
                     f"{row['explained']}/{row['runs']} |")
    lines += ["", study.EXPLAINED_NOTE]
    lines += ["", "The paper, Fig 5.6 (initial implementations, 32-PE CM5, 8-PE Paragon and SP1; "
              "seconds):", "",
              "| strategy | machine | sequential | total | idle | fetch | remove | comb |",
              "|---|---|---|---|---|---|---|---|"]
    for strat, machines in PAPER_56.items():
        for m, (sq, t, i, *ev) in machines.items():
            cells = " | ".join(f"{e[0]} / {e[1]}" for e in ev)
            lines.append(f"| {strat} | {m} | {sq} | {t} | {i} | {cells} |")
    lines += ["", "and Fig 5.7 (running time of the stealing version):", "",
              "| configuration | CM5 | Paragon | SP1 |", "|---|---|---|---|"]
    for name, (c, p, s) in PAPER_57.items():
        label = next(lab for n, *_, lab in CONFIGS if n == name)
        lines.append(f"| {label} | {c} | {p} | {s} |")
    lines += ["", f"Tasks per PE on the CM5 (Fig 2.11): stealing {PAPER_TASKS['steal']}, "
              f"pushing {PAPER_TASKS['push']}; the text of §5.1.4 says pushing generates 50 % "
              "to 100 % more tasks than stealing."]
    lines += ["", "Findings:", ""] + findings(rows)
    lines += ["", "Commands:", ""] + [f"- `{row['cmd']}`" for row in rows.values()
                                      if "cmd" in row]
    return "\n".join(lines) + "\n"


def findings(rows) -> list[str]:
    t = {n: study.param_stat(r, "solve_s") for n, r in rows.items() if "cmd" in r}
    seq_t = t["sequential"][0]
    p = {n: {k: study.param_stat(r, k)[0] for k in ("tasks", "tests", "fetches")}
         for n, r in rows.items() if "cmd" in r}

    def rr(a, b):
        """a's time over b's in the same round: median (min-max), and the verdict."""
        m, lo, hi = study.round_ratio(rows[a], rows[b], "solve_s")
        if m is None:
            return "n/a", "not measured"
        verdict = ("faster in every round" if hi < 1 else "slower in every round" if lo > 1
                   else "within the spread (the rounds disagree)")
        return f"{m:.2f} ({lo:.2f}-{hi:.2f})", verdict

    def lat(name, access, kind="obs"):
        return rows[name].get(f"{kind}:{access}")

    def ranked(name):
        named = [(ev, lat(name, a) or 0) for ev, a in EVENTS]
        return ", ".join(f"{ev} {v:.3f}" for ev, v in sorted(named, key=lambda x: -x[1]))

    def ratio(k):
        a, b = p["push"][k], p["steal"][k]
        return f"{a / b:.2f}x" if a and b else "n/a"

    push, push_v = rr("push", "steal")
    noagg, noagg_v = rr("steal-noagg", "steal")
    steal_wins = push_v == "slower in every round"
    sp = seq_t / t["steal"][0] if seq_t and t["steal"][0] else float("nan")
    return [
        f"- Stealing vs pushing (paper: pushing 3.2x the time of stealing on the CM5, 2.0x "
        f"Paragon, 3.1x SP1): stealing {study.fmt(t['steal'][0], 3)} s, pushing "
        f"{study.fmt(t['push'][0], 3)} s; pushing's time over stealing's in the same round "
        f"{push}, {push_v}.  "
        + ("Reproduces in direction." if steal_wins else "Not reproduced beyond the spread."),
        f"- Locality and redundant work.  Pushing runs {ratio('tests')} the perfect-phylogeny "
        f"tests of stealing (a PE tests supersets of pairs that failed elsewhere until a "
        f"combine brings the pair) and {ratio('tasks')} the tasks; it fetches "
        f"{p['push']['fetches']:.0f} subsets against {p['steal']['fetches']:.0f}.  The paper "
        "reports 50-100 % more tasks with pushing; here every compatible subset is generated "
        "exactly once (characters added in increasing order), so only the failing "
        "candidates, not the tasks, can multiply.",
        f"- Which events carry the idle time (observed latency per PE).  Stealing: "
        f"{ranked('steal')}; pushing: {ranked('push')}.  Paper (CM5, SP1): fetch dominates "
        "stealing's idle time, and pushing multiplies fetch, remove and combine latencies.",
        f"- Stealing without aggregation (paper: 0.82 of the aggregated time on the CM5, 1.08 "
        f"Paragon, 1.00 SP1): {noagg} of the aggregated time in the same round, {noagg_v}.",
        f"- Speedup of stealing: {sp:.2f} on 2 PEs (paper: 7.9 on the 32-PE CM5, 3.4 on the "
        "8-PE Paragon, 6.1 on the 8-PE SP1).  Each PE's success store holds about half of "
        "the successes, and a superset query on a smaller trie is cheaper, so a speedup above "
        "2 is possible.  With 2 PEs a steal always reaches the only other PE and a "
        "combination is one butterfly step, so the paper's 32-PE effects of topology are out "
        "of reach; the tasks are also far finer than the paper's (microseconds, not 10-50 "
        "ms: the binary-character test is a pairwise four-gamete check), so runtime "
        "overheads weigh more.",
    ]


if __name__ == "__main__":
    sys.exit(main())
