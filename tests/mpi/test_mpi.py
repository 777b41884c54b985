"""The runtime on its MPI backend (one PE per rank), compared with the shared-memory backend.

Programs run under `mpirun -np 2` and `mpirun -np 4 --oversubscribe` (this machine has 2
cores), each over Open MPI's default transport (shared memory between the ranks of one host)
and over TCP (`--mca btl self,tcp`, as a network between hosts carries the messages; here
through the loopback interface, which every host has), and with MPROF_PES=2/4 on shared
memory; their deterministic results must agree:
  * tests/mpi/c/portable.c: backend-neutral checks of communication, bulk transfers, objects,
    the snapshot and a stress run; every PE prints its own RESULT lines (arrival counts, byte
    sums, order-independent hashes, per-source arrival tables);
  * the runtime's C test programs of tests/c/runtime whose checks hold on any backend (latency,
    hang, idle, carriers; fibers and schedulers are single-PE programs and run on one rank).
    The others (comm, counters, bulk, objects, snapshot, stress, misuse) check, after mp_main
    returns, globals that other PEs wrote: on MPI those live in other processes, so portable.c
    covers the same features instead;
  * the data-structure test programs and PIPE from the normal build (build/), when built.
The run profile gathered by rank 0 must have one section per PE and the same deterministic
rts statistics as on shared memory.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from tooling import require_tool

REPO = Path(__file__).resolve().parents[2]
MPIRUN = shutil.which("mpirun")


@pytest.fixture(autouse=True)
def _mpirun_installed():
    """Every test here runs mpirun (or compares with it): scripts/bootstrap.sh installs it."""
    require_tool("mpirun")


NPS = [2, 4]
# mpirun options per transport: Open MPI's choice (shared memory within a host), and TCP only
# (Open MPI leaves the loopback interface out unless told, and ranks of one host reach each
# other through it whatever interface their address is on)
TRANSPORTS = {
    "sm": [],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
# rts statistics that do not depend on timing (MsgSent does, through flushes when a PE runs
# out of fibers; FlowMsgSent counts different events per backend: see docs/mpi.md)
DETERMINISTIC_RTS = ["RemoteOp", "ByteSent", "ThreadAlloc", "ThreadDisp", "P", "Sched"]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPROF_", "OMPI_", "PMIX_"))}
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Result:
    def __init__(self, proc, profile):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.profile = profile
        self.args = proc.args

    def lines(self, prefix="RESULT"):
        return sorted(line for line in self.stdout.splitlines() if line.startswith(prefix))

    def rts(self, pe):
        for obj in self.profile["pes"][pe]["objects"]:
            if obj["module"] == "rts":
                return obj["stats"]
        raise AssertionError("no rts object")

    def describe(self):
        return (
            f"$ {' '.join(map(str, self.args))}\nexit {self.rc}\n--- stdout\n"
            f"{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


def run(exe, *args, np=None, transport="sm", timeout=60, **settings) -> Result:
    """np=None: shared memory with MPROF_PES from settings; else mpirun -np np over
    `transport` (TRANSPORTS)."""
    with tempfile.TemporaryDirectory(prefix="mprof-mpi-") as tmp:
        out = Path(tmp) / "profile.json"
        env = _env(MPROF_OUT=out, **settings)
        cmd = [str(exe), *map(str, args)]
        if np is not None:
            cmd = [MPIRUN, "-np", str(np), "--oversubscribe", *TRANSPORTS[transport], *cmd]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        profile = json.loads(out.read_text()) if out.exists() else None
    return Result(proc, profile)


@pytest.fixture(scope="session")
def mpi_build(cmake_build) -> Path:
    bdir = cmake_build("build-mpi", source=REPO / "tests" / "mpi")
    if "MPROF_HAVE_MPI" not in (bdir / "build.ninja").read_text():
        pytest.fail(
            "CMake did not find MPI: the runtime was built without its MPI backend "
            "(scripts/bootstrap.sh installs Open MPI)"
        )
    return bdir


def _same_results(exe, args, np, transport, **settings):
    shm = run(exe, *args, MPROF_PES=np, **settings)
    assert shm.rc == 0, shm.describe()
    mpi = run(exe, *args, np=np, transport=transport, **settings)
    assert mpi.rc == 0, mpi.describe()
    assert mpi.lines() and mpi.lines() == shm.lines(), (mpi.describe(), shm.lines())
    return shm, mpi


def _check_profile(shm, mpi, np, keys=DETERMINISTIC_RTS):
    doc = mpi.profile
    assert doc is not None, "rank 0 wrote no run profile\n" + mpi.describe()
    assert doc["backend"] == "mpi" and shm.profile["backend"] == "shm"
    assert doc["npes"] == np and [p["pe"] for p in doc["pes"]] == list(range(np))
    for pe in range(np):
        a, b = shm.rts(pe), mpi.rts(pe)
        for k in keys:
            assert a[k] == b[k], f"PE {pe} {k}: shm {a[k]} mpi {b[k]}"


# ---------------------------------------------------------------------------------------
# backend-neutral checks

PORTABLE = [("comm", 200), ("bulk",), ("objects",), ("snapshot",), ("stress", 20000)]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
@pytest.mark.parametrize("args", PORTABLE, ids=[a[0] for a in PORTABLE])
def test_portable_results_equal_shared_memory(mpi_build, args, np, transport):
    exe = mpi_build / "tests" / "mpi" / "mpi_portable"
    shm, mpi = _same_results(exe, args, np, transport, MPROF_SMALL_BYTES=16)
    # a freeze sums the mutators in flight in as many rounds of a global reduction as their
    # completions take to arrive, so the snapshot case's messages and fibers vary with timing
    keys = ["P", "Sched"] if args[0] == "snapshot" else DETERMINISTIC_RTS
    _check_profile(shm, mpi, np, keys)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
def test_runs_one_after_another_lose_no_message(mpi_build, np, transport):
    """mp_main five times in a row: a rank done with a run starts sending in the next while
    rank 0 still writes the run profile; none of those messages may be lost (the receives
    a finished run had posted are withdrawn before any rank can start the next)."""
    exe = mpi_build / "tests" / "mpi" / "mpi_portable"
    shm, mpi = _same_results(
        exe, ["comm", 200, 5], np, transport, MPROF_SMALL_BYTES=16, MPROF_IDLE_TIMEOUT=20
    )
    assert len(mpi.lines()) == 5 * np


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
def test_without_aggregation_message_counts_equal(mpi_build, np, transport):
    """With aggregation off every record is its own message: MsgSent is deterministic too;
    a small credit window makes senders run out of credits and queue (flow control)."""
    exe = mpi_build / "tests" / "mpi" / "mpi_portable"
    shm, mpi = _same_results(
        exe,
        ["comm", 300],
        np,
        transport,
        MPROF_AGG_BYTES=0,
        MPROF_SMALL_BYTES=16,
        MPROF_MPI_WINDOW=4,
    )
    _check_profile(shm, mpi, np)
    for pe in range(np):
        a, b = shm.rts(pe), mpi.rts(pe)
        assert (a["MsgSent"], a["FastMsgSent"]) == (b["MsgSent"], b["FastMsgSent"])
    # credits: processed messages are credited back in batches of window/2 = 2
    received = sum(mpi.rts(pe)["ThreadAlloc"] for pe in range(np))
    credits = sum(mpi.rts(pe)["FlowMsgSent"] for pe in range(np))
    assert 0 < credits <= received


def test_mpi_backend_forced_without_mpirun_is_one_rank(mpi_build):
    """MPROF_BACKEND=mpi outside mpirun: a singleton MPI run with one PE."""
    exe = mpi_build / "tests" / "mpi" / "mpi_portable"
    res = run(exe, "objects", MPROF_BACKEND="mpi", MPROF_PES=4)
    assert res.rc == 0, res.describe()
    assert res.profile["backend"] == "mpi" and res.profile["npes"] == 1


def test_unknown_backend_is_a_clear_error(mpi_build):
    exe = mpi_build / "tests" / "mpi" / "mpi_portable"
    res = run(exe, "objects", MPROF_BACKEND="carrier-pigeon")
    assert res.rc != 0
    assert "MPROF_BACKEND=carrier-pigeon (expected shm or mpi)" in res.stderr


# ---------------------------------------------------------------------------------------
# the flush policy for PEs of other ranks (tests/mpi/c/flush_policy.c, runtime/src/mpi/notice.c)


def _flush_policy(mpi_build, *args, np, transport, **settings) -> Result:
    exe = mpi_build / "tests" / "mpi" / "mpi_flush_policy"
    res = run(exe, *args, np=np, transport=transport, **settings)
    assert res.rc == 0, res.describe()
    return res


# shared memory (np None: the policy reads the PE's idle state in memory), then MPI
FLUSH_RUNS = [(None, "sm"), *((2, t) for t in TRANSPORTS)]


@pytest.mark.parametrize("np,transport", FLUSH_RUNS)
def test_records_for_a_busy_remote_pe_aggregate(mpi_build, np, transport):
    """PE 0 streams records to PE 1, which stays busy: they leave in messages of many records,
    when half a buffer is full (64 of 32 bytes), not every communication period (8 fibers:
    8 records).  Treating another rank's PE as always waiting sent them every period."""
    res = _flush_policy(
        mpi_build,
        "stream",
        20000,
        np=np,
        transport=transport,
        MPROF_PES=2,
        MPROF_FLUSH_FIBERS=8,
        MPROF_FLUSH_DELAY_US=10000000,
    )
    assert res.lines() == ["RESULT stream pe=1 got=20000"], res.describe()
    rts = res.rts(0)
    assert rts["RemoteOp"] == 20000
    assert rts["RemoteOp"] / rts["MsgSent"] >= 32, rts


