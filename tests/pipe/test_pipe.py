"""PIPE (benchmarks/pipe): the three variants, the run profile it writes, statistics that
follow exactly from M, N, P, the effect of edge capacity on graph:ENQ latency (Wen 1995
section 4.5.4.1), command-line errors, and the sanitizer builds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

TARGETS = ["pipe"]
CATEGORIES = ["pipe:consume", "pipe:produce", "graph:ENQ", "graph:DEQ"]
SANITIZER_ERRORS = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
    r"runtime error:|ThreadSanitizer: reported"
)
_bins: dict = {}


def pipe_build(cmake_build, variant: str | None) -> Path:
    """The pipe executable of a build variant (a failed build fails the test)."""
    if variant not in _bins:
        bdir = cmake_build(sanitize=variant, targets=TARGETS)
        _bins[variant] = bdir / "benchmarks/pipe/pipe"
    return _bins[variant]


def run_pipe(
    exe: Path, *args, variant=None, sanitizer=None, timeout=60, expect_rc=0, settings=None
):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update({k: str(v) for k, v in (settings or {}).items()})
    if sanitizer == "address":
        env.update(
            ASAN_OPTIONS="abort_on_error=0:detect_leaks=1",
            UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
        )
    elif sanitizer == "thread":
        env.update(TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1")
    cmd = [str(exe)] + ([f"--variant={variant}"] if variant else []) + [str(a) for a in args]
    with tempfile.TemporaryDirectory(prefix="mprof-pipe-") as tmp:
        out = Path(tmp) / "profile.json"
        env.update(MPROF_OUT=str(out), MPROF_IDLE_TIMEOUT="20")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        wall = time.monotonic() - t0
        profile = json.loads(out.read_text()) if out.exists() else None
    msg = f"$ {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == expect_rc, msg
    if sanitizer:
        assert not SANITIZER_ERRORS.search(proc.stderr), msg
    return proc, profile, wall


def objects(profile, module: str) -> list[dict]:
    """The statistics of `module`'s object on every PE."""
    out = []
    for pe in profile["pes"]:
        objs = [o["stats"] for o in pe["objects"] if o["module"] == module]
        assert len(objs) == 1, f"PE {pe['pe']}: {len(objs)} {module} objects"
        out.append(objs[0])
    return out


def observed(profile, access: str) -> float:
    return sum(
        r["observed_s"] for pe in profile["pes"] for r in pe["latency"] if r["access"] == access
    )


def check_exact_stats(profile, P, M, N, T, F, E):
    """Statistics that follow from the program: node i on PE i sends M items (all but the
    last node) and removes M items (all but the root)."""
    graph, pipe = objects(profile, "graph"), objects(profile, "pipe")
    for i in range(P):
        g, p = graph[i], pipe[i]
        has_in, has_out = i > 0, i < P - 1
        assert p == {"P": 1, "T": T, "N": N, "M": M}, (i, p)
        assert g["P"] == 1 and g["EltSize"] == E and g["EdgeCap"] == F
        assert g["Node"] == 1 and g["Edge"] == int(has_in)
        assert g["NOp"] == M * (int(has_in) + int(has_out)), (i, g)
        assert g["EnqSize"] == M * E * has_out
        assert g["DeqSize"] == M * E * has_in
        if i == 0 and P > 1:
            assert g["NMsg"] == M  # one message per item; the root releases nothing
        if has_in:
            assert 1 <= g["NMsg"] - M * has_out <= M  # releases: at most one per item


@pytest.fixture(scope="module")
def pipe(cmake_build):
    return pipe_build(cmake_build, None)


@pytest.mark.parametrize("variant", ["plain", "swp", "flush"])
def test_variant_profile_and_exact_stats(pipe, variant):
    P, M, N, T, F, E, A = 4, 1000, 10, 100, 15, 100, 1000
    proc, prof, wall = run_pipe(pipe, P, M, N, T, F, E, A, variant=variant)
    assert f"pipe[{variant}] P=4" in proc.stdout
    assert prof["schema"] == "mprof.run-profile" and prof["npes"] == P
    assert prof["settings"]["agg_bytes"] == A
    assert prof["params"] == {
        "M": M,
        "N": N,
        "T": T,
        "F": F,
        "EltSize": E,
        "Agg": A,
        "variant": ["plain", "swp", "flush"].index(variant),
    }
    for cat in CATEGORIES:
        assert cat in prof["accesses"]
        assert any(r["access"] == cat for pe in prof["pes"] for r in pe["latency"]), cat
    # the paper's dependence chains: ENQ -> DEQ -> consume and DEQ -> ENQ -> produce -> consume
    edges = {(r["enabler"], r["access"]) for pe in prof["pes"] for r in pe["latency"]}
    for e in [
        ("graph:ENQ", "graph:DEQ"),
        ("graph:DEQ", "pipe:consume"),
        ("graph:DEQ", "graph:ENQ"),
        ("graph:ENQ", "pipe:produce"),
        ("pipe:produce", "pipe:consume"),
    ]:
        assert e in edges, e
    check_exact_stats(prof, P, M, N, T, F, E)
    assert wall < 5.0  # well under a second when the machine is not loaded


