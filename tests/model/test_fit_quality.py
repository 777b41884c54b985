"""What a fit says about itself: uncertainty that includes imported parameters, the lack-of-fit
test that tells noise from a missing term, and the warnings a user must not miss."""

import numpy as np
import pytest
from model_helpers import GRAPH_PERF, PIPE_PERF, build_db
from scipy import stats

from mprof.model.fit import Design, FitOptions, column_norms, solve
from mprof.model.session import FitSession

CONF = 0.90


def _binomial_range(trials: int, p: float) -> tuple[float, float]:
    low, high = stats.binom.ppf([0.0005, 0.9995], trials, p) / trials
    return low, high


def _imported_trial(rng, use_import_cov: bool) -> bool:
    """A runtime session fits two unit costs; a library session imports them and fits its
    own.  Returns whether the 90 % band of a cost that uses both covers the true cost."""
    c_rt, c_lib = np.array([2.0, 0.5]), np.array([3.0])
    # runtime session: few noisy samples, so the imported costs carry real uncertainty
    A_rt = rng.uniform(1, 10, size=(12, 2))
    t_rt = A_rt @ c_rt + rng.normal(0, 1.0, 12)
    rt = solve(Design(["rt:a", "rt:b"], A_rt, t_rt), FitOptions(confidence=CONF))
    # library session: the runtime terms are imported with their covariance
    B = rng.uniform(1, 10, size=(40, 2))
    A = rng.uniform(1, 10, size=(40, 1))
    t = B @ c_rt + A @ c_lib + rng.normal(0, 0.2, 40)
    cov = rt.covariance if use_import_cov else np.zeros((2, 2))
    design = Design(
        ["lib:c"],
        A,
        t,
        offset=B @ rt.values,
        imported=["rt:a", "rt:b"],
        B=B,
        imported_values=rt.values,
        imported_cov=cov,
    )
    lib = solve(design, FitOptions(confidence=CONF))
    f = np.array([1.0, 4.0, 3.0])  # a cost priced by lib:c, rt:a and rt:b
    estimate = f @ np.concatenate([lib.values, rt.values])
    halfwidth = lib.t_quantile * np.sqrt(f @ lib.covariance @ f)
    truth = f @ np.concatenate([c_lib, c_rt])
    return abs(estimate - truth) <= halfwidth


def test_bands_with_imported_covariance_cover_truth_at_stated_rate():
    rng = np.random.default_rng(4)
    trials = 400
    covered = np.mean([_imported_trial(rng, True) for _ in range(trials)])
    low, high = _binomial_range(trials, CONF)
    assert low <= covered <= high
    # Treating imports as exact gives bands far too narrow: the test above can fail.
    rng = np.random.default_rng(4)
    naive = np.mean([_imported_trial(rng, False) for _ in range(trials)])
    assert naive < low


def test_joint_covariance_is_symmetric_and_keeps_the_imported_block():
    rng = np.random.default_rng(7)
    B, A = rng.uniform(1, 5, (30, 2)), rng.uniform(1, 5, (30, 2))
    S = np.array([[0.04, 0.01], [0.01, 0.09]])
    t = B @ [1.0, 2.0] + A @ [3.0, 4.0] + rng.normal(0, 0.1, 30)
    r = solve(
        Design(
            ["x", "y"],
            A,
            t,
            offset=B @ [1.0, 2.0],
            imported=["u", "v"],
            B=B,
            imported_values=np.array([1.0, 2.0]),
            imported_cov=S,
        )
    )
    assert r.covariance.shape == (4, 4)
    np.testing.assert_allclose(r.covariance, r.covariance.T)
    np.testing.assert_allclose(r.covariance[2:, 2:], S)
    assert np.all(np.linalg.eigvalsh(r.covariance) > -1e-12)
    # the fitted parameters' variances grow by what the imports contribute
    r0 = solve(Design(["x", "y"], A, t, offset=B @ [1.0, 2.0]))
    assert np.all(np.diag(r.covariance)[:2] > np.diag(r0.covariance))


