"""EM3D (benchmarks/em3d): the parallel field values equal the sequential computation at 1-4
PEs and more PEs than cores, on shared memory and under mpirun; every statistic of the
bipartite graph and of the program follows exactly from the seeded generator (replayed in
apps.py); a corrupted value fails the check; sanitizer runs of the small case."""

from __future__ import annotations

import pytest
from apps import build, em3d_expected, run
from tooling import require_tool


@pytest.fixture(scope="module")
def em3d(cmake_build):
    return build(cmake_build, "em3d")


def check_stats(r, P, n, d, remote, span, iters):
    want = em3d_expected(P, n, d, remote, span, iters)
    for module in ("bipartite", "em3d"):
        got = r.stats(module)
        for pe in range(P):
            g = {k: v for k, v in got[pe].items() if k != "IterNs"}
            assert g == want[pe][module], (module, pe)


def test_check_alone_runs_the_builtin_case_on_two_pes(em3d):
    r = run(em3d, "--check", timeout=30)
    assert "check against the sequential computation: OK (0 of 400 values differ" in r.stdout
    assert r.profile["npes"] == 2
    check_stats(r, 2, 200, 8, 20, 2, 10)


@pytest.mark.parametrize("pes", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("remote", [0, 10, 35])
def test_values_and_statistics(em3d, pes, remote):
    n, d, span, iters = 120, 6, 2, 7
    r = run(
        em3d,
        "--check",
        f"--nodes={n}",
        f"--degree={d}",
        f"--remote={remote}",
        f"--span={span}",
        f"--iters={iters}",
        pes=pes,
    )
    assert f"OK (0 of {n * pes} values differ" in r.stdout, r.describe()
    check_stats(r, pes, n, d, remote, span, iters)
    assert r.profile["params"]["remote"] == remote
    if pes > 1 and remote:
        assert sum(s["RemoteRead"] for s in r.stats("em3d")) > 0


def test_a_wrong_value_fails_the_check(em3d):
    r = run(em3d, "--check", "--fault", pes=3, expect_rc=1)
    assert "check against the sequential computation: FAILED (1 of 600" in r.stdout


@pytest.mark.parametrize(
    "args", [["--nodes=1"], ["--remote=101"], ["--degree=x"], ["--bogus"], ["--span=0"]]
)
def test_bad_command_lines(em3d, args):
    r = run(em3d, *args, expect_rc=2)
    assert "em3d" in r.stderr and r.profile is None


def test_mpi_backend(em3d):
    require_tool("mpirun")
    r = run(em3d, "--check", "--remote=30", "--nodes=100", "--degree=5", "--iters=5", np=2)
    assert "OK (0 of 200 values differ" in r.stdout
    assert r.profile["backend"] == "mpi" and r.profile["npes"] == 2
    check_stats(r, 2, 100, 5, 30, 3, 5)


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, sanitize):
    exe = build(cmake_build, "em3d", sanitize)
    r = run(exe, "--check", pes=3, sanitize=sanitize, timeout=300)
    assert "OK (0 of 600 values differ" in r.stdout
