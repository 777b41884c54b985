"""Reports lead with measured time: CPU time per access category with the model's estimate
beside it and a row for what no model term explains, wall-clock idle beside CPU idle, the
largest wait named even without a chain, every PE's figures, and load imbalance first when the
busiest PE's busy time exceeds the mean by 30 % or more."""

import io
import json
import re

import pytest
from report_helpers import (
    CATEGORY_SHARES,
    expected_costs,
    lat,
    make_model,
    make_run,
    cpu_model,
    with_categories,
)
from rich.console import Console

from mprof.cli import main
from mprof.report.build import build_report
from mprof.report.html import render_html
from mprof.report.terminal import print_rich
from mprof.report.text import format_text, report_json

NPES = 4


def model_sum(prefix):
    return sum(
        v for pe in range(NPES) for k, v in expected_costs(pe).items() if k.startswith(prefix)
    )


@pytest.fixture(scope="module")
def doc():
    return with_categories(make_run(NPES))


@pytest.fixture(scope="module")
def report(doc):
    return build_report(doc, cpu_model())


def rows_by_label(report):
    return {r.label: r for r in report.measured_rows}


def test_categories_by_measured_time_with_shares_that_add_up_to_the_run(doc, report):
    cpu = sum(pe["cpu_s"] for pe in doc["pes"])
    assert report.has_categories and report.measured_cpu_total == pytest.approx(cpu)
    cats = [r for r in report.measured_rows if r.kind == "category"]
    assert {r.label for r in cats} == set(CATEGORY_SHARES)
    assert sum(r.share for r in cats) == pytest.approx(1.0)
    for r in cats:
        assert r.cpu_s == pytest.approx(CATEGORY_SHARES[r.label] * cpu)
        assert r.samples == sum(
            c["samples"] for pe in doc["pes"] for c in pe["categories"] if c["access"] == r.label
        )
    # groups by measured time, largest first; inside a group largest first
    pipe = [r.label for r in report.measured_rows if r.group == "pipe"]
    assert pipe == ["pipe:consume", "pipe:produce", "pipe (all)"]
    assert report.measured_rows[0].label == "pipe:consume"


def test_the_model_estimate_sits_beside_its_categories(report):
    rows = rows_by_label(report)
    assert report.model_beside
    assert rows["pipe (all)"].kind == "subtotal"
    assert rows["pipe (all)"].model_s == pytest.approx(model_sum("pipe:"), rel=1e-12)
    assert rows["pipe (all)"].model_categories == ["pipe:COMP"]
    assert rows["pipe:consume"].model_s is None  # the estimate is on the subtotal
    assert rows["(idle)"].model_s == pytest.approx(model_sum("rts:IDLE"), rel=1e-12)
    assert rows["(scheduler)"].model_s == pytest.approx(
        model_sum("rts:") - model_sum("rts:IDLE"), rel=1e-12
    )
    assert set(rows["(scheduler)"].model_categories) == {
        "rts:THREAD",
        "rts:COMM_ALPHA",
        "rts:COMM_BETA",
    }
    assert rows["graph (all)"].model_s == pytest.approx(model_sum("graph:"), rel=1e-12)
    # every model category is beside exactly one row: the estimates add up to the model
    beside = sum(r.model_s for r in report.measured_rows if r.model_s is not None)
    assert beside == pytest.approx(report.model_total, rel=1e-12)


def test_a_row_holds_what_no_model_term_explains(report):
    row = report.measured_rows[-1]
    assert row.kind == "unexplained" and row is report.unexplained
    assert row.label == "not explained by any model term"
    assert row.cpu_s == pytest.approx(report.measured_cpu_total - report.model_total)
    assert row.share == pytest.approx(row.cpu_s / report.measured_cpu_total)


def test_unmodelled_computation_lands_in_the_unexplained_row():
    """A program whose own module the model does not know (a runtime model only): its
    computation has no estimate beside it and makes up the unexplained row."""
    doc = with_categories(make_run(NPES), {"tri:solve": 0.9, "(scheduler)": 0.05, "(idle)": 0.05})
    model = cpu_model()
    for module in ("graph", "pipe"):
        del model.interfaces[module]
    report = build_report(doc, model)
    rows = rows_by_label(report)
    assert rows["tri:solve"].model_s is None
    assert report.unexplained.cpu_s == pytest.approx(
        report.measured_cpu_total - model_sum("rts:"), rel=1e-9
    )
    assert report.unexplained.share > 0.85
    text = format_text(report)
    line = next(x for x in text.splitlines() if x.startswith("  tri:solve"))
    assert line.rstrip().endswith("-")  # nothing in the model prices it
    assert re.search(r"^  not explained by any model term +[\d.]+ s +9\d\.\d %$", text, re.M)


