"""Event graph semantics (instrumented-lib/eventgraph) through the C scenarios of
tests/c/lib/eventgraph/eg_test.c, at 1, 2, 4 and 8 PEs, with the statistics of graph.perf
checked exactly where the scenario makes them deterministic, with the graph's fibers on the
FIFO and on the preemptive scheduler (same results); tests/c/lib/eventgraph/eg_sched.c shows
that the scheduling option changes when those fibers run, on shared memory and under mpirun;
the same scenarios under ASan+UBSan and TSan.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from tooling import require_tool

MPIRUN = shutil.which("mpirun")
SCHEDS = ["fifo", "preempt"]
TARGETS = ["mprof_eventgraph_tests", "pipe"]
ELT = 24  # element size of eg_test
SANITIZER_ERRORS = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
    r"runtime error:|ThreadSanitizer: reported"
)
_bins: dict = {}


def eg_build(cmake_build, variant: str | None) -> Path:
    """Build directory holding tests/c/lib/eg_test and benchmarks/pipe/pipe for a variant
    (None, "address", "thread"); a failed build fails the test."""
    if variant not in _bins:
        _bins[variant] = cmake_build(sanitize=variant, targets=TARGETS)
    return _bins[variant]


def sanitizer_env(variant: str | None) -> dict:
    if variant == "address":
        return {
            "ASAN_OPTIONS": "abort_on_error=0:detect_leaks=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        }
    if variant == "thread":
        return {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"}
    return {}


def run_eg(
    bdir: Path, variant, scenario: str, npes: int, *args, timeout=60, program="eg_test", mpi=False
):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPROF_", "OMPI_", "PMIX_"))}
    env.update(sanitizer_env(variant))
    with tempfile.TemporaryDirectory(prefix="mprof-eg-") as tmp:
        out = Path(tmp) / "profile.json"
        env.update(MPROF_PES=str(npes), MPROF_OUT=str(out), MPROF_IDLE_TIMEOUT="20")
        cmd = [str(bdir / "tests/c/lib" / program), scenario, *map(str, args)]
        if mpi:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            del env["MPROF_PES"]
            cmd = [MPIRUN, "-np", str(npes), "--oversubscribe", *cmd]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        profile = json.loads(out.read_text()) if out.exists() else None
    msg = f"$ MPROF_PES={npes} {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, msg
    assert "FAIL" not in proc.stdout, msg
    assert not SANITIZER_ERRORS.search(proc.stderr), msg
    assert profile is not None and profile["npes"] == npes, msg
    return proc, profile


def graph_stats(profile) -> list[dict]:
    """The graph object's statistics of every PE."""
    out = []
    for pe in profile["pes"]:
        objs = [o for o in pe["objects"] if o["module"] == "graph"]
        assert len(objs) == 1
        out.append(objs[0]["stats"])
    return out


@pytest.fixture(scope="module")
def eg(cmake_build):
    return eg_build(cmake_build, None)


PES = [1, 2, 4, 8]


@pytest.mark.parametrize("sched", SCHEDS)
@pytest.mark.parametrize("npes", PES)
def test_fifo_multicast_order(eg, npes, sched):
    """2P nodes, node i -> i+1 and i -> i+3 (mod 2P), capacity 3: every in-edge delivers its
    source's elements in order (checked in C), and the counts are exact."""
    k, cap = 300, 3
    proc, prof = run_eg(eg, None, "fifo", npes, k, cap, sched)
    assert f"received={4 * npes * k} expected={4 * npes * k}" in proc.stdout
    for st in graph_stats(prof):
        assert st["P"] == 1 and st["EltSize"] == ELT and st["EdgeCap"] == cap
        assert st["Node"] == 2 and st["Edge"] == 4
        # 2 nodes x K sends, 4 in-edges x K removed elements
        assert st["NOp"] == 2 * k + 4 * k
        assert st["EnqSize"] == 2 * k * 2 * ELT  # each send enqueues on 2 out-edges
        assert st["DeqSize"] == 4 * k * ELT


@pytest.mark.parametrize("npes", PES)
def test_collapse_identical_messages_per_pe(eg, npes):
    """Node 0 multicasts K elements to 3 nodes on every PE: one message per remote PE and
    element (not one per edge)."""
    k = 200
    proc, prof = run_eg(eg, None, "collapse", npes, k, 8)
    stats = graph_stats(prof)
    root = stats[0]
    assert root["NMsg"] == k * (npes - 1)  # 3 * k * (npes - 1) without collapsing
    assert root["NOp"] == k + 3 * k
    assert root["EnqSize"] == k * 3 * npes * ELT
    for st in stats:
        assert st["Node"] == 3 + (1 if st is root else 0)
        assert st["Edge"] == 3 and st["DeqSize"] == 3 * k * ELT
    for st in stats[1:]:
        # release messages only, collapsed per (source, PE) group: at most one per element
        assert 1 <= st["NMsg"] <= k
    # the run's rts agrees: remote operations of PE 0 are the item messages
    rts0 = next(o for o in prof["pes"][0]["objects"] if o["module"] == "rts")["stats"]
    assert rts0["RemoteOp"] == k * (npes - 1)


