"""Units that test one hypothesis count once in the multiple-testing correction
(mprof.gate.evaluate._hypothesis): a one-term category's fitted cost in every configuration and
its coefficient are one test, not 2k + 1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB
from mprof.gate.config import GateConfig
from mprof.gate.data import load_side
from mprof.gate.evaluate import REGRESSION, evaluate

REPO = Path(__file__).resolve().parents[2]
FIT = REPO / "benchmarks" / "gate" / "gate_ops.tcl"
SIZES = (10000, 40000)


def write(path: Path, rng, lookup_ns: float, *, reps: int = 5, lookups=lambda nb: nb) -> Path:
    """gate_ops-like runs: t = 1 ms + 50 ns per insert + `lookup_ns` per lookup, 0.5 % noise;
    `lookups(nb)` is the NLookup count recorded."""
    docs = []
    for na in SIZES:
        for nb in SIZES:
            for rep in range(reps):
                t = (1e-3 + 5e-8 * na + lookup_ns * 1e-9 * nb) * float(rng.lognormal(0, 0.005))
                doc = make_profile(
                    "gate_ops",
                    [[("gateops", {"P": 1, "NInsert": na, "NLookup": lookups(nb)})]],
                    [t],
                    params={"na": na, "nb": nb},
                    hostname="gatehost",
                )
                doc["started_at"] = f"2026-01-01T00:00:{rep:02d}Z"
                docs.append((f"{na}:{nb}:{rep}", doc))
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path


def test_a_one_term_category_and_its_coefficient_are_one_hypothesis(tmp_path):
    rng = np.random.default_rng(3)
    base = load_side("baseline", write(tmp_path / "b.db", rng, 60.0))
    cand = load_side("candidate", write(tmp_path / "c.db", rng, 70.0))
    report = evaluate(base, cand, GateConfig(), fit_script=FIT)
    op_b = [u for u in report.units if u.category == "gateops.OP_B" and u.kind in ("fit", "coef")]
    assert len(op_b) == 1 + len(SIZES) ** 2
    assert all(u.verdict == REGRESSION for u in op_b)
    assert len({u.hypothesis for u in op_b}) == 1
    assert len({u.p_adjusted for u in op_b}) == 1
    # distinct hypotheses: the 4 configurations' times and the 3 coefficients (each category
    # has one term); Holm multiplies the smallest p-value by their number, not by all 19 units
    tested = [u for u in report.units if u.comparison is not None]
    assert len(tested) == 4 + 4 * 3 + 3
    distinct = {u.hypothesis or u.id for u in tested}
    assert len(distinct) == 4 + 3
    p = max(u.comparison.p_regression for u in op_b)  # equal but for rounding
    assert p == pytest.approx(min(u.comparison.p_regression for u in tested), rel=1e-9)
    assert op_b[0].p_adjusted == pytest.approx(min(1.0, 7 * p), rel=1e-6)


def test_different_counts_are_a_behaviour_change_not_a_cost(tmp_path):
    """When the candidate's counts differ, its fitted category cost is still priced at the
    baseline's term values: the fit units compare unit costs (here: a lookup half as dear,
    counted twice: -75 % per counted lookup), and the change in the counts is the statistics'
    behaviour change."""
    rng = np.random.default_rng(4)
    base = load_side("baseline", write(tmp_path / "b.db", rng, 60.0))
    cand = load_side("candidate", write(tmp_path / "c.db", rng, 30.0, lookups=lambda nb: 2 * nb))
    report = evaluate(base, cand, GateConfig(), fit_script=FIT)
    per_config = [u for u in report.units if u.kind == "fit" and u.category == "gateops.OP_B"]
    coef = next(u for u in report.units if u.id == "fit::gateops.OP_B:Lookup")
    assert per_config and all(u.hypothesis == coef.hypothesis for u in per_config)
    assert all(u.comparison.change == pytest.approx(coef.comparison.change) for u in per_config)
    assert coef.comparison.change == pytest.approx(-0.75, abs=0.05)
    assert any(
        u.verdict == "BEHAVIOUR CHANGE" and u.id.endswith("::stat:gateops.NLookup")
        for u in report.units
    )
