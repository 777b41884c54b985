"""Runs disturbed by interference are left out of the gate's fits (mprof.gate.disturbed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB
from mprof.errors import MprofError
from mprof.gate.config import GateConfig, config_from_dict
from mprof.gate.data import load_side
from mprof.gate.disturbed import disturbed_runs, slower_than_fastest, without_runs
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
                doc = make_profile(
                    "gate_ops",
                    [[("gateops", {"P": 1, "NInsert": na, "NLookup": nb})]],
                    [t],
                    params={"na": na, "nb": nb},
                    hostname="gatehost",
                )
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
    extra = make_profile(
        "gate_ops",
        [[("gateops", {"P": 1, "NInsert": na, "NLookup": nb})]],
        [t],
        params={"na": na, "nb": nb},
        hostname="gatehost",
    )
    extra["started_at"] = "2026-01-01T00:01:00Z"
    return docs + [("disturbed", extra)]


def test_a_disturbed_run_is_found_and_left_out_in_memory(tmp_path):
    docs = gate_ops_docs(np.random.default_rng(1))
    side = load_side("candidate", write(tmp_path / "c.db", disturbed_copy(docs)))
    bad = disturbed_runs(side, 0.10)
    assert len(bad) == 1 and bad[0][1] == pytest.approx(0.3, abs=0.02)
    assert disturbed_runs(side, 0.0) == [] and disturbed_runs(side, 0.5) == []
    clean = without_runs(side, [r for r, _ in bad])
    assert len(clean.runs) == len(side.runs) - 1
    # what the side's fits read lacks the run too; the database is only read
    assert len(clean.run_set) == len(side.run_set) - 1
    assert bad[0][0].profile not in clean.run_set.runs
    assert clean.run_set.modules == side.run_set.modules == {"gateops"}
    assert len(load_side("x", side.database).runs) == len(side.runs)


def test_the_fit_of_a_side_with_a_disturbed_run_equals_the_clean_fit(tmp_path):
    docs = gate_ops_docs(np.random.default_rng(2))
    base = load_side("baseline", write(tmp_path / "b.db", docs))
    cand = load_side("candidate", write(tmp_path / "c.db", disturbed_copy(docs)))
    report = evaluate(
        base, cand, config_from_dict({"defaults": {"disturbed": 0.1, "fastest": 0}}), fit_script=FIT
    )
    coef = {u.id: u for u in report.units if u.id.startswith("fit::")}
    assert coef["fit::gateops.OP_B:Lookup"].comparison.change == pytest.approx(0, abs=1e-9)
    assert coef["fit::gateops.OP_A:Insert"].comparison.change == pytest.approx(0, abs=1e-9)
    assert any("left out of the fit as disturbed" in w and "+30%" in w for w in report.warnings), (
        report.warnings
    )
    # with both filters off the disturbed run moves the candidate's coefficients
    kept = evaluate(base, cand, config_from_dict({"defaults": {"fastest": 0}}), fit_script=FIT)
    change = next(u for u in kept.units if u.id == "fit::gateops.OP_A:Insert").comparison
    assert abs(change.change) > 1e-4


def test_the_fits_use_each_configurations_fastest_runs_by_default(tmp_path):
    docs = gate_ops_docs(np.random.default_rng(5))
    side = load_side("candidate", write(tmp_path / "c.db", disturbed_copy(docs, slower=0.9)))
    slower = slower_than_fastest(side, 2)
    assert len(slower) == len(side.runs) - 2 * len(SIZES) ** 2
    assert slower_than_fastest(side, 0) == []
    assert all(x >= 0 for _, x in slower)
    left_out = {id(r) for r, _ in slower}
    first = [r for r in side.runs if r.params == {"na": SIZES[0], "nb": SIZES[0]}]
    assert len(first) == 6
    extra = min(first, key=lambda r: r.elapsed_s)  # the added run, 10 % faster than the rest
    assert id(extra) not in left_out
    # a candidate with the same runs and three more of every configuration, 50 % slower: its
    # two fastest runs per configuration are the baseline's, and so are its coefficients
    base = load_side("baseline", write(tmp_path / "b.db", docs))
    slow = []
    for key, doc in docs:
        for i in range(3):
            copy = json.loads(json.dumps(doc))
            copy["started_at"] = f"2026-01-01T00:02:{i:02d}Z"
            copy["elapsed_s"] *= 1.5
            copy["pes"][0]["elapsed_s"] *= 1.5
            slow.append((f"{key}:slow{i}", copy))
    cand = load_side("candidate", write(tmp_path / "c2.db", docs + slow))
    report = evaluate(base, cand, GateConfig(), fit_script=FIT)
    for uid in ("fit::gateops.OP_A:Insert", "fit::gateops.OP_B:Lookup"):
        change = next(u for u in report.units if u.id == uid).comparison.change
        assert change == pytest.approx(0, abs=1e-9)
    assert report.to_json()["settings"]["fastest"] == 2
    # fitting every run, the slow ones move the candidate's coefficients
    every = evaluate(base, cand, config_from_dict({"defaults": {"fastest": 0}}), fit_script=FIT)
    change = next(u for u in every.units if u.id == "fit::gateops.OP_B:Lookup").comparison
    assert change.change > 0.1


def test_config_keys(tmp_path):
    assert config_from_dict({"defaults": {"disturbed": 0.2}}).disturbed_limit == 0.2
    assert GateConfig().disturbed_limit == 0.0  # off by default (docs/gate.md)
    with pytest.raises(MprofError, match="defaults.disturbed"):
        config_from_dict({"defaults": {"disturbed": -1}})
    assert GateConfig().fastest == 2  # docs/gate.md
    assert config_from_dict({"defaults": {"fastest": 0}}).fastest == 0
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(MprofError, match="defaults.fastest"):
            config_from_dict({"defaults": {"fastest": bad}})


def _with_cpu(docs, wall_factor: float):
    """Schema-2 copies of the runs: CPU time as generated, wall time `wall_factor` times it
    (a PE preempted or asleep)."""
    out = []
    for key, doc in docs:
        doc = json.loads(json.dumps(doc))
        doc["schema_version"] = 2
        for pe in doc["pes"]:
            pe["cpu_s"], pe["idle_cpu_s"] = pe["elapsed_s"], 0.0
            pe["elapsed_s"] *= wall_factor
        doc["elapsed_s"] *= wall_factor
        out.append((key, doc))
    return out


def test_time_units_compare_cpu_time_by_default(tmp_path):
    docs = gate_ops_docs(np.random.default_rng(6), reps=6)
    base = load_side("baseline", write(tmp_path / "b.db", _with_cpu(docs, 1.0)))
    cand = load_side("candidate", write(tmp_path / "c.db", _with_cpu(docs, 1.5)))
    times = lambda report: {u.verdict for u in report.units if u.kind == "time"}  # noqa: E731
    assert times(evaluate(base, cand, GateConfig())) == {"PASS"}
    assert GateConfig().measure == "cpu"
    elapsed = evaluate(base, cand, config_from_dict({"defaults": {"measure": "elapsed"}}))
    assert times(elapsed) == {"REGRESSION"}
    assert elapsed.to_json()["settings"]["measure"] == "elapsed"
    with pytest.raises(MprofError, match="defaults.measure"):
        config_from_dict({"defaults": {"measure": "wall"}})