def test_text_one_measure_per_table(report):
    text = format_text(report)
    lines = text.splitlines()
    head = lines.index(
        "*** Where the time went (measured, CPU seconds summed over PEs; the "
        "model's estimate beside) ***"
    )
    idle = lines.index("*** Idle (wall-clock seconds summed over PEs) ***")
    why = lines.index("*** Why the PEs waited (observed latency) ***")
    assert head < idle < why < lines.index("*** Cost Profile ***")
    assert re.fullmatch(r"  category +measured +share +model \(90 % band\)", lines[head + 1])
    sub = next(x for x in lines[head:idle] if x.startswith("  pipe (all)"))
    m = re.fullmatch(
        r"  pipe \(all\) +([\d.]+) s +([\d.]+) % +([\d.]+) s \+-\S+ \(pipe:COMP\)", sub
    )
    assert m and float(m.group(3)) == pytest.approx(model_sum("pipe:"), abs=1e-3)
    total = lines[idle - 1]
    m = re.fullmatch(r"  total +([\d.]+) s +100\.0 % +([\d.]+) s \(model\)", total)
    assert m and float(m.group(2)) == pytest.approx(report.model_total, abs=1e-3)
    # the model's where table is not repeated: its estimates are beside
    assert "*** Where the time went (model" not in text


def test_wall_clock_idle_beside_cpu_idle(doc, report):
    wall = sum(pe["idle_s"] for pe in doc["pes"])
    cpu_idle = sum(pe["idle_cpu_s"] for pe in doc["pes"])
    elapsed = sum(pe["elapsed_s"] for pe in doc["pes"])
    d = report.decimals
    text = format_text(report)
    assert (
        f"  idle {wall:.{d}f} s of {elapsed:.{d}f} s elapsed "
        f"({100 * wall / elapsed:.1f} %); the idle loops took {cpu_idle:.{d}f} CPU s of it"
    ) in text.splitlines()
    assert (
        f"  waits ended by: ENQ {lat(92.7):.{d}f} s, DEQ {lat(47.337):.{d}f} s (critical "
        "latency by enabling category)"
    ) in text.splitlines()
    data = report_json(report)
    assert data["idle"]["wall_s"] == pytest.approx(wall)
    assert data["idle"]["cpu_s"] == pytest.approx(cpu_idle)
    assert data["idle"]["by_enabler"][0] == {
        "enabler": "graph:ENQ",
        "critical_s": pytest.approx(lat(92.7)),
    }


def test_an_elapsed_model_is_not_set_beside_cpu_time(doc):
    report = build_report(doc, make_model())  # Measure elapsed
    assert report.has_categories and not report.model_beside and report.unexplained is None
    assert all(r.model_s is None for r in report.measured_rows)
    text = format_text(report)
    assert "*** Where the time went (measured, CPU seconds summed over PEs) ***" in text
    assert "*** Where the time went (model, seconds summed over PEs) ***" in text
    assert "(the model prices elapsed seconds: its estimates follow, not beside)" in text


def test_json_carries_the_measured_rows(report):
    data = json.loads(json.dumps(report_json(report)))
    assert data["categories_measured"] is True
    assert data["measured_where_unit"] == "CPU seconds summed over PEs"
    labels = [r["label"] for r in data["measured_where"]]
    assert labels[-1] == "not explained by any model term"
    assert data["unexplained_s"] == pytest.approx(report.unexplained.cpu_s)
    assert data["measured_where_total_s"] == pytest.approx(report.measured_cpu_total)
    pe0 = data["pes_measured"][0]
    assert pe0["categories"]["pipe:consume"] == pytest.approx(0.5 * pe0["cpu_s"])
    assert pe0["stats"]["rts:ThreadAlloc"] == 1000


@pytest.mark.parametrize("with_model", [False, True])
def test_runs_without_category_times_say_so(with_model):
    report = build_report(make_run(NPES), cpu_model() if with_model else None)
    assert not report.has_categories and report.measured_rows == []
    note = "no measured category times in this profile"
    assert f"  ({note})" in format_text(report).splitlines()
    assert note in format_text(report, per_pe=True).split("*** Per PE (CPU seconds")[1]
    out = io.StringIO()
    print_rich(report, console=Console(file=out, width=150))
    assert note in out.getvalue()
    assert f"({note})" in render_html(report)
    assert report_json(report)["categories_measured"] is False


