"""End to end with the real runtime: eigenvalue runs on shared memory with a thread per PE
write CPU time per access category that adds up to each PE's CPU time, survive a database
round trip, and lead `mprof report` (one run, and the comparison of two PE counts)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from mprof.cli import main
from mprof.db.validate import load_profile
from mprof.profile import IDLE, SCHEDULER, RunProfile, load_profiles
from mprof.report.build import build_report
from mprof.report.compare import compare

N = 1500  # about 0.25 CPU s per PE at 4 PEs: dozens of samples each at a 4 ms clock tick


@pytest.fixture(scope="module")
def eigenvalue(cmake_build):
    return cmake_build(targets=["eigenvalue"]) / "benchmarks" / "eigenvalue" / "eigenvalue"


def run_eigenvalue(exe, out, pes):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env.update(
        MPROF_PES=str(pes), MPROF_WORKERS=str(pes), MPROF_OUT=str(out), MPROF_IDLE_TIMEOUT="20"
    )
    proc = subprocess.run(
        [str(exe), f"--n={N}"], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load_profile(out)


@pytest.fixture(scope="module")
def runs(eigenvalue, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eig")
    return {
        p: (tmp / f"eig-{p}.json", run_eigenvalue(eigenvalue, tmp / f"eig-{p}.json", p))
        for p in (2, 4)
    }


@pytest.mark.slow
def test_category_times_are_present_and_add_up(runs):
    for path, doc in runs.values():
        names = set(doc["accesses"]) | {SCHEDULER, IDLE}
        for pe in doc["pes"]:
            rows = pe.get("categories")
            assert rows, f"{path}: PE {pe['pe']} has no category times"
            assert {r["access"] for r in rows} <= names
            assert sum(r["cpu_s"] for r in rows) == pytest.approx(pe["cpu_s"], rel=0.01)
            # a row may rest on the charges closing the last interval alone (the end, a sleep)
            assert sum(r["samples"] for r in rows) > 0
        # the bisection runs in the task stealer's fibers: its category holds most CPU time
        run = RunProfile.from_document(doc)
        top = max(run.category_totals().items(), key=lambda kv: kv[1])[0]
        assert top.startswith("taskstealer:"), run.category_totals()


@pytest.mark.slow
def test_database_round_trip(runs, tmp_path):
    db = tmp_path / "eig.db"
    assert main(["db", "import", str(db), *(str(p) for p, _ in runs.values())]) == 0
    stored = {r.npes: r for r in load_profiles(db)}
    for p, (_, doc) in runs.items():
        from_file = RunProfile.from_document(doc)
        assert [pe.categories for pe in stored[p].pes] == [pe.categories for pe in from_file.pes]


@pytest.mark.slow
def test_report_leads_with_the_measured_categories(runs, capsys):
    path, doc = runs[4]
    assert main(["report", str(path), "--format", "text", "--per-pe"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines.index("*** Where the time went (measured, CPU seconds summed over PEs) ***")
    assert lines[2] in ("*** Load imbalance ***", lines[head])  # no imbalance, or it leads
    end = next(i for i in range(head, len(lines)) if lines[i].startswith("  total"))
    rows = lines[head + 2 : end]
    shares = [float(m.group(1)) for r in rows if (m := re.search(r" ([\d.]+) %$", r))]
    assert sum(shares) == pytest.approx(100.0, abs=0.1 * len(shares))
    total = float(re.search(r"  total +([\d.]+) s", lines[end]).group(1))
    assert total == pytest.approx(sum(pe["cpu_s"] for pe in doc["pes"]), abs=0.002)
    assert any(r.lstrip().startswith("taskstealer:") for r in rows)
    assert lines.index("*** Per PE (CPU seconds by category) ***") > end
    report = build_report(doc)
    assert report.measured_cpu_total == pytest.approx(
        sum(pe["cpu_s"] for pe in doc["pes"]), rel=0.01
    )


@pytest.mark.slow
def test_comparison_of_two_pe_counts(runs, capsys):
    cmp = compare([(str(p), d) for p, d in runs.values()])
    assert [r.npes for r in cmp.runs] == [2, 4]
    for r in cmp.runs:
        assert sum(r.categories.values()) == pytest.approx(r.pe_seconds, rel=1e-9)
    assert main(["report", *(str(p) for p, _ in runs.values()), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["npes"] for r in data["runs"]] == [2, 4]
    assert data["lead"].startswith("From P=2 to P=4: efficiency")
