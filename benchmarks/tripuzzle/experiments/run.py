#!/usr/bin/env python3
"""Tripuzzle study (Wen 1995, section 5.1.2, Figs 5.2-5.3) with mprof's own tools.

    .venv/bin/python benchmarks/tripuzzle/experiments/run.py [--size small|paper] [--pes 2]
        [--flush default,4:0] [--reps N] [--rows R] [--calibrate]

Runs build/benchmarks/tripuzzle/tripuzzle on the size's board (SIZES; paper: the paper's 7
rows, the hole in the middle of the 5th row) once on one PE (the sequential time) and, at
every PE count of --pes, --reps times in each configuration of Fig 5.3: FIFO inserts with
1 KiB aggregation (the initial implementation), preemptive inserts with 1 KiB, preemptive
with 4 KiB (MPROF_AGG_BYTES), and the initial one at every other --flush setting.  Every run
is reported with the runtime's fitted cost model (`mprof report RUN --model M`, default
build/workflows/rts.model.json from `make demo`).  Writes <config>.txt and summary.md in
benchmarks/tripuzzle/experiments/results/.  A 7-row run takes about half a minute on 2 PEs.
--calibrate measures the ratio of computation to runtime overhead at 5, 6 and 7 rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
import study  # noqa: E402

TAG = "tripuzzle-study"
SYNC = "hashtable:SYNC"
CONFIGS = [  # name, scheduler, aggregation bytes, Fig 5.3 row
    ("fifo-1k", "fifo", 1024, "FIFO Scheduler, 1K byte aggregation"),
    ("preempt-1k", "preempt", 1024, "Preemptive Scheduler, 1K byte aggregation"),
    ("preempt-4k", "preempt", 4096, "Preemptive Scheduler, 4K byte aggregation"),
]
# Fig 5.2 (initial implementation; seconds averaged over PEs):
# sequential, total, idle, threads, comm start-up / transfer, sync observed / critical
PAPER_52 = {
    "CM5": (122.9, 7.69, 2.10, 0.86, 0.14, 1.17, 1.91, 1.91),
    "Paragon": (66.9, 17.60, 6.81, 1.71, 0.91, 1.70, 6.70, 6.70),
    "SP1": (40.2, 9.66, 2.11, 1.22, 0.43, 1.64, 2.09, 2.09),
}
PAPER_53 = {
    "fifo-1k": (7.69, 17.6, 9.66),
    "preempt-1k": (6.55, 16.4, 8.70),
    "preempt-4k": (5.59, 14.1, 7.90),
}  # CM5, Paragon, SP1
PAPER_RATIO = {
    m: study.paper_ratio(t, i, th, ca, cb) for m, (_, t, i, th, ca, cb, *_) in PAPER_52.items()
}
PAPER_SPEEDUP = "16, 3.8 and 4.2 (initial; best 22, 4.7, 5.1) on the CM5 (32), Paragon and SP1 (8)"
SIZES = {
    "small": {"rows": 6, "reps": 3, "label": "6 rows, 3 runs"},
    "paper": {"rows": 7, "reps": 3, "label": "7 rows (the paper's board), 3 runs"},
}
CANDIDATES = [5, 6, 7]  # rows, for --calibrate


def main(argv=None):
    ap = study.parser(__doc__, "tripuzzle", SIZES)
    ap.add_argument("--rows", type=int, default=None, help="rows of the board (the size's)")
    args = study.settings(ap, argv)
    return study.drive(
        TAG, "tripuzzle", args, render, candidates, lambda exe, model: measure(exe, model, args)
    )


def candidates(args) -> list:
    return [
        (f"{r} rows", [f"--rows={r}", "--sched=fifo"], {"MPROF_AGG_BYTES": 1024})
        for r in CANDIDATES
    ]


def measure(exe, model, args) -> dict:
    """The study's rows: every PE count's configurations in rounds with the 1-PE run."""
    board = [f"--rows={args.rows}"]
    configs = [(name, sched, agg, {}) for name, sched, agg, _ in CONFIGS]
    configs += [
        (f"fifo-1k{study.flush_name(spec)}", "fifo", 1024, study.flush_env(spec))
        for spec in args.flush[1:]
    ]
    rows = {"_study": study.study_row(args, ("rows",))}
    sequential = (board + ["--sched=fifo"], {"MPROF_PES": 1, "MPROF_AGG_BYTES": 1024})
    rows.update(
        study.measure_rounds(
            TAG,
            exe,
            args,
            model,
            sequential,
            lambda pes: {
                name: (
                    board + [f"--sched={sched}"],
                    {"MPROF_PES": pes, "MPROF_AGG_BYTES": agg, **env},
                )
                for name, sched, agg, env in configs
            },
        )
    )
    return rows


def ratio_text() -> str:
    return ", ".join(f"{m} {r:.1f}" for m, r in PAPER_RATIO.items())


def table(rows, args, pes) -> list[str]:
    f = study.fmt
    view = study.at(rows, pes)
    seq = study.param_stat(view["sequential"], "search_s")[0]
    lines = [
        f"## {pes} PEs",
        "",
        "| configuration | search (range) | speedup | total | idle | THREAD | "
        "COMM_ALPHA / COMM_BETA | comp/rt (range) | SYNC obs / crit | explained |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in view.items():
        if name.startswith("_"):
            continue
        time, sp = study.time_cells(row, "search_s", seq, name == "sequential")
        lines.append(
            f"| {name} | {time} | {sp} | {f(row.get('Total'), 3)} | "
            f"{f(row.get('IDLE'), 3)} | {f(row.get('THREAD'), 3)} | "
            f"{f(row.get('COMM_ALPHA'), 3)} / {f(row.get('COMM_BETA'), 3)} | "
            f"{study.ratio_cell(row)} | "
            f"{f(row.get('obs:' + SYNC), 3)} / {f(row.get('crit:' + SYNC), 3)} | "
            f"{row['explained']}/{row['runs']} |"
        )
    return lines + ["", "Findings:", ""] + findings(view, args) + [""]


def readme(rows, args) -> str:
    pes = study.headline_pes(args)
    view = study.at(rows, pes)

    def pct(a, b):
        return study.round_pct(view[b], view[a], "search_s")

    return study.in_short(
        f"at the {args.size} size ({study.size_label(args)}) on {pes} PEs the ratio of "
        f"computation to runtime overhead is {study.fmt(view['fifo-1k'].get('ratio'), 1)} "
        f"(the paper's: {ratio_text()}) and the initial version's speedup over 1 PE "
        f"{study.fmt(study.speedup(view['sequential'], view['fifo-1k'], 'search_s'), 2)} "
        f"(paper: {PAPER_SPEEDUP}); preemptive inserts changed the search time by "
        f"{pct('fifo-1k', 'preempt-1k')} (paper: -10 to -15 %), and 4 KiB aggregation by "
        f"{pct('preempt-1k', 'preempt-4k')} over 1 KiB (paper: a further -10 to -15 %), "
        "medians over rounds of the same-round ratio.  "
        f"{solutions_text(rows)}"
    )


def solutions_text(rows) -> str:
    """What the runs counted (the program's `solutions` parameter): one figure when every run
    of every configuration at every PE count agrees, as a correct search must."""
    counts = {
        p.get("solutions") for row in rows.values() if "cmd" in row for p in row.get("params", [])
    }
    if not counts or None in counts:
        return "The runs did not record their solution counts."
    if len(counts) > 1:
        return (
            "The runs disagree on the number of one-peg solutions: "
            + ", ".join(f"{c:.0f}" for c in sorted(counts))
            + "."
        )
    return f"Every run counted {counts.pop():.0f} one-peg solutions."


def render(rows, args) -> str:
    lines = [
        "# Tripuzzle (Wen 1995, §5.1.2, Figs 5.2-5.3) reproduced with mprof",
        "",
        readme(rows, args),
        "",
        f"`benchmarks/tripuzzle/experiments/run.py --size {args.size}`: {args.rows} rows, hole "
        f"in the middle of the 5th row; PE counts {', '.join(map(str, args.pes))} on shared "
        f"memory (the machine has {rows['_study']['cores']} cores), {args.reps} runs per "
        "configuration and of the sequential run (1 PE), in rounds (every configuration once "
        "a round).  Medians over the runs, seconds "
        "averaged over the PEs; costs from the runtime's fitted model.  `search` is the "
        f"program's own time of the search.  {solutions_text(rows)}  "
        "The paper's board (7 rows) has no one-peg solution: a run at the paper size counts 0 "
        "solutions after expanding 8.4 million canonical boards (holes with solutions exist: "
        "`--hole=6,1` has 422164782932465380).  Rows `-flushK.D`: the "
        "initial configuration with MPROF_FLUSH_FIBERS=K, MPROF_FLUSH_DELAY_US=D.  "
        + study.pending_note(args, "tripuzzle"),
        "",
        f"Ratio of computation to runtime overhead (comp/rt), the paper's (Fig 5.2): "
        f"{ratio_text()}.",
        "",
    ]
    lines += study.tables(rows, args, table, SIZES, list(PAPER_RATIO.values()))
    lines += [
        "",
        "The paper, Fig 5.2 (initial implementation):",
        "",
        "| machine | sequential | total | idle | threads | comm start-up / transfer | "
        "sync obs / crit |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, (s, t, i, th, ca, cb, so, sc) in PAPER_52.items():
        lines.append(f"| {m} | {s} | {t} | {i} | {th} | {ca} / {cb} | {so} / {sc} |")
    lines += [
        "",
        "and Fig 5.3 (running time):",
        "",
        "| configuration | CM5 | Paragon | SP1 |",
        "|---|---|---|---|",
    ]
    for name, _, _, label in CONFIGS:
        c, p, s = PAPER_53[name]
        lines.append(f"| {label} | {c} | {p} | {s} |")
    lines += study.beside("Fig 5.3", PAPER_53, CONFIGS, "fifo-1k", "search_s", rows, args)
    lines += ["", "Commands:", ""] + [f"- `{row['cmd']}`" for row in rows.values() if "cmd" in row]
    return "\n".join(lines) + "\n"


def alpha_text(rows) -> str:
    """What the runtime model says 4 KiB aggregation saves: the per-message cost category
    COMM_ALPHA of the 1 KiB and 4 KiB preemptive runs, against their search time."""
    a1, a4 = (rows[n].get("COMM_ALPHA") for n in ("preempt-1k", "preempt-4k"))
    if a1 is None or a4 is None:
        return "The runtime model gave no COMM_ALPHA for these runs."
    if min(a1, a4) < 0:
        return (
            f"The model's COMM_ALPHA is negative ({a1:.4f} -> {a4:.4f} s per PE): its "
            "fitted per-message cost does not hold for this program, so the model's "
            "communication split is not usable here."
        )
    search = study.param_stat(rows["preempt-1k"], "search_s")[0]
    share = f", {100 * a1 / search:.1f} % of the 1 KiB search time" if search else ""
    return (
        f"The model's per-message cost COMM_ALPHA: {a1:.4f} -> {a4:.4f} s per PE{share}: "
        "what aggregation can save is bounded by it."
    )


def pct_text(part) -> str:
    return "n/a" if part is None else f"{100 * part:.0f} %"


def findings(rows, args) -> list[str]:
    def pct(a, b):  # b against a in the same round
        return study.round_change(rows[b], rows[a], "search_s")

    base = rows["fifo-1k"]
    named = {k[4:]: v for k, v in base.items() if k.startswith("obs:") and v}
    top = max(named, key=named.get) if named else "none"
    # shares of the run's CPU time (Total; IDLE is the idle loop's, as the model prices it),
    # and of its busy time: runtime / (computation + runtime), from comp/rt
    idle_part = study.share(base.get("IDLE"), base.get("Total"))
    _, total, idle, threads, alpha, beta, *_ = PAPER_52["CM5"]
    thread_part = study.share(base.get("THREAD"), base.get("Total"))
    ratio = base.get("ratio")
    rt_part = 1 / (1 + ratio) if ratio is not None and ratio > 0 else None
    paper_rt = (threads + alpha + beta) / (total - idle)
    out = [
        f"- Draining the inserts carries the idle time (paper: sync observed = critical = "
        f"nearly all idle): FIFO/1 KiB, {SYNC} {study.idle_carried(base, SYNC)[1]} per PE "
        f"(observed latencies of fibers waiting at once overlap, so they can add up to more "
        f"than the idle time); the access with the most observed latency is {top}.  "
        f"Reproduced: {'yes' if top == SYNC else 'no'}.  The idle loop took "
        f"{pct_text(idle_part)} of the run's CPU time here (the paper's 32 CM5 nodes idled "
        f"{100 * idle / total:.0f} % of the time).",
        f"- Preemptive inserts (paper: -10 % to -15 %): search {pct('fifo-1k', 'preempt-1k')}"
        ".  As in the paper (section 3.2.4), a preemptive insert runs straight from the "
        "message buffer in the receiving PE's poll, with no fiber made: "
        f"{study.fmt(rows['preempt-1k'].get('ThreadDirect'), 0)} of "
        f"{study.fmt(rows['preempt-1k'].get('RemoteOp'), 0)} remote invocations per PE "
        "(rts ThreadDirect; the others are the program's FIFO fibers).  The model's THREAD "
        f"cost: {study.fmt(base.get('THREAD'), 3)} -> "
        f"{study.fmt(rows['preempt-1k'].get('THREAD'), 3)} s, {pct_text(thread_part)} of the "
        "FIFO run: all that preemption can save in thread costs (the paper's CM5: "
        f"{100 * threads / total:.0f} %).",
        f"- 4 KiB instead of 1 KiB aggregation (paper: a further -10 % to -15 %): search "
        f"{pct('preempt-1k', 'preempt-4k')}.  Against the initial FIFO/1 KiB version: "
        f"{pct('fifo-1k', 'preempt-4k')}.  {alpha_text(rows)}",
        "- The runtime's thread and message costs, which the paper's optimisations reduce, are "
        f"{pct_text(rt_part)} of the FIFO run's busy time here (model-priced; the paper's CM5: "
        f"{100 * paper_rt:.0f} %).  The rest is the program's own work: expanding boards and "
        "applying the inserts to the table (on the paper's board a table holds up to 1.3 "
        "million boards per PE, far beyond the caches).",
    ]
    for spec in args.flush[1:]:
        name = f"fifo-1k{study.flush_name(spec)}"
        if name in rows:
            out.append(
                f"- Message service, {study.flush_label(spec)} (the modern counterpart "
                f"of lower aggregation): search {pct('fifo-1k', name)} against the "
                "default flush."
            )
    return out


if __name__ == "__main__":
    sys.exit(main())
