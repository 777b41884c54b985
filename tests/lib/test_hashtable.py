"""The distributed hash table (instrumented-lib/hashtable): semantics at several PE counts
(more PEs than cores too), exact statistics of a deterministic workload, sanitizer runs.

The C program is instrumented-lib/hashtable/tests/ht_test.c; it checks the semantics itself
(insert/lookup/delete results and statuses, duplicate handler, sync after unacknowledged
inserts, iterators covering every key exactly once) and exits non-zero on a failure."""

from __future__ import annotations

import re

import pytest
from libtest import build_program, run_misuse, run_program

TARGET = "mprof_hashtable_tests"
PROGRAM = "ht_test"


def _program(cmake_build, sanitize=None):
    return build_program(cmake_build, TARGET, PROGRAM, sanitize)


_run = run_program


def _stats(profile, module):
    rows = []
    for pe in profile["pes"]:
        recs = [o["stats"] for o in pe["objects"] if o["module"] == module]
        rows.append(recs)
    return rows


@pytest.fixture(scope="module")
def ht_test(cmake_build):
    return _program(cmake_build)


@pytest.mark.parametrize("pes", [1, 2, 4, 8])
def test_semantics(ht_test, tmp_path, pes):
    profile, out = _run(ht_test, ["semantics", "n=300"], pes, tmp_path)
    assert "hashtable semantics: OK" in out
    assert profile["npes"] == pes
    for name in ("INSERT", "LOOKUP", "DELETE", "SYNC"):
        assert f"hashtable:{name}" in profile["accesses"]
    stats = _stats(profile, "hashtable")
    # three tables per PE; the inserts issued while the sync froze the table were parked
    assert all(len(recs) == 3 for recs in stats)
    assert all(recs[2]["NBlock"] >= 301 // 4 + 1 for recs in stats)
    if pes > 1:
        # the fibers that apply remote operations declare the access categories
        seen = {row["access"] for pe in profile["pes"] for row in pe["latency"]}
        assert {"hashtable:INSERT", "hashtable:LOOKUP", "hashtable:DELETE"} <= seen


# ---- exact statistics ------------------------------------------------------------------

M64 = (1 << 64) - 1


def fnv_mix(key: int) -> int:
    """hashtable.c's default hash of an 8-byte little-endian key."""
    x = 1469598103934665603
    for b in key.to_bytes(8, "little"):
        x ^= b
        x = (x * 1099511628211) & M64
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M64
    x ^= x >> 33
    return x


def expected_stats(n: int, bins: int, P: int) -> list[dict]:
    """Per-PE statistics of ht_test's `stats` workload (see stats() in ht_test.c)."""
    total_bins = bins * P
    owner = {}
    lbin = {}
    for k in range(n):
        b = fnv_mix(k) % total_bins
        owner[k] = b % P
        lbin[k] = b // P
    z = [
        "P",
        "Bins",
        "Entry",
        "NOp",
        "NRemote",
        "NBlock",
        "NApply",
        "NMsg",
        "Bytes",
        "Collisions",
        "Duplicates",
        "NSync",
    ]
    st = [dict.fromkeys(z, 0) for _ in range(P)]
    for s in st:
        s["P"], s["Bins"], s["NSync"] = 1, bins, 2

    def op(me, k, req_bytes, reply_bytes, acked):
        o = owner[k]
        st[me]["NOp"] += 1
        st[o]["NApply"] += 1
        if o != me:
            st[me]["NRemote"] += 1
            st[me]["NMsg"] += 1
            st[me]["Bytes"] += req_bytes
            if acked:  # the reply; an unacknowledged op completes at the owner, unsent
                st[o]["NMsg"] += 1
                st[o]["Bytes"] += reply_bytes

    for me in range(P):
        for k in range(me, n, P):
            op(me, k, 16, 0, True)  # inserts
        for k in range(me, n // 2, P):
            op(me, k, 16, 0, True)  # duplicate inserts
            st[owner[k]]["Duplicates"] += 1
        for k in range(me, n, P):
            op(me, k, 8, 8, True)  # lookups (all found, value shipped back)
        for k in range(me, n, P):
            if k % 4 == 0:
                op(me, k, 8, 0, False)  # unacknowledged deletes
    per_bin: dict[tuple[int, int], int] = {}
    for k in range(n):
        per_bin[owner[k], lbin[k]] = per_bin.get((owner[k], lbin[k]), 0) + 1
    for (o, _), m in per_bin.items():
        st[o]["Collisions"] += m - 1
    for k in range(n):
        if k % 4 != 0:
            st[owner[k]]["Entry"] += 1
    return st


@pytest.mark.parametrize("pes,n,bins", [(1, 120, 4), (3, 200, 8), (4, 257, 16), (8, 300, 2)])
def test_statistics_exact(ht_test, tmp_path, pes, n, bins):
    profile, _ = _run(ht_test, ["stats", f"n={n}", f"bins={bins}"], pes, tmp_path)
    got = [recs[0] for recs in _stats(profile, "hashtable")]
    want = expected_stats(n, bins, pes)
    for pe in range(pes):
        assert got[pe] == want[pe], f"PE {pe}"
    # one partition per PE; the table's object id is the same everywhere
    ids = {o["id"] for pe in profile["pes"] for o in pe["objects"] if o["module"] == "hashtable"}
    assert len(ids) == 1


def test_more_pes_than_items(ht_test, tmp_path):
    """Some PEs own no key at all (12 PEs, 2 bins each, 10 keys)."""
    profile, out = _run(ht_test, ["semantics", "n=10", "bins=2"], 12, tmp_path)
    assert "OK" in out


def test_bins_are_written_at_creation(ht_test, tmp_path):
    """A table's bins are written when it is made, so the inserts that first read and then
    write a bin take no page fault for it. Left to calloc, each page of bins faulted twice
    during the inserts (the kernel's zero page at the read, its replacement at the write, which
    flushes the page from every CPU running the program); Tripuzzle's small board spent more
    than half its 2-PE search in those flushes. 2^20 bins per PE (2048 pages) and 40,000 keys
    per PE, which reach every page: the entries themselves take about 470 faults."""
    _, out = _run(ht_test, ["faults", "n=40000", "bins=1048576"], 2, tmp_path)
    rows = re.findall(r"PE (\d+): (\d+) inserts, (\d+) page faults, (\d+) pages of bins", out)
    assert len(rows) == 2, out
    assert sum(int(r[1]) for r in rows) == 80000
    for pe, _, faults, pages in rows:
        assert int(faults) < int(pages) // 2, f"PE {pe}: {faults} faults for {pages} pages\n{out}"


# ---- misuse: refused with a message on stderr ------------------------------------------


def _misuse(exe, case, pes, tmp_path, env_extra=None):
    proc = run_misuse(exe, ["misuse", case], pes, tmp_path, env_extra=env_extra)
    return proc, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def test_misuse_sizes_refused(ht_test, tmp_path):
    """key_size SIZE_MAX + value_size 2 wraps to 1: it was accepted, and the first insert
    copied SIZE_MAX bytes over the stack."""
    proc, msg = _misuse(ht_test, "sizes", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "hashtable misuse sizes: OK" in proc.stdout
    for pe in range(2):
        assert (
            f"hashtable (PE {pe}): ht_create: key_size {(1 << 64) - 1} and value_size 2"
            in proc.stderr
        ), msg
    assert "key_size 8 and value_size 18446744073709551615" in proc.stderr, msg
    assert "key_size 0 and value_size 8" in proc.stderr, msg


def test_misuse_bad_scheduler_refused(ht_test, tmp_path):
    """An unknown scheduler id was accepted; the first remote operation then failed after the
    snapshot counted it, and the next sync waited for ever.  A registered custom one works."""
    proc, msg = _misuse(ht_test, "sched", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "hashtable misuse sched: OK" in proc.stdout, msg
    assert "ht_create: scheduler 99 is neither a built-in one" in proc.stderr, msg
    assert "ht_create: scheduler -1 is neither a built-in one" in proc.stderr, msg


def test_misuse_wrong_kind_of_object(ht_test, tmp_path):
    """A snapshot's id (it jumped through a garbage hash function pointer), a plain object's
    and an unknown id are refused with MP_FAIL by every call that can return it..."""
    proc, msg = _misuse(ht_test, "kind", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "hashtable misuse kind: OK" in proc.stdout, msg
    for fn in (
        "ht_insert",
        "ht_insert_unack",
        "ht_delete_unack",
        "ht_lookup",
        "ht_sync",
        "ht_destroy",
    ):
        assert len(re.findall(rf"\): {fn}: object \d+ is not a hash table\n", proc.stderr)) == 4, (
            fn,
            msg,
        )
        assert f"{fn}: object 77777 is not a hash table on this PE" in proc.stderr, msg


def test_misuse_wrong_kind_local_count_ends_run(ht_test, tmp_path):
    """... and end the run with the message in the calls that cannot (it read the other
    object's memory as a table and returned garbage)."""
    proc, msg = _misuse(ht_test, "kind_count", 1, tmp_path)
    assert proc.returncode != 0, msg
    assert re.search(r"hashtable \(PE 0\): object \d+ is not a hash table\n", proc.stderr), msg


def test_misuse_delete_while_iterating_ends_run(ht_test, tmp_path):
    """A local delete of the entry the iterator holds: ht_iter_next followed the freed entry
    (heap use after free); now it ends the run with a message."""
    proc, msg = _misuse(ht_test, "iter_delete", 1, tmp_path)
    assert proc.returncode != 0, msg
    assert "iteration went on" not in proc.stdout, msg
    assert (
        "hashtable (PE 0): ht_iter_next: entries of the partition were deleted or cleared "
        "during the iteration"
    ) in proc.stderr, msg


@pytest.mark.parametrize("sanitize", [None, "address"], ids=["plain", "asan"])
@pytest.mark.parametrize("what, sizes", [("value", "8 and 64"), ("key", "64 and 8")])
def test_sizes_that_differ_between_pes_end_the_run(cmake_build, tmp_path, sanitize, what, sizes):
    """Key and value sizes are the table's, the same on every PE: the owner read a request's
    key, and the issuer its reply's value, with their own sizes (a stack overrun of the
    issuer's value, a key read past the message).  A request carries the issuer's sizes and
    the owner ends the run naming both."""
    exe = _program(cmake_build, sanitize)
    env = {"ASAN_OPTIONS": "detect_leaks=0"}
    proc, msg = _misuse(exe, f"sizes_differ_{what}", 2, tmp_path, env_extra=env)
    assert proc.returncode != 0 and "Sanitizer" not in proc.stderr, msg
    assert re.search(
        r"hashtable \(PE 1\): table \d+: PE 0 created it with 8-byte keys and 8-byte values, "
        rf"this PE with {sizes}: ht_create must be given the same sizes on every PE\n",
        proc.stderr,
    ), msg


@pytest.mark.sanitizer
def test_misuse_sanitized(cmake_build, tmp_path):
    """The refusals touch no memory they should not."""
    exe = _program(cmake_build, "address")
    env = {"ASAN_OPTIONS": "detect_leaks=0"}
    for case, pes in (
        ("sizes", 2),
        ("sched", 2),
        ("kind", 2),
        ("iter_delete", 1),
        ("iter_destroyed", 1),
    ):
        proc, msg = _misuse(exe, case, pes, tmp_path, env_extra=env)
        assert "Sanitizer" not in proc.stderr, msg
        assert (proc.returncode == 0) == (not case.startswith("iter_")), msg


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, tmp_path, sanitize):
    exe = _program(cmake_build, sanitize)
    # the programs destroy their structures: leaks are reported
    env = {"TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=1"}
    _, out = _run(exe, ["semantics", "n=120"], 4, tmp_path, timeout=300, env_extra=env)
    assert "OK" in out
    _run(exe, ["stats", "n=100", "bins=4"], 3, tmp_path, timeout=300, env_extra=env)


def test_misuse_refusals_leave_the_table_as_it_was(ht_test, tmp_path):
    """A destroy while a sync runs destroyed the table and then failed; a second sync while
    one runs left a fiber waiting for ever (the run ended as a hang); a shared snapshot that is
    no snapshot was accepted, and the first insert ended the run."""
    proc, msg = _misuse(ht_test, "busy", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "hashtable misuse busy: OK" in proc.stdout and "hang" not in proc.stderr, msg
    assert "ht_create: snapshot 777 is not a snapshot of this PE" in proc.stderr, msg
    assert re.search(r"ht_create: snapshot \d+ is not a snapshot of this PE", proc.stderr), msg


@pytest.mark.parametrize(
    "case, message",
    [
        ("null_key", "hashtable (PE 0): ht_owner: NULL key"),
        (
            "null_iter",
            "hashtable (PE 0): ht_iter_next: the iterator was not set up by ht_iter_init",
        ),
    ],
)
def test_misuse_null_arguments_end_the_run_with_a_message(ht_test, tmp_path, case, message):
    """They dereferenced NULL (SIGSEGV)."""
    proc, msg = _misuse(ht_test, case, 1, tmp_path)
    assert proc.returncode != 0 and proc.returncode != -11, msg
    assert message in proc.stderr and "survived" not in proc.stdout, msg
