"""mprof report: Cost Profile numbers, bands and verdict, latency sums, outputs and CLI."""

import io
import json
import math
import re

import pytest
from report_helpers import (
    FIG_4_15,
    HALF,
    PARAMS,
    T_Q,
    expected_costs,
    lat,
    lat_text,
    make_model,
    make_run,
)
from rich.console import Console

from mprof.cli import main
from mprof.report.build import build_report
from mprof.report.terminal import print_rich
from mprof.report.text import format_text, report_json

NPES = 4


def summed_expected():
    out = {}
    for pe in range(NPES):
        for k, v in expected_costs(pe).items():
            out[k] = out.get(k, 0.0) + v
    return out


@pytest.fixture(scope="module")
def model():
    return make_model()


@pytest.fixture(scope="module")
def report(model):
    return build_report(make_run(NPES), model)


def test_cost_profile_numbers_are_summed_over_pes(report):
    want = summed_expected()
    got = {
        f"{oc.module}:{c.name}": c.seconds
        for oc in report.objects
        if oc.modelled
        for c in oc.categories
    }
    assert got.keys() == want.keys()  # STARTUP/COMM_LOCAL of rts: every term ignored -> hidden
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12), k
    assert report.model_total == pytest.approx(sum(want.values()), rel=1e-12)
    assert report.measured_total == pytest.approx(sum(want.values()), rel=1e-12)
    assert [(oc.id, oc.module) for oc in report.objects] == [
        (0, "rts"),
        (1, "graph"),
        (2, "hashtable"),
        (3, "pipe"),
    ]


def test_category_bands_come_from_the_covariance(report):
    # Diagonal covariance: a one-term category's half width is |value| * relative half width.
    comp = next(c for oc in report.objects if oc.module == "pipe" for c in oc.categories)
    assert comp.halfwidth == pytest.approx(comp.seconds * HALF["pipe:Comp"] / PARAMS["pipe:Comp"])
    # COMM_ALPHA has two terms: half widths add in quadrature.
    rts = next(oc for oc in report.objects if oc.module == "rts")
    alpha = next(c for c in rts.categories if c.name == "COMM_ALPHA")
    parts = [0.01 * PARAMS["rts:RemoteOp"] * 200 * NPES, 0.01 * PARAMS["rts:Msg"] * 150 * NPES]
    assert alpha.halfwidth == pytest.approx(math.hypot(*parts))


def test_model_band_and_verdict(report, model):
    assert report.explained is True
    assert "inside the model's 90 % band" in report.verdict()
    # Prediction band: parameters plus residual scatter sigma * t_model per PE (normalised fit).
    per_pe = [sum(expected_costs(pe).values()) for pe in range(NPES)]
    resid = 0.02**2 * sum(t * t for t in per_pe)
    assert report.band_halfwidth == pytest.approx(
        T_Q * math.sqrt((report.param_halfwidth / T_Q) ** 2 + resid), rel=1e-9
    )


@pytest.mark.parametrize("scale,side", [(1.3, "above"), (0.7, "below")])
def test_out_of_band_run_is_not_explained(model, scale, side):
    report = build_report(make_run(NPES, scale=scale), model)
    assert report.explained is False
    text = format_text(report)
    assert "WARNING: the model does not explain this run: the measured total" in text
    assert side in report.verdict()
    assert report_json(report)["explained"] is False


def test_no_degrees_of_freedom_means_unknown(model):
    m = make_model(dof=0)
    report = build_report(make_run(NPES), m)
    assert report.explained is None and report.band is None
    assert "unknown whether the model explains" in report.verdict()


def test_text_report_shape(report):
    text = format_text(report)
    lines = text.splitlines()
    i = lines.index("*** Cost Profile ***")
    want = summed_expected()
    assert re.fullmatch(
        r"Id 0: THREAD= *[\d.]+ IDLE= *[\d.]+ COMM_ALPHA= *[\d.]+ "
        r"COMM_BETA= *[\d.]+",
        lines[i + 1],
    )
    assert lines[i + 3] == f"Id 3: COMP={want['pipe:COMP']:7.3f}"
    total = sum(want.values())
    assert lines[i + 4] == f"Time: Model={total:7.3f}, Total={total:7.3f}"
    assert lines[i + 5] == "Unmodelled: Id 2 (hashtable)"
    assert (
        f"consume = {lat_text(134.063)} s -- DEQ: {lat_text(92.7)} s produce: {lat_text(41.363)} s"
    ) in lines
    assert "*** Observed Latency ***" in lines and "*** Critical Latency ***" in lines
    crit = lines[lines.index("*** Critical Latency ***") + 1 :]
    assert crit[:2] == [
        f"ENQ = {lat_text(47.337)} s -- DEQ: {lat_text(47.337)} s",
        f"DEQ = {lat_text(92.7)} s -- ENQ: {lat_text(92.7)} s",
    ]
    assert f"1. ENQ -> DEQ -> consume = {lat_text(92.7)} s" in text
    assert f"2. DEQ -> ENQ -> produce -> consume = {lat_text(41.363)} s" in text


