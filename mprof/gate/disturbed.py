"""Runs left out of the gate's fits (`--fit`): all but each configuration's fastest
(`fastest`, 2 by default), and runs disturbed by interference (`disturbed`, off by default).

Interference from outside the program (other processes on a shared machine, a hypervisor's
steal time, cache traffic of a neighbour) only ever adds time to a run, and it comes in bursts:
most repetitions of a configuration agree to 1-2 %, a few are 10-30 % slower.  A least-squares
fit weighs those few heavily and its coefficients scatter by several per cent, far more than
a tolerance of a few per cent allows (docs/measurements/gate-rates.md).  So before fitting,
each side's runs of every configuration with at least 3 runs are compared with the
configuration's lower median (the middle run of the faster half, which interference cannot move
while fewer than half the runs are disturbed), and a run slower than that by more than `limit`
is left out of the fit; the gate says which runs and why.  The rank tests of the `::time` units
see every run.  Off by default (`disturbed = 0` in the gate config): measured with
benchmarks/gate/gate_bench.py it narrowed the scatter of the estimates but also the standard
errors, and one A/A trial in 100 became a REGRESSION; fitting each configuration's fastest runs
instead caught more of the interference and kept the standard errors true to the scatter
(docs/gate.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..profile import RunProfile
from .data import RunData, Side

DEFAULT_LIMIT = 0.0  # off: docs/measurements/gate-rates.md says what it did to the rates


def run_time(profile: RunProfile) -> float:
    """The run's time as the fit measures it by default (mprof.profile: CPU time summed over
    PEs, elapsed time where some PE did not record it)."""
    return profile.time(None)


def disturbed_runs(side: Side, limit: float) -> list[tuple[RunData, float]]:
    """(run, how much slower than its configuration's lower median) of the disturbed runs."""
    if limit <= 0:
        return []
    out = []
    for runs in side.by_config().values():
        if len(runs) < 3:
            continue
        times = sorted(run_time(r.profile) for r in runs)
        ref = times[(len(times) - 1) // 2]
        if ref <= 0:
            continue
        out += [
            (r, run_time(r.profile) / ref - 1)
            for r in runs
            if run_time(r.profile) > ref * (1 + limit)
        ]
    return out


def slower_than_fastest(side: Side, keep: int) -> list[tuple[RunData, float]]:
    """(run, how much slower than its configuration's fastest run) of every run but the `keep`
    fastest of each configuration: what `fastest = keep` leaves out of the fits (0: none).
    Interference only ever adds time, so the fastest of a few repetitions are the least
    disturbed (Chen & Revels 2016, "Robust benchmarking in noisy environments"); two of them,
    not one, leave the fit replicates to estimate its noise from."""
    if keep <= 0:
        return []
    out = []
    for runs in side.by_config().values():
        ranked = sorted(runs, key=lambda r: run_time(r.profile))
        best = run_time(ranked[0].profile)
        out += [(r, run_time(r.profile) / best - 1 if best > 0 else 0.0) for r in ranked[keep:]]
    return out


def without_runs(side: Side, runs: Sequence[RunData]) -> Side:
    """The side less `runs`, in memory: its run set (what its fits read) too; the database
    is only read."""
    drop = {id(r) for r in runs}
    return Side(
        side.name,
        side.database,
        list(side.where),
        [r for r in side.runs if id(r) not in drop],
        side.run_set.without(r.profile for r in runs),
    )


__all__ = ["DEFAULT_LIMIT", "slower_than_fastest", "disturbed_runs", "run_time", "without_runs"]
