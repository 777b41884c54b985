#!/usr/bin/env python3
"""The load balance of Phylogeny's tests at 16 PEs, a thread per PE, on several inputs
(docs/measurements/chapter5-notes.md, "Phylogeny: load balance of the tests at 16 PEs").

    python3 benchmarks/phylogeny/experiments/balance.py [--runs 7] [--pes 16] [--workers 16]
        [--exe build/benchmarks/phylogeny/phylogeny] [--per-pe] -- ['ARGS' ...]

Each ARGS is one input (the program's options in one word, '' for the default input), e.g.
`-- '' --seed=2 '--species=16 --chars=40'`.  The
inputs run in rounds (every input once per round), so that the load of a shared machine falls
on all alike.  Per input: the median and range over the runs of the busiest PE's NTest over
the mean over PEs (the task stealer's target: at most 1.5), how many runs are above 1.4 (the
bound of tests/apps/test_load_balance.py), and medians of the tests in all, the busiest PE's
tests, the steals and fetches in all, the busy CPU of a mean PE (the profile's cpu_s less
idle_cpu_s) and the busiest PE's busy CPU over the mean.  Counts only: times on a machine
with fewer cores than PEs say little.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def module_stats(pe: dict, module: str) -> dict:
    recs = [o["stats"] for o in pe["objects"] if o["module"] == module]
    return {k: sum(r[k] for r in recs) for k in recs[0]}


def ratio(values) -> float:
    mean = sum(values) / len(values)
    return max(values) / mean if mean else 0.0


def one_run(exe: Path, args: list[str], pes: int, workers: int) -> dict:
    """One run's figures, from its run profile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update(MPROF_PES=str(pes), MPROF_WORKERS=str(workers), MPROF_IDLE_TIMEOUT="20")
    with tempfile.TemporaryDirectory(prefix="phylo-balance-") as tmp:
        env["MPROF_OUT"] = str(Path(tmp) / "profile.json")
        proc = subprocess.run(
            [str(exe), *args], env=env, capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            sys.exit(
                f"balance.py: {exe} {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stderr[-2000:]}"
            )
        profile = json.loads(Path(env["MPROF_OUT"]).read_text())
    phylo = [module_stats(pe, "phylogeny") for pe in profile["pes"]]
    stealer = [module_stats(pe, "taskstealer") for pe in profile["pes"]]
    tests = [s["NTest"] for s in phylo]
    busy = [pe["cpu_s"] - pe["idle_cpu_s"] for pe in profile["pes"]]
    return {
        "ratio": ratio(tests),
        "tests": sum(tests),
        "max": max(tests),
        "busiest": tests.index(max(tests)),
        "idle": sum(1 for t in tests if t == 0),
        "probe": max(s["NProbe"] for s in stealer),
        "steals": sum(s["NSteal"] for s in stealer),
        "fetches": sum(s["NFetch"] for s in phylo),
        "busy_ms": 1000 * sum(busy) / len(busy),
        "busy_ratio": ratio(busy),
        "per_pe": tests,
    }


def summary(label: str, runs: list[dict]) -> str:
    ratios = sorted(r["ratio"] for r in runs)

    def med(key):
        return statistics.median(r[key] for r in runs)

    return (
        f"[{label}] busiest/mean NTest {statistics.median(ratios):.2f} "
        f"[{ratios[0]:.2f}-{ratios[-1]:.2f}], {sum(x > 1.4 for x in ratios)} of {len(runs)} "
        f"above 1.4; tests {med('tests'):.0f}, busiest {med('max'):.0f}, steals "
        f"{med('steals'):.0f}, fetches {med('fetches'):.0f}; busy CPU per PE "
        f"{med('busy_ms'):.1f} ms, busiest/mean {med('busy_ratio'):.2f}; idle PEs "
        f"{max(r['idle'] for r in runs)}, rounds {max(r['probe'] for r in runs)}; busiest "
        f"PE {[r['busiest'] for r in runs]}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", default=[""], help="program options, one word each")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--pes", type=int, default=16)
    ap.add_argument("--workers", type=int, default=None, help="MPROF_WORKERS (default: PEs)")
    ap.add_argument("--exe", type=Path, default=ROOT / "build/benchmarks/phylogeny/phylogeny")
    ap.add_argument("--per-pe", action="store_true", help="also every run's NTest per PE")
    a = ap.parse_args()
    if a.runs < 1 or a.pes < 1 or (a.workers is not None and a.workers < 1):
        ap.error("--runs, --pes and --workers must be at least 1")
    if not a.exe.is_file():
        ap.error(f"{a.exe}: no such program (build it first)")
    results = {label: [] for label in a.inputs}
    for _ in range(a.runs):
        for label in a.inputs:
            results[label].append(one_run(a.exe, label.split(), a.pes, a.workers or a.pes))
    for label, runs in results.items():
        print(summary(label or "default input", runs))
        if a.per_pe:
            for r in runs:
                print(f"    {r['ratio']:.2f} {r['per_pe']}")


if __name__ == "__main__":
    main()
