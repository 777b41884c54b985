"""One validation of numbers: sweep specs, options, gate configurations, model files and the
runtime's settings refuse non-finite and out-of-range values with a located error (settings:
the promised warning and the default), never a traceback, a silent wrap or a created file."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time

import numpy as np
import pytest
from faults_helpers import assert_one_line_error, run_mprof
from hypothesis import given, settings
from hypothesis import strategies as st

from mprof.errors import MprofError
from mprof.numbers import check_number, parse_number

NON_FINITE = [math.nan, math.inf, -math.inf]


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e6, 1e6), st.floats(0, 1e6))
@settings(max_examples=300, deadline=None)
def test_check_number_accepts_exactly_finite_values_in_range(value, low, width):
    high = low + width
    ok = math.isfinite(value) and low <= value <= high
    try:
        got = check_number(value, "x", low=low, high=high)
    except MprofError as exc:
        assert not ok, (value, low, high)
        assert str(exc).startswith("x: expected a number")
    else:
        assert ok and got == value


@pytest.mark.parametrize(
    "text",
    ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "0x10", "1_000", "", " ", "2,5", "five"],
)
def test_parse_number_refuses_words_and_non_finite_text(text):
    with pytest.raises(MprofError, match="^opt: expected"):
        parse_number(text, "opt")


def test_parse_number_integers_and_ranges():
    assert parse_number("12", "n", integer=True) == 12
    assert parse_number("1e3", "n", integer=True) == 1000
    with pytest.raises(MprofError, match="whole number"):
        parse_number("1.5", "n", integer=True)
    with pytest.raises(MprofError, match=r"in \(0, 0.5\)"):
        parse_number("0.5", "alpha", low=0, high=0.5, open_low=True, open_high=True)


# -- sweep specs --------------------------------------------------------------------------

SPEC = """program = "{program}"
database = "out.db"
npes = {npes}
timeout_s = {timeout}

