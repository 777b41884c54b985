"""Shared machinery of the application studies (benchmarks/<app>/experiments/run.py): run a
program configuration several times with MPROF_OUT set, report every run with
`mprof report RUN --model MODEL --json` (the runtime's fitted cost model, made by `make demo`),
and reduce the runs to medians with their spread, in the paper's convention (seconds averaged
over PEs)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RTS_MODEL = ROOT / "build/workflows/rts.model.json"
COST = ["THREAD", "IDLE", "COMM_ALPHA", "COMM_BETA"]  # categories of runtime/rts.perf


EXPLAINED_NOTE = (
    "`explained`: runs whose measured total lies inside the runtime model's 90 % prediction "
    "band.  That model prices only the runtime (threads, messages, idle time); the program's "
    "own computation is not in it, so a run dominated by computation is not explained, and "
    "the column says how far the runtime alone accounts for the run.")


def log(tag: str, msg: str) -> None:
    print(f"[{tag}] {msg}", flush=True)


def run(tag, cmd, env=None, **kw):
    log(tag, " ".join(str(c) for c in cmd))
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=ROOT, **kw)
    if proc.returncode != 0:
        sys.exit(f"[{tag}] failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return proc


def parser(doc: str, program: str, reps: int) -> argparse.ArgumentParser:
    """The options every study takes; the study adds its own."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--pes", type=int, default=2, help="PEs of the parallel runs (default 2)")
    ap.add_argument("--reps", type=int, default=reps, help="runs per configuration")
    ap.add_argument("--model", type=Path, default=RTS_MODEL, help="the runtime's cost model")
    ap.add_argument("--work", type=Path, default=ROOT / "build/experiments" / program)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "benchmarks" / program / "experiments" / "results")
    ap.add_argument("--render", action="store_true",
                    help="only write summary.md again from the runs' summary.json")
    return ap


def saved(args) -> dict | None:
    """With --render: the rows of the last study, by name; else None."""
    if not args.render:
        return None
    return {row["name"]: row for row in json.loads((args.out / "summary.json").read_text())}


def setup(tag: str, program: str, args) -> tuple[Path, Path]:
    """The program and the model (made when missing); creates the output folder."""
    exe = ensure_program(tag, program)
    model = ensure_rts_model(tag, args.model.resolve())
    args.out.mkdir(parents=True, exist_ok=True)
    return exe, model


def ensure_program(tag: str, name: str) -> Path:
    exe = ROOT / "build/benchmarks" / name / name
    if not exe.exists():
        run(tag, ["cmake", "--build", "build", "--target", name])
    return exe


def ensure_rts_model(tag: str, model: Path) -> Path:
    """The runtime's cost model; when it is missing, the runtime workflow of `make demo`
    (sweeps of rt_workload, then the fit of workflows/rts/model.tcl) makes it."""
    if model.exists():
        return model
    if model != RTS_MODEL:
        sys.exit(f"[{tag}] model {model} does not exist")
    python = sys.executable
    for spec in ("sweep-fit.toml", "sweep-test.toml"):
        run(tag, [python, "-m", "mprof", "bench", "workflows/rts/" + spec])
    run(tag, [python, "-m", "mprof", "fit", "workflows/rts/model.tcl"])
    return model


def figures(doc: dict) -> dict:
    """The numbers of one report, per PE on average: measured total and idle time, the
    runtime model's cost categories, observed and critical latency per access category."""
    P = doc["npes"]
    out = {"Total": doc["measured_total_s"] / P, "Idle": doc["idle_total_s"] / P,
           "Model": doc["model_total_s"] / P if doc.get("model_total_s") is not None else None,
           "explained": bool(doc.get("explained")), "params": doc.get("params", {})}
    for obj in doc["objects"]:
        if obj["module"] == "rts":
            for cat, v in obj.get("categories", {}).items():
                out[cat] = v["seconds"] / P
    for a in doc["latency"]:
        out["obs:" + a["access"]] = a["observed_s"] / P
        out["crit:" + a["access"]] = a["critical_s"] / P
    return out


def _one_run(tag, name, rep, exe, args, env_extra, model, work: Path):
    """One run of a configuration: (profile, figures of its report, stdout)."""
    prof = work / "runs" / f"{name}-{rep}.json"
    prof.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update({k: str(v) for k, v in env_extra.items()}, MPROF_OUT=str(prof))
    stdout = run(tag, [exe, *args], env=env, capture_output=True, text=True).stdout
    rep_json = run(tag, [sys.executable, "-m", "mprof", "report", prof, "--model", model,
                         "--json"], capture_output=True, text=True).stdout
    return prof, figures(json.loads(rep_json)), stdout


