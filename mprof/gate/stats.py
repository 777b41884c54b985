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
    # False: no test could be made (fewer than 2 runs on a side, no error estimate): the
    # p-values are placeholders (1), the unit is INCONCLUSIVE and not counted by the correction
    tested: bool = True
    # False: the data give no (1 - alpha) bounds (untested, or too few runs for the exact
    # bound): low and high are -inf and +inf placeholders, shown as "-", never as a bound
    bounded: bool = True


def untested(
    method: str, n: int, m: int, baseline: float, candidate: float, change: float, note: str
) -> Comparison:
    """A comparison without a test: its estimates where there are any, no p-value, no bounds."""
    return Comparison(
        method,
        n,
        m,
        baseline,
        candidate,
        change,
        -math.inf,
        math.inf,
        1.0,
        1.0,
        note=note,
        tested=False,
        bounded=False,
    )


def too_few_runs(n: int, m: int) -> str:
    """Why runs of n baseline and m candidate repetitions give no test."""
    sides = [
        f"{k} {side} run{'s' if k != 1 else ''}"
        for k, side in ((n, "baseline"), (m, "candidate"))
        if k < 2
    ]
    return f"{' and '.join(sides)}: too few for a test or bounds (need 2 runs per side)"


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
            out[j : j + len(a)] += a
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


def scale_is_relative(x) -> bool:
    """Whether a change can be relative to the baseline: its median is not 0."""
    return float(np.median(x)) != 0.0


def _unbounded(d: float) -> float:
    """A change from a baseline whose median is 0 (a category new in the candidate): no
    relative change is finite, so an increase is +inf (and every increase the test finds is
    more than any tolerance), never a small percentage of an arbitrary scale."""
    return math.inf if d > 0 else -math.inf if d < 0 else 0.0


def _additive(x, y):
    """The scale of an additive comparison (the baseline median, 1 where that is 0) and the map
    from a scaled shift to the relative change: at least -100 % where no value is negative
    (times cannot fall below zero), unbounded from a zero median."""
    scale = abs(float(np.median(x)))
    if scale == 0.0:
        return 1.0, _unbounded
    if bool(np.all(np.asarray(x) >= 0) and np.all(np.asarray(y) >= 0)):
        return scale, lambda d: max(float(d), -1.0)
    return scale, lambda d: float(d)


def compare_samples(baseline, candidate, tolerance: float, alpha: float) -> Comparison:
    """Compare repeated measurements (e.g. times of runs) of one unit."""
    x = np.asarray(baseline, dtype=float)
    y = np.asarray(candidate, dtype=float)
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        return untested(
            "mann-whitney", n, m, _median(x), _median(y), math.nan, "no runs on one side"
        )
    if n >= 2 and np.all(x == x[0]) and np.all(y == y[0]):
        return compare_exact(float(x[0]), float(y[0]), tolerance, n, m)
    positive = bool(np.all(x > 0) and np.all(y > 0))
    if positive:  # relative shift = location shift of logs
        lx, ly = np.log(x), np.log(y)
        shift_tol = math.log1p(tolerance)
        to_rel = np.expm1
    else:  # zeros or negatives: additive shift relative to the baseline median
        scale, to_rel = _additive(x, y)
        lx, ly = x / scale, y / scale
        shift_tol = tolerance if scale_is_relative(x) else 0.0
    if n < 2 or m < 2:
        est = float(to_rel(np.median(ly) - np.median(lx)))
        return untested("mann-whitney", n, m, _median(x), _median(y), est, too_few_runs(n, m))
    p_reg = float(sstats.mannwhitneyu(ly - shift_tol, lx, alternative="greater").pvalue)
    p_any = float(sstats.mannwhitneyu(ly, lx, alternative="greater").pvalue)
    diffs = np.sort((ly[None, :] - lx[:, None]).ravel())
    est = float(np.median(diffs))
    k = moses_rank(n, m, alpha)
    low = float(diffs[k - 1]) if k >= 1 else -math.inf
    high = float(diffs[len(diffs) - k]) if k >= 1 else math.inf
    note = "" if k >= 1 else f"too few runs for a {100 * (1 - alpha):g} % bound"
    return Comparison(
        "mann-whitney",
        n,
        m,
        _median(x),
        _median(y),
        float(to_rel(est)),
        float(to_rel(low)) if math.isfinite(low) else -math.inf,
        float(to_rel(high)) if math.isfinite(high) else math.inf,
        p_reg,
        p_any,
        note=note,
        bounded=k >= 1,
    )


