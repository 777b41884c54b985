"""What the gate compares: measured CPU time per access category, refitted unit costs, never
a fixed or imported parameter as if it were data; the correction within the family asked
about (--focus)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mprof.cli import main
from mprof.gate.config import config_from_dict
from mprof.gate.data import load_side
from mprof.gate.evaluate import BEHAVIOUR, INCONCLUSIVE, INFO, PASS, REGRESSION, evaluate
from mprof.gate.stats import compare_strata

from gate_synth import write_category_db, write_dca_model


def _report(base, cand, **kw):
    return evaluate(
        load_side("baseline", base), load_side("candidate", cand), config_from_dict({}), **kw
    )


def test_aa_with_category_times_flags_nothing(tmp_path):
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        base = write_category_db(tmp_path / f"b{seed}.db", rng)
        cand = write_category_db(tmp_path / f"c{seed}.db", rng)
        report = _report(base, cand)
        ids = {u.id for u in report.units}
        assert {"cat:dca:UPDATE", "cat:dca:LOOKUP", "cat:(idle)"} <= ids, ids
        flagged = [u.id for u in report.units if u.verdict in (REGRESSION, BEHAVIOUR)]
        assert not flagged, flagged


def test_slower_operation_is_found_in_its_category(tmp_path, capsys):
    """A 67 % slower update: its category is a REGRESSION over all configurations, the
    other categories are not; the configurations' total times contain it."""
    rng = np.random.default_rng(1)
    base = write_category_db(tmp_path / "b.db", rng, reps=4)
    cand = write_category_db(tmp_path / "c.db", rng, reps=4, slow={"dca:UPDATE": 1.67})
    report = _report(base, cand)
    v = {u.id: u for u in report.units}
    assert v["cat:dca:UPDATE"].verdict == REGRESSION
    assert 0.55 < v["cat:dca:UPDATE"].comparison.change < 0.8
    assert v["cat:dca:UPDATE"].comparison.n_baseline == 3 * 2 * 4 // 2  # 3 configs x 4 runs
    assert v["cat:dca:LOOKUP"].verdict != REGRESSION
    assert v["cat:(scheduler)"].verdict != REGRESSION
    assert main(["gate", "--baseline", str(base), "--candidate", str(cand), "-q"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_category_with_few_samples_is_reported_not_gated(tmp_path):
    """A category whose time rests on fewer than MIN_CATEGORY_SAMPLES samples per run is
    compared and shown, but never gates, and the power check leaves it out: sampled every
    4 ms (the kernel tick), a 2-8 ms phase is 1-2 samples, +-1 the size of any change."""
    from mprof.gate.evaluate import MIN_CATEGORY_SAMPLES
    from mprof.gate.power import check

    rng = np.random.default_rng(1)
    base = write_category_db(tmp_path / "b.db", rng, reps=4, sample_s=4e-3)
    cand = write_category_db(
        tmp_path / "c.db", rng, reps=4, sample_s=4e-3, slow={"dca:UPDATE": 1.67}
    )
    report = _report(base, cand)
    update = {u.id: u for u in report.units}["cat:dca:UPDATE"]
    assert update.verdict == INFO
    assert "would be REGRESSION" in update.note
    assert f"fewer than {MIN_CATEGORY_SAMPLES}" in update.note
    lines = {p.unit for p in check(load_side("baseline", base)).lines}
    assert "cat:dca:UPDATE" not in lines and "::time" in lines
    # sampled finely enough, the same change gates
    base = write_category_db(tmp_path / "b2.db", rng, reps=4, sample_s=1e-4)
    cand = write_category_db(
        tmp_path / "c2.db", rng, reps=4, sample_s=1e-4, slow={"dca:UPDATE": 1.67}
    )
    assert {u.id: u for u in _report(base, cand).units}["cat:dca:UPDATE"].verdict == REGRESSION


def test_runs_without_category_times_compare_busy_time(tmp_path):
    rng = np.random.default_rng(2)
    base = write_category_db(tmp_path / "b.db", rng, categories=False)
    cand = write_category_db(tmp_path / "c.db", rng, categories=False, slow={"dca:UPDATE": 1.67})
    report = _report(base, cand)
    v = {u.id: u.verdict for u in report.units}
    assert v["cat:(busy)"] == REGRESSION
    assert not any(i.startswith("cat:dca") for i in v)


def test_fixed_parameter_is_never_compared_as_data(tmp_path):
    """A/A with a modeling script that fixes the idle CPU time's parameter at 1 (as the
    runtime's model does): the idle category's cost is the measured idle time priced at a
    constant, not a fitted unit cost; it must not be compared as 'constant on both sides'.
    The idle time scatters by 30 % here, so comparing it exactly would flag it."""
    script = write_dca_model(tmp_path)
    alarms = []
    for seed in range(4):
        rng = np.random.default_rng(200 + seed)
        base = write_category_db(tmp_path / f"b{seed}.db", rng, reps=3)
        cand = write_category_db(tmp_path / f"c{seed}.db", rng, reps=3)
        report = _report(base, cand, fit_script=script)
        ids = {u.id for u in report.units}
        assert "fit::dca.UPDATE:Update" in ids and "fit::dca.LOOKUP:Lookup" in ids
        assert not any("rtx.IDLE" in i or "IdleCpu" in i for i in ids), ids
        assert "rtx:IdleCpu" in report.not_compared
        assert "fixed" in report.not_compared["rtx:IdleCpu"]
        assert not any(
            u.comparison is not None and "constant on both sides" in u.comparison.note
            for u in report.units
        )
        alarms += [u.id for u in report.units if u.verdict in (REGRESSION, BEHAVIOUR)]
    assert not alarms, alarms


def test_refitted_unit_cost_of_a_slower_operation_is_flagged(tmp_path):
    script = write_dca_model(tmp_path)
    rng = np.random.default_rng(3)
    base = write_category_db(tmp_path / "b.db", rng, reps=3)
    cand = write_category_db(tmp_path / "c.db", rng, reps=3, slow={"dca:UPDATE": 1.67})
    report = _report(base, cand, fit_script=script)
    v = {u.id: u for u in report.units}
    assert v["fit::dca.UPDATE:Update"].verdict == REGRESSION
    assert v["fit::dca.LOOKUP:Lookup"].verdict != REGRESSION


def test_model_costs_of_counts_do_not_gate(tmp_path):
    """--model prices each run's counts with the model's unit costs, which are the same on both
    sides: a change there is a change in counts, never a measured slowdown. Those units are
    informational; the measured category times find the slower operation."""
    script = write_dca_model(tmp_path)
    rng = np.random.default_rng(4)
    base = write_category_db(tmp_path / "b.db", rng, reps=4)
    cand = write_category_db(tmp_path / "c.db", rng, reps=4, slow={"dca:UPDATE": 1.67})
    model = tmp_path / "dca.model.json"
    (tmp_path / "save.tcl").write_text(
        script.read_text().replace("unused.db", str(base)) + f"SaveModel {model}\n"
    )
    assert main(["fit", str(tmp_path / "save.tcl")]) == 0
    from mprof.model import load_model

    report = _report(base, cand, model=load_model(model))
    costs = [u for u in report.units if u.kind == "cost"]
    assert costs and all(u.verdict in (PASS, INFO) for u in costs)
    assert {u.id: u.verdict for u in report.units}["cat:dca:UPDATE"] == REGRESSION


def test_focus_corrects_within_the_family_and_reports_the_rest(tmp_path, capsys):
    """--focus dca: the correction counts dca's units only; a change elsewhere (the idle loop)
    is reported as INFO and does not gate, nor do the configurations' times."""
    rng = np.random.default_rng(5)
    sizes = tuple(1000 * (k + 1) for k in range(12))
    base = write_category_db(tmp_path / "b.db", rng, reps=3, sizes=sizes, idle_sigma=0.05)
    cand = write_category_db(
        tmp_path / "c.db",
        rng,
        reps=3,
        sizes=sizes,
        slow={"dca:UPDATE": 1.7, "(idle)": 1.7},
        idle_sigma=0.05,
    )
    report = _report(base, cand, focus=["dca"])
    v = {u.id: u for u in report.units}
    assert v["cat:dca:UPDATE"].verdict == REGRESSION and v["cat:dca:UPDATE"].in_focus
    # outside the focus: reported, not gating
    idle = v["cat:(idle)"]
    assert not idle.in_focus and idle.verdict == INFO and "outside the focus" in idle.note
    times = [u for u in report.units if u.kind == "time"]
    assert times and all(u.verdict in (INFO, PASS) for u in times)
    out = tmp_path / "r.json"
    args = ["gate", "--baseline", str(base), "--candidate", str(cand), "-q", "--json", str(out)]
    assert main(args + ["--focus", "dca"]) == 1
    data = json.loads(out.read_text())
    assert data["focus"] == ["dca"]
    assert main(args + ["--focus", "cat:(idle)"]) == 1
    assert main(args + ["--focus", "nosuchmodule"]) == 2
    assert "matches no unit" in capsys.readouterr().err


def test_stratified_comparison_basics():
    rng = np.random.default_rng(9)
    strata = [
        (rng.lognormal(np.log(s), 0.02, 4), rng.lognormal(np.log(s * 1.3), 0.02, 4))
        for s in (1.0, 2.0, 5.0)
    ]
    c = compare_strata(strata, 0.05, 0.05)
    assert c.p_regression < 0.001 and 0.2 < c.change < 0.4 and c.low > 0.05
    same = [
        (rng.lognormal(np.log(s), 0.02, 4), rng.lognormal(np.log(s), 0.02, 4))
        for s in (1.0, 2.0, 5.0)
    ]
    c = compare_strata(same, 0.05, 0.05)
    assert c.p_regression > 0.5 and c.high < 0.05
    # exact null distribution: every candidate above every baseline in 3 strata of 2 + 2
    tiny = [([1.0, 1.01], [2.0, 2.01])] * 3
    c = compare_strata(tiny, 0.0, 0.05)
    assert c.p_regression == pytest.approx((1 / 6) ** 3)


def test_category_units_with_one_candidate_run_per_configuration_count_the_runs(tmp_path):
    """No configuration has 2 candidate runs: the category units have no test, but say how
    many runs they rest on (3 configurations x 6 and x 1) and estimate the change, instead of
    n 0/0, no values and bounds of -inf and +inf."""
    rng = np.random.default_rng(5)
    base = write_category_db(tmp_path / "b.db", rng, reps=6)
    cand = write_category_db(tmp_path / "c.db", rng, reps=1, slow={"dca:UPDATE": 1.5})
    units = {u.id: u for u in _report(base, cand).units}
    for name in ("cat:dca:UPDATE", "cat:dca:LOOKUP", "cat:(scheduler)", "cat:(idle)"):
        c = units[name].comparison
        assert (c.n_baseline, c.n_candidate) == (18, 3)
        assert not c.tested and not c.bounded
        assert units[name].verdict == INCONCLUSIVE and units[name].p_adjusted is None
        assert math.isfinite(c.baseline) and math.isfinite(c.candidate)
    assert 0.3 < units["cat:dca:UPDATE"].comparison.change < 0.7
    assert abs(units["cat:dca:LOOKUP"].comparison.change) < 0.1


def test_stratified_comparison_says_which_configurations_it_left_out():
    rng = np.random.default_rng(13)
    strata = [(rng.lognormal(0.0, 0.02, 6), rng.lognormal(0.0, 0.02, 6)) for _ in range(2)]
    c = compare_strata(strata + [([1.0] * 6, [1.0])], 0.05, 0.05)
    assert c.tested and c.bounded and (c.n_baseline, c.n_candidate) == (12, 12)
    assert "left out: 1 configuration with fewer than 2 runs on a side" in c.note


def test_category_times_of_runs_imported_before_the_table_are_read_after_migration(tmp_path):
    """A database that held runs with category times before it kept them in category_time
    (only their documents had them): opening it fills the table from the documents, and the
    gate sees them."""
    import sqlite3

    from profile_roundtrip import insert_as_schema_5

    from mprof.db import schema
    from mprof.db.store import ProfileDB

    rng = np.random.default_rng(31)
    base = write_category_db(tmp_path / "b.db", rng, reps=4)
    new = write_category_db(tmp_path / "new.db", rng, reps=4, slow={"dca:UPDATE": 1.67})
    with ProfileDB(new) as db:
        docs = [doc for _, doc in db.documents()]
    cand = tmp_path / "c.db"
    conn = sqlite3.connect(cand, isolation_level=None)
    schema.migrate(conn, target=5)
    for doc in docs:
        insert_as_schema_5(conn, doc, tables_since=(3, 4))  # not category_time
    assert conn.execute("SELECT COUNT(*) FROM category_time").fetchone() == (0,)
    conn.close()
    side = load_side("candidate", cand)
    assert all(r.profile.has_categories for r in side.runs)
    assert all(r.categories and "dca:UPDATE" in r.categories for r in side.runs)
    report = _report(base, cand)
    assert {u.id: u.verdict for u in report.units}["cat:dca:UPDATE"] == REGRESSION