def test_rich_and_html_show_the_measured_rows(report):
    out = io.StringIO()
    print_rich(report, per_pe=True, console=Console(file=out, width=200))
    text = out.getvalue()
    assert (
        "Where the time went (measured, CPU seconds summed over PEs; the model's "
        "estimate beside)" in text
    )
    assert "not explained by any model term" in text and "pipe:COMP" in text
    assert "Idle (wall-clock): idle" in text
    assert "Per PE (CPU seconds by category)" in text
    html = render_html(report)
    assert html.index('id="where"') < html.index('class="measured"') < html.index('id="why"')
    assert html.count('class="model-estimate"') == 4  # pipe, (idle), (scheduler), graph
    assert "<td>not explained by any model term</td>" in html
    assert "Idle (wall-clock seconds summed over PEs)" in html


# -- the lead line never hides observed latency ---------------------------------------------


def test_latency_without_a_chain_is_still_named():
    """All waits enabled by unclassified fibers or by the same category (EM3D, FIFO
    tripuzzle): no chain, but the lead names the wait and what enabled it."""
    doc = make_run(2, latency=False)
    doc["accesses"] = ["unclassified", "em3d:VALIDATE", "em3d:SYNC"]
    doc["pes"][1]["latency"] = [
        {
            "access": "em3d:SYNC",
            "enabler": "unclassified",
            "count": 4,
            "observed_s": 9.1,
            "critical_s": 0.5,
        },
        {
            "access": "em3d:VALIDATE",
            "enabler": "em3d:VALIDATE",
            "count": 2,
            "observed_s": 0.03,
            "critical_s": 0.01,
        },
    ]
    report = build_report(doc)
    assert report.lead_chain is None
    lines = format_text(report).splitlines()
    sentence = lines[lines.index("*** Why the PEs waited (observed latency) ***") + 1]
    assert "no latency to explain" not in sentence
    assert sentence == (
        "SYNC waited 9.100 s, enabled by unclassified fibers 9.100 s; no "
        "dependence chain of other accesses lies behind it"
    )
    assert "SYNC waited" in render_html(report) and "no latency to explain" not in render_html(
        report
    )
    out = io.StringIO()
    print_rich(report, console=Console(file=out, width=200))
    assert "SYNC waited 9.100 s" in out.getvalue()
    assert report_json(report)["lead_wait"]["access"] == "em3d:SYNC"


def test_no_latency_at_all_says_so():
    report = build_report(make_run(2, latency=False))
    assert "(no dependence chain: the run profile has no latency to explain)" in format_text(report)


# -- per PE and load imbalance --------------------------------------------------------------


def eigenvalue_like(npes=16, busy=(8.0, 1.0, 0.0), seconds=10.0, idle_loop=0.25):
    """A run whose PE 0 did half of the bisections and 7 PEs none: PE 0 busy busy[0] s, the
    next 8 PEs busy[1] s, the last 7 busy[2] s (CPU time outside the idle loop, and elapsed
    minus idle), all `seconds` long; each idle loop took `idle_loop` CPU s."""
    doc = make_run(npes, latency=False)
    doc["schema_version"] = 2
    doc["accesses"].append("eigenvalue:bisect")
    for pe in doc["pes"]:
        n = pe["pe"]
        b = busy[0] if n == 0 else busy[1] if n <= 8 else busy[2]
        pe["elapsed_s"], pe["idle_s"] = seconds, seconds - b
        pe["cpu_s"], pe["idle_cpu_s"] = b + idle_loop, idle_loop
        pe["categories"] = [
            {"access": "eigenvalue:bisect", "cpu_s": b, "samples": 1000 * b},
            {"access": "(idle)", "cpu_s": idle_loop, "samples": 250},
        ]
        pe["categories"] = [c for c in pe["categories"] if c["samples"]]
        for c in pe["categories"]:
            c["samples"] = int(c["samples"])
        bis = 800 if n == 0 else 100 if n <= 8 else 0
        pe["objects"].append(
            {"id": 9, "module": "eigenvalue", "stats": {"P": 1, "Bisect": bis, "Tasks": 10}}
        )
    return doc


