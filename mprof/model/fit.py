"""SVD least-squares instantiation of cost models (Wen 1995, §4.4.3).

The input is a design: one row per sample, one column per free parameter (`module:term`), the
measured time `t` of each sample, and the known part of each sample's time contributed by
imported parameters (`offset = B c_imp`, with the imported terms' values `B` and the imported
parameters' covariance).  The unknowns solve `A c = t - offset` in the least-squares sense.

Numerical choices, all documented in docs/fitting.md:

* Normalisation (optional) divides every row and its right-hand side by `t`, so each sample
  weighs the same (the paper's footnote 4).
* Columns are scaled to unit Euclidean norm before the SVD (the norm is taken of the column
  divided by its largest magnitude first, so statistics near 1e200 do not overflow).  This
  does not change the least squares solution of a full-rank system, but it makes the relative
  cut-off independent of the units a statistic happens to be counted in (bytes vs messages),
  so "rank" means rank.
* Singular values below `cutoff * max(w)` are treated as zero (their reciprocal is dropped);
  the solution is then the minimum-norm one and the dropped right singular vectors name the
  terms that the data cannot tell apart.
* Chi-square is the SSE of the solved (possibly normalised) system, as in the paper.  Parameter
  variances use the residual variance sigma^2 = chi^2 / (n - rank):
  v_i = sigma^2 * sum_j (V_ij / w_j)^2, and the interval is u +- sqrt(v) * t(0.95; n - rank)
  with the exact Student t quantile.
* Imported parameters are not exact: their covariance S moves the fitted ones through
  x = P (t - B c_imp), so Cov(x) gains P B S B' P' and Cov(x, c_imp) = -P B S.  The result
  carries the joint covariance of fitted and imported parameters.
* Where samples have replicates (runs of the same configuration), the residual splits into
  pure error (scatter around each configuration's mean) and lack of fit; the lack-of-fit F test
  says whether the model misses something the noise does not explain (docs/fitting.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, stats

from ..errors import MprofError
from .pricing import cost

DEFAULT_CUTOFF = 1e-10
CONFIDENCE = 0.90
# A component of a near-null right singular vector (unit length) at least this large marks the
# term as involved in the rank deficiency.
NULL_COMPONENT = 0.05


@dataclass
class Design:
    names: list[str]
    A: np.ndarray  # n x m term values (objects of a module summed)
    t: np.ndarray  # measured time per sample
    offset: np.ndarray | None = None  # time explained by imported parameters
    labels: list[str] | None = None  # human names of samples, for diagnostics
    groups: list[str] | None = None  # replicate groups (equal configuration), for lack of fit
    imported: list[str] = field(default_factory=list)  # imported parameters
    B: np.ndarray | None = None  # n x k values of the imported terms
    imported_values: np.ndarray | None = None
    imported_cov: np.ndarray | None = None  # k x k

    def __post_init__(self):
        self.A = np.asarray(self.A, dtype=float)
        self.t = np.asarray(self.t, dtype=float)
        if self.A.ndim != 2:
            self.A = self.A.reshape(len(self.t), -1)
        if self.offset is None:
            self.offset = np.zeros(len(self.t))
        self.offset = np.asarray(self.offset, dtype=float)
        if self.labels is None:
            self.labels = [f"sample {i + 1}" for i in range(len(self.t))]
        k = len(self.imported)
        self.B = np.zeros((len(self.t), k)) if self.B is None else np.asarray(self.B, float)
        self.B = self.B.reshape(len(self.t), k)
        if self.imported_values is None:
            self.imported_values = np.zeros(k)
        if self.imported_cov is None:
            self.imported_cov = np.zeros((k, k))

    @property
    def n(self) -> int:
        return len(self.t)

    @property
    def m(self) -> int:
        return len(self.names)


@dataclass
class FitOptions:
    normalize: bool = False
    cutoff: float = DEFAULT_CUTOFF
    confidence: float = CONFIDENCE


@dataclass
class LackOfFit:
    """The residual split by replicates: pure error (noise) and lack of fit (model error)."""

    pure_error_ss: float
    pure_error_dof: int
    lack_of_fit_ss: float
    lack_of_fit_dof: int
    groups: int  # distinct configurations

    @property
    def f_statistic(self) -> float:
        if self.lack_of_fit_dof <= 0 or self.pure_error_dof <= 0 or self.pure_error_ss <= 0:
            return float("nan")
        return (self.lack_of_fit_ss / self.lack_of_fit_dof) / (
            self.pure_error_ss / self.pure_error_dof
        )

    @property
    def p_value(self) -> float:
        f = self.f_statistic
        if f != f:
            return float("nan")
        return float(stats.f.sf(f, self.lack_of_fit_dof, self.pure_error_dof))

    @property
    def noise_share(self) -> float:
        """Fraction of the residual sum of squares that is pure error."""
        total = self.pure_error_ss + self.lack_of_fit_ss
        return self.pure_error_ss / total if total > 0 else float("nan")


@dataclass
class FitResult:
    names: list[str]
    values: np.ndarray
    halfwidths: np.ndarray
    covariance: np.ndarray  # joint, over names + imported (fitted first)
    singular_values: np.ndarray  # of the column-scaled (and normalised) system, descending
    rank: int
    chi_square: float
    sse: float  # on the original time scale, whatever the normalisation
    dof: int
    t_quantile: float
    n_samples: int
    sample_mre: float  # percent
    residual_se: float = float("nan")  # sqrt(chi^2 / dof): relative when normalised
    lack_of_fit: LackOfFit | None = None
    noise_mre: float | None = None  # percent: each sample predicted by its replicates' mean
    imported: list[str] = field(default_factory=list)
    test_mre: float | None = None
    # `Replicates median`: samples are each configuration's median run; the figures over
    # every single run are kept beside them
    replicates: str = "all"
    run_test_mre: float | None = None
    n_test: int = 0
    zero_interval: list[str] = field(default_factory=list)
    null_groups: list[list[str]] = field(default_factory=list)
    options: FitOptions = field(default_factory=FitOptions)

    @property
    def rank_deficient(self) -> bool:
        return self.rank < len(self.names)

    @property
    def negative(self) -> list[str]:
        return [name for name, value in zip(self.names, self.values) if value < 0]

    def predict(self, design: Design) -> np.ndarray:
        """Each sample's cost by the fitted values, as a model file prices it (Model.price:
        the same arithmetic, mprof.model.pricing); the imported parameters' share is the
        design's offset."""
        return cost(design.A, self.values, design.offset)

    def parameter(self, name: str) -> tuple[float, float]:
        i = self.names.index(name)
        return float(self.values[i]), float(self.halfwidths[i])


