"""Runs disturbed by interference are left out of the gate's fits (mprof.gate.disturbed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB
from mprof.errors import MprofError
from mprof.gate.config import GateConfig, config_from_dict
from mprof.gate.data import load_side
from mprof.gate.disturbed import disturbed_runs, without_runs
from mprof.gate.evaluate import evaluate

REPO = Path(__file__).resolve().parents[2]
FIT = REPO / "benchmarks" / "gate" / "gate_ops.tcl"
SIZES = (10000, 40000)


def gate_ops_docs(rng, reps=5):
    """gate_ops-like runs: t = 1 ms + 50 ns per insert + 60 ns per lookup, 0.5 % noise."""
    docs = []
    for na in SIZES:
        for nb in SIZES:
            for rep in range(reps):
                t = (1e-3 + 5e-8 * na + 6e-8 * nb) * float(rng.lognormal(0.0, 0.005))
                doc = make_profile("gate_ops", [[("gateops", {"P": 1, "NInsert": na,
                                                              "NLookup": nb})]], [t],
                                   params={"na": na, "nb": nb}, hostname="gatehost")
                doc["started_at"] = f"2026-01-01T00:00:{rep:02d}Z"
                docs.append((f"{na}:{nb}:{rep}", doc))
    return docs


def write(path, docs):
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path


def disturbed_copy(docs, slower=1.3):
    """The same runs plus one more of the first configuration, `slower` times as long."""
    na, nb = SIZES[0], SIZES[0]
    t = (1e-3 + 5e-8 * na + 6e-8 * nb) * slower
    extra = make_profile("gate_ops", [[("gateops", {"P": 1, "NInsert": na, "NLookup": nb})]],
                         [t], params={"na": na, "nb": nb}, hostname="gatehost")
    extra["started_at"] = "2026-01-01T00:01:00Z"
    return docs + [("disturbed", extra)]


def test_a_disturbed_run_is_found_and_left_out_of_a_copy(tmp_path):
    docs = gate_ops_docs(np.random.default_rng(1))
    side = load_side("candidate", write(tmp_path / "c.db", disturbed_copy(docs)))
    bad = disturbed_runs(side, 0.10)
    assert len(bad) == 1 and bad[0][1] == pytest.approx(0.3, abs=0.02)
    assert disturbed_runs(side, 0.0) == [] and disturbed_runs(side, 0.5) == []
    clean = without_runs(side, [r for r, _ in bad], tmp_path)
    assert len(clean.runs) == len(side.runs) - 1
    assert len(load_side("x", clean.database).runs) == len(side.runs) - 1
    assert len(load_side("x", side.database).runs) == len(side.runs)  # original untouched


def test_the_fit_of_a_side_with_a_disturbed_run_equals_the_clean_fit(tmp_path):
    docs = gate_ops_docs(np.random.default_rng(2))
    base = load_side("baseline", write(tmp_path / "b.db", docs))
    cand = load_side("candidate", write(tmp_path / "c.db", disturbed_copy(docs)))
    report = evaluate(base, cand, config_from_dict({"defaults": {"disturbed": 0.1}}),
                      fit_script=FIT)
    coef = {u.id: u for u in report.units if u.id.startswith("fit::")}
    assert coef["fit::gateops.OP_B:Lookup"].comparison.change == pytest.approx(0, abs=1e-9)
    assert coef["fit::gateops.OP_A:Insert"].comparison.change == pytest.approx(0, abs=1e-9)
    assert any("left out of the fit as disturbed" in w and "+30%" in w
               for w in report.warnings), report.warnings
    # with the filter off (the default) the disturbed run moves the candidate's coefficients
    kept = evaluate(base, cand, GateConfig(), fit_script=FIT)
    change = next(u for u in kept.units if u.id == "fit::gateops.OP_A:Insert").comparison
    assert abs(change.change) > 1e-4


def test_config_key(tmp_path):
    assert config_from_dict({"defaults": {"disturbed": 0.2}}).disturbed_limit == 0.2
    assert GateConfig().disturbed_limit == 0.0  # off by default (docs/gate.md)
    with pytest.raises(MprofError, match="defaults.disturbed"):
        config_from_dict({"defaults": {"disturbed": -1}})
