#!/usr/bin/env python3
"""What the category sampler costs, in CPU time.

    sampler.py [--pipe build/benchmarks/pipe/pipe] [--reps 31]

The sampler (runtime/src/sample.c) costs per millisecond of a thread's time, not per unit of
work: a signal and a clock read every MPROF_SAMPLE_US.  Instruction counts under callgrind,
which overhead.py uses for the hooks, misstate it (a run under valgrind takes some 50 times
as long, so it takes 50 times the samples), so overhead.py turns sampling off and this script
times it instead: PIPE's compute-bound command on 2 PEs sharing one thread (two threads on
the 2-core machine spin and preempt each other, and their CPU time scattered 5-fold), with
sampling off, at the default period (1000 us) and at 250 us, interleaved, `--reps` times
each.  The figure is
the ratio of the medians of the runs' CPU time (cpu_s summed over PEs); the last line is JSON
(sampler_overhead_pct at the default, sampler_overhead_250us_pct).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

COMMAND = ["2", "2000", "10", "100", "15", "100", "1000"]  # overhead.py's compute command
PERIODS = ("0", "1000", "250")


def cpu_seconds(pipe: str, period: str, out: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update(MPROF_OUT=str(out), MPROF_WORKERS="1", MPROF_SAMPLE_US=period)
    subprocess.run([pipe, *COMMAND], env=env, check=True, stdout=subprocess.DEVNULL)
    return sum(pe["cpu_s"] for pe in json.loads(out.read_text())["pes"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pipe",
        default=os.path.join(os.environ.get("BUILD", "build"), "benchmarks", "pipe", "pipe"),
    )
    parser.add_argument("--reps", type=int, default=31)
    args = parser.parse_args()
    if not os.access(args.pipe, os.X_OK):
        sys.exit(f"sampler: {args.pipe} is missing: run `make build` first")
    times = {p: [] for p in PERIODS}
    with tempfile.TemporaryDirectory(prefix="mprof-sampler-") as tmp:
        out = Path(tmp) / "run.json"
        for _ in range(args.reps):
            for period in PERIODS:
                times[period].append(cpu_seconds(args.pipe, period, out))
    med = {p: statistics.median(v) for p, v in times.items()}
    for p in PERIODS:
        print(
            f"MPROF_SAMPLE_US={p}: median CPU {1e3 * med[p]:.2f} ms over {args.reps} runs "
            f"(min {1e3 * min(times[p]):.2f}, max {1e3 * max(times[p]):.2f})"
        )
    print(
        json.dumps(
            {
                "benchmark": "sampler_overhead",
                "command": ["pipe", *COMMAND],
                "reps": args.reps,
                "median_cpu_s": {p: round(v, 6) for p, v in med.items()},
                "sampler_overhead_pct": round(100 * (med["1000"] / med["0"] - 1), 2),
                "sampler_overhead_250us_pct": round(100 * (med["250"] / med["0"] - 1), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
