"""Shared machinery of the application studies (benchmarks/<app>/experiments/run.py): run a
program configuration several times with MPROF_OUT set, report every run with
`mprof report RUN --model MODEL --json` (the runtime's fitted cost model, made by `make demo`),
and reduce the runs to medians with their spread, in the paper's convention (seconds averaged
over PEs).

Every study takes the same axes: a problem size (`--size small|paper`: small for tests and
smoke runs, paper for the dissertation's ratio of computation to runtime overhead, chosen with
`--calibrate`), the PE counts (`--pes 2` or `--pes 8,16`: a row per configuration and PE count,
named `config@P`, with the speedup over the study's 1-PE run) and the message service
(`--flush default,4:0`: the runtime's flush period and delay, MPROF_FLUSH_FIBERS /
MPROF_FLUSH_DELAY_US, applied to the study's initial configuration; the modern counterpart of
the paper's lower aggregation).  benchmarks/studies.sh runs all five."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RTS_MODEL = ROOT / "build/workflows/rts.model.json"
COST = ["THREAD", "IDLE", "COMM_ALPHA", "COMM_BETA"]  # categories of runtime/rts.perf
README = ROOT / "README.md"
FLUSH_DEFAULT = "default,4:0"

RATIO_NOTE = (
    "`comp/rt`: the ratio of computation to runtime overhead, per PE: the busy CPU time (the "
    "measured CPU time less the idle loop's) less the runtime's costs, over the runtime's "
    "costs (threads and communication, priced by the runtime's fitted model: THREAD + "
    "COMM_ALPHA + COMM_BETA + COMM_LOCAL).  The paper's ratio is derived from its figures the "
    "same way: (total - idle - threads - communication) / (threads + communication).  Both "
    "leave the idle time out: it depends on the machine's load here and on the PE count."
)


EXPLAINED_NOTE = (
    "`explained`: runs whose measured total lies inside the runtime model's 90 % prediction "
    "band.  That model prices only the runtime (threads, messages, idle time); the program's "
    "own computation is not in it, so a run dominated by computation is not explained, and "
    "the column says how far the runtime alone accounts for the run."
)


def log(tag: str, msg: str) -> None:
    print(f"[{tag}] {msg}", flush=True)


def in_repo(arg) -> str:
    """A command's argument, a path inside the repository made relative to it (commands run
    there), so that the reports the studies keep name no one's checkout."""
    s = str(arg)
    root = str(ROOT) + os.sep
    opt, eq, value = s.partition("=")  # --netlist=PATH
    if eq and opt.startswith("-") and value.startswith(root):
        return f"{opt}={value[len(root) :]}"
    return s[len(root) :] if s.startswith(root) else s


