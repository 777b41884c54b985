#!/usr/bin/env python3
"""Aggregation and flow control at many destinations: records per message, fresh buffers and
busy CPU of `rt_workload P 3000000 300000 16 0` (the same work per PE at every P) with a thread
per PE (MPROF_WORKERS=P), aggregated (MPROF_AGG_BYTES=4096).

    aggregation_scale.py [--workload PATH] [--pes 2,16,64] [--reps 3] [--delay-us D] [--pin 0|1]

Each PE count runs --reps times; the figures are the median run's (by records per message)
and the range.  With more PEs than cores the threads time-share the cores, so wall times say
little there; records per message and fresh buffers are counts.  --delay-us sets
MPROF_FLUSH_DELAY_US (0 is the dissertation's policy: every buffer every K fibers).  One JSON
line per PE count, then a summary line:
  ops_per_msg       remote operations per message sent (all PEs)
  records_per_msg   records per message on either hop: remote operations and records
                    forwarded (past 65 PEs records travel in two hops: docs/runtime.md,
                    "Routing"), per message sent
  forwarded         records forwarded (rts RecordFwd)
  msg_alloc         fresh message buffers (pool empty)
  busy_cpu_s        CPU time outside the idle loop and flow-control waits, all PEs
  why               messages by why they were sent: full, half (full at a period), aged
                    (open for the delay), fed (to a PE that waits), drain (all at once),
                    order (ahead of a message sent at once), taken (by a PE of the worker)
  wakes             sleeping PEs woken by messages, a futex call each (rts Wakes)
  idle_polls        polls of the idle loops (rts IdleCycle)
  bursts            the channels' notifications and drains (rts ChanNotify + ChanDrain, the
                    runtime model's Burst): each moves a channel's lines between two cores
  wall_s            the process's wall time, start-up included
--pin 0 runs the workers unbound (MPROF_PIN=0).  On machines where system calls and page
faults are dear (a gVisor sandbox), wakes and fresh buffers are what to compare across P.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


# Why the aggregation buffers went (rts statistics; docs/runtime.md, "The flush policy").
WHY = ("AggFull", "AggHalf", "AggAged", "AggFed", "AggDrain", "AggOrder", "AggTaken")


def rts_totals(profile):
    totals = {}
    for pe in profile["pes"]:
        for obj in pe["objects"]:
            if obj["module"] == "rts":
                for k, v in obj["stats"].items():
                    totals[k] = totals.get(k, 0) + v
    return totals


def run_once(workload, pes, env):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        t0 = time.perf_counter()
        r = subprocess.run([workload, str(pes), "3000000", "300000", "16", "0"],
                           env={**os.environ, **env, "MPROF_WORKERS": str(pes),
                                "MPROF_AGG_BYTES": "4096", "MPROF_OUT": out},
                           capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"aggregation_scale: {workload} {pes} failed:\n{r.stderr[-2000:]}")
        with open(out) as f:
            profile = json.load(f)
    t = rts_totals(profile)
    fwd = t.get("RecordFwd", 0)
    return {"ops_per_msg": t["RemoteOp"] / max(1, t["MsgSent"]),
            "records_per_msg": (t["RemoteOp"] + fwd) / max(1, t["MsgSent"]), "forwarded": fwd,
            "msg_alloc": t["MsgAlloc"],
            "flow_waits": t.get("FlowWait", 0), "wakes": t.get("Wakes", 0),
            "idle_polls": t.get("IdleCycle", 0),
            "bursts": t.get("ChanNotify", 0) + t.get("ChanDrain", 0),
            "elapsed_s": profile["elapsed_s"], "wall_s": wall,
            "busy_cpu_s": sum(p["cpu_s"] - p["idle_cpu_s"] for p in profile["pes"]),
            "why": {k[3:].lower(): t[k] for k in WHY if k in t}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="build/benchmarks/micro/rt_workload")
    ap.add_argument("--pes", default="2,16,64")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--delay-us", type=float, default=None)
    ap.add_argument("--pin", choices=("0", "1"), default=None)
    args = ap.parse_args()
    env = {} if args.delay_us is None else {"MPROF_FLUSH_DELAY_US": str(args.delay_us)}
    if args.pin is not None:
        env["MPROF_PIN"] = args.pin
    summary = {}
    for pes in (int(p) for p in args.pes.split(",")):
        runs = sorted((run_once(args.workload, pes, env) for _ in range(args.reps)),
                      key=lambda r: r["ops_per_msg"])
        med = runs[len(runs) // 2]
        line = {"pes": pes, **{k: v if k == "why" else round(v, 3) for k, v in med.items()},
                "ops_per_msg_range": [round(runs[0]["ops_per_msg"], 1),
                                      round(runs[-1]["ops_per_msg"], 1)],
                "busy_cpu_median_s": round(statistics.median(r["busy_cpu_s"] for r in runs), 3)}
        print(json.dumps(line), flush=True)
        summary[f"ops_per_msg_p{pes}"] = round(med["ops_per_msg"], 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
