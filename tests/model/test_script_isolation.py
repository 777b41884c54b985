"""A modeling script runs in a child process (mprof.model.isolate): a script that kills its Tcl
interpreter is a failed script (exit 2, one line naming it), not a crash of mprof, and what
the script and the fits print arrives in order, also where standard output is a pipe."""

from __future__ import annotations

import json
import subprocess
import sys

from model_helpers import write_script

from mprof.cli import main

SCRIPT = """FitDatabase fit.db
Interface @PIPE@
Interface @GRAPH@
IgnoreTerm pipe P
"""
# --unsafe-tcl: the script sends its own process a signal, as Tcl's panic does
KILL_SELF = "exec kill -{sig} [pid]\n"


def fit_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "mprof", "fit", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_tcl_panic_on_a_value_past_2gb_is_a_failed_script(tmp_path):
    # Tcl cannot hold a value of 2 GB or more: it panics (abort), whatever the interpreter
    script = write_script(
        tmp_path, "puts started\nset s [string repeat x 1100000000]\nappend s $s\n"
    )
    r = fit_cli(script)
    assert r.returncode == 2, r.stderr
    assert r.stdout == "started\n"
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"mprof: {script}: the script's interpreter died (SIGABRT). Tcl gave up"
    ), r.stderr
    assert "Traceback" not in r.stderr


def test_fits_before_the_crash_are_printed_and_saved(tmp_path, pipe_dbs):
    script = write_script(
        tmp_path,
        SCRIPT + "SaveModel model.json\nFit\nputs between\n" + KILL_SELF.format(sig="SEGV"),
    )
    r = fit_cli("--unsafe-tcl", script)
    assert r.returncode == 2, r.stderr
    out = r.stdout
    assert out.index("Chi-square") < out.index("between"), out
    assert r.stderr.strip().splitlines()[-1] == (
        f"mprof: {script}: the script's interpreter died (SIGSEGV). A crash in the "
        "interpreter. Fits before that point were printed and saved (SaveModel)."
    )
    saved = json.loads((tmp_path / "model.json").read_text())
    assert saved["parameters"]


def test_script_output_keeps_its_place_in_a_pipe(tmp_path, pipe_dbs):
    # the script's `puts` and the fit's lines reach the parent through one pipe, in order
    script = write_script(tmp_path, SCRIPT + "puts before\nFit\nputs -nonewline after\n")
    r = fit_cli(script)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "before" and lines[-1] == "after", r.stdout
    assert any(line.startswith("Chi-square") for line in lines[1:-1])


def test_in_process_callers_see_the_childs_output(tmp_path, pipe_dbs, capsys):
    # mprof used as a library (or a test) with sys.stdout replaced still gets every line
    script = write_script(tmp_path, SCRIPT + "Fit\n")
    assert main(["fit", "--json", str(script)]) == 0
    captured = capsys.readouterr()
    fit = json.loads(captured.out.strip().splitlines()[-1])
    assert set(fit["parameters"]) == {"pipe:Comp", "graph:P", "graph:Op", "graph:Data"}, captured


def test_errors_in_the_child_keep_their_place(tmp_path, pipe_dbs, capsys):
    script = write_script(tmp_path, SCRIPT + "IgnoreTerm pipe Nope\n")
    assert main(["fit", str(script)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mprof: {script}:5:"), err


def test_gate_fit_reports_a_dying_script(tmp_path, pipe_dbs):
    fit_db, _ = pipe_dbs
    script = write_script(tmp_path, SCRIPT + "Fit\n" + KILL_SELF.format(sig="ABRT"))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mprof",
            "gate",
            "--baseline",
            str(fit_db),
            "--candidate",
            str(fit_db),
            "--fit",
            str(script),
            "--unsafe-tcl",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "the script's interpreter died (SIGABRT)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
