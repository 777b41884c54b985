"""The runtime's own faults: a stack overflow is one line naming the PE and the fiber (then an
abort), other faults stay plain; MPROF_TRACE problems are one line, not OTF2's dozens."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from faults_helpers import fill, small_fs


def _run(exe, *args, env=None, timeout=60):
    return subprocess.run(
        [str(exe), *map(str, args)],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("workers", ["1", "2"], ids=["shared-worker", "thread-per-pe"])
def test_fiber_stack_overflow_names_the_pe_and_the_fiber(build_dir, workers):
    proc = _run(
        build_dir / "tests/c/rt_overflow",
        "fiber",
        env={"MPROF_WORKERS": workers, "MPROF_STACK_KB": "256"},
    )
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stderr)
    lines = [x for x in proc.stderr.splitlines() if x.startswith("mprof:")]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        "mprof: stack overflow on PE 1 in fiber overflow_fiber (category ov:deep)"
    ), lines
    assert ("MPROF_STACK_KB" in lines[0]) == (workers == "1")


def test_pe_main_stack_overflow_is_named(build_dir):
    proc = _run(build_dir / "tests/c/rt_overflow", "main", env={"MPROF_WORKERS": "2"})
    assert proc.returncode == -signal.SIGABRT, proc.stderr
    assert "mprof: stack overflow on PE 0 in pe_main" in proc.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_other_faults_are_not_called_overflows(build_dir, workers):
    proc = _run(build_dir / "tests/c/rt_overflow", "null", env={"MPROF_WORKERS": workers})
    assert proc.returncode == -signal.SIGSEGV, proc.stderr
    assert "stack overflow" not in proc.stderr


# -- MPROF_TRACE ---------------------------------------------------------------------------


def _traced(build_dir, trace, *args):
    return _run(
        build_dir / "benchmarks/micro/rt_workload",
        *(args or (2, 10, 10, 16)),
        env={"MPROF_TRACE": str(trace), "MPROF_PES": "2"},
    )


def test_trace_naming_a_file_is_one_line(build_dir, tmp_path):
    target = tmp_path / "afile"
    target.write_text("not a folder\n")
    proc = _traced(build_dir, target)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"mprof: MPROF_TRACE: cannot write a trace in {target}: Not a directory. This run is "
        "not traced."
    ], proc.stderr
    assert target.read_text() == "not a folder\n"


def test_trace_on_a_full_disk_is_one_line(build_dir, tmp_path):
    with small_fs(tmp_path / "small", "16k") as where:
        fill(where)
        proc = _traced(build_dir, where / "t", 2, 2000, 100, 16)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "[OTF2]" not in proc.stderr, proc.stderr
    assert lines[0].startswith("mprof: MPROF_TRACE: ") and "No space left on device" in lines[0]