@pytest.mark.parametrize("np,transport", [*FLUSH_RUNS, *((4, t) for t in TRANSPORTS)])
def test_remote_pe_that_waits_gets_its_records(mpi_build, np, transport):
    """PE 1 asks PE 0, which stays busy, and waits for the answer: a record in PE 0's buffer
    that neither fills it nor reaches the delay (10 s).  It must come because PE 1 waits
    (PE 1 tells PE 0), within a bound: PE 0's busy chain ends after 3 s at the latest, which
    would release the answers otherwise."""
    res = _flush_policy(
        mpi_build,
        "wait",
        50,
        np=np,
        transport=transport,
        MPROF_PES=np or 2,
        MPROF_FLUSH_DELAY_US=10000000,
    )
    [line] = res.lines()
    fields = dict(f.split("=") for f in line.split()[2:])
    assert fields["rounds"] == "50"
    assert float(fields["longest_s"]) < 1.0, line


# ---------------------------------------------------------------------------------------
# the runtime's own test programs (tests/c/runtime) that hold on any backend


def rt(mpi_build, name):
    return mpi_build / "tests" / "c" / f"rt_{name}"


def test_bulk_transfers_of_the_largest_size(mpi_build):
    """A read, a write and a store of exactly mp_max_message() bytes between ranks (the
    header once counted against the limit: the read's reply could not be sent)."""
    res = run(rt(mpi_build, "bulk"), "max", np=2, timeout=120)
    assert res.rc == 0 and "max: OK" in res.stdout, res.describe()
    assert "exceeds" not in res.stderr, res.describe()


