"""The runtime tests (all but the timing-sensitive ones) under ASan+UBSan and TSan.

Each test runs once per sanitizer build (build-asan, build-tsan); any sanitizer report on
stderr fails it (see rt_helpers.SANITIZER_ERRORS).  TSan suppressions: tests/runtime/tsan.supp.
"""

import pytest
from test_stress_hang_misuse import STRESS_ENV, check_stress_table

pytestmark = pytest.mark.sanitizer

PROGRAMS = [
    ("fibers",),
    ("counters",),
    ("schedulers", "builtin"),
    ("schedulers", "rr"),
    ("schedulers", "prio"),
    ("bulk",),
    ("snapshot",),
]


@pytest.mark.parametrize("args", PROGRAMS, ids=["-".join(a) for a in PROGRAMS])
def test_program_clean_under_sanitizer(rt_san, args):
    run = rt_san.run(*args, timeout=120)
    assert "order=" in run.stdout or ": OK" in run.stdout


@pytest.mark.parametrize("npes", [3, 8])
def test_objects_under_sanitizer(rt_san, npes):
    rt_san.run("objects", env={"MPROF_PES": npes}, timeout=120)


@pytest.mark.parametrize(
    "args",
    [("objects", "misuse"), ("snapshot", "misuse"), ("bulk", "misuse")],
    ids=["objects", "snapshot", "bulk"],
)
def test_object_snapshot_bulk_misuse_under_sanitizer(rt_san, args):
    """Refused calls touch no memory they were not given (a snapshot call on a user object
    read and wrote past its partition; a huge mp_bulk_store user size copied SIZE_MAX)."""
    run = rt_san.run(*args, env={"MPROF_PES": 3}, timeout=120)
    assert "misuse rc=0" in run.stdout


@pytest.mark.parametrize("npes", [3, 8])
def test_snapshot_rounds_that_stall_and_resume_under_sanitizer(rt_san, npes):
    """A freeze's rounds stall, and one PE's completion wakes the others (snapshot.c)."""
    run = rt_san.run("snapshot", "slow", env={"MPROF_PES": npes}, timeout=120)
    assert "slow rc=0" in run.stdout


def test_snapshot_complete_before_mp_main_under_sanitizer(rt_san):
    """(A fatal misuse inside a run exits with the PEs' memory held: LeakSanitizer reports it,
    so only the call made before mp_main runs here.)"""
    run = rt_san.run(
        "snapshot", "fatal", "complete_before_main", profile=False, expect_rc=3, timeout=120
    )
    assert "mprof: fatal: mp_snapshot_complete: " in run.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_category_sampling_under_sanitizer(rt_san, workers):
    """The sampler's signal handler reads the PE's state on its own thread, and a shared
    worker switches the sampled PE at every slice."""
    run = rt_san.run(
        "categories", "ms=40", timeout=120, env={"MPROF_WORKERS": workers, "MPROF_SAMPLE_US": 200}
    )
    assert all(pe.get("categories") for pe in run.profile["pes"])


def test_direct_preemptive_messages_under_sanitizer(rt_san):
    """Handlers run from the message buffer while the buffer is still being polled."""
    run = rt_san.run("direct", "n=300", env={"MPROF_PES": 5, "MPROF_WORKERS": 2}, timeout=120)
    assert run.stdout.count("direct=300 nested=300 fifo=300") == 5


def test_carriers_under_sanitizer(rt_san):
    """Records run from buffers that go back to their senders only after the last carrier."""
    for args, workers in ((["n=600"], 2), (["n=600", "custom=1"], 1)):
        run = rt_san.run(
            "carriers", *args, env={"MPROF_PES": 4, "MPROF_WORKERS": workers}, timeout=120
        )
        assert run.stdout.count("records=1800 conts=360 urgents=258") == 4


def test_comm_under_sanitizer(rt_san):
    rt_san.run("comm", "count", 2000, 40, timeout=120)
    rt_san.run("comm", "flush", 200, 32, env={"MPROF_FLUSH_FIBERS": 7}, timeout=120)
    rt_san.run(
        "comm", "order", 2000, env={"MPROF_SMALL_BYTES": 16, "MPROF_AGG_BYTES": 1024}, timeout=120
    )
    # every record at once, each size (12-1024 bytes) on the unaggregated fast path, in small
    # and large pooled buffers
    rt_san.run("comm", "order", 2000, env={"MPROF_AGG_BYTES": 0}, timeout=120)


@pytest.mark.parametrize("workers", [1, 2])
def test_shared_worker_buffers_under_sanitizer(rt_san, workers):
    run = rt_san.run(
        "comm",
        "alltoall",
        500,
        timeout=120,
        env={
            "MPROF_PES": 7,
            "MPROF_WORKERS": workers,
            "MPROF_SMALL_BYTES": 16,
            "MPROF_AGG_BYTES": 1024,
        },
    )
    assert "arrivals=3500 expected=3500" in run.stdout


@pytest.mark.parametrize("pes", [16, 64, 97])
def test_many_destinations_under_sanitizer(rt_san, pes):
    """A thread per PE, every PE sending to every other: the flush policy's cross-thread
    reads (a destination's idle period) and the urgent interrupt; every record arrives once,
    in its sender's order.  At 97 PEs most records travel in two hops (comm.c, "Routing")."""
    run = rt_san.run(
        "comm",
        "alltoall",
        300,
        timeout=240,
        env={
            "MPROF_PES": pes,
            "MPROF_WORKERS": pes,
            "MPROF_SMALL_BYTES": 16,
            "MPROF_AGG_BYTES": 1024,
            "MPROF_FLUSH_DELAY_US": 200,
        },
    )
    assert f"arrivals={pes * 300} expected={pes * 300}" in run.stdout


def test_message_service_under_sanitizer(rt_san):
    run = rt_san.run("comm", "service", 5, env={"MPROF_WORKERS": 2}, timeout=120)
    assert "arrivals=5 expected=5" in run.stdout
    # an interrupt that finds the PE out of work: its buffers go before the poll
    run = rt_san.run("comm", "lastwords", env={"MPROF_WORKERS": 3}, timeout=120)
    assert "delivered=1" in run.stdout, run.stdout


def test_stress_under_sanitizer(rt_san):
    run = rt_san.run("stress", 100000, env=STRESS_ENV, timeout=240)
    check_stress_table(run, 100000)


@pytest.mark.parametrize("scenario", ["fiber", "block", "held"])
def test_hang_under_sanitizer(rt_san, scenario):
    run = rt_san.run("hang", scenario, expect_rc=2, timeout=60)
    assert "mprof: hang:" in run.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_multiplexed_pes_under_sanitizer(rt_san, workers):
    run = rt_san.run("mux", 30, env={"MPROF_PES": 6, "MPROF_WORKERS": workers}, timeout=120)
    assert "mux: OK" in run.stdout


def test_misuse_under_sanitizer(rt_san):
    run = rt_san.run("misuse", timeout=120)
    assert "after=12 rc=0" in run.stdout


def test_watchdog_under_sanitizer(rt_san):
    run = rt_san.run(
        "watchdog", "fiber", env={"MPROF_PROGRESS_TIMEOUT": 0.5}, expect_rc=2, timeout=60
    )
    assert "mprof: hang: PE 1: fiber watchdog_spinner" in run.stderr
