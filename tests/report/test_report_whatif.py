"""`mprof report RUN.json --model MODEL.json --what-if NAME=FACTORx`: the model's prediction
with a parameter or a statistic changed, per category, with the band of each change."""

import json
import math

import pytest
from report_helpers import HALF, PARAMS, T_Q, cpu_model, make_run, with_categories

from mprof.cli import main
from mprof.report.build import build_report
from mprof.report.html import render_html
from mprof.report.text import format_text, report_json

NPES = 4
MSGS = NPES * (100 + 50)  # MsgSent + FlowMsgSent summed over PEs (report_helpers.pe_stats)


@pytest.fixture(scope="module")
def model():
    return cpu_model()


@pytest.fixture(scope="module")
def doc():
    return with_categories(make_run(NPES))


def test_scaling_a_parameter_changes_its_category_with_its_band(doc, model):
    report = build_report(doc, model, what_if=["rts:Msg=0.5x"])
    w = report.what_if
    assert w.now_s == pytest.approx(report.model_total, rel=1e-12)
    (alpha,) = w.categories  # only COMM_ALPHA prices Msg
    assert alpha.name == "rts:COMM_ALPHA"
    assert alpha.change_s == pytest.approx(-0.5 * PARAMS["rts:Msg"] * MSGS, rel=1e-12)
    # a diagonal covariance: the band of the change is |change| times Msg's relative band
    assert alpha.halfwidth == pytest.approx(0.5 * MSGS * HALF["rts:Msg"], rel=1e-9)
    assert w.change_s == pytest.approx(alpha.change_s, rel=1e-12)
    assert w.new_s == pytest.approx(report.model_total + alpha.change_s, rel=1e-12)
    # the predicted time's band: the new total's parameter variance plus residual scatter
    assert w.new_halfwidth > w.change_halfwidth and math.isfinite(w.new_halfwidth)
    assert "rts:THREAD" in w.unchanged


def test_setting_a_parameter_equals_scaling_it(doc, model):
    a = build_report(doc, model, what_if=["rts:Msg=2x"]).what_if
    b = build_report(doc, model, what_if=[f"rts:Msg={2 * PARAMS['rts:Msg']}"]).what_if
    assert a.new_s == pytest.approx(b.new_s, rel=1e-12)
    assert a.categories[0].halfwidth == pytest.approx(b.categories[0].halfwidth, rel=1e-9)


def test_scaling_a_statistic_reprices_through_the_interface(doc, model):
    w = build_report(doc, model, what_if=["graph.NOp=2x", "rts:Msg=0.5x"]).what_if
    op = next(c for c in w.categories if c.name == "graph:OP")
    assert op.change_s == pytest.approx(PARAMS["graph:Op"] * 500 * NPES, rel=1e-12)
    assert op.halfwidth == pytest.approx(500 * NPES * HALF["graph:Op"], rel=1e-9)
    assert [c.name for c in w.categories] == ["graph:OP", "rts:COMM_ALPHA"]  # by |change|
    assert w.change_s == pytest.approx(sum(c.change_s for c in w.categories), rel=1e-12)
    assert w.title == "graph.NOp = 2x, rts:Msg = 0.5x"


def test_text_json_and_html(doc, model):
    report = build_report(doc, model, what_if=["rts:Msg=0.5x"])
    lines = format_text(report).splitlines()
    head = lines.index("*** What if rts:Msg = 0.5x (model, CPU seconds summed over PEs) ***")
    assert head > lines.index("*** Model quality ***")
    assert lines[head + 2].startswith("  rts:COMM_ALPHA")
    assert "-0.001 s +-9e-06 (-" in lines[head + 2]
    assert lines[head + 3].startswith("  total (model)")
    w = report.what_if
    assert lines[head + 4] == (
        f"  predicted time {w.new_s:.3f} s +-{w.new_halfwidth:.3f} (90 % "
        f"prediction band); measured now {w.measured_s:.3f} s"
    )
    data = json.loads(json.dumps(report_json(report)))["what_if"]
    assert data["changes"] == [
        {"name": "rts:Msg", "kind": "parameter", "factor": 0.5, "value": None}
    ]
    assert data["categories"][0]["change_s"] == pytest.approx(w.categories[0].change_s)
    html = render_html(report)
    assert html.index('id="quality"') < html.index('id="what-if"') < html.index('id="costs"')
    assert "<td>rts:COMM_ALPHA</td>" in html
    assert report_json(build_report(doc, model))["what_if"] is None


@pytest.mark.parametrize(
    "change, message",
    [
        ("rts:Msgs=0.5x", "the model has no parameter 'rts:Msgs'; did you mean 'rts:Msg'?"),
        ("rts.MsgSnt=2x", "module rts has no statistic 'MsgSnt'; did you mean 'rts.MsgSent'?"),
        ("nothing=2x", "'nothing' is neither a parameter of the model"),
        ("rts:Msg=fast", "'fast' is not a number or a factor like 0.5x"),
        ("rts:Msg", "expected NAME=FACTORx or NAME=VALUE"),
        ("rts:Msg=infx", "is not finite"),
        ("rts:P=2x", "'rts:P' is ignored by the model"),
        ("rts.MsgSent=-1", "rts.MsgSent is a count (u64) and cannot be negative"),
        ("rts.MsgSent=-0.5x", "rts.MsgSent is a count (u64) and cannot be negative"),
    ],
)
def test_bad_changes_are_one_line_errors(tmp_path, capsys, change, message):
    model_path = tmp_path / "m.json"
    cpu_model().save(model_path)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(with_categories(make_run(NPES))))
    assert main(["report", str(run), "--model", str(model_path), "--what-if", change]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mprof: --what-if") and message in err and err.count("\n") == 1


def test_what_if_needs_a_model_and_one_run(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(with_categories(make_run(NPES))))
    assert main(["report", str(run), "--what-if", "rts:Msg=0.5x"]) == 2
    assert "--what-if needs a model" in capsys.readouterr().err
    assert main(["report", str(run), str(run), "--what-if", "rts:Msg=0.5x"]) == 2
    assert "--what-if applies to one run" in capsys.readouterr().err


def test_cli_prints_the_prediction(tmp_path, capsys):
    model_path = tmp_path / "m.json"
    cpu_model().save(model_path)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(with_categories(make_run(NPES))))
    assert (
        main(
            [
                "report",
                str(run),
                "--model",
                str(model_path),
                "--format",
                "text",
                "--what-if",
                "rts:Msg=0.5x",
                "--what-if",
                "graph.NOp=2x",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "*** What if rts:Msg = 0.5x, graph.NOp = 2x (model, CPU seconds summed over PEs) ***" in out
    )
    assert T_Q > 0  # the helpers' quantile is the model's
