"""Measured times of 1e-300 s (valid profiles, accepted by the import) in `mprof fit`: the
test MRE and the largest misses of a model fitted to milliseconds read as a bound, not as
hundreds of digits or inf; `--json` writes null where the error is past any number; and
`Normalize on` over such times is a clear error naming the sample, not the SVD's."""

from __future__ import annotations

import json
import math
import re

import numpy as np
from model_helpers import BASE_SCRIPT, TRUTH, build_db, write_script

from mprof.cli import main
from mprof.model.fit import mre

LONG_NUMBER = re.compile(r"\d{13,}")


def tiny_db(path, factor, seed=7):
    """A test database of the pipe workload whose times are `factor` times the truth's."""
    truth = {k: v * factor for k, v in TRUTH.items()}
    return build_db(path, np.random.default_rng(seed), runs=4, npes=(2,), truth=truth)


def test_mre_of_times_that_round_to_zero_is_inf_and_of_overflow_unknown():
    measured = np.array([1e-300, 2e-318])
    assert mre(np.array([1e-3, 1e-3]), measured) == math.inf
    # predictions that overflow say nothing of the error: unknown, not infinite
    assert math.isnan(mre(np.array([math.inf, 1.0]), np.array([1e308, 1.0])))
    assert mre(np.array([2.0, 4.0]), np.array([1.0, 2.0])) == 100.0


def test_mre_text_is_bounded():
    from mprof.model.report import mre_text

    assert mre_text(10.416028) == "10.416028%"
    assert mre_text(1e302) == ">99999%" and mre_text(math.inf) == ">99999%"
    assert mre_text(math.nan) == "n/a (overflows)" and mre_text(None) == "n/a"


def test_fit_tested_on_tiny_times_prints_bounded_figures(tmp_path, pipe_dbs, capsys):
    tiny_db(tmp_path / "tiny.db", 1e-300)
    script = write_script(tmp_path, BASE_SCRIPT.replace("test.db", "tiny.db"))
    assert main(["fit", "--misses", "2", str(script)]) == 0
    out = capsys.readouterr().out
    assert not LONG_NUMBER.search(out), LONG_NUMBER.search(out).group()[:40]
    assert "Test MRE: >99999%" in out, out
    test_misses = out.split("Largest misses (test samples)")[1].split("Largest misses")[0]
    assert test_misses.count(">99999 %") == 2, test_misses


def test_fit_tested_on_times_below_the_smallest_ratio_prints_no_inf(tmp_path, pipe_dbs, capsys):
    """Times of 1e-318 s: prediction over measured time overflows to inf."""
    tiny_db(tmp_path / "tiny.db", 1e-318)
    script = write_script(tmp_path, BASE_SCRIPT.replace("test.db", "tiny.db"))
    assert main(["fit", "--misses", "2", str(script)]) == 0
    out = capsys.readouterr().out
    assert "inf" not in out and "nan" not in out, out
    assert "Test MRE: >99999%" in out and ">99999 %" in out, out
    assert main(["fit", "--json", "--misses", "2", str(script)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["quality"]["test_mre_percent"] is None
    misses = [m for m in data["misses"] if m["set"] == "test"]
    assert misses and all(m["error_pct"] is None for m in misses), misses


def test_normalized_fit_of_tiny_times_is_a_clear_error(tmp_path, capsys):
    tiny_db(tmp_path / "fit.db", 1e-305)
    script = write_script(
        tmp_path,
        "FitDatabase fit.db\nInterface @PIPE@\nInterface @GRAPH@\n"
        "IgnoreTerm pipe P\nNormalize on\n",
    )
    assert main(["fit", str(script)]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    assert re.search(
        r"fit: fit\.db run \d+ PE \d: with Normalize on, term \S+ \(\S+\) divided "
        r"by the measured time \S+ s overflows",
        err,
    ), err
    assert len(err.strip().splitlines()) == 1, err
