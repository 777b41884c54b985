#!/usr/bin/env python3
"""Reproduce the qualitative findings of Wen 1995, §4.4.4 and §4.5.4 with mprof's own tools.

    .venv/bin/python benchmarks/pipe/experiments/run.py [--pes 4] [--reps 3] [--refit]

Steps (each skipped when its output exists, unless --refit):
  1. the runtime's model (workflows/rts: `mprof bench` + `mprof fit`), if build/workflows/
     rts.model.json is missing;
  2. PIPE's fit and test sweeps (the specs of workflows/pipe, pointed at --pipe) and the fit
     with experiments/model.tcl -> build/experiments/pipe/pipe.model.json;
  3. the experiments, each run --reps times with MPROF_OUT set:
       agg10000, agg1000, agg0   Fig 4.12: aggregation trade-off (IDLE vs COMM_ALPHA)
       cap1000                   Fig 4.16: edge capacity F = 1000 removes the ENQ/DEQ chain
       swp                       Fig 4.18: software pipelining
       flush                     Fig 4.19: selective flushing before each computation
  4. `mprof report RUN --model MODEL` for every run; for the run with the median total of
     each experiment, the text report results/<name>.txt (committed: small) and the HTML page
     build/experiments/pipe/html/<name>.html (output, not kept); results/summary.md puts the
     medians beside the paper's numbers (32-node CM5, times summed over PEs).

The PIPE program defaults to build/benchmarks/pipe/pipe (built with `cmake --build build
--target pipe` when missing); --pipe or $PIPE selects another binary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# Command lines: PES M N T F ELTSIZE AGG (the paper: 32 10000 10 100 15 100 AGG).
EXPERIMENTS = [
    # name, variant, F, AGG, paper figure
    ("agg10000", "plain", 15, 10000, "4.12"),
    ("agg1000", "plain", 15, 1000, "4.12/4.15"),
    ("agg0", "plain", 15, 0, "4.12"),
    ("cap1000", "plain", 1000, 1000, "4.16"),
    ("swp", "swp", 15, 1000, "4.18"),
    ("flush", "flush", 15, 1000, "4.19"),
]

# The paper's numbers (seconds summed over 32 CM5 nodes); None where the paper gives none.
PAPER = {
    "agg10000": {
        "THREAD": 38.287,
        "IDLE": 187.911,
        "COMM_ALPHA": 7.146,
        "COMM_BETA": 51.635,
        "Model": 454.151,
        "Total": 433.928,
    },
    "agg1000": {
        "THREAD": 45.912,
        "IDLE": 147.729,
        "COMM_ALPHA": 10.317,
        "COMM_BETA": 53.037,
        "Model": 427.325,
        "Total": 406.569,
        "consume": 134.063,
        "DEQ": 92.700,
        "ENQ": 47.337,
        "crit_DEQ": 92.700,
        "crit_ENQ": 47.337,
    },
    "agg0": {
        "THREAD": 97.915,
        "IDLE": 126.807,
        "COMM_ALPHA": 42.902,
        "COMM_BETA": 59.666,
        "Model": 502.105,
        "Total": 480.787,
    },
    "cap1000": {
        "THREAD": 38.905,
        "IDLE": 51.779,
        "COMM_ALPHA": 6.753,
        "COMM_BETA": 52.388,
        "Model": 319.134,
        "Total": 307.305,
        "consume": 37.503,
        "DEQ": 37.503,
        "ENQ": 1.723,
        "crit_DEQ": 37.503,
        "crit_ENQ": 1.723,
    },
    "swp": {
        "THREAD": 46.586,
        "IDLE": 167.977,
        "COMM_ALPHA": 10.152,
        "COMM_BETA": 53.341,
        "Model": 448.838,
        "Total": 429.008,
        "consume": 152.208,
        "DEQ": 121.554,
        "ENQ": 79.898,
        "crit_DEQ": 101.695,
        "crit_ENQ": 57.342,
    },
    "flush": {
        "THREAD": 45.757,
        "IDLE": 90.608,
        "COMM_ALPHA": 12.377,
        "COMM_BETA": 52.902,
        "Model": 371.552,
        "Total": 354.731,
        "consume": 77.398,
        "DEQ": 62.669,
        "ENQ": 18.982,
        "crit_DEQ": 62.669,
        "crit_ENQ": 18.982,
    },
}
COLUMNS = [
    "Total",
    "Model",
    "IDLE",
    "COMM_ALPHA",
    "THREAD",
    "consume",
    "DEQ",
    "ENQ",
    "crit_DEQ",
    "crit_ENQ",
]


def log(msg):
    print(f"[pipe-experiments] {msg}", flush=True)


def run(cmd, env=None, **kw):
    log(" ".join(str(c) for c in cmd))
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=ROOT, **kw)
    if proc.returncode != 0:
        sys.exit(f"[pipe-experiments] failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return proc


def mprof(python, *args, **kw):
    return run([python, "-m", "mprof", *args], **kw)


def ensure_pipe(pipe: Path) -> Path:
    if pipe.exists():
        return pipe
    default = ROOT / "build/benchmarks/pipe/pipe"
    if pipe == default:
        log("building PIPE: cmake --build build --target pipe")
        proc = subprocess.run(["cmake", "--build", "build", "--target", "pipe"], cwd=ROOT)
        if proc.returncode == 0 and pipe.exists():
            return pipe
    sys.exit(
        f"[pipe-experiments] PIPE program {pipe} is missing and could not be built; "
        "build it (cmake --build build --target pipe) or pass --pipe"
    )


def ensure_rts_model(python, refit) -> Path:
    model = ROOT / "build/workflows/rts.model.json"
    if model.exists() and not refit:
        return model
    for spec in ("sweep-fit.toml", "sweep-test.toml"):
        mprof(python, "bench", "workflows/rts/" + spec)
    mprof(python, "fit", "workflows/rts/model.tcl")
    return model


def pipe_spec(src: Path, dst: Path, pipe: Path):
    """The workflow's PIPE sweep, pointed at `pipe` and rooted at the repository."""
    text = src.read_text()
    text = re.sub(r"(?m)^root = .*$", f'root = "{ROOT}"', text)
    text = re.sub(r"(?m)^program = .*$", f'program = "{pipe}"', text)
    dst.write_text(text)


