#!/usr/bin/env python3
"""Oversubscription benchmark: more PEs than cores must not collapse.

Runs the PIPE benchmark's communication-only and computing commands at 2, 4 and 8 PEs (the
same total work: M items through a path of P nodes) and start-up/teardown at 64 and 1024 PEs,
best of several interleaved rounds, and prints one JSON object as the last line.

    oversub.py [--pipe PATH] [--workload PATH] [--rounds N] [--spin N]

It also prints the local fiber rate at 1, 2, 4 and 8 PEs (rt_workload PES FIBERS 0 16: every
PE spawns FIBERS local fibers; the rate is P * FIBERS over the run's elapsed_s from its run
profile), which multiplexing must keep.

The PIPE times are PIPE's own (the pipeline from first item to last); start-up and teardown
are wall times of the whole process (monotonic clock around the child).  The ratio of each P to the
2-PE time of the same command is what the target (<= 1.5) is about; absolute seconds depend on
the machine and on what else runs on it.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "comm": ["200000", "10", "0", "15", "100", "1000"],
    "compute": ["20000", "10", "100", "15", "100", "1000"],
}
STARTUP = ["1", "1", "0", "15", "100", "1000"]  # one item through P nodes: start-up dominates


def run(pipe, pes, args, env, wall=False):
    """Seconds of one run: PIPE's own figure (the pipeline, from its output), or with wall=True
    the whole process (start-up and teardown included)."""
    t0 = time.monotonic()
    r = subprocess.run([pipe, str(pes), *args], env=env, capture_output=True, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"oversub: {pipe} {pes} {' '.join(args)} failed: {r.stderr[-400:]}")
    if wall:
        return dt
    m = re.search(r"([0-9.]+) s\s*$", r.stdout)
    if not m:
        sys.exit(f"oversub: no time in the output of {pipe} {pes} {' '.join(args)}")
    return float(m.group(1))


def fiber_rate(workload, pes, fibers, env):
    """Local fibers per second on `pes` PEs, from the run profile's elapsed_s."""
    with tempfile.TemporaryDirectory(prefix="oversub-") as tmp:
        out = os.path.join(tmp, "profile.json")
        r = subprocess.run(
            [workload, str(pes), str(fibers), "0", "16"],
            env={**env, "MPROF_OUT": out},
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            sys.exit(f"oversub: {workload} {pes} failed: {r.stderr[-400:]}")
        with open(out) as f:
            return pes * fibers / json.load(f)["elapsed_s"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pipe", default=os.path.join(here, "../../build/benchmarks/pipe/pipe"))
    ap.add_argument(
        "--workload", default=os.path.join(here, "../../build/benchmarks/micro/rt_workload")
    )
    ap.add_argument("--fibers", type=int, default=2000000, help="local fibers per PE")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pes", default="2,4,8")
    ap.add_argument("--big", default="64,1024", help="PE counts for start-up/teardown")
    ap.add_argument("--spin", help="MPROF_SPIN for the runs (default: the runtime's)")
    a = ap.parse_args()
    env = dict(os.environ)
    env.pop("MPROF_OUT", None)
    if a.spin is not None:
        env["MPROF_SPIN"] = a.spin
    pes = [int(p) for p in a.pes.split(",")]
    big = [int(p) for p in a.big.split(",") if p]
    best = {}
    for _ in range(a.rounds):  # interleaved: every configuration once per round
        for name, args in COMMANDS.items():
            for p in pes:
                key = (name, p)
                best[key] = min(best.get(key, 1e9), run(a.pipe, p, args, env))
        for p in (1, 2, 4, 8):
            key = ("fibers", p)
            best[key] = max(best.get(key, 0), fiber_rate(a.workload, p, a.fibers, env))
        for p in big:
            key = ("startup", p)
            best[key] = min(best.get(key, 1e9), run(a.pipe, p, STARTUP, env, wall=True))
    out = {"cores": os.cpu_count(), "rounds": a.rounds}
    for name, args in COMMANDS.items():
        base = best[(name, pes[0])]
        for p in pes:
            t = best[(name, p)]
            print(f"pipe {p} {' '.join(args)}: {t:.3f} s ({t / base:.2f}x {pes[0]} PEs)")
            out[f"{name}_{p}pe_s"] = round(t, 4)
            out[f"{name}_{p}pe_ratio"] = round(t / base, 3)
    for p in (1, 2, 4, 8):
        r = best[("fibers", p)]
        print(f"local fibers at {p} PEs: {r / 1e6:.0f} M/s")
        out[f"fibers_{p}pe_per_s"] = round(r)
    for p in big:
        t = best[("startup", p)]
        print(f"pipe {p} {' '.join(STARTUP)} (start-up and teardown): {t:.3f} s")
        out[f"startup_{p}pe_s"] = round(t, 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
