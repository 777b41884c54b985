"""benchmarks/micro/placement.py (make bench's neighbour, run by hand): messaging costs against
the host's placement of two threads.  Not a speed check: the figures must be what they claim."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "micro" / "placement.py"


def _run(*args, cwd=ROOT, timeout=300):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def _rounds(tmp_path):
    """Rounds whose costs are known: busy CPU per operation is 5 ns plus 0.25 round trips
    (runtime) or 0.1 (floor), and within the middle band the runtime's busy CPU also rises by
    200 ns a burst; one runtime run had probes that disagreed (rtt None) and must be left out."""
    rounds = []
    for i, rtt in enumerate([50, 100, 120, 150, 500, 600, 100, 130]):
        bursts = 1000 * (i + 1)
        rt = {"ops": 1_000_000, "bursts": bursts, "rtt": rtt}
        rt["busy"] = rt["ops"] * (5 + 0.25 * rtt) * 1e-9 + (200e-9 * bursts if rtt < 400 else 0)
        floor = {"ops": 2_000_000, "rtt": rtt, "busy": 2_000_000 * (5 + 0.1 * rtt) * 1e-9}
        rounds.append({"agg": rt, "noagg": dict(rt), "pair_agg": floor, "pair_noagg": floor})
    rounds[1]["noagg"] = dict(rounds[1]["noagg"], rtt=None)
    path = tmp_path / "rounds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    return path


def test_a_summary_prices_the_round_trip_and_the_bursts(tmp_path):
    run = _run("--from", _rounds(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = {x.get("case", "summary"): x for x in map(json.loads, run.stdout.splitlines())}
    agg, noagg, floor = lines["agg"], lines["noagg"], lines["pair_agg"]
    assert (agg["runs"], noagg["runs"], floor["runs"]) == (8, 7, 8)
    assert [agg[b]["runs"] for b in ("near", "mid", "far")] == [1, 5, 2]
    assert floor["near"]["ns_per_op"] == pytest.approx(10.0)
    # the floor: 0.1 round trips an operation, mid (median rtt 120) to far (550)
    assert floor["exposed_rtt_per_op"] == pytest.approx(0.1, abs=1e-4)
    assert floor["mid"]["rtt_ns"] == 120 and floor["far"]["rtt_ns"] == 550
    # within the middle band the bursts explain what the round trip does not: their price
    # comes out, and what is left is the round trip's own share of the scatter
    assert agg["mid_bursts_range"] == [2000, 8000]
    assert agg["mid_ns_per_burst"] == pytest.approx(200, rel=1e-3)
    assert agg["mid_cv_after_bursts_pct"] < 0.1 < agg["mid_cv_after_rtt_pct"] < agg["mid_cv_pct"]
    assert "mid_bursts_range" not in floor
    assert lines["summary"]["rounds"] == 8
    assert lines["summary"]["pair_agg_exposed_rtt_per_op"] == floor["exposed_rtt_per_op"]


def test_bands_move_runs_between_them(tmp_path):
    run = _run("--from", _rounds(tmp_path), "--bands", "110,700")
    assert run.returncode == 0, run.stderr
    agg = json.loads(run.stdout.splitlines()[0])
    assert [agg[b]["runs"] for b in ("near", "mid") if b in agg] == [3, 5]
    assert "far" not in agg and "exposed_rtt_per_op" not in agg


def test_a_round_runs_every_case_with_its_round_trip(cmake_build, tmp_path):
    """One live round; on a machine with one CPU the script must refuse, as a round trip
    between two threads needs two CPUs."""
    cmake_build("build", targets=["pair_floor", "rt_workload"])
    keep = tmp_path / "kept.jsonl"
    run = _run("--rounds", 1, "--jsonl", keep)
    if len(os.sched_getaffinity(0)) < 2:
        assert run.returncode != 0 and "needs two CPUs" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr and not keep.exists()
        return
    assert run.returncode == 0, run.stderr
    (kept,) = [json.loads(x) for x in keep.read_text().splitlines()]
    assert set(kept) == {"agg", "noagg", "pair_agg", "pair_noagg"}
    assert kept["agg"]["ops"] == 3_600_000 and kept["noagg"]["ops"] == 1_200_000
    assert kept["pair_agg"]["ops"] == 3_600_000 and kept["pair_noagg"]["ops"] == 1_200_000
    assert all(kept[c]["busy"] > 0 for c in kept)
    assert kept["agg"]["bursts"] >= 2 and kept["pair_noagg"]["rtt"] > 0
    again = _run("--from", keep)  # the same summary from what was kept
    assert again.returncode == 0 and again.stdout == run.stdout, again.stderr


def test_bad_arguments_are_reported_without_a_traceback(tmp_path):
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    good = _rounds(tmp_path).read_text().splitlines()
    (tmp_path / "short.jsonl").write_text(good[0] + "\n" + '{"agg": {}}\n')
    bad_ops = json.loads(good[0])
    bad_ops["pair_noagg"]["ops"] = 0
    (tmp_path / "ops.jsonl").write_text(json.dumps(bad_ops) + "\n")
    bad_type = json.loads(good[0])
    bad_type["noagg"]["busy"] = "fast"
    (tmp_path / "type.jsonl").write_text(json.dumps(bad_type) + "\n")
    for args, message in (
        ([], "give --seconds or --rounds"),
        (["--rounds", "1", "--bands", "400,90"], "want 0 < NEAR < FAR"),
        (["--rounds", "1", "--bands", "x"], "want two round trips"),
        (["--from", tmp_path / "none.jsonl"], "none.jsonl"),
        (["--from", tmp_path / "bad.jsonl"], "bad.jsonl:1:2: not a JSON round"),
        (["--from", tmp_path / "short.jsonl"], "short.jsonl:2:1: a round needs agg with busy"),
        (["--from", tmp_path / "ops.jsonl"], "ops.jsonl:1:1: pair_noagg: ops must be positive"),
        (["--from", tmp_path / "type.jsonl"], "type.jsonl:1:1: noagg: busy, ops, rtt, bursts must"),
        (["--rounds", "1", "--build", tmp_path], "is missing: run make build"),
    ):
        run = _run(*args, timeout=60)
        assert run.returncode != 0 and message in run.stderr, (args, run.stderr)
        assert "Traceback" not in run.stderr