def test_load_imbalance_leads_and_names_pes_idle_share_and_statistic():
    doc = eigenvalue_like()
    report = build_report(doc)
    im = report.imbalance
    busy = [8.0] + [1.0] * 8 + [0.0] * 7
    mean = sum(busy) / 16
    assert im.busiest == [0] and im.busiest_s == pytest.approx(8.0)
    assert im.mean_s == pytest.approx(mean)
    assert im.idlest == list(range(9, 16))
    assert im.caused_s == pytest.approx(sum(8.0 - b for b in busy))
    assert im.idle_share == pytest.approx(im.caused_s / sum(10.0 - b for b in busy))
    assert im.statistic == "eigenvalue:Bisect"
    lines = format_text(report).splitlines()
    assert lines[2] == "*** Load imbalance ***"  # the first finding, before where the time went
    assert lines[3] == (
        f"PE 0 was busy the most: 8.000 s, {100 * (8 / mean - 1):.0f} % above the mean of "
        f"{mean:.3f} s (busy: CPU time outside the idle loop); PEs 9, 10, 11, 12, 13, 14, "
        f"15 under half the mean. Waiting for the busiest PE accounts for {im.caused_s:.3f} s, "
        f"{100 * im.idle_share:.1f} % of the PEs' {im.idle_s:.3f} s of wall-clock idle time (the "
        "PEs' busy time short of the busiest's, summed over PEs). The statistic that differs "
        "most between PEs: eigenvalue:Bisect (PE 0: 800, mean 100, min 0; 7 PEs 0)."
    )
    assert lines[4].startswith("*** Where the time went (measured")
    html = render_html(report)
    assert html.index('id="imbalance"') < html.index('id="where"')
    assert html.count('class="busiest"') == 2 and html.count('class="differs"') == 1
    out = io.StringIO()
    print_rich(report, console=Console(file=out, width=400))
    assert out.getvalue().splitlines()[1].startswith("Load imbalance: PE 0 was busy the most")
    data = report_json(report)["imbalance"]
    assert data["busiest_pes"] == [0] and data["statistic"] == "eigenvalue:Bisect"


@pytest.mark.parametrize("excess, leads", [(0.29, False), (0.30, True), (0.31, True)])
def test_imbalance_threshold_is_thirty_percent_above_the_mean(excess, leads):
    # PE 0 busy (1 + excess) times the mean of four PEs
    others = 1.0
    top = 3 * others * (1 + excess) / (4 - (1 + excess))
    doc = make_run(4, latency=False)
    for pe, b in zip(doc["pes"], [top, others, others, others]):
        pe["elapsed_s"], pe["idle_s"] = 5.0, 5.0 - b
    report = build_report(doc)
    assert (report.imbalance is not None) == leads
    assert ("*** Load imbalance ***" in format_text(report)) == leads


def test_imbalance_by_cpu_time_is_not_fooled_by_preemption():
    """On a busy machine a preempted PE's wall clock runs on outside its idle loop: by CPU time
    the PEs were busy alike, so there is no imbalance to report."""
    doc = eigenvalue_like(npes=4, busy=(1.0, 1.0, 1.0))
    doc["pes"][0]["idle_s"] = 5.0  # PE 0 preempted for 4 s: wall-clock busy 5 s, others 1 s
    assert build_report(doc).imbalance is None
    for pe in doc["pes"]:  # without CPU times, the wall clock is all there is
        del pe["cpu_s"], pe["idle_cpu_s"], pe["categories"]
    doc["schema_version"] = 1
    im = build_report(doc).imbalance
    assert im is not None and im.measure == "wall" and im.busiest == [0]
    assert "(wall-clock busy time: elapsed minus idle)" in format_text(build_report(doc))


def _percentages(text):
    return [float(x) for x in re.findall(r"(-?\d+(?:\.\d+)?) %", text)]


def test_imbalance_gap_larger_than_the_idle_time_is_not_called_all_of_it():
    """PE 1 was busy 0.05 s of CPU time less than PE 0 but idle only 0.02 s of wall-clock
    time: it was off a CPU the rest.  The gap (CPU busy time) is not 100 % of the idle time
    (wall-clock): the sentence says how far waiting can account for the idle time and where
    the rest of the gap went."""
    doc = eigenvalue_like(npes=2, busy=(0.06, 0.01, 0.01), seconds=0.07, idle_loop=0.0)
    doc["pes"][0]["idle_s"] = 0.0
    doc["pes"][1]["idle_s"] = 0.02
    report = build_report(doc)
    im = report.imbalance
    assert im.measure == "cpu" and im.caused_s == pytest.approx(0.05)
    assert im.idle_s == pytest.approx(0.02)
    sentence = format_text(report, digits=3).splitlines()[3]
    assert "accounts for 0.050 s" not in sentence, sentence
    assert all(p <= 100 for p in _percentages(sentence.split("above the mean")[1])), sentence
    assert (
        "The PEs were busy 0.050 s less than the busiest PE (summed over PEs), more than "
        "their 0.020 s of wall-clock idle time: waiting for it can account for all of that "
        "idle time; for the other 0.030 s they were off a CPU outside the idle loop or not "
        "running."
    ) in sentence, sentence
    assert "0.0300 s they were off a CPU" in report_json(report)["imbalance"]["sentence"]
    # without CPU times: busy is elapsed minus idle, and the gap past the idle time is time a
    # PE was not running (it ended before the busiest PE's busy time)
    for pe in doc["pes"]:
        del pe["cpu_s"], pe["idle_cpu_s"], pe["categories"]
    doc["schema_version"] = 1
    doc["pes"][0]["elapsed_s"] = 0.06
    doc["pes"][1]["elapsed_s"] = 0.015
    doc["pes"][1]["idle_s"] = 0.005
    sentence = format_text(build_report(doc), digits=3).splitlines()[3]
    assert (
        "busy 0.050 s less than the busiest PE (summed over PEs), more than their 0.005 s "
        "of wall-clock idle time: waiting for it can account for all of that idle time; for "
        "the other 0.045 s they were not running: their elapsed times differ."
    ) in sentence
    doc["pes"][1]["idle_s"] = 0.0
    sentence = format_text(build_report(doc), digits=3).splitlines()[3]
    assert (
        "n/a" not in sentence
        and (
            "busy 0.045 s less than the busiest PE (summed over PEs) "
            "and had no wall-clock idle time"
        )
        in sentence
    ), sentence


