"""Modeling scripts end to end: Tcl directives, imports, ignores, model files, errors."""

import json
from pathlib import Path

import numpy as np
import pytest
from model_helpers import TRUTH, build_db, write_script

from mprof.cli import main
from mprof.errors import MprofError
from mprof.model import load_model
from mprof.model.script import ModelingScript, ScriptError

BASE = """
FitDatabase fit.db
TestDatabase test.db
Interface @PIPE@
Interface @GRAPH@
IgnoreTerm pipe P
"""


def run_script(tmp_path, text, **kw):
    outcomes = []
    script = ModelingScript(
        write_script(tmp_path, text), on_fit=outcomes.append, warn=kw.get("warn", lambda w: None)
    )
    script.run()
    return outcomes


def test_recovers_truth_and_reports(tmp_path, pipe_dbs):
    (outcome,) = run_script(tmp_path, BASE)
    r = outcome.result
    assert r.names == ["pipe:Comp", "graph:P", "graph:Op", "graph:Data"]
    for name, truth in TRUTH.items():
        value, half = r.parameter(name)
        assert abs(value - truth) <= max(3 * half, 1e-12), name
    assert r.rank == 4 and not r.null_groups
    assert r.n_samples == 8 * 2 + 8 * 4 and r.n_test == 6 * 3
    assert r.test_mre is not None and r.test_mre < 5


def test_paper_colon_spelling_loops_and_variables(tmp_path, pipe_dbs):
    text = """
    set dbs {fit.db}
    foreach db $dbs { FitDatabase: $db }
    TestDatabase: "test.db"
    Interface: @PIPE@ @GRAPH@
    IgnoreTerm: pipe P
    set results {}
    foreach n {off on} {
        Normalize $n
        lappend results [dict get [Fit] rank]
    }
    if {$results ne {4 4}} { error "unexpected ranks $results" }
    """
    outcomes = run_script(tmp_path, text)
    assert len(outcomes) == 2  # explicit Fit twice, no implicit fit at the end
    assert outcomes[1].model.settings["normalize"] is True


def test_rank_deficiency_names_start_up_terms(tmp_path, pipe_dbs):
    warnings = []
    (outcome,) = run_script(tmp_path, BASE.replace("IgnoreTerm pipe P", ""), warn=warnings.append)
    r = outcome.result
    assert r.rank == 4 and len(r.names) == 5
    assert r.null_groups == [["pipe:P", "graph:P"]]
    assert any("pipe:P, graph:P" in w for w in warnings)


def test_import_parameter_moves_terms_to_rhs(tmp_path, pipe_dbs):
    (first,) = run_script(tmp_path, BASE + "SaveModel first.json\n")
    saved = load_model(tmp_path / "first.json")
    assert saved.values["graph:Op"] == pytest.approx(first.result.parameter("graph:Op")[0])
    # Re-fit pipe alone with graph's parameters imported: graph terms leave the unknowns and
    # their contribution is subtracted from t, so pipe:Comp comes out the same.
    text = BASE + 'ImportParameter: Graph "first.json" P Op Data\nSaveModel second.json\n'
    (second,) = run_script(tmp_path, text)
    assert second.result.names == ["pipe:Comp"]
    comp_first = first.result.parameter("pipe:Comp")[0]
    assert second.result.parameter("pipe:Comp")[0] == pytest.approx(comp_first, rel=1e-3)
    model = load_model(tmp_path / "second.json")
    assert model.imported["graph:Op"].endswith("first.json")
    assert model.values["graph:Op"] == saved.values["graph:Op"]
    assert model.fitted == ["pipe:Comp"] and model.ignored == ["pipe:P"]


def test_fix_parameter_takes_its_term_out_of_the_fit(tmp_path, pipe_dbs, capsys):
    # at the true value, the other parameters come out as before, and the model keeps the
    # fixed value with no uncertainty
    truth = TRUTH["graph:Data"]
    (fixed,) = run_script(tmp_path, BASE + f"FixParameter graph Data {truth}\nSaveModel m.json\n")
    assert fixed.result.names == ["pipe:Comp", "graph:P", "graph:Op"]
    for name in fixed.result.names:
        value, half = fixed.result.parameter(name)
        assert abs(value - TRUTH[name]) <= max(3 * half, 1e-12), name
    model = load_model(tmp_path / "m.json")
    assert model.values["graph:Data"] == truth and model.halfwidths["graph:Data"] == 0
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["parameters"]["graph:Data"]["source"] == "fixed"
    # `mprof model show` says so (it called it imported)
    assert main(["model", "show", str(tmp_path / "m.json")]) == 0
    shown = capsys.readouterr().out
    assert f"Data={truth:g} +- 0 (fixed)" in shown and "(imported)" not in shown, shown
    assert model.price({"graph:Data": 1000.0}).seconds == pytest.approx(1000 * truth)
    assert model.price({"graph:Data": 1000.0}).variance == 0
    # a session importing it gets the fixed value
    (second,) = run_script(tmp_path, BASE + "ImportParameter graph m.json Data\n")
    assert second.model.values["graph:Data"] == truth
    # the fixed value enters the fit: a wrong one leaves a residual the others cannot absorb
    (wrong,) = run_script(tmp_path, BASE + f"FixParameter graph Data {10 * truth}\n")
    assert wrong.result.sse > 100 * fixed.result.sse
    assert wrong.result.parameter("graph:Op")[0] != pytest.approx(TRUTH["graph:Op"], rel=0.1)


