#!/usr/bin/env python3
"""Instructions per remote invocation, counted by callgrind.

    invoke_instructions.py [--workload PATH] [--floor PATH] [--msgs M] [--top N] [--pes LIST]
                           [--bytes LIST]

Runs `rt_workload 2 0 M 16 0` (two PEs, a thread each: MPROF_WORKERS=2; PE 0 sends M remote
invocations of 16 bytes, PE 1 2M, 16 a step fiber of the workload) under callgrind for
M and 2M, and divides the difference of the two instruction counts (all threads, both PEs) by
the difference of their remote operations (RemoteOp of the run profiles): start-up, slab
allocation and the first buffers' misses cancel out, and unlike times the counts are the same
in every run.  Aggregated (MPROF_AGG_BYTES=4096) and unaggregated (MPROF_AGG_BYTES=0, a
message per invocation).  Each figure comes with callgrind's per-function breakdown (self
instructions per remote operation, the same difference) summed into parts:
  workload   the benchmark's step fibers (its loop, mp_mype, mp_npes; rt_workload.c)
  spawn      mp_spawn of the next step fiber
  invoke     mp_invoke and what sends (aggregation buffers, the backend's send)
  receive    polling: taking messages, turning records into fibers and carriers, giving
             buffers back
  dispatch   the schedule loop running the fibers (step and remote_work fibers both) and
             the carriers running their records
  other      everything else (the allocator when buffers are not pooled, the clock, ...)
and the functions of at least 1 instruction per operation.  Then `msg_floor 2 N` (the floor:
a record appended to a block of an SPSC ring per pair and dispatched through a function
pointer, no runtime; msg_floor.c) counted the same way, per record.  The last line is JSON:
  aggregated / unaggregated   {"instructions_per_op", "parts", "functions"}
  floor_instructions          per record of msg_floor
  by_pes                      with --pes: {P: {"aggregated", "unaggregated"}} for each P
  by_bytes                    with --bytes: {B: {"aggregated", "unaggregated"}} for each B

--pes 2,4,8,16 counts the same at each P, a thread per PE (MPROF_WORKERS=P): whether the
work of a remote operation grows with the number of PEs (a poll or a flush that visits every
peer would).  Counts, not times, so the figure is the same on a 2-core machine as on 16 cores
(what contention for cache lines costs there is not in it).  An unaggregated run's idle PEs
poll while callgrind runs one thread at a time, which can swamp its difference at many PEs.

--bytes 16,64,65,240,241,512 counts the same at 2 PEs with invocations of B bytes of
arguments: whether an argument byte costs the same at every size (a linear cost model prices
bytes at one rate), or a size takes another path (more than 64 bytes did: about 100
instructions more per operation at 65 than at 64).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

PARTS = {
    "workload": {"step", "due", "local_work", "remote_work", "mp_mype", "mp_npes"},
    "spawn": {"mp_spawn", "spawn_other", "spawn_general", "spawn_ready", "mpr_slot_refill"},
    "invoke": {
        "mp_invoke",
        "invoke_general",
        "invoke_filled",
        "invoke_at_once",
        "mpr_send_record",
        "send_to",
        "put_record",
        "put_header",
        "agg_open",
        "agg_flush",
        "agg_send_pending",
        "buf_get",
        "buf_new",
        "reclaim",
        "send_buf",
        "shm_send",
        "mpr_flush_due",
        "mpr_agg_sweep",
        "flush_one",
        "mpr_flush_all",
        "mpr_flush_urgent",
        "shm_returned",
        "group_send",
        "chan_push",
        "chan_publish",
    },
    "receive": {
        "mpr_poll",
        "shm_take",
        "net_take",
        "shm_processed",
        "chan_release",
        "shm_pending",
        "mpr_machine_take",
        "mpr_run_direct",
        "mpr_carrier_done",
    },
    "dispatch": {
        "mpr_schedule_loop",
        "run_ready",
        "periodic",
        "run_full",
        "run_waited",
        "mpr_enable_slow",
        "select_round_robin",
        "run_carrier",
        "carrier_frame",
        "run_carried_slow",
    },
}


def fail(msg):
    sys.exit(f"invoke_instructions: {msg}")


def base_name(fn):
    """A function's name without GCC's clone suffixes (.part.0, .isra.0, .cold) and callgrind's
    recursion marks ('2)."""
    return re.split(r"[.']", fn, maxsplit=1)[0]


def annotate(out_file, fail=fail):
    """{(function, object file): self instructions} of a callgrind output file, each function
    by its base_name (work_inflation.py uses the object file too)."""
    r = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", out_file],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        fail(f"callgrind_annotate failed:\n{r.stderr[-1000:]}")
    fns = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        rest, obj = m.group(2), ""
        if rest.endswith("]") and " [" in rest:
            rest, obj = rest.rsplit(" [", 1)
        if ":" not in rest:
            continue
        key = (base_name(rest.split(":", 1)[1]), obj.rstrip("]"))
        fns[key] = fns.get(key, 0) + int(m.group(1).replace(",", ""))
    return fns


def functions(out_file):
    """Self instructions per function of a callgrind output file."""
    fns = {}
    for (name, _), n in annotate(out_file).items():
        fns[name] = fns.get(name, 0) + n
    return fns


def callgrind(cmd, env, out, toggle=None, fail=fail, where=""):
    """Runs cmd under callgrind into the output file `out`: (instructions collected, the
    completed process).  `where` goes into the failure message (work_inflation.py: the PEs)."""
    vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if toggle:
        vg.append(f"--toggle-collect={toggle}")
    r = subprocess.run(vg + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} failed under callgrind{where}:\n{r.stderr[-2000:]}")
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if not m:
        fail(f"no instruction count from callgrind:\n{r.stderr[-1000:]}")
    return int(m.group(1)), r


def counted(cmd, env, tmp, tag, toggle=None):
    """(total instructions, per-function self instructions) of one run under callgrind."""
    out = os.path.join(tmp, f"callgrind.{tag}")
    total, _ = callgrind(cmd, env, out, toggle)
    return total, functions(out)


def remote_ops(profile):
    with open(profile) as f:
        pes = json.load(f)["pes"]
    return sum(o["stats"]["RemoteOp"] for p in pes for o in p["objects"] if o["module"] == "rts")


def summarise(a, b, ops, top):
    """Per-operation parts and functions of the difference of runs a and b."""
    diff = {k: (b[1].get(k, 0) - a[1].get(k, 0)) / ops for k in set(a[1]) | set(b[1])}
    parts = {p: 0.0 for p in [*PARTS, "other"]}
    for fn, v in diff.items():
        parts[next((p for p, names in PARTS.items() if fn in names), "other")] += v
    fns = {k: round(v, 1) for k, v in sorted(diff.items(), key=lambda kv: -kv[1]) if v >= top}
    return {
        "instructions_per_op": round((b[0] - a[0]) / ops, 1),
        "parts": {k: round(v, 1) for k, v in parts.items()},
        "functions": fns,
    }


def workload(exe, msgs, agg_bytes, tmp, top, pes=2, nbytes=16):
    runs = []
    for m in (msgs, 2 * msgs):
        profile = os.path.join(tmp, f"profile.{agg_bytes}.{m}.json")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
        # no category sampler: its signals come per millisecond of CPU, which valgrind
        # stretches some 50-fold (overhead.py does the same)
        env.update(
            MPROF_AGG_BYTES=str(agg_bytes),
            MPROF_WORKERS=str(pes),
            MPROF_OUT=profile,
            MPROF_SAMPLE_US="0",
        )
        total, fns = counted(
            [exe, str(pes), "0", str(m), str(nbytes), "0"],
            env,
            tmp,
            f"{pes}.{agg_bytes}.{m}.{nbytes}",
        )
        runs.append(((total, fns), remote_ops(profile)))
    (a, ops_a), (b, ops_b) = runs
    if ops_b <= ops_a:
        fail(f"RemoteOp did not grow with MSGS ({ops_a}, {ops_b})")
    return summarise(a, b, ops_b - ops_a, top)


def floor(exe, records, tmp):
    a = counted([exe, "2", str(records)], dict(os.environ), tmp, "floor.a", toggle="turns")
    b = counted([exe, "2", str(2 * records)], dict(os.environ), tmp, "floor.b", toggle="turns")
    return round((b[0] - a[0]) / (2 * records), 1)


def int_list(option, text, what, lo, hi):
    """The comma-separated integers of an option, each in [lo, hi]."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        fail(f"{option} takes comma-separated {what} (got {text!r})")
    if any(v < lo or v > hi for v in values):
        fail(f"{option}: each must be {lo}-{hi} (got {text})")
    return values


def show(name, r):
    parts = ", ".join(f"{k} {v:.1f}" for k, v in r["parts"].items())
    print(f"{name}: {r['instructions_per_op']:.1f} instructions per remote operation ({parts})")
    for fn, v in r["functions"].items():
        print(f"    {v:8.1f}  {fn}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "../.."))
    micro = os.path.join(root, "build/benchmarks/micro")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default=os.path.join(micro, "rt_workload"))
    ap.add_argument("--floor", default=os.path.join(micro, "msg_floor"))
    ap.add_argument("--msgs", type=int, default=20000, help="M: runs of M and 2M (default 20000)")
    ap.add_argument(
        "--top",
        type=float,
        default=1.0,
        help="list functions of at least this many instructions per operation",
    )
    ap.add_argument(
        "--pes", default="", help="comma-separated PE counts to count at as well, a thread per PE"
    )
    ap.add_argument(
        "--bytes", default="", help="comma-separated argument sizes to count at as well, at 2 PEs"
    )
    a = ap.parse_args()
    if a.msgs < 1:
        fail(f"--msgs must be at least 1 (got {a.msgs})")
    pes = int_list("--pes", a.pes, "PE counts", 2, 1024)
    sizes = int_list("--bytes", a.bytes, "argument sizes", 0, 1024)  # MP_FIBER_ARGS_MAX
    out, by_bytes = {}, {}
    with tempfile.TemporaryDirectory(prefix="invoke_instructions.") as tmp:
        agg = workload(a.workload, a.msgs, 4096, tmp, a.top)
        unagg = workload(a.workload, a.msgs, 0, tmp, a.top)
        fl = floor(a.floor, 5 * a.msgs, tmp)
        for p in pes:
            out[str(p)] = {
                "aggregated": workload(a.workload, a.msgs, 4096, tmp, a.top, p),
                "unaggregated": workload(a.workload, a.msgs, 0, tmp, a.top, p),
            }
        for b in sizes:
            by_bytes[str(b)] = {
                "aggregated": workload(a.workload, a.msgs, 4096, tmp, a.top, nbytes=b),
                "unaggregated": workload(a.workload, a.msgs, 0, tmp, a.top, nbytes=b),
            }
    show("aggregated (MPROF_AGG_BYTES=4096)", agg)
    show("unaggregated (MPROF_AGG_BYTES=0)", unagg)
    print(f"floor (msg_floor): {fl:.1f} instructions per record")
    for p, r in out.items():
        print(
            f"{p} PEs, a thread each: {r['aggregated']['instructions_per_op']:.1f} aggregated, "
            f"{r['unaggregated']['instructions_per_op']:.1f} unaggregated instructions per "
            "remote operation"
        )
    for b, r in by_bytes.items():
        print(
            f"{b} bytes of arguments: {r['aggregated']['instructions_per_op']:.1f} aggregated, "
            f"{r['unaggregated']['instructions_per_op']:.1f} unaggregated instructions per "
            "remote operation"
        )
    result = {"aggregated": agg, "unaggregated": unagg, "floor_instructions": fl}
    if out:
        result["by_pes"] = out
    if by_bytes:
        result["by_bytes"] = by_bytes
    print(json.dumps(result))


if __name__ == "__main__":
    main()
