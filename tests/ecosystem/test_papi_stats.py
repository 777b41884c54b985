"""Statistics bound to PAPI events (docs/papi.md), with tests/c/ecosystem/papi_stats.c.

The counting path uses the program's own software-defined counter, which works on this VM;
the absent path uses the hardware preset PAPI_L1_DCM, which this VM (no PMU) cannot count:
the run says so once, the profile lists the statistic under "absent" instead of writing a
zero, and `mprof fit` leaves out the term that needs it, with a message."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mprof.cli import main

C_DIR = Path(__file__).resolve().parents[1] / "c" / "ecosystem"


def run(build_dir, tmp_path, f, m, npes=1, name="run.json", workers=None):
    out = tmp_path / name
    # a thread per PE unless asked otherwise: PAPI counts per thread
    env = dict(
        os.environ, MPROF_PES=str(npes), MPROF_OUT=str(out), MPROF_WORKERS=str(workers or npes)
    )
    proc = subprocess.run(
        [str(build_dir / "tests/c/rt_papi_stats"), str(f), str(m)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text()), out


def records(profile, module):
    return [o for pe in profile["pes"] for o in pe["objects"] if o["module"] == module]


def hardware_counters_available() -> bool:
    """Whether PAPI can count the preset the test binds (papi-tools' papi_avail)."""
    proc = subprocess.run(["papi_avail", "-e", "PAPI_L1_DCM"], capture_output=True, text=True)
    return proc.returncode == 0 and "NOT available" not in proc.stdout + proc.stderr


def test_counts_are_charged_to_the_category_the_fiber_ran_in(build_dir, tmp_path):
    _, profile, _ = run(build_dir, tmp_path, 10, 7)
    (ptest,), (pother,) = records(profile, "ptest"), records(profile, "pother")
    # 3 per SEND fiber, 1 per WORK fiber; the 5 added outside fibers go to no category
    assert ptest["stats"]["Ops"] == 30
    assert pother["stats"]["Ops"] == 7
    assert ptest["stats"]["NSend"] == 10


@pytest.mark.skipif(hardware_counters_available(), reason="this machine has hardware counters")
def test_pes_sharing_a_worker_thread_record_papi_statistics_as_absent(build_dir, tmp_path):
    # 3 PEs on 2 worker threads: a thread's counters cannot be told apart by PE
    proc, profile, _ = run(build_dir, tmp_path, 10, 7, npes=3, workers=2)
    # (an event the PE with a worker of its own tries first is absent for its own reason)
    assert "PEs share worker threads; set MPROF_WORKERS" in proc.stderr
    for rec in records(profile, "ptest"):
        assert "Ops" not in rec["stats"] and "L1Miss" not in rec["stats"]
        assert set(rec["absent"]) == {"Ops", "L1Miss"}


def test_unavailable_counter_is_absent_and_said_once(build_dir, tmp_path):
    proc, profile, _ = run(build_dir, tmp_path, 10, 7, npes=3)
    assert proc.stderr.count("PAPI event PAPI_L1_DCM cannot be counted here") == 1
    assert "recorded as absent, not as zeros" in proc.stderr
    for rec in records(profile, "ptest"):
        assert "L1Miss" not in rec["stats"]
        assert "no hardware counter" in rec["absent"]["L1Miss"]


@pytest.mark.skipif(hardware_counters_available(), reason="this machine has hardware counters")
def test_fit_ignores_a_term_of_an_absent_statistic(build_dir, tmp_path, capsys):
    paths = [
        str(run(build_dir, tmp_path, f, 5, name=f"run{f}.json")[2]) for f in (10, 20, 40, 80, 160)
    ]
    db = tmp_path / "runs.db"
    assert main(["db", "import", str(db), *paths]) == 0
    script = tmp_path / "model.tcl"
    script.write_text(
        f"FitDatabase {db}\nInterface {C_DIR / 'ptest.perf'} "
        f"{C_DIR / 'pother.perf'}\nIgnoreTerm ptest P\nFit\n"
    )
    capsys.readouterr()
    assert main(["fit", str(script), "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out.strip().splitlines()[-1])
    assert any(
        "term ptest:Miss needs statistic ptest::L1Miss (PAPI event PAPI_L1_DCM)" in w
        and "the term is ignored" in w
        for w in out["warnings"]
    )
    fitted = (
        set(out["parameters"])
        if isinstance(out.get("parameters"), dict)
        else {p["name"] for p in out.get("parameters", [])}
    )
    assert "ptest:Miss" not in fitted and "ptest:Send" in fitted