@pytest.mark.parametrize(
    "P,M,N,F,E", [(1, 95, 10, 4, 16), (2, 95, 10, 4, 16), (3, 200, 7, 2, 8), (8, 120, 5, 3, 256)]
)
def test_exact_stats_other_shapes(pipe, P, M, N, F, E):
    """Uneven last batch (N does not divide M), tiny capacities, more PEs than cores."""
    T = 20
    _, prof, _ = run_pipe(pipe, P, M, N, T, F, E, 0)
    check_exact_stats(prof, P, M, N, T, F, E)
    if P > 1:
        assert sum(g["NBlock"] for g in objects(prof, "graph")) > 0  # F < N: sends suspend


@pytest.mark.parametrize("workers", [1, 2])
def test_critical_latency_never_exceeds_observed(pipe, workers):
    """Critical-path latency is the part of a fiber's observed latency that no other fiber was
    charged (Wen 1995, Fig 4.14), never more, per (access, enabler) row and so per PE.  With
    the PEs on one worker (every switch to another PE is idle time) the fibers created after
    an idle period used to be charged that period too.  The idle time charged adds up to at
    most the PE's idle time."""
    _, prof, _ = run_pipe(
        pipe, 4, 1000, 10, 100, 15, 100, 1000, settings={"MPROF_WORKERS": workers}
    )
    for pe in prof["pes"]:
        for row in pe["latency"]:
            assert row["critical_s"] <= row["observed_s"] + 1e-9, (pe["pe"], row)
        assert sum(r["critical_s"] for r in pe["latency"]) <= pe["idle_s"] + 1e-6


def test_capacity_reduces_enq_latency(pipe):
    """Seed 003 Fig 4.16: with F = 1000 instead of 2 the flow-control latency (graph:ENQ)
    practically disappears.  Compared over repeated runs with a wide margin."""
    args = (4, 1000, 10, 100)
    small = [observed(run_pipe(pipe, *args, 2, 100, 1000)[1], "graph:ENQ") for _ in range(3)]
    large = [observed(run_pipe(pipe, *args, 1000, 100, 1000)[1], "graph:ENQ") for _ in range(3)]
    assert min(small) > 0
    assert max(large) < 0.25 * min(small), (small, large)


def test_calibrated_unit(pipe):
    proc, _, _ = run_pipe(pipe, "--calibrate")
    m = re.search(r"T=100: ([0-9.]+) us/item", proc.stdout)
    assert m and 0.2 < float(m.group(1)) < 50, proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["4", "10"],
        ["0", "1", "1", "1", "1", "1", "0"],
        ["2", "10", "0", "1", "1", "8", "0"],
        ["2", "10", "1", "1", "1", "100000", "0"],
        ["2", "x", "1", "1", "1", "8", "0"],
        ["--variant=fast", "2", "10", "1", "1", "1", "8", "0"],
    ],
)
def test_bad_command_lines(pipe, args):
    proc, prof, _ = run_pipe(pipe, *args, expect_rc=2)
    assert "pipe" in proc.stderr and prof is None


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitizer", ["address", "thread"], ids=["asan", "tsan"])
def test_pipe_clean_under_sanitizers(cmake_build, sanitizer):
    exe = pipe_build(cmake_build, sanitizer)
    for variant in ["plain", "swp", "flush"]:
        _, prof, _ = run_pipe(
            exe, 4, 200, 10, 20, 3, 100, 1000, variant=variant, sanitizer=sanitizer, timeout=120
        )
        check_exact_stats(prof, 4, 200, 10, 20, 3, 100)
    _, prof, _ = run_pipe(
        exe, 8, 100, 5, 10, 2, 32, 0, variant="swp", sanitizer=sanitizer, timeout=120
    )
    check_exact_stats(prof, 8, 100, 5, 10, 2, 32)
