"""The task stealer (instrumented-lib/taskstealer): every task runs exactly once, stealing
under imbalance, termination detected with tasks in flight, every topology, 1-16 PEs.

The C program is instrumented-lib/taskstealer/tests/ts_test.c; it checks that each task ran
once and that termination was announced only after all had run, and exits non-zero
otherwise.  Here the run profiles are checked: counts that are exact for the workload are
asserted exactly, the load-balancing ones by their invariants."""

from __future__ import annotations

import json
import re

import pytest
from libtest import build_program, run_misuse, run_program

TARGET = "mprof_taskstealer_tests"
PROGRAM = "ts_test"
TOPOLOGIES = ["ring", "hypercube", "complete", "push"]
TASK_SIZE = 16  # sizeof(task) in ts_test.c


def _program(cmake_build, sanitize=None):
    return build_program(cmake_build, TARGET, PROGRAM, sanitize)


_run = run_program


def _stats(profile):
    rows = []
    for pe in profile["pes"]:
        recs = [o["stats"] for o in pe["objects"] if o["module"] == "taskstealer"]
        assert len(recs) == 1
        rows.append(recs[0])
    return rows


def _total(rows, name):
    return sum(r[name] for r in rows)


def _common_invariants(rows, tasks, pes):
    assert _total(rows, "NAdd") == tasks
    assert _total(rows, "NTask") == tasks
    for r in rows:
        assert r["P"] == 1
        assert r["Bytes"] == TASK_SIZE * r["NMigrate"]
        # termination costs one global round, the announcement, whatever the run
        assert r["NProbe"] == 1
    if pes == 1:
        assert all(r["NMsg"] == 0 and r["NMigrate"] == 0 and r["NSteal"] == 0 for r in rows)


@pytest.fixture(scope="module")
def ts_test(cmake_build):
    return _program(cmake_build)


def _acks(rows, pes, remote_adds):
    """Termination detection acknowledges each message that carries tasks (a steal with tasks
    or a remote add) once, and each PE other than PE 0 its initial engagement once."""
    assert _total(rows, "NAck") == _total(rows, "NSteal") + remote_adds + pes - 1


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("pes", [1, 2, 4, 8])
def test_imbalance(ts_test, tmp_path, topology, pes):
    """All tasks start on PE 0: the others must steal (or, pushing, nobody steals)."""
    # enough work that random victims find PE 0 while it still has tasks, even though a
    # busy PE serves requests only at its periodic polls
    n = 400
    profile, out = _run(ts_test, ["imbalance", topology, f"n={n}", "us=150"], pes, tmp_path)
    assert "OK" in out
    rows = _stats(profile)
    _common_invariants(rows, n, pes)
    assert rows[0]["NAdd"] == n
    if pes == 1:
        # 160 removes at once; the last ts_done leaves PE 0 idle with nothing
        # unacknowledged, so termination is announced before any remove waits
        assert rows[0]["NBlock"] == 0 and rows[0]["NProbe"] == 1
        assert rows[0]["NAck"] == 0
        assert rows[0]["NStealFail"] == 0
    elif topology == "push":
        # adds to PE 0's own pool stay local; nothing to steal with pushing
        assert _total(rows, "NSteal") == 0 and _total(rows, "NStealFail") == 0
        assert _total(rows, "NMigrate") == 0
        assert rows[0]["NTask"] == n
    else:
        assert _total(rows, "NSteal") > 0
        assert _total(rows, "NMigrate") > 0
        assert rows[0]["NTask"] < n  # some tasks ran elsewhere
        # tasks reach the other PEs only by stealing (a task may migrate more than once)
        assert 0 < sum(r["NTask"] for r in rows[1:]) <= _total(rows, "NMigrate")
        assert rows[0]["NMigrate"] >= n - rows[0]["NTask"]
    _acks(rows, pes, 0)  # all tasks were added locally


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("pes", [1, 2, 4, 8])
def test_spawn_in_flight(ts_test, tmp_path, topology, pes):
    """Tasks spawn children on the next PE: termination must wait for tasks in flight."""
    depth = 7
    tasks = (2 << depth) - 1
    profile, out = _run(ts_test, ["spawn", topology, f"depth={depth}", "us=50"], pes, tmp_path)
    assert "OK" in out
    rows = _stats(profile)
    _common_invariants(rows, tasks, pes)
    if pes > 1:
        explicit = (1 << depth) - 1  # one child per inner task goes to the next PE
        assert _total(rows, "NMigrate") >= explicit
        if topology != "push":
            # TS_ANY children stay local: migrations are the explicit adds plus the steals
            stolen = _total(rows, "NMigrate") - explicit
            assert stolen >= 0
            assert (stolen == 0) == (_total(rows, "NSteal") == 0)
        else:
            assert _total(rows, "NSteal") == 0
        _acks(rows, pes, explicit if topology != "push" else _total(rows, "NMigrate"))


