"""The profile database: validation, atomic imports, concurrency, migrations, round trips."""

import copy
import json
import multiprocessing
import re
import sqlite3

import pytest

from mprof.bench.synth import make_profile
from mprof.cli import main
from mprof.db import schema
from mprof.db.store import Condition, ProfileDB
from mprof.db.validate import parse_profile, validate_profile
from mprof.errors import MprofError


def profile(i=0, npes=2):
    objects = [
        [("rts", {"P": 1, "MsgSent": 10 * i + pe}), ("graph", {"NOp": i, "EltSize": 8.5})]
        for pe in range(npes)
    ]
    doc = make_profile(
        "pipe",
        objects,
        [0.5 + i + pe for pe in range(npes)],
        params={"M": 1000 + i, "mode": "fast"},
        settings={"agg_bytes": 100 * i},
        pe_idle=[0.1] * npes,
    )
    doc["accesses"] = ["unclassified", "graph:ENQ", "graph:DEQ"]
    doc["pes"][0]["latency"] = [
        {
            "access": "graph:DEQ",
            "enabler": "graph:ENQ",
            "count": 3,
            "observed_s": 0.01,
            "critical_s": 0.005,
        }
    ]
    return doc


def write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def content(db_path):
    """Everything stored, independent of page layout."""
    with sqlite3.connect(db_path) as conn:
        return [line for line in conn.iterdump() if "applied_at" not in line]


def test_import_stores_every_table(tmp_path):
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(write(tmp_path / "a.json", profile(1)))]) == 0
    with ProfileDB(db_path) as db:
        conn = db.conn
        assert conn.execute("SELECT COUNT(*) FROM pe_samples").fetchone()[0] == 2
        assert conn.execute("SELECT COUNT(*) FROM object_stats").fetchone()[0] == 2 * 4
        assert conn.execute("SELECT COUNT(*) FROM latency").fetchone()[0] == 1
        assert conn.execute("SELECT value_num FROM run_params WHERE name='M'").fetchone() == (
            1001.0,
        )
        fp = conn.execute("SELECT machine_fingerprint FROM runs").fetchone()[0]
        assert fp == profile(1)["machine"]["fingerprint"]
        assert db.document(1) == profile(1)
        stats = db.object_stats([1])
        assert stats[1][1][0] == (0, "rts", {"P": 1.0, "MsgSent": 11.0})


def two_waits(doc, critical_s):
    """PE 0 with two latency rows, each critical for `critical_s` of its observed time."""
    doc["pes"][0]["latency"] = [
        {"access": a, "enabler": e, "count": 1, "observed_s": 0.5, "critical_s": critical_s}
        for a, e in (("graph:DEQ", "graph:ENQ"), ("graph:ENQ", "graph:DEQ"))
    ]


def test_critical_latencies_within_the_idle_time_are_accepted():
    doc = profile()
    two_waits(doc, 0.05)  # together the PE's idle_s, 0.1 s
    validate_profile(doc, "run.json")


BAD = [
    (lambda d: d.pop("pes"), "missing required field 'pes'"),
    (lambda d: d.update(npes=3), "npes is 3 but the profile lists 2 PEs"),
    (lambda d: d.update(schema="other"), "schema: expected 'mprof.run-profile'"),
    (lambda d: d.update(schema_version=7), "version 7 is not supported"),
    (lambda d: d["pes"][1].update(elapsed_s=-1.0), "pes[1].elapsed_s: a time must be non-negative"),
    (lambda d: d["pes"][1].update(idle_s="fast"), "pes[1].idle_s: expected a number"),
    (lambda d: d["pes"][0]["objects"][0]["stats"].update(P=True), "stats.P: expected a number"),
    (lambda d: d["pes"][0]["objects"][1].pop("module"), "missing required field 'module'"),
    (lambda d: d["pes"][1].update(pe=0), "ordered by pe"),
    (lambda d: d["pes"][0]["latency"][0].update(count=-2), "count: must be >= 0"),
    (
        lambda d: d["params"].update(x=[1]),
        "params.x: expected a number, a string or a boolean, got an array",
    ),
    (lambda d: d.update(note="x"), "note: unknown field 'note'"),
    (lambda d: d["pes"][0]["objects"][0].update(extra=1), "objects[0].extra: unknown field"),
    (
        lambda d: d["pes"][0]["latency"][0].update(critical_s=1e3),
        "latency[0].critical_s: critical latency 1000.0 s is more than the observed",
    ),
    (
        lambda d: two_waits(d, 0.06),
        "pes[0].latency: the critical latencies add up to 0.12 s, more than the PE's idle_s 0.1 s",
    ),
    (lambda d: d.update(schema_version=2), "pes[0]: missing required field 'cpu_s'"),
    (lambda d: d.update(npes=True), "npes: expected an integer"),
]


