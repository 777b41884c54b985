"""CPU time per access category, by sampling (runtime/src/sample.c, docs/runtime.md).

tests/c/runtime/categories.c burns CPU time in known proportions: per PE, pe_main's own code
("cat:main") half a unit, "cat:light" fibers one unit and "cat:heavy" fibers three; PE 0 one
unit more in heavy, which PE 1 waits out spinning in its idle loop.  Each sample charges the
thread's CPU time since the previous one to the category it finds, so a category's time is off
by at most a sample period per change of category: the bounds would fail if samples went to
the wrong category (a light:heavy ratio of 1, or main's time in a fiber's category), were lost
on a thread, or came only at the kernel's clock tick.
"""

import os

import pytest

# MPROF_SPIN: a PE that waits spins instead of sleeping, so that its wait is CPU time to sample
ENV = {"MPROF_SPIN": 1_000_000_000}


def categories(run, pe):
    rows = run.profile["pes"][pe].get("categories")
    assert rows, f"PE {pe} has no category times:\n{run.describe()}"
    return {row["access"]: row for row in rows}


def check_adds_up(run):
    for pe in run.profile["pes"]:
        total = sum(row["cpu_s"] for row in pe["categories"])
        assert total == pytest.approx(pe["cpu_s"], rel=1e-6, abs=1e-8)
        # a row may rest on the charges that close the last interval (the end, a sleep) alone
        assert sum(row["samples"] for row in pe["categories"]) > 0


@pytest.mark.parametrize("workers", [2, 1], ids=["thread-per-pe", "shared-worker"])
def test_category_times_follow_the_work(rt, workers):
    run = rt.run("categories", "ms=200", env={**ENV, "MPROF_WORKERS": workers}, timeout=120)
    check_adds_up(run)
    for pe, heavy_units in ((0, 4), (1, 3)):
        cat = categories(run, pe)
        light = cat["cat:light"]["cpu_s"]
        assert cat["cat:heavy"]["cpu_s"] / light == pytest.approx(heavy_units, rel=0.35)
        assert cat["cat:main"]["cpu_s"] / light == pytest.approx(0.5, rel=0.5)
        assert "unclassified" not in cat or cat["unclassified"]["cpu_s"] < 0.1 * light


def test_short_phases_are_measured_to_a_sample_period(rt):
    """With ms=20 pe_main's own phase is one stretch of 10 ms.  Sampled every 250 us it is 40
    periods, and the ratios hold to 15 % in every run.  A timer on the thread's CPU clock (what
    the sampler used before) fires only at the kernel's tick, 4 ms with HZ=250: the phase got
    2 or 3 samples, and the main:light ratio was off by up to 50 %."""
    for _ in range(3):
        run = rt.run("categories", "ms=20", env={**ENV, "MPROF_WORKERS": 2, "MPROF_SAMPLE_US": 250})
        check_adds_up(run)
        for pe, heavy_units in ((0, 4), (1, 3)):
            cat = categories(run, pe)
            light = cat["cat:light"]["cpu_s"]
            assert cat["cat:main"]["cpu_s"] / light == pytest.approx(0.5, rel=0.15), cat
            assert cat["cat:heavy"]["cpu_s"] / light == pytest.approx(heavy_units, rel=0.15), cat


def test_idle_row_is_the_idle_loop(rt):
    """With a thread per PE, PE 1's wait for PE 0 is spent spinning: its "(idle)" row holds
    that CPU time, which the profile's idle_cpu_s measures by the clock.  Within a factor of
    two: on a machine loaded by other work the two have differed by 1.8x (samples come only at
    ticks where the thread runs), but samples of the idle loop charged elsewhere would leave
    the row near zero, and busy samples charged to it would multiply it.  The same holds for
    PE 0, which on a quiet machine hardly waits, but on a loaded one waits for PE 1's thread
    when the OS runs other work on it."""
    run = rt.run("categories", "ms=200", env={**ENV, "MPROF_WORKERS": 2}, timeout=120)
    for pe in (0, 1):
        # no row at all: no sample came while the loop ran (it slept, or the machine ran
        # something else then), which the bounds judge as an idle time of 0
        idle = categories(run, pe).get("(idle)", {"cpu_s": 0.0})["cpu_s"]
        clock = run.profile["pes"][pe]["idle_cpu_s"]
        assert 0.5 * clock - 0.03 <= idle <= 2 * clock + 0.03, (pe, idle, clock)
    # PE 1 waits for PE 0's 200 ms of work (less PE 1's own share)
    assert run.profile["pes"][1]["idle_cpu_s"] > 0.05, run.profile["pes"][1]


def test_a_spin_preempted_by_the_os_is_not_idle_cpu(rt):
    """Both PEs' threads on one CPU: PE 1 spins (it never sleeps) while PE 0 works, and the OS
    shares the CPU between them in time slices.  The idle loop's CPU time leaves out the slices
    PE 0 had (gaps between its clock readings), so it is about half of PE 1's idle wall time;
    counted by the wall clock alone it would be all of it."""
    cpu = min(os.sched_getaffinity(0))
    run = rt.run("categories", "ms=200", env={**ENV, "MPROF_WORKERS": 2}, cpus={cpu}, timeout=120)
    pe = run.profile["pes"][1]
    assert pe["idle_s"] > 0.1, pe
    assert 0.25 * pe["idle_s"] < pe["idle_cpu_s"] < 0.75 * pe["idle_s"], pe


def test_sampling_off(rt):
    run = rt.run("categories", "ms=20", env={"MPROF_SAMPLE_US": 0})
    assert all("categories" not in pe for pe in run.profile["pes"])


def test_program_with_its_own_sigprof_handler_keeps_it(rt):
    run = rt.run("categories", "ms=40", "own_sigprof=1")
    assert "handles SIGPROF itself" in run.stderr
    assert all("categories" not in pe for pe in run.profile["pes"])
