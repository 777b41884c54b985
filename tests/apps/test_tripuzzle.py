"""Tripuzzle (benchmarks/tripuzzle): the solution count equals an independent sequential
search (no symmetry pruning) and the Python replay of the canonical search, for FIFO and
preemptive inserts, at 1-4 PEs and more PEs than cores, on shared memory and under mpirun;
the search's statistics and the hash tables' are exact (they do not depend on timing or on
who owns a board); a corrupted count fails the check; sanitizer runs of the small case."""

from __future__ import annotations

import pytest
from apps import build, run, tripuzzle_bfs
from tooling import require_tool

FIVE = tripuzzle_bfs(5, 5, 3)  # the built-in case: 5 rows, hole in the middle of row 5


@pytest.fixture(scope="module")
def tripuzzle(cmake_build):
    return build(cmake_build, "tripuzzle")


def check_stats(r, rows, want, P):
    phases = rows * (rows + 1) // 2 - 2
    assert r.total("tripuzzle", "NExpand") == want["expanded"]
    assert r.total("tripuzzle", "NMove") == want["moves"]
    assert {s["Phase"] for s in r.stats("tripuzzle")} == {phases}
    # two tables; one insert per move plus the initial board; an insert of a board already
    # in the table is a duplicate
    inserts = r.total("hashtable", "NOp")
    assert inserts == want["moves"] + 1
    assert r.total("hashtable", "NApply") == inserts
    assert r.total("hashtable", "Duplicates") == inserts - want["distinct"]
    syncs = [s["NSync"] for s in r.stats("hashtable")]
    assert sum(syncs) == P * (phases + 1)
    # the last level's boards are left in one table, the other was cleared
    assert r.total("hashtable", "Entry") == want["final_boards"]


def test_check_alone_runs_the_builtin_case_on_two_pes(tripuzzle):
    r = run(tripuzzle, "--check", timeout=30)
    assert f"{FIVE['solutions']} solutions" in r.stdout
    assert "check against the sequential search: OK" in r.stdout
    assert r.profile["npes"] == 2
    check_stats(r, 5, FIVE, 2)


@pytest.mark.parametrize("pes", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("sched", ["fifo", "preempt"])
def test_solutions_and_statistics(tripuzzle, pes, sched):
    r = run(tripuzzle, "--check", "--rows=5", f"--sched={sched}", "--bins=64", pes=pes)
    assert f"sched={sched}" in r.stdout and "OK" in r.stdout
    check_stats(r, 5, FIVE, pes)
    assert r.profile["params"]["preempt"] == (sched == "preempt")
    if pes > 1:
        assert r.total("hashtable", "NRemote") > 0


def test_another_hole_and_the_known_count(tripuzzle):
    """The 15-hole triangle with its top hole empty has 29760 solutions (a classic result)."""
    want = tripuzzle_bfs(5, 1, 1)
    assert want["solutions"] == 29760
    r = run(tripuzzle, "--check", "--rows=5", "--hole=1,1", pes=3)
    assert "29760 solutions" in r.stdout and "OK" in r.stdout
    check_stats(r, 5, want, 3)


def test_sync_carries_the_idle_time(tripuzzle):
    """The snapshot's fibers inherit the sync's category, so idle time waiting for the
    inserts to drain is charged to hashtable:SYNC (Wen 1995, Fig 5.2), not to unclassified."""
    r = run(tripuzzle, "--rows=6", pes=2)
    rows = [x for pe in r.profile["pes"] for x in pe["latency"]]
    sync = sum(x["observed_s"] for x in rows if x["access"] == "hashtable:SYNC")
    other = sum(x["observed_s"] for x in rows if x["access"] != "hashtable:SYNC")
    assert sync > other


def test_a_wrong_count_fails_the_check(tripuzzle):
    r = run(tripuzzle, "--check", "--fault", pes=2, expect_rc=1)
    assert "check against the sequential search: FAILED" in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--rows=11"],
        ["--rows=2"],
        ["--rows=5", "--hole=6,1"],
        ["--hole=2,3"],
        ["--sched=urgent"],
        ["--bins=0"],
        ["extra"],
    ],
)
def test_bad_command_lines(tripuzzle, args):
    r = run(tripuzzle, *args, expect_rc=2)
    assert "tripuzzle" in r.stderr and r.profile is None


@pytest.mark.parametrize("sched", ["fifo", "preempt"])
def test_mpi_backend(tripuzzle, sched):
    require_tool("mpirun")
    r = run(tripuzzle, "--check", "--rows=5", f"--sched={sched}", np=2)
    assert "OK" in r.stdout
    assert r.profile["backend"] == "mpi" and r.profile["npes"] == 2
    check_stats(r, 5, FIVE, 2)


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, sanitize):
    exe = build(cmake_build, "tripuzzle", sanitize)
    for sched in ("fifo", "preempt"):
        r = run(
            exe,
            "--check",
            "--rows=5",
            f"--sched={sched}",
            "--bins=256",
            pes=3,
            sanitize=sanitize,
            timeout=300,
        )
        assert "OK" in r.stdout
