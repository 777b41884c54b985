#!/usr/bin/env python3
"""Messaging costs against where the host put the two threads, the runtime beside the floor.

    placement.py [--build DIR] [--seconds S] [--rounds N] [--bands NEAR,FAR]
                 [--jsonl FILE] [--from FILE]

On a VM the cache-line round trip between two vCPUs changes from one second to the next, with
where the host runs them (on the 2-core development VM: 30-60, 90-340 or 450-720 ns), and every
cost that moves a line between two PEs changes with it.  This script measures how much of the
runtime's messaging cost follows that placement, against the same for the floor program
pair_floor (a ring of blocks per pair of threads, no runtime), and how much of what remains
follows the runtime's channel bursts (ChanNotify + ChanDrain), a count that depends on the two
PEs' relative timing.  Each round runs, two PEs on two CPUs:

  probe       pair_floor 2 1 8 0: the round trip alone (20 000 passes of one line)
  agg         MPROF_AGG_BYTES=4096 rt_workload 2 0 1200000 16 0, then a probe
  noagg       MPROF_AGG_BYTES=0 rt_workload 2 0 400000 16 0, then a probe
  pair_agg    pair_floor 2 1800000 16 4096 (as many records as agg's remote operations)
  pair_noagg  pair_floor 2 600000 16 0 (as many as noagg's)

A runtime run's round trip is the mean of the probes before and after it, and the run is kept
only if the two agree within 20 % (the placement did not change around it); a pair_floor run
measures its own.  Runs are put in three bands by their round trip (below NEAR, up to FAR,
above; default 90,400 ns, this VM's), and each case's line gives per band: runs, median busy
CPU per operation (ns), its coefficient of variation and 10-90 % range, and the median round
trip; exposed_rtt_per_op, the rise in busy CPU per operation from the middle band to the far
one divided by the rise in round trip (how many line round trips an operation waits for,
unhidden); and for the runtime cases, within the middle band, the range of the bursts, their
correlation with busy CPU, and busy CPU's coefficient of variation as measured, after a fit on
the round trip (which still varies within a band), and after a fit on the round trip and the
bursts together, with the busy CPU that goes with a burst in that fit (a correlate, not the
price of the notifications: docs/measurements/runtime-messaging.md, "Placement and bursts").
--jsonl keeps every round; --from summarises kept rounds without running anything.  One JSON
line per case, then a summary line.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from replicate_spread import bursts, run_pair, run_workload  # this folder is on sys.path


ROOT = Path(__file__).resolve().parents[2]
RUNTIME = {
    "agg": (["2", "0", "1200000", "16", "0"], "4096"),
    "noagg": (["2", "0", "400000", "16", "0"], "0"),
}
PAIRS = {"pair_agg": ["2", "1800000", "16", "4096"], "pair_noagg": ["2", "600000", "16", "0"]}
AGREE = 0.2


def fail(msg):
    sys.exit(f"placement: {msg}")


def pair_floor(build, args):
    out = run_pair(build, args, fail)
    ops = out["pes"] * out["records_per_sender"]
    return {"busy": out["busy_cpu_s"], "ops": ops, "rtt": out["rtt_ns"]}


def rt_workload(build, args, agg):
    busy, totals = run_workload(build, args, {"MPROF_AGG_BYTES": agg}, fail, timeout=120)
    ops = totals.get("RemoteOp", 0)
    if ops <= 0:
        fail(
            f"rt_workload {' '.join(args)}: its run profile counts no remote operations "
            "(a build without statistics?)"
        )
    return {"busy": busy, "ops": ops, "bursts": bursts(totals)}


def one_round(build):
    """A round's runs, each with the round trip it had (None where the probes disagree)."""
    runs = {}
    before = pair_floor(build, ["2", "1", "8", "0"])["rtt"]
    for case, (args, agg) in RUNTIME.items():
        run = rt_workload(build, args, agg)
        after = pair_floor(build, ["2", "1", "8", "0"])["rtt"]
        agree = abs(after - before) <= AGREE * min(after, before)
        run["rtt"] = (before + after) / 2 if agree else None
        runs[case] = run
        before = after
    for case, args in PAIRS.items():
        runs[case] = pair_floor(build, args)
    return runs