def run(tag, cmd, env=None, **kw):
    cmd = [in_repo(c) for c in cmd]
    log(tag, " ".join(cmd))
    proc = subprocess.run(cmd, env=env, cwd=ROOT, **kw)
    if proc.returncode != 0:
        sys.exit(f"[{tag}] failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return proc


def pe_list(text: str) -> list[int]:
    """`--pes 8,16`: the PE counts of the parallel runs, each at least 2."""
    try:
        pes = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of PE counts: '{text}'") from None
    if not pes or any(p < 2 or p > 1024 for p in pes) or len(set(pes)) != len(pes):
        raise argparse.ArgumentTypeError(f"PE counts must be distinct, in [2, 1024]: '{text}'")
    return sorted(pes)


FLUSH = re.compile(r"(\d+):(\d+)$")


def flush_list(text: str) -> list[str]:
    """`--flush default,4:0`: message-service settings, each `default` (the runtime's) or
    `K:D` (MPROF_FLUSH_FIBERS=K, MPROF_FLUSH_DELAY_US=D)."""
    specs = [x.strip() for x in text.split(",") if x.strip()]
    for x in specs:
        m = FLUSH.match(x)
        if x != "default" and not (m and int(m.group(1)) >= 1):
            raise argparse.ArgumentTypeError(
                f"a flush setting is 'default' or FIBERS:DELAY_US with FIBERS >= 1: '{x}'"
            )
    if "default" not in specs:
        specs.insert(0, "default")
    return list(dict.fromkeys(specs))


def flush_env(spec: str) -> dict:
    """The environment of one flush setting."""
    if spec == "default":
        return {}
    k, d = FLUSH.match(spec).groups()
    return {"MPROF_FLUSH_FIBERS": int(k), "MPROF_FLUSH_DELAY_US": int(d)}


def flush_name(spec: str) -> str:
    """The suffix a flush setting gives a configuration's name ('' for the default)."""
    return "" if spec == "default" else "-flush" + spec.replace(":", ".")


def flush_label(spec: str) -> str:
    if spec == "default":
        return "the runtime's default flush (64 fibers, 1000 us)"
    k, d = FLUSH.match(spec).groups()
    return f"flush every {k} fibers, delay {d} us"


def parser(doc: str, program: str, sizes: dict) -> argparse.ArgumentParser:
    """The options every study takes; the study adds its own.  `sizes` maps each --size to its
    settings (`reps` among them), which become the defaults of the options of the same name."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument(
        "--size",
        choices=list(sizes),
        default="small",
        help="problem size: small (tests, smoke runs; the default) or paper (the "
        "dissertation's ratio of computation to runtime overhead)",
    )
    ap.add_argument(
        "--pes",
        type=pe_list,
        default=[2],
        help="PE counts of the parallel runs, comma separated (default 2; 8,16 on "
        "a 16-core machine)",
    )
    ap.add_argument(
        "--flush",
        type=flush_list,
        default=flush_list(FLUSH_DEFAULT),
        help="message-service settings for the initial configuration: 'default' "
        f"or FIBERS:DELAY_US, comma separated (default {FLUSH_DEFAULT})",
    )
    ap.add_argument(
        "--reps", type=int, default=None, help="runs per configuration (default: the size's)"
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="only measure the ratio of computation to runtime overhead at the "
        "candidate sizes (results/calibration.json), to choose the paper size",
    )
    ap.add_argument("--model", type=Path, default=RTS_MODEL, help="the runtime's cost model")
    ap.add_argument("--work", type=Path, default=ROOT / "build/experiments" / program)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / program / "experiments" / "results"
    )
    ap.add_argument(
        "--render",
        action="store_true",
        help="only write summary.md again from the runs' summary.json",
    )
    ap.set_defaults(sizes=sizes)
    return ap


def settings(ap: argparse.ArgumentParser, argv=None):
    """Parses the command line; every option left unset takes the size's value."""
    args = ap.parse_args(argv)
    for key, value in args.sizes[args.size].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return args


def size_label(args) -> str:
    """The size's label ("5 rows, 3 runs") with the runs (or rounds) that --reps asked for."""
    size = args.sizes[args.size]
    return re.sub(
        rf"\b{size['reps']} (run|round)s\b",
        lambda m: f"{args.reps} {m[1]}{'s' if args.reps != 1 else ''}",
        size["label"],
        count=1,
    )


SAVED = ("size", "pes", "flush", "reps")


def study_row(args, extra=()) -> dict:
    """The settings of this study, kept in summary.json so that --render reproduces it."""
    return {
        "name": "_study",
        "cores": os.cpu_count(),
        **{k: getattr(args, k) for k in (*SAVED, *extra)},
    }


def saved(args) -> dict | None:
    """With --render: the rows of the last study, by name, and the study's settings restored
    into args; else None."""
    if not args.render:
        return None
    rows = {row["name"]: row for row in json.loads((args.out / "summary.json").read_text())}
    for key, value in rows.get("_study", {}).items():
        if key not in ("name", "cores"):
            setattr(args, key, value)
    return rows


def at(rows: dict, pes: int) -> dict:
    """The rows of one PE count, by configuration name (`config@P` -> `config`), with the
    rows that have no PE count (the 1-PE runs and the study's own rows)."""
    out = {}
    for name, row in rows.items():
        base, _, p = name.partition("@")
        if not p:
            out[name] = row
        elif int(p) == pes:
            out[base] = row
    return out


def drive(tag: str, program: str, args, render, candidates, measure) -> int:
    """A study once its options are parsed: with --render, its saved rows rendered again; with
    --calibrate, the ratio of computation to runtime overhead at each of `candidates(args)`
    ([(label, command, env)], results/calibration.json); else the rows `measure(exe, model)`
    makes.  The summary (`render(rows, args)`) and its rows are written but for --calibrate.
    Returns the exit status."""
    rows = saved(args)
    if rows is None:
        exe, model = setup(tag, program, args)
        if args.calibrate:
            calibrate(tag, exe, model, args, candidates(args), args.work)
            return 0
        rows = measure(exe, model)
    write(args.out, list(rows.values()), render(rows, args))
    return 0


def headline_pes(args) -> int:
    """The PE count a summary's short paragraph and its details speak of: the largest
    measured, where the paper's effects of scale show (its machines had 8 and 32 PEs)."""
    return max(args.pes)


def alike(a, b, tol: float = 0.1) -> bool:
    """Whether two latencies agree within `tol` of the larger (the paper's "observed =
    critical"): both measured, not both zero."""
    return a is not None and b is not None and max(a, b) > 0 and abs(a - b) <= tol * max(a, b)


def share(part, whole) -> float | None:
    """part / whole, or None where either is missing or whole is not positive."""
    return part / whole if part is not None and whole else None


def idle_carried(row: dict, access: str) -> tuple[float | None, str]:
    """What share of a PE's idle time `access` carries on the critical path (its critical
    latency over the measured idle time, medians per PE), and a phrase with its observed and
    critical latency beside the idle time.  Critical latencies are the idle time charged along
    the critical path, so they sum to at most the idle time; observed latencies of fibers that
    wait at once overlap and may add up to more."""
    obs, crit, idle = row.get("obs:" + access), row.get("crit:" + access), row.get("Idle")
    part = share(crit, idle)
    return part, (
        f"{obs or 0.0:.3g} observed / {crit or 0.0:.3g} critical of "
        + ("n/a" if idle is None else f"{idle:.3g}")
        + " s idle"
        + ("" if part is None else f" ({100 * part:.0f} % on the critical path)")
    )


def by_latency(row: dict, events) -> list[tuple[str, float]]:
    """A row's events [(event, access)] as (event, observed latency per PE), most first."""
    named = [(ev, row.get("obs:" + access) or 0.0) for ev, access in events]
    return sorted(named, key=lambda x: -x[1])


def ranked_text(row: dict, events) -> str:
    """by_latency as text: "remove 0.005, term 0.000, ..." (seconds per PE)."""
    return ", ".join(f"{ev} {v:.3f}" for ev, v in by_latency(row, events))


def speedup(seq: dict, row: dict, key: str) -> float | None:
    """The 1-PE run's median of mp_param `key` over row's."""
    a, b = param_stat(seq, key)[0], param_stat(row, key)[0]
    return a / b if a and b else None


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
    out = {
        "Total": doc["measured_total_s"] / P,
        "Idle": doc["idle_total_s"] / P,
        "Model": doc["model_total_s"] / P if doc.get("model_total_s") is not None else None,
        "explained": bool(doc.get("explained")),
        "params": doc.get("params", {}),
    }
    for obj in doc["objects"]:
        if obj["module"] == "rts":
            for cat, v in obj.get("categories", {}).items():
                out[cat] = v["seconds"] / P
            # how many remote invocations a PE made (counted by the sender), and how many
            # records a PE ran straight from the message buffer (preemptive, no fiber made)
            for stat in ("RemoteOp", "ThreadDirect"):
                if isinstance(obj.get("stats", {}).get(stat), (int, float)):
                    out[stat] = obj["stats"][stat] / P
    for a in doc["latency"]:
        out["obs:" + a["access"]] = a["observed_s"] / P
        out["crit:" + a["access"]] = a["critical_s"] / P
    out.update(overhead_ratio(out))
    return out


def overhead_ratio(fig: dict) -> dict:
    """Computation and runtime overhead per PE, and their ratio (RATIO_NOTE): the runtime's
    modelled costs other than IDLE, and the busy CPU time beyond them."""
    runtime = sum(fig.get(c) or 0.0 for c in ("THREAD", "COMM_ALPHA", "COMM_BETA", "COMM_LOCAL"))
    comp = fig["Total"] - (fig.get("IDLE") or 0.0) - runtime
    return {"Runtime": runtime, "Comp": comp, "ratio": comp / runtime if runtime > 0 else None}


def paper_ratio(total, idle, threads, alpha, beta) -> float:
    """The paper's ratio of computation to runtime overhead from one row of its figures
    (seconds averaged over PEs): what is neither idle nor threads nor communication, over
    threads and communication."""
    runtime = threads + alpha + beta
    return (total - idle - runtime) / runtime


def ratio_range(ratios) -> str:
    """The paper's ratios of several machines as `lo-hi`."""
    vals = [r for r in ratios if r is not None]
    return f"{min(vals):.1f}-{max(vals):.1f}" if vals else "not given"


def _one_run(tag, name, rep, exe, args, env_extra, model, work: Path):
    """One run of a configuration: (profile, figures of its report, stdout)."""
    prof = work / "runs" / f"{name}-{rep}.json"
    prof.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update({k: str(v) for k, v in env_extra.items()}, MPROF_OUT=str(prof))
    stdout = run(tag, [exe, *args], env=env, capture_output=True, text=True).stdout
    rep_json = run(
        tag,
        [sys.executable, "-m", "mprof", "report", prof, "--model", model, "--json"],
        capture_output=True,
        text=True,
    ).stdout
    return prof, figures(json.loads(rep_json)), stdout


def _reduce(tag, name, exe, args, env_extra, runs, model, work: Path, out: Path) -> dict:
    """The median of every figure over `runs` (in the order they ran) and the range of each;
    keeps the text report of the median run as out/<name>.txt.  "rep_params" lists the
    runs' mp_param values in the order they ran, for ratios between configurations measured
    in the same round."""
    rep_params = [f["params"] for _, f, _ in runs]
    runs = sorted(runs, key=lambda r: r[1]["Total"])
    median_prof, _, median_stdout = runs[len(runs) // 2]
    text = run(
        tag,
        [
            sys.executable,
            "-m",
            "mprof",
            "report",
            median_prof,
            "--model",
            model,
            "--format",
            "text",
        ],
        capture_output=True,
        text=True,
    ).stdout
    (out / f"{name}.txt").write_text(median_stdout + "\n" + text)
    keys = {k for _, f, _ in runs for k in f if k not in ("explained", "params")}
    row = {
        "name": name,
        "cmd": shown(
            " ".join(
                ["env"]
                + [f"{k}={v}" for k, v in env_extra.items()]
                + [Path(exe).name, *map(str, args)]
            ),
            work,
        ),
        "runs": len(runs),
        "explained": sum(f["explained"] for _, f, _ in runs),
        "params": [f["params"] for _, f, _ in runs],
        "rep_params": rep_params,
    }
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
    return _reduce(tag, name, exe, args, env_extra, runs, model, work, out)


def measure_interleaved(tag, configs, exe, reps, model, work: Path, out: Path) -> dict:
    """Like measure() for several configurations {name: (args, env_extra)}, run in rounds
    (every configuration once per round, in turn), so that a change in the machine's load
    falls on all of them alike; returns {name: row}.  Compare them with round_ratio()."""
    runs = {name: [] for name in configs}
    for rep in range(reps):
        for name, (args, env_extra) in configs.items():
            runs[name].append(_one_run(tag, name, rep, exe, args, env_extra, model, work))
    return {
        name: _reduce(tag, name, exe, args, env_extra, runs[name], model, work, out)
        for name, (args, env_extra) in configs.items()
    }


def round_ratio(row: dict, base: dict, key: str):
    """Median and range over the rounds of row's mp_param `key` divided by base's in the same
    round (rows of one measure_interleaved call)."""
    vals = [
        a[key] / b[key]
        for a, b in zip(row.get("rep_params", []), base.get("rep_params", []))
        if key in a and b.get(key)
    ]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)


def measure_rounds(tag, exe, args, model, sequential, configs) -> dict:
    """Every PE count's configurations in rounds (measure_interleaved), the sequential run
    `sequential` = (args, env_extra) among the first PE count's: a slow spell of the machine
    falls on all of them alike, and the findings compare runs of the same round.
    `configs(pes)` gives a PE count's configurations {name: (args, env_extra)}; their rows are
    named "<name>@<pes>"."""
    rows = {}
    for pes in args.pes:
        group = {"sequential": sequential} if pes == args.pes[0] else {}
        group.update({f"{name}@{pes}": c for name, c in configs(pes).items()})
        rows.update(measure_interleaved(tag, group, exe, args.reps, model, args.work, args.out))
    return rows


def beside(title: str, paper: dict, labels, base: str, key: str, rows: dict, args):
    """A figure of the paper beside ours at every PE count measured, each row as a time
    relative to the `base` configuration's: the paper's per machine (`paper`: {name: (CM5,
    Paragon, SP1)}), ours as the median over the rounds of the same-round ratio of mp_param
    `key`, with its range.  Absolute times do not compare (the paper's runs took seconds to
    minutes, ours milliseconds); what an optimisation changes does.  `labels`: {name: label},
    or a study's CONFIGS, tuples with the name first and the label last."""
    if not isinstance(labels, dict):
        labels = {c[0]: c[-1] for c in labels}
    lines = [
        "",
        f"{title}, relative to {labels[base]} (the paper's machines; ours, same-round ratios):",
        "",
        "| configuration | CM5 | Paragon | SP1 | "
        + " | ".join(f"ours, {p} PEs" for p in args.pes)
        + " |",
        "|---" * (4 + len(args.pes)) + "|",
    ]
    for name, times in paper.items():
        theirs = " | ".join(f"{t / b:.2f}" for t, b in zip(times, paper[base]))
        ours = []
        for p in args.pes:
            view = at(rows, p)
            m, lo, hi = (
                round_ratio(view[name], view[base], key)
                if name in view and base in view
                else (None, None, None)
            )
            ours.append(
                "1.00" if name == base else "" if m is None else f"{m:.2f} ({lo:.2f}-{hi:.2f})"
            )
        lines.append(f"| {labels[name]} | {theirs} | {' | '.join(ours)} |")
    return lines


def round_pct(row: dict, base: dict, key: str) -> str:
    """row's `key` against base's in the same round, the median change over the rounds
    ("+4 %"), for a summary's short paragraph."""
    m = round_ratio(row, base, key)[0]
    return "n/a" if m is None else f"{100 * (m - 1):+.0f} %"


def round_verdict(lo: float, hi: float) -> str:
    """What the range over the rounds of a same-round ratio says."""
    return (
        "faster in every round"
        if hi < 1
        else "slower in every round"
        if lo > 1
        else "within the spread (the rounds disagree)"
    )


def round_change(row: dict, base: dict, key: str) -> str:
    """row's `key` against base's in the same round, as a change: the median over the rounds,
    its range and the verdict ("+4.2 % (-3 to +9 %), within the spread ...")."""
    m, lo, hi = round_ratio(row, base, key)
    if m is None:
        return "n/a"
    return (
        f"{100 * (m - 1):+.1f} % ({100 * (lo - 1):+.0f} to {100 * (hi - 1):+.0f} %), "
        f"{round_verdict(lo, hi)}"
    )


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
    return (
        f"The machine ({row['cores']} cores) was shared with other work while this study "
        f"ran: load average {row['load_start'][0]} at its start and {end[0]} at its end "
        "(1-minute figures), so absolute times carry that noise; the ratios between "
        "configurations are taken within one round of interleaved runs."
    )


def param_stat(row: dict, name: str):
    """Median and range over the runs of a value the program recorded with mp_param."""
    vals = [p[name] for p in row["params"] if name in p]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)


