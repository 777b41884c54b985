"""`mprof bench` where the jsonschema package is not installed, as on the 16-core measuring
machine (numpy, scipy, jinja2 and rich only): the runs' own profiles are read back with the
checks that need no schema, and the sweep records them; `db import` of a file, which is
input from anywhere, refuses to go on without the schema, in one line."""

import sqlite3
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# mprof's command line with `import jsonschema` failing, as where it is not installed
WITHOUT_JSONSCHEMA = (
    "import sys; sys.modules['jsonschema'] = None; from mprof.cli import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def mprof_without_jsonschema(*args, cwd):
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_JSONSCHEMA, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_sweep_of_the_runtime_records_its_runs(cmake_build, tmp_path):
    build = cmake_build("build", targets=["rt_workload"])
    spec = tmp_path / "sweep.toml"
    spec.write_text(f"""
program = "{build / "benchmarks/micro/rt_workload"}"
command = "{{program}} {{npes}} 20000 2000 16 0"
database = "{tmp_path / "sweep.db"}"
npes = [2]
repetitions = 2

[env]
MPROF_AGG_BYTES = ["0", "4096"]

[probe]
command = "{{program}} 2 20000 2000 16 0"
tolerance = 1000  # read back as the runs are; no extra repetitions on a busy machine
""")
    run = mprof_without_jsonschema("bench", spec, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "4 point(s): 4 run, 0 already recorded, 0 failed" in run.stdout + run.stderr
    with sqlite3.connect(tmp_path / "sweep.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (4,)
        # the statistics are there, as with the schema
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM object_stats WHERE stat = 'RemoteOp' AND value > 0"
            ).fetchone()[0]
            >= 4
        )


def test_a_broken_profile_is_still_a_failed_point(tmp_path):
    spec = tmp_path / "sweep.toml"
    spec.write_text(f"""
program = "{HERE / "fake_program.py"}"
command = "{{python}} {{program}} {{npes}} 10 2"
database = "{tmp_path / "sweep.db"}"
npes = [1]
""")
    run = mprof_without_jsonschema("bench", spec, cwd=ROOT)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "1 failed" in run.stdout + run.stderr
    assert "truncated" in run.stdout + run.stderr


def test_importing_a_file_needs_the_schema(build_dir, tmp_path):
    profile = tmp_path / "run.json"
    subprocess.run(
        [build_dir / "benchmarks/micro/rt_workload", "2", "2000", "200", "16", "0"],
        env={"MPROF_OUT": str(profile), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        timeout=60,
    )
    run = mprof_without_jsonschema("db", "import", tmp_path / "p.db", profile, cwd=ROOT)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"mprof: {profile}: validating a run profile needs the jsonschema package, which is not "
        "installed (`make` installs it into .venv; or: pip install jsonschema)"
    ]
    assert not (tmp_path / "p.db").exists()
