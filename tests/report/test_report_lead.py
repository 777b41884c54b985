"""Reports lead with the finding: where the time went (by cost, with shares), the chain behind
the waits, then model quality; tables sorted by cost; units on every printed value; negative
costs visible; the dependence graph without isolated nodes or overlapping labels."""

import io
import json
import re

import pytest
from report_helpers import expected_costs, lat, lat_text, make_model, make_run
from rich.console import Console

from mprof.report.build import build_report
from mprof.report.html import _label_box, _overlaps, dependence_graph, render_html, stacked_costs
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
def report():
    return build_report(make_run(NPES), make_model())


def test_where_is_sorted_by_cost_with_shares_of_the_model_total(report):
    want = summed_expected()
    total = sum(want.values())
    got = [(r.name, r.seconds, r.share) for r in report.where]
    assert {n for n, _, _ in got} == set(want)
    assert [s for _, s, _ in got] == sorted((s for _, s, _ in got), reverse=True)
    for name, seconds, share in got:
        assert seconds == pytest.approx(want[name], rel=1e-12)
        assert share == pytest.approx(want[name] / total, rel=1e-12)
    assert sum(s for _, _, s in got) == pytest.approx(1.0)
    assert report.where_total == pytest.approx(report.model_total)
    seconds = [r.seconds for r in report.cost_rows]
    assert seconds == sorted(seconds, reverse=True) and len(seconds) == len(want)
    assert report.cost_rows[0].name == report.where[0].name


def test_where_sums_a_module_over_its_objects():
    doc = make_run(NPES)
    for pe in doc["pes"]:  # a second graph object with the same statistics
        twin = json.loads(json.dumps(next(o for o in pe["objects"] if o["module"] == "graph")))
        twin["id"] = 7
        pe["objects"].append(twin)
    report = build_report(doc, make_model())
    op = next(r for r in report.where if r.name == "graph:OP")
    assert op.seconds == pytest.approx(2 * summed_expected()["graph:OP"], rel=1e-12)
    assert sum(r.name == "graph:OP" for r in report.cost_rows) == 2  # one row per object


def test_text_leads_with_the_finding_then_keeps_the_paper_block(report):
    text = format_text(report)
    lines = text.splitlines()
    where = lines.index("*** Where the time went (model, seconds summed over PEs) ***")
    why = lines.index("*** Why the PEs waited (observed latency) ***")
    quality = lines.index("*** Model quality ***")
    cost = lines.index("*** Cost Profile ***")
    assert where < why < quality < cost
    end = next(i for i in range(where, why) if lines[i].startswith("  total"))
    rows = lines[where + 1 : end]
    want = summed_expected()
    total = sum(want.values())
    top = [r.name for r in report.where]
    for line, name in zip(rows[:5], top):
        m = re.fullmatch(r"  (\S+) +(-?[\d.]+) s +([\d.]+) %", line)
        assert m, line
        assert m.group(1) == name
        assert float(m.group(2)) == pytest.approx(want[name], abs=1e-3)
        assert float(m.group(3)) == pytest.approx(100 * want[name] / total, abs=0.05)
    assert len(rows) == 6 and re.fullmatch(rf"  {len(want) - 5} more +[\d.]+ s +[\d.]+ %", rows[-1])
    assert " s (model); measured " in lines[end]
    assert lines[end + 1] == "  (no measured category times in this profile)"
    assert lines[why + 1] == (
        f"consume waited {lat_text(134.063)} s; {lat_text(92.7)} s (69.1 %) "
        "along ENQ -> DEQ -> consume"
    )
    assert lines[quality + 1] == report.verdict()
    # the paper's block is unchanged and still parseable
    assert re.fullmatch(
        r"Id 0: THREAD= *[\d.]+ IDLE= *[\d.]+ COMM_ALPHA= *[\d.]+ "
        r"COMM_BETA= *[\d.]+",
        lines[cost + 1],
    )
    assert lines[cost + 4] == f"Time: Model={total:7.3f}, Total={total:7.3f}"


def test_every_latency_value_has_its_unit(report):
    lines = format_text(report).splitlines()
    obs = lines.index("*** Observed Latency ***")
    assert (
        f"consume = {lat_text(134.063)} s -- DEQ: {lat_text(92.7)} s produce: {lat_text(41.363)} s"
    ) in lines
    for line in lines[obs + 1 : lines.index("*** Critical Latency ***")]:
        assert re.fullmatch(r"\S+ = [\d.]+ s -- (\S+: [\d.]+ s ?)+", line), line
    assert (
        f"1. ENQ -> DEQ -> consume = {lat_text(92.7)} s  (edges: {lat_text(92.7)} "
        f"{lat_text(92.7)} s;"
    ) in "\n".join(lines)


def test_json_carries_the_lead(report):
    doc = json.loads(json.dumps(report_json(report)))
    shares = [w["share"] for w in doc["where"]]
    assert [w["seconds"] for w in doc["where"]] == sorted(
        (w["seconds"] for w in doc["where"]), reverse=True
    )
    assert sum(shares) == pytest.approx(1.0)
    assert doc["lead_chain"]["chain"] == "ENQ -> DEQ -> consume"
    assert doc["lead_chain"]["access_latency_s"] == pytest.approx(lat(134.063))


