"""benchmarks/apps/work_inflation.py: callgrind instruction counts of a command against PEs.

The script's figures must be what they claim: inflation 1.0 for a command whose work does not
depend on MPROF_PES (and 1/P when that command is called weak scaling), function groups that
add up to the total, the run profile's statistics summed over the PEs.  Then the work that
grew with P in the applications and was fixed stays fixed: a partition of a hash table is
iterated and cleared through its occupied bins (tripuzzle's tables have 2^18 bins per PE, which
every PE scanned twice a phase), and the bipartite graph's send lists and ghost copies cost per
ghost and not per PE x node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from apps import build
from tooling import require_tool

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "apps" / "work_inflation.py"


def inflation(*args, build_dir=None):
    require_tool("valgrind")
    require_tool("callgrind_annotate")
    extra = ["--build", str(build_dir)] if build_dir else []
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *extra, *args], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def check_parts(out):
    for p, r in out["runs"].items():
        assert sum(r["groups"].values()) == r["total"], (p, r["groups"])
        assert r["per_pe"] == round(r["total"] / int(p))


def test_work_that_does_not_depend_on_pes_is_not_inflated():
    true = require_tool("true")
    out = inflation("--pes", "1,2,4", "--", true)
    check_parts(out)
    assert [out["runs"][p]["inflation"] for p in ("1", "2", "4")] == [1.0, 1.0, 1.0]
    assert out["runs"]["4"]["stats"] == {}  # no run profile
    # called weak scaling, the same work at P PEs is 1/P of P x the 1-PE count
    weak = inflation("--weak", "--pes", "1,2,4", "--", true)
    assert [weak["runs"][p]["inflation"] for p in ("1", "2", "4")] == [1.0, 0.5, 0.25]


def test_em3d_groups_add_up_and_the_statistics_are_the_runs(cmake_build):
    exe = build(cmake_build, "em3d")
    out = inflation(
        "--weak",
        "--pes",
        "1,2",
        "--workers-check",
        "2",
        "--",
        str(exe),
        "--nodes=2000",
        "--iters=2",
        build_dir=exe.parents[2],
    )
    check_parts(out)
    for p in (1, 2):
        r = out["runs"][str(p)]
        g = r["groups"]
        # the kernel is the application's, the graph the library's, the phases the runtime's
        assert g["app"] > 0 and g["library"] > 0 and g["runtime.sched"] > 0, g
        assert g["unattributed"] < 0.01 * r["total"], g
        assert r["stats"]["em3d"]["NodeUpdate"] == p * 2000 * 2
        assert r["stats"]["bipartite"]["Node"] == p * 2000
    assert out["runs"]["1"]["stats"]["bipartite"]["Ghost"] == 0
    assert out["runs"]["2"]["stats"]["bipartite"]["Ghost"] > 0
    # a thread per PE counts what waiting costs under callgrind on top of the same work
    check = out["workers_check"]
    assert 1.0 <= check["over_one_worker"] < 1.5, check
    assert check["groups"]["app"] == out["runs"]["2"]["groups"]["app"]


def test_tripuzzle_does_not_scan_every_bin_of_every_pe(cmake_build):
    # 2^18 bins per PE: before the occupied-bin bitmap, each of 8 PEs scanned all of its bins
    # twice per phase and the 8-PE run executed 7.2x the instructions of the 1-PE run
    exe = build(cmake_build, "tripuzzle")
    out = inflation("--pes", "1,8", "--", str(exe), "--rows=5", build_dir=exe.parents[2])
    check_parts(out)
    assert out["runs"]["8"]["inflation"] < 3.5, out["runs"]["8"]
    lib = [out["runs"][p]["groups"]["library"] / int(p) for p in ("1", "8")]
    assert lib[1] < 0.5 * lib[0], lib


def test_em3d_ghost_copies_and_send_lists_cost_per_ghost(cmake_build):
    # before: qsort of the remote source ids (its comparisons and copies), a memcpy call per
    # 8-byte ghost value and send lists of P x nodes per colour made this 8-PE run execute
    # 1.157x 8 times the 1-PE run's instructions, and libc's copies 3.8x the 1-PE run's per PE
    # (now 1.044x and 2.2x).  Since EM3D reserves its graph's arrays, the 1-PE run copies a
    # third of what it did (no reallocations), so the ratio is no yardstick: the copies the
    # 8-PE run adds per PE, for each ghost and validation, are about 28 instructions; 3.8x of
    # the old 1-PE copies would be about 66
    exe = build(cmake_build, "em3d")
    out = inflation(
        "--weak",
        "--pes",
        "1,8",
        "--",
        str(exe),
        "--nodes=4000",
        "--iters=2",
        build_dir=exe.parents[2],
    )
    check_parts(out)
    copies = [out["runs"][p]["groups"]["libc.memcpy"] / int(p) for p in ("1", "8")]
    graph = out["runs"]["8"]["stats"]["bipartite"]
    per_ghost = (copies[1] - copies[0]) / (graph["Ghost"] / 8 * graph["NValidate"] / 8)
    assert 0 < per_ghost < 45, (copies, graph)
    assert out["runs"]["8"]["inflation"] < 1.1, out["runs"]["8"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pes", "2,1", "--", "true"], "--pes must be increasing PE counts"),
        (["--pes", "x", "--", "true"], "--pes must be a comma-separated list"),
        (["--pes", "1,2"], "give --app NAME or -- COMMAND"),
        (["--pes", "1,2", "--workers-check", "4", "--", "true"], "--workers-check 4 is not one of"),
    ],
)
def test_bad_arguments_are_an_error(args, message):
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0 and message in run.stderr and "Traceback" not in run.stderr
