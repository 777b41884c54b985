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


def test_bulk_transfers_of_the_largest_size(rt):
    """A read, a write and a store of exactly mp_max_message() bytes: the record's header
    counted against the limit, so the write was refused and the read's reply could not be
    sent (its reader then waited for ever)."""
    run = rt.run("bulk", "max", env={"MPROF_PES": 2}, timeout=120)
    assert "max: OK" in run.stdout, run.stderr
    assert "exceeds" not in run.stderr, run.stderr


@pytest.mark.parametrize(
    "scenario, what", [("bad_read", "read from"), ("bad_write", "write or store to")]
)
def test_an_address_the_other_pe_cannot_use_is_named_in_the_fault(rt, scenario, what):
    """A bulk read or write naming an address that is no memory of the owner crashed it with a
    bare SIGSEGV in the runtime's copy; the fault now says which transfer it was."""
    run = rt.run("bulk", scenario, env={"MPROF_PES": 2}, profile=False, expect_rc=None)
    assert run.returncode == -11 and "bad: survived" not in run.stdout, run.describe()
    assert (
        f"mprof: PE 1: the address PE 0 named for a bulk {what} it, 64 bytes at "
        "0x10..0x50, is not memory of this PE (SIGSEGV at 0x10)"
    ) in run.stderr, run.stderr


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


@pytest.mark.parametrize("npes", [4, 8])
def test_a_remote_completion_sends_no_message(rt, npes):
    """Each PE's 400 mutators go to the PEs after it in turn, and complete there.  The
    completions are counted where they happen, so the remote operations are the mutators'
    invocations and the freeze rounds' reduction records (2 (P - 1) a round), nothing per
    completion: when every remote completion was a record back to the executing PE, they
    doubled the count."""
    run = rt.run("snapshot", env={"MPROF_PES": npes})
    assert "snapshot: OK" in run.stdout
    remote = npes * sum(1 for n in range(400) if (1 + n) % npes)  # the others' mutators
    rounds, rest = divmod(
        sum(run.pe_stats(pe)["RemoteOp"] for pe in range(npes)) - remote, 2 * (npes - 1)
    )
    assert rest == 0 and 3 <= rounds < remote // (8 * (npes - 1)), (rounds, rest, remote)


def test_a_freeze_whose_rounds_stall_resumes_on_the_completion(rt):
    """PE 0's one mutator completes on PE 1 only after 100 ms of short fibers: two rounds find
    the same sum and the rounds stall until PE 1's completion wakes them.  The remote
    operations are the mutator, the start's barrier, the rounds (4 each at 3 PEs), PE 1's two
    wakes and the snapshot's destroy: three rounds, the third after the wake."""
    run = rt.run("snapshot", "slow", env={"MPROF_PES": 3}, timeout=30)
    assert "slow rc=0" in run.stdout, run.describe()
    ops = [run.pe_stats(pe)["RemoteOp"] for pe in range(3)]
    assert sum(ops) == 1 + 4 + 3 * 4 + 2 + 4, ops


def test_a_mutator_that_never_completes_is_a_hang_not_endless_rounds(rt):
    """Rounds that keep finding the same sum wait for progress, so the machine goes quiescent
    and the hang report comes at once (not after MPROF_IDLE_TIMEOUT, and not never)."""
    run = rt.run(
        "snapshot",
        "lost",
        env={"MPROF_PES": 3, "MPROF_IDLE_TIMEOUT": 60},
        profile=False,
        expect_rc=2,
        timeout=30,
    )
    assert "mprof: hang: no PE can make progress" in run.stderr, run.describe()
    for pe in range(3):  # each PE's sync, its rounds stalled
        assert (
            f"PE {pe}: fiber mpr_snapshot_waits_for_mutators (created by unclassified) "
            "waits on counter" in run.stderr
        ), run.stderr


def test_sleeping_pes_wake_at_once_for_messages(rt):
    # MPROF_SPIN=0: an idle PE sleeps at once, so every barrier round trip goes through the
    # futex wake-up.  A lost wake-up costs the 50 ms sleep timeout each time (60 operations).
    run = rt.run("objects", env={"MPROF_PES": 8, "MPROF_SPIN": 0})
    assert "objects: OK" in run.stdout
    assert run.profile["elapsed_s"] < 1.0


# --- misuse: each case prints "<case> <code>"; the message is on stderr -----------------

