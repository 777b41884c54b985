"""What the runtime writes is stored as it is, and bad input or a failing disk is an error
message, never a traceback: u64 values, malformed profiles, damaged or full databases,
read-only databases, closed pipes."""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mprof.bench.synth import make_profile
from mprof.cli import main
from mprof.db.store import ProfileDB
from tooling import require_tool

U64_MAX = 2**64 - 1


def profile(i=0, npes=2, **stats):
    objects = [[("rts", {"P": 1, "MsgSent": 10 * i + pe, **stats})] for pe in range(npes)]
    return make_profile("prog", objects, [0.5 + i] * npes, params={"i": i})


def write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def run_mprof(*args, cwd=None, **kw):
    """`mprof ARGS` in a process of its own (what a user sees, tracebacks included)."""
    return subprocess.run(
        [sys.executable, "-m", "mprof", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        **kw,
    )


# -- the full u64 range ------------------------------------------------------------------


def test_u64_statistics_and_object_ids_are_stored_exactly(tmp_path):
    """A counter taken below zero wraps to 2^64-1; object ids go above 2^63."""
    doc = profile(1, Wrapped=U64_MAX, Big=2**63, Neg=-(2**63), Near=2**53 + 1)
    doc["pes"][1]["objects"][0]["id"] = 2**64 - 2
    doc["accesses"] = ["unclassified", "a", "b"]
    doc["pes"][0]["latency"] = [
        {"access": "a", "enabler": "b", "count": U64_MAX, "observed_s": 0.1, "critical_s": 0.1}
    ]
    doc["pes"][0]["idle_s"] = 0.1  # critical latency is a part of the idle time
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(write(tmp_path / "a.json", doc))]) == 0
    with ProfileDB(db_path) as db:
        (run,) = db.runs()
        objects = db.object_stats([run.id])[run.id]
        assert db.document(run.id) == doc
    ((oid0, _, stats0),) = objects[0]
    ((oid1, _, stats1),) = objects[1]
    assert (oid0, oid1) == (0, 2**64 - 2)
    for stats in (stats0, stats1):
        assert stats["Wrapped"] == U64_MAX and stats["Big"] == 2**63
        assert stats["Neg"] == -(2**63) and stats["Near"] == 2**53 + 1
    with sqlite3.connect(db_path) as conn:  # SQL still sees a number in `value`
        assert conn.execute(
            "SELECT MAX(value) FROM object_stats WHERE stat = 'Wrapped'"
        ).fetchone()[0] == float(U64_MAX)


def test_the_gate_sees_a_change_in_the_last_bits_of_a_u64(tmp_path):
    base, cand = tmp_path / "b.db", tmp_path / "c.db"
    for path, value in ((base, U64_MAX), (cand, U64_MAX - 1)):
        docs = [(f"{path.name}{r}", profile(0, Wrapped=value)) for r in range(3)]
        for r, (_, d) in enumerate(docs):
            d["started_at"] = f"2026-01-01T00:00:0{r}Z"
            d["elapsed_s"] = 0.5 + r * 0.01
        with ProfileDB(path) as db:
            db.import_documents(docs)
    assert (
        main(["gate", "--baseline", str(base), "--candidate", str(cand), "--inconclusive-ok", "-q"])
        == 1
    )  # BEHAVIOUR CHANGE of rts.Wrapped


# -- malformed profiles: db import, report and latency -----------------------------------


BAD_PROFILES = {
    "invalid-utf8": (b'{"schema": "mprof.run-profile", "program": "caf\xe9"}', "not valid UTF-8"),
    "deep-nesting": (
        b'{"a": "[[[[",\n "b": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "bad.json:2:106: not a run profile: JSON nested too deeply (more than 100 levels)",
    ),
    "huge-integer": (
        json.dumps(profile(MsgSent=0)).replace('"MsgSent": 0', '"MsgSent": ' + "9" * 300).encode(),
        "integer of 300 digits does not fit 64 bits",
    ),
    "huge-param": (
        json.dumps(profile()).replace('"i": 0', '"i": ' + "7" * 400).encode(),
        "params.i: integer of 400 digits",
    ),
    "nan-unchecked": (
        json.dumps(profile())
        .replace('"cpu": "synthetic"', '"cpu": NaN')
        .replace('"machine": {', '"machine": {"extra": NaN, ')
        .encode(),
        "machine.extra: must be a finite number, got nan",
    ),
    "inf-unchecked": (
        json.dumps({**profile(), "notes": {"x": [1e999]}}).replace("Infinity", "1e999").encode(),
        "notes.x[0]: must be a finite number",
    ),
}


