"""benchmarks/micro/interleave.py: two rt_workload builds run alternately, each summarised."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "micro" / "interleave.py"


def _run(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_both_builds_run_every_round_and_are_summarised(cmake_build):
    build = cmake_build("build", targets=["rt_workload"])
    exe = build / "benchmarks" / "micro" / "rt_workload"
    run = _run(build, exe, "--reps", 3, "--env", "MPROF_AGG_BYTES=0", "--", 2, 0, 20000, 16, 0)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    for name in ("before", "after"):
        s = out[name]
        assert len(s["rate_per_s"]) == 3 and s["rate_per_s"] == sorted(s["rate_per_s"])
        assert s["rate_best"] == s["rate_per_s"][-1] > 0
        assert s["busy_best_s"] == s["busy_cpu_s"][0] > 0
    assert out["median_ratio"] == round(
        out["after"]["rate_median"] / out["before"]["rate_median"], 3
    )


def test_a_setting_on_one_side_only_and_tags(cmake_build):
    """The same build against itself, aggregation off on the before side only: a setting
    measured with one binary (MPROF_CARRIERS, say); the tags label the JSON line."""
    build = cmake_build("build", targets=["rt_workload"])
    run = _run(
        build,
        build,
        "--reps",
        2,
        "--before-env",
        "MPROF_AGG_BYTES=0",
        "--tag",
        "pes=2",
        "--tag",
        "what=agg",
        "--",
        2,
        0,
        5000,
        16,
        0,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["pes"] == "2" and out["what"] == "agg"
    assert out["before"]["msg_sent_median"] == 15000  # a message per invocation
    assert out["after"]["msg_sent_median"] < 15000 / 8  # aggregated (the default)
    run = _run(build, build, "--after-env", "MPROF_AGG_BYTES", "--", 2, 0, 10, 16, 0)
    assert run.returncode != 0 and "--after-env takes NAME=VALUE" in run.stderr


def test_refusals_are_one_line_errors(cmake_build, tmp_path):
    build = cmake_build("build", targets=["rt_workload"])
    run = _run(tmp_path, build, "--", 2, 0, 10, 16, 0)
    assert run.returncode != 0 and "no rt_workload program there" in run.stderr
    run = _run(build, build, "--env", "MPROF_AGG_BYTES", "--", 2, 0, 10, 16, 0)
    assert run.returncode != 0 and "--env takes NAME=VALUE" in run.stderr
    # a workload that fails (rt_workload refuses a negative count) is reported with its stderr
    run = _run(build, build, "--reps", 1, "--", 2, -5, 10, 16, 0)
    assert run.returncode != 0 and "failed" in run.stderr
    assert "Traceback" not in run.stderr
