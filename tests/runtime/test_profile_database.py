"""Run profiles of the C runtime through the profile database: what is read back from the
tables (the database keeps no copy of the document) is the profile the program wrote, field
for field, and `db show` gives back its text's values in its order."""

from profile_roundtrip import normalized
from test_profile_schema import SAMPLED

from mprof.db.store import ProfileDB
from mprof.profile import load_profiles


def test_runtime_profiles_come_back_from_the_tables(rt, tmp_path):
    runs = [
        rt.run("categories", "ms=40", env=SAMPLED, timeout=120),
        rt.run("latency", 5, env={"MPROF_SAMPLE_US": 0}),
    ]
    docs = [run.profile for run in runs]
    assert any("categories" in pe for pe in docs[0]["pes"]), runs[0].describe()
    assert docs[1]["pes"][1]["latency"] and docs[0]["interfaces"], runs[1].describe()
    with ProfileDB(tmp_path / "p.db") as db:
        db.import_documents([(" ".join(run.args), run.profile) for run in runs])
        assert [db.document(i) for i in (1, 2)] == docs
    read = load_profiles(tmp_path / "p.db")
    assert [normalized(r.to_document()) for r in read] == [normalized(d) for d in docs]
    assert read[0].interfaces == {i["name"]: i["digest"] for i in docs[0]["interfaces"]}