@pytest.mark.parametrize("np", NPS)
def test_carriers_run_records_from_the_receive_buffers(mpi_build, np):
    """Arrived records run from the MPI backend's receive buffers (docs/runtime.md,
    "Carriers"), which go back to MPI only after their last carrier: every rank's checks hold
    (per-sender order, arguments, continuations, urgent fibers; tests/c/runtime/carriers.c),
    most arrived records were carried, and the thread counts equal shared memory's."""
    shm = run(rt(mpi_build, "carriers"), "n=2000", MPROF_PES=np)
    mpi = run(rt(mpi_build, "carriers"), "n=2000", np=np)
    assert shm.rc == 0 and mpi.rc == 0, mpi.describe()
    _check_profile(shm, mpi, np)
    for pe in range(np):
        s = mpi.rts(pe)
        assert s["ThreadArrived"] == 2000 * (np - 1)
        assert s["ThreadCarried"] > s["ThreadArrived"] / 2, s


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
def test_latency_program(mpi_build, np, transport):
    shm = run(rt(mpi_build, "latency"), MPROF_PES=np)
    mpi = run(rt(mpi_build, "latency"), np=np, transport=transport)
    assert shm.rc == 0 and mpi.rc == 0, mpi.describe()
    _check_profile(shm, mpi, np)

    def pairs(doc):
        return [
            sorted((r["access"], r["enabler"], r["count"]) for r in p["latency"])
            for p in doc["pes"]
        ]

    assert pairs(mpi.profile) == pairs(shm.profile)
    # PE 1's two waiters each observed PE 0's ~20 ms computation, on MPI too
    row = [
        r
        for r in mpi.profile["pes"][1]["latency"]
        if (r["access"], r["enabler"]) == ("lat:wait", "lat:send")
    ]
    assert row and row[0]["observed_s"] >= 2 * 0.015, mpi.profile["pes"][1]["latency"]
    assert 0 < row[0]["critical_s"] < 0.75 * row[0]["observed_s"]