def shown(cmd: str, work: Path) -> str:
    """A command as a summary shows it: files the study made in its work folder (a netlist)
    named relative to it, as WORK/..., so that a summary does not carry one machine's paths."""
    return cmd.replace(str(work), "WORK")


def time_cells(row: dict, key: str, seq, baseline: bool) -> tuple[str, str]:
    """A study table's time cell, `median (min-max)` of the mp_param `key`, and its speedup
    over `seq` (the 1-PE time): empty for the 1-PE row itself, or where a time is missing."""
    t, lo, hi = param_stat(row, key)
    sp = f"{seq / t:.2f}" if seq and t and not baseline else ""
    return f"{fmt(t, 3)} ({fmt(lo, 3)}-{fmt(hi, 3)})", sp


def latency_cells(row: dict, accesses, d: int = 3) -> str:
    """A study table's latency columns, `observed / critical` of each access category.  A
    category the report has no latency row for had no fiber wait on it: 0."""
    return " | ".join(
        f"{fmt(row.get('obs:' + a) or 0.0, d)} / {fmt(row.get('crit:' + a) or 0.0, d)}"
        for a in accesses
    )


def tables(rows: dict, args, table, sizes: dict, paper: list, explained: bool = True) -> list[str]:
    """A summary's middle: `table(rows, args, pes)` for each PE count, the notes on the ratio
    (and on `explained`, for studies whose tables have that column), then the calibration."""
    lines = []
    for pes in args.pes:
        lines += table(rows, args, pes)
    lines += [RATIO_NOTE] + (["", EXPLAINED_NOTE] if explained else [])
    return lines + calibration_lines(args.out, sizes, paper)


