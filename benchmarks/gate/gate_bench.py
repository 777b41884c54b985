"""Detection and false-alarm rates of `mprof gate` at its default settings (`make bench`).

Two builds of benchmarks/gate/gate_ops.c: the baseline, and a candidate whose lookups (one
data-structure operation, category OP_B) do SLOW_ROUNDS more mixing rounds on their dependency
chain (5 of the 50 rounds of a lookup's hashing: +10 % to +11 % CPU time per lookup; the
lookups are serial, so each round costs its latency).  Before every detection trial the
benchmark measures that slowdown apart from the gate and prints it; the JSON gives its median,
range, and the detections among trials that injected at least +10 %.  Every trial is one
`mprof gate run` (mprof.gate.runner.run_gate) with the default settings (tolerance,
alpha, correction, and the fits on each configuration's two fastest runs), the shipped fit script
(benchmarks/gate/gate_ops.tcl, CPU time per PE thread), 1 PE (within the cores), a 3 x 3 sweep
of runs of 10-30 ms, 6 repetitions per point and build, baseline and candidate runs
interleaved (ABBA), into fresh databases:

- detection: baseline vs slowed build; a trial detects when the lookup coefficient, an
  OP_B category unit or the lookups' measured access category (cat:gateops:LOOKUP) is a
  REGRESSION, and is wrong elsewhere when any other unit except the configurations' total
  time and busy time (which contain the lookups) is a REGRESSION or BEHAVIOUR CHANGE;
- A/A: the baseline build against itself; a false alarm is any REGRESSION or BEHAVIOUR CHANGE.

The last line printed is one JSON object with both rates, the median estimated OP_B change
(the injected slowdown as the gate measured it), the settings and the load average.
Options: --detect N --aa N (trials), --reps, --sizes, --na, --slow-rounds, --budget,
--fastest, --disturbed, --focus, --adaptive, --change, --model, --keep-flagged (see --help).
The two targets:

    python benchmarks/gate/gate_bench.py              # full: 10 detection + 100 A/A trials
    python benchmarks/gate/gate_bench.py --adaptive --change 0.10 --budget 400  # 10 % slower,
                                                      # repetitions the power check recommends
    python benchmarks/gate/gate_bench.py --slow-rounds 15 --reps 4 --aa 0  # 30 % slower, 4 reps
    python benchmarks/gate/gate_bench.py --quick      # 3 + 5 trials
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402

from mprof.gate.config import GateConfig  # noqa: E402
from mprof.gate.evaluate import BEHAVIOUR, REGRESSION  # noqa: E402
from mprof.gate.runner import run_gate  # noqa: E402

FIT_SCRIPT = REPO / "benchmarks" / "gate" / "gate_ops.tcl"
QUIET = Console(file=open(os.devnull, "w"))  # the runner's progress lines
OP_B_UNITS = (
    "::fit:gateops.OP_B",
    "fit::gateops.OP_B:Lookup",
    "::cost:gateops.OP_B",
    "cat:gateops:LOOKUP",
)
# units that contain the lookups' time: flagged with them, not "elsewhere"
CONTAINING = ("::time", "cat:(busy)")


def link_flags(librt: Path) -> list[str]:
    """What a program linking the runtime library `librt` needs besides it: MPI's libraries
    (mpicc --showme:link) when the library holds the MPI backend, and those of its optional
    links (runtime/ecosystem.cmake): PAPI software-defined events (libsde), OTF2 traces
    (libotf2), PAPI counters (libpapi), and hwloc (libhwloc), which binds the shm backend's
    workers (runtime/CMakeLists.txt).  Installed programs get them from find_package(mprof) or
    mprof.pc (docs/install.md)."""
    undefined = subprocess.run(["nm", "-u", str(librt)], capture_output=True, text=True).stdout
    extra = []
    if "MPI_" in undefined:
        mpicc = shutil.which("mpicc")
        if mpicc is None:
            raise SystemExit(
                "the runtime library uses MPI but mpicc is not available "
                "(scripts/bootstrap.sh installs it)"
            )
        link = subprocess.run([mpicc, "--showme:link"], capture_output=True, text=True, check=True)
        extra = shlex.split(link.stdout)
    return extra + [
        flag
        for symbol, flag in (
            ("papi_sde_", "-lsde"),
            ("OTF2_", "-lotf2"),
            ("PAPI_", "-lpapi"),
            ("hwloc_", "-lhwloc"),
        )
        if symbol in undefined
    ]


def build(out: Path, build_dir: Path, slow_rounds: int | None = None) -> dict[str, Path]:
    """Compile the two variants against the runtime library of `make build` (build_dir):
    {"base": path, "slow": path}, the slow one with -DSLOW_OP_B and SLOW_ROUNDS more mixing
    rounds per lookup (None: gate_ops.c's default, three times the hashing work).  The gate
    tests' fixture (tests/gate/conftest.py) builds them here too."""
    librt = build_dir / "runtime" / "libmprof_rt.a"
    if not librt.exists():
        raise SystemExit(f"{librt} is missing: run `make build` first")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("a C compiler is needed (scripts/bootstrap.sh installs it)")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mprof",
            "iface",
            "compile",
            "-q",
            "-o",
            str(out),
            str(REPO / "benchmarks" / "gate" / "gateops.perf"),
        ],
        check=True,
        cwd=REPO,
    )
    extra = link_flags(librt)
    slow = ["-DSLOW_OP_B"] + ([] if slow_rounds is None else [f"-DSLOW_ROUNDS={slow_rounds}"])
    paths = {}
    for variant, flags in (("base", []), ("slow", slow)):
        target = out / variant / "gate_ops"
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                cc,
                "-std=c11",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                *flags,
                f"-I{REPO / 'runtime' / 'include'}",
                f"-I{out}",
                str(REPO / "benchmarks" / "gate" / "gate_ops.c"),
                str(out / "gateops_perf.c"),
                str(librt),
                *extra,
                "-lpthread",
                "-rdynamic",
                "-lm",
                "-o",
                str(target),
            ],
            check=True,
        )
        paths[variant] = target
    return paths