@pytest.mark.parametrize("topology", ["complete", "ring", "push"])
@pytest.mark.parametrize("pes", [1, 2, 3, 16])
def test_termination_exactly_once(ts_test, tmp_path, topology, pes):
    """Zero-length tasks that migrate as fast as they run: termination must be announced
    exactly when the last of 2^11-1 tasks has run, never while one is queued, running or in
    flight (ts_test checks every task ran once and the total at termination)."""
    depth = 10
    tasks = (2 << depth) - 1
    profile, out = _run(ts_test, ["spawn", topology, f"depth={depth}", "us=0"], pes, tmp_path)
    assert "OK" in out
    rows = _stats(profile)
    _common_invariants(rows, tasks, pes)
    if pes > 1:
        explicit = (1 << depth) - 1
        _acks(rows, pes, explicit if topology != "push" else _total(rows, "NMigrate"))


@pytest.mark.parametrize("pes", [2, 3, 16])
def test_imbalance_no_work_time(ts_test, tmp_path, pes):
    """Tasks that take no time, all on PE 0: thieves and PE 0 race to empty its pool."""
    n = 3000
    profile, out = _run(ts_test, ["imbalance", "complete", f"n={n}", "us=0"], pes, tmp_path)
    assert "OK" in out
    rows = _stats(profile)
    _common_invariants(rows, n, pes)
    _acks(rows, pes, 0)


@pytest.mark.parametrize("pes", [1, 3])
def test_priorities(ts_test, tmp_path, pes):
    profile, out = _run(ts_test, ["priority", "n=120", "us=0"], pes, tmp_path)
    assert "OK" in out
    rows = _stats(profile)
    assert all(r["NTask"] == 120 and r["NAdd"] == 120 and r["NMigrate"] == 0 for r in rows)


def test_access_categories(ts_test, tmp_path):
    profile, _ = _run(ts_test, ["spawn", "ring", "depth=6", "us=20"], 4, tmp_path)
    for name in ("ADD", "REMOVE", "STEAL", "TERMINATE"):
        assert f"taskstealer:{name}" in profile["accesses"]
    seen = {row["access"] for pe in profile["pes"] for row in pe["latency"]}
    assert {"taskstealer:ADD", "taskstealer:REMOVE", "taskstealer:TERMINATE"} <= seen


# ---- misuse: refused with a message on stderr ------------------------------------------


def _misuse(exe, case, pes, tmp_path, env_extra=None):
    proc = run_misuse(exe, ["misuse", case], pes, tmp_path, env_extra=env_extra)
    return proc, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("pes", [1, 3])
def test_misuse_add_after_termination(ts_test, tmp_path, pes):
    """A task added after termination can never run: ts_add returned MP_OK and dropped it."""
    proc, msg = _misuse(ts_test, "add_after_term", pes, tmp_path)
    assert proc.returncode == 0, msg
    assert "taskstealer misuse add_after_term: OK" in proc.stdout, msg
    for pe in range(pes):
        assert (
            f"taskstealer (PE {pe}): ts_add (destination -1): the stealer has terminated: "
            "the task could never run"
        ) in proc.stderr, msg
    assert "no ts_remove took" not in proc.stderr, msg  # the pools were empty at the end


