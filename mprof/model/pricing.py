"""The arithmetic of pricing a linear cost model: cost = sum_p c_p f_p over its parameters, and
the variance of that figure from the parameters' joint covariance.

The fit's own figures (FitResult.predict: sample and test errors) and every later pricing of a
model file (Model.price: report, gate, frames, what-if) call these functions, so a run used in a
fit is priced later exactly as the fit priced it.  The cost adds the fitted parameters' share
(A c) to the known share of the parameters the fit did not estimate (imported or fixed: the
fit's offset B c_imp), in that order: the same numbers added in the same order give the same
double.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


# A price that overflows (a parameter fixed at 1e308) is inf or nan, which every writer
# refuses by name (mprof.report.jsonout, Model.save); numpy's RuntimeWarning would only add a
# line in its words on stderr.
_QUIET = {"over": "ignore", "invalid": "ignore"}


def known_cost(terms: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per sample, the time of the parameters a fit does not estimate (imported or fixed):
    samples x k term values times their k values."""
    with np.errstate(**_QUIET):
        return terms @ values


def cost(fitted_terms: np.ndarray, fitted_values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Per sample, the model's cost: the fitted parameters' share plus the known share."""
    with np.errstate(**_QUIET):
        return fitted_terms @ fitted_values + known


def variance(terms: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Per sample (row f of `terms`), the variance f . Cov . f of its cost."""
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0])
    with np.errstate(**_QUIET):
        return np.einsum("ij,ij->i", terms @ covariance, terms)


@dataclass
class Estimate:
    """A priced cost: seconds and the variance of that figure from the parameters' covariance."""

    seconds: float
    variance: float

    @property
    def sd(self) -> float:
        return math.sqrt(max(self.variance, 0.0))

    def halfwidth(self, quantile: float) -> float:
        return quantile * self.sd


@dataclass
class Estimates:
    """Priced costs of many samples at once (arrays); `[i]` is sample i's Estimate."""

    seconds: np.ndarray
    variance: np.ndarray

    def __len__(self) -> int:
        return len(self.seconds)

    def __getitem__(self, i: int) -> Estimate:
        return Estimate(float(self.seconds[i]), float(self.variance[i]))

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.clip(self.variance, 0.0, None))

    def halfwidth(self, quantile: float) -> np.ndarray:
        return quantile * self.sd
