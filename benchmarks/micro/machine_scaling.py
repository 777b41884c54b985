#!/usr/bin/env python3
"""The machine's own weak scaling, to set beside the runtime's.

    machine_scaling.py [--build DIR] [--pes 1,2,4,8,16] [--reps 3] [--scale S]

The runtime's weak-scaling target (T(2)/T(16) >= 0.7 for `rt_workload P 3000000 300000 16 0`)
asks that 16 PEs do 8 times the work of 2 in nearly the same time.  No program can do that
on a machine whose cores slow each other down: vCPUs that are hyperthreads of fewer physical
cores share each core's throughput, and copies of one loop share the caches and the memory
bus.  This script measures how far the machine itself lets fixed work per thread scale, with
two workloads, at each PE count P:

  copies  P copies of noise_floor at once, copy i bound to the i-th usable CPU (mod their
          count) as the runtime binds its workers: no runtime at all.  best_s is the wall
          time until the last copy ended (best of the repetitions); cpu_mean_s each part's
          thread CPU time averaged over the copies of that repetition (alu: a dependent
          chain; ilp: eight independent chains, the core's throughput, which SMT siblings
          share; mem: a walk through 16 MiB; ring: the scheduler loop's shape in L1).
  local   rt_workload P 3000000 0 16 0: the weak-scaling command's local fibers alone, no
          messages, so nothing passes between the PEs but the start and the end; best_s its
          wall time, busy_mean_s the PEs' busy CPU averaged.

Where `copies` already loses a third of its speed from 2 to 16, the runtime's 0.7 is out of
reach on that machine whatever it does with its messages; where `local` loses more than
`copies`, the runtime costs something per PE that grows with P even without messages.
benchmarks/device/targets.py turns the lines into T(2)/T(P) figures.  One JSON line per
workload and P.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("alu_cpu_s", "ilp_cpu_s", "mem_cpu_s", "ring_cpu_s")
LOCAL_ARGS = ["3000000", "0", "16", "0"]


def fail(msg):
    sys.exit(f"machine_scaling: {msg}")


def pe_list(text):
    try:
        pes = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of PE counts: '{text}'")
    if not pes or min(pes) < 1 or max(pes) > 1024:
        raise argparse.ArgumentTypeError(f"PE counts between 1 and 1024, not '{text}'")
    return pes


def copies_once(floor, p, scale):
    """P copies at once; the wall time until the last ended and each copy's parts."""
    cpus = sorted(os.sched_getaffinity(0))  # the CPUs this process may use, as the runtime
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [str(floor), str(scale)],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=(lambda c=cpus[i % len(cpus)]: os.sched_setaffinity(0, {c})),
        )
        for i in range(p)
    ]
    outs = [proc.communicate(timeout=600)[0] for proc in procs]
    wall = time.perf_counter() - t0
    for proc, out in zip(procs, outs):
        if proc.returncode:
            fail(f"{floor} {scale} exited with {proc.returncode}")
    parts = [json.loads(out) for out in outs]
    return wall, {k: statistics.fmean(d[k] for d in parts) for k in PARTS}


def local_once(workload, p):
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        t0 = time.perf_counter()
        run = subprocess.run(
            [str(workload), str(p), *LOCAL_ARGS],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "MPROF_OUT": out},
        )
        wall = time.perf_counter() - t0
        if run.returncode:
            fail(
                f"rt_workload {p} {' '.join(LOCAL_ARGS)} exited with {run.returncode}: "
                f"{run.stderr.strip()[-300:]}"
            )
        with open(out) as f:
            prof = json.load(f)
    finally:
        os.unlink(out)
    busy = [pe["cpu_s"] - pe["idle_cpu_s"] for pe in prof["pes"]]
    return wall, statistics.fmean(busy)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="the build tree (default build)")
    ap.add_argument(
        "--pes", type=pe_list, default=[1, 2, 4, 8, 16], help="PE counts (default 1,2,4,8,16)"
    )
    ap.add_argument("--reps", type=int, default=3, help="repetitions, best kept (default 3)")
    ap.add_argument(
        "--scale",
        type=float,
        default=0.5,
        help="noise_floor's SCALE (default 0.5: about 0.2 s a copy)",
    )
    args = ap.parse_args()
    if args.reps < 1:
        fail("--reps takes at least 1")
    if not 0 < args.scale <= 100:
        fail("--scale takes a number in (0, 100]")
    micro = Path(args.build) / "benchmarks" / "micro"
    floor, workload = micro / "noise_floor", micro / "rt_workload"
    for prog in (floor, workload):
        if not os.access(prog, os.X_OK):
            fail(f"no {prog}: build it first (make build)")
    for p in args.pes:
        runs = [copies_once(floor, p, args.scale) for _ in range(args.reps)]
        wall, parts = min(runs, key=lambda r: r[0])
        print(
            json.dumps(
                {
                    "machine": "copies",
                    "prog": f"noise_floor {args.scale}",
                    "pes": p,
                    "best_s": round(wall, 4),
                    "cpu_mean_s": {k[:-6]: round(v, 4) for k, v in parts.items()},
                }
            ),
            flush=True,
        )
    for p in args.pes:
        runs = [local_once(workload, p) for _ in range(args.reps)]
        wall, busy = min(runs, key=lambda r: r[0])
        print(
            json.dumps(
                {
                    "machine": "local",
                    "prog": f"rt_workload P {' '.join(LOCAL_ARGS)}",
                    "pes": p,
                    "best_s": round(wall, 4),
                    "busy_mean_s": round(busy, 4),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
