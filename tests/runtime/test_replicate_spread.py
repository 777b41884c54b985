"""benchmarks/micro/replicate_spread.py and noise_floor (make bench): the spread of identical
runs beside the machine's own.  Not a speed check: the figures must be what they claim."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tooling import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "micro" / "replicate_spread.py"


def _measure(*args):
    """Runs the script from the repository; returns its JSON lines and its case lines by case."""
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in run.stdout.strip().splitlines()]
    return lines, {x["case"]: x for x in lines if "case" in x}


def test_spread_of_a_group_is_max_over_min_less_one():
    mod = load_script(SCRIPT)
    assert mod.spread([2.0, 3.0, 2.5]) == 0.5
    # consecutive groups of `reps`; a short tail is not a group
    assert mod.group_spreads([1.0, 2.0, 4.0, 5.0, 9.0], 2) == [1.0, 0.25]
    # fastest of each group 1, 4, 2: median 2, deviations 0.5, 1, 0
    assert mod.pick_deviation([1.0, 2.0, 4.0, 5.0, 3.0, 2.0], 2, "min") == 0.5
    # medians (the lower of two) of groups of 4: 2, 4, 6: median 4, deviations 0.5, 0, 0.5
    values = [3.0, 1.0, 2.0, 9.0, 4.0, 5.0, 4.0, 8.0, 7.0, 6.0, 6.0, 6.5]
    assert mod.pick_deviation(values, 4, "median") == pytest.approx(1 / 3)


def test_noise_floor_reports_each_part_and_the_same_work_every_time(cmake_build):
    exe = cmake_build("build", targets=["noise_floor"]) / "benchmarks" / "micro" / "noise_floor"
    outs = [
        json.loads(
            subprocess.run(
                [str(exe), "0.05"], capture_output=True, text=True, timeout=60, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    for o in outs:
        keys = ("alu_cpu_s", "ilp_cpu_s", "mem_cpu_s", "ring_cpu_s")
        parts = sum(o[k] for k in keys)
        assert all(o[k] > 0 for k in keys), o
        assert abs(o["cpu_s"] - parts) < 1e-3, o
    assert outs[0]["check"] == outs[1]["check"]  # the same result: the same work
    bad = subprocess.run([str(exe), "0"], capture_output=True, text=True, timeout=20)
    assert bad.returncode == 2 and "usage: noise_floor" in bad.stderr


def test_the_script_measures_each_case_and_summarises_a_sweep_database(cmake_build, tmp_path):
    bdir = cmake_build("build", targets=["noise_floor", "rt_workload"])
    db = tmp_path / "sweep.db"
    # two repetitions of one configuration, one of another: the database's figure is the
    # first configuration's spread alone
    runs = []
    for args in (
        ["2", "2000", "200", "16", "0"],
        ["2", "2000", "200", "16", "0"],
        ["2", "4000", "200", "16", "0"],
    ):
        out = tmp_path / f"run{len(runs)}.json"
        subprocess.run(
            [str(bdir / "benchmarks" / "micro" / "rt_workload"), *args],
            env={"MPROF_OUT": str(out), "PATH": "/usr/bin:/bin"},
            check=True,
            capture_output=True,
            timeout=60,
        )
        runs.append(out)
    mprof = [sys.executable, "-m", "mprof"]
    subprocess.run(
        [*mprof, "db", "import", str(db), *map(str, runs)],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    first = [json.loads(r.read_text()) for r in runs[:2]]
    busy = [sum(p["cpu_s"] - p["idle_cpu_s"] for p in f["pes"]) for f in first]
    lines, cases = _measure(
        "--build", bdir, "--groups", 1, "--reps", 2, "--cases", "floor,fibers_1pe", "--db", db
    )
    assert set(cases) == {
        "floor",
        "floor_alu",
        "floor_ilp",
        "floor_mem",
        "floor_ring",
        "fibers_1pe",
    }
    for x in cases.values():
        lo, hi = x["cpu_s_range"]
        assert 0 < lo <= hi and x["group_spreads_pct"] == [x["median_spread_pct"]]
        # one group: its fastest and median runs are the median of themselves
        assert x["fastest_dev_pct"] == 0 and x["median_dev_pct"] == 0
        # the range is printed to 4 decimals: the spread recomputed from it can be off by what
        # that rounding does to hi/lo, plus the spread's own rounding to 0.1
        slack = 100 * (hi + 5e-5) / (lo - 5e-5) - 100 * hi / lo + 0.05 + 1e-9
        assert abs(x["median_spread_pct"] - 100 * (hi / lo - 1)) <= slack, x
    (dbline,) = [x for x in lines if "db" in x]
    assert dbline["configurations"] == 1
    assert abs(dbline["median_spread_pct"] - 100 * (max(busy) / min(busy) - 1)) < 0.2, dbline
    assert lines[-1]["fibers_1pe_spread_pct"] == cases["fibers_1pe"]["median_spread_pct"]
    assert "bursts_range" not in cases["fibers_1pe"]  # one PE: no channel, no burst


def test_bad_arguments_are_reported_without_a_traceback(tmp_path):
    for args, message in (
        (["--cases", "floor,nope"], "unknown case(s) nope"),
        (["--reps", "1"], "--reps at least 2"),
        (["--db", str(tmp_path / "none.db")], "none.db: no such database"),
    ):
        run = subprocess.run(
            [sys.executable, str(SCRIPT), *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert run.returncode != 0 and message in run.stderr, run.stderr
        assert "Traceback" not in run.stderr


def test_bound_and_unbound_cases_interleave_from_any_folder(cmake_build, tmp_path):
    """The X_unbound cases are X with MPROF_PIN=0; the script finds the build and mprof from
    its own place, so it also runs from another folder (as on the 16-core device)."""
    cmake_build("build", targets=["noise_floor", "rt_workload"])
    mod = load_script(SCRIPT)
    args, env = mod.CASES["agg_unbound"]
    assert (args, env) == (mod.CASES["agg"][0], {**mod.CASES["agg"][1], "MPROF_PIN": "0"})
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--groups",
            "1",
            "--reps",
            "2",
            "--cases",
            "fibers_1pe,fibers_1pe_unbound",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    cases = [json.loads(x)["case"] for x in run.stdout.strip().splitlines()[:-1]]
    assert cases == ["fibers_1pe", "fibers_1pe_unbound"]
    missing = subprocess.run(
        [sys.executable, str(SCRIPT), "--build", str(tmp_path), "--cases", "fibers_1pe"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert missing.returncode != 0 and "is missing: run make build" in missing.stderr
    assert "Traceback" not in missing.stderr


def _pair_floor(exe, *args):
    run = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
    return run, (json.loads(run.stdout) if run.returncode == 0 else None)


@pytest.mark.parametrize("sanitize", [None, "thread"])
def test_pair_floor_delivers_every_record_once_in_blocks_or_alone(cmake_build, sanitize):
    """pair_floor checks itself: every receiver gets exactly what it is owed and the sum of
    every handler index and argument word matches (exit 1 otherwise).  Under TSan its rings
    must also be free of data races, with a thread per CPU and with more threads than CPUs."""
    bdir = cmake_build(sanitize=sanitize, targets=["pair_floor"])
    exe = bdir / "benchmarks" / "micro" / "pair_floor"
    for p, n, rec, block, per_block in (
        (2, 20000, 16, 4096, (4096 - 8) // 24),  # aggregated: records fill a block
        (2, 5000, 512, 0, 1),  # unaggregated: a record per block, published at once
        (2, 3000, 8, 0, 1),  # a block of one record even where two would fit its line
        (3, 20000, 24, 256, (256 - 8) // 32),  # more blocks per pair than a ring holds
        (8, 500, 16, 4096, 170),  # more threads than CPUs: they yield instead of spinning
    ):
        run, out = _pair_floor(exe, p, n, rec, block)
        assert run.returncode == 0, run.stderr
        assert "ThreadSanitizer" not in run.stderr, run.stderr
        assert out["check"] == "ok" and out["records_per_block"] == per_block, out
        assert (out["pes"], out["records_per_sender"], out["record_bytes"]) == (p, n, rec)
        assert out["busy_cpu_s"] == pytest.approx(max(out["cpu_s"] - out["idle_s"], 0), abs=2e-6)
        assert out["rtt_ns"] > 0 and out["elapsed_s"] > 0
        assert out["pinned"] == (p <= len(os.sched_getaffinity(0)))


def test_pair_floor_rejects_bad_arguments(cmake_build):
    exe = cmake_build("build", targets=["pair_floor"]) / "benchmarks" / "micro" / "pair_floor"
    for args in (
        (1, 10),
        (65, 10),
        (2, 0),
        (2, -5),
        ("2x", 10),
        (2, 10, 12),
        (2, 10, 0),
        (2, 10, 16, 24),
        (2, 10, 16, ""),
        (2,),
    ):
        run, _ = _pair_floor(exe, *args)
        assert run.returncode == 2 and "usage: pair_floor" in run.stderr, (args, run.stderr)


def test_the_script_sets_the_pair_floor_beside_the_messaging_cases(cmake_build):
    """The pair cases run pair_floor in the same rounds as the workload cases and report the
    round trip each run measured, which tells the host's placement of the two threads."""
    cmake_build("build", targets=["pair_floor", "rt_workload"])
    lines, cases = _measure("--groups", 1, "--reps", 2, "--cases", "pair_noagg,noagg")
    assert list(cases) == ["pair_noagg", "noagg"]
    lo, hi = cases["pair_noagg"]["rtt_ns_range"]
    assert 0 < lo <= hi
    assert "rtt_ns_range" not in cases["noagg"]
    # the runtime's bursts (notifications and drains) vary with timing: the case gives their
    # range; a messaging run has at least one of each, the floor none that the runtime counts
    lo, hi = cases["noagg"]["bursts_range"]
    assert 2 <= lo <= hi
    assert "bursts_range" not in cases["pair_noagg"]
    assert lines[-1]["pair_noagg_spread_pct"] == cases["pair_noagg"]["median_spread_pct"]
