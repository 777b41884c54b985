#!/usr/bin/env python3
"""Aggregation and flow control at many destinations: records per message, fresh buffers and
busy CPU of `rt_workload P 3000000 300000 16 0` (the same work per PE at every P) with a thread
per PE (MPROF_WORKERS=P), aggregated (MPROF_AGG_BYTES=4096).

    aggregation_scale.py [--workload PATH] [--pes 2,16,64] [--reps 3] [--delay-us D] [--pin 0|1]
                         [--feed-us F1,F2,...]

Each PE count runs --reps times; the figures are the median run's (by records per message)
and the range.  With more PEs than cores the threads time-share the cores, so wall times say
little there; records per message and fresh buffers are counts.  --delay-us sets
MPROF_FLUSH_DELAY_US (0 is the dissertation's policy: every buffer every K fibers).
--feed-us runs each PE count with each MPROF_FEED_US given (how often a busy sender may feed a
PE that waits), interleaved within every repetition: the trade between fed messages, records
per message and busy CPU.  One JSON line per PE count (and feed setting; the settings given
are in the line), then a summary line:
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
                    runtime model's Notify and Drain): each moves a channel's lines between
                    two cores
  settings          the run profile's record of feed_us, flush_delay_us, pinned_workers and
                    workers (of the median run)
  wall_s            the process's wall time, start-up included (wall_median_s: the median
                    over the repetitions)
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


# the run profile's record of the settings this script varies, in each line
SETTINGS = ("feed_us", "flush_delay_us", "pinned_workers", "workers")


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
        r = subprocess.run(
            [workload, str(pes), "3000000", "300000", "16", "0"],
            env={
                **os.environ,
                **env,
                "MPROF_WORKERS": str(pes),
                "MPROF_AGG_BYTES": "4096",
                "MPROF_OUT": out,
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"aggregation_scale: {workload} {pes} failed:\n{r.stderr[-2000:]}")
        with open(out) as f:
            profile = json.load(f)
    t = rts_totals(profile)
    fwd = t.get("RecordFwd", 0)
    return {
        "ops_per_msg": t["RemoteOp"] / max(1, t["MsgSent"]),
        "records_per_msg": (t["RemoteOp"] + fwd) / max(1, t["MsgSent"]),
        "forwarded": fwd,
        "msg_alloc": t["MsgAlloc"],
        "flow_waits": t.get("FlowWait", 0),
        "wakes": t.get("Wakes", 0),
        "idle_polls": t.get("IdleCycle", 0),
        "bursts": t.get("ChanNotify", 0) + t.get("ChanDrain", 0),
        "elapsed_s": profile["elapsed_s"],
        "wall_s": wall,
        "busy_cpu_s": sum(p["cpu_s"] - p["idle_cpu_s"] for p in profile["pes"]),
        "why": {k[3:].lower(): t[k] for k in WHY if k in t},
        "settings": {k: profile["settings"][k] for k in SETTINGS if k in profile["settings"]},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="build/benchmarks/micro/rt_workload")
    ap.add_argument("--pes", default="2,16,64")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--delay-us", type=float, default=None)
    ap.add_argument(
        "--feed-us", default=None, help="MPROF_FEED_US values, comma-separated, run interleaved"
    )
    ap.add_argument("--pin", choices=("0", "1"), default=None)
    args = ap.parse_args()
    env, tags = {}, {}
    if args.delay_us is not None:
        env["MPROF_FLUSH_DELAY_US"] = str(args.delay_us)
        tags["delay_us"] = args.delay_us
    if args.pin is not None:
        env["MPROF_PIN"] = args.pin
        tags["pin"] = args.pin
    feeds = [None]
    if args.feed_us is not None:
        try:
            feeds = [float(x) for x in args.feed_us.split(",")]
        except ValueError:
            sys.exit(f"aggregation_scale: --feed-us takes microseconds, not '{args.feed_us}'")
    summary = {}
    for pes in (int(p) for p in args.pes.split(",")):
        # the settings interleaved within each repetition, so that they see the same machine
        runs = {f: [] for f in feeds}
        for _ in range(args.reps):
            for f in feeds:
                extra = {} if f is None else {"MPROF_FEED_US": f"{f:g}"}
                runs[f].append(run_once(args.workload, pes, {**env, **extra}))
        for f in feeds:
            rs = sorted(runs[f], key=lambda r: r["ops_per_msg"])
            med = rs[len(rs) // 2]
            line = {
                "pes": pes,
                **tags,
                **({} if f is None else {"feed_us": f}),
                **{k: v if k in ("why", "settings") else round(v, 3) for k, v in med.items()},
                "ops_per_msg_range": [
                    round(rs[0]["ops_per_msg"], 1),
                    round(rs[-1]["ops_per_msg"], 1),
                ],
                "busy_cpu_median_s": round(statistics.median(r["busy_cpu_s"] for r in rs), 3),
                "wall_median_s": round(statistics.median(r["wall_s"] for r in rs), 4),
            }
            print(json.dumps(line), flush=True)
            key = f"ops_per_msg_p{pes}" + ("" if f is None else f"_feed{f:g}")
            summary[key] = round(med["ops_per_msg"], 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
