"""The power check (mprof.gate.power, `mprof gate power`), the adaptive `gate run`, and builds
of one program under two binary names."""

from __future__ import annotations

import io
import json
import math
import shutil

import numpy as np
import pytest
from rich.console import Console

from mprof.cli import main
from mprof.gate.config import GateConfig
from mprof.gate.data import load_side
from mprof.gate.evaluate import BEHAVIOUR, REGRESSION
from mprof.gate.power import check
from mprof.gate.runner import run_gate
from mprof.gate.power import PowerCheck, PowerLine
from mprof.gate.stats import compare_samples, log_spread, repetitions_for, smallest_detectable

from gate_synth import write_category_db


def test_noise_is_estimated_from_ranks():
    """Log-normal noise of 5 % is estimated as 5 %; a run slowed twofold by interference in
    one configuration of nine moves it little, where it made the standard deviation 3x."""
    rng = np.random.default_rng(3)
    groups = [np.exp(rng.normal(0.0, 0.05, 6)) for _ in range(9)]
    sigma, dof = log_spread(groups)
    assert dof == 45 and 0.04 < sigma < 0.06
    disturbed = [g.copy() for g in groups]
    disturbed[0][0] *= 2
    assert log_spread(disturbed)[0] < 1.2 * sigma
    lv = [np.log(g) for g in disturbed]
    sd = math.sqrt(sum(((v - v.mean()) ** 2).sum() for v in lv) / 45)
    assert sd > 1.8 * sigma


def test_recommendation_is_what_the_categories_need():
    """Each configuration's `::time` is a test on its own and may need far more repetitions
    than the categories compared over all configurations: the recommendation is the
    categories', and `::time`'s only where the runs have no category times."""
    lines = [
        PowerLine("::time", 9, 0.1, 45, 6, 0.5, None),
        PowerLine("cat:m:A", 9, 0.05, 45, 6, 0.12, 20),
        PowerLine("cat:m:B", 9, 0.04, 45, 6, 0.10, 14),
        PowerLine("cat:(scheduler)", 9, 0.5, 45, 6, 2.0, None),
    ]
    assert PowerCheck(0.10, 0.05, 0.05, 11, lines).recommended == 20
    assert PowerCheck(0.10, 0.05, 0.05, 11, lines[:1]).recommended is None
    assert PowerCheck(0.10, 0.05, 0.05, 11, [lines[0], lines[3]]).recommended is None


def test_smallest_detectable_change():
    # 3 runs per side: the smallest one-sided p-value is 1/20, never below 0.05 / 7
    assert smallest_detectable(0.01, [(3, 3)], 0.05, 0.05 / 7) == math.inf
    assert compare_samples([1, 1.01, 1.02], [5, 5.1, 5.2], 0.05, 0.05).p_regression >= 0.05
    # more runs, less noise: smaller changes are seen; it never falls below the tolerance
    a = smallest_detectable(0.02, [(6, 6)], 0.05, 0.01)
    b = smallest_detectable(0.02, [(12, 12)], 0.05, 0.01)
    c = smallest_detectable(0.01, [(12, 12)], 0.05, 0.01)
    assert 0.05 < c < b < a < 0.2
    # strata add up: 3 configurations of 3 runs see what one of 3 cannot
    assert smallest_detectable(0.02, [(3, 3)] * 3, 0.05, 0.01) < 0.2
    n = repetitions_for(0.10, 0.02, 1, 0.05, 0.01)
    assert smallest_detectable(0.02, [(n, n)], 0.05, 0.01) <= 0.10
    assert smallest_detectable(0.02, [(n - 1, n - 1)], 0.05, 0.01) > 0.10


def test_the_recommendation_detects(tmp_path):
    """Runs with the repetitions the check recommends detect the change it was asked about
    (in most trials: the check aims at 80 % power), and fewer runs detect it less often."""
    rng = np.random.default_rng(21)
    pilot = write_category_db(tmp_path / "pilot.db", rng, reps=3, sigma=0.04, sizes=(1000,))
    result = check(load_side("baseline", pilot), GateConfig(), change=0.15, focus=["dca"])
    reps = result.recommended
    assert reps is not None and reps > 3
    detected = {reps: 0, 3: 0}
    for trial in range(8):
        for n in detected:
            b = write_category_db(
                tmp_path / f"b{trial}_{n}.db", rng, reps=n, sigma=0.04, sizes=(1000,)
            )
            c = write_category_db(
                tmp_path / f"c{trial}_{n}.db",
                rng,
                reps=n,
                sigma=0.04,
                sizes=(1000,),
                slow={"dca:UPDATE": 1.15, "dca:LOOKUP": 1.15},
            )
            from mprof.gate.evaluate import evaluate

            report = evaluate(
                load_side("baseline", b), load_side("candidate", c), GateConfig(), focus=["dca"]
            )
            detected[n] += any(u.verdict == REGRESSION for u in report.units)
    assert detected[reps] >= 5 and detected[3] <= detected[reps], detected


