"""Preemptive fibers that arrive in messages run straight from the message buffer (Wen 1995,
section 3.2.4; runtime/src/sched.c mpr_run_direct): no fiber is allocated, enabled or
dispatched for them, their arguments are read where they arrived, and they still behave as
preemptive fibers (no continuation; a preemptive fiber they enable runs inside them).

tests/c/runtime/direct.c: every PE invokes n preemptive handlers (16, 40 and 200-byte
arguments) and n FIFO fibers on its right neighbour; a handler checks its arguments byte by
byte and enables a local preemptive fiber."""

import re

import pytest

N = 600


def results(run):
    rows = {}
    for m in re.finditer(
        r"RESULT pe=(\d+) direct=(\d+) nested=(\d+) fifo=(\d+) sum=(\d+) "
        r"sent=(\d+)",
        run.stdout,
    ):
        pe, *vals = map(int, m.groups())
        rows[pe] = dict(zip(("direct", "nested", "fifo", "sum", "sent"), vals))
    return rows


def check_handled(run, npes):
    rows = results(run)
    assert sorted(rows) == list(range(npes)), run.describe()
    for pe, r in rows.items():
        assert (r["direct"], r["nested"], r["fifo"]) == (N, N, N), (pe, r)
        assert r["sum"] == r["sent"], (pe, r)


@pytest.mark.parametrize("npes,workers", [(2, 2), (7, 2)], ids=["thread-per-pe", "shared"])
def test_preemptive_messages_run_from_the_buffer(rt, npes, workers):
    run = rt.run("direct", f"n={N}", env={"MPROF_PES": npes, "MPROF_WORKERS": workers})
    check_handled(run, npes)
    for pe in range(npes):
        s = run.pe_stats(pe)
        assert s["ThreadDirect"] == N  # the preemptive handlers: no fiber
        assert s["ThreadArrived"] == N  # the FIFO ones became fibers
        # the sender, the FIFO fibers and the nested preemptive fibers (local, real fibers)
        assert s["ThreadDisp"] == s["ThreadAlloc"] == s["ThreadEnable"] == 2 * N + 1
        row = run.latency(pe, "dir:handler", "dir:send")
        assert row and row["count"] == N  # still an access of its category
        assert row["observed_s"] == 0  # run as it arrived


def test_fiber_hooks_turn_direct_runs_into_fibers(rt, tmp_path):
    """Tracing observes every fiber's begin and end: preemptive messages become fibers again,
    with the same results."""
    run = rt.run("direct", f"n={N}", env={"MPROF_TRACE": tmp_path / "trace"})
    check_handled(run, 2)
    for pe in range(2):
        s = run.pe_stats(pe)
        assert s["ThreadDirect"] == 0 and s["ThreadArrived"] == 2 * N
