"""benchmarks/device/run.sh: the 16-core measurement run's driver, exercised here on the parts
that need no 16 cores: JSON lines into run.jsonl, a part that does not fit the budget skipped
and said so, and unknown parts refused before anything runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "device" / "run.sh"


def _run(args, out, timeout=120):
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _lines(out):
    return [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]


def test_startup_part_times_empty_runs_into_run_jsonl(cmake_build, tmp_path):
    cmake_build("build", targets=["rt_workload"])
    run = _run(["--budget", "60", "startup"], tmp_path)
    assert run.returncode == 0, run.stderr
    lines = _lines(tmp_path)
    assert lines[0]["budget_s"] == 60 and lines[0]["parts"] == "startup"
    timed = [x for x in lines if "startup" in x]
    assert {(x["pin"], x["pes"]) for x in timed} == {(p, n) for p in "10" for n in (2, 8, 16)}
    assert all(0 < x["best_s"] < 10 for x in timed)
    assert lines[-1]["part"] == "startup" and lines[-1]["rc"] == 0


def test_a_part_that_does_not_fit_the_budget_is_skipped(cmake_build, tmp_path):
    cmake_build("build", targets=["rt_workload"])
    run = _run(["--budget", "5", "studies"], tmp_path)
    assert run.returncode == 0, run.stderr
    last = _lines(tmp_path)[-1]
    assert last["part"] == "studies" and "needs 100" in last["skipped"]
    assert not (tmp_path / "studies.tgz").exists()


def test_unknown_parts_and_budgets_are_refused(tmp_path):
    run = _run(["weak"], tmp_path)
    assert run.returncode == 2 and "unknown part or option 'weak'" in run.stderr
    run = _run(["--budget", "ten", "startup"], tmp_path)
    assert run.returncode == 2 and "--budget takes seconds" in run.stderr
    run = _run(["--one", "rm"], tmp_path)
    assert run.returncode == 2 and "unknown part 'rm'" in run.stderr
    assert not (tmp_path / "run.jsonl").exists()