@pytest.mark.parametrize("mutate, message", BAD)
def test_validation_messages(mutate, message):
    doc = profile()
    mutate(doc)
    with pytest.raises(MprofError) as err:
        validate_profile(doc, "run.json")
    assert str(err.value).startswith("run.json: ") and message in str(err.value)


def test_nan_and_infinity_rejected(tmp_path):
    text = json.dumps(profile()).replace('"elapsed_s": 0.5,', '"elapsed_s": NaN,', 1)
    path = tmp_path / "nan.json"
    path.write_text(text)
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(path)]) == 2


def test_malformed_or_truncated_import_changes_nothing(tmp_path, capsys):
    db_path = tmp_path / "p.db"
    good = [write(tmp_path / f"g{i}.json", profile(i)) for i in range(3)]
    assert main(["db", "import", str(db_path), *map(str, good[:2])]) == 0
    before = content(db_path)
    text = json.dumps(profile(5))
    truncated = tmp_path / "cut.json"
    truncated.write_text(text[: len(text) * 2 // 3])
    # A good file listed before the bad one must not be stored either.
    assert main(["db", "import", str(db_path), str(good[2]), str(truncated)]) == 2
    err = capsys.readouterr().err
    assert "cut.json" in err and "truncated" in err
    assert content(db_path) == before
    bad = profile(6)
    bad["pes"][0]["elapsed_s"] = -3
    assert (
        main(["db", "import", str(db_path), str(good[2]), str(write(tmp_path / "neg.json", bad))])
        == 2
    )
    assert re.search(r"neg\.json:\d+:\d+: pes\[0\]\.elapsed_s", capsys.readouterr().err)
    assert content(db_path) == before


def test_failure_inside_transaction_rolls_back(tmp_path, monkeypatch):
    db_path = tmp_path / "p.db"
    with ProfileDB(db_path) as db:
        db.import_documents([("a", profile(1))])
    before = content(db_path)
    from mprof.db import store

    original = store._insert_run
    calls = []

    def failing(conn, *args):
        calls.append(1)
        if len(calls) == 2:
            raise sqlite3.IntegrityError("simulated failure mid-import")
        return original(conn, *args)

    monkeypatch.setattr(store, "_insert_run", failing)
    with ProfileDB(db_path) as db, pytest.raises(sqlite3.IntegrityError):
        db.import_documents([("b", profile(2)), ("c", profile(3))])
    assert content(db_path) == before


def _import_worker(args):
    db_path, start = args
    for i in range(start, start + 5):
        with ProfileDB(db_path) as db:
            db.import_documents([(f"w{i}", profile(i, npes=3))])
    return start


def test_concurrent_imports_lose_nothing(tmp_path):
    db_path = str(tmp_path / "shared.db")  # created concurrently too
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.map(_import_worker, [(db_path, 100 * k) for k in range(4)])
    with ProfileDB(db_path) as db:
        runs = db.runs()
        assert len(runs) == 20
        assert db.conn.execute("SELECT COUNT(*) FROM pe_samples").fetchone()[0] == 60
        assert db.version == schema.LATEST_VERSION


def test_export_import_round_trip(tmp_path, capsys):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    files = [write(tmp_path / f"{i}.json", profile(i, npes=1 + i % 3)) for i in range(4)]
    assert main(["db", "import", str(a), *map(str, files)]) == 0
    assert main(["db", "export", str(a), "-o", str(tmp_path / "a.jsonl")]) == 0
    assert main(["db", "import", str(b), str(tmp_path / "a.jsonl")]) == 0
    capsys.readouterr()
    assert main(["db", "export", str(b)]) == 0
    exported = capsys.readouterr().out
    assert exported == (tmp_path / "a.jsonl").read_text()
    assert [json.loads(line) for line in exported.splitlines()] == [
        profile(i, npes=1 + i % 3) for i in range(4)
    ]
    # Importing the same documents again is a no-op.
    assert main(["db", "import", str(b), str(tmp_path / "a.jsonl")]) == 0
    assert "already stored as run 1" in capsys.readouterr().err
    with ProfileDB(b) as db:
        assert len(db.runs()) == 4


def test_list_where_and_show(tmp_path, capsys):
    db_path = tmp_path / "p.db"
    files = [write(tmp_path / f"{i}.json", profile(i)) for i in range(3)]
    assert main(["db", "import", str(db_path), *map(str, files)]) == 0
    capsys.readouterr()
    assert main(["db", "list", str(db_path), "--json", "--where", "agg_bytes=100.0"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [2] and rows[0]["params"]["M"] == 1001
    assert main(["db", "list", str(db_path), "--where", "mode=fast", "--where", "M=1002"]) == 0
    assert "1002" in capsys.readouterr().out
    assert main(["db", "show", str(db_path), "3"]) == 0
    assert json.loads(capsys.readouterr().out) == profile(2)
    assert main(["db", "show", str(db_path), "9"]) == 2
    assert "no run with id 9" in capsys.readouterr().err
    assert main(["db", "list", str(tmp_path / "none.db")]) == 2
    with pytest.raises(MprofError, match="expected name=value"):
        Condition.parse("novalue")


def test_older_database_is_migrated(tmp_path):
    db_path = tmp_path / "old.db"
    conn = sqlite3.connect(db_path, isolation_level=None)
    schema.migrate(conn, target=1)
    conn.execute(
        "INSERT INTO runs (program, npes, imported_at, document_sha256, document) "
        "VALUES ('old', 1, 'then', 'x', '{}')"
    )
    conn.close()
    assert schema.LATEST_VERSION >= 2
    with ProfileDB(db_path) as db:
        assert db.version == schema.LATEST_VERSION
        assert db.recorded_points() == set()  # table from migration 2 exists
        assert db.conn.execute("SELECT program FROM runs").fetchone() == ("old",)
    with sqlite3.connect(db_path) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_version")]
    assert versions == list(range(1, schema.LATEST_VERSION + 1))


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MprofError, match="not a usable profile database"):
        ProfileDB(path)


def test_profile_is_not_mutated_by_import(tmp_path):
    doc = profile(1)
    snapshot = copy.deepcopy(doc)
    with ProfileDB(tmp_path / "p.db") as db:
        db.import_documents([("x", doc)])
    assert doc == snapshot


def test_database_of_the_previous_schema_opens_and_reads(tmp_path):
    """A database written before per-PE CPU times existed (schema version 2) is migrated on
    open; its runs read back with no CPU times, and new runs store them."""
    import sqlite3

    from mprof.db import schema
    from mprof.profile import load_profiles

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, target=2) == 2
    conn.execute(
        "INSERT INTO runs (id, program, npes, imported_at, document_sha256, document) "
        "VALUES (1, 'old', 1, 'x', 'sha', '{}')"
    )
    conn.execute("INSERT INTO pe_samples (run_id, pe, elapsed_s, idle_s) VALUES (1, 0, 2.0, 0.5)")
    conn.close()
    (old,) = load_profiles(path)
    pe = old.pes[0]
    assert (pe.elapsed_s, pe.idle_s, pe.cpu_s, pe.idle_cpu_s) == (2.0, 0.5, None, None)
    doc = make_profile("new", [[("rts", {"P": 1})]], [1.0])
    doc["schema_version"] = 2
    doc["pes"][0].update(cpu_s=0.75, idle_cpu_s=0.25)
    with ProfileDB(path) as db:
        db.import_documents([("new.json", doc)])
    new = [r for r in load_profiles(path) if r.program == "new"][0]
    assert (new.pes[0].cpu_s, new.pes[0].idle_cpu_s) == (0.75, 0.25)
    assert new.pes[0].time("cpu") == 0.75 and new.pes[0].time("elapsed") == 1.0


def test_another_applications_sqlite_file_is_left_alone(tmp_path, capsys):
    """`mprof db list` (or import) on an SQLite file of another application: exit 2 with one
    line, and the file is byte for byte what it was (no mprof tables, no WAL mode)."""
    import sqlite3

    from mprof.cli import main

    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.execute("INSERT INTO users VALUES (1, 'ada')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    profile = tmp_path / "run.json"
    from mprof.bench.synth import make_profile

    profile.write_text(json.dumps(make_profile("p", [[("rts", {"P": 1})]], [0.1])))
    for argv in (
        ["db", "list", str(path)],
        ["db", "import", str(path), str(profile)],
        ["gate", "--baseline", str(path), "--candidate", str(path)],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "not a profile database" in err and "Traceback" not in err, err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "run.json"]
    empty = tmp_path / "empty.db"
    empty.touch()
    assert main(["db", "list", str(empty)]) == 2
    assert "no mprof tables" in capsys.readouterr().err
    assert empty.read_bytes() == b""
    assert main(["db", "import", str(empty), str(profile)]) == 0  # a new database: set up


def test_schema_errors_name_the_line_and_column_of_the_value():
    doc = profile()
    doc["pes"][1]["objects"][0]["stats"]["P"] = "one"
    text = json.dumps(doc, indent=1)
    with pytest.raises(MprofError) as err:
        parse_profile(text, "run.json")
    line = text[: text.index('"one"')].count("\n") + 1
    column = text.index('"one"') - text[: text.index('"one"')].rfind("\n")
    assert str(err.value) == (
        f"run.json:{line}:{column}: pes[1].objects[0].stats.P: expected "
        "a number, got the string 'one'"
    )
