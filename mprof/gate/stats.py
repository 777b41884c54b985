"""The statistical core of `mprof gate` (docs/gate.md, "Statistics").

Every comparison asks two one-sided questions about the relative change r of a unit
(candidate / baseline - 1) against its tolerance tau:

* regression: is r significantly larger than tau?  H0: r <= tau.  The p-value of this test is
  the one corrected for the number of units (Holm or Benjamini-Hochberg); the unit is a
  REGRESSION when the corrected p-value is below alpha.  Testing at the tolerance (not at 0)
  is what makes "significant and larger than the tolerance" one test: a change that is real
  but small, or large but noisy, is not a regression.
* pass (equivalence style): is r significantly below tau?  The unit PASSes when the upper
  bound of the one-sided (1 - alpha) confidence interval of r is below tau.

Repeated measurements (times, per-run costs) use rank methods: the Mann-Whitney U test
(scipy.stats.mannwhitneyu, one-sided) on log values, so a relative shift is a location shift,
and the Hodges-Lehmann estimate of the shift with its exact (Moses) confidence interval from
the null distribution of U.  Fitted coefficients are compared with their standard errors:
a Welch-type t statistic, and a delta-method interval for the ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as sstats

CORRECTIONS = ("holm", "bh", "none")


@dataclass
class Comparison:
    """The outcome of one unit's comparison (before correction for multiplicity)."""

    method: str  # "mann-whitney", "exact", "coefficient"
    n_baseline: int
    n_candidate: int
    baseline: float  # a typical baseline value (median, or the coefficient)
    candidate: float
    change: float  # estimated relative change (candidate / baseline - 1)
    low: float  # one-sided (1 - alpha) lower bound of the relative change
    high: float  # one-sided (1 - alpha) upper bound
    p_regression: float  # H0: change <= tolerance
    p_change: float  # H0: change <= 0 (for information)
    note: str = ""


# -- Mann-Whitney / Hodges-Lehmann -------------------------------------------------------------


@lru_cache(maxsize=256)
def _u_cdf(n: int, m: int) -> np.ndarray:
    """cdf[k] = P(U <= k) for the Mann-Whitney U statistic of samples of sizes n and m under
    H0 without ties (exact, by the usual recurrence on the number of arrangements)."""
    # counts[i][j] = arrangements of i and j items by U value; built up for fixed m.
    prev = [np.ones(1)] * (m + 1)  # i = 0: U is 0 whatever j
    for i in range(1, n + 1):
        cur = [np.ones(1)]  # j = 0
        for j in range(1, m + 1):
            a = prev[j]  # the largest item is from the first sample: U += j
            b = cur[j - 1]  # the largest item is from the second sample
            out = np.zeros(i * j + 1)
            out[j: j + len(a)] += a
            out[: len(b)] += b
            cur.append(out)
        prev = cur
    counts = prev[m]
    return np.cumsum(counts) / counts.sum()


def moses_rank(n: int, m: int, alpha: float) -> int:
    """The number k of pairwise differences to cut at each end for a one-sided (1 - alpha)
    bound: the largest k with P(U <= k - 1) <= alpha.  0 means no finite bound exists."""
    if n * m <= 2500:
        cdf = _u_cdf(min(n, m), max(n, m))
        k = int(np.searchsorted(cdf, alpha, side="right"))  # cdf[k-1] <= alpha < cdf[k]
        while k > 0 and cdf[k - 1] > alpha + 1e-12:
            k -= 1
        return k
    mean = n * m / 2
    sd = math.sqrt(n * m * (n + m + 1) / 12)
    return max(0, int(math.floor(mean - sstats.norm.ppf(1 - alpha) * sd)))


def compare_samples(baseline, candidate, tolerance: float, alpha: float) -> Comparison:
    """Compare repeated measurements (e.g. times of runs) of one unit."""
    x = np.asarray(baseline, dtype=float)
    y = np.asarray(candidate, dtype=float)
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        return Comparison("mann-whitney", n, m, _median(x), _median(y), math.nan, -math.inf,
                          math.inf, 1.0, 1.0, note="no runs on one side")
    if n >= 2 and np.all(x == x[0]) and np.all(y == y[0]):
        return compare_exact(float(x[0]), float(y[0]), tolerance, n, m)
    positive = bool(np.all(x > 0) and np.all(y > 0))
    if positive:  # relative shift = location shift of logs
        lx, ly = np.log(x), np.log(y)
        shift_tol = math.log1p(tolerance)
        to_rel = np.expm1
    else:  # zeros or negatives: additive shift relative to the baseline median
        scale = abs(float(np.median(x))) or 1.0
        lx, ly = x / scale, y / scale
        shift_tol = tolerance
        to_rel = (lambda d: d)
    if n < 2 or m < 2:
        est = float(to_rel(np.median(ly) - np.median(lx)))
        return Comparison("mann-whitney", n, m, _median(x), _median(y), est, -math.inf,
                          math.inf, 1.0, 1.0, note="too few runs to test (need 2 per side)")
    p_reg = float(sstats.mannwhitneyu(ly - shift_tol, lx, alternative="greater").pvalue)
    p_any = float(sstats.mannwhitneyu(ly, lx, alternative="greater").pvalue)
    diffs = np.sort((ly[None, :] - lx[:, None]).ravel())
    est = float(np.median(diffs))
    k = moses_rank(n, m, alpha)
    low = float(diffs[k - 1]) if k >= 1 else -math.inf
    high = float(diffs[len(diffs) - k]) if k >= 1 else math.inf
    note = "" if k >= 1 else f"too few runs for a {100 * (1 - alpha):g} % bound"
    return Comparison("mann-whitney", n, m, _median(x), _median(y), float(to_rel(est)),
                      float(to_rel(low)) if math.isfinite(low) else -math.inf,
                      float(to_rel(high)) if math.isfinite(high) else math.inf,
                      p_reg, p_any, note=note)


