"""`mprof bench`: sweeps, resumption, failure reports, timeouts."""

import subprocess
import sys
from pathlib import Path

import pytest

from mprof.bench.spec import load_spec
from mprof.cli import main
from mprof.db.store import Condition, ProfileDB
from mprof.errors import MprofError

HERE = Path(__file__).resolve().parent


def write_spec(tmp_path, fail="[0]", extra=""):
    spec = tmp_path / "sweep.toml"
    spec.write_text(f"""
program = "{HERE / "fake_program.py"}"
command = "{{python}} {{program}} {{npes}} {{work}} {{fail}} {tmp_path / "count.txt"}"
database = "out/sweep.db"
npes = [1, 2]
repetitions = 2
timeout_s = 20
{extra}

[params]
work = [10, 20]
fail = {fail}

[env]
MPROF_AGG_BYTES = ["0", "1000"]
""")
    return spec


def invocations(tmp_path):
    count = tmp_path / "count.txt"
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_sweep_records_every_point_and_resumes(tmp_path, capsys):
    spec = write_spec(tmp_path)
    assert main(["bench", str(spec)]) == 0
    assert invocations(tmp_path) == 2 * 2 * 2 * 2  # npes x work x env x repetitions
    out = capsys.readouterr().out
    assert "16 point(s): 16 run, 0 already recorded, 0 failed" in out
    with ProfileDB(tmp_path / "out/sweep.db") as db:
        runs = db.runs()
        assert len(runs) == 16
        agg = db.runs([Condition.parse("agg_bytes=1000"), Condition.parse("npes=2")])
        assert len(agg) == 4 and all(r.params["work"] in (10, 20) for r in agg)
    # Second invocation: nothing left to do.
    assert main(["bench", str(spec)]) == 0
    assert invocations(tmp_path) == 16
    assert "0 run, 16 already recorded" in capsys.readouterr().out


