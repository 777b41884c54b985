"""Eigenvalue (benchmarks/eigenvalue): all eigenvalues of the seeded random tridiagonal
matrix agree with SciPy's eigvalsh_tridiagonal on the same (dumped) matrix and with the
program's own sequential bisection, for stealing and pushing, fetched and sent intervals, at
1-16 PEs (more PEs than cores), on shared memory and under mpirun (2 and 4 ranks).  The
bisection does not depend on who processes an interval, so its statistics are the same for
every P; the task stealer's counts obey their invariants; a corrupted eigenvalue fails the
check; sanitizer runs of the small case."""

from __future__ import annotations

import json

import numpy as np
import pytest
from apps import build, run
from scipy.linalg import eigvalsh_tridiagonal
from tooling import require_tool

N = 150
BISECTION = ["NInterval", "NBisect", "NLeaf"]


@pytest.fixture(scope="module")
def eigen(cmake_build):
    return build(cmake_build, "eigenvalue")


@pytest.fixture(scope="module")
def one_pe(eigen):
    """The statistics of the bisection on one PE: every other run must repeat them."""
    r = run(eigen, f"--n={N}", pes=1)
    return {k: r.total("eigenvalue", k) for k in BISECTION}


def check_against_scipy(path, n):
    doc = json.loads(path.read_text())
    assert doc["n"] == n and len(doc["diag"]) == n and len(doc["offdiag"]) == n - 1
    want = eigvalsh_tridiagonal(np.array(doc["diag"]), np.array(doc["offdiag"]))
    got = np.array(doc["eigenvalues"])
    norm = np.max(np.abs(want))
    # bisection to 4 eps ||T||; LAPACK's own error is a small multiple of eps ||T||
    assert np.max(np.abs(got - want)) <= 64 * np.finfo(float).eps * norm
    return doc


def test_check_alone_runs_the_builtin_case_on_two_pes(eigen):
    r = run(eigen, "--check", timeout=30)
    assert "check against sequential bisection: OK (0 of 200 differ" in r.stdout
    assert r.profile["npes"] == 2


@pytest.mark.parametrize("pes", [1, 2, 3, 4, 8, 16])
@pytest.mark.parametrize(
    "balance,tasks", [("steal", "fetch"), ("steal", "send"), ("push", "fetch"), ("push", "send")]
)
def test_eigenvalues_and_statistics(eigen, one_pe, tmp_path, pes, balance, tasks):
    dump = tmp_path / "eig.json"
    r = run(
        eigen,
        "--check",
        f"--n={N}",
        f"--balance={balance}",
        f"--tasks={tasks}",
        f"--dump={dump}",
        pes=pes,
    )
    assert f"OK (0 of {N} differ" in r.stdout
    check_against_scipy(dump, N)
    # the same intervals, bisections and leaves whoever processes them
    assert {k: r.total("eigenvalue", k) for k in BISECTION} == one_pe
    assert one_pe["NLeaf"] == N  # distinct eigenvalues: a leaf each
    assert one_pe["NInterval"] == 2 * N - 1  # every other interval splits in two
    ts = r.stats("taskstealer")
    assert sum(s["NAdd"] for s in ts) == sum(s["NTask"] for s in ts) == one_pe["NInterval"]
    fetches = r.total("eigenvalue", "NFetch")
    if tasks == "send" or pes == 1:
        assert fetches == 0
    elif balance == "push":
        assert fetches > 0  # pushed tasks run away from their creator
    # a fetch is a task run on another PE than its creator: it must have migrated
    assert fetches <= sum(s["NMigrate"] for s in ts)
    if balance == "push":
        assert sum(s["NSteal"] for s in ts) == 0


@pytest.mark.parametrize("balance,tasks", [("steal", "fetch"), ("push", "send")])
def test_two_hop_routing_at_97_pes(eigen, one_pe, balance, tasks):
    """97 PEs with a thread each: most records, steal requests and fetches among them, travel
    through a forwarding PE (runtime/src/comm.c, "Routing").  The same eigenvalues and
    bisection, and the run ends (termination sees records in a forwarder's buffers)."""
    r = run(
        eigen,
        "--check",
        f"--n={N}",
        f"--balance={balance}",
        f"--tasks={tasks}",
        pes=97,
        MPROF_WORKERS=97,
        timeout=180,
    )
    assert f"OK (0 of {N} differ" in r.stdout
    assert {k: r.total("eigenvalue", k) for k in BISECTION} == one_pe
    assert r.total("rts", "RecordFwd") > 0


def test_seeded_input_is_reproducible(eigen, tmp_path):
    a, b, c = (tmp_path / f"{x}.json" for x in "abc")
    run(eigen, "--n=50", f"--dump={a}", pes=2)
    run(eigen, "--n=50", f"--dump={b}", "--balance=push", pes=3)
    run(eigen, "--n=50", "--seed=2", f"--dump={c}", pes=2)
    da, db, dc = (json.loads(p.read_text()) for p in (a, b, c))
    assert da["diag"] == db["diag"] and da["eigenvalues"] == db["eigenvalues"]
    assert da["diag"] != dc["diag"]


def test_a_wrong_eigenvalue_fails_the_check(eigen):
    r = run(eigen, "--check", "--fault", pes=2, expect_rc=1)
    assert "check against sequential bisection: FAILED (1 of 200" in r.stdout


@pytest.mark.parametrize(
    "args",
    [["--n=0"], ["--balance=random"], ["--tasks=copy"], ["--topology=push"], ["--seed=-1"], ["x"]],
)
def test_bad_command_lines(eigen, args):
    r = run(eigen, *args, expect_rc=2)
    assert "eigenvalue" in r.stderr and r.profile is None


def test_a_dump_path_that_cannot_be_written_is_refused_before_the_run(eigen, tmp_path):
    """It was found after the whole run (exit 1), with perror's bare path."""
    r = run(eigen, f"--dump={tmp_path / 'no' / 'x.json'}", pes=2, expect_rc=2)
    assert f"eigenvalue: --dump={tmp_path / 'no' / 'x.json'}: No such file or directory" in r.stderr
    assert "eigenvalues" not in r.stdout and r.profile is None
    r = run(eigen, f"--dump={tmp_path}", pes=2, expect_rc=2)
    assert f"eigenvalue: --dump={tmp_path}: Is a directory" in r.stderr


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("balance,tasks", [("steal", "fetch"), ("push", "send")])
def test_mpi_backend(eigen, one_pe, tmp_path, balance, tasks, ranks):
    require_tool("mpirun")
    dump = tmp_path / "eig.json"
    r = run(
        eigen,
        "--check",
        f"--n={N}",
        f"--balance={balance}",
        f"--tasks={tasks}",
        f"--dump={dump}",
        np=ranks,
        timeout=240,
    )
    assert f"OK (0 of {N} differ" in r.stdout
    assert r.profile["backend"] == "mpi" and r.profile["npes"] == ranks
    check_against_scipy(dump, N)
    assert {k: r.total("eigenvalue", k) for k in BISECTION} == one_pe


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, sanitize):
    exe = build(cmake_build, "eigenvalue", sanitize)
    for args in (["--balance=steal", "--tasks=fetch"], ["--balance=push", "--tasks=send"]):
        r = run(exe, "--check", "--n=100", *args, pes=3, sanitize=sanitize, timeout=300)
        assert "OK (0 of 100 differ" in r.stdout
