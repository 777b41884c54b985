#!/usr/bin/env python3
"""Two builds of rt_workload, run alternately: the before/after comparison of a runtime change.

    interleave.py BEFORE AFTER [--reps N] [--env NAME=VALUE ...] [--before-env NAME=VALUE ...]
                  [--after-env NAME=VALUE ...] [--tag NAME=VALUE ...]
                  -- PES FIBERS MSGS BYTES [SELF]

BEFORE and AFTER are build trees (or rt_workload programs).  Each of the N rounds runs both
once, the order swapped every round, so that a slow spell of a shared machine falls on both
alike.  For each build: remote operations per second of wall time (RemoteOp summed over the
PEs over the process's wall time, start-up included), busy CPU (cpu_s - idle_cpu_s summed
over the PEs), fresh buffers (MsgAlloc) and messages (MsgSent), as sorted lists, best and
median.  The last line
is JSON: {"before": {...}, "after": {...}, "median_ratio": after's median rate / before's},
with each --tag added (labels for a series of such lines).  --env applies to both runs,
--before-env and --after-env to one side: the same build with a setting off and on, e.g.
`interleave.py build build --before-env MPROF_CARRIERS=0 -- 2 0 1000000 16 0`.
Build the tree before a change with `git worktree add /tmp/before REV` and `cmake -S
/tmp/before -B /tmp/before/build -G Ninja -DCMAKE_BUILD_TYPE=Release` (what `make build`
does), then `ninja -C /tmp/before/build rt_workload`.
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

from aggregation_scale import rts_totals  # this script's folder is on sys.path


def fail(msg):
    sys.exit(f"interleave: {msg}")


def program(path):
    p = Path(path)
    if p.is_dir():
        p = p / "benchmarks" / "micro" / "rt_workload"
    if not (p.is_file() and os.access(p, os.X_OK)):
        fail(f"{path}: no rt_workload program there (a build tree or the program itself)")
    return str(p)


def run_once(exe, args, env):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        t0 = time.perf_counter()
        r = subprocess.run(
            [exe, *args],
            env={**os.environ, **env, "MPROF_OUT": out},
            capture_output=True,
            text=True,
            timeout=600,
        )
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            fail(f"{exe} {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-1500:]}")
        with open(out) as f:
            prof = json.load(f)
    rts = rts_totals(prof)
    return {
        "rate": rts.get("RemoteOp", 0) / wall,
        "busy_cpu_s": sum(p["cpu_s"] - p["idle_cpu_s"] for p in prof["pes"]),
        "msg_alloc": rts.get("MsgAlloc", 0),
        "msg_sent": rts.get("MsgSent", 0),
    }


def pairs(items, option):
    """NAME=VALUE arguments as a dict."""
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            fail(f"{option} takes NAME=VALUE, not '{item}'")
        out[name] = value
    return out


def summary(runs):
    rates = sorted(r["rate"] for r in runs)
    busy = sorted(r["busy_cpu_s"] for r in runs)
    return {
        "rate_per_s": [round(x) for x in rates],
        "rate_best": round(rates[-1]),
        "rate_median": round(statistics.median(rates)),
        "busy_cpu_s": [round(x, 4) for x in busy],
        "busy_best_s": round(busy[0], 4),
        "busy_median_s": round(statistics.median(busy), 4),
        "msg_alloc_median": statistics.median(r["msg_alloc"] for r in runs),
        "msg_sent_median": statistics.median(r["msg_sent"] for r in runs),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--reps", type=int, default=16)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--before-env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--after-env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--tag", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("args", nargs="+", help="rt_workload's arguments (after --)")
    a = ap.parse_args()
    if a.reps < 1:
        fail("--reps must be at least 1")
    env = pairs(a.env, "--env")
    envs = {
        "before": {**env, **pairs(a.before_env, "--before-env")},
        "after": {**env, **pairs(a.after_env, "--after-env")},
    }
    exes = {"before": program(a.before), "after": program(a.after)}
    runs = {"before": [], "after": []}
    for i in range(a.reps):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for name in order:
            runs[name].append(run_once(exes[name], a.args, envs[name]))
    out = {**pairs(a.tag, "--tag")}
    out.update({name: summary(r) for name, r in runs.items()})
    for name in ("before", "after"):
        s = out[name]
        print(
            f"{name}: {s['rate_median'] / 1e6:.2f} M remote operations/s median "
            f"(best {s['rate_best'] / 1e6:.2f}), busy CPU median {s['busy_median_s']} s"
        )
    before = out["before"]["rate_median"]
    out["median_ratio"] = round(out["after"]["rate_median"] / before, 3) if before else None
    print(json.dumps(out))


if __name__ == "__main__":
    main()
