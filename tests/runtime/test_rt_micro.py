"""benchmarks/micro/rt_micro runs and reports every figure issue 2 asks for.

Only the output's shape and sanity are checked here: the speed targets are ratios printed by
`make bench`, not asserted by tests on this shared machine."""

import json
import subprocess

FIGURES = ["floor_ns", "spawn_dispatch_ns", "spawn_over_floor", "continuation_ns",
           "counter_wait_ns", "aggregation_speedup", "aggregated_bytes_per_s"]


def test_rt_micro_prints_every_figure_as_json(cmake_build):
    bdir = cmake_build("build", targets=["rt_micro"])
    run = subprocess.run([str(bdir / "benchmarks" / "micro" / "rt_micro"), "16"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    for name in FIGURES:
        assert figures[name] > 0, name
    rates = figures["remote_invoke_per_s"]
    assert rates["aggregated"] > 0 and rates["unaggregated"] > 0
    assert abs(figures["spawn_over_floor"]
               - figures["spawn_dispatch_ns"] / figures["floor_ns"]) < 0.01
