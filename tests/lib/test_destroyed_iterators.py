"""Iterators of a destroyed structure: the hash table's and the bipartite graph's iterators
held the partition's address, and after the structure's destroy their next step read freed
memory; each step now checks that its handle still names the partition and ends the run with
a message (instrumented-lib/common/lib_internal.h, lib_iter_part)."""

import pytest
from libtest import build_program, run_misuse

CASES = [
    # target, program, what the message calls the structure and its iterator
    ("mprof_hashtable_tests", "ht_test", "hashtable (PE 0): ht_iter_next: the hash table"),
    ("mprof_bipartite_tests", "bg_test", "bipartite (PE 0): bg_iter_next: the bipartite graph"),
]


@pytest.mark.parametrize("target, program, said", CASES, ids=["hashtable", "bipartite"])
def test_iterating_a_destroyed_structure_ends_the_run(cmake_build, tmp_path, target, program, said):
    exe = build_program(cmake_build, target, program)
    proc = run_misuse(exe, ["misuse", "iter_destroyed"], 1, tmp_path)
    msg = f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode != 0, msg
    assert "iteration went on" not in proc.stdout, msg
    assert f"{said} was destroyed since the iterator was set up" in proc.stderr, msg
