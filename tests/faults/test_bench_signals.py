"""`mprof bench` and its processes: every point runs in a process group of its own, which is
killed on a timeout, after the point, and when mprof itself gets SIGINT, SIGTERM or SIGHUP;
the temporary folders go, and mprof says how many points it recorded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults_helpers import ROOT

from mprof.db.store import ProfileDB

HERE = Path(__file__).resolve().parent


def _spec(tmp_path, modes, timeout=120):
    spec = tmp_path / "sweep.toml"
    spec.write_text(f"""
program = "{HERE / "hanging_program.py"}"
command = "{{python}} {{program}} {{mode}} {tmp_path / "pids"}"
database = "sweep.db"
npes = [1]
timeout_s = {timeout}

[params]
mode = {modes}
""")
    return spec


def _start(tmp_path, spec):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {
        **os.environ,
        "TMPDIR": str(tmpdir),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "mprof", "bench", str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    ), tmpdir


def _pids(tmp_path, timeout=60):
    path = tmp_path / "pids"
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, "the hanging point never started its children"
        time.sleep(0.05)
    return [int(x) for x in path.read_text().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose (its parent may be gone and init not yet reaped it)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pids, timeout=10):
    deadline = time.monotonic() + timeout
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize(
    "sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_signal_to_mprof_kills_the_running_point_and_its_children(tmp_path, sig, code):
    spec = _spec(tmp_path, '["ok", "hang"]')
    proc, tmpdir = _start(tmp_path, spec)
    try:
        pids = _pids(tmp_path)
        assert len(pids) == 3 and all(_alive(p) for p in pids)
        assert any(p.name.startswith("mprof-bench-") for p in tmpdir.iterdir())
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert f"interrupted by {signal.Signals(sig).name}: 1 point(s) recorded" in err, err
    assert _gone(pids) == [], "the point's processes outlived mprof"
    assert list(tmpdir.iterdir()) == [], "temporary files were left behind"
    with ProfileDB(tmp_path / "sweep.db", create=False) as db:
        assert [r.params["mode"] for r in db.runs()] == ["ok"]
    # resumable: the recorded point is skipped next time (the hanging one would run again)


def test_a_timed_out_point_is_killed_with_its_children(tmp_path):
    spec = _spec(tmp_path, '["hang", "ok"]', timeout=3)
    proc, tmpdir = _start(tmp_path, spec)
    out, err = proc.communicate(timeout=120)
    pids = _pids(tmp_path, timeout=1)
    assert proc.returncode == 1, err
    assert "timed out after 3 s (its process group was killed)" in out + err
    assert "2 point(s): 1 run, 0 already recorded, 1 failed" in out
    assert _gone(pids) == []
    assert list(tmpdir.iterdir()) == []


def test_children_left_behind_by_a_finished_point_are_killed(tmp_path):
    spec = _spec(tmp_path, '["leave"]')
    proc, _ = _start(tmp_path, spec)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        left = _pids(tmp_path, timeout=1)[1:]
        survivors = _gone(left)
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert survivors == [], "a child the point left running survived it"