def mre(model: np.ndarray, measured: np.ndarray) -> float:
    """Mean relative error in percent: geometric mean of 1 + |model - t| / t, minus one."""
    if len(measured) == 0:
        return float("nan")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        miss = np.abs(model - measured)
        if not np.isfinite(miss).all():
            # predictions or times of 1e308 s overflow: the MRE is unknown (nan; null in
            # files, "n/a (overflows)" in print)
            return float("nan")
        # measured times that round to zero beside the predictions (1e-300 s) make it inf: a
        # model off by more than any number (null in files, a bound in print)
        ratio = miss / measured
        return float(np.expm1(np.mean(np.log1p(ratio))) * 100.0)


def check_design(design: Design, what: str = "fit") -> None:
    """Reject inputs the fit cannot give a meaningful answer for, with the sample named."""
    if design.n == 0:
        raise MprofError(
            f"{what}: no samples (are the databases empty, or does Select exclude every run?)"
        )
    if design.A.shape != (design.n, design.m):
        raise MprofError(
            f"{what}: design has shape {design.A.shape}, expected ({design.n}, {design.m})"
        )
    bad = ~np.isfinite(design.t)
    if bad.any():
        raise MprofError(
            f"{what}: {design.labels[int(np.argmax(bad))]}: measured time is "
            f"{design.t[bad][0]} (not a finite number)"
        )
    bad_rows, bad_cols = np.nonzero(~np.isfinite(design.A))
    if len(bad_rows):
        i, j = bad_rows[0], bad_cols[0]
        raise MprofError(
            f"{what}: {design.labels[i]}: term {design.names[j]} evaluates to "
            f"{design.A[i, j]} (check the statistics it uses)"
        )
    bad = design.t <= 0
    if bad.any():
        count = int(bad.sum())
        raise MprofError(
            f"{what}: {design.labels[int(np.argmax(bad))]}: measured time is "
            f"{design.t[bad][0]}; times must be positive for relative errors and "
            f"normalisation ({count} such sample(s))"
        )
    if not np.isfinite(design.offset).all():
        raise MprofError(f"{what}: imported parameters give a non-finite contribution")