def _reduce(tag, name, exe, args, env_extra, runs, model, out: Path) -> dict:
    """The median of every figure over `runs` (in the order they ran) and the range of each;
    keeps the text report of the median run as out/<name>.txt.  "rep_params" lists the
    runs' mp_param values in the order they ran, for ratios between configurations measured
    in the same round."""
    rep_params = [f["params"] for _, f, _ in runs]
    runs = sorted(runs, key=lambda r: r[1]["Total"])
    median_prof, _, median_stdout = runs[len(runs) // 2]
    text = run(tag, [sys.executable, "-m", "mprof", "report", median_prof, "--model", model,
                     "--format", "text"], capture_output=True, text=True).stdout
    (out / f"{name}.txt").write_text(median_stdout + "\n" + text)
    keys = {k for _, f, _ in runs for k in f if k not in ("explained", "params")}
    row = {"name": name, "cmd": " ".join(["env"] + [f"{k}={v}" for k, v in env_extra.items()]
                                          + [Path(exe).name, *map(str, args)]),
           "runs": len(runs), "explained": sum(f["explained"] for _, f, _ in runs),
           "params": [f["params"] for _, f, _ in runs], "rep_params": rep_params}
    for k in sorted(keys):
        vals = [f[k] for _, f, _ in runs if f.get(k) is not None]
        if vals:
            row[k] = statistics.median(vals)
            row["range:" + k] = [min(vals), max(vals)]
    return row


def measure(tag, name, exe, args, env_extra, reps, model, work: Path, out: Path) -> dict:
    """Runs one configuration `reps` times; returns the median of every figure and the range
    of each, and keeps the text report of the median run as out/<name>.txt."""
    runs = [_one_run(tag, name, rep, exe, args, env_extra, model, work) for rep in range(reps)]
    return _reduce(tag, name, exe, args, env_extra, runs, model, out)


def measure_interleaved(tag, configs, exe, reps, model, work: Path, out: Path) -> dict:
    """Like measure() for several configurations {name: (args, env_extra)}, run in rounds
    (every configuration once per round, in turn), so that a change in the machine's load
    falls on all of them alike; returns {name: row}.  Compare them with round_ratio()."""
    runs = {name: [] for name in configs}
    for rep in range(reps):
        for name, (args, env_extra) in configs.items():
            runs[name].append(_one_run(tag, name, rep, exe, args, env_extra, model, work))
    return {name: _reduce(tag, name, exe, args, env_extra, runs[name], model, out)
            for name, (args, env_extra) in configs.items()}


def round_ratio(row: dict, base: dict, key: str):
    """Median and range over the rounds of row's mp_param `key` divided by base's in the same
    round (rows of one measure_interleaved call)."""
    vals = [a[key] / b[key] for a, b in zip(row.get("rep_params", []), base.get("rep_params", []))
            if key in a and b.get(key)]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)


def machine_load(row: dict | None = None) -> dict:
    """The machine's load averages (1, 5, 15 min) and cores: a new row at the start of a
    study, completed with the figures at its end when given that row."""
    load = [round(x, 2) for x in os.getloadavg()]
    if row is None:
        return {"name": "_machine", "cores": os.cpu_count(), "load_start": load}
    row["load_end"] = load
    return row


def load_note(row: dict | None) -> str:
    """One sentence on the machine's load during the study, for its summary."""
    if not row:
        return ""
    end = row.get("load_end", ["?"])
    return (f"The machine ({row['cores']} cores) was shared with other work while this study "
            f"ran: load average {row['load_start'][0]} at its start and {end[0]} at its end "
            "(1-minute figures), so absolute times carry that noise; the ratios between "
            "configurations are taken within one round of interleaved runs.")


def param_stat(row: dict, name: str):
    """Median and range over the runs of a value the program recorded with mp_param."""
    vals = [p[name] for p in row["params"] if name in p]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)


def fmt(v, d=4) -> str:
    return "" if v is None else f"{v:.{d}f}"


def fmt_range(row, key, d=4) -> str:
    r = row.get("range:" + key)
    return "" if not r else f"{r[0]:.{d}f}-{r[1]:.{d}f}"


def spread(row, key) -> float:
    """Relative spread (max - min) / median of a figure over the runs."""
    r, m = row.get("range:" + key), row.get(key)
    return (r[1] - r[0]) / m if r and m else float("nan")


def write(out: Path, rows, summary: str) -> None:
    (out / "summary.md").write_text(summary)
    (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(summary)