NOT_CREATED = (
    "does not exist on this PE (it was not created here by mp_obj_create or "
    "mp_obj_create_named) (invalid argument)"
)
OBJECT_MISUSE = {
    "named_null_reduce": (0, None),
    "named_twice": (5, "object name 6 is in use on this PE (mp_obj_destroy it first)"),
    "named_twice_kept": (0, None),
    "named_out_of_range": (1, "object name 4294967295 is not in the reserved range [1, 1024)"),
    # MP_FAIL (2): the ids spun in the table's growth or asked for gigabytes
    "barrier_id_max": (2, f"mp_obj_barrier: object 4294967295 {NOT_CREATED}"),
    "destroy_id_2_31": (2, f"mp_obj_destroy: object 2147483649 {NOT_CREATED}"),
    "barrier_id_1e8": (2, f"mp_obj_barrier: object 100000000 {NOT_CREATED}"),
    "barrier_never_created": (2, "mp_obj_barrier: object 2025 does not exist"),
    "reduce_named_never_created": (2, "mp_obj_reduce: object 9 does not exist"),
    "destroy_never_created": (2, "mp_obj_destroy: object 1026 does not exist"),
    "local_never_created": (0, None),
    "reduce_unknown_op": (2, "mp_obj_reduce: unknown reduction operation 99 (invalid argument)"),
    "reduce_null_counter": (2, "mp_obj_reduce needs a counter (invalid argument)"),
}


@pytest.mark.parametrize("npes", [1, 3, 4])
def test_objects_refuse_ids_never_handed_out_names_taken_twice_and_unknown_ops(rt, npes):
    run = rt.run("objects", "misuse", env={"MPROF_PES": npes}, timeout=30)
    run.check_cases(OBJECT_MISUSE)
    assert "counter=3 target=3" in run.stdout  # no refused call touched the counter
    assert "misuse rc=0" in run.stdout
    assert all(line.startswith("mprof: error: PE 0: ") for line in run.stderr.splitlines())
    assert len(run.stderr.splitlines()) == 10


NOT_SNAPSHOT = "object 1024 is not a snapshot (it was not made by mp_snapshot_new)"
SNAPSHOT_MISUSE = {
    "query_before_main": (
        2,
        (
            "mprof: error: mp_snapshot_query: snapshot object 1 does not "
            "exist: called outside a running PE (invalid argument)"
        ),
    ),
    "freeze_before_main": (
        2,
        ("mp_snapshot_freeze: snapshot object 1 does not exist: called outside a running PE"),
    ),
    "query_not_snapshot": (2, f"PE 0: mp_snapshot_query: {NOT_SNAPSHOT} (invalid argument)"),
    "suspend_not_snapshot": (1, f"mp_snapshot_suspend: {NOT_SNAPSHOT}"),
    "freeze_not_snapshot": (2, f"mp_snapshot_freeze: {NOT_SNAPSHOT}"),
    "sync_not_snapshot": (2, f"mp_snapshot_sync: {NOT_SNAPSHOT}"),
    "query_rts_object": (2, "mp_snapshot_query: snapshot object 0 does not exist on this PE"),
    "query_never_created": (2, "snapshot object 2025 does not exist on this PE"),
    "query_id_max": (2, "snapshot object 4294967295 does not exist on this PE"),
    "query_snapshot": (0, None),
}


def test_snapshot_calls_on_other_objects_are_refused_and_leave_the_partition_alone(rt):
    # P = 3: execute on a user object used to increment another PE's partition
    run = rt.run("snapshot", "misuse", env={"MPROF_PES": 3}, timeout=30)
    run.check_cases(SNAPSHOT_MISUSE)
    assert "misuse rc=0" in run.stdout


def test_an_unfreeze_without_a_freeze_is_reported_and_releases_nothing(rt):
    run = rt.run(
        "snapshot", "fatal", "unfreeze_unfrozen", env={"MPROF_PES": 3}, profile=False, timeout=30
    )
    assert (
        "snapshot 1025: unfreeze while not frozen (object in the wrong state for this call)"
        in run.stderr
    ), run.describe()
    assert "survived unfreeze_unfrozen" in run.stdout