def test_per_pe_text(report):
    text = format_text(report, per_pe=True)
    share = lat(134.063) / (NPES - 1)
    assert (
        f"PE1: consume = {share:.3f} s -- DEQ: {lat(92.7) / 3:.3f} s produce: "
        f"{lat(41.363) / 3:.3f} s"
    ) in text
    assert "PE0: consume" not in text  # PE 0 has no latency rows
    assert re.search(r"PE3: Model= *[\d.]+ \+-[\d.]+, Total= *[\d.]+, Idle= *0\.040", text)


def test_latency_sums(report):
    consume = report.latency[-1]
    assert consume.access == "pipe:consume"
    assert consume.observed_s == pytest.approx(lat(134.063))
    assert consume.critical_s == 0
    assert sum(a.observed_s for a in report.latency) == pytest.approx(
        sum(lat(o) for _, _, o, _ in FIG_4_15)
    )
    assert sum(a.critical_s for a in report.latency_per_pe[2]) == pytest.approx(
        lat(47.337 + 92.7) / 3
    )


def test_json_document(report):
    doc = json.loads(json.dumps(report_json(report)))
    assert doc["schema"] == "mprof.report"
    assert doc["unmodelled"] == ["Id 2 (hashtable)"]
    pipe = next(o for o in doc["objects"] if o["module"] == "pipe")
    assert pipe["categories"]["COMP"]["seconds"] == pytest.approx(summed_expected()["pipe:COMP"])
    assert [c["chain"] for c in doc["chains"]["observed"]] == [
        "ENQ -> DEQ -> consume",
        "DEQ -> ENQ -> produce -> consume",
    ]
    assert len(doc["pes"]) == NPES and doc["pes"][0]["model_s"] > 0
    assert {e["enabler"] + ">" + e["access"] for e in doc["graph"]["edges"]} == {
        f"{e}>{a}" for a, e, _, _ in FIG_4_15
    }


def test_rich_tables(report):
    buf = io.StringIO()
    print_rich(report, per_pe=True, console=Console(file=buf, width=160, color_system=None))
    out = buf.getvalue()
    assert "Cost Profile" in out and "COMM_ALPHA" in out and "Time per PE" in out
    assert "ENQ -> DEQ -> consume" in out and lat_text(134.063) in out


def test_report_without_model_shows_statistics_and_latency():
    report = build_report(make_run(NPES))
    text = format_text(report)
    assert "*** Cost Profile ***" not in text
    assert "Id 1 (graph): P=4 EltSize=400 EdgeCap=60" in text
    assert (
        f"consume = {lat_text(134.063)} s -- DEQ: {lat_text(92.7)} s produce: {lat_text(41.363)} s"
    ) in text
    assert report.verdict() is None and report_json(report)["model_total_s"] is None


def test_run_without_latency_rows(model):
    text = format_text(build_report(make_run(NPES, latency=False), model))
    assert "(the run profile has no latency rows)" in text
    assert "Time: Model=" in text


def test_missing_interface_makes_a_module_unmodelled(tmp_path):
    m = make_model()
    m.interfaces["graph"].path = str(tmp_path / "gone.perf")
    report = build_report(make_run(NPES, extra_module=False), m)
    assert report.unmodelled == ["Id 1 (graph)"]
    assert any("gone.perf" in w for w in report.warnings)


