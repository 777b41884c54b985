"""Stress (10^6 remote invocations among 4 PEs), hang diagnosis and misuse reports."""

import json
import re
import subprocess
import time

import pytest
from rt_helpers import clean_env

STRESS_ENV = {"MPROF_PES": 4, "MPROF_SMALL_BYTES": 16, "MPROF_AGG_BYTES": 1024}


def check_stress_table(run, total, pes=4):
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", run.stdout, re.M)
    assert len(rows) == pes * pes, run.stdout[-3000:]
    sent = 0
    for src, dst, n_sent, n_recv, b_sent, b_recv in rows:
        assert n_sent == n_recv, f"{src}->{dst}: sent {n_sent}, received {n_recv}"
        assert b_sent == b_recv, f"{src}->{dst}: sent {b_sent} bytes, received {b_recv}"
        if src == dst:
            assert n_sent == "0"
        else:
            assert int(n_sent) > 0
        sent += int(n_sent)
    assert sent == total
    assert f"total={total} out_of_order=0" in run.stdout
    remote = sum(run.pe_stats(pe)["RemoteOp"] for pe in range(pes))
    assert remote >= total
    fast = sum(run.pe_stats(pe)["FastMsgSent"] for pe in range(pes))
    msgs = sum(run.pe_stats(pe)["MsgSent"] for pe in range(pes))
    assert fast > total // 3 and msgs > 0  # all three classes travelled


def test_stress_million_invocations_all_to_all(rt):
    t0 = time.monotonic()
    run = rt.run("stress", 1000000, env=STRESS_ENV, timeout=120)
    print(run.stdout)
    check_stress_table(run, 1000000)
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("pes,workers", [(97, 97), (130, 130), (100, 60)])
def test_stress_through_two_hops(rt, pes, workers):
    """Past 65 PEs with a thread each, records for PEs outside the sender's row and column of
    the PE grid go through a forwarding PE (runtime/src/comm.c, "Routing").  Every class of
    record (fast, aggregated, at once, bulk stores) between every pair must still arrive once,
    intact and in order, and the forwarders must have forwarded; 97 PEs leave the grid's last
    row short (ten columns, seven PEs), whose PEs route through the row above.  With 100 PEs
    on 60 workers, the PEs with a worker of their own route, while those that share one
    aggregate per worker and forward what reaches them."""
    run = rt.run(
        "stress",
        200000,
        timeout=180,
        env={**STRESS_ENV, "MPROF_PES": pes, "MPROF_WORKERS": workers},
    )
    check_stress_table(run, 200000, pes)
    forwarded = [run.pe_stats(pe)["RecordFwd"] for pe in range(pes)]
    assert sum(forwarded) > 0 and min(forwarded) >= 0


def test_stress_goes_straight_up_to_65_pes(rt):
    """A PE of its own keeps a buffer open for each of 64 others: nothing is forwarded."""
    run = rt.run(
        "stress", 50000, timeout=120, env={**STRESS_ENV, "MPROF_PES": 65, "MPROF_WORKERS": 65}
    )
    check_stress_table(run, 50000, 65)
    assert sum(run.pe_stats(pe)["RecordFwd"] for pe in range(65)) == 0


def hang(rt, scenario, **env):
    t0 = time.monotonic()
    run = rt.run("hang", scenario, env=env, expect_rc=None, timeout=30)
    assert run.returncode != 0, run.describe()
    assert time.monotonic() - t0 < 10
    return run


def test_hang_fiber_waiting_on_a_counter_nobody_increments(rt):
    run = hang(rt, "fiber", MPROF_IDLE_TIMEOUT=3)
    assert re.search(
        r"PE 1: fiber hang_stuck_waiter \(created by hang:setup\) waits on "
        r"counter 0x[0-9a-f]+ for value 5, counter is 2",
        run.stderr,
    ), run.stderr
    assert "mp_main returned 2" in run.stdout
    # thread counts at the end include fibers that never ran: PE 1 dispatched its setup fiber
    # and still holds the waiter, created but never enabled
    stats = run.pe_stats(1)
    assert (stats["ThreadAlloc"], stats["ThreadEnable"], stats["ThreadDisp"]) == (2, 1, 1)