def check_normalized(design: Design, A: np.ndarray, B: np.ndarray) -> None:
    """`Normalize on` divides each sample's terms by its time: a time that rounds to zero
    beside its terms (1e-300 s against a count of 1e6) overflows to inf, which the SVD cannot
    take; the sample and term are named instead."""
    for scaled, raw, names in ((A, design.A, design.names), (B, design.B, design.imported)):
        rows, cols = np.nonzero(~np.isfinite(scaled))
        if len(rows):
            i, j = rows[0], cols[0]
            raise MprofError(
                f"fit: {design.labels[i]}: with Normalize on, term {names[j]} "
                f"({raw[i, j]:g}) divided by the measured time {design.t[i]:g} s "
                "overflows (are the times in seconds?)"
            )


def solve(
    design: Design, options: FitOptions | None = None, test: Design | None = None
) -> FitResult:
    # Times of 1e308 s overflow the fit's arithmetic: its figures become inf or nan, which the
    # writers refuse by name (SaveModel, --json: mprof.report.jsonout); numpy's warnings about
    # it would only be noise on stderr.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _solve(design, options, test)


def _solve(design: Design, options: FitOptions | None, test: Design | None) -> FitResult:
    options = options or FitOptions()
    check_design(design)
    n, m = design.n, design.m
    if m == 0:
        raise MprofError("fit: no free parameters (every term is imported or ignored)")
    if n <= m:
        raise MprofError(
            f"fit: {n} sample(s) for {m} free parameter(s); need more samples than "
            "parameters to estimate errors (add runs or ignore terms)"
        )
    if not (0 <= options.cutoff < 1):
        raise MprofError(f"fit: cut-off must be in [0, 1), got {options.cutoff}")

    A, y, B = design.A, design.t - design.offset, design.B
    if options.normalize:
        A = A / design.t[:, None]
        y = y / design.t
        B = B / design.t[:, None]
        check_normalized(design, A, B)
    scale = column_norms(A)
    U, w, Vt = linalg.svd(A / scale, full_matrices=False, lapack_driver="gesdd")
    if w[0] == 0:
        raise MprofError("fit: every term is zero in every sample; nothing to fit")
    keep = w > options.cutoff * w[0]
    rank = int(keep.sum())
    winv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0)

    # x = P y with P the (truncated) pseudo-inverse of A, in the original units
    P = ((Vt.T * winv) @ U.T) / scale[:, None]
    x = P @ y
    residual = y - A @ x
    chi_square = float(residual @ residual)
    dof = max(n - rank, 1)
    sigma2 = chi_square / dof
    covariance = joint_covariance(P, B, sigma2 * (P @ P.T), design.imported_cov)
    variance = np.clip(np.diag(covariance)[:m], 0.0, None)
    tq = t_quantile(options.confidence, dof)
    halfwidths = np.sqrt(variance) * tq

    model_t = cost(design.A, x, design.offset)
    with np.errstate(over="ignore"):  # inf for times of 1e308 s: SaveModel refuses it
        sse = float(np.sum((model_t - design.t) ** 2))
    result = FitResult(
        names=list(design.names),
        values=x,
        halfwidths=halfwidths,
        covariance=covariance,
        singular_values=w,
        rank=rank,
        chi_square=chi_square,
        sse=sse,
        dof=dof,
        t_quantile=tq,
        n_samples=n,
        sample_mre=mre(model_t, design.t),
        residual_se=float(np.sqrt(sigma2)),
        lack_of_fit=lack_of_fit(residual, design.groups, rank),
        noise_mre=replicate_mre(design.t, design.groups),
        imported=list(design.imported),
        options=options,
    )
    result.zero_interval = [name for name, u, h in zip(design.names, x, halfwidths) if abs(u) <= h]
    for j in np.nonzero(~keep)[0]:
        involved = [design.names[i] for i in np.nonzero(np.abs(Vt[j]) >= NULL_COMPONENT)[0]]
        result.null_groups.append(involved)
    if test is not None:
        apply_test(result, test)
    return result


