"""The SVD fitter on designs with known answers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mprof.errors import MprofError
from mprof.model.fit import Design, FitOptions, mre, solve


def noisy_design(rng, n=40, coef=(2e-3, 5e-6, 0.3), sigma=0.01):
    A = np.column_stack([rng.uniform(10, 500, n), rng.uniform(1e3, 1e5, n), np.ones(n)])
    t = A @ np.array(coef) + rng.normal(0, sigma, n)
    return Design(["m:a", "m:b", "m:P"], A, t), np.array(coef)


def test_agrees_with_lstsq_and_textbook_intervals():
    rng = np.random.default_rng(0)
    design, _ = noisy_design(rng)
    r = solve(design)
    x, *_ = np.linalg.lstsq(design.A, design.t, rcond=None)
    np.testing.assert_allclose(r.values, x, rtol=1e-9)
    # Classical OLS covariance sigma^2 (A^T A)^-1 and exact Student t quantile.
    resid = design.t - design.A @ x
    n, m = design.A.shape
    s2 = resid @ resid / (n - m)
    cov = s2 * np.linalg.inv(design.A.T @ design.A)
    np.testing.assert_allclose(r.covariance, cov, rtol=1e-6)
    np.testing.assert_allclose(
        r.halfwidths, np.sqrt(np.diag(cov)) * stats.t.ppf(0.95, n - m), rtol=1e-6
    )
    assert r.chi_square == pytest.approx(resid @ resid)
    assert r.sse == pytest.approx(resid @ resid)
    assert r.dof == n - m and r.residual_se == pytest.approx(np.sqrt(r.chi_square / (n - m)))
    assert r.rank == 3 and r.null_groups == [] and r.zero_interval == []


def test_normalised_fit_is_relative_least_squares():
    rng = np.random.default_rng(1)
    design, _ = noisy_design(rng)
    r = solve(design, FitOptions(normalize=True))
    W = design.A / design.t[:, None]
    x, *_ = np.linalg.lstsq(W, np.ones(design.n), rcond=None)
    np.testing.assert_allclose(r.values, x, rtol=1e-9)
    assert r.chi_square == pytest.approx(np.sum((W @ x - 1) ** 2))  # normalised system's SSE
    assert r.sse == pytest.approx(np.sum((design.A @ x - design.t) ** 2))


def test_mre_is_geometric_mean_of_error_ratios():
    model, t = np.array([1.1, 0.8, 2.0]), np.array([1.0, 1.0, 2.0])
    expected = (np.prod([1.1, 1.2, 1.0]) ** (1 / 3) - 1) * 100
    assert mre(model, t) == pytest.approx(expected)


def test_interval_coverage_matches_confidence():
    """Over 200 noisy designs the 90 % intervals contain the truth ~90 % of the time."""
    rng = np.random.default_rng(2024)
    trials, hits, total = 200, 0, 0
    for _ in range(trials):
        design, coef = noisy_design(rng, n=15, sigma=0.05)
        r = solve(design)
        hits += int(np.sum(np.abs(r.values - coef) <= r.halfwidths))
        total += len(coef)
    rate = hits / total
    # Per-parameter hits are Binomial(600, 0.9) (correlated within a trial, hence a wide band).
    tol = 4 * np.sqrt(0.9 * 0.1 / trials)
    assert abs(rate - 0.90) < tol, rate


def test_rank_deficiency_names_dependent_terms():
    rng = np.random.default_rng(3)
    n = 30
    a, b = rng.uniform(1, 10, n), rng.uniform(1, 10, n)
    A = np.column_stack([a, b, a + 2 * b, np.ones(n)])
    t = A @ [1.0, 2.0, 0.0, 0.5] + rng.normal(0, 0.01, n)
    r = solve(Design(["x:a", "x:b", "x:ab", "x:P"], A, t))
    assert r.rank == 3 and r.rank_deficient
    assert r.null_groups == [["x:a", "x:b", "x:ab"]]
    # The minimum-norm solution still reproduces the data.
    assert r.sample_mre < 1.0


def test_zero_column_is_rank_deficient_and_named():
    rng = np.random.default_rng(4)
    A = np.column_stack([rng.uniform(1, 5, 20), np.zeros(20), np.ones(20)])
    t = A @ [1.0, 0.0, 1.0] + rng.normal(0, 0.01, 20)
    r = solve(Design(["x:a", "x:zero", "x:P"], A, t))
    assert r.null_groups == [["x:zero"]] and r.values[1] == 0


def test_two_constant_columns_are_collinear():
    rng = np.random.default_rng(5)
    a = rng.uniform(1, 5, 20)
    A = np.column_stack([a, np.ones(20), np.ones(20)])
    r = solve(Design(["x:a", "x:P", "y:P"], A, 2 * a + 1 + rng.normal(0, 0.01, 20)))
    assert r.null_groups == [["x:P", "y:P"]]
    assert r.values[1] == pytest.approx(r.values[2])  # minimum norm splits the intercept


def test_insignificant_term_flagged():
    rng = np.random.default_rng(6)
    n = 25
    A = np.column_stack([rng.uniform(1, 5, n), rng.uniform(1, 5, n)])
    t = 3 * A[:, 0] + rng.normal(0, 0.5, n) + 10
    A2 = np.column_stack([A, np.ones(n)])
    r2 = solve(Design(["x:a", "x:noise", "x:P"], A2, t))
    assert "x:noise" in r2.zero_interval and "x:a" not in r2.zero_interval


@pytest.mark.parametrize(
    "A, t, message",
    [
        (np.ones((2, 3)), np.ones(2), "2 sample(s) for 3 free parameter(s)"),
        (np.ones((3, 3)), np.ones(3), "3 sample(s) for 3 free parameter(s)"),
        (np.zeros((0, 2)), np.zeros(0), "no samples"),
        (np.ones((5, 1)), np.array([1, 2, np.nan, 1, 1.0]), "sample 3: measured time is nan"),
        (np.ones((5, 1)), np.array([1, 2, 0, 1, 1.0]), "sample 3: measured time is 0"),
        (np.ones((5, 1)), np.array([1, -2, 1, 1, 1.0]), "measured time is -2"),
        (np.array([[1.0], [np.inf], [1], [1], [1]]), np.ones(5), "term x:0 evaluates to inf"),
        (np.zeros((5, 1)), np.ones(5), "every term is zero"),
    ],
)
def test_degenerate_inputs_are_clear_errors(A, t, message):
    names = [f"x:{i}" for i in range(A.shape[1])]
    with pytest.raises(MprofError) as err:
        solve(Design(names, A, t))
    assert message in str(err.value)


def test_no_free_parameters():
    with pytest.raises(MprofError, match="no free parameters"):
        solve(Design([], np.zeros((4, 0)), np.ones(4)))


def test_offset_is_subtracted():
    rng = np.random.default_rng(7)
    A = rng.uniform(1, 5, (20, 2))
    t = A @ [1.0, 2.0] + 5.0
    r = solve(Design(["x:a", "x:b"], A, t, offset=np.full(20, 5.0)))
    np.testing.assert_allclose(r.values, [1.0, 2.0], rtol=1e-9)


def _designs():
    """Random well-conditioned designs: uniform columns plus a dominant diagonal block."""
    return st.tuples(st.integers(1, 6), st.integers(0, 10), st.integers(0, 2**31 - 1))


@settings(max_examples=60, deadline=None)
@given(_designs(), st.floats(1e-3, 1e3))
def test_exact_solution_recovered_and_scales_with_t(spec, factor):
    m, extra, seed = spec
    rng = np.random.default_rng(seed)
    n = m + 1 + extra
    A = rng.uniform(0.5, 2.0, (n, m))
    A[:m] += 5 * np.eye(m)  # keeps the condition number small
    coef = rng.uniform(0.1, 10.0, m) * rng.choice([1e-6, 1e-3, 1.0], m)
    t = A @ coef
    names = [f"x:{i}" for i in range(m)]
    r = solve(Design(names, A, t))
    np.testing.assert_allclose(r.values, coef, rtol=1e-8, atol=1e-12 * np.abs(coef).max())
    assert r.rank == m and r.sample_mre < 1e-6
    scaled = solve(Design(names, A, t * factor))
    np.testing.assert_allclose(
        scaled.values, r.values * factor, rtol=1e-8, atol=1e-12 * factor * np.abs(coef).max()
    )
    normalised = solve(Design(names, A, t), FitOptions(normalize=True))
    np.testing.assert_allclose(normalised.values, coef, rtol=1e-8, atol=1e-12 * np.abs(coef).max())


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.integers(0, 2**31 - 1))
def test_scaling_a_column_scales_its_parameter_inversely(m, seed):
    rng = np.random.default_rng(seed)
    n = 3 * m
    A = rng.uniform(0.5, 2.0, (n, m)) + 3 * np.vstack([np.eye(m)] * 3)
    t = A @ rng.uniform(1, 2, m) + rng.normal(0, 0.01, n)
    names = [f"x:{i}" for i in range(m)]
    base = solve(Design(names, A, t))
    A2 = A.copy()
    A2[:, 0] *= 1e6  # e.g. bytes instead of megabytes: the rank must not change
    scaled = solve(Design(names, A2, t))
    assert scaled.rank == base.rank == m
    assert scaled.values[0] * 1e6 == pytest.approx(base.values[0], rel=1e-6)
    assert scaled.halfwidths[0] * 1e6 == pytest.approx(base.halfwidths[0], rel=1e-6)