def test_cli(tmp_path, capsys, model):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(make_run(NPES)))
    model_path = tmp_path / "pipe.model.json"
    model.save(model_path)
    html = tmp_path / "out" / "report.html"
    assert main(["report", str(run), "--model", str(model_path), "--html", str(html)]) == 0
    out = capsys.readouterr().out  # not a terminal: plain text
    assert out.startswith("% pipe 4 1000") and "Time: Model=" in out
    assert html.exists() and "<svg" in html.read_text()
    assert main(["report", str(run), "--model", str(model_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["explained"] is True
    assert main(["report", str(run), "--format", "rich", "--per-pe"]) == 0
    assert "Latency per access" in capsys.readouterr().out
    assert main(["report", str(run), "--html", str(tmp_path / "folder") + "/"]) == 0
    assert (tmp_path / "folder" / "run.html").exists()  # a folder gets RUN's name
    capsys.readouterr()
    assert main(["report"]) == 2
    assert main(["report", str(run), "--model", str(tmp_path / "none.json")]) == 2
    assert "cannot read model" in capsys.readouterr().err


def test_cli_copies_the_c_helper(tmp_path, capsys):
    assert main(["report", "--c-helper", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "mprof_report.h").exists()
    assert (tmp_path / "c" / "mprof_report.c").exists()
    # a run profile beside it would be read by nothing: an error, and nothing copied
    capsys.readouterr()
    assert main(["report", "--c-helper", str(tmp_path / "d"), str(tmp_path / "run.json")]) == 2
    assert "--c-helper DIR only copies the C helper" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_per_pe_table_keeps_to_one_measure():
    """With a CPU-time model the per-PE line's idle is the idle loop's CPU time beside the
    CPU total, not the wall-clock idle (which can exceed it); the heading names the measure."""
    import copy

    model = make_model()
    model = copy.copy(model)
    model.settings = dict(model.settings, measure="cpu")
    doc = make_run(NPES)
    doc["schema_version"] = 2
    for pe in doc["pes"]:
        pe["idle_s"] = 0.5  # wall-clock idle, larger than the CPU time below
        pe["cpu_s"], pe["idle_cpu_s"] = 0.25, 0.0125
    report = build_report(doc, model)
    text = format_text(report, per_pe=True)
    assert "*** Time per PE (CPU seconds) ***" in text
    line = next(x for x in text.splitlines() if x.startswith("PE3: Model="))
    assert re.search(r"Total= *0\.250, Idle= *0\.013", line), line
    assert report_json(report)["pes"][3]["measured_idle_s"] == 0.0125
    plain = format_text(build_report(make_run(NPES), make_model()), per_pe=True)
    assert "*** Time per PE (wall-clock seconds) ***" in plain


def test_messages_per_operation_and_why_the_buffers_went(model):
    """The runtime's remote operations per message, and its aggregation buffers by the rule
    that sent them (rts Agg statistics), summed over PEs, in the text, JSON and HTML."""
    doc = make_run(NPES)
    for pe in doc["pes"]:
        rts = next(o for o in pe["objects"] if o["module"] == "rts")
        rts["stats"].update(
            MsgSent=100,
            FastMsgSent=0,
            RemoteOp=2000,
            AggHalf=60,
            AggFed=30,
            AggDrain=4,
            AggFull=0,
            ThreadArrived=2000,
            ThreadCarried=1900,
        )
    report = build_report(doc, model)
    m = report.messages
    assert (m.remote_ops, m.messages, m.aggregated) == (2000 * NPES, 100 * NPES, 94 * NPES)
    assert m.why == [("AggHalf", 60 * NPES), ("AggFed", 30 * NPES), ("AggDrain", 4 * NPES)]
    text = format_text(report)
    lines = text.splitlines()
    i = lines.index("*** Messages (summed over PEs) ***")
    assert (
        lines[i + 1] == f"  {2000 * NPES} remote operations in {100 * NPES} messages "
        "(20.0 per message)"
    )
    assert lines[i + 2].startswith(
        f"  {94 * NPES} aggregation buffers went: {60 * NPES} half full at a communication period, "
    )
    assert lines[i + 2].endswith(f"; {6 * NPES} messages went at once")
    assert (
        lines[i + 3] == f"  {1900 * NPES} of the {2000 * NPES} arrived records ran from "
        "their message buffers (carriers)"
    )
    assert (
        lines.index("*** Idle (wall-clock seconds summed over PEs) ***")
        < i
        < lines.index("*** Why the PEs waited (observed latency) ***")
    )
    j = report_json(report)["messages"]
    assert j["per_message"] == 20.0 and j["why"]["AggFed"] == 30 * NPES
    assert (j["arrived"], j["carried"]) == (2000 * NPES, 1900 * NPES)
    from mprof.report.html import render_html

    html = render_html(report)
    page = html[: html.index("<pre")] if "<pre" in html else html  # before the text copy
    assert "<h3>Messages (summed over PEs)</h3>" in page
    assert f"{30 * NPES} to a PE that waited for work" in page
    assert "arrived records ran from their message buffers" in page

    # a run without remote operations has no such section; one made before the runtime
    # counted the reasons has the first line only
    for pe in doc["pes"]:
        rts = next(o for o in pe["objects"] if o["module"] == "rts")
        for k in ("AggHalf", "AggFed", "AggDrain", "AggFull", "ThreadCarried"):
            del rts["stats"][k]
    text = format_text(build_report(doc, model))
    assert "remote operations in" in text and "aggregation buffers went" not in text
    assert "arrived records" not in text
    for pe in doc["pes"]:
        next(o for o in pe["objects"] if o["module"] == "rts")["stats"]["RemoteOp"] = 0
    assert "*** Messages" not in format_text(build_report(doc, model))
