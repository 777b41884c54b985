"""A modeling script cannot hang `mprof fit` (or `mprof gate --fit`): its run has a time limit
(MPROF_FIT_TIME_LIMIT_S, default 600 s), `after` and `vwait` are refused at their line, and
Ctrl-C stops a running script with one line and exit status 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from model_helpers import write_script

from mprof.cli import main
from mprof.model.script import DEFAULT_TIME_LIMIT_S, TIME_LIMIT_ENV

SCRIPT = """FitDatabase fit.db
Interface @PIPE@
Interface @GRAPH@
IgnoreTerm pipe P
"""


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize(
    "tail, line",
    [
        ("while 1 {}\n", 5),
        ("proc spin {} {\n    while 1 { set x 1 }\n}\nspin\n", 8),
    ],
)
def test_an_endless_loop_ends_at_the_time_limit(
    tmp_path, pipe_dbs, capsys, monkeypatch, tail, line, unsafe
):
    monkeypatch.setenv(TIME_LIMIT_ENV, "1")
    script = write_script(tmp_path, SCRIPT + tail)
    started = time.monotonic()
    assert main(["fit", *(["--unsafe-tcl"] if unsafe else []), str(script)]) == 2
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err.strip()
    assert err == (
        f"mprof: {script}:{line}:1: the script ran longer than its time limit of "
        f"1 s ({TIME_LIMIT_ENV}; an endless loop?)"
    ), err


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize(
    "command", ["after 100000000", "vwait forever", "after 10 {set x 1}", "after idle {set x 1}"]
)
def test_waiting_commands_are_refused_at_their_line(tmp_path, pipe_dbs, capsys, command, unsafe):
    script = write_script(tmp_path, SCRIPT + f"set y 1\n  {command}\n")
    started = time.monotonic()
    assert main(["fit", *(["--unsafe-tcl"] if unsafe else []), str(script)]) == 2
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err.strip()
    name = command.split()[0]
    assert err.startswith(
        f"mprof: {script}:6:3: {name} is not available to modeling scripts: a script cannot wait"
    ), err


def test_a_script_within_its_limit_fits(tmp_path, pipe_dbs, capsys, monkeypatch):
    monkeypatch.setenv(TIME_LIMIT_ENV, "5")
    script = write_script(
        tmp_path, SCRIPT + "set n 0\nfor {set i 0} {$i < 100000} {incr i} {incr n}\nFit\n"
    )
    assert main(["fit", str(script)]) == 0
    assert "Chi-square" in capsys.readouterr().out


def test_the_default_limit_is_generous():
    assert DEFAULT_TIME_LIMIT_S == 600


def test_ctrl_c_stops_a_running_script(tmp_path, pipe_dbs):
    script = write_script(tmp_path, SCRIPT + "puts stderr started\nwhile 1 {}\n")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mprof", "fit", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        assert proc.stderr.readline().strip() == "started"
        time.sleep(0.5)  # in the loop now
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=max(deadline - time.monotonic(), 5))
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert err.strip() == f"mprof: {script}:6:1: interrupted", err
