#!/usr/bin/env python3
"""What OTF2 tracing costs (docs/tracing.md), printed as JSON on the last line.

    python benchmarks/trace/trace_overhead.py [--build build] [--reps 5]

1. Tracing off: the runtime's hot paths carry MPR_OBSERVE_HOT hooks, one load and a branch each.
   rt_micro (spawn + dispatch, remote invocations) from the normal build is compared with the
   same program built without tracing (-DMPROF_OBSERVERS=OFF, configured by this script in
   build-notrace), interleaved, best of --reps runs each.
2. Tracing on: PIPE on 2 PEs with and without MPROF_TRACE in the normal build, interleaved,
   median of --reps runs each (wall clock: on a loaded machine PIPE's idle time dominates and
   moves more than tracing costs), the trace's size and event count; and, under callgrind,
   the instructions spent in the tracing functions per event written while the run goes on,
   and once at the end (closing the archive, writing the definitions).
Timing figures on a shared 2-core VM move by several percent between runs; the ratios are
taken within one run of this script."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPE_ARGS = ["2", "20000", "5", "50", "15", "64", "1000"]


def build_notrace(build: Path) -> Path:
    tree = ROOT / "build-notrace"
    python = Path(sys.executable)
    subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(tree),
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DMPROF_OBSERVERS=OFF",
            f"-DPython3_EXECUTABLE={python}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        ["cmake", "--build", str(tree), "-j", "2", "--target", "rt_micro"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return tree


def micro(exe: Path) -> dict:
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pipe_seconds(exe: Path, trace_dir: Path | None) -> float:
    env = dict(os.environ)
    env.pop("MPROF_TRACE", None)
    if trace_dir:
        shutil.rmtree(trace_dir, ignore_errors=True)
        env["MPROF_TRACE"] = str(trace_dir)
    out = subprocess.run(
        [str(exe), *PIPE_ARGS], capture_output=True, text=True, env=env, check=True
    ).stdout
    return float(re.search(r": ([0-9.e+-]+) s", out).group(1))


def callgrind_cost(exe: Path, trace_dir: Path) -> dict:
    """Instructions inside the tracing functions (inclusive), from one callgrind run."""
    shutil.rmtree(trace_dir, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        env = dict(os.environ, MPROF_TRACE=str(trace_dir))
        small = PIPE_ARGS[:1] + ["2000"] + PIPE_ARGS[2:]
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), *small],
            env=env,
            check=True,
            capture_output=True,
        )
        text = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    per_fn = {}
    for line in text.splitlines():
        m = re.match(r"\s*([0-9,]+) \([^)]*\)\s+\S*trace\.c:(trace_\w+)", line)
        if m:
            per_fn[m.group(2)] = int(m.group(1).replace(",", ""))
    listing = subprocess.run(
        ["otf2-print", str(trace_dir / "traces.otf2")], capture_output=True, text=True, check=True
    ).stdout
    events = sum(
        1
        for line in listing.splitlines()
        if re.match(r"^(ENTER|LEAVE|MPI_SEND|MPI_RECV|METRIC) ", line)
    )
    once = per_fn.get("trace_finish", 0) + per_fn.get("trace_start", 0)
    running = sum(v for k, v in per_fn.items() if k not in ("trace_finish", "trace_start"))
    return {
        "pipe_args": small,
        "events": events,
        "instructions_per_event": running / events,
        "instructions_at_start_and_end": once,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    notrace = build_notrace(args.build)
    hooked, plain = [], []
    for _ in range(args.reps):
        hooked.append(micro(args.build / "benchmarks/micro/rt_micro"))
        plain.append(micro(notrace / "benchmarks/micro/rt_micro"))
    best = {
        "spawn_dispatch_ns": (
            min(r["spawn_dispatch_ns"] for r in hooked),
            min(r["spawn_dispatch_ns"] for r in plain),
        ),
        "remote_aggregated_per_s": (
            max(r["remote_invoke_per_s"]["aggregated"] for r in hooked),
            max(r["remote_invoke_per_s"]["aggregated"] for r in plain),
        ),
    }
    off = {
        "spawn_dispatch_ns": {
            "hooks": best["spawn_dispatch_ns"][0],
            "no_tracing_build": best["spawn_dispatch_ns"][1],
            "ratio": best["spawn_dispatch_ns"][0] / best["spawn_dispatch_ns"][1],
        },
        "remote_aggregated_per_s": {
            "hooks": best["remote_aggregated_per_s"][0],
            "no_tracing_build": best["remote_aggregated_per_s"][1],
            "ratio": best["remote_aggregated_per_s"][1] / best["remote_aggregated_per_s"][0],
        },
    }
    exe = args.build / "benchmarks/pipe/pipe"
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace"
        t_off, t_on = [], []
        for _ in range(args.reps):
            t_off.append(pipe_seconds(exe, None))
            t_on.append(pipe_seconds(exe, trace))
        size = sum(p.stat().st_size for p in trace.rglob("*") if p.is_file())
        listing = subprocess.run(
            ["otf2-print", str(trace / "traces.otf2")], capture_output=True, text=True, check=True
        ).stdout
        events = sum(
            1
            for line in listing.splitlines()
            if re.match(r"^(ENTER|LEAVE|MPI_SEND|MPI_RECV|METRIC) ", line)
        )
    m_off, m_on = statistics.median(t_off), statistics.median(t_on)
    on = {
        "pipe_args": PIPE_ARGS,
        "off_s": m_off,
        "on_s": m_on,
        "ratio": m_on / m_off,
        "trace_bytes": size,
        "events": events,
        "ns_per_event": (m_on - m_off) * 1e9 / events,
    }
    cost = (
        callgrind_cost(exe, Path(tempfile.mkdtemp()) / "trace")
        if shutil.which("valgrind")
        else None
    )
    on["callgrind"] = cost
    sd = off["spawn_dispatch_ns"]
    print(
        f"tracing off (hooks vs no-tracing build): spawn+dispatch "
        f"{sd['hooks']:.2f} vs {sd['no_tracing_build']:.2f} ns"
        f" ({sd['ratio']:.3f}x), aggregated remote invocations at "
        f"{1 / off['remote_aggregated_per_s']['ratio']:.2f}x the no-tracing build's rate"
    )
    print(
        f"tracing on (PIPE {' '.join(PIPE_ARGS)}): {on['off_s']:.4f} s -> {on['on_s']:.4f} s "
        f"({on['ratio']:.2f}x), {events} events, {size / 1e6:.1f} MB"
    )
    if cost:
        print(
            f"tracing on, callgrind (PIPE {' '.join(cost['pipe_args'])}): "
            f"{cost['instructions_per_event']:.0f} instructions per event, "
            f"{cost['instructions_at_start_and_end'] / 1e6:.1f} M once at start and end"
        )
    print(json.dumps({"benchmark": "trace_overhead", "tracing_off": off, "tracing_on": on}))


if __name__ == "__main__":
    main()