def compare_exact(base: float, cand: float, tolerance: float, n: int = 1, m: int = 1) -> Comparison:
    """Both sides constant (e.g. a model cost of deterministic statistics): exact answer."""
    if base == cand:
        change = 0.0
    elif base > 0:
        change = cand / base - 1
    else:
        change = math.inf if cand > base else -math.inf
    p = 0.0 if change > tolerance else 1.0
    return Comparison(
        "exact",
        n,
        m,
        base,
        cand,
        change,
        change,
        change,
        p,
        0.0 if change > 0 else 1.0,
        note="constant on both sides",
    )


def _median(a) -> float:
    return float(np.median(a)) if len(a) else math.nan


# -- fitted coefficients -----------------------------------------------------------------------


def compare_estimates(
    base: float,
    se_base: float,
    dof_base: float,
    cand: float,
    se_cand: float,
    dof_cand: float,
    tolerance: float,
    alpha: float,
) -> Comparison:
    """Compare two independent estimates (fitted coefficients, or linear combinations of
    them such as a category's cost) with standard errors and degrees of freedom."""
    if not (se_base >= 0 and se_cand >= 0) or dof_base <= 0 or dof_cand <= 0:
        return untested(
            "coefficient",
            _count(dof_base),
            _count(dof_cand),
            base,
            cand,
            math.nan,
            "no error estimate",
        )
    t_base = sstats.t.ppf(1 - alpha, dof_base)
    if base <= 0 or base - t_base * se_base <= 0:
        return untested(
            "coefficient",
            int(dof_base),
            int(dof_cand),
            base,
            cand,
            cand / base - 1 if base > 0 else math.nan,
            "baseline value not significantly positive; relative change undefined",
        )
    k = 1 + tolerance
    a, b = se_cand**2, (k * se_base) ** 2
    df = _welch_df(a, dof_cand, b, dof_base)
    sd = math.sqrt(a + b)
    if sd == 0:
        return compare_exact(base, cand, tolerance)
    p_reg = float(sstats.t.sf((cand - k * base) / sd, df))
    sd0 = math.sqrt(a + se_base**2)
    p_any = float(sstats.t.sf((cand - base) / sd0, _welch_df(a, dof_cand, se_base**2, dof_base)))
    ratio = cand / base
    se_ratio = math.sqrt(se_cand**2 / base**2 + cand**2 * se_base**2 / base**4)
    q = float(sstats.t.ppf(1 - alpha, df))
    return Comparison(
        "coefficient",
        int(dof_base),
        int(dof_cand),
        base,
        cand,
        ratio - 1,
        ratio - 1 - q * se_ratio,
        ratio - 1 + q * se_ratio,
        p_reg,
        p_any,
    )


def _count(dof: float) -> int:
    return int(dof) if math.isfinite(dof) and dof > 0 else 0


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


# -- stratified rank comparison (one unit over several configurations) ------------------------


def _u_pmf(n: int, m: int) -> np.ndarray:
    cdf = _u_cdf(min(n, m), max(n, m))
    return np.diff(cdf, prepend=0.0)


def _sum_pmf(sizes) -> np.ndarray | None:
    """The exact null distribution of the sum of the strata's U statistics (independent
    strata, no ties): the convolution of their distributions; None when a stratum is too large
    for the exact distribution (then the normal approximation is used)."""
    pmf = np.ones(1)
    for n, m in sizes:
        if n * m > 2500:
            return None
        pmf = np.convolve(pmf, _u_pmf(n, m))
    return pmf


def _sum_sf(pmf, sizes, s: float) -> float:
    """P(S >= s) under H0 (s rounded down: ties count against rejecting)."""
    if pmf is not None:
        k = int(math.floor(s + 1e-9))
        if k <= 0:
            return 1.0
        if k >= len(pmf):
            return 0.0
        return float(min(1.0, max(0.0, pmf[k:].sum())))
    mean = sum(n * m / 2 for n, m in sizes)
    sd = math.sqrt(sum(n * m * (n + m + 1) / 12 for n, m in sizes))
    return float(sstats.norm.sf((s - 0.5 - mean) / sd)) if sd > 0 else 1.0


def _critical_count(pmf, sizes, alpha: float) -> int:
    """The smallest c with P(S >= c) <= alpha; more than the number of pairs when none."""
    total = sum(n * m for n, m in sizes)
    if pmf is not None:
        tail = np.cumsum(pmf[::-1])[::-1]  # tail[c] = P(S >= c)
        ok = np.nonzero(tail <= alpha + 1e-12)[0]
        return int(ok[0]) if len(ok) else total + 1
    mean = total / 2
    sd = math.sqrt(sum(n * m * (n + m + 1) / 12 for n, m in sizes))
    return int(math.ceil(mean + 0.5 + sstats.norm.isf(alpha) * sd))


