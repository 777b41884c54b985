"""Fibers (create / enable / spawn, handles, argument copies, continuations) and counters
(wait then add, already-reached values, split-phase OK / WAIT / FAIL)."""


def test_fiber_lifecycle_handles_args_and_continuations(rt):
    run = rt.run("fibers")
    assert "fibers: OK" in run.stdout
    expected = dict(kv.split("=") for kv in run.stdout.split("\n")[0].split())
    stats = run.pe_stats(0)
    # continuations count as allocations although they reuse the finishing fiber's storage
    # 16 fibers of the life-cycle checks, 2 x 300 x 8 of argument sizes around the slot
    # classes' bounds, and the fiber that starts the second round of those
    sized = 2 * 300 * 8
    assert stats["ThreadAlloc"] == int(expected["allocs"]) == 16 + sized + 1
    assert stats["ThreadDisp"] == int(expected["disps"]) == 16 + sized + 1
    assert stats["ThreadEnable"] == 16 + sized + 1
    # contexts: payload(44) * 2 + 1024 + chain(16) + int(4); continuations copy nothing
    sized_bytes = 2 * 300 * (1 + 15 + 16 + 17 + 63 + 64 + 65 + 200)
    assert int(expected["sized_bytes"]) == sized_bytes
    assert stats["ThreadContext"] == 44 * 2 + 1024 + 16 + 4 + sized_bytes


def test_counters_wait_add_set_block_and_split_phase_status(rt):
    run = rt.run("counters")
    assert "counters: OK" in run.stdout
    assert "status: ok=0 wait=1 fail=2" in run.stdout
    # the invalid-PE bulk write is refused with a message
    assert "message to PE 7, but P = 2 (invalid PE number)" in run.stderr