def compare_exact(base: float, cand: float, tolerance: float, n: int = 1,
                  m: int = 1) -> Comparison:
    """Both sides constant (e.g. a model cost of deterministic statistics): exact answer."""
    if base == cand:
        change = 0.0
    elif base > 0:
        change = cand / base - 1
    else:
        change = math.inf if cand > base else -math.inf
    p = 0.0 if change > tolerance else 1.0
    return Comparison("exact", n, m, base, cand, change, change, change, p,
                      0.0 if change > 0 else 1.0, note="constant on both sides")


def _median(a) -> float:
    return float(np.median(a)) if len(a) else math.nan


# -- fitted coefficients -----------------------------------------------------------------------


def compare_estimates(base: float, se_base: float, dof_base: float, cand: float,
                      se_cand: float, dof_cand: float, tolerance: float,
                      alpha: float) -> Comparison:
    """Compare two independent estimates (fitted coefficients, or linear combinations of
    them such as a category's cost) with standard errors and degrees of freedom."""
    if not (se_base >= 0 and se_cand >= 0) or dof_base <= 0 or dof_cand <= 0:
        return Comparison("coefficient", 0, 0, base, cand, math.nan, -math.inf, math.inf,
                          1.0, 1.0, note="no error estimate")
    t_base = sstats.t.ppf(1 - alpha, dof_base)
    if base <= 0 or base - t_base * se_base <= 0:
        return Comparison("coefficient", int(dof_base), int(dof_cand), base, cand,
                          cand / base - 1 if base > 0 else math.nan, -math.inf, math.inf,
                          1.0, 1.0, note="baseline value not significantly positive; "
                                         "relative change undefined")
    k = 1 + tolerance
    a, b = se_cand ** 2, (k * se_base) ** 2
    df = _welch_df(a, dof_cand, b, dof_base)
    sd = math.sqrt(a + b)
    if sd == 0:
        return compare_exact(base, cand, tolerance)
    p_reg = float(sstats.t.sf((cand - k * base) / sd, df))
    sd0 = math.sqrt(a + se_base ** 2)
    p_any = float(sstats.t.sf((cand - base) / sd0, _welch_df(a, dof_cand, se_base ** 2,
                                                               dof_base)))
    ratio = cand / base
    se_ratio = math.sqrt(se_cand ** 2 / base ** 2 + cand ** 2 * se_base ** 2 / base ** 4)
    q = float(sstats.t.ppf(1 - alpha, df))
    return Comparison("coefficient", int(dof_base), int(dof_cand), base, cand, ratio - 1,
                      ratio - 1 - q * se_ratio, ratio - 1 + q * se_ratio, p_reg, p_any)


def _welch_df(a: float, df_a: float, b: float, df_b: float) -> float:
    num = (a + b) ** 2
    den = (a * a / df_a if a else 0.0) + (b * b / df_b if b else 0.0)
    return num / den if den > 0 else max(df_a, df_b)


# -- multiple testing --------------------------------------------------------------------------


def adjust(pvalues, method: str = "holm") -> list[float]:
    """Adjusted p-values for a family of tests: Holm (family-wise error), Benjamini-Hochberg
    (false discovery rate, scipy.stats.false_discovery_control) or none."""
    p = np.asarray(list(pvalues), dtype=float)
    if len(p) == 0:
        return []
    if method == "none":
        return [float(x) for x in p]
    if method == "bh":
        return [float(x) for x in sstats.false_discovery_control(p, method="bh")]
    if method != "holm":
        raise ValueError(f"unknown correction {method!r} (one of {', '.join(CORRECTIONS)})")
    order = np.argsort(p, kind="stable")
    k = len(p)
    out = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        out[i] = running
    return [float(x) for x in out]