def test_balanced_run_has_no_imbalance_lead():
    report = build_report(eigenvalue_like(busy=(1.0, 1.0, 1.0)))
    assert report.imbalance is None
    assert "Load imbalance" not in format_text(report) and 'id="imbalance"' not in render_html(
        report
    )


def test_per_pe_shows_statistics_busy_idle_and_categories(tmp_path, capsys):
    doc = eigenvalue_like(npes=3, busy=(4.0, 2.0, 2.0), idle_loop=1.0)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path), "--per-pe", "--format", "text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    wall = lines.index("*** Per PE (wall-clock seconds) ***")
    assert lines[wall + 1] == "PE0: elapsed= 10.000 busy=  4.000 idle=  6.000"
    assert lines[wall + 2] == "PE1: elapsed= 10.000 busy=  2.000 idle=  8.000"
    cpu = lines.index("*** Per PE (CPU seconds by category) ***")
    assert lines[cpu + 1] == (
        "PE0: cpu=  5.000 idle loop=  1.000 | eigenvalue:bisect=4.000 (idle)=1.000"
    )
    stats = lines.index("*** Per PE (statistics, summed over the PE's objects) ***")
    assert "eigenvalue: P=1 Bisect=800 Tasks=10" in lines[stats + 1]
    assert "eigenvalue: P=1 Bisect=100 Tasks=10" in lines[stats + 2]
    assert lines[stats + 1].startswith("PE0: rts: P=1 Sched=2 ThreadAlloc=1000")


@pytest.mark.slow
def test_measured_and_comparison_pages_render_in_chromium(tmp_path):
    """The pages with measured categories, load imbalance, what-if and the comparison across
    PE counts, rendered by a real headless browser: every figure is there and drawn."""
    from test_html_browser import decode_png, find_chromium, run_chromium
    from test_report_compare import run_at

    from mprof.report.compare import compare
    from mprof.report.html import write_compare_html, write_html

    chromium = find_chromium()
    pages = {
        "imbalance": write_html(build_report(eigenvalue_like()), tmp_path / "imb.html"),
        "model": write_html(
            build_report(with_categories(make_run(NPES)), cpu_model(), what_if=["rts:Msg=0.5x"]),
            tmp_path / "model.html",
        ),
        "compare": write_compare_html(
            compare([(f"eig-{p}.json", run_at(p)) for p in (1, 2, 4, 8)], cpu_model()),
            tmp_path / "cmp.html",
        ),
    }
    want = {
        "imbalance": ['id="imbalance"', 'class="measured"', 'class="seg"'],
        "model": ['class="model-estimate"', 'id="what-if"', 'class="measured"'],
        "compare": ['class="efficiency"', 'class="model-marker"', 'class="seg"'],
    }
    for name, page in pages.items():
        url = page.resolve().as_uri()
        dom = run_chromium(chromium, tmp_path, url, "--dump-dom")
        assert dom.returncode == 0, dom.stderr[-2000:]
        for marker in want[name]:
            assert marker in dom.stdout, (name, marker)
        png = tmp_path / f"{name}.png"
        shot = run_chromium(
            chromium, tmp_path, url, f"--screenshot={png}", "--window-size=1100,1400"
        )
        assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
        width, height, bpp, rows = decode_png(png.read_bytes())
        colours = {row[x : x + 3] for row in rows[::8] for x in range(0, width * bpp, bpp * 8)}
        assert len(colours) > 20, name  # plots in colour, not a blank page
