"""Mismatched or damaged models: a model file whose carried interface text is damaged is the
model file's fault (named, exit 2), and a run recorded with another version of an interface
is priced with a warning that names the statistics it lacks."""

from __future__ import annotations

import json

import pytest
from faults_helpers import assert_one_line_error, run_mprof

from mprof.iface import load_interface
from mprof.model import ModuleInfo


@pytest.fixture
def model_with_sources(tmp_path):
    import report_helpers as rh

    model = rh.make_model()
    model.interfaces = {
        m: ModuleInfo.from_interface(load_interface(p), str(p), source=p.read_text())
        for m, p in rh.PERFS.items()
    }
    path = tmp_path / "model.json"
    model.save(path)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(rh.make_run()))
    return path, run


DAMAGES = {
    "keyword": lambda src: src.replace("terms", "termz", 1),
    "truncated": lambda src: src[: len(src) // 2],
    "no-categories": lambda src: src.split("categories")[0],
    "renamed-statistic": lambda src: src.replace("MsgSent", "MsgSnet"),
    "other-module": lambda src: src.replace("interface rts", "interface other", 1),
    "not-text": lambda src: 42,
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_carried_interface_is_the_model_files_fault(model_with_sources, tmp_path, damage):
    path, run = model_with_sources
    data = json.loads(path.read_text())
    data["interfaces"]["rts"]["source"] = DAMAGES[damage](data["interfaces"]["rts"]["source"])
    bad = tmp_path / "damaged.json"
    bad.write_text(json.dumps(data, indent=2))
    for args in (
        ["report", run, "--model", bad],
        ["model", "show", bad],
        ["model", "export-c", bad, "-o", tmp_path / "c"],
    ):
        proc = run_mprof(*args)
        assert_one_line_error(proc, f"{bad}: interfaces.rts")
        assert "rts.perf:" not in proc.stderr  # the original file is not blamed
    assert not (tmp_path / "c").exists()


def test_the_intact_model_prices_without_warnings(model_with_sources):
    import report_helpers as rh

    path, run = model_with_sources
    doc = json.loads(run.read_text())
    for pe in doc["pes"]:  # a run with every statistic of the interfaces
        for obj in pe["objects"]:
            if obj["module"] in rh.PERFS:
                iface = load_interface(rh.PERFS[obj["module"]])
                for s in iface.statistics:
                    obj["stats"].setdefault(s.name, 0)
    run.write_text(json.dumps(doc))
    proc = run_mprof("report", run, "--model", path)
    assert proc.returncode == 0, proc.stderr
    assert "lacks statistic" not in proc.stdout + proc.stderr


def test_a_run_of_another_interface_version_warns_and_names_the_missing(
    model_with_sources, tmp_path
):
    path, run = model_with_sources
    doc = json.loads(run.read_text())
    for pe in doc["pes"]:
        for obj in pe["objects"]:
            if obj["module"] == "rts":
                obj["stats"].pop("MsgSent")
                obj["stats"].pop("RemoteOp")
    run.write_text(json.dumps(doc))
    proc = run_mprof("report", run, "--model", path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    line = next(x for x in text.splitlines() if "lacks statistic" in x)
    assert "module rts" in line and "MsgSent" in line and "RemoteOp" in line
    assert "priced as 0" in line


def test_the_gate_warns_about_runs_of_another_interface_version(tmp_path, model_with_sources):
    from mprof.db.store import ProfileDB

    import report_helpers as rh

    path, _ = model_with_sources
    dbs = []
    for side in ("b", "c"):
        db = tmp_path / f"{side}.db"
        docs = []
        for rep in range(3):
            doc = rh.make_run()
            doc["started_at"] = f"2026-01-01T00:00:0{rep}Z"
            doc["pes"][0]["elapsed_s"] += rep * 1e-3
            docs.append((f"{side}{rep}", doc))
        with ProfileDB(db) as store:
            store.import_documents(docs)
        dbs.append(db)
    out = tmp_path / "gate.json"
    proc = run_mprof(
        "gate",
        "--baseline",
        dbs[0],
        "--candidate",
        dbs[1],
        "--model",
        path,
        "--inconclusive-ok",
        "-q",
        "--json",
        out,
    )
    assert proc.returncode in (0, 1), proc.stderr
    warnings = json.loads(out.read_text())["warnings"]
    assert any("baseline: module rts: the run lacks statistic(s)" in w for w in warnings), warnings