@pytest.mark.parametrize("pes", [1, 3])
def test_tasks_no_remove_took_are_reported_at_the_end(ts_test, tmp_path, pes):
    """PE 0 adds three tasks and no PE removes any: the run ends, as nothing waits, and the
    tasks never ran.  The PE that holds them says so once the run is over; the others say
    nothing."""
    proc, msg = _misuse(ts_test, "never_removed", pes, tmp_path)
    assert proc.returncode == 0, msg
    assert "taskstealer misuse never_removed: OK" in proc.stdout, msg
    lines = [line for line in proc.stderr.splitlines() if "no ts_remove took" in line]
    assert len(lines) == 1, msg
    assert re.fullmatch(
        r"taskstealer \(PE 0\): task stealer \d+: the run ended with 3 task\(s\) "
        r"in this PE's pool that no ts_remove took \(a task runs only once "
        r"removed: remove until ts_remove answers TS_TERMINATED, or use ts_run\)",
        lines[0],
    ), msg


def test_misuse_wrong_kind_of_object(ts_test, tmp_path):
    """Another object's id (a snapshot, a plain object) is refused by the calls that return an
    error (they read its partition as a stealer's) ..."""
    proc, msg = _misuse(ts_test, "kind", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "taskstealer misuse kind: OK" in proc.stdout, msg
    for fn in ("ts_add", "ts_remove", "ts_destroy", "ts_run_worker"):
        assert (
            len(re.findall(rf"\): {fn}: object \d+ is not a task stealer\n", proc.stderr)) == 4
        ), (fn, msg)
        assert f"{fn}: object 77777 is not a task stealer on this PE" in proc.stderr, msg


def test_misuse_wrong_kind_local_count_ends_run(ts_test, tmp_path):
    """... and ts_local_count, which cannot, ends the run with the message (it returned another
    structure's field)."""
    proc, msg = _misuse(ts_test, "kind_count", 1, tmp_path)
    assert proc.returncode != 0, msg
    assert re.search(r"taskstealer \(PE 0\): object \d+ is not a task stealer\n", proc.stderr), msg


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, tmp_path, sanitize):
    exe = _program(cmake_build, sanitize)
    # the programs destroy their structures: leaks are reported
    env = {"TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=1"}
    for args in (
        ["spawn", "ring", "depth=6", "us=20"],
        ["imbalance", "complete", "n=80", "us=50"],
        ["spawn", "push", "depth=5", "us=0"],
    ):
        _, out = _run(exe, args, 4, tmp_path, timeout=300, env_extra=env)
        assert "OK" in out


def test_misuse_refused_options_are_told(ts_test, tmp_path):
    """ts_create returned MP_ERR_INVALID_ARG with nothing on stderr."""
    proc, msg = _misuse(ts_test, "options", 2, tmp_path)
    assert proc.returncode == 0 and "taskstealer misuse options: OK" in proc.stdout, msg
    for pe in range(2):
        for why in (
            "task_size is 0",
            "task_size is over TS_MAX_TASK",
            "steal_max is 0",
            "unknown topology",
        ):
            assert f"taskstealer (PE {pe}): ts_create: {why}" in proc.stderr, msg


# ---- options that differ between PEs, creation outside a PE, a task never finished --------


@pytest.mark.parametrize("sanitize", [None, "address"], ids=["plain", "asan"])
def test_a_steal_max_that_differs_between_pes_is_honoured(cmake_build, tmp_path, sanitize):
    """steal_max is a per-PE setting: PE 0 takes one task per steal, PE 1 holds 200 tasks with
    the default 128.  The victim capped a steal with its own steal_max and stored up to 100
    tasks into PE 0's buffer of one (a heap overrun); a request now carries the thief's, and
    each of PE 0's steals brings exactly one task."""
    exe = _program(cmake_build, sanitize)
    env = {"ASAN_OPTIONS": "detect_leaks=1"}
    proc = run_misuse(exe, ["misuse", "stealmax_differs", "n=200"], 2, tmp_path, env_extra=env)
    msg = f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0 and "Sanitizer" not in proc.stderr, msg
    assert "taskstealer misuse stealmax_differs: OK (P=2)" in proc.stdout, msg
    rows = _stats(json.loads((tmp_path / "misuse-2.json").read_text()))
    assert _total(rows, "NTask") == 200 and rows[1]["NAdd"] == 200, msg
    assert rows[0]["NSteal"] >= 1, msg
    # PE 1's tasks reach PE 0 only by PE 0's steals: one task each
    assert rows[1]["NMigrate"] == rows[0]["NSteal"], rows


