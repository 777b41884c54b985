#!/usr/bin/env python3
"""Replicate spread of runs beside the machine's own: how much identical runs differ in CPU time.

    replicate_spread.py [--build DIR] [--groups G] [--reps R] [--cases LIST] [--db FILE ...]

The runtime's cost-model target asks that repetitions of one configuration agree: the spread of
a group of R repetitions is max/min - 1 of their busy CPU time, and a sweep's figure is the
median over its configurations.  That figure mixes what mprof's code does (contention, buffers
running out) with what the machine does to any code (other tenants, frequency, the host's
scheduling of a VM's vCPUs).  This script measures both the same way, interleaved: each of G * R
rounds runs every case once, and each case's spread is the median over its G groups of R
consecutive rounds.  Cases:

  floor        noise_floor: a fixed single-threaded loop outside the runtime (a dependent ALU
               chain, eight independent ones, a walk through 16 MiB, a ring of function
               pointers called in turn), thread CPU time; also each part alone: floor_alu,
               floor_ilp, floor_mem, floor_ring (the last the shape of fibers_1pe's loop)
  fibers_1pe   rt_workload 1 12000000 0 16 0: local fibers on one PE, busy CPU
  fibers_2pe   rt_workload 2 12000000 0 16 0: the same on two PEs, no messages
  agg          MPROF_AGG_BYTES=4096 rt_workload 2 3000000 300000 16 0
  noagg        MPROF_AGG_BYTES=0 rt_workload 2 3000000 300000 16 0
  pair_agg     pair_floor 2 2000000 16 4096: the machine's own floor of agg's messaging:
               16-byte records between two threads through a ring of 4096-byte blocks per
               pair, each dispatched through a function pointer; no runtime, no fibers;
               busy CPU as the workload's (about as much as agg's)
  pair_noagg   pair_floor 2 1000000 16 0: the same with every record published at once, the
               floor of noagg; both pair cases' lines also give the range of the cache-line
               round trip between the two threads measured in each run (rtt_ns_range): the
               host's placement of the two vCPUs, on which every cross-thread cost depends
  X_unbound    any of the four rt_workload cases with MPROF_PIN=0 (worker threads left to the
               OS; not in the default list): name both, e.g. --cases agg,agg_unbound, and the
               rounds interleave bound and unbound runs, so the two spreads see the same machine

Each case's line also gives median_dev_pct, the mean deviation of the groups' median runs (the
lower median of an even count) from the median of those: what a perfect model would miss by
when it predicts a configuration's median of R runs, as the runtime model's fit does (the floor
of its test MRE here); and fastest_dev_pct, the same for the groups' fastest runs, as PIPE's
fit takes them.  The messaging cases' lines give bursts_range, the least and most channel
bursts of their runs (ChanNotify + ChanDrain over PEs): how often a receiver found a channel
empty and a sender woke it follows the two PEs' relative speed, not the work
(docs/measurements/runtime-messaging.md, "Placement and bursts").  Busy CPU is the run
profile's cpu_s - idle_cpu_s summed over PEs.  With --db, the target's own figure is also
printed for each profile database (a sweep made by `mprof bench`): the median
over its configurations of the spread of their repetitions.  One JSON line per case and
database, then a summary line.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from aggregation_scale import rts_totals  # this script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[2]

CASES = {
    "fibers_1pe": (["1", "12000000", "0", "16", "0"], {}),
    "fibers_2pe": (["2", "12000000", "0", "16", "0"], {}),
    "agg": (["2", "3000000", "300000", "16", "0"], {"MPROF_AGG_BYTES": "4096"}),
    "noagg": (["2", "3000000", "300000", "16", "0"], {"MPROF_AGG_BYTES": "0"}),
}
CASES.update(
    {
        f"{name}_unbound": (args, {**env, "MPROF_PIN": "0"})
        for name, (args, env) in list(CASES.items())
    }
)
PAIRS = {
    "pair_agg": ["2", "2000000", "16", "4096"],
    "pair_noagg": ["2", "1000000", "16", "0"],
}
FLOOR_PARTS = {
    "floor": "cpu_s",
    "floor_alu": "alu_cpu_s",
    "floor_ilp": "ilp_cpu_s",
    "floor_mem": "mem_cpu_s",
    "floor_ring": "ring_cpu_s",
}


def fail(msg):
    sys.exit(f"replicate_spread: {msg}")


def run_floor(build):
    exe = Path(build) / "benchmarks/micro/noise_floor"
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"{exe} failed: {r.stderr.strip()[-500:]}")
    out = json.loads(r.stdout)
    return {case: out[key] for case, key in FLOOR_PARTS.items()}


def run_pair(build, args, fail=fail):
    """One pair_floor run: its JSON line (busy_cpu_s summed over threads, rtt_ns the cache-line
    round trip between them, ...); `fail` reports a failed run (placement.py passes its own)."""
    exe = Path(build) / "benchmarks/micro/pair_floor"
    r = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"{exe} {' '.join(args)} failed: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout)


def program(case):
    """The benchmark program a case runs."""
    if case == "floor":
        return "noise_floor"
    return "pair_floor" if case in PAIRS else "rt_workload"


def run_workload(build, args, env, fail=fail, timeout=600):
    """One rt_workload run: its busy CPU (cpu_s - idle_cpu_s summed over PEs) and its rts
    statistics summed over PEs; `fail` reports a failed run (placement.py passes its own)."""
    exe = Path(build) / "benchmarks/micro/rt_workload"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        r = subprocess.run(
            [str(exe), *args],
            env={**os.environ, **env, "MPROF_OUT": out},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode != 0:
            fail(f"{exe} {' '.join(args)} failed: {r.stderr.strip()[-500:]}")
        with open(out) as f:
            profile = json.load(f)
    return sum(pe["cpu_s"] - pe["idle_cpu_s"] for pe in profile["pes"]), rts_totals(profile)


def bursts(totals):
    """A run's channel bursts (ChanNotify + ChanDrain); a build without statistics has none."""
    return totals.get("ChanNotify", 0) + totals.get("ChanDrain", 0)


