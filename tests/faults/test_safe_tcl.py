"""Modeling scripts run in a safe Tcl interpreter: pure Tcl and the directives; commands that
reach files, processes or the network are errors at their line and have no effect, unless the
user trusts the script (`--unsafe-tcl`)."""

from __future__ import annotations

import numpy as np
import pytest
from faults_helpers import assert_one_line_error, run_mprof

from mprof.errors import MprofError
from mprof.model.script import ModelingScript

FORBIDDEN = [
    ("exec touch {victim}", "exec"),
    ("set f [open {victim} w]", "open"),
    ("file delete -force {keep}", "file delete"),
    ("file mkdir {victim}", "file mkdir"),
    ("file exists {keep}", "file exists"),
    ("socket localhost 22", "socket"),
    ("load libc.so.6", "load"),
    ("cd /", "cd"),
    ("pwd", "pwd"),
    ("glob *", "glob"),
    ("exit 0", "exit"),
    ("encoding system", "encoding"),
]


@pytest.mark.parametrize("command,name", FORBIDDEN, ids=[n for _, n in FORBIDDEN])
def test_commands_reaching_outside_are_refused_at_their_line(tmp_path, command, name):
    keep = tmp_path / "keep.txt"
    keep.write_text("precious\n")
    victim = tmp_path / "victim"
    script = tmp_path / "model.tcl"
    script.write_text(
        "set a 1\nproc step {} {\n  "
        + command.format(victim=victim, keep=keep)
        + "\n}\nforeach i {1} {\n  step\n}\n"
    )
    with pytest.raises(MprofError) as info:
        ModelingScript(script).run()
    text = str(info.value)
    assert text.startswith(f"{script}:3:3: {name} is not available to modeling scripts"), text
    assert "--unsafe-tcl" in text
    assert keep.read_text() == "precious\n" and not victim.exists()


def test_hidden_commands_cannot_be_reached_through_interp(tmp_path):
    script = tmp_path / "model.tcl"
    victim = tmp_path / "victim"
    script.write_text(f"interp invokehidden {{}} exec touch {victim}\n")
    with pytest.raises(MprofError, match=r"model.tcl:1:1: .*not allowed to invoke hidden"):
        ModelingScript(script).run()
    for attempt in (
        f"interp create x\nx eval {{exec touch {victim}}}\n",
        f"interp expose {{}} exec\nexec touch {victim}\n",
    ):
        script.write_text(attempt)
        with pytest.raises(MprofError):
            ModelingScript(script).run()
    assert not victim.exists()


def test_pure_tcl_and_path_arithmetic_work(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("MPROF_SCRIPT_SETTING", "42")
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    script = tmp_path / "model.tcl"
    script.write_text(
        "proc sq {x} { return [expr {$x * $x}] }\n"
        "set d [dict create a [sq 3]]\n"
        "foreach w {x y} { lappend l [string toupper $w] }\n"
        'puts "[dict get $d a] $l [file join a b.db] [file rootname b.db] [file tail /p/q]"\n'
        'puts "$::env(MPROF_SCRIPT_SETTING) [info exists ::env(SECRET_TOKEN)]"\n'
        "FitDatabase nosuch.db\n"
    )
    with pytest.raises(MprofError, match="model.tcl:6:1: .*nosuch.db"):
        ModelingScript(script).run()
    out = capfd.readouterr().out
    assert "9 X Y a/b.db b q" in out and "42 0" in out


def test_unsafe_tcl_gives_full_tcl(tmp_path):
    victim = tmp_path / "victim"
    script = tmp_path / "model.tcl"
    script.write_text(f"exec touch {victim}\n")
    proc = run_mprof("fit", script)
    assert_one_line_error(proc, f"{script}:1:1: exec is not available")
    assert not victim.exists()
    proc = run_mprof("fit", "--unsafe-tcl", script)
    assert victim.exists()
    assert_one_line_error(proc, "no fit database")


def test_gate_fit_runs_the_script_safely(tmp_path):
    from gate_synth import write_db

    rng = np.random.default_rng(2)
    base = write_db(tmp_path / "b.db", rng, reps=4)
    cand = write_db(tmp_path / "c.db", rng, reps=4)
    victim = tmp_path / "victim"
    script = tmp_path / "gate.tcl"
    script.write_text(f"exec touch {victim}\nFit\n")
    proc = run_mprof("gate", "--baseline", base, "--candidate", cand, "--fit", script)
    assert_one_line_error(proc, "gate.tcl:1:1: exec is not available to modeling scripts")
    assert not victim.exists()
    proc = run_mprof(
        "gate", "--baseline", base, "--candidate", cand, "--fit", script, "--unsafe-tcl"
    )
    assert victim.exists()


def test_source_reads_files_beside_the_script_only(tmp_path, capfd):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.tcl").write_text("proc twice {x} {\n  return [expr {2 * $x}]\n}\n")
    (tmp_path / "lib" / "broken.tcl").write_text("set a 1\n  exec ls\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.tcl"
    outside.write_text("puts leaked\n")
    script = tmp_path / "model.tcl"
    script.write_text("source lib/helpers.tcl\nputs [twice 21]\nFitDatabase nosuch.db\n")
    with pytest.raises(MprofError, match="model.tcl:3:1: .*nosuch.db"):
        ModelingScript(script).run()
    assert "42" in capfd.readouterr().out
    script.write_text("set x 1\nsource lib/broken.tcl\n")
    with pytest.raises(MprofError, match=r"broken.tcl:2:3: exec is not available"):
        ModelingScript(script).run()
    for path in (f"../{outside.name}", str(outside), "/etc/hostname"):
        script.write_text(f"set x 1\nsource {path}\n")
        with pytest.raises(
            MprofError,
            match=r"model.tcl:2:1: source: .* is outside the "
            "script's folder",
        ):
            ModelingScript(script).run()
    assert "leaked" not in capfd.readouterr().out
