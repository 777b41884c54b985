"""Writing can fail: a full disk, /dev/full, an unwritable folder.  Every file mprof or the
runtime writes is replaced whole or not at all, and every failure is one `mprof: ...` line and
exit 2 (the runtime: one line and a non-zero exit), never a traceback or a cut-off file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from faults_helpers import ROOT, assert_one_line_error, fill, leftovers, run_mprof, small_fs

from mprof.db.store import ProfileDB


@pytest.fixture
def full(tmp_path):
    with small_fs(tmp_path / "small") as where:
        yield where


@pytest.fixture
def inputs(tmp_path):
    """A run profile, a model file and a database outside the small file system."""
    from report_helpers import make_model, make_run

    run = tmp_path / "run.json"
    run.write_text(json.dumps(make_run()))
    model = tmp_path / "model.json"
    make_model().save(model)
    db = tmp_path / "runs.db"
    with ProfileDB(db) as store:
        store.import_documents([("run.json", make_run())])
    return {"run": run, "model": model, "db": db}


OLD = "the previous, complete file\n"


def _outputs(inputs, folder):
    """(name, command) pairs: each writes `folder/name` (a file or, for folders, inside it)."""
    from gate_synth import write_db

    rng = np.random.default_rng(3)
    base = write_db(inputs["db"].parent / "base.db", rng, reps=4)
    cand = write_db(inputs["db"].parent / "cand.db", rng, reps=4)
    gate = ["gate", "--baseline", base, "--candidate", cand, "-q", "--inconclusive-ok"]
    return [
        (
            "report.html",
            ["report", inputs["run"], "--model", inputs["model"], "--html", folder / "report.html"],
        ),
        (
            "compare.html",
            ["report", inputs["run"], inputs["run"], "--html", folder / "compare.html"],
        ),
        ("export.jsonl", ["db", "export", inputs["db"], "-o", folder / "export.jsonl"]),
        (
            "extrap.jsonl",
            [
                "db",
                "export",
                inputs["db"],
                "--format",
                "extrap",
                "--measure",
                "elapsed",
                "-o",
                folder / "extrap.jsonl",
            ],
        ),
        ("gate.json", [*gate, "--json", folder / "gate.json"]),
        ("gate.xml", [*gate, "--junit", folder / "gate.xml"]),
        ("gate.md", [*gate, "--markdown", folder / "gate.md"]),
    ]


def test_full_disk_keeps_the_previous_file_of_every_output(inputs, full):
    commands = _outputs(inputs, full)
    for name, _ in commands:
        (full / name).write_text(OLD)
    fill(full)
    for name, args in commands:
        proc = run_mprof(*args)
        assert_one_line_error(proc, str(full / name), "No space left on device")
        assert (full / name).read_text() == OLD, name
    assert leftovers(full, {n for n, _ in commands}) == []


def test_outputs_are_complete_when_there_is_room(inputs, tmp_path):
    with small_fs(tmp_path / "roomy", "8m") as folder:
        commands = _outputs(inputs, folder)
        for name, args in commands:
            proc = run_mprof(*args)
            assert proc.returncode == 0, (name, proc.stderr)
            assert (folder / name).stat().st_size > 0
        assert json.loads((folder / "gate.json").read_text())
        assert leftovers(folder, {n for n, _ in commands}) == []


def test_model_files_and_generated_c_on_a_full_disk(inputs, full, tmp_path):
    from report_helpers import make_model

    from mprof.errors import MprofError

    saved = full / "model.json"
    make_model().save(saved)
    before = saved.read_text()
    (full / "c").mkdir()
    (full / "c" / "mpm_model.c").write_text(OLD)
    fill(full)
    with pytest.raises(MprofError, match="No space left on device"):
        make_model(sigma=0.5).save(saved)
    assert saved.read_text() == before
    proc = run_mprof("model", "export-c", inputs["model"], "-o", full / "c")
    assert_one_line_error(proc, "No space left on device")
    assert (full / "c" / "mpm_model.c").read_text() == OLD
    assert leftovers(full / "c", {"mpm_model.c"}) == []
    proc = run_mprof("iface", "compile", "-q", ROOT / "runtime/rts.perf", "-o", full / "gen")
    assert_one_line_error(proc, "No space left on device")
    proc = run_mprof("report", "--c-helper", full / "c")
    assert_one_line_error(proc, "No space left on device")
    assert leftovers(full / "c", {"mpm_model.c"}) == []


@pytest.mark.parametrize(
    "args",
    [
        ["db", "export", "{db}"],
        ["db", "export", "{db}", "--format", "extrap", "--measure", "elapsed"],
        ["db", "list", "{db}"],
        ["db", "show", "{db}", "1"],
        ["report", "{run}", "--model", "{model}"],
        ["report", "{run}", "--model", "{model}", "--json"],
        ["latency", "{run}"],
        ["model", "show", "{model}"],
        ["iface", "show", str(ROOT / "runtime/rts.perf")],
    ],
)
def test_standard_output_on_a_full_device(inputs, args):
    args = [a.format(**inputs) for a in args]
    with open("/dev/full", "w") as devfull:
        proc = run_mprof(*args, stdout=devfull)
    assert_one_line_error(proc, "cannot write standard output", "No space left on device")


@pytest.mark.parametrize(
    "args",
    [
        ["db", "list", "{db}"],
        ["report", "{run}", "--model", "{model}"],
        ["iface", "show", str(ROOT / "runtime/rts.perf")],
    ],
)
def test_standard_output_closed(inputs, args):
    """Started without a standard output (`mprof ... >&-`), Python has no sys.stdout: a
    command that prints says it cannot, as on a full device, instead of a traceback."""
    args = [a.format(**inputs) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "mprof", *args],
        stdout=None,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
        timeout=120,
    )
    assert_one_line_error(proc, "cannot write standard output", "standard output is closed")


def test_html_report_to_a_full_device(inputs):
    proc = run_mprof("report", inputs["run"], "--model", inputs["model"], "--html", "/dev/full")
    assert_one_line_error(proc, "/dev/full", "No space left on device")
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


def test_unwritable_gate_output(inputs, tmp_path):
    from gate_synth import write_db

    rng = np.random.default_rng(5)
    base = write_db(tmp_path / "b.db", rng, reps=4)
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "gate.json").mkdir()  # even root cannot replace a folder with a file
    proc = run_mprof(
        "gate",
        "--baseline",
        base,
        "--candidate",
        base,
        "-q",
        "--inconclusive-ok",
        "--json",
        folder / "gate.json",
    )
    assert_one_line_error(proc, "gate.json", "is a directory")


def test_reading_a_database_on_a_full_disk(inputs, tmp_path):
    """Reading never needs free space (SQLite's shared-memory file included)."""
    with small_fs(tmp_path / "big", "1m") as folder:
        db = folder / "runs.db"
        db.write_bytes(inputs["db"].read_bytes())
        fill(folder)
        for args in (["db", "list", db], ["db", "export", db], ["db", "show", db, "1"]):
            proc = run_mprof(*args)
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout.strip()
        proc = run_mprof("db", "import", db, inputs["run"])
        assert_one_line_error(proc, str(db))


# -- the runtime's run profile ------------------------------------------------------------


def _pipe(build_dir, out, **env):
    return subprocess.run(
        [str(build_dir / "benchmarks/pipe/pipe"), "2", "100", "10", "10", "15", "100", "1000"],
        env={**os.environ, "MPROF_OUT": str(out), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_runtime_profile_on_a_full_disk_keeps_the_previous_profile(build_dir, full):
    out = full / "run.json"
    proc = _pipe(build_dir, out)
    assert proc.returncode == 0, proc.stderr
    before = out.read_text()
    assert json.loads(before)["program"]
    fill(full)
    proc = _pipe(build_dir, out)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mprof:")]
    assert lines == [f"mprof: cannot write the run profile to {out}: No space left on device"], (
        proc.stderr
    )
    assert out.read_text() == before
    assert leftovers(full, {"run.json"}) == []


def test_runtime_profile_to_a_device_is_written_in_place(build_dir):
    proc = _pipe(build_dir, "/dev/full")
    assert proc.returncode != 0
    assert "cannot write the run profile to /dev/full: No space left on device" in proc.stderr
    assert not os.path.isfile("/dev/full")
    proc = _pipe(build_dir, "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert '"schema": "mprof.run-profile"' in proc.stdout


def test_a_symbolic_link_keeps_pointing_at_the_rewritten_file(inputs, build_dir, tmp_path):
    from report_helpers import make_model

    real = tmp_path / "real.json"
    real.write_text(OLD)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    make_model().save(link)
    assert link.is_symlink() and json.loads(real.read_text())["schema"] == "mprof.model"
    real_run = tmp_path / "real-run.json"
    real_run.write_text(OLD)
    run_link = tmp_path / "run-link.json"
    run_link.symlink_to(real_run)
    proc = _pipe(build_dir, run_link)
    assert proc.returncode == 0, proc.stderr
    assert run_link.is_symlink() and json.loads(real_run.read_text())["program"]


def test_an_interrupted_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    import mprof.files as files

    target = tmp_path / "out.txt"
    target.write_text(OLD)

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_file(target, "new text\n")
    assert target.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_file_name_holding_nul_is_a_one_line_error(tmp_path):
    """The file system takes no NUL in a name, and Python's calls raise ValueError for one:
    it is the caller's error, named, and nothing is written."""
    from mprof.errors import MprofError
    from mprof.files import write_file

    with pytest.raises(
        MprofError, match=r"^cannot write '.*a\\x00b': a file name cannot hold NUL$"
    ):
        write_file(f"{tmp_path}/a\0b", "x")
    assert list(tmp_path.iterdir()) == []