def cpu_seconds(exe: Path, na: int, nb: int, tmp: Path) -> float:
    out = tmp / "calibrate.json"
    subprocess.run(
        [str(exe), "1", str(na), str(nb)],
        check=True,
        env=dict(os.environ, MPROF_OUT=str(out), MPROF_PES="1"),
    )
    return float(json.loads(out.read_text())["pes"][0]["cpu_s"])


def injected_slowdown(exe: dict[str, Path], tmp: Path, n: int = 1000000, reps: int = 5) -> float:
    """The slowdown of one lookup as injected, measured apart from the gate: the CPU time of
    a run of n lookups (no inserts) less that of an empty run, both builds interleaved.
    Minima: interference (other processes, a hypervisor's steal) only ever adds time."""
    times = {"base": [], "slow": [], "empty": []}
    for _ in range(reps):
        times["base"].append(cpu_seconds(exe["base"], 0, n, tmp))
        times["slow"].append(cpu_seconds(exe["slow"], 0, n, tmp))
        times["empty"].append(cpu_seconds(exe["base"], 0, 0, tmp))
    low = {k: min(v) for k, v in times.items()}
    return (low["slow"] - low["empty"]) / (low["base"] - low["empty"]) - 1


def write_spec(path: Path, program: Path, na: list[int], nb: list[int], reps: int) -> Path:
    path.write_text(
        f'program = "{program}"\ncommand = "{{program}} {{npes}} {{na}} {{nb}}"\n'
        f'database = "unused.db"\nnpes = [1]\nrepetitions = {reps}\n'
        f"timeout_s = 120\n[params]\nna = {na}\nnb = {nb}\n"
    )
    return path


