"""`mprof bench`: sweeps, resumption, failure reports, timeouts."""

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
program = "{HERE / 'fake_program.py'}"
command = "{{python}} {{program}} {{npes}} {{work}} {{fail}} {tmp_path / 'count.txt'}"
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
program = "{HERE / 'fake_program.py'}"
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
    assert "fake_program.py 2 20 0" in capsys.readouterr().err
    assert not (tmp_path / "out/sweep.db").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('program = "x"\ndatabase = "d.db"\nnpes = [0]\n')
    with pytest.raises(MprofError, match="npes must be positive"):
        load_spec(bad)
    bad.write_text('program = "x"\nnpes = [1]\n')
    with pytest.raises(MprofError, match="missing required key 'database'"):
        load_spec(bad)
    bad.write_text('program = "x\n')
    with pytest.raises(MprofError, match="invalid TOML"):
        load_spec(bad)
    bad.write_text('program = "x"\ndatabase = "d.db"\nnpes = [1]\ncommand = "{program} {nope}"\n')
    assert main(["bench", str(bad)]) == 2
    assert "unknown placeholder 'nope'" in capsys.readouterr().err


def _npes_spec(tmp_path, npes_arg: str, npes: list[int]):
    spec = tmp_path / "n.toml"
    spec.write_text(f"""
program = "{HERE / 'fake_program.py'}"
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
