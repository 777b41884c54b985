"""Statistical behaviour through the whole pipeline: synthetic run profiles -> database ->
samples -> SVD fit.  The 90 % intervals must contain the true coefficients about 90 % of the
time."""

import numpy as np
from model_helpers import GRAPH_PERF, PIPE_PERF, TRUTH, build_db
from scipy import stats

from mprof.model.session import FitSession


def test_intervals_cover_truth_at_stated_rate(tmp_path):
    rng = np.random.default_rng(1995)
    trials, hits, total, param_hits = 200, 0, 0, []
    for trial in range(trials):
        db = build_db(tmp_path / f"t{trial}.db", rng, runs=5, npes=(2, 3), noise=2e-3)
        session = FitSession(base_dir=tmp_path)
        session.add_database(db.name)
        session.load_interface(str(PIPE_PERF))
        session.load_interface(str(GRAPH_PERF))
        session.ignore_terms("pipe", ["P"])
        result = session.fit().result
        inside = [
            abs(result.parameter(name)[0] - truth) <= result.parameter(name)[1]
            for name, truth in TRUTH.items()
        ]
        param_hits.append(inside)
        hits += sum(inside)
        total += len(inside)
    # Each parameter's coverage is Binomial(200, 0.9): accept anything a two-sided 0.1 % test
    # would not reject.
    low, high = stats.binom.ppf([0.0005, 0.9995], trials, 0.90) / trials
    per_param = np.mean(param_hits, axis=0)
    assert all(low <= rate <= high for rate in per_param), per_param
    assert low <= hits / total <= high
