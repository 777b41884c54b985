"""Load balance of the task stealer in the applications at 16 PEs, a thread per PE: the
busiest PE's share of the work statistic (Eigenvalue's bisection steps NBisect, Phylogeny's
compatibility tests NTest) is at most 1.5 times the mean, every PE works, and termination
costs at most 3 global rounds (the task stealer's NProbe).

The counts depend on how the operating system shares the cores among the 16 threads (a PE
whose thread is switched out holds its pool until it runs again), so on a machine loaded by
other work a run may be unlucky (Phylogeny's median is near the bound there, see
docs/datastructures.md): each case gets up to five runs and passes on the first that meets
all three bounds.  Stealing from ring neighbours with a global round after every
two refusals (the stealer before randomized stealing) gives 4-8x, 6-7 idle PEs and 8-140
rounds on every run."""

from __future__ import annotations

import pytest
from apps import build, run

PES = 16
CASES = {
    "eigenvalue": (["--n=3000"], "NBisect"),
    "phylogeny": ([], "NTest"),
}


def _balance(r, program, stat):
    work = [s[stat] for s in r.stats(program)]
    rounds = max(s["NProbe"] for s in r.stats("taskstealer"))
    mean = sum(work) / len(work)
    return max(work) / mean, sum(1 for w in work if w == 0), rounds, work


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(CASES))
def test_sixteen_pes_balanced(cmake_build, program):
    exe = build(cmake_build, program)
    args, stat = CASES[program]
    seen = []
    for _ in range(5):
        r = run(exe, *args, pes=PES, timeout=300, MPROF_WORKERS=str(PES))
        assert r.rc == 0, r.describe()
        ratio, idle, rounds, work = _balance(r, program, stat)
        seen.append((round(ratio, 2), idle, rounds, work))
        if ratio <= 1.5 and idle == 0 and rounds <= 3:
            return
    pytest.fail(f"{program}: (max/mean {stat}, idle PEs, rounds, per PE) of 5 runs: {seen}")
