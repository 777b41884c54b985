"""A run read back from the database's tables is the run that was imported: every field of its
profile (RunProfile.to_document equals the imported document), for profiles with every optional
field, without them, and with the values at the edges of what SQLite stores."""

import json
import sqlite3

from mprof.bench.synth import make_profile
from mprof.cli import main
from mprof.db import schema
from mprof.db.store import ProfileDB
from mprof.db.validate import validate_profile
from mprof.profile import IDLE, load_profiles

from profile_roundtrip import insert_as_schema_5, normalized


def plain() -> dict:
    """A profile of schema version 1 with only the fields make_profile writes."""
    return make_profile(
        "plain",
        [[("rts", {"P": 1, "MsgSent": 3})], [("rts", {"P": 2})]],
        [1.0, 1.25],
        params={"n": 1000, "mode": "fast"},
        settings={"agg_bytes": 64},
    )


def full() -> dict:
    """Every optional field of the schema, some values at SQLite's edges."""
    doc = make_profile(
        "full",
        [
            [("graph", {"NOp": 2**60 + 1, "EltSize": 8.5, "Neg": -3}), ("rts", {"P": 1})],
            [("graph", {"NOp": 7, "Big": 2**64 - 1})],
        ],
        [2.0, 2.5],
        params={"n": 10, "ratio": 0.25, "on": True},
        settings={"flush_delay_us": 2.5},
        pe_idle=[0.5, 0.25],
        argv=["full", "n=10", "--fast"],
    )
    doc["schema_version"] = 2
    doc["accesses"] = ["unclassified", "graph:ENQ", "graph:DEQ"]
    doc["bench"] = {"probe_s": [0.125, 0.13]}
    doc["interfaces"] = [{"name": "graph", "digest": "a" * 64}, {"name": "rts", "digest": "b" * 64}]
    pe0, pe1 = doc["pes"]
    pe0.update(
        cpu_s=1.75,
        idle_cpu_s=0.5,  # the runtime lists them by category, not size
        categories=[
            {"access": IDLE, "cpu_s": 0.5, "samples": 50},
            {"access": "graph:ENQ", "cpu_s": 1.25, "samples": 125},
        ],
    )
    pe1.update(cpu_s=0.0, idle_cpu_s=0.0, categories=[])  # no CPU time: no rows
    pe0["objects"].reverse()  # the runtime lists objects newest first
    pe0["objects"][0]["id"] = 2**64 - 2  # object ids are u64
    pe0["objects"][1]["absent"] = {"L1Miss": "PAPI_L1_DCM: no such event"}
    pe1["objects"].append(
        {
            "id": 5,
            "module": "graph",
            "stats": {},
            "absent": {"L1Miss": "PAPI_L1_DCM: no such event"},
        }
    )
    pe1["latency"] = [
        {
            "access": "graph:DEQ",
            "enabler": "graph:ENQ",
            "count": 2**63 + 5,
            "observed_s": 0.25,
            "critical_s": 0.125,
        },
        {
            "access": "graph:DEQ",
            "enabler": "unclassified",
            "count": 1,
            "observed_s": 0.0,
            "critical_s": 0.0,
        },
    ]
    return doc


def no_fingerprint() -> dict:
    doc = plain()
    doc["program"] = "nofp"
    del doc["machine"]["fingerprint"]  # mprof derives one; the document had none
    del doc["argv"], doc["accesses"]
    return doc


def test_every_field_comes_back_from_the_tables(tmp_path):
    docs = [plain(), full(), no_fingerprint()]
    for doc in docs:
        validate_profile(doc, doc["program"])
    with ProfileDB(tmp_path / "p.db") as db:
        db.import_documents([(d["program"], d) for d in docs])
        assert "document" not in [r[1] for r in db.conn.execute("PRAGMA table_info(runs)")]
    runs = load_profiles(tmp_path / "p.db")
    assert [normalized(r.to_document()) for r in runs] == [normalized(d) for d in docs]
    assert runs[1].interfaces == {"graph": "a" * 64, "rts": "b" * 64}
    assert runs[1].pes[1].objects[-1].absent == {"L1Miss": "PAPI_L1_DCM: no such event"}
    assert runs[2].fingerprint  # derived, for the fits' machine check
    assert "fingerprint" not in runs[2].machine


def test_show_and_export_write_the_runtimes_integers(tmp_path, capsys):
    """Whole numbers come back as JSON integers, so that an exported run imported again is the
    same run (its canonical text, and SHA-256, are the imported document's)."""
    doc = full()
    (tmp_path / "run.json").write_text(json.dumps(doc))
    db = tmp_path / "p.db"
    assert main(["db", "import", str(db), str(tmp_path / "run.json")]) == 0
    capsys.readouterr()
    assert main(["db", "show", str(db), "1"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == doc  # objects and category rows in the order imported
    assert shown["pes"][1]["objects"][0]["stats"]["NOp"] == 7
    assert isinstance(shown["pes"][1]["objects"][0]["stats"]["NOp"], int)
    assert main(["db", "export", str(db), "-o", str(tmp_path / "out.jsonl")]) == 0
    assert main(["db", "import", str(db), str(tmp_path / "out.jsonl")]) == 0
    assert "already stored as run 1" in capsys.readouterr().err


def test_a_database_of_schema_5_migrates_and_reads_back_the_same_runs(tmp_path):
    """Migration 6 fills the new columns and tables from the stored documents (also the CPU
    times, category times and exact integers of runs imported before migrations 3, 4 and 5)
    and drops the document column; the runs read back are the documents that were stored."""
    old, earlier = full(), full()
    earlier["program"] = "earlier"
    earlier["pes"][1]["objects"][0]["stats"]["Big"] = 2**62 + 1  # exact only in the document
    docs = [plain(), old, no_fingerprint(), earlier]
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, target=5) == 5
    for doc in docs[:3]:
        insert_as_schema_5(conn, doc)
    insert_as_schema_5(conn, earlier, tables_since=())
    conn.close()
    with ProfileDB(path, create=False, migrate=False) as db:  # as a reader that may not write
        assert db.version == 5
        as_it_is = [normalized(r.to_document()) for r in db.profiles()]
    assert as_it_is[:3] == [normalized(d) for d in docs[:3]]
    with ProfileDB(path) as db:
        assert db.version == schema.LATEST_VERSION
        assert "document" not in [r[1] for r in db.conn.execute("PRAGMA table_info(runs)")]
    runs = load_profiles(path)
    assert [normalized(r.to_document()) for r in runs] == [normalized(d) for d in docs]
    assert runs[3].has_categories and runs[3].pes[0].cpu_s == 1.75
    with ProfileDB(path) as db:  # an export imported again is a duplicate of each run
        for run_id, doc in db.documents():
            assert db.import_documents([("again", doc)]).duplicates == [("again", run_id)]
