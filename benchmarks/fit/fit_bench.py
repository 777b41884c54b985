"""Fitting throughput for `make bench`: 100,000 samples, 30 parameters, intervals included.

Prints one JSON line: {"samples": 100000, "params": 30, "fit_seconds": ...}.  The design mimics
profile data: non-negative counts spanning several orders of magnitude, a constant start-up
column, and noisy times; fit_seconds is the best of a few repetitions of mprof.model.fit.solve
(SVD, covariance, Student-t intervals, chi-square p-value and MRE).
"""

import argparse
import json
import time

import numpy as np

from mprof.model.fit import Design, solve


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--params", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(1995)
    n, m = args.samples, args.params
    scales = 10.0 ** rng.uniform(0, 6, m)
    A = rng.uniform(0, 1, (n, m)) * scales
    A[:, 0] = 1.0
    coef = rng.uniform(0.5, 2.0, m) / scales * 1e-3
    t = A @ coef
    t += rng.normal(0, 0.01 * t.std(), n)
    t = np.abs(t) + 1e-6
    design = Design([f"bench:T{i}" for i in range(m)], A, t)
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = solve(design)
        best = min(best, time.perf_counter() - start)
    assert result.rank == m
    print(json.dumps({"samples": n, "params": m, "fit_seconds": round(best, 4)}))


if __name__ == "__main__":
    main()