def test_ignore_term_drops_column(tmp_path, pipe_dbs):
    (outcome,) = run_script(tmp_path, BASE + "IgnoreTerm graph Data\n")
    assert "graph:Data" not in outcome.result.names
    assert "graph:Data" in outcome.model.ignored


def test_select_filters_runs(tmp_path, pipe_dbs):
    (outcome,) = run_script(tmp_path, BASE + "Select {npes=4}\n")
    assert outcome.result.n_samples == 8 * 4
    (outcome,) = run_script(tmp_path, BASE + "Select npes=4 M=0\n")
    runs = [r for r in range(16) if r % 2 == 1 and r % 3 == 0]  # odd runs have 4 PEs
    assert outcome.result.n_samples == 4 * len(runs)


def test_granularity_run_sums_pes(tmp_path, pipe_dbs):
    (outcome,) = run_script(tmp_path, BASE + "Granularity run\n")
    assert outcome.result.n_samples == 16


def test_unknown_module_warns(tmp_path):
    rng = np.random.default_rng(3)
    build_db(tmp_path / "fit.db", rng, runs=8, extra_module=True)
    warnings = []
    text = "FitDatabase fit.db\nInterface @PIPE@ @GRAPH@\nIgnoreTerm pipe P\n"
    run_script(tmp_path, text, warn=warnings.append)
    assert any("unknownmod" in w for w in warnings)


@pytest.mark.parametrize(
    "body, line, message",
    [
        ("FitDatabase fit.db\nset x 1\n\nFitDatabase nosuch.db\n", 4, "nosuch.db not found"),
        # found only when fitting, reported at the directive (not at Fit, nor "end of script")
        ("FitDatabase fit.db\nInterface @PIPE@\nIgnoreTerm pipe Nope\nFit\n", 3, "no term 'Nope'"),
        ("FitDatabase fit.db\nInterface @PIPE@\nIgnoreTerm pipe Nope\n\n", 3, "no term 'Nope'"),
        (
            "FitDatabase fit.db\nInterface @PIPE@\nforeach t {P Nope} {\n  IgnoreTerm pipe $t\n}\n"
            "Fit\n",
            4,
            "no term 'Nope'",
        ),
        # inside a procedure, a loop body, a branch: the line of the failing command
        ("set a 1\nproc f {} {\n  Cutoff abc\n}\nf\n", 3, "cut-off: expected a number"),
        ("FitDatabase fit.db\nif {1} {\n  ImportParameter rts\n}\n", 3, "usage: ImportParameter"),
        ("foreach c {0.1 x} {\n  Normalize on\n  Cutoff $c\n}\n", 3, "cut-off: expected a number"),
        ("foreach c {1 0} {\n  set y 2\n  set x [expr {1/$c}]\n}\n", 3, "divide by zero"),
        ("set x [expr {1/0}]\n", 1, "divide by zero"),
        ("Granularity thread\n", 1, "granularity must be"),
        ("FitDatabase fit.db\nwhile 1 {\n  IgnorTerm pipe P\n}\n", 3, "did you mean IgnoreTerm"),
        (
            "FitDatabase fit.db\nrename Fit {}\nFit\n",
            3,
            "unknown command 'Fit': the script renamed or deleted the directive Fit",
        ),
        ("FitDatabase fit.db\nSaveModel .\nFit\n", 2, "is a directory"),
        ("FitDatabase fit.db\nSaveModel no/such/folder/m.json\nFit\n", 2, "SaveModel: the folder"),
        ('FitDatabase fit.db\nSaveModel "m\\0.json"\nFit\n', 2, "a file name cannot hold NUL"),
        ("set x 1\nInterfacePath nowhere\n", 2, "InterfacePath: nowhere ("),
        ("set x 1\nset y \0\n", 2, "a NUL byte: a modeling script is text"),
        ("InterfacePath fit.db\n", 1, ") is a file, not a folder"),
        (
            "FitDatabase fit.db\nInterface @PIPE@\nFixParameter pipe Comp fast\n",
            3,
            "FixParameter: the value: expected a number",
        ),
        (
            "FitDatabase fit.db\nInterface @PIPE@\nFixParameter pipe Nope 1\nFit\n",
            3,
            "no term 'Nope'",
        ),
        (
            "FitDatabase fit.db\nInterface @PIPE@\nFixParameter pipe Comp\n",
            3,
            "usage: FixParameter",
        ),
        # a term fixed twice, or fixed and left out: the directive that contradicts the first
        (
            "FitDatabase fit.db\nInterface @PIPE@\nFixParameter pipe Comp 1\nset x 1\n"
            "FixParameter pipe Comp 2\nFit\n",
            5,
            "term 'Comp' of module 'pipe' is already fixed",
        ),
        (
            "FitDatabase fit.db\nInterface @PIPE@\nFixParameter pipe Comp 1\nset x 1\n"
            "IgnoreTerm pipe Comp\nFit\n",
            5,
            "term 'Comp' of module 'pipe' is fixed "
            "(FixParameter); a term is priced by a given value or left out, not both",
        ),
    ],
)
def test_script_errors_name_the_line(tmp_path, pipe_dbs, body, line, message):
    path = write_script(tmp_path, body)
    with pytest.raises(ScriptError) as err:
        ModelingScript(path, warn=lambda w: None).run()
    assert err.value.line == line, str(err.value)
    assert message in str(err.value)
    assert str(err.value).startswith(f"{path}:{line}:")
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.parent.glob("*.tmp"))