@pytest.mark.parametrize("sanitize", [None, "address"], ids=["plain", "asan"])
@pytest.mark.parametrize(
    "case, line",
    [
        # a task added to PE 1's pool: PE 1 copied 64 bytes from the 16 the message carried
        (
            "tasksize_add",
            "(PE 1): task stealer 1024: PE 0 created it with 16-byte tasks, this PE with 64",
        ),
        # PE 1's steal request: PE 0 wrote its 16-byte tasks into a buffer laid out for 64
        (
            "tasksize_steal",
            "(PE 0): task stealer 1024: PE 1 created it with 64-byte tasks, this PE with 16",
        ),
    ],
)
def test_a_task_size_that_differs_between_pes_ends_the_run(
    cmake_build, tmp_path, sanitize, case, line
):
    """task_size must be the same on every PE: messages that carry tasks, and steal requests,
    carry their sender's, and a receiver created with another ends the run naming both."""
    exe = _program(cmake_build, sanitize)
    env = {"ASAN_OPTIONS": "detect_leaks=0"}
    proc, msg = _misuse(exe, case, 2, tmp_path, env_extra=env)
    assert proc.returncode != 0 and "Sanitizer" not in proc.stderr, msg
    assert "OK" not in proc.stdout, msg
    assert (
        f"taskstealer {line}: ts_create must be given the same task_size on every PE\n"
        in proc.stderr
    ), msg


@pytest.mark.parametrize("sanitize", [None, "address"], ids=["plain", "asan"])
def test_create_outside_a_pe_is_refused(cmake_build, tmp_path, sanitize):
    """ts_create before mp_main, with each topology: the ring divided by zero (P is 0 outside a
    PE), the others failed later with the runtime's messages and left a partition behind.  It
    is refused first, with one line, and allocates nothing (leaks are reported under ASan)."""
    exe = _program(cmake_build, sanitize)
    env = {"ASAN_OPTIONS": "detect_leaks=1"}
    proc, msg = _misuse(exe, "create_outside_pe", 2, tmp_path, env_extra=env)
    assert proc.returncode == 0, msg
    assert "taskstealer misuse create_outside_pe: OK (P=2)" in proc.stdout, msg
    line = (
        "taskstealer: ts_create: called outside a running PE (create the stealer in "
        "pe_main, on every PE)"
    )
    assert proc.stderr.splitlines() == [line] * 4, msg  # one per topology, nothing else


@pytest.mark.parametrize("pes", [2, 3])
def test_a_task_removed_and_never_finished_ends_the_run_as_a_hang(ts_test, tmp_path, pes):
    """Every PE removes a task, never calls ts_done and removes again: termination can never
    be detected.  The starving PEs passed steal requests and refusals back and forth for ever
    at full speed, so the machine never fell quiet and the run neither ended nor reported
    anything.  Now a thief that every victim refused backs off: the machine falls quiet, the
    runtime reports the waiting removes (not the idle timeout: nothing spins) and each PE's
    stealer the task it never finished."""
    proc = run_misuse(ts_test, ["misuse", "remove_without_done"], pes, tmp_path, timeout=40)
    msg = f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 2, msg
    assert "mprof: hang: no PE can make progress; waiting fibers:" in proc.stderr, msg
    assert "whole machine idle" not in proc.stderr, msg  # quiescence, not the timeout
    for pe in range(pes):
        assert f"misuse remove_without_done: the run ended (PE {pe})" in proc.stdout, msg
        assert f"  PE {pe}: pe_main blocked in mp_block_until on counter " in proc.stderr, msg
        assert (
            f"taskstealer (PE {pe}): task stealer 1024: 1 task(s) removed on this PE and not "
            "finished with ts_done: termination cannot be detected (finish every task obtained "
            "from ts_remove with ts_done)\n"
        ) in proc.stderr, msg