@pytest.mark.parametrize("sched", SCHEDS)
@pytest.mark.parametrize("npes", PES)
def test_send_suspends_on_full_edge_and_resumes(eg, npes, sched):
    k, cap = 200, 2
    proc, prof = run_eg(eg, None, "block", npes, k, cap, sched)
    assert f"sent={k} received={k}" in proc.stdout  # the sender resumed to the end
    stats = graph_stats(prof)
    assert stats[0]["NBlock"] > 0  # capacity 2 < burst: suspended sends
    assert stats[0]["NOp"] >= k
    assert sum(s["DeqSize"] for s in stats) == k * ELT
    # across PEs the resumed sends are enabled by the flow-control chain DEQ -> ENQ (on one
    # PE the space is returned inline by the receiver's own fiber)
    rows = [r for pe in prof["pes"] for r in pe["latency"]]
    if npes > 1:
        assert any(r["access"] == "graph:ENQ" and r["enabler"] == "graph:DEQ" for r in rows)


@pytest.mark.parametrize("sched", SCHEDS)
@pytest.mark.parametrize("npes", PES)
@pytest.mark.parametrize("mode", ["empty", "any"])
def test_wake_on_empty_edge_vs_any_arrival(eg, npes, mode, sched):
    proc, prof = run_eg(eg, None, f"wake_{mode}", npes, 200, 4, sched)
    # B arrived at a non-empty edge: only ANY mode woke the waiting receiver
    assert f"waiting_after_B={1 if mode == 'empty' else 0}" in proc.stdout
    assert "received=3 expected=3" in proc.stdout
    # the receiver is resumed by a graph:DEQ fiber; in ANY mode across PEs B's arrival fiber
    # (graph:ENQ) enabled it (in EMPTY mode C, sent on the sink's PE, arrives inline)
    rows = [r for pe in prof["pes"] for r in pe["latency"] if r["access"] == "graph:DEQ"]
    assert rows
    if mode == "any" and npes > 1:
        assert any(r["enabler"] == "graph:ENQ" for r in rows)


@pytest.mark.parametrize("sched", SCHEDS)
@pytest.mark.parametrize("npes", PES)
def test_freeze_unfreeze(eg, npes, sched):
    """Ring of P nodes: after each PE sent K and all froze, every in-edge holds exactly K; a
    send while frozen suspends and ships after unfreeze."""
    k = 100
    proc, prof = run_eg(eg, None, "freeze", npes, k, 4, sched)
    assert proc.stdout.count("frozen ok") == npes
    assert f"received={npes * (k + 1)} expected={npes * (k + 1)}" in proc.stdout
    for st in graph_stats(prof):
        assert st["DeqSize"] == (k + 1) * ELT
        assert st["NBlock"] >= 1  # the send while frozen


@pytest.mark.parametrize("npes", [1, 3, 8])
def test_destroy_after_freeze(eg, npes):
    """Ring of P nodes: after the traffic, freeze then eg_graph_destroy on every PE; destroy
    before the freeze is refused, the partition is gone afterwards, the statistics stay (those
    derived from the partition's counts are folded into the record before it goes)."""
    k = 100
    proc, prof = run_eg(eg, None, "destroy", npes, k)
    assert f"received={npes * k} expected={npes * k}" in proc.stdout
    for st in graph_stats(prof):
        assert st["DeqSize"] == k * ELT
        assert st["EnqSize"] == k * ELT


# ------------------------------------------------------------------------------------------
# The scheduling option (eg_config.sched) changes when the graph's fibers run


@pytest.mark.parametrize("npes", [1, 2])
@pytest.mark.parametrize("sched", SCHEDS)
def test_sched_option_runs_wake_up_and_suspended_send_inline(eg, npes, sched):
    """On the sink's PE: preemptive, the wake-up of a waiting receiver runs inside the send
    that delivered the element and a suspended send is shipped inside the eg_remove that
    freed its space; FIFO, both are queued and happen after the call returns."""
    proc, _ = run_eg(eg, None, "local", npes, sched, program="eg_sched")
    flag = int(sched == "preempt")
    assert f"inline_wake={flag} inline_ship={flag}" in proc.stdout, proc.stdout


def split_links(stdout: str) -> int:
    m = re.search(r"split_links=(\d+) links=(\d+)", stdout)
    assert m, stdout
    return int(m.group(1))


@pytest.mark.parametrize("npes", [2, 4])
@pytest.mark.parametrize("sched", SCHEDS)
def test_sched_option_runs_arrivals_ahead_of_queued_fibers(eg, npes, sched):
    """A remote element reaches a PE busy with a chain of FIFO fibers.  FIFO: its arrival fiber
    and then the wake-up fiber wait their turn behind the chain, so a link sees the element
    before the receiver is woken.  Preemptive: both run in the poll that received it."""
    proc, _ = run_eg(eg, None, "remote", npes, sched, program="eg_sched")
    n = split_links(proc.stdout)
    assert (n >= 1) if sched == "fifo" else (n == 0), proc.stdout