def test_cli_fit_text_and_json(tmp_path, pipe_dbs, capsys):
    path = write_script(tmp_path, BASE + "SaveModel out.json\n")
    assert main(["fit", str(path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("Chi-square: ")
    assert lines[1].startswith("Singular values: ")
    assert lines[2].startswith("Sample MRE: ") and lines[2].endswith("%")
    assert lines[3].startswith("Test MRE: ")
    assert any(line.startswith("graph:Op: ") and " +- " in line for line in lines)
    assert main(["fit", "--json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "mprof.model" and "graph:Op" in data["parameters"]
    assert main(["model", "show", str(tmp_path / "out.json")]) == 0
    assert "COMP" in capsys.readouterr().out


def test_cli_script_error_has_no_traceback(tmp_path, capsys):
    path = write_script(tmp_path, "\n\nFitDatabase missing.db\n")
    assert main(["fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:" in err and "Traceback" not in err


def test_no_fit_database_is_reported(tmp_path):
    with pytest.raises(MprofError, match="no fit database"):
        ModelingScript(write_script(tmp_path, "Normalize on\n")).run()


def test_interface_not_found_lists_only_folders(tmp_path, pipe_dbs):
    path = write_script(tmp_path, "FitDatabase fit.db\nInterface nosuchmodule\n")
    with pytest.raises(ScriptError) as err:
        ModelingScript(path, warn=lambda w: None).run()
    assert err.value.line == 2 and "no interface nosuchmodule.perf" in str(err.value)
    searched = str(err.value).split("search path: ", 1)[1].split(", ")
    assert searched and all(Path(d).is_dir() for d in searched), searched
    assert "CMakeLists.txt" not in str(err.value)


def spells_db(tmp_path, seed, slowdown):
    """spells.db: 12 PIPE configurations x 3 repetitions, each run's time the truth times
    slowdown(config, rep); returns the start of a script that fits it."""
    from mprof.bench.synth import make_profile
    from mprof.db.store import ProfileDB

    from model_helpers import pipe_objects, true_time

    rng = np.random.default_rng(seed)
    docs = []
    for config in range(12):
        objs = pipe_objects(rng)
        for rep in range(3):
            docs.append(
                (
                    f"c{config}r{rep}.json",
                    make_profile(
                        "pipe",
                        [objs],
                        [slowdown(config, rep) * true_time(objs, TRUTH)],
                        params={"config": config},
                        argv=[f"rep{rep}"],
                    ),
                )
            )
    with ProfileDB(tmp_path / "spells.db") as db:
        db.import_documents(docs)
    return "FitDatabase spells.db\nInterface @PIPE@\nInterface @GRAPH@\nIgnoreTerm pipe P\n"


def test_replicates_median_sheds_slow_spells(tmp_path):
    """A shared machine slows whole runs down now and then: one repetition of some
    configurations 3x slower.  With `Replicates median` each configuration's median run is the
    sample, and the fit finds the truth; over every run it does not."""
    base = spells_db(
        tmp_path, 7, lambda config, rep: 3.0 if rep == config % 3 and config % 2 == 0 else 1.0
    )
    (every,) = run_script(tmp_path, base)
    (median,) = run_script(tmp_path, base + "Replicates median\n")
    assert median.result.n_samples == 12 and every.result.n_samples == 36
    assert median.result.sample_mre < 1e-6
    for name in ("pipe:Comp", "graph:Op"):
        assert median.result.parameter(name)[0] == pytest.approx(TRUTH[name], rel=1e-6)
        assert every.result.parameter(name)[0] != pytest.approx(TRUTH[name], rel=0.05)
    assert median.result.noise_mre > 10  # the floor is still measured over every run
    assert median.model.settings["replicates"] == "median"


def test_replicates_min_sheds_spells_that_hit_most_runs(tmp_path):
    """A slow spell that lasts long hits two of a configuration's three runs (1.5-3x slower)
    and the rest scatter by a few per cent upwards, as interference does: the median is then a
    slow run and the fit is off; the fastest run of each configuration finds the truth."""
    # config % 3 is the one repetition the spell missed
    base = spells_db(
        tmp_path, 11, lambda config, rep: 1.0 if rep == config % 3 else 1.5 + config / 8
    )
    (median,) = run_script(tmp_path, base + "Replicates median\n")
    (fastest,) = run_script(tmp_path, base + "Replicates min\n")
    assert fastest.result.n_samples == 12 and fastest.result.sample_mre < 1e-6
    for name in ("pipe:Comp", "graph:Op"):
        assert fastest.result.parameter(name)[0] == pytest.approx(TRUTH[name], rel=1e-6)
        assert median.result.parameter(name)[0] != pytest.approx(TRUTH[name], rel=0.05)
    assert fastest.model.settings["replicates"] == "min"


def test_replicates_takes_all_median_or_min(tmp_path, pipe_dbs):
    path = write_script(tmp_path, "FitDatabase fit.db\nReplicates fastest\n")
    with pytest.raises(ScriptError) as err:
        ModelingScript(path, warn=lambda w: None).run()
    assert err.value.line == 2 and "'all', 'median' or 'min'" in str(err.value)


def test_savemodel_to_a_missing_folder_is_an_error(tmp_path, pipe_dbs, capsys):
    """A mistyped folder is reported (exit 2), not created where nobody looks."""
    path = write_script(tmp_path, BASE + "SaveModel modles/out.json\n")
    assert main(["fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "SaveModel: the folder" in err and "modles" in err and "Traceback" not in err
    assert not (path.parent / "modles").exists()


def test_misses_name_the_configuration_and_its_repetitions(tmp_path, capsys):
    """One repetition of configuration 4 ran at half the cost of its siblings (a run of
    another kind, as a shared machine's cheap mode gives).  Taken as the sample (`Replicates
    min`), it is the fit's largest miss by far, and `--misses` names it with its
    configuration and the spread of its three runs, which tells it from a missing term."""
    base = spells_db(
        tmp_path, 5, lambda config, rep: 0.5 if (config, rep) == (4, 1) else 1.0 + 0.01 * rep
    )
    (outcome,) = run_script(tmp_path, base + "Replicates min\n")
    from mprof.model.misses import largest

    worst, second = largest(outcome.misses(), 2)
    assert worst.which == "fit" and worst.config == "config=4 PE 0"
    # the outlier pulls the fit towards itself a little: +81 % here, the rest within 20 %
    assert worst.error > 0.6 and abs(second.error) < 0.2
    lo, hi, n = worst.runs
    assert n == 3 and hi / lo == pytest.approx(1.02 / 0.5, rel=1e-6)
    assert len(outcome.misses()) == outcome.result.n_samples == 12
    # over every run (no Replicates) each sample's configuration still shows its three runs
    (every,) = run_script(tmp_path, base)
    assert len(every.misses()) == 36 and all(m.runs[2] == 3 for m in every.misses())
    assert largest(every.misses(), 1)[0].measured == pytest.approx(lo)
    path = write_script(tmp_path, base + "Replicates min\n")
    assert main(["fit", "--misses", "2", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(next(x for x in out if x.startswith("Largest misses (fit samples)")))
    assert "config=4 PE 0" in out[at + 1] and "runs " in out[at + 1] and "(3)" in out[at + 1]
    assert not any(x.startswith("Largest misses (test") for x in out)  # no test set
    assert main(["fit", "--json", "--misses", "3", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["misses"]) == 3 and data["misses"][0]["config"] == "config=4 PE 0"
    assert data["misses"][0]["runs"]["count"] == 3
    assert main(["fit", str(path)]) == 0
    assert "Largest misses" not in capsys.readouterr().out  # only when asked


def test_misses_must_be_a_count(tmp_path, capsys):
    path = write_script(tmp_path, "FitDatabase fit.db\n")
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "--misses", "-1", str(path)])
    assert exit_.value.code == 2 and "--misses" in capsys.readouterr().err