def spread(values):
    return max(values) / min(values) - 1


def group_spreads(values, reps):
    return [spread(values[i : i + reps]) for i in range(0, len(values) - reps + 1, reps)]


def pick_deviation(values, reps, pick):
    """The mean relative deviation of each group's picked run from the median of those picked
    runs: the error that a perfect model makes when it predicts a configuration's sample of
    `reps` repetitions, i.e. the floor of a test MRE on this machine.  `pick` is the fit's
    `Replicates` rule: "min" (the fastest run, PIPE's) or "median" (the lower median of an
    even count, as mprof.model.samples takes it: the runtime model's)."""
    index = {"min": lambda n: 0, "median": lambda n: (n - 1) // 2}[pick]
    picked = [
        sorted(values[i : i + reps])[index(reps)] for i in range(0, len(values) - reps + 1, reps)
    ]
    mid = statistics.median(picked)
    return statistics.mean(abs(f / mid - 1) for f in picked)


def db_spread(path):
    """The target's figure for one sweep database: the median over configurations of the
    spread of their repetitions (configurations with a single run are left out)."""
    # the repository's mprof, also when the script runs outside the project's virtual
    # environment (a machine with only numpy and scipy, as the 16-core device is)
    sys.path.insert(0, str(ROOT))
    from mprof.profile import load_profiles

    groups = {}
    for run in load_profiles(path):
        key = json.dumps([run.npes, run.params, run.settings], sort_keys=True, default=str)
        busy = sum(pe.time("cpu") - pe.idle_time("cpu") for pe in run.pes)
        groups.setdefault(key, []).append(busy)
    spreads = [spread(v) for v in groups.values() if len(v) > 1]
    if not spreads:
        fail(f"{path}: no configuration has more than one run")
    return {
        "db": str(path),
        "configurations": len(spreads),
        "median_spread_pct": round(100 * statistics.median(spreads), 1),
        "max_spread_pct": round(100 * max(spreads), 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--build",
        default=str(ROOT / "build"),
        help="build tree with the benchmark programs (default: the repository's)",
    )
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument(
        "--cases",
        default="floor,fibers_1pe,fibers_2pe,agg,pair_agg,noagg,pair_noagg",
        help="comma-separated: floor and any of " + ", ".join([*CASES, *PAIRS]),
    )
    ap.add_argument("--db", nargs="*", default=[], help="sweep databases to summarise too")
    args = ap.parse_args()
    if args.groups < 1 or args.reps < 2:
        fail("--groups must be at least 1 and --reps at least 2")
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c != "floor" and c not in CASES and c not in PAIRS]
    if unknown:
        known = ", ".join(["floor", *CASES, *PAIRS])
        fail(f"unknown case(s) {', '.join(unknown)}; known: {known}")
    for db in args.db:
        if not Path(db).is_file():
            fail(f"{db}: no such database")
    for prog in sorted({program(c) for c in cases}):
        if not (Path(args.build) / "benchmarks/micro" / prog).is_file():
            fail(f"{args.build}/benchmarks/micro/{prog} is missing: run make build")

    series, rtts, burst_counts = {}, {}, {}
    for _ in range(args.groups * args.reps):
        for case in cases:
            if case == "floor":
                for part, v in run_floor(args.build).items():
                    series.setdefault(part, []).append(v)
            elif case in PAIRS:
                out = run_pair(args.build, PAIRS[case])
                series.setdefault(case, []).append(out["busy_cpu_s"])
                rtts.setdefault(case, []).append(out["rtt_ns"])
            else:
                busy, totals = run_workload(args.build, *CASES[case])
                series.setdefault(case, []).append(busy)
                burst_counts.setdefault(case, []).append(bursts(totals))

    summary = {"groups": args.groups, "reps": args.reps}
    for case, values in series.items():
        g = group_spreads(values, args.reps)
        line = {
            "case": case,
            "median_spread_pct": round(100 * statistics.median(g), 1),
            "group_spreads_pct": [round(100 * s, 1) for s in g],
            "median_dev_pct": round(100 * pick_deviation(values, args.reps, "median"), 1),
            "fastest_dev_pct": round(100 * pick_deviation(values, args.reps, "min"), 1),
            "cpu_s_range": [round(min(values), 4), round(max(values), 4)],
            "cpu_s_median": round(statistics.median(values), 4),
        }
        if case in rtts:
            line["rtt_ns_range"] = [round(min(rtts[case])), round(max(rtts[case]))]
        if max(burst_counts.get(case, [0])) > 0:
            line["bursts_range"] = [min(burst_counts[case]), max(burst_counts[case])]
        print(json.dumps(line), flush=True)
        summary[f"{case}_spread_pct"] = line["median_spread_pct"]
        summary[f"{case}_median_dev_pct"] = line["median_dev_pct"]
        summary[f"{case}_fastest_dev_pct"] = line["fastest_dev_pct"]
    for db in args.db:
        line = db_spread(db)
        print(json.dumps(line), flush=True)
        summary[f"{Path(db).stem}_spread_pct"] = line["median_spread_pct"]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
