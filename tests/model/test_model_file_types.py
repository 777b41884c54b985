"""A model file whose fields have the wrong types is refused when it is read, naming the file
and the field's path, by every command that reads it: never a TypeError where the field is
first used, nor "malformed model file (TypeError: ...)" in Python's words."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))

from mprof.cli import main  # noqa: E402
from mprof.errors import MprofError  # noqa: E402
from mprof.model import Model  # noqa: E402


def damaged(model: Path, change) -> Path:
    data = json.loads(model.read_text())
    change(data)
    bad = model.with_name("bad.json")
    bad.write_text(json.dumps(data))
    return bad


def setter(path: str, value):
    def change(data):
        *parents, last = path.split(".")
        for key in parents:
            data = data[key]
        data[last] = value

    return change


CASES = [
    ("quality.dof", "x", "quality.dof: expected a number >= 0, got 'x'"),
    ("quality.residual_se", "x", "quality.residual_se: expected a number >= 0, got 'x'"),
    ("quality.chi_square", "x", "quality.chi_square: expected a number >= 0, got 'x'"),
    ("quality.dof", -3, "quality.dof: expected a number >= 0, got -3"),
    ("quality.rank", 1.5, "quality.rank: expected a whole number >= 0, got 1.5"),
    ("quality.singular_values", [1, "x"], "quality.singular_values[1]: expected a number"),
    ("quality.lack_of_fit", {"f": "x"}, "quality.lack_of_fit.f: expected a number"),
    ("quality", None, "quality: expected an object, got null"),
    ("flags", None, "flags: expected an object, got null"),
    ("settings", None, "settings: expected an object, got null"),
    ("parameters", [1, 2], "parameters: expected an object, got [1, 2]"),
    ("settings.normalize", "yes", "settings.normalize: expected true or false, got 'yes'"),
    ("flags.rank_deficient_terms", [1], "flags.rank_deficient_terms: expected a list of lists"),
    ("fitted", None, "fitted: expected a list of strings, got null"),
    ("ignored", "rts:P", "ignored: expected a list of strings, got 'rts:P'"),
    ("covariance", [[1.0]], "covariance: expected a 9 x 9 matrix"),
    ("interfaces", [], "interfaces: expected an object, got []"),
    (
        "interfaces.rts.categories",
        {"X": "Msg"},
        "interfaces.rts.categories: expected an object of lists of strings",
    ),
    ("interfaces.rts.terms", None, "interfaces.rts.terms: expected a list of strings, got null"),
    # values no fit writes: the field is named here, not a measure unknown later in a report
    ("settings.measure", "wall", "settings.measure: expected one of elapsed, cpu, got 'wall'"),
    ("settings.granularity", "x", "settings.granularity: expected one of pe, run, got 'x'"),
    ("settings.replicates", "best", "settings.replicates: expected one of all, median, min"),
    ("settings.confidence", 2.0, "settings.confidence: expected a level in (0, 1), got 2.0"),
]


@pytest.mark.parametrize(
    "path, value, message", CASES, ids=[c[0] + "=" + repr(c[1]) for c in CASES]
)
def test_wrong_types_are_named_by_field(model_and_run, tmp_path, capsys, path, value, message):
    model, run = model_and_run
    bad = damaged(model, setter(path, value))
    for args in (
        ["report", "--model", str(bad), str(run)],
        ["model", "show", str(bad)],
        ["model", "export-c", "-o", str(tmp_path / "c"), str(bad)],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(f"mprof: {bad}: ") and message in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert "Error" not in err and "malformed" not in err, err
    assert not (tmp_path / "c").exists()


def _drop_parameter(data):
    del data["parameters"][data["fitted"][0]]


def _drop_halfwidth(data):
    del data["parameters"][data["fitted"][0]]["halfwidth"]


@pytest.mark.parametrize(
    "change, message",
    [
        (_drop_parameter, "parameters: missing '{p}' (listed in fitted)"),
        (_drop_halfwidth, "parameters.{p}: missing 'halfwidth'"),
    ],
    ids=["parameter", "halfwidth"],
)
def test_a_fitted_parameter_cut_from_the_file_is_named(
    model_and_run, tmp_path, capsys, change, message
):
    """Not a model that prices the term at nothing, nor an interval of nan."""
    model, run = model_and_run
    bad = damaged(model, change)
    message = message.format(p=json.loads(model.read_text())["fitted"][0])
    for args in (
        ["report", "--model", str(bad), str(run)],
        ["model", "show", str(bad)],
        ["model", "export-c", "-o", str(tmp_path / "c"), str(bad)],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(f"mprof: {bad}: ") and message in err, err
    assert not (tmp_path / "c").exists()


def test_a_parameter_entry_of_the_wrong_type(model_and_run):
    model, _ = model_and_run
    data = json.loads(model.read_text())
    name = next(iter(data["parameters"]))
    for entry, message in (
        (3.0, f"parameters.{name}: expected an object, got 3.0"),
        ({"value": 1.0, "halfwidth": "x"}, f"parameters.{name}.halfwidth"),
        ({"value": 1.0, "source": "guess"}, f"parameters.{name}.source"),
        ({"halfwidth": 1.0}, f"parameters.{name}: no 'value'"),
    ):
        data["parameters"][name] = entry
        with pytest.raises(MprofError, match=message.replace(".", r"\.")):
            Model.from_json(data, "m")


def _covariance(i, j, value):
    def change(data):
        data["covariance"][i][j] = value

    return change


def _rename_first_parameter(data):
    first = data["fitted"][0]
    data["parameters"]["nocolon"] = data["parameters"].pop(first)


@pytest.mark.parametrize(
    "change, message",
    [
        (_covariance(1, 1, -1.0), "covariance[1][1]: a variance cannot be negative, got -1.0"),
        (_covariance(2, 0, 5.0), "covariance: not symmetric ([2][0] = 5.0, [0][2] = "),
        (lambda d: d["fitted"].append(d["fitted"][0]), "fitted: rts:Thread named more than once"),
        (_rename_first_parameter, "parameters: 'nocolon' is no parameter name (module:Term)"),
        (
            lambda d: d["interfaces"].pop("pipe"),
            "parameters.pipe:Comp: the file carries no interface of module pipe",
        ),
    ],
    ids=["variance", "symmetry", "fitted-twice", "name", "interface"],
)
def test_a_matrix_or_names_no_fit_writes_are_refused(model_and_run, capsys, change, message):
    model, run = model_and_run
    bad = damaged(model, change)
    for args in (["report", "--model", str(bad), str(run)], ["model", "show", str(bad)]):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(f"mprof: {bad}: ") and message in err, err


def test_the_good_model_still_reads(model_and_run, capsys):
    model, run = model_and_run
    assert main(["model", "show", str(model)]) == 0
    assert main(["report", "--model", str(model), str(run)]) == 0


def test_null_quality_figures_are_shown_as_unknown(model_and_run, tmp_path, capsys):
    model, run = model_and_run
    bad = damaged(
        model,
        lambda d: d.__setitem__("quality", {"chi_square": None, "dof": None, "residual_se": None}),
    )
    assert main(["model", "show", str(bad)]) == 0
    assert "Chi-square: n/a" in capsys.readouterr().out
    assert main(["report", "--model", str(bad), str(run)]) == 0
    assert main(["model", "export-c", "-o", str(tmp_path / "c"), str(bad)]) == 0


def test_a_key_given_twice_is_an_error_at_its_place(model_and_run, tmp_path, capsys):
    """json would keep the second value silently: which parameters did the fit save?"""
    model, _ = model_and_run
    text = model.read_text()
    at = text.index('"parameters"')
    bad = tmp_path / "twice.json"
    bad.write_text(text[:at] + '"parameters": {},\n  ' + text[at:])
    assert main(["model", "show", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    line = text.count("\n", 0, at) + 2
    assert err.startswith(f'mprof: {bad}:{line}:3: key "parameters" appears twice'), err


def test_the_fits_rounding_in_a_covariance_is_no_error(model_and_run, capsys):
    """A variance that should be 0 may come out a hair below it, and two entries that should
    be equal may differ in their last bits: the file is read."""
    model, run = model_and_run

    def rounded(data):
        cov = data["covariance"]
        scale = max(abs(cov[i][i]) for i in range(len(cov)))
        i, j = [k for k in range(len(cov)) if cov[k][k] > 0][:2]  # two estimated parameters
        cov[j][i] = cov[i][j] * (1 + 1e-12) + 1e-13 * (cov[i][i] * cov[j][j]) ** 0.5
        zero = next(k for k in range(len(cov)) if cov[k][k] == 0 or k not in (i, j))
        cov[zero][zero] = -1e-12 * scale

    assert main(["model", "show", str(damaged(model, rounded))]) == 0