def _pooled_diffs(pairs, tolerance: float):
    """The within-configuration pairwise differences of strata (each (baseline, candidate),
    both non-empty) on the scale they are compared on: log values where every value is
    positive, else values divided by their configuration's baseline median (or unscaled where
    a median is 0).  Returns (differences per stratum, the tolerance as a difference, the map
    from a difference to a relative change)."""
    allx = np.concatenate([x for x, _ in pairs])
    ally = np.concatenate([y for _, y in pairs])
    positive = bool(np.all(allx > 0) and np.all(ally > 0))
    diffs_by = []
    relative = positive or all(scale_is_relative(x) for x, _ in pairs)
    for x, y in pairs:
        if positive:
            lx, ly = np.log(x), np.log(y)
        else:
            scale = abs(float(np.median(x))) if relative else 1.0
            lx, ly = x / scale, y / scale
        diffs_by.append((ly[None, :] - lx[:, None]).ravel())
    shift_tol = math.log1p(tolerance) if positive else tolerance if relative else 0.0
    to_rel = np.expm1 if positive else _additive(allx, ally)[1] if relative else _unbounded
    return diffs_by, shift_tol, to_rel


def _medians(pairs) -> tuple[float, float]:
    """The typical baseline and candidate values: the median of the strata's medians."""
    return (
        float(np.median([np.median(x) for x, _ in pairs])),
        float(np.median([np.median(y) for _, y in pairs])),
    )


