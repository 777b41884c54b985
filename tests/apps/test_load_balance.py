"""Load balance of the task stealer in the applications at 16 PEs, a thread per PE: the
busiest PE's share of the work statistic (Eigenvalue's bisection steps NBisect, Phylogeny's
compatibility tests NTest) over the mean, every PE works, and termination costs at most 3
global rounds (the task stealer's NProbe).

The counts depend on how the operating system shares the cores among the 16 threads, so one
run says little: each case runs eleven times, every run must have no idle PE and at most 3
rounds, and the median of the eleven ratios must stay at most 1.4, a margin under the target
of 1.5.  Phylogeny as it was (stealing only when a pool was about to run dry, PE 0 adding
every first task) gave medians of 1.43-1.50 over 10-12 runs, about two runs in three above
1.4: this fails for it nearly always.  Now one run in ten to one in five is above 1.4 (median
1.25-1.33, see docs/measurements/chapter5-notes.md), more on a busy machine: of seven runs,
four were above 1.4 in two of about a dozen suites run in one day on the 2-core development
VM, hence eleven (six must then be above 1.4 to fail).
Stealing from ring neighbours with a global round after every two refusals (the stealer
before randomized stealing) gives 4-8x, 6-7 idle PEs and 8-140 rounds on every run."""

from __future__ import annotations

import statistics

import pytest
from apps import build, run

PES = 16
RUNS = 11
MEDIAN_BOUND = 1.4
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
    for _ in range(RUNS):
        r = run(exe, *args, pes=PES, timeout=300, MPROF_WORKERS=str(PES))
        assert r.rc == 0, r.describe()
        ratio, idle, rounds, work = _balance(r, program, stat)
        seen.append((round(ratio, 2), idle, rounds, work))
    what = f"{program}: (max/mean {stat}, idle PEs, rounds, per PE) of {RUNS} runs: {seen}"
    assert all(idle == 0 and rounds <= 3 for _, idle, rounds, _ in seen), what
    assert statistics.median(ratio for ratio, *_ in seen) <= MEDIAN_BOUND, what