@pytest.mark.parametrize(
    "call,message",
    [
        ("execute", f"mprof: fatal: PE 0: mp_snapshot_execute: {NOT_SNAPSHOT}"),
        ("complete", f"mprof: fatal: PE 0: mp_snapshot_complete: {NOT_SNAPSHOT}"),
        ("unfreeze", f"mprof: fatal: PE 0: mp_snapshot_unfreeze: {NOT_SNAPSHOT}"),
        # sent nowhere (the send's error ignored): the snapshot waited for it forever
        (
            "complete_pe_negative",
            "mp_snapshot_complete: snapshot 1025: executing PE -1 is not a PE (0..2)",
        ),
        (
            "complete_pe_npes",
            "mp_snapshot_complete: snapshot 1025: executing PE 3 is not a PE (0..2)",
        ),
        # dereferenced the missing PE (SIGSEGV)
        (
            "complete_before_main",
            (
                "mprof: fatal: mp_snapshot_complete: snapshot object 1 does not "
                "exist: called outside a running PE"
            ),
        ),
        # the second completion let a freeze end while a mutator still executed
        (
            "complete_extra",
            (
                "mprof: fatal: PE 0: mp_snapshot_complete: snapshot 1025: more mutators "
                "completed than executed on PE 0 (1)"
            ),
        ),
        # the same, completed on another PE: the freeze's round finds the sum negative on every PE
        (
            "complete_extra_remote",
            ("snapshot 1025: more mutators completed than executed (1 more over all PEs)"),
        ),
    ],
)
def test_snapshot_calls_that_return_nothing_end_the_run_on_misuse(rt, call, message):
    run = rt.run(
        "snapshot", "fatal", call, env={"MPROF_PES": 3}, profile=False, expect_rc=3, timeout=30
    )
    assert message in run.stderr, run.describe()
    assert "survived" not in run.stdout


BULK_MISUSE = {
    "read_null_counter": (2, "mp_bulk_read needs a counter (done is NULL) (invalid argument)"),
    "read_null_dst": (2, "mp_bulk_read of 8 bytes with a NULL destination (invalid argument)"),
    "read_null_src": (2, "mp_bulk_read of 8 bytes with a NULL source (invalid argument)"),
    "write_null_counter": (2, "mp_bulk_write needs a counter (done is NULL)"),
    "write_null_dst": (2, "mp_bulk_write of 8 bytes with a NULL destination"),
    "write_null_src_local": (2, "mp_bulk_write of 8 bytes with a NULL source"),
    "store_null_fn": (2, "mp_bulk_store with a NULL on_arrival function (invalid argument)"),
    "store_null_src": (2, "mp_bulk_store of 8 bytes with a NULL source"),
    "store_null_user": (2, "mp_bulk_store with a NULL user pointer for user bytes"),
    "store_user_over": (
        2,
        (
            "store arrival arguments of 1001 user bytes exceed the 1000-byte "
            "limit (message or arguments too large)"
        ),
    ),
    # wrapped around the limit, then memcpy(SIZE_MAX) (SIGSEGV)
    "store_user_huge": (2, "store arrival arguments of 18446744073709551615 user bytes"),
    "store_user_wraps": (2, "store arrival arguments of 18446744073709551592 user bytes"),
    "store_user_fits": (0, None),  # MP_OK
}


@pytest.mark.parametrize(
    "case, rc, message",
    [
        # a barrier matched with a destroy: the object was gone on one PE and alive on the other
        (
            "barrier_destroy",
            3,
            "mprof: fatal: PE 0: object 1024: PEs called different global "
            "operations on it (mp_obj_barrier and mp_obj_destroy)",
        ),
        # PE 0's SUM and PE 1's MAX combined as a SUM, silently
        ("sum_max", 3, "(mp_obj_reduce(SUM) and mp_obj_reduce(MAX)); every PE must call the same"),
        # nobody waits on the counter: the run ended as if all was well
        (
            "only_pe0",
            2,
            "PE 0: mp_obj_barrier on object 1024 did not complete: not every PE called it",
        ),
        (
            "only_pe1",
            2,
            "PE 0: never called mp_obj_reduce(MAX) on object 1024, which other PEs called",
        ),
    ],
)
def test_global_operations_that_pes_do_not_all_call_alike_are_reported(rt, case, rc, message):
    run = rt.run(
        "objects", "mismatch", case, env={"MPROF_PES": 2}, profile=False, expect_rc=rc, timeout=30
    )
    assert message in run.stderr, run.describe()


def test_bulk_misuse_fails_with_a_message(rt):
    run = rt.run("bulk", "misuse", timeout=30)
    run.check_cases(BULK_MISUSE)
    assert "counter=0" in run.stdout
    assert "misuse rc=0" in run.stdout
    assert all(line.startswith("mprof: error: PE 0: ") for line in run.stderr.splitlines())


@pytest.mark.parametrize("program", ["bulk", "counters"])
@pytest.mark.parametrize("npes", [1, 3])
def test_two_pe_programs_refuse_other_pe_counts(rt, program, npes):
    """rt_bulk and rt_counters are written for PEs 0 and 1 (arrays of two, PE 1 as partner):
    at 3 PEs rt_bulk wrote past its array and crashed; now both say so and exit 2."""
    run = rt.run(program, env={"MPROF_PES": npes}, profile=False, expect_rc=2)
    assert f"rt_{program}: written for 2 PEs, not MPROF_PES={npes}" in run.stderr