[params]
n = {n}
"""


def _spec(tmp_path, **kw):
    values = {"program": "/bin/true", "npes": "[1]", "timeout": "30", "n": "[1, 2]", **kw}
    path = tmp_path / "sweep.toml"
    path.write_text(SPEC.format(**values))
    return path


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "0", "-1", "1e400", "true", '"5"'])
def test_sweep_timeout_must_be_a_positive_finite_number(tmp_path, timeout):
    proc = run_mprof("bench", _spec(tmp_path, timeout=timeout))
    assert_one_line_error(proc, f"{tmp_path / 'sweep.toml'}:4:13: timeout_s: expected a number")
    assert not (tmp_path / "out.db").exists()


@pytest.mark.parametrize("n", ["[1, nan]", "[inf]", "[1.0, -inf]"])
def test_sweep_parameters_must_be_finite(tmp_path, n):
    proc = run_mprof("bench", _spec(tmp_path, n=n))
    assert_one_line_error(proc, "sweep.toml:7:5: params.n", "finite")
    assert not (tmp_path / "out.db").exists()


@pytest.mark.parametrize(
    "field,value,where",
    [
        ("n", "[1, 2, 1]", "params.n: value 1 is repeated"),
        ("n", '["a", "b", "a"]', "params.n: value 'a' is repeated"),
        ("npes", "[2, 2]", "npes: value 2 is repeated"),
        ("npes", "[0]", "npes: expected a whole number in [1, 4096], got 0"),
        ("npes", "[1e9]", "npes: expected whole numbers"),
        ("npes", "[5000]", "npes: expected a whole number in [1, 4096]"),
    ],
)
def test_sweep_axes_are_checked_before_anything_runs(tmp_path, field, value, where):
    proc = run_mprof("bench", _spec(tmp_path, **{field: value}))
    assert_one_line_error(proc, where)
    assert not (tmp_path / "out.db").exists()


def test_repeated_environment_values_are_refused(tmp_path):
    path = _spec(tmp_path)
    path.write_text(path.read_text() + '\n[env]\nMPROF_AGG_BYTES = [0, "0"]\n')
    proc = run_mprof("bench", path)
    assert_one_line_error(proc, "sweep.toml:10:19: env.MPROF_AGG_BYTES: value '0' is repeated")


def test_an_absurd_grid_is_counted_not_built(tmp_path):
    axis = "[" + ", ".join(str(i) for i in range(1000)) + "]"
    path = tmp_path / "grid.toml"
    path.write_text(
        'program = "/bin/true"\ndatabase = "out.db"\nnpes = [1]\n'
        f"repetitions = 1000\n[params]\na = {axis}\nb = {axis}\n"
    )
    start = time.monotonic()
    proc = run_mprof("bench", path)
    assert time.monotonic() - start < 30
    assert_one_line_error(
        proc, "1,000,000,000 points", "1000 repetitions x 1000 params.a x 1000 params.b", "split it"
    )
    assert not (tmp_path / "out.db").exists()


# -- options and the gate's configuration -------------------------------------------------


@pytest.fixture
def gate_dbs(tmp_path):
    from gate_synth import write_db

    rng = np.random.default_rng(11)
    return write_db(tmp_path / "a.db", rng, reps=4), write_db(tmp_path / "b.db", rng, reps=4)


@pytest.mark.parametrize("option", ["--alpha", "--tolerance"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-0.1", "NaN", "1e999"])
def test_gate_options_refuse_non_finite_and_out_of_range(gate_dbs, option, value):
    base, cand = gate_dbs
    proc = run_mprof("gate", "--baseline", base, "--candidate", cand, f"{option}={value}")
    assert_one_line_error(proc, f"{option}: expected a number")
    if value != "-0.1":
        assert "only finite numbers" in proc.stderr


@pytest.mark.parametrize("key", ["tolerance", "alpha"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_gate_configuration_refuses_non_finite(gate_dbs, tmp_path, key, value):
    base, cand = gate_dbs
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f"[defaults]\n{key} = {value}\n")
    proc = run_mprof("gate", "--baseline", base, "--candidate", cand, "--config", cfg)
    assert_one_line_error(proc, f"defaults.{key}", "finite")


@pytest.mark.parametrize(
    "args",
    [
        ["report", "RUN", "--min-fraction", "nan"],
        ["report", "RUN", "--digits", "inf"],
        ["report", "RUN", "--roots", "1e99"],
        ["db", "show", "DB", "nan"],
    ],
)
def test_numeric_options_of_other_commands(tmp_path, args):
    proc = run_mprof(*[str(tmp_path / a) if a in ("RUN", "DB") else a for a in args])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "expected" in proc.stderr


# -- model files ---------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
@pytest.mark.parametrize("field", ["value", "halfwidth"])
def test_model_files_with_non_finite_parameters_are_refused_on_load(
    model_and_run, tmp_path, token, field
):
    model, run = model_and_run
    text = model.read_text()
    m = re.search(rf'"{field}": ([-0-9.e]+)', text)
    bad = tmp_path / "bad.json"
    bad.write_text(text[: m.start(1)] + token + text[m.end(1) :])
    line = text[: m.start(1)].count("\n") + 1
    column = m.start(1) - text.rfind("\n", 0, m.start(1))
    place = f"{bad}:{line}:{column}: {token} is not a finite number"
    assert_one_line_error(run_mprof("report", run, "--model", bad), place)
    assert_one_line_error(run_mprof("model", "show", bad), place)
    assert_one_line_error(run_mprof("model", "export-c", bad, "-o", tmp_path / "c"), place)
    assert not (tmp_path / "c").exists()


def test_gate_with_a_non_finite_model_is_an_error_not_a_pass(gate_dbs, model_and_run, tmp_path):
    model, _ = model_and_run
    bad = tmp_path / "bad.json"
    bad.write_text(re.sub(r'"value": [-0-9.e]+', '"value": NaN', model.read_text(), count=1))
    base, _ = gate_dbs
    proc = run_mprof("gate", "--baseline", base, "--candidate", base, "--model", bad)
    assert_one_line_error(proc, "is not a finite number")


def test_a_model_built_in_memory_with_non_finite_values_is_refused(model_and_run):
    from mprof.model import Model

    model, _ = model_and_run
    data = json.loads(model.read_text())
    name = next(iter(data["parameters"]))
    for bad in NON_FINITE:
        data["parameters"][name]["value"] = bad
        with pytest.raises(MprofError, match=f"parameters.{name}.value: expected a number"):
            Model.from_json(data, "m")


# -- the runtime's settings ----------------------------------------------------------------


SETTINGS = [  # (variable, bad value, key in the profile's settings, its default)
    ("MPROF_AGG_BYTES", "1e20", "agg_bytes", 4096),
    ("MPROF_AGG_BYTES", "nan", "agg_bytes", 4096),
    ("MPROF_AGG_BYTES", "-inf", "agg_bytes", 4096),
    ("MPROF_AGG_BYTES", "0x100", "agg_bytes", 4096),
    ("MPROF_FLUSH_FIBERS", "1e10", "flush_fibers", 64),
    ("MPROF_FLUSH_FIBERS", "4294967297", "flush_fibers", 64),
    ("MPROF_FLUSH_FIBERS", "2.5", "flush_fibers", 64),
    ("MPROF_FLUSH_DELAY_US", "inf", "flush_delay_us", 1000),
    ("MPROF_FEED_US", "nan", "feed_us", 20),
    ("MPROF_FEED_US", "-5", "feed_us", 20),
    ("MPROF_SMALL_BYTES", "nan", "small_bytes", 0),
    ("MPROF_SPIN", "1e300", "spin", 2000),
    ("MPROF_PROGRESS_TIMEOUT", "nan", None, 300),
    ("MPROF_IDLE_TIMEOUT", "inf", None, 30),
    ("MPROF_WORKERS", "1e12", None, None),
    ("MPROF_STACK_KB", "nan", None, 8192),
]


@pytest.mark.parametrize("name,value,key,default", SETTINGS)
def test_runtime_settings_warn_and_use_the_default(build_dir, tmp_path, name, value, key, default):
    out = tmp_path / "run.json"
    env = {**os.environ, name: value, "MPROF_OUT": str(out), "MPROF_PES": "2"}
    proc = subprocess.run(
        [str(build_dir / "benchmarks/micro/rt_workload"), "2", "100", "10", "16"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("mprof: ignoring")]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith(f"mprof: ignoring {name}={value} (expected ")
    if default is not None:
        assert warnings[0].endswith(f"using the default {default}")
    if key is not None:
        assert json.loads(out.read_text())["settings"][key] == default


def test_a_huge_setting_value_is_cut_in_the_warning(build_dir, tmp_path):
    env = {**os.environ, "MPROF_AGG_BYTES": "9" * 100_000, "MPROF_PES": "2"}
    proc = subprocess.run(
        [str(build_dir / "benchmarks/micro/rt_workload"), "2", "10", "10", "16"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "ignoring" in x]
    assert len(line) < 300 and "..." in line


# -- properties over every float -----------------------------------------------------------


def _toml_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


@given(st.floats(allow_nan=True, allow_infinity=True))
@settings(max_examples=200, deadline=None)
def test_any_float_timeout_is_accepted_exactly_when_finite_and_positive(tmp_path_factory, x):
    from mprof.bench.spec import load_spec

    folder = tmp_path_factory.mktemp("spec")
    path = _spec(folder, timeout=_toml_float(x))
    ok = math.isfinite(x) and 0 < x <= 1e7
    try:
        spec = load_spec(path)
    except MprofError as exc:
        assert not ok, (x, str(exc))
        assert "timeout_s: expected a number" in str(exc)
    else:
        assert ok and spec.timeout_s == x


@given(st.floats(allow_nan=True, allow_infinity=True))
@settings(max_examples=100, deadline=None)
def test_any_float_parameter_value_loads_exactly_when_finite(tmp_path_factory, x):
    from report_helpers import make_model

    from mprof.model import load_model

    folder = tmp_path_factory.mktemp("model")
    path = folder / "m.json"
    make_model().save(path)
    data = json.loads(path.read_text())
    name = next(iter(data["parameters"]))
    token = (
        json.dumps(x)
        if math.isfinite(x)
        else _toml_float(x).replace("nan", "NaN").replace("inf", "Infinity")
    )
    text = json.dumps(data).replace(
        json.dumps({"value": data["parameters"][name]["value"]})[1:-1], f'"value": {token}', 1
    )
    path.write_text(text)
    try:
        model = load_model(path)
    except MprofError as exc:
        assert not math.isfinite(x), (x, str(exc))
        assert re.search(r"m\.json:\d+:\d+: .* is not a finite number", str(exc))
    else:
        assert math.isfinite(x) and model.values[name] == x
