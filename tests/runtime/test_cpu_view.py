"""benchmarks/device/cpu_view.c: a run as a machine of CPU_VIEW CPUs would make it.

The runtime sizes its default worker threads by the CPUs the process may use (its affinity
mask), and so do the scripts that choose PE counts (os.sched_getaffinity, os.cpu_count).  The
view answers those questions with CPU_VIEW CPUs, so that a 2-CPU machine rehearses the
defaults and the tests' assumptions of a 16-core one; these tests check that it does, and
that without CPU_VIEW the real answers stand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rt_helpers import clean_env

from tooling import require_tool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cpu_view(tmp_path_factory):
    cc = require_tool("cc", "gcc", "clang")
    out = tmp_path_factory.mktemp("cpu_view") / "cpu_view.so"
    src = ROOT / "benchmarks/device/cpu_view.c"
    proc = subprocess.run(
        [cc, "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(out), str(src), "-ldl"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def workload(build_dir, tmp_path, env) -> dict:
    out = tmp_path / "run.json"
    env = clean_env(MPROF_OUT=out, **env)
    del env["MPROF_WORKERS"]  # the default is what is checked
    proc = subprocess.run(
        [str(build_dir / "benchmarks/micro/rt_workload"), "16", "2000", "200", "16", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("view", [16, 1])
def test_the_runtime_takes_a_worker_per_cpu_of_the_view(build_dir, tmp_path, cpu_view, view):
    profile = workload(build_dir, tmp_path, {"LD_PRELOAD": cpu_view, "CPU_VIEW": view})
    settings = profile["settings"]
    assert settings["workers"] == view
    # hwloc reads the real units: more workers than units are left unbound
    real = len(os.sched_getaffinity(0))
    assert settings["pinned_workers"] == (view if view <= real else 0)


def test_without_a_view_the_real_cpus_stand(build_dir, tmp_path, cpu_view):
    real = len(os.sched_getaffinity(0))
    for env in ({"LD_PRELOAD": cpu_view}, {"LD_PRELOAD": cpu_view, "CPU_VIEW": "0"}, {}):
        assert workload(build_dir, tmp_path, env)["settings"]["workers"] == min(16, real)


def test_python_sees_the_view_and_binds_within_the_real_cpus(cpu_view):
    code = (
        "import os; n = len(os.sched_getaffinity(0)); c = os.cpu_count();"
        "os.sched_setaffinity(0, {5}); print(n, c, len(os.sched_getaffinity(0)))"
    )
    env = {**os.environ, "LD_PRELOAD": str(cpu_view), "CPU_VIEW": "16"}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == ["16", "16", "16"]