@pytest.mark.parametrize("sched", SCHEDS)
def test_sched_option_under_mpirun(eg, sched):
    require_tool("mpirun")
    proc, prof = run_eg(eg, None, "remote", 2, sched, program="eg_sched", mpi=True)
    assert prof["backend"] == "mpi"
    n = split_links(proc.stdout)
    assert (n >= 1) if sched == "fifo" else (n == 0), proc.stdout


# ------------------------------------------------------------------------------------------
# Sanitizers

SAN_CASES = [
    ("fifo", 4, 200, 3),
    ("fifo", 8, 100, 2),
    ("collapse", 4, 100, 4),
    ("block", 4, 200, 2),
    ("wake_empty", 4),
    ("wake_any", 4),
    ("freeze", 4, 50),
    ("freeze", 8, 20),
    ("destroy", 4, 50),
    ("fifo", 4, 200, 3, "preempt"),
    ("block", 4, 200, 2, "preempt"),
    ("freeze", 4, 50, 4, "preempt"),
]


@pytest.mark.sanitizer
@pytest.mark.parametrize("variant", ["address", "thread"], ids=["asan", "tsan"])
def test_eventgraph_clean_under_sanitizers(cmake_build, variant):
    bdir = eg_build(cmake_build, variant)
    for scenario, npes, *args in SAN_CASES:
        run_eg(bdir, variant, scenario, npes, *args, timeout=120)
    for scenario, npes in (("local", 2), ("remote", 2)):
        run_eg(bdir, variant, scenario, npes, "preempt", program="eg_sched", timeout=120)


def test_create_refusals_are_told(eg):
    proc, _ = run_eg(eg, None, "misuse", 2)
    for case, why in (
        ("huge_nodes", "nnodes is over 2^32 - 2"),
        ("bad_edge", "edge 0 joins node 0 to node 5, but there are 2 nodes"),
        ("null_edges", "edges is NULL"),
        ("zero_elt", "elt_size is 0"),
    ):
        assert f"{case} 1\n" in proc.stdout, proc.stdout  # MP_ERR_INVALID_ARG
        for pe in range(2):
            assert f"eventgraph (PE {pe}): eg_graph_create: {why}" in proc.stderr, proc.stderr
    assert "local_of_plain NULL" in proc.stdout
    assert re.search(
        r"eventgraph \(PE 0\): eg_graph_local: object \d+ is not an event graph\n", proc.stderr
    ), proc.stderr


def run_eg_dies(bdir: Path, variant, scenario: str, *args):
    """A misuse scenario that ends the run: its process (stderr holds the message)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPROF_", "OMPI_", "PMIX_"))}
    env.update(sanitizer_env(variant), MPROF_PES="2", MPROF_IDLE_TIMEOUT="20")
    cmd = [str(bdir / "tests/c/lib/eg_test"), scenario, *map(str, args)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0, f"$ {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    assert not SANITIZER_ERRORS.search(proc.stderr), proc.stderr
    return proc


@pytest.mark.parametrize(
    "which, call", list(enumerate(["eg_examine", "eg_remove", "eg_capacity", "eg_is_waiting"]))
)
def test_a_null_graph_is_named_not_dereferenced(eg, which, call):
    """A refused eg_graph_create leaves *out NULL; a program that did not check passed it on,
    and these calls read through it (SIGSEGV)."""
    proc = run_eg_dies(eg, None, "null_graph", which)
    assert f"eventgraph (PE 0): {call}: NULL graph" in proc.stderr or (
        f"eventgraph (PE 1): {call}: NULL graph" in proc.stderr
    ), proc.stderr


def test_finalize_while_the_pes_run_is_refused(eg):
    proc = run_eg_dies(eg, None, "finalize_in_pe")
    assert "eg_finalize called while the PEs run; call it after mp_main returns" in proc.stderr


@pytest.mark.parametrize("variant", [None, "address"], ids=["plain", "asan"])
@pytest.mark.parametrize("scenario", ["differs_elt", "differs_edges", "differs_partition"])
def test_a_graph_created_otherwise_on_another_pe_ends_the_run(cmake_build, variant, scenario):
    """eg_graph_create is collective with one configuration: an element size, an edge list or a
    partition that differs on another PE made its arrivals index rings and groups that are not
    there (SIGSEGV, heap overflow) or copy elements with the wrong size (garbage).  Messages
    carry a fingerprint of the configuration; a receiver with another one names the sender."""
    proc = run_eg_dies(eg_build(cmake_build, variant), variant, scenario)
    assert (
        "eventgraph (PE 1): graph 1024: PE 0 created it with another configuration (element "
        "size, capacity, wake mode, nodes, edges or their PEs): eg_graph_create must be given the "
        "same on every PE"
    ) in proc.stderr, proc.stderr


def test_a_message_for_another_kind_of_object_ends_the_run(eg):
    """PE 1 holds a plain object under the id PE 0's graph has: its arrival read the partition
    as a graph (SIGSEGV)."""
    proc = run_eg_dies(eg, None, "not_a_graph")
    assert "eventgraph (PE 1): object 1024 is not an event graph" in proc.stderr, proc.stderr