def test_hang_pe_main_blocked_in_block_until(rt):
    run = hang(rt, "block")
    assert "mp_block_until returned 5" in run.stdout
    assert re.search(
        r"PE 0: pe_main blocked in mp_block_until on counter 0x[0-9a-f]+ for "
        r"value 1, counter is 0",
        run.stderr,
    ), run.stderr


def test_hang_fiber_held_by_a_custom_scheduler(rt):
    run = hang(rt, "held")
    assert "PE 0: 1 enabled fibers held by scheduler never" in run.stderr
    stats = run.pe_stats(0)  # enabled, held, never dispatched
    assert (stats["ThreadAlloc"], stats["ThreadEnable"], stats["ThreadDisp"]) == (1, 1, 0)


MISUSE = {
    # case: (printed code, stderr fragment)
    "continue_in_main": (6, "mp_continue called outside a fiber (call needs an executing fiber)"),
    "already_waiting": (4, "a fiber may wait on one counter (fiber already waits on a counter)"),
    "block_in_fiber": (
        7,
        "mp_block_until is a blocking call; inside a fiber wait with "
        "mp_counter_wait and a continuation (blocking call made inside a fiber)",
    ),
    "invalid_pe_invoke": (2, "message to PE 2, but P = 2 (invalid PE number)"),
    "invalid_pe_negative": (2, "message to PE -1, but P = 2 (invalid PE number)"),
    "invoke_null_args": (1, "remote invocation with a NULL function or data (invalid argument)"),
    "invoke_null_args_large": (1, "remote invocation with a NULL function or data"),
    "invoke_null_fn": (1, "remote invocation with a NULL function or data"),
    "invalid_pe_counter": (2, "message to PE 5, but P = 2 (invalid PE number)"),
    "too_large_invoke": (
        3,
        "fiber arguments of 1025 bytes exceed 1024 (message or arguments too large)",
    ),
    "too_large_spawn": (3, None),
    "too_large_create": (3, None),
    "too_large_write": (2, "exceeds the 67108864-byte limit (message or arguments too large)"),
    "too_large_write_huge": (2, "mp_bulk_write of 18446744073709551615 bytes exceeds"),
    "too_large_store_user": (2, "store arrival arguments of"),
    "too_large_read_huge": (2, "mp_bulk_read of 18446744073709551600 bytes exceeds"),
    "gop_first": (1, None),  # MP_WAIT
    "gop_busy": (2, "already has a global operation in progress (object in the wrong state"),
    "enable_twice": (5, "enabling a fiber that is not in the created state"),
    "unknown_sched": (1, "unknown scheduler id 99 (invalid argument)"),
    "derive_not_record": (1, "is not a statistics record of this PE (invalid argument)"),
    "double_free_distinct": (0, "freed twice (object in the wrong state for this call)"),
    "wait_null": (1, "NULL counter (invalid argument)"),
    "counter_wrap": (0, "adding 2 to 18446744073709551614 would wrap past 2^64 - 1"),
    "counter_to_max": (0, None),
}


def test_misuse_reports_error_codes_and_the_run_continues(rt):
    run = rt.run("misuse", env={"MPROF_PES": 2})
    run.check_cases(MISUSE)
    assert "freeing a counter that fibers still wait on" in run.stderr
    assert all(line.startswith("mprof: error: PE 0: ") for line in run.stderr.splitlines())
    # every invocation made after the misuse arrived and the run ended normally
    assert "after=12 rc=0" in run.stdout


def test_a_fiber_for_a_scheduler_its_pe_never_registered_ends_the_run_with_a_message(rt):
    """The sender checks the id against its own schedulers; the receiver indexed past its
    table and crashed."""
    run = rt.run("misuse", "foreign_sched", env={"MPROF_PES": 2}, profile=False, expect_rc=3)
    assert run.codes()["foreign_sched_invoke"] == "0"
    assert (
        "mprof: fatal: PE 1: a fiber arrived for scheduler 3, which this PE never registered"
    ) in run.stderr


