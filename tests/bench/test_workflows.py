"""The shipped sweep specs and modeling scripts in workflows/."""

import shutil
import tkinter
from pathlib import Path

import pytest

from mprof.bench.spec import load_spec
from mprof.cli import main
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


@pytest.mark.skipif(not RT_WORKLOAD.exists(), reason="rt_workload not built")
def test_runtime_workflow_end_to_end(tmp_path, capsys):
    """Sweep the real runtime into temporary databases and fit with the shipped script."""
    for kind in ("fit", "test"):
        assert main(["bench", str(WORKFLOWS / f"rts/sweep-{kind}.toml"),
                     "--db", str(tmp_path / f"rts-{kind}.db")]) == 0
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