def trial(
    spec,
    baseline,
    candidate,
    out_dir,
    config,
    budget,
    focus=(),
    adaptive=False,
    change=None,
    keep: Path | None = None,
    model=None,
):
    """One gate run into `out_dir`, removed after it unless `keep` is given: then a trial whose
    report flags something keeps its databases and the report's JSON there, to be studied."""
    report, log = run_gate(
        spec,
        baseline_bin=str(baseline),
        candidate_bin=str(candidate),
        out_dir=out_dir,
        config=config,
        fit_script=FIT_SCRIPT,
        budget=budget,
        console=QUIET,
        focus=focus,
        adaptive=adaptive,
        change=change,
        model=model,
    )
    if keep is not None and any(u.verdict in (REGRESSION, BEHAVIOUR) for u in report.units):
        target = keep / Path(out_dir).name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(out_dir, target)
        (target / "report.json").write_text(json.dumps(report.to_json(), indent=1))
    shutil.rmtree(out_dir, ignore_errors=True)
    return report, log


def classify(report):
    flagged = [(u.id, u.verdict) for u in report.units if u.verdict in (REGRESSION, BEHAVIOUR)]
    own = [uid for uid, v in flagged if v == REGRESSION and uid.endswith(OP_B_UNITS)]
    elsewhere = [
        (uid, v)
        for uid, v in flagged
        if not uid.endswith(OP_B_UNITS) and not (v == REGRESSION and uid.endswith(CONTAINING))
    ]
    coef = next((u for u in report.units if u.id == "fit::gateops.OP_B:Lookup"), None)
    change = coef.comparison.change if coef is not None and coef.comparison else None
    return flagged, own, elsewhere, change


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detect", type=int, default=10, help="detection trials (10)")
    parser.add_argument("--aa", type=int, default=100, help="A/A trials (100)")
    parser.add_argument("--quick", action="store_true", help="3 detection + 5 A/A trials")
    parser.add_argument("--reps", type=int, default=6, help="repetitions per point and build")
    parser.add_argument(
        "--sizes",
        default="100000,200000,300000",
        help="values of nb, lookups per run (and of na unless --na)",
    )
    parser.add_argument("--na", help="values of na, inserts per run (default: --sizes)")
    parser.add_argument(
        "--slow-rounds",
        type=int,
        default=5,
        help="extra mixing rounds per lookup in the candidate (5: 10 %% of "
        "the 50 rounds of a lookup's hashing)",
    )
    parser.add_argument("--budget", type=int, default=0, help="gate run --budget (default 0)")
    parser.add_argument(
        "--disturbed",
        type=float,
        default=None,
        help="gate config `disturbed` (default: the gate's, off)",
    )
    parser.add_argument(
        "--fastest", type=int, default=None, help="gate config `fastest` (default: the gate's, 2)"
    )
    parser.add_argument(
        "--focus",
        action="append",
        default=[],
        help="gate --focus (repeatable; default: none, every unit gates)",
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="gate run --adaptive: the repetitions the power check recommends "
        "for --change after the spec's, within --budget",
    )
    parser.add_argument(
        "--change",
        type=float,
        default=None,
        help="gate run --change (default: the gate's, twice the tolerance)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="gate run --model: also price both sides with this model file "
        "(e.g. one with fixed and imported parameters)",
    )
    parser.add_argument(
        "--keep-flagged",
        type=Path,
        default=None,
        help="keep the databases and report of every trial that flags a unit in this folder",
    )
    parser.add_argument("--build-dir", default=os.environ.get("BUILD", "build"))
    args = parser.parse_args()
    if args.quick:
        args.detect, args.aa = 3, 5
    sizes = [int(x) for x in args.sizes.split(",")]
    na = [int(x) for x in args.na.split(",")] if args.na else sizes
    config = GateConfig()  # the documented defaults: tolerance 5 %, alpha 0.05, Holm
    if args.disturbed is not None:
        config.disturbed_limit = args.disturbed
    if args.fastest is not None:
        config.fastest = args.fastest
    model = None
    if args.model is not None:
        from mprof.model.modelfile import load_model

        model = load_model(args.model)
    load_before = os.getloadavg()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mprof-gate-bench-") as tmp:
        tmp = Path(tmp)
        exe = build(tmp / "bin", (REPO / args.build_dir).resolve(), args.slow_rounds)
        spec = write_spec(tmp / "sweep.toml", exe["base"], na, sizes, args.reps)
        detected, wrong, changes, time_flagged, details = 0, 0, [], 0, []
        injected, detected_at_10, reps_used = [], 0, []
        for i in range(args.detect):
            # the trial's own injected slowdown, measured apart just before it
            injected.append(injected_slowdown(exe, tmp))
            report, log = trial(
                spec,
                exe["base"],
                exe["slow"],
                tmp / f"d{i}",
                config,
                args.budget,
                args.focus,
                args.adaptive,
                args.change,
                args.keep_flagged,
                model,
            )
            reps_used.append(log.repetitions)
            flagged, own, elsewhere, change = classify(report)
            detected += bool(own)
            detected_at_10 += bool(own) and injected[-1] >= 0.10
            wrong += bool(elsewhere)
            time_flagged += any(uid.endswith("::time") for uid, _ in flagged)
            if change is not None:
                changes.append(change)
            details.append(
                {
                    "trial": f"detect {i}",
                    "own": len(own),
                    "elsewhere": elsewhere,
                    "op_b_change": change,
                    "injected": injected[-1],
                    "repetitions": log.repetitions,
                }
            )
            print(
                f"detect {i}: injected {injected[-1]:+.1%} (measured apart), OP_B flagged in "
                f"{len(own)} unit(s), elsewhere {elsewhere}, "
                + (
                    f"estimated lookup change {change:+.1%}"
                    if change is not None
                    else "no estimate"
                )
                + f", {log.repetitions} repetitions",
                flush=True,
            )
        alarms, behaviour = 0, 0
        for i in range(args.aa):
            report, log = trial(
                spec,
                exe["base"],
                exe["base"],
                tmp / f"a{i}",
                config,
                args.budget,
                args.focus,
                args.adaptive,
                args.change,
                args.keep_flagged,
                model,
            )
            reps_used.append(log.repetitions)
            flagged, _, _, _ = classify(report)
            alarms += any(v == REGRESSION for _, v in flagged)
            behaviour += any(v == BEHAVIOUR for _, v in flagged)
            if flagged:
                details.append({"trial": f"aa {i}", "flagged": flagged})
            print(f"A/A {i}: {flagged or 'nothing flagged'}", flush=True)
    result = {
        "benchmark": "gate_rates",
        "detect_trials": args.detect,
        "detected": detected,
        "flagged_elsewhere": wrong,
        "time_unit_flagged": time_flagged,
        "injected_slowdown": round(statistics.median(injected), 4) if injected else None,
        "injected_min": round(min(injected), 4) if injected else None,
        "injected_max": round(max(injected), 4) if injected else None,
        "trials_injected_ge_10pct": sum(x >= 0.10 for x in injected),
        "detected_where_injected_ge_10pct": detected_at_10,
        "op_b_change_min": round(min(changes), 4) if changes else None,
        "op_b_change_median": round(statistics.median(changes), 4) if changes else None,
        "aa_trials": args.aa,
        "aa_regressions": alarms,
        "aa_behaviour_changes": behaviour,
        "tolerance": config.tolerance,
        "alpha": config.alpha,
        "correction": config.correction,
        "disturbed": config.disturbed_limit,
        "fastest": config.fastest,
        "reps": args.reps,
        "na": na,
        "nb": sizes,
        "npes": 1,
        "slow_rounds": args.slow_rounds,
        "budget": args.budget,
        "focus": args.focus,
        "adaptive": args.adaptive,
        "change": args.change,
        "model": str(args.model) if args.model else None,
        "repetitions_used": [min(reps_used), max(reps_used)] if reps_used else None,
        "seconds": round(time.monotonic() - start, 1),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "targets_met": detected >= 0.9 * args.detect
        and wrong == 0
        and alarms == 0
        and behaviour == 0,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