def test_handles_kept_past_mp_main_and_bad_descriptions_are_refused(rt):
    run = rt.run("misuse", "after_main", env={"MPROF_PES": 2}, profile=False)
    run.check_cases(
        {
            "access_null": (1, "access category with a NULL module or name"),
            "access_long": (1, "longer than 255 bytes"),
            "add_remote_freed": (5, "used after mp_counter_free"),
            "add_remote_null": (1, "NULL counter"),
            "stats_no_fields": (1, "mp_stats_new: statistics without field descriptions"),
            "stats_no_name": (1, "mp_stats_new: a statistic without a name"),
            "stats_bad_type": (1, "mp_stats_new: a statistic of unknown type"),
            "access_word_unknown": (1, "mp_access_word of unknown access category 200"),
            "counter_value_after": (5, "mp_counter_value outside a running PE"),
            "counter_value_freed": (5, "mp_counter_value of counter"),
            "counter_value_null": (1, "mp_counter_value of a NULL counter"),
            "bulk_write_self_huge": (
                2,
                "mp_bulk_write of 67108865 bytes exceeds the 67108864-byte limit",
            ),
            "bulk_read_self_freed_counter": (2, "used after mp_counter_free"),
            "param_nan": (
                1,
                'mp_param("ratio", NaN): a parameter is a finite number; not recorded',
            ),
            "param_null": (1, "mp_param with a NULL name"),
            "param_empty": (1, "mp_param with an empty name"),
            "flush_outside": (5, "mp_flush outside a running PE"),
            "access_declare_outside": (5, "mp_access_declare outside a running PE"),
            "fiber_enable_after": (5, "mp_fiber_enable outside a running PE"),
        }
    )
    assert "mp_counter_free outside a running PE" in run.stderr
    assert "rc=0" in run.stdout


def test_a_config_set_by_hand_gets_the_environments_limits(rt):
    run = rt.run("misuse", "config", profile=False)
    codes = run.codes()
    for case, field in (
        ("config_agg_bytes", "agg_bytes is over 1 GiB"),
        ("config_sample_s", "sample_s is neither 0 (off) nor a period"),
        ("config_idle_timeout", "idle_timeout_s or progress_timeout_s"),
        ("config_idle_timeout_tiny", "idle_timeout_s is neither 0 (off) nor at least 0.1 s"),
        ("config_program_empty", "program is empty or not UTF-8"),
        ("config_program_not_utf8", "program is empty or not UTF-8"),
    ):
        assert codes.get(case) == "1", f"{case}\n{run.describe()}"
        assert "mp_main: the config's" in run.stderr and field in run.stderr, case


def test_a_second_mp_main_while_one_runs_is_refused(rt):
    """Two threads' runs would share the process's run state: the second call hung both."""
    run = rt.run("misuse", "concurrent", profile=False, timeout=30)
    run.check_cases({"main_concurrent": (5, "mp_main called while another thread's mp_main runs")})
    assert "first rc=0" in run.stdout


def test_a_statistic_that_is_no_finite_number_is_listed_as_absent(rt):
    """NaN or infinity written as such made the run profile JSON no reader accepts."""
    from mprof.db.validate import parse_profile

    run = rt.run("misuse", "nan_stat", env={"MPROF_PES": 2})
    for pe, why in ((0, "the value was NaN"), (1, "the value was infinite")):
        record = next(o for o in run.profile["pes"][pe]["objects"] if o["module"] == "nanmod")
        assert record["stats"] == {"rate": 2.5, "count": 3}
        assert record["absent"] == {"ratio": why}
        assert (
            f"mprof: warning: PE {pe}: statistic nanmod:ratio of object 7 is not a finite "
            "number; the run profile lists it as absent"
        ) in run.stderr
    parse_profile(json.dumps(run.profile), "run.json")  # the database takes it


def test_a_tiny_idle_timeout_is_ignored_with_a_warning(rt):
    run = rt.run("objects", env={"MPROF_PES": 4, "MPROF_IDLE_TIMEOUT": "1e-6"})
    assert (
        "mprof: ignoring MPROF_IDLE_TIMEOUT=1e-06 (expected 0, off, or at least 0.1 s)"
        in run.stderr
    )
    assert "hang" not in run.stderr and "objects: OK" in run.stdout


# --- code that never returns to the runtime (runtime/src/watchdog.c) --------------------


@pytest.mark.parametrize("workers", [None, 1])
def test_watchdog_names_a_fiber_that_never_returns(rt, workers):
    env = {"MPROF_PROGRESS_TIMEOUT": 0.5}
    if workers:
        env["MPROF_WORKERS"] = workers  # the stuck PE's worker also hosts PE 0
    t0 = time.monotonic()
    run = rt.run("watchdog", "fiber", env=env, expect_rc=2, timeout=30)
    assert time.monotonic() - t0 < 10
    m = re.search(
        r"mprof: hang: PE 1: fiber watchdog_spinner \(category wd:spin\) has run for "
        r"([0-9.]+) s without returning to the runtime",
        run.stderr,
    )
    assert m, run.describe()
    assert 0.5 <= float(m.group(1)) < 5
    assert "mprof: state: PE 0: idle" in run.stderr