def t_quantile(confidence: float, dof: float) -> float:
    """Student's t quantile of a two-sided interval at `confidence` (nan without degrees of
    freedom): a parameter's half width is its standard error times this."""
    if not dof or dof <= 0:
        return float("nan")
    return float(stats.t.ppf(0.5 + confidence / 2, dof))


def column_norms(A: np.ndarray) -> np.ndarray:
    """Euclidean norm of every column (1 for all-zero ones), without overflow: statistics of
    magnitude 1e200 square to infinity, so each column is divided by its largest magnitude
    first."""
    peak = np.max(np.abs(A), axis=0) if A.size else np.zeros(A.shape[1])
    peak = np.where(peak > 0, peak, 1.0)
    scaled = A / peak
    norms = np.sqrt(np.einsum("ij,ij->j", scaled, scaled)) * peak
    return np.where(norms > 0, norms, 1.0)


def joint_covariance(
    P: np.ndarray, B: np.ndarray, fitted_cov: np.ndarray, imported_cov: np.ndarray
) -> np.ndarray:
    """Covariance of (fitted, imported) parameters: the fit's own scatter plus what the
    imported parameters' uncertainty does to the fitted ones (x = P (y - B c_imp))."""
    k = imported_cov.shape[0]
    if k == 0:
        return fitted_cov
    G = P @ B  # d x / d c_imp = -G
    cross = -G @ imported_cov
    top = np.hstack([fitted_cov + G @ imported_cov @ G.T, cross])
    bottom = np.hstack([cross.T, imported_cov])
    return np.vstack([top, bottom])


def replicate_groups(groups: list[str] | None) -> list[np.ndarray] | None:
    """Sample indices of each replicate group, or None when no sample has a replicate."""
    if not groups:
        return None
    index: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        index.setdefault(g, []).append(i)
    if len(index) == len(groups):
        return None
    return [np.array(ix) for ix in index.values()]


def lack_of_fit(residual: np.ndarray, groups: list[str] | None, rank: int) -> LackOfFit | None:
    """Splits the residual sum of squares by replicate groups (None without replicates)."""
    index = replicate_groups(groups)
    if index is None:
        return None
    pure = sum(float(np.sum((residual[ix] - residual[ix].mean()) ** 2)) for ix in index)
    total = float(residual @ residual)
    return LackOfFit(
        pure, len(groups) - len(index), max(total - pure, 0.0), len(index) - rank, len(index)
    )


def replicate_mre(t: np.ndarray, groups: list[str] | None) -> float | None:
    """MRE of predicting each sample by the mean of its replicate group: the floor that no model
    of these statistics can go below (None without replicates)."""
    index = replicate_groups(groups)
    if index is None:
        return None
    means = np.empty(len(t))
    with np.errstate(over="ignore", invalid="ignore"):  # a mean of 1e308 s overflows
        for ix in index:
            means[ix] = t[ix].mean()
    return mre(means, t)


def apply_test(result: FitResult, test: Design) -> None:
    """Evaluate the fitted model on test samples (columns must match the fit's)."""
    if test.names != result.names:
        raise MprofError("test design has different parameters from the fit")
    check_design(test, "test")
    result.test_mre = mre(result.predict(test), test.t)
    result.n_test = test.n
