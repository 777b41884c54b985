"""Shared helpers of the data-structure test suites: build a structure's C test program and run
it on P PEs, returning its run profile and output."""

from __future__ import annotations

import json
import os
import subprocess


def build_program(cmake_build, target, program, sanitize=None):
    bdir = cmake_build(sanitize=sanitize, targets=[target])
    return bdir / "tests" / "lib" / program


def run_program(exe, args, pes, tmp_path, timeout=120, env_extra=None):
    out = tmp_path / f"profile-{pes}.json"
    env = dict(os.environ, MPROF_PES=str(pes), MPROF_OUT=str(out), MPROF_IDLE_TIMEOUT="20")
    env.update(env_extra or {})
    proc = subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{exe.name} {args} on {pes} PEs:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text()), proc.stdout


def run_misuse(exe, args, pes, tmp_path, timeout=60, env_extra=None):
    """Runs a misuse case of a test program; returns the finished process (its returncode,
    stdout and stderr) whatever its exit status, for the caller to check the refusal and its
    message."""
    out = tmp_path / f"misuse-{pes}.json"
    env = dict(os.environ, MPROF_PES=str(pes), MPROF_OUT=str(out), MPROF_IDLE_TIMEOUT="10")
    env.update(env_extra or {})
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
