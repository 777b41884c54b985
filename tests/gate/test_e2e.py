"""End-to-end: real runs measured with `mprof gate run`.

1. A/A: the same rt_workload build compared with itself, 20 trials, never a REGRESSION
   (nor a BEHAVIOUR CHANGE).
2. A deliberate slowdown of one data-structure operation (benchmarks/gate/gate_ops.c built
   with -DSLOW_OP_B: lookups, category OP_B) is flagged in OP_B and nowhere else (total time,
   busy time and the lookups' measured access category may be flagged too: they contain it).

Tolerances: runs of a few milliseconds on a shared 2-core VM vary by a factor of two or more
from run to run, so these tests gate at a 25 % tolerance; docs/measurements/gate-rates.md gives
the measured false-alarm rates behind that choice.
"""

from __future__ import annotations

import json
import time

from mprof.cli import main
from mprof.gate.config import config_from_dict
from mprof.gate.evaluate import BEHAVIOUR, REGRESSION
from mprof.gate.runner import run_gate

REPO_SPEC_DIR = "benchmarks/gate"


def test_aa_same_build_never_regresses(rt_workload, tmp_path):
    spec = tmp_path / "aa.toml"
    spec.write_text(
        f'program = "{rt_workload}"\n'
        'command = "{program} {npes} {fibers} {msgs} {bytes}"\n'
        'database = "unused.db"\nnpes = [1, 2]\nrepetitions = 6\n'
        "[params]\nfibers = [3000]\nmsgs = [300]\nbytes = [16]\n"
    )
    config = config_from_dict({"defaults": {"tolerance": 0.25, "alpha": 0.01}})
    start = time.monotonic()
    flagged, inconclusive, units = [], 0, 0
    for trial in range(20):
        report, log = run_gate(
            spec,
            baseline_bin=str(rt_workload),
            candidate_bin=str(rt_workload),
            out_dir=tmp_path / f"t{trial}",
            config=config,
        )
        assert log.runs == 2 * 2 * 6 and not log.failures
        units += len(report.units)
        flagged += [
            (trial, u.id, u.verdict, u.note)
            for u in report.units
            if u.verdict in (REGRESSION, BEHAVIOUR)
        ]
        inconclusive += report.counts()["INCONCLUSIVE"]
        assert report.exit_code != 1
    assert not flagged, flagged
    assert time.monotonic() - start < 90
    assert units > 20 * 2  # times and deterministic statistics were compared


def test_slowed_operation_flagged_in_its_category_only(gate_ops_builds, tmp_path, capsys):
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f'program = "{gate_ops_builds["base"]}"\n'
        'command = "{program} {npes} {na} {nb}"\n'
        'database = "unused.db"\nnpes = [1]\nrepetitions = 6\n'
        "[params]\nna = [10000, 40000]\nnb = [10000, 40000]\n"
    )
    cfg = tmp_path / "gate.toml"
    cfg.write_text("[defaults]\ntolerance = 0.25\nalpha = 0.05\n")
    out = tmp_path / "out"
    code = main(
        [
            "gate",
            "run",
            "--spec",
            str(spec),
            "--baseline-bin",
            str(gate_ops_builds["base"]),
            "--candidate-bin",
            str(gate_ops_builds["slow"]),
            "--budget",
            "24",
            "--out-dir",
            str(out),
            "--config",
            str(cfg),
            "--fit",
            f"{REPO_SPEC_DIR}/gate_ops.tcl",
            "--json",
            str(tmp_path / "r.json"),
            "--junit",
            str(tmp_path / "r.xml"),
            "--markdown",
            str(tmp_path / "r.md"),
        ]
    )
    report = json.loads((tmp_path / "r.json").read_text())
    verdicts = {u["id"]: u["verdict"] for u in report["units"]}
    assert code == 1, capsys.readouterr()
    assert verdicts["fit::gateops.OP_B:Lookup"] == REGRESSION
    flagged = sorted(uid for uid, v in verdicts.items() if v in (REGRESSION, BEHAVIOUR))
    # the lookups' measured CPU time (where the runs were long enough to be sampled) or, in
    # runs without category times, the busy time that contains them
    assert all(
        uid.endswith(("::fit:gateops.OP_B", "::time", "fit::gateops.OP_B:Lookup"))
        or uid in ("cat:gateops:LOOKUP", "cat:(busy)")
        for uid in flagged
    ), flagged
    per_config = [uid for uid in flagged if uid.endswith("::fit:gateops.OP_B")]
    assert len(per_config) >= 2  # the category is flagged in the configurations, too
    assert not any("OP_A" in uid or "STARTUP" in uid for uid in flagged)
    # both builds ran every point, interleaved, plus extra runs within the budget
    b = [u for u in report["units"] if u["id"].endswith("::time")]
    assert all(u["n_baseline"] >= 6 and u["n_candidate"] == u["n_baseline"] for u in b)
    assert (out / "baseline.db").exists() and (out / "candidate.db").exists()
    # running it again resumes: no point is measured twice
    report2, log = run_gate(
        spec,
        baseline_bin=str(gate_ops_builds["base"]),
        candidate_bin=str(gate_ops_builds["slow"]),
        out_dir=out,
        fit_script=f"{REPO_SPEC_DIR}/gate_ops.tcl",
    )
    assert log.runs == 0


def test_the_shipped_example_runs_as_documented(cmake_build, tmp_path):
    """docs/gate.md's example ran binaries no build made (build/gate/...): `make build` now
    makes both builds where benchmarks/gate/sweep.toml and the documented command name them,
    and the command flags the slow one."""
    from pathlib import Path

    from mprof.bench.spec import load_spec

    root = Path(__file__).resolve().parents[2]
    bdir = cmake_build("build", targets=["gate_ops", "gate_ops_slow"])
    spec_path = root / REPO_SPEC_DIR / "sweep.toml"
    spec = load_spec(spec_path)
    assert spec.program_path == bdir / "benchmarks/gate/gate_ops"
    doc = (root / "docs/gate.md").read_text()
    for name in ("gate_ops", "gate_ops_slow"):
        assert (
            f"--{'baseline' if name == 'gate_ops' else 'candidate'}-bin "
            f"build/benchmarks/gate/{name} " in doc
        )
    # the documented command, with the database in tmp_path (points already recorded are
    # skipped: a database left in build/ would make the runs of a second test run vanish)
    text = spec_path.read_text().replace(
        'database = "build/benchmarks/gate/gate_ops.db"', f'database = "{tmp_path / "gate_ops.db"}"'
    )
    text = text.replace('root = "../.."', f'root = "{root}"')
    spec_copy = tmp_path / "sweep.toml"
    spec_copy.write_text(text)
    code = main(
        [
            "gate",
            "run",
            "--spec",
            str(spec_copy),
            "--baseline-bin",
            str(bdir / "benchmarks/gate/gate_ops"),
            "--candidate-bin",
            str(bdir / "benchmarks/gate/gate_ops_slow"),
            "--fit",
            str(root / REPO_SPEC_DIR / "gate_ops.tcl"),
            "--tolerance",
            "0.25",
            "--budget",
            "8",
            "--json",
            str(tmp_path / "gate.json"),
            "--out-dir",
            str(tmp_path / "gate-out"),
        ]
    )
    assert code == 1