def test_a_category_registered_on_one_rank_is_listed(mpi_build, tmp_path):
    """The last rank alone registers lat:late and runs a fiber in it: rank 0 writes the profile,
    and its `accesses` lists every rank's categories, so the database takes the run."""
    from mprof.cli import main

    res = run(rt(mpi_build, "latency"), "1", "0", "1", np=2)
    assert res.rc == 0, res.describe()
    doc = res.profile
    assert "lat:late" in doc["accesses"] and len(set(doc["accesses"])) == len(doc["accesses"])
    assert any(r["access"] == "lat:late" for r in doc["pes"][1]["latency"]), doc["pes"][1]
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc))
    assert main(["db", "import", str(tmp_path / "p.db"), str(path)]) == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
@pytest.mark.parametrize(
    "scenario,waits,where",
    [
        ("fiber", "PE 1: fiber hang_stuck_waiter (created by hang:setup) waits on counter", 1),
        ("block", "PE 0: pe_main blocked in mp_block_until on counter", 0),
        ("held", "PE 0: 1 enabled fibers held by scheduler never", 0),
    ],
)
def test_hang_is_diagnosed_on_the_rank_and_fails_every_rank(
    mpi_build, scenario, waits, where, np, transport
):
    res = run(rt(mpi_build, "hang"), scenario, np=np, transport=transport, MPROF_IDLE_TIMEOUT=20)
    assert res.rc != 0
    assert waits in res.stderr, res.describe()
    assert f"waiting fibers (mpi rank {where} of {np}):" in res.stderr
    # every rank's mp_main returned 2, and the quiet ranks say where to look
    assert res.stdout.count("mp_main returned 2") == np, res.describe()
    assert res.stderr.count("nothing waits here") == np - 1


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
def test_idle_ranks_back_off(mpi_build, np, transport):
    res = run(rt(mpi_build, "idle"), "0.5", np=np, transport=transport)
    assert res.rc == 0, res.describe()
    idle = [p["idle_s"] for p in res.profile["pes"][1:]]
    assert all(t > 0.3 for t in idle), idle  # the other ranks idled through PE 0's work


@pytest.mark.parametrize("name", ["fibers", "schedulers"])
def test_single_pe_programs_on_one_rank(mpi_build, name):
    shm = run(rt(mpi_build, name))
    mpi = run(rt(mpi_build, name), np=1)
    assert mpi.rc == 0, mpi.describe()
    assert mpi.stdout == shm.stdout
    assert mpi.profile["backend"] == "mpi"
    for k in DETERMINISTIC_RTS:
        assert mpi.rts(0)[k] == shm.rts(0)[k], k


# ---------------------------------------------------------------------------------------
# data structures and PIPE, from the normal build when present


@functools.cache
def _measured_stats() -> frozenset[tuple[str, str]]:
    """(module, statistic) the interfaces declare `measured`: timings and counts that depend on
    timing, which two runs may agree on by chance and the backends never by design."""
    from mprof.iface import load_interface

    out = set()
    perfs = [REPO / "runtime" / "rts.perf", *sorted((REPO / "instrumented-lib").rglob("*.perf"))]
    for perf in perfs:
        iface = load_interface(perf)
        out.update((iface.name, s.name) for s in iface.statistics if s.measured)
    return frozenset(out)


def _deterministic_stats(a, b):
    """{(pe, module, id, stat)} whose values agree between two shared-memory runs."""
    measured = _measured_stats()
    keys = set()
    for pa, pb in zip(a["pes"], b["pes"]):
        for oa, ob in zip(pa["objects"], pb["objects"]):
            if (oa["module"], oa["id"]) != (ob["module"], ob["id"]):
                continue
            for k, v in oa["stats"].items():
                # Timing-dependent whatever two runs say: statistics declared measured, and
                # flow control and message counts, which follow the backend's buffering.
                timed = (oa["module"], k) in measured or k.startswith(("Flow", "MsgSent"))
                if ob["stats"].get(k) == v and not timed:
                    keys.add((pa["pe"], oa["module"], oa["id"], k))
    return keys


def _stat(doc, key):
    pe, module, oid, k = key
    for o in doc["pes"][pe]["objects"]:
        if o["module"] == module and o["id"] == oid:
            return o["stats"].get(k)
    return None


