"""One cost-model engine: the fit, the report and model files price with the same term
evaluation and the same arithmetic, so a run's cost cannot differ between them."""

import numpy as np
import pytest
from model_helpers import GRAPH_PERF, PIPE_PERF, ROOT, TRUTH, pipe_objects, true_time

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB
from mprof.errors import MprofError
from mprof.iface import load_interface
from mprof.model import load_model
from mprof.model.samples import load_samples, make_design
from mprof.model.session import FitSession
from mprof.model.terms import TermEvaluator, TermMatrix
from mprof.profile import ObjectRecord
from mprof.report.build import build_report

PTEST_PERF = ROOT / "tests/c/ecosystem/ptest.perf"


def synthetic_runs(rng, runs=12):
    docs = []
    for r in range(runs):
        pe_objects = [pipe_objects(rng) for _ in range(2 + r % 3)]
        times = [true_time(objs, TRUTH) * (1 + rng.normal(0.0, 0.02)) for objs in pe_objects]
        docs.append(make_profile("pipe", pe_objects, times, params={"run": r}))
    return docs


@pytest.fixture
def fit_data(tmp_path):
    docs = synthetic_runs(np.random.default_rng(7))
    with ProfileDB(tmp_path / "fit.db") as db:
        db.import_documents([(f"run{i}.json", doc) for i, doc in enumerate(docs)])
    return tmp_path / "fit.db", docs


def fit(tmp_path, db, granularity):
    """A fit with fitted, fixed and ignored parameters (the fixed ones are priced from the
    fit's offset, the others from its unknowns)."""
    session = FitSession(base_dir=tmp_path, granularity=granularity)
    session.add_database(str(db))
    session.load_interface(str(PIPE_PERF))
    session.load_interface(str(GRAPH_PERF))
    session.ignore_terms("pipe", ["P"])
    session.fix_parameter("graph", "Data", repr(TRUTH["graph:Data"]))
    session.save_model(str(tmp_path / "m.json"))
    outcome = session.fit()
    model = load_model(tmp_path / "m.json")  # priced as a reader of the file prices it
    imported = {n: model.values[n] for n in model.imported}
    samples = load_samples([db], session.interfaces, granularity, measure=model.settings["measure"])
    design = make_design(samples, imported, set(model.ignored))
    assert design.imported == ["graph:Data"] and design.offset.any()
    return model, samples, outcome.result.predict(design)


def test_a_fit_samples_report_total_is_the_fits_prediction(tmp_path, fit_data):
    db, docs = fit_data
    model, samples, predicted = fit(tmp_path, db, "run")
    assert samples.n == len(docs)
    for i, doc in enumerate(docs):
        assert samples.labels[i].endswith(f"run {i + 1}")
        report = build_report(doc, model)
        assert report.model_total == pytest.approx(predicted[i], rel=1e-12, abs=0)


def test_a_fit_samples_pe_cost_in_the_report_is_the_fits_prediction(tmp_path, fit_data):
    db, docs = fit_data
    model, samples, predicted = fit(tmp_path, db, "pe")
    row = 0
    for doc in docs:
        report = build_report(doc, model)
        for pe in report.pes:
            assert pe.model_s == pytest.approx(predicted[row], rel=1e-12, abs=0)
            row += 1
        assert report.model_total == pytest.approx(sum(p.model_s for p in report.pes), rel=1e-12)
    assert row == samples.n


def test_pricing_a_matrix_prices_each_row_as_alone(tmp_path, fit_data):
    db, docs = fit_data
    model, _, _ = fit(tmp_path, db, "run")
    names = ["pipe:Comp", "graph:P", "graph:Op", "graph:Data", "pipe:P", "graph:NoSuch"]
    values = np.random.default_rng(3).uniform(0, 1e4, (5, len(names)))
    together = model.price(TermMatrix(names, values))
    for i, row in enumerate(values):
        alone = model.price(dict(zip(names, row)))
        assert together[i].seconds == pytest.approx(alone.seconds, rel=1e-13)
        assert together[i].variance == pytest.approx(alone.variance, rel=1e-9)
    # the ignored term (pipe:P) and a term without a parameter cost nothing
    plain = model.price(TermMatrix(names[:4], values[:, :4]))
    assert np.allclose(plain.seconds, together.seconds, rtol=1e-13, atol=0)
    assert np.all(together.seconds > 0) and np.all(together.variance > 0)


def ptest():
    return {"ptest": load_interface(PTEST_PERF)}


def test_a_papi_statistic_the_run_lacks_is_absent_not_zero():
    # NSend is an ordinary statistic: lacking, it reads as 0; L1Miss is bound to a PAPI event
    # the run could not count: the term that needs it has no value
    records = [ObjectRecord(0, "ptest", {"P": 1, "Ops": 3})]
    matrix = TermEvaluator(ptest()).matrix([records])
    assert matrix.names == ["ptest:P", "ptest:Send", "ptest:Miss"]
    assert matrix.row(0)["ptest:P"] == 1 and matrix.row(0)["ptest:Send"] == 0
    assert np.isnan(matrix.row(0)["ptest:Miss"])
    assert list(matrix.absent) == ["ptest:Miss"]
    assert "needs statistic ptest::L1Miss (PAPI event PAPI_L1_DCM)" in matrix.absent["ptest:Miss"]
    counted = TermEvaluator(ptest()).matrix([[ObjectRecord(0, "ptest", {"L1Miss": 5})]])
    assert counted.row(0)["ptest:Miss"] == 5 and not counted.absent


def ptest_model(tmp_path, rng, *, ignore_miss):
    """A model of ptest fitted on runs that counted L1Miss."""
    docs = []
    for r in range(8):
        stats = {
            "P": 1,
            "NSend": int(rng.integers(1, 100)),
            "Ops": 0,
            "L1Miss": int(rng.integers(1, 1000)),
        }
        t = 1e-3 + 2e-5 * stats["NSend"] + 3e-7 * stats["L1Miss"] + rng.normal(0, 1e-6)
        docs.append((f"r{r}.json", make_profile("p", [[("ptest", stats)]], [t], params={"r": r})))
    with ProfileDB(tmp_path / "p.db") as db:
        db.import_documents(docs)
    session = FitSession(base_dir=tmp_path)
    session.add_database(str(tmp_path / "p.db"))
    session.load_interface(str(PTEST_PERF))
    if ignore_miss:
        session.ignore_terms("ptest", ["Miss"])
    return session.fit().model


def test_pricing_refuses_a_term_whose_papi_statistic_the_run_lacks(tmp_path):
    rng = np.random.default_rng(5)
    lacking = [ObjectRecord(0, "ptest", {"P": 1, "NSend": 10, "Ops": 0})]
    model = ptest_model(tmp_path, rng, ignore_miss=False)
    assert model.values["ptest:Miss"] > 0
    with pytest.raises(
        MprofError,
        match=r"ptest::L1Miss \(PAPI event PAPI_L1_DCM\).*"
        r"the model prices that term \(parameter ptest:Miss\)",
    ):
        model.price(model.priced_terms(lacking))
    # a model that does not price the term prices the run
    model = ptest_model(tmp_path, rng, ignore_miss=True)
    estimate = model.price(model.priced_terms(lacking))
    assert estimate.seconds == pytest.approx(
        model.values["ptest:P"] + 10 * model.values["ptest:Send"]
    )