@pytest.mark.parametrize("name", list(BAD_PROFILES))
def test_malformed_profiles_are_errors_in_every_command(tmp_path, name):
    data, message = BAD_PROFILES[name]
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    for args in (
        ["db", "import", tmp_path / "p.db", bad],
        ["report", bad, "--format", "text"],
        ["latency", bad],
    ):
        proc = run_mprof(*args)
        assert proc.returncode == 2, (args, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and message in proc.stderr, (args, proc.stderr)


# -- SQLite failures ---------------------------------------------------------------------


def test_full_disk_during_import_is_an_error_and_stores_nothing(tmp_path):
    """The file size limit stands in for a full disk: SQLite gets EFBIG ('disk I/O error'),
    rolls the transaction back itself, and our ROLLBACK must not hide that."""
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(write(tmp_path / "a.json", profile()))]) == 0
    lines = [
        json.dumps(profile(i, npes=4, **{f"S{k}": i * k for k in range(40)})) for i in range(1, 300)
    ]
    (tmp_path / "many.jsonl").write_text("\n".join(lines) + "\n")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({db_path.stat().st_size + 40000},) * 2)\n"
        "from mprof.cli import main\n"
        f"sys.exit(main(['db', 'import', {str(db_path)!r}, {str(tmp_path / 'many.jsonl')!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "nothing was stored" in proc.stderr, proc.stderr
    with ProfileDB(db_path) as db:
        assert len(db.runs()) == 1
        assert db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("offset", [0, 100, 8192, 20000])
def test_damaged_database_is_an_error(tmp_path, offset):
    db_path = tmp_path / "p.db"
    docs = [str(write(tmp_path / f"{i}.json", profile(i))) for i in range(30)]
    assert main(["db", "import", str(db_path), *docs]) == 0
    with open(db_path, "r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * 4000)
    for args in (
        ["db", "list", db_path, "--json"],
        ["db", "export", db_path],
        ["db", "import", db_path, docs[0]],
        ["gate", "--baseline", db_path, "--candidate", db_path],
    ):
        proc = run_mprof(*args)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        if proc.returncode != 0:  # what the damage touches: a message naming the file
            assert proc.returncode == 2 and str(db_path) in proc.stderr, (args, proc.stderr)
    assert run_mprof("db", "list", db_path, "--json").returncode == 2  # the runs table is hit


def test_read_only_database_can_be_read(tmp_path):
    """A database the user may only read (file and folder not writable): list, export and
    gate work; nothing is written.  As root, reading as another user needs setpriv."""
    if os.geteuid() == 0:
        require_tool("setpriv")
    with tempfile.TemporaryDirectory(prefix="mprof-ro-") as tmp:
        folder = Path(tmp) / "ro"
        folder.mkdir()
        db_path = folder / "p.db"
        docs = [str(write(tmp_path / f"{i}.json", profile(i % 2))) for i in range(2)]
        assert main(["db", "import", str(db_path), *docs]) == 0
        before = sorted(p.name for p in folder.iterdir())
        db_path.chmod(0o444)
        folder.chmod(0o555)
        os.chmod(tmp, 0o755)
        prefix = []
        if os.geteuid() == 0:  # root may write anything: read as nobody
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        try:
            for args in (
                ["db", "list", db_path, "--json"],
                ["db", "export", db_path],
                ["gate", "--baseline", db_path, "--candidate", db_path, "-q", "--inconclusive-ok"],
            ):
                proc = subprocess.run(
                    [*prefix, sys.executable, "-m", "mprof", *map(str, args)],
                    capture_output=True,
                    text=True,
                    cwd=Path(__file__).resolve().parents[2],
                )
                assert proc.returncode == 0, (args, proc.stderr)
            assert sorted(p.name for p in folder.iterdir()) == before
        finally:
            folder.chmod(0o755)


# -- a closed pipe ----------------------------------------------------------------------


@pytest.mark.parametrize("args", [["db", "export"], ["db", "list", "--json"], ["db", "list"]])
def test_output_closed_early_ends_quietly(tmp_path, args):
    db_path = tmp_path / "p.db"
    lines = [json.dumps(profile(i, **{f"S{k}": k for k in range(30)})) for i in range(400)]
    (tmp_path / "many.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["db", "import", str(db_path), str(tmp_path / "many.jsonl")]) == 0
    command = [sys.executable, "-m", "mprof", args[0], args[1], str(db_path), *args[2:]]
    proc = subprocess.run(
        ["sh", "-c", " ".join(f"'{a}'" for a in command) + " | head -n 1"],
        capture_output=True,
        text=True,
    )
    assert proc.stdout.count("\n") == 1
    assert proc.stderr == "", proc.stderr
