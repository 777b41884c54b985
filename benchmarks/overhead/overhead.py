#!/usr/bin/env python3
"""What statistics and latency accounting cost, in instructions.

    overhead.py [--build DIR] [--root DIR]

Builds PIPE three ways -- as configured (statistics and latency accounting on), with
-DMPROF_STATS=OFF (every statistics hook compiled out: runtime, event-graph library, PIPE) and
with -DMPROF_LATENCY=OFF (latency accounting compiled out, the generated access declarations
with it) -- into ROOT/build-overhead-{stats,latency} (DIR is the normal build),
counts the instructions of the same commands in each with callgrind, and prints the overheads
as percentages of the build without the feature; the last line is JSON with
stats_overhead_pct and latency_overhead_pct for the communication-bound command.

Two views of the same cost.  The whole-program ratio counts everything the feature adds to
that short run (about 30 M instructions), a fixed part included: with statistics, registering
every statistic as a PAPI software-defined event (libsde) and writing them into the profile,
about 0.13 M instructions whatever the run's length.  The marginal ratio
(stats_marginal_pct, latency_marginal_pct) runs the communication command again with twice
the items and compares the differences, so that fixed costs cancel: it is what the hooks
cost per unit of work, the figure that holds for runs of any length.  Both are printed, with
the fixed part in instructions (stats_fixed_instructions, latency_fixed_instructions).

The category sampler is off (MPROF_SAMPLE_US=0): its cost is per millisecond of a thread's
time, which valgrind stretches some 50-fold, so sampler.py measures it by timing instead.

The PEs run on one worker thread (MPROF_WORKERS=1): callgrind runs threads one at a time, and
two spinning PE threads would add idle polls that vary from run to run; on one worker the
PEs hand work to each other without spinning, so the count is the same in every run.
"""

import argparse
import json
import os
import re
import subprocess
import sys

COMMANDS = {
    "comm": ["2", "20000", "10", "0", "15", "100", "1000"],
    "compute": ["2", "2000", "10", "100", "15", "100", "1000"],
    # the communication command with twice the items: the marginal cost (see above)
    "comm2x": ["2", "40000", "10", "0", "15", "100", "1000"],
}
VARIANTS = {"stats": "-DMPROF_STATS=OFF", "latency": "-DMPROF_LATENCY=OFF"}


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"overhead: {' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def build(root, name, flag):
    bdir = os.path.join(root, f"build-overhead-{name}")
    sh(
        [
            "cmake",
            "-S",
            root,
            "-B",
            bdir,
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            flag,
        ]
    )
    sh(["cmake", "--build", bdir, "-j", "2", "--target", "pipe"])
    return bdir


def instructions(pipe, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env["MPROF_WORKERS"] = "1"
    # the category sampler costs per millisecond, not per unit of work, and a run under
    # valgrind takes some 50 times as long: sampler.py times it instead
    env["MPROF_SAMPLE_US"] = "0"
    r = sh(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", pipe, *args], env=env)
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr) or re.search(
        r"I\s+refs:\s*([\d,]+)", r.stderr
    )
    if not m:
        sys.exit(f"overhead: no instruction count from callgrind:\n{r.stderr[-1000:]}")
    return int(m.group(1).replace(",", ""))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "../.."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--root", default=root)
    a = ap.parse_args()
    pipes = {"full": os.path.join(a.build, "benchmarks/pipe/pipe")}
    for name, flag in VARIANTS.items():
        pipes[name] = os.path.join(build(a.root, name, flag), "benchmarks/pipe/pipe")
    out = {}
    for cmd, args in COMMANDS.items():
        counts = {v: instructions(p, args) for v, p in pipes.items()}
        out[f"instructions_{cmd}"] = counts
        if cmd == "comm2x":
            continue
        for name in VARIANTS:
            pct = 100.0 * (counts["full"] - counts[name]) / counts[name]
            print(
                f"pipe {' '.join(args)}: {name} {pct:.2f} % "
                f"({counts['full']} instructions with, {counts[name]} without)"
            )
            out[f"{name}_overhead_pct" if cmd == "comm" else f"{name}_overhead_pct_{cmd}"] = round(
                pct, 3
            )
    one, two = out["instructions_comm"], out["instructions_comm2x"]
    for name in VARIANTS:
        with_, without = two["full"] - one["full"], two[name] - one[name]
        pct = 100.0 * (with_ - without) / without
        fixed = (one["full"] - one[name]) - (with_ - without)
        print(
            f"pipe comm, marginal (20000 more items): {name} {pct:.2f} % "
            f"({with_} instructions with, {without} without); fixed part {fixed} instructions"
        )
        out[f"{name}_marginal_pct"] = round(pct, 3)
        out[f"{name}_fixed_instructions"] = fixed
    print(json.dumps(out))


if __name__ == "__main__":
    main()
