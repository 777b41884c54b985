#!/usr/bin/env python3
"""Memory and time against the number of PEs: linear in PEs, not in pairs.

    pes_memory.py [--workload PATH] [--pes 32,64,...] [--msgs N] [--fibers N] [--rounds N]
                  [--target-msgs N]

Runs `rt_workload PES FIBERS MSGS 64` (every PE spawns FIBERS local fibers; even PEs send MSGS
invocations of 64 bytes round-robin to the others, odd PEs 2 * MSGS, about 1.5 * MSGS per PE)
and `rt_workload PES FIBERS 0 64` (no messages) at each PE count, and prints the peak
resident memory (the child's ru_maxrss, the highest of --rounds) and the wall time (the
best).  Then, once, the target command `rt_workload MAXPES FIBERS TARGET_MSGS 64` (default
500: 768 k invocations at 1024 PEs) with its targets (1 s, 512 MB; --target-msgs 0 skips it),
and its CPU time (user + system), which a machine shared with other jobs inflates less than
the wall time.  One JSON object is the last line.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def run(cmd, cpu=False):
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    dt = time.monotonic() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"pes_memory: {' '.join(cmd)} failed: {err[-400:]}")
    if cpu:
        return dt, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime
    return dt, usage.ru_maxrss / 1024.0  # MB


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--workload", default=os.path.join(here, "../../build/benchmarks/micro/rt_workload")
    )
    ap.add_argument("--pes", default="32,64,128,256,512,1024")
    ap.add_argument("--msgs", type=int, default=5)
    ap.add_argument("--fibers", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--target-msgs", type=int, default=500)
    a = ap.parse_args()
    out = {"msgs": a.msgs, "fibers": a.fibers}
    for p in [int(x) for x in a.pes.split(",")]:
        for label, msgs in (("msgs", a.msgs), ("nomsg", 0)):
            cmd = [a.workload, str(p), str(a.fibers), str(msgs), "64"]
            runs = [run(cmd) for _ in range(max(a.rounds, 1))]
            best, mem = min(r[0] for r in runs), max(r[1] for r in runs)
            print(f"rt_workload {p} {a.fibers} {msgs} 64: {best:.3f} s, {mem:.0f} MB")
            out[f"{label}_{p}pe_s"] = round(best, 3)
            out[f"{label}_{p}pe_mb"] = round(mem, 1)
    if a.target_msgs > 0:
        p = max(int(x) for x in a.pes.split(","))
        cmd = [a.workload, str(p), str(a.fibers), str(a.target_msgs), "64"]
        dt, mem, cpu = run(cmd, cpu=True)
        invocations = a.target_msgs * ((p + 1) // 2 + 2 * (p // 2))  # even PEs MSGS, odd 2 MSGS
        print(
            f"target: rt_workload {p} {a.fibers} {a.target_msgs} 64 ({invocations} invocations): "
            f"{dt:.2f} s, {cpu:.2f} s CPU, {mem:.0f} MB (targets 1 s, 512 MB)"
        )
        out.update(
            target_pes=p,
            target_msgs=a.target_msgs,
            target_invocations=invocations,
            target_s=round(dt, 3),
            target_cpu_s=round(cpu, 3),
            target_mb=round(mem, 1),
            target_time_met=dt <= 1.0,
            target_memory_met=mem <= 512,
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