def read_rounds(path):
    """The rounds kept by --jsonl, each checked: a bad line is reported as FILE:LINE:COLUMN."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path}: {e}")
    rounds = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            fail(f"{path}:{n}:{getattr(e, 'colno', 1)}: not a JSON round: {e}")
        for case in [*RUNTIME, *PAIRS]:
            run = r.get(case) if isinstance(r, dict) else None
            keys = ("busy", "ops", "rtt", "bursts") if case in RUNTIME else ("busy", "ops", "rtt")
            if not isinstance(run, dict) or not all(k in run for k in keys):
                fail(f"{path}:{n}:1: a round needs {case} with {', '.join(keys)}")
            numbers = [run[k] for k in keys if not (k == "rtt" and run[k] is None)]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
                fail(f"{path}:{n}:1: {case}: {', '.join(keys)} must be numbers")
            if run["ops"] <= 0:
                fail(f"{path}:{n}:1: {case}: ops must be positive")
        rounds.append(r)
    return rounds


def band_of(rtt, near, far):
    return "near" if rtt < near else ("mid" if rtt <= far else "far")


def summarise(rounds, near, far):
    lines = []
    for case in [*RUNTIME, *PAIRS]:
        runs = [r[case] for r in rounds if r[case]["rtt"] is not None]
        line = {"case": case, "runs": len(runs)}
        medians = {}
        for band in ("near", "mid", "far"):
            sel = [r for r in runs if band_of(r["rtt"], near, far) == band]
            if not sel:
                continue
            per_op = np.array([1e9 * r["busy"] / r["ops"] for r in sel])
            q10, q90 = np.quantile(per_op, [0.1, 0.9])
            rtt = statistics.median(r["rtt"] for r in sel)
            medians[band] = (float(np.median(per_op)), rtt)
            line[band] = {
                "runs": len(sel),
                "ns_per_op": round(medians[band][0], 2),
                "cv_pct": round(100 * per_op.std() / per_op.mean(), 1),
                "ns_per_op_q10_q90": [round(q10, 2), round(q90, 2)],
                "rtt_ns": round(rtt, 1),
            }
        if "mid" in medians and "far" in medians:
            (m, rm), (f, rf) = medians["mid"], medians["far"]
            line["exposed_rtt_per_op"] = round((f - m) / (rf - rm), 4)
        mid = [r for r in runs if band_of(r["rtt"], near, far) == "mid"]
        if case in RUNTIME and len(mid) >= 4:
            busy = np.array([r["busy"] for r in mid])
            bursts = np.array([r["bursts"] for r in mid], dtype=float)
            line["mid_bursts_range"] = [int(bursts.min()), int(bursts.max())]
            # the round trip still varies within a band: priced first, then the bursts beside it
            rtt = np.array([r["rtt"] for r in mid])
            x = np.column_stack([np.ones(len(mid)), rtt])
            left_rtt = busy - x @ np.linalg.lstsq(x, busy, rcond=None)[0]
            x = np.column_stack([x, bursts])
            coef = np.linalg.lstsq(x, busy, rcond=None)[0]
            left = busy - x @ coef
            line["mid_bursts_corr"] = round(float(np.corrcoef(bursts, busy)[0, 1]), 2)
            line["mid_cv_pct"] = round(100 * busy.std() / busy.mean(), 1)
            line["mid_cv_after_rtt_pct"] = round(100 * left_rtt.std() / busy.mean(), 1)
            line["mid_cv_after_bursts_pct"] = round(100 * left.std() / busy.mean(), 1)
            line["mid_ns_per_burst"] = round(1e9 * coef[2], 1)
        lines.append(line)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="build tree (default: ours)")
    ap.add_argument("--seconds", type=float, default=0, help="run rounds for this long")
    ap.add_argument("--rounds", type=int, default=0, help="or this many rounds")
    ap.add_argument("--bands", default="90,400", help="round trips (ns) that end the bands")
    ap.add_argument("--jsonl", help="append every round to this file")
    ap.add_argument("--from", dest="source", help="summarise the rounds kept in this file")
    args = ap.parse_args()
    try:
        near, far = (float(x) for x in args.bands.split(","))
    except ValueError:
        fail(f"--bands {args.bands!r}: want two round trips in ns, e.g. 90,400")
    if not 0 < near < far:
        fail(f"--bands {args.bands!r}: want 0 < NEAR < FAR")
    if args.source:
        rounds = read_rounds(args.source)
    else:
        if args.seconds <= 0 and args.rounds <= 0:
            fail("give --seconds or --rounds (or --from a file of rounds)")
        for prog in ("pair_floor", "rt_workload"):
            if not (Path(args.build) / "benchmarks/micro" / prog).is_file():
                fail(f"{args.build}/benchmarks/micro/{prog} is missing: run make build")
        if len(os.sched_getaffinity(0)) < 2:
            fail("needs two CPUs: the round trip is between two threads on CPUs of their own")
        rounds, end = [], time.monotonic() + args.seconds
        keep = open(args.jsonl, "a") if args.jsonl else None
        while (args.rounds and len(rounds) < args.rounds) or time.monotonic() < end:
            rounds.append(one_round(args.build))
            if keep:
                keep.write(json.dumps(rounds[-1]) + "\n")
                keep.flush()
    lines = summarise(rounds, near, far)
    for line in lines:
        print(json.dumps(line), flush=True)
    summary = {"rounds": len(rounds), "bands_ns": [near, far]}
    for line in lines:
        if "exposed_rtt_per_op" in line:
            summary[f"{line['case']}_exposed_rtt_per_op"] = line["exposed_rtt_per_op"]
        if "mid_cv_after_bursts_pct" in line:
            summary[f"{line['case']}_mid_cv_pct"] = line["mid_cv_pct"]
            summary[f"{line['case']}_mid_cv_after_rtt_pct"] = line["mid_cv_after_rtt_pct"]
            summary[f"{line['case']}_mid_cv_after_bursts_pct"] = line["mid_cv_after_bursts_pct"]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