# (program, arguments, modules whose statistics are deterministic by construction, or None for
# "whatever two shared-memory runs agree on").  Two runs agreeing proves little for statistics
# that depend on timing: all of the task stealer's (who steals what), in PIPE the runtime's
# and the graph's message and blocking counts (they follow flush timing and full edges), and
# the runtime's operation counts wherever a snapshot freezes (its rounds are as many as the
# PEs' progress through the mutators in flight needs: runtime/src/snapshot.c).
LIBRARY_PROGRAMS = [
    ("build/tests/lib/ht_test", ["stats"], {"hashtable": None}),
    ("build/tests/lib/ts_test", [], {}),
    (
        "build/benchmarks/pipe/pipe",
        ["{np}", "200", "10", "10", "15", "100", "1000"],
        {
            "pipe": None,
            "graph": {"P", "EltSize", "EdgeCap", "Node", "Edge", "NOp", "EnqSize", "DeqSize"},
        },
    ),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("np", NPS)
@pytest.mark.parametrize(
    "path,args,deterministic",
    LIBRARY_PROGRAMS,
    ids=[p[0].rsplit("/", 1)[1] for p in LIBRARY_PROGRAMS],
)
def test_library_programs_match_shared_memory(build_dir, path, args, deterministic, np, transport):
    exe = build_dir / path.removeprefix("build/")  # built by the fixture: a failure fails
    args = [a.format(np=np) for a in args]
    shm1 = run(exe, *args, MPROF_PES=np, timeout=120)
    assert shm1.rc == 0 and shm1.profile is not None, shm1.describe()
    shm2 = run(exe, *args, MPROF_PES=np, timeout=120)
    mpi = run(exe, *args, np=np, transport=transport, timeout=120)
    assert mpi.rc == 0, mpi.describe()
    assert mpi.profile["npes"] == np
    keys = _deterministic_stats(shm1.profile, shm2.profile)
    if deterministic is not None:
        keys = {
            k
            for k in keys
            if k[1] in deterministic
            and (deterministic[k[1]] is None or k[3] in deterministic[k[1]])
        }
    assert keys or deterministic == {}, "nothing deterministic to compare"
    diff = {
        k: (_stat(shm1.profile, k), _stat(mpi.profile, k))
        for k in keys
        if _stat(shm1.profile, k) != _stat(mpi.profile, k)
    }
    assert not diff, diff


# ---------------------------------------------------------------------------------------
# the benchmark (benchmarks/mpi/bench.sh), briefly: every figure it reports is there


def _mpi_rate(mpi_build, **settings) -> dict:
    """benchmarks/mpi/bench.sh with one repetition and `settings`: its last line, as JSON."""
    env = _env(MPI_RATE=mpi_build / "benchmarks-mpi" / "mpi_rate", MPI_RATE_REPS=1, **settings)
    proc = subprocess.run(
        [str(REPO / "benchmarks" / "mpi" / "bench.sh")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mpi_rate_reports_every_figure(mpi_build, transport):
    doc = _mpi_rate(
        mpi_build,
        MPIRUN_ARGS=" ".join(TRANSPORTS[transport]),
        MPI_RATE_N=4000 if transport == "tcp" else 20000,
    )
    rates = [
        "raw_mpi_msgs_per_s",
        "rt_mpi_noagg_per_s",
        "rt_mpi_agg_per_s",
        "rt_shm_noagg_per_s",
        "rt_shm_agg_per_s",
        "rt_mpi_agg_full_per_s",
        "rt_shm_agg_full_per_s",
    ]
    assert all(doc[k] > 0 for k in rates), doc
    assert doc["window"] == 64 and doc["reps"] == 1
    assert doc["rt_mpi_noagg_over_raw"] > 0 and "rt_overhead_ns_per_msg" in doc


def test_mpi_rate_json_with_cases_left_out(mpi_build):
    """A ratio whose cases MPI_RATE_CASES leaves out is null: the last line stays JSON."""
    doc = _mpi_rate(mpi_build, MPI_RATE_CASES="mpi_agg", MPI_RATE_N=4000)
    assert doc["rt_mpi_agg_per_s"] > 0 and doc["raw_mpi_msgs_per_s"] == 0, doc
    assert doc["rt_mpi_noagg_over_raw"] is None and doc["rt_overhead_ns_per_msg"] is None, doc


def test_category_times_on_mpi(mpi_build):
    """Each rank samples its PE's thread: the categories are there and add up to cpu_s."""
    res = run(rt(mpi_build, "categories"), "ms=80", np=2)
    assert res.rc == 0, res.describe()
    for pe in res.profile["pes"]:
        cats = {row["access"]: row["cpu_s"] for row in pe.get("categories", [])}
        assert {"cat:main", "cat:light", "cat:heavy"} <= set(cats), res.describe()
        assert sum(cats.values()) == pytest.approx(pe["cpu_s"], rel=1e-6)
        assert cats["cat:heavy"] > cats["cat:light"]


# ---------------------------------------------------------------------------------------
# misuse across ranks (tests/mpi/c/ranks.c): each rank of an MPMD launch gets its own
# settings and arguments


def run_ranks(mpi_build, *ranks, transport="sm", timeout=20, **settings) -> Result:
    """One rank per entry of `ranks`: (its settings, its arguments); a setting None unsets
    it on that rank.  `settings` apply to every rank (MPROF_OUT: the run profile's path)."""
    exe = mpi_build / "tests" / "mpi" / "mpi_ranks"
    with tempfile.TemporaryDirectory(prefix="mprof-mpi-") as tmp:
        out = Path(tmp) / "profile.json"
        env = _env(MPROF_OUT=out, **settings)
        cmd = [MPIRUN, "--oversubscribe", *TRANSPORTS[transport]]
        for i, (own, args) in enumerate(ranks):
            sets = [f"{k}={v}" for k, v in own.items() if v is not None]
            unsets = [a for k, v in own.items() if v is None for a in ("-u", k)]
            cmd += [
                *([":"] if i else []),
                "-np",
                "1",
                "env",
                *unsets,
                *sets,
                str(exe),
                *map(str, args),
            ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        profile = json.loads(out.read_text()) if out.exists() else None
    return Result(proc, profile)


def test_records_travel_in_two_hops_past_65_ranks(mpi_build):
    """A rank keeps at most 64 aggregation buffers open; past 65 ranks records for a rank
    outside the sender's row and column of the grid go through a forwarding rank
    (runtime/src/comm.c, "Routing").  Every class of record still arrives once, intact and in
    order, and the same records are forwarded as between 70 PEs with a thread each."""
    exe = mpi_build / "tests" / "mpi" / "mpi_portable"
    np = 70
    shm, mpi = _same_results(exe, ["comm", 20], np, "sm", MPROF_SMALL_BYTES=16, MPROF_WORKERS=np)
    _check_profile(shm, mpi, np)
    forwarded = [mpi.rts(pe)["RecordFwd"] for pe in range(np)]
    assert sum(forwarded) > 0
    assert forwarded == [shm.rts(pe)["RecordFwd"] for pe in range(np)]


def _streamed(res, np=2, runs=1):
    return res.lines() == sorted(
        f"RESULT stream pe={pe} run={r} got=2000" for pe in range(np) for r in range(runs)
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ranks_with_different_aggregation_sizes_exchange_messages(mpi_build, transport):
    """MPROF_AGG_BYTES sizes a rank's posted receives, and a sender classed its messages by
    its own size: 64 KiB buffers overflowed the 4 KiB receives of a rank without the setting
    (forwarded to other hosts only with -x), and MPI crashed.  The ranks agree on the size."""
    res = run_ranks(
        mpi_build,
        ({"MPROF_AGG_BYTES": 65536}, ["stream"]),
        ({"MPROF_AGG_BYTES": 4096}, ["stream"]),
        transport=transport,
    )
    assert res.rc == 0 and _streamed(res), res.describe()


def test_ranks_with_different_credit_windows_finish(mpi_build):
    """A sender with 4 credits and a receiver that returns them per 32 processed messages
    (window 64) waited for each other for ever, and the idle timeout never fired (the sender,
    holding a backlog, joined no termination wave).  The ranks use the smallest window."""
    res = run_ranks(
        mpi_build,
        ({"MPROF_MPI_WINDOW": 4}, ["stream"]),
        ({"MPROF_MPI_WINDOW": 64}, ["stream"]),
        MPROF_IDLE_TIMEOUT=2,
    )
    assert res.rc == 0 and _streamed(res), res.describe()
    assert "MPROF_MPI_WINDOW differs between the ranks (4 to 64); every rank uses 4" in res.stderr


def test_run_profile_when_only_rank_0_has_mprof_out(mpi_build):
    """Rank 0 writes the profile; the other ranks must take part in gathering it even without
    MPROF_OUT of their own (a rank on another host without -x): rank 0 waited in the gather
    for ever."""
    res = run_ranks(mpi_build, ({}, ["stream"]), ({"MPROF_OUT": None}, ["stream"]))
    assert res.rc == 0 and _streamed(res), res.describe()
    assert res.profile["npes"] == 2 and [p["pe"] for p in res.profile["pes"]] == [0, 1]


def test_mprof_out_is_checked_by_the_rank_that_writes_it(mpi_build):
    """MPROF_OUT whose folder exists only on rank 0's host: every rank checked the path before
    the run, and rank 1's mp_main returned at once while rank 0 waited for it.  Only rank 0
    writes the profile, so only rank 0 checks; the run and its profile are complete."""
    res = run_ranks(
        mpi_build, ({}, ["stream"]), ({"MPROF_OUT": "/nonexistent-folder/p.json"}, ["stream"])
    )
    assert res.rc == 0 and _streamed(res), res.describe()
    assert "cannot write the run profile" not in res.stderr, res.describe()
    assert res.profile["npes"] == 2


def test_mprof_out_on_another_rank_than_0_is_an_error_not_a_hang(mpi_build, tmp_path):
    """MPROF_OUT on rank 1 only: rank 1 gathered alone, matched rank 0's next collective (the
    Cost Profile's) and said that MPROF_MODEL was set, then both waited for ever."""
    path = tmp_path / "p.json"
    res = run_ranks(mpi_build, ({"MPROF_OUT": None}, ["stream"]), ({"MPROF_OUT": path}, ["stream"]))
    assert res.rc == 0 and _streamed(res), res.describe()
    assert (
        f"rank 1 of 2: MPROF_OUT={path} is set here but not on rank 0, which writes the "
        "run profile: no run profile is written"
    ) in res.stderr
    assert "MPROF_MODEL" not in res.stderr and not path.exists()


def test_rank_calling_mp_main_fewer_times_ends_the_job_with_a_message(mpi_build):
    """Rank 1 ends the program after one run while rank 0 starts a second: rank 0 waited in
    its run for ever (the idle timeout needs every rank).  Now both say so and the job ends;
    rank 0's mp_main fails."""
    res = run_ranks(
        mpi_build, ({}, ["stream", "runs=2"]), ({}, ["stream", "runs=1"]), MPROF_IDLE_TIMEOUT=2
    )
    assert res.rc != 0 and _streamed(res), res.describe()
    assert (
        "rank 0 of 2 starts another run of mp_main, but rank 1 ended the program instead: "
        "every rank must call mp_main as often"
    ) in res.stderr
    assert "rank 1 of 2 ends the program while rank 0 starts another run of mp_main" in res.stderr
    assert res.stdout.count("mp_main returned 0") == 2, res.describe()
    assert f"mp_main returned {10}" in res.stdout  # MP_ERR_BACKEND


def test_rank_starting_a_run_late_is_noted_and_the_run_completes(mpi_build):
    """Rank 1 pauses 3 s before its second run: rank 0, waiting for it far past the idle
    timeout (0.5 s), says what keeps it (a rank that never comes would keep it for ever)."""
    res = run_ranks(
        mpi_build,
        ({}, ["stream", "runs=2"]),
        ({}, ["stream", "runs=2", "pause_ms=3000"]),
        MPROF_IDLE_TIMEOUT=0.5,
    )
    assert res.rc == 0 and _streamed(res, runs=2), res.describe()
    assert (
        "mprof: note: rank 0 of 2 has waited 0.5 s (MPROF_IDLE_TIMEOUT) for the other "
        "ranks to start this run of mp_main"
    ) in res.stderr


@pytest.mark.parametrize("np", NPS)
def test_rank_exiting_inside_a_run_says_so(mpi_build, np):
    """exit() in a fiber of rank 1: the job is aborted (the other ranks cannot end the run),
    and the rank says why instead of Open MPI's bare "MPI_ABORT was invoked"."""
    exe = mpi_build / "tests" / "mpi" / "mpi_ranks"
    res = run(exe, "exit", np=np, timeout=20)
    assert res.rc != 0
    assert (
        f"mprof: error: rank 1 of {np} exits inside mp_main (a fatal error, or exit() "
        "called in the program); aborting the MPI job"
    ) in res.stderr, res.describe()