def test_watchdog_names_pe_main_stuck_in_a_loop(rt):
    run = rt.run("watchdog", "main", env={"MPROF_PROGRESS_TIMEOUT": 0.3}, expect_rc=2, timeout=30)
    assert re.search(
        r"mprof: hang: PE 0: pe_main has run for [0-9.]+ s without returning", run.stderr
    ), run.describe()


def test_watchdog_leaves_a_busy_pe_alone_though_its_fiber_keeps_one_address(rt):
    # a continuation chain runs in one fiber's storage for 1.2 s: `current` never changes, but
    # the PE dispatches fibers all along, and the watchdog must see that
    run = rt.run("watchdog", "chain", "1.2", env={"MPROF_PROGRESS_TIMEOUT": 0.3}, timeout=30)
    assert "mprof: hang" not in run.stderr, run.describe()
    assert "mp_main returned 0" in run.stdout


def test_sigquit_dumps_every_pe_and_the_run_goes_on(rt):
    """SIGQUIT while PE 0 computes in a fiber and PE 1 blocks: a dump, then a normal end."""
    import signal
    import subprocess

    from rt_helpers import clean_env

    proc = subprocess.Popen(
        [str(rt.bindir / "rt_watchdog"), "quit", "1.5"],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "busy"
    time.sleep(0.2)
    proc.send_signal(signal.SIGQUIT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "mp_main returned 0" in out
    assert "mprof: state of 2 PE(s)" in err
    assert re.search(
        r"PE 0: running fiber watchdog_long \(category wd:long\), unchanged for", err
    ), err
    assert re.search(r"counter 0x[0-9a-f]+: value 0, 1 fibers wait, the first for 3", err), err
    assert re.search(
        r"PE 1: idle.*\n.*pe_main blocked in mp_block_until on counter 0x[0-9a-f]+ "
        r"for 1 \(is 0\)",
        err,
    ), err


def test_backend_tables_are_checked_for_required_entries(rt):
    """mp_main refuses a backend whose table lacks a required entry, naming it; an optional
    entry that another one makes required (the multiplexing and aggregation-group entries) is
    named when it is missing; optional entries may be NULL."""
    run = rt.run("machine_table", profile=False)
    assert "shm missing=none" in run.stdout
    assert "no-pending missing=pending" in run.stdout
    assert "no-yield missing=yield" in run.stdout
    assert "no-group-open missing=group_open" in run.stdout
    assert "no-group-flush missing=group_flush" in run.stdout
    assert "no-optional missing=none" in run.stdout


NAMES = {
    "stats_same_id": (1, "mp_stats_new: object 7 already has a statistics record on this PE"),
    "stats_same_id_other_module": (1, None),
    "stats_runtime_id": (1, "object 0 already has a statistics record on this PE (the runtime's)"),
    "stats_max_id_twice": (1, "object 18446744073709551615 already has a statistics record"),
    "stats_same_id_late": (1, "object 555 already has a statistics record"),
    "stats_two_fields_one_name": (1, "mp_stats_new: two statistics of one name"),
    "stats_module_not_utf8": (1, "mp_stats_new: a module name that is not UTF-8"),
    "stats_field_not_utf8": (1, "mp_stats_new: a statistic name that is not UTF-8"),
    "access_colon_module": (1, "access category a:b:c: a module name has no ':'"),
    "access_not_utf8": (1, "access category with a name that is not UTF-8"),
    "access_colon_name": (0, None),  # "a" + "b:c": the first ':' still separates the module
    "param_not_utf8": (1, "mp_param: the name is not UTF-8; not recorded"),
}


def test_names_and_object_ids_make_a_profile_its_readers_accept(rt):
    """Object ids unique on a PE, distinct statistic names in a module, UTF-8 names: each
    breach is refused where it is made (the record is not created), so the profile stays one
    the database reads."""
    from mprof.db.validate import parse_profile

    run = rt.run("misuse", "names", env={"MPROF_PES": 2})
    run.check_cases(NAMES)
    parse_profile(json.dumps(run.profile), "run.json")  # raises if a reader rejects it
    ids = [o["id"] for o in run.profile["pes"][0]["objects"]]
    assert len(ids) == len(set(ids)) == 1 + 1 + 1 + 1000  # rts, 7, 2^64 - 1, 100..1099
    assert run.profile["params"] == {"café": 2}


def test_the_object_id_set_under_sanitizers(rt_san):
    run = rt_san.run("misuse", "names", env={"MPROF_PES": 2})
    run.check_cases(NAMES)


def test_a_command_line_in_another_encoding_is_written_as_replacement_characters(rt, tmp_path):
    from mprof.db.validate import parse_profile

    out = tmp_path / "run.json"
    proc = subprocess.run(
        [str(rt.bindir / "rt_misuse"), "names", b"caf\xe9\xff-arg"],
        env=clean_env(MPROF_PES="2", MPROF_OUT=str(out)),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["argv"][-1] == "caf\ufffd\ufffd-arg"
    parse_profile(out.read_text(encoding="utf-8"), str(out))


@pytest.mark.parametrize(
    "scenario, what",
    [("hook_invoke", "invoked a fiber or sent a message"), ("hook_spawn", "enabled a fiber")],
)
def test_an_end_hook_that_starts_work_fails_the_run(rt, scenario, what):
    """An mp_at_pe_end hook runs after the last fiber: a fiber it invokes or enables never runs.
    The call cannot refuse it without a test on every spawn's path, so the runtime looks after
    the hook, names it and fails the run; a hook that only settles figures is fine."""
    run = rt.run("misuse", scenario, env={"MPROF_PES": 2}, profile=False)
    assert run.codes()[f"{scenario}_call"] == "0"
    assert "mprof: error: PE 0: the mp_at_pe_end hook" in run.stderr
    assert f"{what} after the PE had ended: nothing will run it" in run.stderr
    assert "after=0 quiet=1 rc=2" in run.stdout


def test_freeing_the_counter_pe_main_blocks_on_is_refused(rt):
    """A counter that took its memory would end mp_block_until with its own value."""
    run = rt.run("misuse", "blocked_free", env={"MPROF_PES": 2})
    run.check_cases(
        {
            "blocked_wait": (0, "freeing the counter that mp_block_until waits on"),
            "blocked_value": (0, None),
        }
    )


def test_completion_counters_of_global_operations_are_checked_like_a_transfers(rt):
    """A freed counter, or another PE's, as `done` of a barrier, reduction, destroy, freeze or
    sync: refused at the call (MP_FAIL), nothing started, the object and snapshot still work."""
    run = rt.run("misuse", "done_counter", env={"MPROF_PES": 2})
    run.check_cases(
        {
            "barrier_freed": (5, "PE 0: counter"),
            "destroy_freed": (5, "used after mp_counter_free"),
            "sync_freed": (5, None),
            "freeze_freed": (5, None),
            "sync_null": (1, "snapshot 1025: sync without a counter (invalid argument)"),
            "free_in_flight": (5, "freeing a counter that 2 bulk transfers in flight will still"),
            "barrier_foreign": (5, "PE 1: counter of PE 0 updated on another PE"),
            "reduce_foreign": (5, None),
            "value_foreign": (5, "mp_counter_value of a counter of PE 0 on PE 1"),
        }
    )
    assert run.stderr.count("used after mp_counter_free") == 4


def test_a_derive_function_that_calls_back_is_refused_not_hung(rt):
    run = rt.run("misuse", "derive_reenter", env={"MPROF_PES": 2}, timeout=30)
    run.check_cases(
        {
            "derive_derive": (5, "mp_stats_derive called from a derive function"),
            "derive_stats_new": (5, "mp_stats_new called from a derive function"),
        }
    )
    (rec,) = [o for o in run.profile["pes"][0]["objects"] if o["module"] == "outer"]
    assert rec["stats"] == {"k": 5}


def test_null_config_and_argv_are_refused(rt):
    run = rt.run("misuse", "null_args", profile=False)
    run.check_cases(
        {
            "config_init_null": (1, "mp_config_init(NULL): no config to fill (invalid argument)"),
            "main_argv_null": (1, "mp_main: argc 1 with a NULL argv"),
            "main_argc_negative": (1, "mp_main: argc -1 with an argv"),
        }
    )
