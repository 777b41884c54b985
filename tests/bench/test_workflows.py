"""The shipped sweep specs and modeling scripts in workflows/."""

import re
import shutil
import tkinter
from pathlib import Path

import pytest

from mprof.bench.spec import load_spec
from mprof.cli import main
from mprof.db.store import ProfileDB
from mprof.model import load_model

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "workflows"
RT_WORKLOAD = ROOT / "build/benchmarks/micro/rt_workload"


@pytest.mark.parametrize("spec", sorted(WORKFLOWS.glob("*/*.toml")), ids=lambda p: p.name)
def test_specs_load(spec):
    loaded = load_spec(spec)
    assert loaded.root == ROOT and loaded.points()
    assert str(loaded.database).startswith(str(ROOT / "build"))


@pytest.mark.parametrize("script", sorted(WORKFLOWS.glob("*/*.tcl")), ids=lambda p: p.parent.name)
def test_scripts_are_complete_tcl(script):
    assert tkinter.Tcl().call("info", "complete", script.read_text())


def test_runtime_workflow_end_to_end(cmake_build, tmp_path, capsys, monkeypatch):
    """Sweep the real runtime into temporary databases and fit with the shipped script: the
    shipped sweeps with one repetition each and no waiting for a steady machine (the probe
    still runs around every point).  rt_workload is built first (a stale or missing binary
    would test nothing)."""
    assert cmake_build("build", targets=["rt_workload"]) / "benchmarks/micro/rt_workload" == (
        RT_WORKLOAD
    )
    specs = []
    for kind in ("fit", "test"):
        text = (WORKFLOWS / f"rts/sweep-{kind}.toml").read_text()
        text = re.sub(r"(?m)^repetitions = \d+", "repetitions = 1", text)
        text = re.sub(r"(?m)^patience_s = \d+", "patience_s = 0", text)
        text = text.replace('root = "../.."', f'root = "{ROOT}"')
        text = text.replace('"build/workflows/', f'"{tmp_path}/')
        assert f'"{tmp_path}/rts-{kind}.db"' in text and "patience_s = 0" in text
        specs.append(tmp_path / f"sweep-{kind}.toml")
        specs[-1].write_text(text)
    assert main(["bench", *map(str, specs)]) == 0
    with ProfileDB(tmp_path / "rts-fit.db") as db:
        docs = [doc for _, doc in db.documents()]
    assert len(docs) == 32 and all(len(doc["bench"]["probe_s"]) == 2 for doc in docs)
    text = (WORKFLOWS / "rts/model.tcl").read_text()
    text = text.replace("../../build/workflows/", f"{tmp_path}/").replace("../../", f"{ROOT}/")
    shutil.copy(WORKFLOWS / "rts/model.tcl", tmp_path / "orig.tcl")
    (tmp_path / "model.tcl").write_text(text)
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "model.tcl")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Chi-square: ") and "rts:ByteSent: " in out
    model = load_model(tmp_path / "rts.model.json")
    assert model.quality["rank"] == len(model.fitted)
    assert model.quality["n_test"] > 0
    # another test database (MPROF_RTS_TEST, as for sweep-test8.toml's): tested, not saved
    (tmp_path / "rts.model.json").unlink()
    shutil.copy(tmp_path / "rts-test.db", tmp_path / "rts-other.db")
    monkeypatch.setenv("MPROF_RTS_TEST", "rts-other.db")
    assert main(["fit", str(tmp_path / "model.tcl")]) == 0
    assert "Test MRE: " in capsys.readouterr().out
    assert not (tmp_path / "rts.model.json").exists()