def test_interrupted_sweep_resumes_only_missing_points(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    from mprof.bench.sweep import run_point

    points = spec.points()
    spec.database.parent.mkdir(parents=True)
    with ProfileDB(spec.database) as db:
        for point in points[:5]:  # as if the sweep had been killed after five runs
            assert run_point(spec, point, db) is None
    assert invocations(tmp_path) == 5
    assert main(["bench", str(tmp_path / "sweep.toml")]) == 0
    assert invocations(tmp_path) == 16
    with ProfileDB(spec.database) as db:
        assert len(db.runs()) == 16


def test_failures_are_reported_and_sweep_goes_on(tmp_path, capsys):
    spec = write_spec(tmp_path, fail="[0, 1, 2]")
    assert main(["bench", str(spec)]) == 1
    captured = capsys.readouterr()
    assert "48 point(s): 16 run, 0 already recorded, 32 failed" in captured.out
    assert "exit code 3" in captured.err and "simulated crash" in captured.err
    assert "bad run profile" in captured.err and "truncated" in captured.err
    with ProfileDB(tmp_path / "out/sweep.db") as db:
        assert len(db.runs()) == 16
    # Failed points are not recorded, so a rerun retries (only) them.
    before = invocations(tmp_path)
    assert main(["bench", str(spec)]) == 1
    assert invocations(tmp_path) - before == 32


def test_timeout(tmp_path, capsys):
    spec = tmp_path / "t.toml"
    spec.write_text(f"""
program = "{HERE / "fake_program.py"}"
command = "{{python}} {{program}} {{npes}} 1 3"
database = "t.db"
npes = [1]
timeout_s = 0.5
""")
    assert main(["bench", str(spec)]) == 1
    assert "timed out after 0.5 s" in capsys.readouterr().err


def test_dry_run_and_spec_errors(tmp_path, capsys):
    spec = write_spec(tmp_path)
    assert main(["bench", "--dry-run", str(spec)]) == 0
    assert "fake_program.py 2 20 0" in capsys.readouterr().out
    assert not (tmp_path / "out/sweep.db").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('program = "x"\ndatabase = "d.db"\nnpes = [0]\n')
    with pytest.raises(MprofError, match=r"npes: expected a whole number in \[1, 4096\]"):
        load_spec(bad)
    bad.write_text('program = "x"\nnpes = [1]\n')
    with pytest.raises(MprofError, match="missing required key 'database'"):
        load_spec(bad)
    bad.write_text('npes = [1]\nprogram = "x\n')
    with pytest.raises(MprofError, match=r"bad\.toml:2:13: invalid TOML: Illegal character"):
        load_spec(bad)
    bad.write_text('npes = [1]\nprogram = "x"\nb = [\n')  # cut off: the place is the end
    with pytest.raises(MprofError, match=r"bad\.toml:4:1: invalid TOML: Invalid value"):
        load_spec(bad)
    # brackets in strings and comments open nothing; 64 levels of arrays are allowed
    deep = "[" * 64 + "]" * 64
    bad.write_text(
        'npes = [1]\ndatabase = "d.db"\n# [[[[\ndescription = "[[[["\n'
        f'program = """\n[[[\n"""\n[params]\nz = {deep}\n'
    )
    with pytest.raises(MprofError, match=r"bad\.toml:9:5: params\.z: values must be numbers or"):
        load_spec(bad)
    bad.write_text(f"npes = [1]\nz = [{deep}]\n")
    with pytest.raises(MprofError, match=r"bad\.toml:2:69: invalid TOML: arrays or inline "):
        load_spec(bad)
    bad.write_text('program = "x"\ndatabase = "d.db"\nnpes = [1]\ncommand = "{program} {nope}"\n')
    assert main(["bench", str(bad)]) == 2
    assert "unknown placeholder 'nope'" in capsys.readouterr().err


def _npes_spec(tmp_path, npes_arg: str, npes: list[int]):
    spec = tmp_path / "n.toml"
    spec.write_text(f"""
program = "{HERE / "fake_program.py"}"
command = "{{python}} {{program}} {npes_arg} 1 0"
database = "n.db"
npes = {npes}
""")
    return spec


def test_npes_reaches_the_program_or_the_point_fails(tmp_path, capsys):
    # a command without {npes}: the program takes MPROF_PES, and the run is recorded right
    assert main(["bench", str(_npes_spec(tmp_path, "env", [2, 3]))]) == 0
    with ProfileDB(tmp_path / "n.db", create=False) as db:
        assert sorted(r.npes for r in db.runs()) == [2, 3]
    # a command that ignores the point's PE count: refused, never recorded as npes=1
    (tmp_path / "n.db").unlink()
    assert main(["bench", str(_npes_spec(tmp_path, "1", [2]))]) == 1
    assert "ran on 1 PE(s), but the point asks for npes=2" in capsys.readouterr().err
    with ProfileDB(tmp_path / "n.db", create=False) as db:
        assert db.runs() == []


def test_oversubscribed_points_are_warned_and_recorded(tmp_path, capsys):
    from mprof.bench.sweep import online_cores

    over = online_cores() + 1
    assert main(["bench", str(_npes_spec(tmp_path, "{npes}", [1, over]))]) == 0
    assert f"npes={over} exceed the {online_cores()} online core(s)" in capsys.readouterr().err
    with ProfileDB(tmp_path / "n.db", create=False) as db:
        flagged = {r.npes: r.settings.get("oversubscribed") for r in db.runs()}
    assert flagged == {1: None, over: 1}


# -- a spec that cannot work is refused before anything runs or any database is created ------


def test_placeholder_typo_is_caught_before_the_database_exists(tmp_path, capsys):
    spec = write_spec(tmp_path).read_text().replace("{work}", "{wrk}")
    (tmp_path / "sweep.toml").write_text(spec)
    assert main(["bench", str(tmp_path / "sweep.toml")]) == 2
    err = capsys.readouterr().err
    assert "unknown placeholder 'wrk'" in err and "did you mean {work}?" in err, err
    assert not (tmp_path / "out").exists() and invocations(tmp_path) == 0
    assert main(["bench", "--dry-run", str(tmp_path / "sweep.toml")]) == 2
    (tmp_path / "sweep.toml").write_text(spec.replace("{wrk}", "{work"))
    assert main(["bench", str(tmp_path / "sweep.toml")]) == 2
    assert "literal braces" in capsys.readouterr().err


@pytest.mark.parametrize(
    "program, command, message",
    [
        ("missing.py", "{python} {program} {npes} {work} {fail}", "missing.py does not exist"),
        ("fake_program.py", "./no-such-tool {npes}", "no-such-tool does not exist"),
        (
            "fake_program.py",
            "no-such-tool-on-path {npes}",
            "'no-such-tool-on-path' not found on PATH",
        ),
        ("fake_program.py", "{program} {npes} {work} {fail}", "is not an executable file"),
    ],
)
def test_missing_program_stops_at_once(tmp_path, capsys, program, command, message):
    spec = write_spec(tmp_path).read_text()
    spec = spec.replace(str(HERE / "fake_program.py"), str(HERE / program))
    spec = spec.replace(spec.splitlines()[2], f'command = "{command}"')
    (tmp_path / "sweep.toml").write_text(spec)
    assert main(["bench", str(tmp_path / "sweep.toml")]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "FAILED" not in err and not (tmp_path / "out").exists()


def test_dry_run_lists_only_points_not_yet_recorded(tmp_path, capsys):
    spec = load_spec(write_spec(tmp_path))
    from mprof.bench.sweep import run_point

    points = spec.points()
    spec.database.parent.mkdir(parents=True)
    with ProfileDB(spec.database) as db:
        for point in points[:5]:
            assert run_point(spec, point, db) is None
    capsys.readouterr()
    assert main(["bench", "--dry-run", str(tmp_path / "sweep.toml")]) == 0
    out, err = capsys.readouterr()
    listed = out.splitlines()
    assert len(listed) == 11 and all(p.describe() in "".join(listed) for p in points[5:])
    assert not any(line.endswith(f"# {points[0].describe()}") for line in listed)
    assert "11 of 16 point(s) to run; 5 already recorded" in err
    assert invocations(tmp_path) == 5


# -- outside a terminal: plain, complete lines ---------------------------------------------


def test_progress_outside_a_terminal_is_plain_lines(tmp_path):
    long_value = "v" * 150  # a line far wider than rich's default 80 columns
    spec = (
        write_spec(tmp_path, fail="[0, 1]")
        .read_text()
        .replace(
            'MPROF_AGG_BYTES = ["0", "1000"]', f'MPROF_AGG_BYTES = ["0"]\nLONG = ["{long_value}"]'
        )
        .replace("npes = [1, 2]", "npes = [1]")
    )
    (tmp_path / "sweep.toml").write_text(spec)
    cmd = [sys.executable, "-m", "mprof", "bench", str(tmp_path / "sweep.toml")]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert not any(ch in proc.stderr for ch in "━\x1b"), proc.stderr  # no bar, no colour
    assert sum(line.startswith("bench ") and line.endswith(": ok") for line in lines) == 4
    assert sum(": FAILED: exit code 3" in line for line in lines) == 4
    assert all(f"LONG={long_value}" in line for line in lines if line.startswith("bench "))
    # fully recorded: no empty 0/0 bar either
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert "0/0" not in proc.stderr and "━" not in proc.stderr, proc.stderr


def test_repetitions_are_interleaved(tmp_path):
    # every configuration runs once before any runs again: a slow spell of the machine falls
    # on different configurations in different repetitions
    points = load_spec(write_spec(tmp_path)).points()
    reps = [p.repetition for p in points]
    assert reps == sorted(reps) and len(set(reps)) > 1
    first = [(p.npes, p.params, p.env) for p in points if p.repetition == 0]
    second = [(p.npes, p.params, p.env) for p in points if p.repetition == 1]
    assert first == second and len(first) == len({str(c) for c in first})


def test_several_sweeps_run_interleaved_into_their_own_databases(tmp_path, capsys):
    # a test set given with its fit set is measured round by round with it, not after it
    fit = write_spec(tmp_path)
    test = tmp_path / "test.toml"
    test.write_text(
        fit.read_text()
        .replace('"out/sweep.db"', '"out/test.db"')
        .replace("npes = [1, 2]", "npes = [1]")
        .replace("work = [10, 20]", "work = [30]")
        .replace("repetitions = 2", "repetitions = 3")
    )
    capsys.readouterr()
    assert main(["bench", str(fit), str(test)]) == 0
    out = capsys.readouterr().out
    assert "16 point(s): 16 run, 0 already recorded, 0 failed" in out
    assert "6 point(s): 6 run, 0 already recorded, 0 failed" in out
    with ProfileDB(tmp_path / "out/sweep.db") as db:
        assert {r.params["work"] for r in db.runs()} == {10, 20} and len(db.runs()) == 16
    with ProfileDB(tmp_path / "out/test.db") as db:
        assert {r.params["work"] for r in db.runs()} == {30} and len(db.runs()) == 6
    # invocation order: fit's round 0 (8 points), test's round 0 (2), fit's round 1, test's
    # round 1, then test's round 2 alone
    work = [line.split()[1] for line in (tmp_path / "count.txt").read_text().splitlines()]
    is_test = [w == "30" for w in work]
    assert is_test == [False] * 8 + [True] * 2 + [False] * 8 + [True] * 4


def test_several_sweeps_cannot_share_a_database_or_take_db(tmp_path, capsys):
    spec = write_spec(tmp_path)
    assert main(["bench", str(spec), str(spec)]) == 2
    assert "same database" in capsys.readouterr().err
    assert main(["bench", str(spec), str(spec), "--db", str(tmp_path / "x.db")]) == 2
    assert "one spec" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "out").exists()


def probe_spec(tmp_path, values, patience_s=30):
    state = tmp_path / "probe-state.txt"
    state.write_text("\n".join(map(str, values)) + "\n")
    return (
        write_spec(
            tmp_path,
            extra=f"""
[probe]
command = "{{python}} {HERE / "fake_probe.py"} {state}"
tolerance = 0.3
patience_s = {patience_s}
""",
        )
        .read_text()
        .replace("npes = [1, 2]", "npes = [1]")
    )


def probe_pairs(db_path):
    with ProfileDB(db_path) as db:
        return {run_id: doc["bench"]["probe_s"] for run_id, doc in db.documents()}


def test_probe_values_are_recorded_with_every_run(tmp_path, capsys):
    spec = tmp_path / "sweep.toml"
    spec.write_text(probe_spec(tmp_path, [1.0]))
    assert main(["bench", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "8 point(s): 8 run" in out and "probe: at its best 1 s busy CPU; 0 extra" in out
    pairs = probe_pairs(tmp_path / "out/sweep.db")
    assert len(pairs) == 8 and all(pair == [1.0, 1.0] for pair in pairs.values())


def test_configurations_measured_only_in_a_slow_spell_get_extra_repetitions(tmp_path, capsys):
    # the machine is at its best for the first probe, then 3x slower for the whole sweep (9
    # probes: one before the first point, one after each), then at its best again: every
    # configuration gets one more repetition, measured between two steady probes
    spec = tmp_path / "sweep.toml"
    spec.write_text(probe_spec(tmp_path, [1.0] + [3.0] * 8 + [1.0]))
    assert main(["bench", str(spec)]) == 0
    captured = capsys.readouterr()
    assert "4 extra repetition(s)" in captured.out and "warning" not in captured.err
    with ProfileDB(tmp_path / "out/sweep.db") as db:
        runs = db.runs()
        pairs = {run_id: doc["bench"]["probe_s"] for run_id, doc in db.documents()}
    assert len(runs) == 12
    steady = [run for run in runs if max(pairs[run.id]) <= 1.3]
    assert len(steady) == 4
    assert {(r.params["work"], r.settings["agg_bytes"]) for r in steady} == {
        (10, 0),
        (10, 1000),
        (20, 0),
        (20, 1000),
    }
    # resuming finds every configuration steady: nothing runs
    assert main(["bench", str(spec)]) == 0
    assert "0 run, 8 already recorded" in capsys.readouterr().out


def test_a_machine_that_stays_slow_is_waited_for_no_longer_than_patience(tmp_path, capsys):
    spec = tmp_path / "sweep.toml"
    spec.write_text(probe_spec(tmp_path, [1.0, 1.0, 3.0], patience_s=1))
    assert main(["bench", str(spec)]) == 0
    captured = capsys.readouterr()
    assert "0 extra repetition(s)" in captured.out
    assert (
        "warning: 3 configuration(s) have no run measured while the probe was steady"
        in captured.err
    )


@pytest.mark.parametrize(
    "probe, message",
    [
        ('command = "x"\ncolour = 1', "sweep.toml:10:10: probe.colour: unknown key in [probe]"),
        ("tolerance = 0.1", "sweep.toml:8:1: probe: [probe] needs command"),
        ("command = 5", "sweep.toml:9:11: probe.command: expected a non-empty string"),
        (
            'command = "x"\nenv = { A = 1979-05-27 }',
            "sweep.toml:10:7: probe.env.A: expected a "
            "string or a whole number, got datetime.date(1979, 5, 27)",
        ),
        ('command = "{program} {npes}"', "probe.command uses unknown placeholder 'npes'"),
        (
            'command = "x"\ntolerance = -1',
            "probe.tolerance: expected a number in [0, 1000000000], got -1",
        ),
        ('command = "no-such-probe-program"', "command 'no-such-probe-program' not found"),
    ],
)
def test_probe_spec_errors(tmp_path, capsys, probe, message):
    spec = write_spec(tmp_path, extra=f"[probe]\n{probe}\n")
    assert main(["bench", str(spec)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_sweep_axes_are_part_of_a_runs_identity(tmp_path, capsys):
    """A program that records no params (no mp_param): the sweep's axes become its params and
    its non-runtime environment axes its settings, so its points stay apart."""
    spec = tmp_path / "s.toml"
    spec.write_text(f"""
program = "{HERE / "fake_program.py"}"
command = "{{python}} {{program}} {{npes}} {{work}} 0"
database = "s.db"
npes = [1]
repetitions = 2

[params]
work = [10, 20]

[env]
FAKE_NO_PARAMS = ["1"]
MODE = ["a", "b"]
""")
    assert main(["bench", str(spec)]) == 0
    with ProfileDB(tmp_path / "s.db") as db:
        runs = db.runs()
    assert len(runs) == 8
    assert {(r.params["work"], r.settings["MODE"]) for r in runs} == {
        (10, "a"),
        (10, "b"),
        (20, "a"),
        (20, "b"),
    }
    assert all(r.settings["FAKE_NO_PARAMS"] == "1" for r in runs)
    from mprof.profile import load_profiles

    keys = {p.config_key for p in load_profiles(tmp_path / "s.db")}
    assert len(keys) == 4  # 4 configurations of 2 repetitions, not one of 8


def test_what_the_program_records_wins_over_the_axis(tmp_path):
    """The program's own value of a parameter (in any case) is kept; runtime settings
    (MPROF_*) are the runtime's to record."""
    from mprof.bench.spec import Point
    from mprof.bench.sweep import record_sweep_axes

    doc = {"params": {"EltSize": 64}, "settings": {"agg_bytes": 0}}
    record_sweep_axes(
        doc,
        Point(
            "p", {"eltsize": 100, "n": 5}, 1, {"MPROF_AGG_BYTES": "0", "OMP_NUM_THREADS": "2"}, 0
        ),
    )
    assert doc["params"] == {"EltSize": 64, "n": 5}
    assert doc["settings"] == {"agg_bytes": 0, "OMP_NUM_THREADS": "2"}


def test_a_crashed_point_names_its_signal_and_last_stderr_lines(tmp_path, capsys):
    spec = tmp_path / "c.toml"
    spec.write_text(f"""
program = "{HERE / "fake_program.py"}"
command = "{{python}} {{program}} {{npes}} 1 4"
database = "c.db"
npes = [1]
""")
    assert main(["bench", str(spec)]) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "killed by SIGSEGV (signal 11)" in text, text
    assert "fake_program: last words" in text


def test_one_database_by_a_link_is_the_same_database(tmp_path, capsys):
    spec = write_spec(tmp_path)
    other = tmp_path / "other.toml"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "link.db").symlink_to("sweep.db")
    other.write_text(spec.read_text().replace('"out/sweep.db"', '"out/link.db"'))
    assert main(["bench", str(spec), str(other)]) == 2
    assert "same database" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["link.db"]


@pytest.mark.parametrize(
    "fail, reason",
    [
        # a FIFO at MPROF_OUT would block the read of the profile for ever
        (5, "the program left something other than a file at MPROF_OUT"),
        # a truncated profile is named by the variable, not by a temporary file long gone
        (2, "bad run profile: MPROF_OUT:1:"),
    ],
)
def test_what_a_point_left_at_mprof_out_is_reported(tmp_path, capsys, fail, reason):
    spec = write_spec(tmp_path, fail=f"[{fail}]")
    spec.write_text(
        spec.read_text()
        .replace("repetitions = 2", "repetitions = 1")
        .replace("npes = [1, 2]", "npes = [1]")
    )
    assert main(["bench", str(spec)]) == 1
    err = capsys.readouterr().err
    assert reason in err and "mprof-bench-" not in err, err


def test_a_huge_stderr_line_is_quoted_shortened(tmp_path, capsys):
    spec = write_spec(tmp_path, fail="[6]")
    spec.write_text(spec.read_text().replace("repetitions = 2", "repetitions = 1"))
    assert main(["bench", str(spec)]) == 1
    captured = capsys.readouterr()
    assert "characters left out" in captured.err
    assert len(captured.out) + len(captured.err) < 20_000


@pytest.mark.parametrize(
    "probe, message",
    [
        ("exit 3", "sweep.toml:9:11: probe.command: the probe failed (exit code 3: probe broke)"),
        (
            "truncated",
            "sweep.toml:9:11: probe.command: the probe's run: bad run profile: MPROF_OUT:1:",
        ),
    ],
)
def test_a_probe_that_cannot_run_leaves_no_database(tmp_path, capsys, probe, message):
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, sys\n"
        + (
            "print('probe broke', file=sys.stderr)\nsys.exit(3)\n"
            if probe == "exit 3"
            else "open(os.environ['MPROF_OUT'], 'w').write('{\"npes\": 2,')\n"
        )
    )
    spec = write_spec(tmp_path, extra=f'[probe]\ncommand = "{{python}} {script}"\n')
    spec.write_text(spec.read_text().replace('"out/sweep.db"', '"new/folder/sweep.db"'))
    assert main(["bench", str(spec)]) == 2
    err = capsys.readouterr().err
    assert message in err and "mprof-probe-" not in err, err
    assert not (tmp_path / "new").exists() and invocations(tmp_path) == 0
