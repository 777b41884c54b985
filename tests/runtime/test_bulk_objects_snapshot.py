"""Bulk read / write / store, the object manager (collective ids, barrier, reductions) and
the snapshot data structure."""

import pytest


def test_bulk_transfers_remote_and_local(rt):
    run = rt.run("bulk")
    assert "bulk: OK" in run.stdout
    local = int(run.stdout.split("local_bytes=")[1].split()[0])
    assert run.pe_stats(0)["ByteCopy"] == local
    # the 1 MiB write went as one large message: PE 0 sent at least 3 x (64 + 3000 + 1 MiB)
    assert run.pe_stats(0)["ByteSent"] >= 2 * (64 + 3000 + (1 << 20))
    assert run.pe_stats(1)["ByteSent"] >= 64 + 3000 + (1 << 20)  # read replies


@pytest.mark.parametrize("npes", [1, 3, 4, 8])
def test_objects_ids_barrier_and_reductions(rt, npes):
    run = rt.run("objects", env={"MPROF_PES": npes})
    assert f"P={npes} ids=1024,1025,6" in run.stdout
    assert run.profile["npes"] == npes


@pytest.mark.parametrize("npes", [1, 4, 8])
def test_snapshot_freeze_suspend_unfreeze_sync(rt, npes):
    run = rt.run("snapshot", env={"MPROF_PES": npes})
    assert "snapshot: OK" in run.stdout
    for pe in range(npes):
        assert f"PE {pe}: executed=400 completed=400" in run.stdout


def test_sleeping_pes_wake_at_once_for_messages(rt):
    # MPROF_SPIN=0: an idle PE sleeps at once, so every barrier round trip goes through the
    # futex wake-up.  A lost wake-up costs the 50 ms sleep timeout each time (60 operations).
    run = rt.run("objects", env={"MPROF_PES": 8, "MPROF_SPIN": 0})
    assert "objects: OK" in run.stdout
    assert run.profile["elapsed_s"] < 1.0
