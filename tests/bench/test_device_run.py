"""benchmarks/device/run.sh: the 16-core measurement run's driver, exercised here on the parts
that need no 16 cores: JSON lines into run.jsonl, a part that does not fit the budget skipped
and said so, and unknown parts refused before anything runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "device" / "run.sh"


def _run(args, out, timeout=120):
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def _lines(out):
    return [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]


def test_startup_part_times_empty_runs_into_run_jsonl(cmake_build, tmp_path):
    cmake_build("build", targets=["rt_workload"])
    run = _run(["--budget", "60", "startup"], tmp_path)
    assert run.returncode == 0, run.stderr
    lines = _lines(tmp_path)
    assert lines[0]["budget_s"] == 60 and lines[0]["parts"] == "startup"
    timed = [x for x in lines if "startup" in x]
    assert {(x["pin"], x["pes"]) for x in timed} == {(p, n) for p in "10" for n in (2, 8, 16)}
    assert all(0 < x["best_s"] < 10 for x in timed)
    assert lines[-1]["part"] == "startup" and lines[-1]["rc"] == 0


def test_a_part_that_does_not_fit_the_budget_is_skipped(cmake_build, tmp_path):
    cmake_build("build", targets=["rt_workload"])
    run = _run(["--budget", "5", "studies"], tmp_path)
    assert run.returncode == 0, run.stderr
    last = _lines(tmp_path)[-1]
    assert last["part"] == "studies" and "needs 100" in last["skipped"]
    assert not (tmp_path / "studies.tgz").exists()


def test_unknown_parts_and_budgets_are_refused(tmp_path):
    run = _run(["weak"], tmp_path)
    assert run.returncode == 2 and "unknown part or option 'weak'" in run.stderr
    run = _run(["--budget", "ten", "startup"], tmp_path)
    assert run.returncode == 2 and "--budget takes seconds" in run.stderr
    run = _run(["--one", "rm"], tmp_path)
    assert run.returncode == 2 and "unknown part 'rm'" in run.stderr
    assert not (tmp_path / "run.jsonl").exists()


TARGETS = ROOT / "benchmarks" / "device" / "targets.py"
RUN1 = ROOT / "docs" / "measurements" / "sixteen-cores" / "call1-suite.jsonl"


def _targets(*args):
    return subprocess.run(
        [sys.executable, str(TARGETS), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_targets_of_the_first_16_core_run():
    run = _targets(RUN1)
    assert run.returncode == 0, run.stderr
    rows = {
        (r["figure"], r.get("agg"), r.get("pes"), r.get("app")): r
        for r in map(json.loads, run.stdout.splitlines())
    }
    weak = rows[("weak_efficiency", "4096", None, None)]
    assert weak["value"] == round(0.0648 / 0.1529, 3) and weak["met"] is False
    assert rows[("weak_64_over_16", "0", None, None)]["met"] is True  # 2.8x
    gap = rows[("floor_over_rate", None, 16, None)]
    assert gap["value"] == round(1156287196 / 100632331, 2) and not gap["met"]
    assert rows[("app_speedup", None, None, "eigenvalue")]["value"] == round(3.3784 / 0.2351, 2)


def test_targets_keep_binding_settings_apart_and_refuse_bad_lines(tmp_path):
    lines = [
        {"weak": "w", "agg": "4096", "pes": p, "pin": pin, "best_s": t}
        for pin, ts in (("1", (0.1, 0.125)), ("0", (0.1, 0.2)))
        for p, t in zip((2, 16), ts)
    ]
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(map(json.dumps, lines)) + "\nnot json: a log line\n")
    run = _targets(good, "--markdown")
    assert run.returncode == 0, run.stderr
    eff = {r["pin"]: r for r in map(json.loads, run.stdout.splitlines()[:2])}
    assert eff["1"]["value"] == 0.8 and eff["1"]["met"] and not eff["0"]["met"]
    assert "| weak_efficiency | agg 4096, pin 1 | 0.8 | >= 0.7 (met) |" in run.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"weak": "w"}\n{"weak": \n')
    run = _targets(bad)
    assert run.returncode != 0 and f"{bad}:2:" in run.stderr and "Traceback" not in run.stderr
    run = _targets(tmp_path / "missing.jsonl")
    assert run.returncode != 0 and "missing.jsonl" in run.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"cores": 16}\n')
    run = _targets(empty)
    assert run.returncode != 0 and "no weak-scaling" in run.stderr


def _interleaved(part, what, pes, busy_off, busy_on, ratio):
    """One of interleave.py's lines as a part of run.sh prints it: before is the setting off,
    after the default."""
    return {
        part: what,
        "pes": str(pes),
        "agg": "4096",
        "median_ratio": ratio,
        "before": {"busy_median_s": busy_off, "rate_median": 10},
        "after": {"busy_median_s": busy_on, "rate_median": 10},
    }


def test_carriers_lines_give_the_busy_cpu_gain(tmp_path):
    """interleave.py's lines of the `carriers` part: before is MPROF_CARRIERS=0, after the
    default; the gain is the medians' ratio, per command, PE count and aggregation."""
    lines = [
        _interleaved("carriers", "msg", 8, 0.25, 0.2, 1.25),
        _interleaved("carriers", "weak", 16, 0.2, 0.25, 0.9),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    run = _targets(path, "--markdown")
    assert run.returncode == 0, run.stderr
    rows = {(r["what"], r["pes"]): r for r in map(json.loads, run.stdout.splitlines()[:2])}
    assert rows[("msg", 8)]["value"] == 1.25 and rows[("msg", 8)]["rate_ratio"] == 1.25
    assert rows[("weak", 16)]["value"] == 0.8
    assert "| carriers_busy_gain | what weak, agg 4096, pes 16 | 0.8 |  |" in run.stdout


def test_sampler_lines_give_what_sampling_adds_to_busy_cpu(tmp_path):
    """The `sampler` part: interleave.py's weak-scaling lines (before: MPROF_SAMPLE_US=0, after:
    the default period) give the busy CPU sampling adds, per PE count; sampler.py's line gives
    its two periods."""
    lines = [
        _interleaved("sampler", "weak", 16, 0.2, 0.21, 0.95),
        {
            "benchmark": "sampler_overhead",
            "reps": 11,
            "sampler_overhead_pct": 2.93,
            "sampler_overhead_250us_pct": 11.19,
        },
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    run = _targets(path, "--markdown")
    assert run.returncode == 0, run.stderr
    rows = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
    value = {(r["what"], r["pes"], r["period_us"]): r["value"] for r in rows}
    assert value == {
        ("pipe", 2, "1000"): 2.93,
        ("pipe", 2, "250"): 11.19,
        ("weak", 16, "1000"): 5.0,
    }
    assert all(r["figure"] == "sampler_cost_pct" and "target" not in r for r in rows)
    assert "| sampler_cost_pct | what weak, pes 16, period_us 1000 | 5.0 |  |" in run.stdout


def test_machine_lines_give_the_machines_own_weak_scaling(tmp_path):
    """machine_scaling.py's lines (copies of noise_floor, local fibers alone) and the floor
    program's rates per PE become T(2)/T(P) figures beside the runtime's weak scaling; the
    best of repeated lines is kept."""
    parts = {"alu": 0.1, "ilp": 0.1, "mem": 0.2, "ring": 0.1}
    lines = [
        {"machine": "copies", "pes": 2, "best_s": 0.5, "cpu_mean_s": parts},
        {"machine": "copies", "pes": 16, "best_s": 0.9, "cpu_mean_s": {**parts, "ilp": 0.2}},
        {"machine": "copies", "pes": 16, "best_s": 0.625, "cpu_mean_s": {**parts, "ilp": 0.16}},
        {"machine": "local", "pes": 2, "best_s": 0.02, "busy_mean_s": 0.015},
        {"machine": "local", "pes": 16, "best_s": 0.04, "busy_mean_s": 0.02},
        {"bench": "shm_floor", "check": "ok", "pes": 2, "records_per_s_total": 200},
        {"bench": "shm_floor", "check": "ok", "pes": 16, "records_per_s_total": 1200},
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    run = _targets(path, "--markdown")
    assert run.returncode == 0, run.stderr
    rows = {
        (r["what"], r["pes"]): r
        for r in (json.loads(x) for x in run.stdout.splitlines() if x.startswith("{"))
        if r["figure"] == "machine_efficiency"
    }
    assert set(rows) == {("copies", 16), ("local", 16), ("shm_floor", 16)}
    assert rows[("copies", 16)]["value"] == 0.8 and rows[("copies", 16)]["parts"]["ilp"] == 0.625
    assert rows[("local", 16)]["value"] == 0.5
    assert rows[("shm_floor", 16)]["value"] == 0.75  # 75 per PE at 16 against 100 at 2
    assert "| machine_efficiency | what copies, pes 16 | 0.8 |  |" in run.stdout


def test_machine_scaling_runs_copies_and_local_fibers(cmake_build):
    cmake_build("build", targets=["rt_workload", "noise_floor"])
    script = ROOT / "benchmarks" / "micro" / "machine_scaling.py"
    run = subprocess.run(
        [sys.executable, str(script), "--pes", "1,2", "--reps", "1", "--scale", "0.05"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in run.stdout.splitlines()]
    assert [(x["machine"], x["pes"]) for x in lines] == [
        ("copies", 1),
        ("copies", 2),
        ("local", 1),
        ("local", 2),
    ]
    assert all(x["best_s"] > 0 for x in lines)
    assert set(lines[1]["cpu_mean_s"]) == {"alu", "ilp", "mem", "ring"}
    assert all(x["busy_mean_s"] > 0 for x in lines[2:])
    bad = subprocess.run(
        [sys.executable, str(script), "--pes", "0,2"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "between 1 and 1024" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_aggregation_scale_interleaves_feed_settings(cmake_build):
    """The `agg` part's feed comparison: one line per PE count and MPROF_FEED_US, each with the
    setting the run profile recorded (so the setting reached the runs)."""
    cmake_build("build", targets=["rt_workload"])
    script = ROOT / "benchmarks" / "micro" / "aggregation_scale.py"
    run = subprocess.run(
        [
            sys.executable,
            str(script),
            "--workload",
            str(ROOT / "build" / "benchmarks" / "micro" / "rt_workload"),
            "--pes",
            "2",
            "--reps",
            "1",
            "--feed-us",
            "0,1000",
            "--pin",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    *lines, summary = [json.loads(x) for x in run.stdout.splitlines()]
    assert [(x["pes"], x["feed_us"], x["pin"]) for x in lines] == [(2, 0, "1"), (2, 1000, "1")]
    assert [x["settings"]["feed_us"] for x in lines] == [0, 1000]
    assert all(x["ops_per_msg"] > 1 and x["why"]["half"] > 0 for x in lines)
    assert set(summary) == {"ops_per_msg_p2_feed0", "ops_per_msg_p2_feed1000"}
    bad = subprocess.run(
        [sys.executable, str(script), "--feed-us", "soon"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "--feed-us takes microseconds" in bad.stderr


COLLECT = ROOT / "benchmarks" / "device" / "collect.sh"


def _collect(src, dest):
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(COLLECT), str(src), str(dest)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_collect_renders_what_came_back_and_says_what_did_not(tmp_path):
    """collect.sh on a device run's files: the targets from run.jsonl, each returned study's
    summary rendered from its summary.json; a study cut off before its summary.json, or an
    archive that is none, is named, and the exit status says a step failed."""
    src = tmp_path / "files"
    (src / "st" / "studies").mkdir(parents=True)
    (src / "run.jsonl").write_text(RUN1.read_text())
    results = ROOT / "benchmarks" / "em3d" / "experiments" / "results"
    em3d = src / "st" / "studies" / "em3d"
    em3d.mkdir()
    (em3d / "summary.json").write_text((results / "summary.json").read_text())
    (src / "st" / "studies" / "tripuzzle").mkdir()  # cut off: no summary.json
    subprocess.run(
        ["tar", "czf", str(src / "studies.tgz"), "-C", str(src / "st"), "studies"], check=True
    )
    dest = tmp_path / "dest"
    run = _collect(src, dest)
    assert run.returncode == 1, run.stderr
    assert "tripuzzle: no summary.json" in run.stderr and "Traceback" not in run.stderr
    assert (
        "| weak_efficiency | agg 4096 | 0.424 | >= 0.7 (not met) |"
        in (dest / "targets.md").read_text()
    )
    study = (dest / "em3d-study.md").read_text()
    assert study.startswith("# EM3D") and "## 2 PEs" in study
    assert (dest / "run.jsonl").read_text() == RUN1.read_text()


def test_collect_puts_this_machines_sweeps_back(tmp_path):
    """The returned sweeps are fitted in build/workflows in place of this machine's, which are
    put back afterwards, also when the archive is unreadable."""
    work = ROOT / "build" / "workflows"
    work.mkdir(parents=True, exist_ok=True)
    mine = work / "rts-fit.db"
    had = mine.read_bytes() if mine.exists() else None
    if had is None:
        mine.write_bytes(b"this machine's sweep")
    try:
        before = mine.read_bytes()
        src = tmp_path / "files"
        src.mkdir()
        (src / "run.jsonl").write_text(RUN1.read_text())
        (src / "dbs.tgz").write_bytes(b"not a tar archive")
        run = _collect(src, tmp_path / "dest")
        assert run.returncode == 1 and "dbs.tgz is no tar archive" in run.stderr
        assert mine.read_bytes() == before
    finally:
        if had is None:
            mine.unlink()
    bad = _collect(tmp_path / "missing", tmp_path / "dest2")
    assert bad.returncode == 2 and "no such folder" in bad.stderr


def test_targets_skip_lines_of_another_shape_and_say_so(tmp_path):
    """A line cut short (a part killed mid-print) or of an unknown shape leaves its figure out
    with a note naming the line, and the other figures still come."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"weak": "w", "best_s": 1, "pes": 2}\n{"startup": 1}\n'
        '{"bench": "shm_floor", "check": "ok", "pes": 2, "records_per_s_total": 2}\n'
        '{"bench": "shm_floor", "check": "ok", "pes": 16, "records_per_s_total": 12}\n'
    )
    run = _targets(path)
    assert run.returncode == 0, run.stderr
    assert f"{path}:1: skipped, KeyError: 'agg'" in run.stderr
    assert f"{path}:2: skipped" in run.stderr and "Traceback" not in run.stderr
    (row,) = map(json.loads, run.stdout.splitlines())
    assert row["figure"] == "machine_efficiency" and row["value"] == 0.75