def test_power_command(tmp_path, capsys):
    rng = np.random.default_rng(22)
    db = write_category_db(tmp_path / "b.db", rng, reps=3)
    out = tmp_path / "p.json"
    assert main(["gate", "power", "--baseline", str(db), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "power check: with 3 repetition(s) and this noise, the smallest change" in text
    assert "::time cannot flag any change with 3 run(s) per side" in text
    data = json.loads(out.read_text())
    assert data["tests"] == 3 + 4 and data["recommended"] >= 4
    assert {u["unit"] for u in data["units"]} >= {"::time", "cat:dca:UPDATE"}
    assert main(["gate", "power", "--baseline", str(db), "--focus", "dca", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["tests"] == 2
    for bad in (
        ["--change", "-1"],
        ["--repetitions", "1"],
        ["--tests", "0"],
        ["--focus", "x", "--where", "n=7"],
    ):
        assert main(["gate", "power", "--baseline", str(db), *bad]) == 2, bad
        assert capsys.readouterr().err.startswith("mprof gate: error: ")
    assert main(["gate", "power", "--baseline", str(tmp_path / "none.db")]) == 2


def _spec(tmp_path, program, reps):
    spec = tmp_path / "aa.toml"
    spec.write_text(
        f'program = "{program}"\n'
        'command = "{program} {npes} {fibers} {msgs} {bytes}"\n'
        f'database = "unused.db"\nnpes = [1]\nrepetitions = {reps}\n'
        "[params]\nfibers = [2000]\nmsgs = [200]\nbytes = [16]\n"
    )
    return spec


def test_candidate_binary_of_another_name(rt_workload, tmp_path, capsys):
    """rt_workload names its program after its binary: a copy under another name is the
    same program's other build, and `gate run` compares them (it used to run every point,
    then stop with "their programs differ")."""
    copy = tmp_path / "rt_workload_copy"
    shutil.copy(rt_workload, copy)
    spec = _spec(tmp_path, rt_workload, 2)
    code = main(
        [
            "gate",
            "run",
            "--spec",
            str(spec),
            "--baseline-bin",
            str(rt_workload),
            "--candidate-bin",
            str(copy),
            "--out-dir",
            str(tmp_path / "o"),
            "--inconclusive-ok",
            "--tolerance",
            "0.25",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "compared as the baseline's rt_workload" in captured.out


@pytest.mark.parametrize("content", [b"not a database\n", b'{"runs": []}\n'])
def test_noise_from_a_file_that_is_no_database_is_refused_before_any_run(
    rt_workload, tmp_path, capsys, content
):
    noise = tmp_path / "noise.db"
    noise.write_bytes(content)
    spec = _spec(tmp_path, rt_workload, 2)
    argv = ["gate", "run", "--spec", str(spec), "--baseline-bin", str(rt_workload)]
    argv += ["--candidate-bin", str(rt_workload), "--out-dir", str(tmp_path / "o")]
    assert main([*argv, "--noise-from", str(noise)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mprof gate: error: --noise-from: {noise}: ") and "Traceback" not in err
    assert noise.read_bytes() == content and not (tmp_path / "o").exists()


@pytest.mark.parametrize("budget", ["-1", "2000001", "99999999999999999999"])
def test_a_budget_out_of_range_is_refused_before_any_run(rt_workload, tmp_path, capsys, budget):
    spec = _spec(tmp_path, rt_workload, 2)
    argv = ["gate", "run", "--spec", str(spec), "--baseline-bin", str(rt_workload)]
    argv += ["--candidate-bin", str(rt_workload), "--out-dir", str(tmp_path / "o")]
    assert main([*argv, "--budget", budget]) == 2
    err = capsys.readouterr().err
    assert (
        f"--budget must be in [0, 2000000] (extra runs, both builds counted), got {budget}" in err
    )
    assert not (tmp_path / "o").exists()


def test_adaptive_run_takes_the_recommended_repetitions(rt_workload, tmp_path):
    spec = _spec(tmp_path, rt_workload, 2)
    config = GateConfig(tolerance=0.05)
    text = io.StringIO()
    console = Console(file=text, width=200)
    _, log = run_gate(
        spec,
        baseline_bin=str(rt_workload),
        candidate_bin=str(rt_workload),
        out_dir=tmp_path / "pilot",
        config=config,
        console=console,
    )
    assert log.runs == 4 and log.power is not None
    assert "power check: with 2 repetition(s)" in text.getvalue()
    # before any run: the noise of the pilot's baseline; adaptive within a budget of 8 runs
    text.truncate(0)
    report, log = run_gate(
        spec,
        baseline_bin=str(rt_workload),
        candidate_bin=str(rt_workload),
        out_dir=tmp_path / "run",
        config=config,
        console=console,
        noise_from=tmp_path / "pilot" / "baseline.db",
        adaptive=True,
        budget=8,
        change=0.10,
    )
    out = text.getvalue()
    assert out.index("power check") < out.index("gate run: ")
    assert log.repetitions > 2 and log.runs == 2 * log.repetitions
    assert log.extra_runs == log.runs - 4 <= 8
    assert not [u.id for u in report.units if u.verdict in (REGRESSION, BEHAVIOUR)]
