"""Figures that overflow (times of 1e308 s, a what-if factor of 1e308) never reach JSON as
Infinity or NaN, and never a model file: a clear one-line error names the figure; a quality
figure that is merely undefined (the noise floor of overflowing replicates) is null.  No numpy
warning leaks to stderr.  The import's own bounds on times are bypassed here on purpose: these
checks hold whatever reaches the writers."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from model_helpers import write_script

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))

from mprof.cli import main  # noqa: E402
from mprof.errors import MprofError  # noqa: E402
from mprof.report.jsonout import dumps  # noqa: E402


@pytest.fixture(autouse=True)
def numpy_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def test_dumps_names_the_first_non_finite_figure():
    assert json.loads(dumps({"a": [1.0, {"b": 2}]}, "x")) == {"a": [1.0, {"b": 2}]}
    for bad in (math.inf, -math.inf, math.nan, np.float64("inf")):
        with pytest.raises(MprofError, match=r"^report: a\[1\]\.b is .*not a finite number"):
            dumps({"a": [1.0, {"b": bad}]}, "report")


def test_save_model_refuses_a_non_finite_fit(tmp_path):
    from report_helpers import make_model

    model = make_model()
    model.quality["sse"] = math.inf
    with pytest.raises(
        MprofError, match="cannot save model .*quality.sse is inf.*the model was not saved"
    ):
        model.save(tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


def test_undefined_quality_figures_are_null():
    from mprof.model.session import _finite

    assert _finite(math.inf) is None and _finite(math.nan) is None and _finite(None) is None
    assert _finite(2.5) == 2.5


@pytest.fixture
def huge_db(tmp_path, pipe_dbs):
    """The fit database with one PE's times at 1e308 s, written past the import's checks."""
    fit, _ = pipe_dbs
    with sqlite3.connect(fit) as conn:
        conn.execute(
            "UPDATE pe_samples SET elapsed_s = 1e308, cpu_s = 1e308 "
            "WHERE run_id = (SELECT MIN(run_id) FROM pe_samples) AND pe = 0"
        )
    return fit


SCRIPT = """FitDatabase fit.db
Interface @PIPE@
Interface @GRAPH@
IgnoreTerm pipe P
SaveModel m.json
"""


def test_fit_of_overflowing_times_saves_nothing_and_says_why(tmp_path, huge_db, capsys):
    script = write_script(tmp_path, SCRIPT)
    assert main(["fit", str(script)]) == 2
    err = capsys.readouterr().err
    assert "not a finite number" in err and "the model was not saved" in err, err
    assert "internal error" not in err and "Traceback" not in err
    assert not (tmp_path / "m.json").exists()
    assert main(["fit", "--json", str(script)]) == 2
    captured = capsys.readouterr()
    assert "Infinity" not in captured.out and "NaN" not in captured.out
    assert "not a finite number" in captured.err


def test_fit_printed_before_the_save_is_refused_shows_no_inf(tmp_path, huge_db, capsys):
    """`Fit` prints the fit, then `SaveModel` refuses it: the printed figures that overflowed
    say so, in words, instead of inf or nan."""
    script = write_script(tmp_path, SCRIPT.replace("SaveModel", "Fit\nSaveModel"))
    assert main(["fit", str(script)]) == 2
    captured = capsys.readouterr()
    assert "the model was not saved" in captured.err, captured.err
    assert "Chi-square: n/a (overflows)" in captured.out, captured.out
    assert not re.search(r"\b(inf|nan)\b", captured.out, re.I), captured.out


@pytest.mark.parametrize("change", ["rts:Msg=1e308x", "rts.MsgSent=1e308x"])
def test_a_what_if_that_overflows_is_refused(model_and_run, capsys, change):
    model, run = model_and_run
    for extra in (["--json"], []):
        assert main(["report", *extra, "--model", str(model), "--what-if", change, str(run)]) == 2
        captured = capsys.readouterr()
        assert "Infinity" not in captured.out
        assert captured.err.startswith("mprof: report: the what-if price overflows: with "), (
            captured.err
        )
        assert len(captured.err.strip().splitlines()) == 1


def test_report_json_of_huge_times_is_refused(model_and_run, capsys, monkeypatch):
    import mprof.db.validate as validate

    _, run = model_and_run
    doc = json.loads(run.read_text())
    for pe in doc["pes"]:
        pe["elapsed_s"] = 1e308
        pe["idle_s"] = 0.0
    monkeypatch.setattr(validate, "load_profile", lambda path, *a, **k: doc)
    assert main(["report", "--json", str(run)]) == 2
    captured = capsys.readouterr()
    assert "Infinity" not in captured.out
    assert captured.err.startswith("mprof: report: measured_total_s is inf, not a finite "), (
        captured.err
    )


@pytest.mark.parametrize("output", ["text", "html", "compare"])
def test_a_model_whose_prices_overflow_writes_no_report(model_and_run, tmp_path, capsys, output):
    """A parameter of 1e308 is a finite number, and the model file holds it; the costs it
    prices overflow.  The text, the HTML and the comparison refuse as --json does, instead of
    printing "inf s" or drawing bars of height NaN."""
    model, run = model_and_run
    doc = json.loads(model.read_text())
    name = next(iter(doc["parameters"]))
    doc["parameters"][name]["value"] = 1e308
    model.write_text(json.dumps(doc))
    html = tmp_path / "r.html"
    argv = ["report", "--model", str(model), str(run)]
    argv += {"text": [], "html": ["--html", str(html)], "compare": [str(run)]}[output]
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not html.exists()
    assert re.match(
        r"mprof: report: \S+ is inf, not a finite number: .*nothing was written$",
        captured.err.strip(),
    ), captured.err


def test_a_fixed_parameter_whose_price_overflows_is_one_line(tmp_path, pipe_dbs, capfd):
    """FixParameter takes any finite number; one of 1e308 prices the runs at inf.  The fit
    says so at the directive, and no numpy RuntimeWarning reaches stderr in numpy's words."""
    script = write_script(
        tmp_path, SCRIPT.replace("SaveModel", "FixParameter graph Op 1e308\nSaveModel")
    )
    assert main(["fit", str(script)]) == 2
    err = capfd.readouterr().err
    assert "RuntimeWarning" not in err and "Traceback" not in err, err
    assert err.strip().splitlines() == [
        f"mprof: {script}: at end of script: fit: imported parameters give a non-finite "
        "contribution"
    ], err
    assert not (tmp_path / "m.json").exists()