def test_rich_leads_with_the_finding_and_sorts_by_cost(report):
    buf = io.StringIO()
    print_rich(report, console=Console(file=buf, width=160, color_system=None))
    out = buf.getvalue()
    where, why = out.index("Where the time went"), out.index("Why the PEs waited")
    quality, costs = out.index("Model quality"), out.index("Cost Profile by cost")
    assert where < why < quality < costs < out.index("Latency per access")
    table = out[costs : out.index("Latency per access")]
    row = r"│ +\d+ │ \w+ +│ \w+ +│ +(-?[\d.]+) │"
    values = [float(v) for v in re.findall(row, table)]
    assert len(values) == len(summed_expected()) and values == sorted(values, reverse=True)
    assert re.search(r"│ +0 │ rts +│ IDLE +│ +[\d.]+ │ +[\d.]+ │ +\d+\.\d % │", table)
    lat = out[out.index("Latency per access") :]
    assert lat.index("consume") < lat.index("DEQ") < lat.index("ENQ")  # by observed latency


def test_rich_renders_from_the_report_alone(report, monkeypatch):
    """One pass over the Report: the terminal renderer calls no text or build helpers."""
    import mprof.report.build as build
    import mprof.report.terminal as terminal
    import mprof.report.text as text

    def boom(*args, **kwargs):
        raise AssertionError("the terminal renderer recomputed part of the report")

    plain = build_report(make_run(NPES))
    for module, name in (
        (text, "decimals_for"),
        (text, "raw_lines"),
        (build, "decimals_for"),
        (text, "format_text"),
        (build, "build_report"),
    ):
        monkeypatch.setattr(module, name, boom)
        monkeypatch.setattr(terminal, name, boom, raising=False)  # names it imported
    print_rich(plain, console=Console(file=io.StringIO(), width=160))
    print_rich(report, per_pe=True, console=Console(file=io.StringIO(), width=160))


def test_html_order_and_cost_table(report):
    html = render_html(report)
    ids = [
        html.index(f'<h2 id="{h}">')
        for h in ("where", "why", "quality", "costs", "latency", "chains")
    ]
    assert ids == sorted(ids)
    table = html[html.index('<table class="costs">') :]
    table = table[: table.index("</table>")]
    assert "<th>share</th>" in table
    seconds = [
        float(v)
        for v in re.findall(
            r'<td class="num">(-?[\d.]+)</td><td class="num">'
            r'[^<]+</td><td class="num share">',
            table,
        )
    ]
    assert len(seconds) == len(summed_expected()) and seconds == sorted(seconds, reverse=True)
    assert re.search(r'class="num share">\d+\.\d %</td>', table)
    assert "latency (seconds of idle time, summed over PEs)" in html  # axis titles
    assert ">access category</text>" in html


def test_negative_costs_are_drawn_below_zero():
    model = make_model()
    model.values["graph:P"] = -0.2  # a negative start-up estimate, as fits sometimes give
    report = build_report(make_run(NPES), model)
    start = next(r for r in report.where if r.name == "graph:STARTUP")
    assert start.seconds < 0 and report.where[-1] is start  # sorted last
    fig = stacked_costs(report, report.decimals)
    zero = next(s for s in fig.shapes if s["t"] == "line" and s["width"] == 1.2)["y1"]
    neg = [s for s in fig.shapes if s["t"] == "rect" and "neg" in s["cls"]]
    assert len(neg) == NPES
    for s in neg:
        assert s["h"] > 3 and s["y"] == pytest.approx(zero) and s["stroke"]
    pos = [s for s in fig.shapes if s["t"] == "rect" and s["cls"] == "seg"]
    assert all(s["y"] + s["h"] <= zero + 1e-6 for s in pos)  # positive ones above zero
    assert "(negative)" in render_html(report)


def test_graph_leaves_out_isolated_nodes_and_labels_do_not_overlap():
    doc = make_run(NPES)
    for pe in doc["pes"][1:]:  # an event with no latency: its nodes have no drawn edge
        pe["latency"].append(
            {
                "access": "graph:ENQ",
                "enabler": "unclassified",
                "count": 1,
                "observed_s": 0.0,
                "critical_s": 0.0,
            }
        )
    report = build_report(doc, make_model())
    assert "unclassified" in report.graph.nodes
    fig = dependence_graph(report, report.decimals)
    texts = [s for s in fig.shapes if s["t"] == "text"]
    nodes = [s["text"] for s in texts if s["bold"]]
    assert sorted(nodes) == ["DEQ", "ENQ", "consume", "produce"]
    labels = [s for s in texts if s["cls"] == "edge-label"]
    assert len(labels) == 5 and all(s["text"].endswith(" s") for s in labels)
    boxes = [_label_box(s["x"], s["y"], s["text"], s["size"]) for s in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not _overlaps(a, b), (a, b)


def test_report_without_model_leads_with_busy_and_idle():
    report = build_report(make_run(NPES))
    text = format_text(report)
    lines = text.splitlines()
    i = lines.index("*** Where the time went (measured, seconds summed over PEs) ***")
    assert re.fullmatch(r"  measured:busy +[\d.]+ s +[\d.]+ %", lines[i + 1])
    assert "*** Model quality ***" not in lines
    busy, idle = report.where[0], report.where[1]
    assert busy.share + idle.share == pytest.approx(1.0)
    assert idle.seconds == pytest.approx(sum(0.01 * (pe + 1) for pe in range(NPES)))


@pytest.mark.parametrize(
    "lo,hi", [(0, 0.0996), (-0.8, 1.8), (-0.2, 0.52), (0, 134.063), (-0.4, 0.4), (0, 1e-9)]
)
def test_axis_ticks_cover_the_range_and_include_zero(lo, hi):
    from mprof.report.html import _ticks

    ticks = _ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi and 3 <= len(ticks) <= 8
    assert any(abs(t) < 1e-12 for t in ticks)
    steps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert max(steps) - min(steps) < 1e-9 * max(abs(hi), abs(lo), 1e-300) + 1e-15