def compare_strata(strata, tolerance: float, alpha: float) -> Comparison:
    """Compare repeated measurements of one quantity over several configurations (strata), e.g.
    the CPU time of one access category in every configuration of a sweep: a relative change
    common to all of them, tested with the sum of the configurations' Mann-Whitney U statistics
    (a stratified rank test; exact null distribution by convolution), estimated by the median
    of all within-configuration pairwise log differences, with the exact bounds of that test
    inverted (the c-th largest and smallest pairwise difference).  Each stratum is (baseline
    values, candidate values); strata with fewer than 2 values on a side are left out of the
    test (the note says so).  When none is left, the comparison is untested: its estimate
    comes from every stratum with values on both sides and n counts all their values.  Zeros:
    differences of the values divided by their configuration's baseline median."""
    given = [(np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for x, y in strata]
    pairs = [(x, y) for x, y in given if len(x) >= 2 and len(y) >= 2]
    if not pairs:
        usable = [(x, y) for x, y in given if len(x) and len(y)]
        nb, nc = sum(len(x) for x, _ in given), sum(len(y) for _, y in given)
        if len(usable) == 1:
            return compare_samples(*usable[0], tolerance, alpha)
        if not usable:
            return untested(
                "stratified", nb, nc, math.nan, math.nan, math.nan, "no runs on one side"
            )
        diffs_by, _, to_rel = _pooled_diffs(usable, tolerance)
        est = float(to_rel(float(np.median(np.concatenate(diffs_by)))))
        return untested(
            "stratified",
            nb,
            nc,
            *_medians(usable),
            est,
            "fewer than 2 runs on a side in every configuration: too few for a test or bounds",
        )
    left_out = len(given) - len(pairs)
    why = (
        f"left out: {left_out} configuration{'s' if left_out > 1 else ''} with fewer than "
        "2 runs on a side"
        if left_out
        else ""
    )
    if len(pairs) == 1:
        c = compare_samples(pairs[0][0], pairs[0][1], tolerance, alpha)
        c.note = "; ".join(filter(None, [c.note, why]))
        return c
    nb = sum(len(x) for x, _ in pairs)
    nc = sum(len(y) for _, y in pairs)
    if all(np.all(x == x[0]) and np.all(y == x[0]) for x, y in pairs):
        c = compare_exact(1.0, 1.0, tolerance, nb, nc)
        c.note = "; ".join(filter(None, [c.note, why]))
        return c
    diffs_by, shift_tol, to_rel = _pooled_diffs(pairs, tolerance)
    sizes = [(len(x), len(y)) for x, y in pairs]
    pmf = _sum_pmf(sizes)
    diffs = np.sort(np.concatenate(diffs_by))

    def count_above(d):  # the U statistic of (candidate - d) against baseline, ties halved
        return float(np.sum(diffs > d + 1e-15) + 0.5 * np.sum(np.abs(diffs - d) <= 1e-15))

    p_reg = _sum_sf(pmf, sizes, count_above(shift_tol))
    p_any = _sum_sf(pmf, sizes, count_above(0.0))
    est = float(np.median(diffs))
    c = _critical_count(pmf, sizes, alpha)
    bounded = 1 <= c <= len(diffs)
    if bounded:
        low, high = float(diffs[len(diffs) - c]), float(diffs[c - 1])
        note = ""
    else:
        low, high = -math.inf, math.inf
        note = f"too few runs for a {100 * (1 - alpha):g} % bound"
    return Comparison(
        "stratified",
        nb,
        nc,
        *_medians(pairs),
        float(to_rel(est)),
        float(to_rel(low)) if math.isfinite(low) else -math.inf,
        float(to_rel(high)) if math.isfinite(high) else math.inf,
        p_reg,
        p_any,
        note="; ".join(filter(None, [note, why])),
        bounded=bounded,
    )


# -- power: the smallest change a rank comparison can flag --------------------------------------


def smallest_detectable(
    sigma: float, sizes, tolerance: float, alpha: float, power: float = 0.8
) -> float:
    """The smallest relative change that the (stratified) Mann-Whitney comparison flags with
    probability `power`, at significance `alpha` (already divided by the number of tests the
    correction counts), for log-normal noise of standard deviation `sigma` per run and strata of
    sizes (n, m).  inf: no change is enough (too few runs for a p-value below alpha).
    The test rejects when the sum S of the U statistics reaches the critical count c of its
    exact null distribution; under a log shift delta each pair of runs is ordered with
    probability q = Phi((delta - log(1+tol)) / (sigma sqrt 2)), and S is taken as normal with
    mean q.pairs and variance sum n m q (1 - q) (n + m + 1) / 3 (the null variance at q = 1/2):
    the smallest q with P(S >= c) >= power gives delta."""
    sizes = [(n, m) for n, m in sizes if n >= 2 and m >= 2]
    if not sizes:
        return math.inf
    pairs = sum(n * m for n, m in sizes)
    c = _critical_count(_sum_pmf(sizes), sizes, alpha)
    if c > pairs:
        return math.inf
    z = sstats.norm.ppf(power)
    weight = sum(n * m * (n + m + 1) / 3 for n, m in sizes)

    def enough(q):
        return pairs * q - z * math.sqrt(max(q * (1 - q), 0.0) * weight) >= c - 0.5

    lo, hi = 0.5, 1.0
    if enough(lo):
        q = lo
    else:
        for _ in range(60):
            mid = (lo + hi) / 2
            if enough(mid):
                hi = mid
            else:
                lo = mid
        q = hi
    if q >= 1.0:
        q = 1 - 1e-12
    if sigma <= 0:
        return tolerance
    shift = math.log1p(tolerance) + sigma * math.sqrt(2) * sstats.norm.ppf(q)
    return math.expm1(shift)


def repetitions_for(
    change: float,
    sigma: float,
    strata: int,
    tolerance: float,
    alpha: float,
    power: float = 0.8,
    most: int = 200,
) -> int | None:
    """The fewest repetitions per configuration and build with which `smallest_detectable` is
    at most `change`; None when even `most` are not enough."""
    if smallest_detectable(sigma, [(most, most)] * strata, tolerance, alpha, power) > change:
        return None
    lo, hi = 1, most  # smallest_detectable falls as n grows: bisect
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if smallest_detectable(sigma, [(mid, mid)] * strata, tolerance, alpha, power) <= change:
            hi = mid
        else:
            lo = mid
    return hi


def log_spread(groups) -> tuple[float, int]:
    """(noise of the log values within groups, degrees of freedom): the standard deviation
    of repeated runs, pooled over configurations; groups with a non-positive value are skipped.
    Estimated from ranks like the comparison itself: the median of the absolute differences
    between two runs of one configuration, over all such pairs, divided by its value for
    normal noise (sqrt 2 x 0.6745).  A run slowed twofold by interference moves one rank, as
    it does in the Mann-Whitney statistic, where the standard deviation would count it as a
    change of ln 2 (with 6 runs of 9 configurations, one such run in ten made it 20 %
    against a bulk of 5 %)."""
    diffs, dof = [], 0
    for values in groups:
        v = np.asarray(values, dtype=float)
        if len(v) < 2 or not np.all(v > 0):
            continue
        lv = np.log(v)
        i, j = np.triu_indices(len(lv), 1)
        diffs.append(np.abs(lv[i] - lv[j]))
        dof += len(v) - 1
    if not dof:
        return math.nan, 0
    scale = math.sqrt(2) * float(sstats.norm.ppf(0.75))
    return float(np.median(np.concatenate(diffs))) / scale, dof