def _replicated(rng, with_missing_term: bool):
    """Configurations repeated 4 times; the truth has a quadratic term that the model may
    lack."""
    x = np.repeat(np.linspace(1, 10, 12), 4)
    z = np.repeat(rng.uniform(1, 10, 12), 4)
    t = 2.0 * x + 1.0 * z + 0.3 * x * x + rng.normal(0, 0.05, len(x))
    cols = [x, z] if with_missing_term else [x, z, x * x]
    names = ["m:x", "m:z"] if with_missing_term else ["m:x", "m:z", "m:xx"]
    groups = [f"c{i // 4}" for i in range(len(x))]
    return solve(Design(names, np.column_stack(cols), t, groups=groups))


def test_lack_of_fit_flags_a_missing_term_and_not_the_complete_model():
    rng = np.random.default_rng(11)
    flagged = [_replicated(rng, True).lack_of_fit.p_value < 0.01 for _ in range(20)]
    passed = [_replicated(rng, False).lack_of_fit.p_value >= 0.01 for _ in range(20)]
    assert all(flagged)
    assert sum(passed) >= 18  # at the 1 % level about one false alarm in 100
    r = _replicated(rng, False)
    assert r.lack_of_fit.groups == 12 and r.lack_of_fit.pure_error_dof == 36
    assert r.noise_mre is not None and r.noise_mre < 5


def test_no_replicates_no_lack_of_fit():
    rng = np.random.default_rng(2)
    A = rng.uniform(1, 2, (10, 2))
    r = solve(Design(["a", "b"], A, A @ [1.0, 1.0] + rng.normal(0, 0.01, 10)))
    assert r.lack_of_fit is None and r.noise_mre is None


def test_huge_statistics_do_not_wreck_the_rank_decision():
    rng = np.random.default_rng(3)
    A = rng.uniform(1, 2, (20, 3))
    A[:, 1] *= 1e200  # a statistic of enormous magnitude
    c = np.array([1.0, 1e-200, 2.0])
    r = solve(Design(["a", "big", "c"], A, A @ c))
    assert r.rank == 3 and not r.null_groups
    np.testing.assert_allclose(r.values, c, rtol=1e-6)
    assert np.all(np.isfinite(column_norms(A)))


def test_negative_cost_and_duplicate_database_are_warned(tmp_path):
    rng = np.random.default_rng(5)
    db = build_db(tmp_path / "a.db", rng, runs=4, npes=(2, 3), noise=1e-3)
    session = FitSession(base_dir=tmp_path)
    session.add_database(db.name)
    session.add_database(str(db))  # the same file again, spelled differently
    session.load_interface(str(PIPE_PERF))
    session.load_interface(str(GRAPH_PERF))
    session.ignore_terms("pipe", ["P"])
    outcome = session.fit()
    assert len(session.fit_databases) == 1
    assert any("listed twice" in w for w in outcome.warnings)
    # pretend a parameter came out negative: the warning names it
    from mprof.model.session import diagnostics

    outcome.result.values[0] = -1.0
    text = "\n".join(diagnostics(outcome.result))
    assert f"{outcome.result.names[0]} has a negative unit cost" in text


@pytest.mark.parametrize("measure", ["cpu", "elapsed"])
def test_measure_selects_the_sample_time(tmp_path, measure):
    rng = np.random.default_rng(6)
    db = build_db(tmp_path / "m.db", rng, runs=3, npes=(2,), noise=1e-3)
    session = FitSession(base_dir=tmp_path)
    session.add_database(db.name)
    session.load_interface(str(PIPE_PERF))
    session.load_interface(str(GRAPH_PERF))
    session.ignore_terms("pipe", ["P"])
    session.set_measure(measure)
    if measure == "cpu":  # the synthetic profiles are schema version 1: no CPU times
        with pytest.raises(Exception, match="no CPU times"):
            session.fit()
    else:
        assert session.fit().model.settings["measure"] == "elapsed"