def calibrate(tag, exe, model, args, candidates, work: Path) -> list[dict]:
    """The ratio of computation to runtime overhead at each candidate size, one run each at
    the first PE count: [(label, command, ratio, computation and runtime per PE)]; kept in
    results/calibration.json, which the summary shows."""
    out = []
    pes = args.pes[0]
    for label, cmd, env in candidates:
        _, fig, _ = _one_run(tag, "calibrate", 0, exe, cmd, {"MPROF_PES": pes, **env}, model, work)
        out.append(
            {
                "size": label,
                "pes": pes,
                "cmd": shown(" ".join(map(str, cmd)), work),
                "ratio": fig["ratio"],
                "Comp": fig["Comp"],
                "Runtime": fig["Runtime"],
            }
        )
        log(tag, f"{label}: computation/runtime {fig['ratio']}")
    (args.out / "calibration.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


def calibration_lines(out: Path, sizes: dict, paper: list) -> list[str]:
    """The calibration table (results/calibration.json), when there is one, and the smallest
    candidate whose ratio reaches the paper's highest (`paper`: its ratios per machine; empty
    where the paper gives none)."""
    path = out / "calibration.json"
    if not path.exists():
        return []
    cal = json.loads(path.read_text())
    if paper:
        top = max(paper)
        reach = next((c["size"] for c in cal if c["ratio"] and c["ratio"] >= top), None)
        rule = (
            f"the paper's is {ratio_range(paper)}; the smallest candidate that reaches "
            f"{top:.1f}: {reach or 'none'}"
        )
    else:
        rule = "the paper gives no runtime costs for this program (insignificant, it says)"
    lines = [
        "",
        f"Calibration (`run.py --calibrate`, one run per candidate on {cal[0]['pes']} "
        f"PEs): comp/rt at each candidate size; {rule}.  The sizes: "
        + "; ".join(f"{k}: {v['label']}" for k, v in sizes.items())
        + ".  The paper "
        "size is the smallest that holds the paper's ratio and is no smaller than the "
        "paper's own input.",
        "",
        "| candidate | command | computation / PE | runtime / PE | comp/rt |",
        "|---|---|---|---|---|",
    ]
    for c in cal:
        lines.append(
            f"| {c['size']} | `{c['cmd']}` | {c['Comp']:.4f} s | "
            f"{c['Runtime']:.5f} s | {fmt(c['ratio'], 1)} |"
        )
    return lines


def ratio_cell(row: dict) -> str:
    """comp/rt of a row: the median over its runs with the range."""
    r = row.get("ratio")
    return "" if r is None else f"{r:.1f} ({fmt_range(row, 'ratio', 1)})"


def pending_note(args, program: str) -> str:
    """Which PE counts the summary has, and the command for the others."""
    have = ", ".join(map(str, args.pes))
    if max(args.pes) >= 8:
        return f"PE counts measured: {have}."
    return (
        f"Tables for {have} PEs only: the 8- and 16-PE tables are pending a run on a "
        f"machine with 16 cores (`benchmarks/studies.sh --pes 8,16 --size {args.size}`, "
        f"or this study alone: `.venv/bin/python benchmarks/{program}/experiments/run.py "
        f"--pes 8,16 --size {args.size}`)."
    )


def in_short(text: str) -> str:
    """The summary's short paragraph, which README.md's section "The applications" quotes
    verbatim (benchmarks/common/readme.py keeps the two equal)."""
    return "In short: " + " ".join(text.split())


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


def geomean(vals) -> float:
    vals = [v for v in vals if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")