def ensure_pipe_model(python, work: Path, pipe: Path, rts_model: Path, refit) -> Path:
    model = work / "pipe.model.json"
    if model.exists() and not refit:
        return model
    for kind in ("fit", "test"):
        db = work / f"pipe-{kind}.db"
        if db.exists():
            db.unlink()
        spec = work / f"sweep-{kind}.toml"
        pipe_spec(ROOT / f"workflows/pipe/sweep-{kind}.toml", spec, pipe)
        mprof(python, "bench", spec, "--db", db)
    env = {**os.environ, "MPROF_EXP_WORK": str(work), "MPROF_EXP_RTS_MODEL": str(rts_model)}
    fit = run(
        [python, "-m", "mprof", "fit", HERE / "model.tcl"], env=env, capture_output=True, text=True
    )
    (work / "fit.txt").write_text(fit.stdout)
    print(fit.stdout, end="")
    return model


def figures(doc: dict) -> dict:
    """The numbers of one report (mprof report --json) the summary compares."""
    out = {
        "Total": doc["measured_total_s"],
        "Model": doc["model_total_s"],
        "explained": doc["explained"],
    }
    for obj in doc["objects"]:
        if obj["module"] == "rts":
            for cat, v in obj["categories"].items():
                out[cat] = v["seconds"]
    for a in doc["latency"]:
        short = a["access"].split(":")[-1]
        out[short] = a["observed_s"]
        out["crit_" + short] = a["critical_s"]
    out["chains"] = [c["chain"] for c in doc["chains"]["observed"]]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--pipe",
        type=Path,
        default=Path(os.environ.get("PIPE", ROOT / "build/benchmarks/pipe/pipe")),
    )
    ap.add_argument("--pes", type=int, default=4)
    ap.add_argument("--M", type=int, default=2000)
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--T", type=int, default=100)
    ap.add_argument("--eltsize", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--refit", action="store_true", help="redo the sweeps and fits")
    ap.add_argument("--work", type=Path, default=ROOT / "build/experiments/pipe")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    python = sys.executable

    pipe = ensure_pipe(args.pipe.resolve())
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.work / "html").mkdir(exist_ok=True)
    rts_model = ensure_rts_model(python, args.refit)
    model = ensure_pipe_model(python, args.work, pipe, rts_model, args.refit)

    rows = {}
    for name, variant, cap, agg, fig in EXPERIMENTS:
        results = []
        for rep in range(args.reps):
            prof = args.work / "runs" / f"{name}-{rep}.json"
            prof.parent.mkdir(parents=True, exist_ok=True)
            cmd = [
                pipe,
                f"--variant={variant}",
                args.pes,
                args.M,
                args.N,
                args.T,
                cap,
                args.eltsize,
                agg,
            ]
            run(cmd, env={**os.environ, "MPROF_OUT": str(prof)}, stdout=subprocess.DEVNULL)
            rep_json = mprof(
                python, "report", prof, "--model", model, "--json", capture_output=True, text=True
            ).stdout
            results.append((prof, json.loads(rep_json)))
        results.sort(key=lambda r: r[1]["measured_total_s"])
        median_prof, _ = results[len(results) // 2]
        text = mprof(
            python,
            "report",
            median_prof,
            "--model",
            model,
            "--format",
            "text",
            "--html",
            args.work / "html" / f"{name}.html",
            capture_output=True,
            text=True,
        ).stdout
        (args.out / f"{name}.txt").write_text(text)
        figs = [figures(doc) for _, doc in results]
        row = {}
        for col in COLUMNS:
            vals = [f[col] for f in figs if f.get(col) is not None]
            row[col] = statistics.median(vals) if vals else None
        row["explained"] = sum(1 for f in figs if f["explained"])
        totals = [f["Total"] for f in figs]
        row["total_range"] = [min(totals), max(totals)]
        row["chains"] = figs[len(figs) // 2]["chains"]
        row["cmd"] = (
            f"pipe --variant={variant} {args.pes} {args.M} {args.N} {args.T} {cap} "
            f"{args.eltsize} {agg}"
        )
        row["fig"] = fig
        rows[name] = row
    summary = render_summary(rows, args)
    (args.out / "summary.md").write_text(summary)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(summary)
    return 0


def _f(v, d=4):
    return "" if v is None else f"{v:.{d}f}"


def render_summary(rows, args) -> str:
    lines = [
        "# PIPE experiments (Wen 1995, §4.4.4, §4.5.4) reproduced with mprof",
        "",
        f"`benchmarks/pipe/experiments/run.py`: {args.pes} PEs, M={args.M} N={args.N} "
        f"T={args.T} ELTSIZE={args.eltsize}, {args.reps} runs per configuration; every number is "
        "the median over the runs, in seconds summed over PEs (as the paper's). The paper's "
        "numbers (32-node CM5, M=10000) are in the `paper` rows; compare trends, not values.",
        "",
        "Runs on few cores are noisy (PEs are threads that sleep when idle); the `Total range` "
        "column gives the spread of the totals, and a finding counts only where it is larger "
        "than that spread.",
        "",
        "| experiment | fig | source | " + " | ".join(COLUMNS) + " | Total range | explained |",
        "|---|---|---|" + "---|" * len(COLUMNS) + "---|---|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['fig']} | mprof | "
            + " | ".join(_f(row[c]) for c in COLUMNS)
            + f" | {_f(row['total_range'][0])}-{_f(row['total_range'][1])}"
            + f" | {row['explained']}/{args.reps} |"
        )
        paper = PAPER.get(name, {})
        lines.append("| | | paper | " + " | ".join(_f(paper.get(c), 3) for c in COLUMNS) + " | | |")
    lines += ["", "Observed-latency chains (median run):", ""]
    for name, row in rows.items():
        lines.append(f"- **{name}** (`{row['cmd']}`): " + ("; ".join(row["chains"]) or "none"))
    lines += ["", "Findings to check against the paper:", ""]
    lines += findings(rows)
    return "\n".join(lines) + "\n"


def findings(rows) -> list[str]:
    out = []

    def get(name, col):
        return (rows.get(name) or {}).get(col)

    def check(a, b, op):
        if a is None or b is None:
            return "n/a"
        return "yes" if op(a, b) else "no"

    i0, i1, i10 = get("agg0", "IDLE"), get("agg1000", "IDLE"), get("agg10000", "IDLE")
    a0, a10 = get("agg0", "COMM_ALPHA"), get("agg10000", "COMM_ALPHA")
    out.append(
        f"- Aggregation trade-off (Fig 4.12: less aggregation, less IDLE, more "
        f"COMM_ALPHA): IDLE agg0 < agg10000: {check(i0, i10, lambda a, b: a < b)} "
        f"({_f(i0)} vs {_f(i10)}; agg1000 {_f(i1)}); COMM_ALPHA agg0 > agg10000: "
        f"{check(a0, a10, lambda a, b: a > b)} ({_f(a0)} vs {_f(a10)})."
    )
    e15, e1000 = get("agg1000", "ENQ"), get("cap1000", "ENQ")
    t15, t1000 = get("agg1000", "Total"), get("cap1000", "Total")
    out.append(
        f"- Edge capacity 1000 (Fig 4.16: the DEQ -> ENQ -> produce chain practically "
        f"disappears, time -24 %): ENQ observed latency {_f(e15)} -> {_f(e1000)}; "
        f"total {_f(t15)} -> {_f(t1000)} "
        f"({_pct(t15, t1000)}). Reproduced: {check(t1000, t15, lambda a, b: a < b)}."
    )
    ts, tf = get("swp", "Total"), get("flush", "Total")
    out.append(
        f"- Software pipelining (Fig 4.18: +6 %, latencies grow): total {_f(t15)} -> "
        f"{_f(ts)} ({_pct(t15, ts)}); consume observed latency {_f(get('agg1000', 'consume'))}"
        f" -> {_f(get('swp', 'consume'))}. Reproduced (slower): "
        f"{check(ts, t15, lambda a, b: a > b)}."
    )
    out.append(
        f"- Selective flushing (Fig 4.19: -13.5 %, less IDLE): total {_f(t15)} -> "
        f"{_f(tf)} ({_pct(t15, tf)}); IDLE {_f(i1)} -> {_f(get('flush', 'IDLE'))}. "
        f"Reproduced (faster): {check(tf, t15, lambda a, b: a < b)}."
    )
    return out


def _pct(a, b):
    if a in (None, 0) or b is None:
        return "n/a"
    return f"{100 * (b - a) / a:+.1f} %"


if __name__ == "__main__":
    sys.exit(main())
