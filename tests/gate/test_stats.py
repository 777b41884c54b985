"""The statistical core on synthetic data with known answers."""

import math

import numpy as np
import pytest
from scipy import stats as sstats

from mprof.gate.stats import (
    _u_cdf,
    adjust,
    compare_estimates,
    compare_exact,
    compare_samples,
    compare_strata,
    moses_rank,
)


def test_u_distribution_matches_scipy_exact():
    rng = np.random.default_rng(0)
    for n, m in ((4, 4), (5, 7), (8, 3)):
        x, y = rng.normal(size=n), rng.normal(size=m) + 0.5
        u = sstats.mannwhitneyu(y, x, alternative="greater", method="exact")
        # P(U >= u) = 1 - P(U <= u - 1)
        cdf = _u_cdf(min(n, m), max(n, m))
        assert 1 - cdf[int(u.statistic) - 1] == pytest.approx(u.pvalue)


def test_moses_rank_small_samples():
    assert moses_rank(3, 3, 0.05) == 1  # P(U <= 0) = 1/20 = 0.05
    assert moses_rank(2, 2, 0.05) == 0  # no finite 95 % bound from 2 + 2 runs
    assert moses_rank(5, 5, 0.05) == 5
    # normal approximation for large samples is close to the exact value
    assert abs(moses_rank(60, 60, 0.05) - 1486) <= 2


@pytest.mark.parametrize("shift", [0.2, 0.5])
def test_known_shift_is_detected(shift):
    rng = np.random.default_rng(1)
    base = rng.lognormal(0, 0.05, 10)
    cand = rng.lognormal(math.log1p(shift), 0.05, 10)
    c = compare_samples(base, cand, tolerance=0.05, alpha=0.05)
    assert c.p_regression < 0.01
    assert c.low > 0.05 and c.low < shift < c.high
    assert c.change == pytest.approx(shift, rel=0.3)


def test_no_shift_no_regression_and_interval_coverage():
    rng = np.random.default_rng(2)
    regressions, covered, passes = 0, 0, 0
    trials = 300
    for _ in range(trials):
        base, cand = rng.lognormal(0, 0.05, 8), rng.lognormal(0, 0.05, 8)
        c = compare_samples(base, cand, tolerance=0.05, alpha=0.05)
        regressions += c.p_regression < 0.05
        covered += c.low <= 0 <= c.high
        passes += c.high <= 0.05
    assert regressions <= 0.02 * trials  # testing at the tolerance: far below alpha
    assert covered >= 0.85 * trials  # a 90 % two-sided interval
    assert passes > 0.3 * trials


def test_small_shift_inside_tolerance_is_not_a_regression():
    rng = np.random.default_rng(3)
    base = rng.lognormal(0, 0.01, 20)
    cand = rng.lognormal(math.log(1.02), 0.01, 20)  # real (significant) but 2 % < 5 %
    c = compare_samples(base, cand, tolerance=0.05, alpha=0.05)
    assert c.p_change < 0.001
    assert c.p_regression > 0.5
    assert c.high < 0.05  # PASS: significantly below the tolerance


def test_exact_and_degenerate_samples():
    c = compare_samples([2.0] * 5, [2.5] * 5, tolerance=0.1, alpha=0.05)
    assert c.method == "exact" and c.change == pytest.approx(0.25) and c.p_regression == 0
    assert compare_exact(2.0, 2.1, 0.1).p_regression == 1.0
    c = compare_samples([1.0], [2.0], 0.05, 0.05)
    assert c.p_regression == 1.0 and "too few" in c.note
    c = compare_samples([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], 0.05, 0.05)  # zeros: additive scale
    assert c.change == 0
    c = compare_samples([], [1.0], 0.05, 0.05)
    assert "no runs" in c.note


def test_coefficient_comparison():
    # 2.0 +- se 0.05 vs 3.0 +- 0.05: +50 %
    c = compare_estimates(2.0, 0.05, 20, 3.0, 0.05, 20, tolerance=0.1, alpha=0.05)
    assert c.p_regression < 1e-6 and c.low > 0.1
    c = compare_estimates(2.0, 0.05, 20, 2.02, 0.05, 20, tolerance=0.1, alpha=0.05)
    assert c.p_regression > 0.5 and c.high < 0.1
    c = compare_estimates(0.01, 0.05, 20, 3.0, 0.05, 20, tolerance=0.1, alpha=0.05)
    assert c.p_regression == 1.0 and "not significantly positive" in c.note


def test_corrections():
    p = [0.01, 0.04, 0.03, 0.5]
    assert adjust(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert adjust(p, "bh") == pytest.approx(list(sstats.false_discovery_control(p)))
    assert adjust(p, "none") == p
    assert adjust([], "holm") == []
    # Holm is monotone in the order of the raw p-values and never below them
    rng = np.random.default_rng(4)
    raw = rng.uniform(size=50)
    adj = adjust(raw, "holm")
    order = np.argsort(raw)
    assert all(np.diff(np.array(adj)[order]) >= 0) and all(np.array(adj) >= raw)
    with pytest.raises(ValueError):
        adjust(p, "bonferroni-ish")


@pytest.mark.parametrize("strata", [False, True])
def test_growth_from_a_zero_baseline_is_unbounded(strata):
    """A category new in the candidate (baseline all 0): the change was the difference in
    seconds shown as a fraction, so 0.03 s of new work read +3 % and passed a 5 % tolerance."""
    base, cand = [0.0] * 5, [0.030, 0.031, 0.032, 0.033, 0.034]
    c = (
        compare_strata([(base, cand), (base, cand)], 0.05, 0.05)
        if strata
        else compare_samples(base, cand, 0.05, 0.05)
    )
    assert c.change == math.inf and c.low == math.inf
    assert c.p_regression < 0.05


def test_a_drop_of_times_is_at_most_100_percent():
    """With a zero among the times the comparison is additive; its bounds went below -100 %
    (a negative time)."""
    base, cand = [0.0, 0.010, 0.011, 0.012, 0.013], [0.0] * 5
    c = compare_samples(base, cand, 0.05, 0.05)
    assert -1.0 <= c.low <= c.change <= 0.0
