"""Arrived FIFO records run from their message buffer (runtime/src/mpr_carrier.h): a run of
such records in a buffer is one queue entry, a carrier, that runs each record in a frame with
the header of the fiber it would have become.

tests/c/runtime/carriers.c: every PE invokes n FIFO fibers on every other PE, aggregated, with
8, 40 and 120-byte arguments in turn; a record checks its sender order and its bytes, every
5th hands its storage to a continuation that checks the bytes again later, and every 7th
spawns an urgent fiber that must run before the next record of the run."""

import re

import pytest

N = 3000
SIZES = (8, 40, 120)  # the records' argument sizes in turn (carriers.c sizes[])


def results(run):
    rows = {}
    for m in re.finditer(r"RESULT pe=(\d+) records=(\d+) conts=(\d+) urgents=(\d+)", run.stdout):
        pe, *vals = map(int, m.groups())
        rows[pe] = dict(zip(("records", "conts", "urgents"), vals))
    return rows


def check(run, npes, n=N):
    rows = results(run)
    assert sorted(rows) == list(range(npes)), run.describe()
    per_sender = {"records": n, "conts": len(range(0, n, 5)), "urgents": len(range(0, n, 7))}
    for pe, r in rows.items():
        assert r == {k: v * (npes - 1) for k, v in per_sender.items()}, (pe, r)


@pytest.mark.parametrize(
    "npes,workers,agg,carriers,custom,extra",
    [
        (2, 2, 4096, 1, 0, {}),
        (5, 2, 4096, 1, 0, {}),
        (3, 1, 65536, 1, 0, {}),
        (4, 4, 65536, 1, 0, {}),
        (5, 2, 4096, 0, 0, {}),
        (3, 2, 65536, 1, 1, {}),
        (3, 1, 4096, 1, 1, {}),
        (4, 2, 4096, 1, 0, {"MPROF_FLUSH_FIBERS": 1}),
    ],
    ids=[
        "2pe-threads",
        "5pe-shared",
        "3pe-one-worker",
        "4pe-64k",
        "no-carriers",
        "custom-sched",
        "custom-sched-one-worker",
        "period-every-record",
    ],
)
def test_carried_records_keep_order_arguments_and_continuations(
    rt, npes, workers, agg, carriers, custom, extra
):
    """MPROF_CARRIERS=0 (every record a fiber) must give the same results and counts; with a
    custom scheduler registered, dispatch runs FIFO entries one at a time (a carrier that an
    urgent fiber stops goes back to the front of the FIFO queue); with a communication period
    after every fiber, a carrier polls (and makes carriers of the same buffer) between any
    two of its records."""
    run = rt.run(
        "carriers",
        f"n={N}",
        f"custom={custom}",
        env={
            "MPROF_PES": npes,
            "MPROF_WORKERS": workers,
            "MPROF_AGG_BYTES": agg,
            "MPROF_CARRIERS": carriers,
            **extra,
        },
        timeout=120,
    )
    check(run, npes)
    records = (npes - 1) * N
    conts, urgents = (npes - 1) * len(range(0, N, 5)), (npes - 1) * len(range(0, N, 7))
    for pe in range(npes):
        s = run.pe_stats(pe)
        assert s["MsgSent"] < records / 8  # many records a buffer
        assert s["ThreadArrived"] == records  # a record counts as a thread
        # most records ran from their buffer: all but the first of each run a poll took
        assert (s["ThreadCarried"] > records / 2) if carriers else s["ThreadCarried"] == 0
        # every arrived record's argument bytes, counted where its context is made (a fiber,
        # or the frame of the carrier that runs it), and the urgent fibers' (a long each)
        assert (
            s["ThreadContext"] == (npes - 1) * sum(SIZES[i % 3] for i in range(N)) + 8 * urgents
        ), s
        # the sender, the records, the continuations and the urgent fibers
        assert (
            s["ThreadDisp"]
            == s["ThreadAlloc"]
            == s["ThreadEnable"]
            == 1 + records + conts + urgents
        )
        assert s["Sched"] == custom
        row = run.latency(pe, "car:record", "car:send")
        assert row and row["count"] == records  # enabled by the sender's category
        cont = run.latency(pe, "car:cont", "car:record")
        assert cont and cont["count"] == conts


def test_carried_records_with_fiber_hooks(rt, tmp_path):
    """Tracing observes every fiber's begin and end, so every record takes run_fiber's path
    with hooks (and the poll makes no carriers while receive hooks are on): same results."""
    run = rt.run("carriers", "n=600", env={"MPROF_TRACE": tmp_path / "trace"}, timeout=120)
    check(run, 2, 600)
