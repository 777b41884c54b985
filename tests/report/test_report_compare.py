"""`mprof report RUN_1.json RUN_2.json ...`: runs of one program at several PE counts side by
side: speed-up and efficiency, each category's total and per-PE time across P, the category
that accounts for the lost efficiency, the model's prediction at each P; text, JSON, HTML."""

import json
import re

import pytest
from report_helpers import cpu_model, make_run, with_categories

from mprof.cli import main
from mprof.report.compare import NOT_ON_CPU, compare, compare_json, format_compare
from mprof.report.html import render_compare_html

WORK = 8.0  # CPU seconds of bisection, the same at every P (strong scaling)


def run_at(p, bisect=WORK, sched_per_pe=0.05, idle_per_pe=0.1, off_cpu_per_pe=0.02):
    """A run at P PEs: `bisect` s of work spread evenly, and per PE fixed scheduler, idle-loop
    and off-CPU seconds that grow the total with P."""
    doc = make_run(p, latency=False)
    doc["program"], doc["argv"], doc["params"] = (
        "eigenvalue",
        ["eigenvalue", "--n=3000"],
        {"n": 3000},
    )
    shares = {"eigenvalue:bisect": bisect / p, "(scheduler)": sched_per_pe, "(idle)": idle_per_pe}
    cpu = sum(shares.values())
    with_categories(doc, {k: v / cpu for k, v in shares.items()}, cpu_fraction=1.0)
    for pe in doc["pes"]:
        pe["elapsed_s"] = cpu + off_cpu_per_pe
        pe["idle_s"] = idle_per_pe + off_cpu_per_pe
        pe["cpu_s"] = cpu
        for c in pe["categories"]:
            c["cpu_s"] = shares[c["access"]]
    return doc


@pytest.fixture(scope="module")
def docs():
    return [(f"eig-{p}.json", run_at(p)) for p in (16, 1, 4, 2, 8)]  # any order


@pytest.fixture(scope="module")
def cmp(docs):
    return compare(docs)


def test_runs_are_ordered_by_pe_count_with_speedup_and_efficiency(cmp):
    assert [r.npes for r in cmp.runs] == [1, 2, 4, 8, 16]
    t = {r.npes: WORK / r.npes + 0.17 for r in cmp.runs}
    for r in cmp.runs:
        assert r.elapsed_s == pytest.approx(t[r.npes])
        assert cmp.speedup(r) == pytest.approx(t[1] / t[r.npes])
        assert cmp.efficiency(r) == pytest.approx(t[1] / (r.npes * t[r.npes]))
        assert r.pe_seconds == pytest.approx(r.npes * t[r.npes])
        assert sum(r.categories.values()) == pytest.approx(r.pe_seconds)


def test_each_category_total_and_per_pe_time_across_p(cmp):
    for r in cmp.runs:
        assert cmp.total(r, "eigenvalue:bisect") == pytest.approx(WORK)
        assert cmp.total(r, "(scheduler)") == pytest.approx(0.05 * r.npes)
        assert cmp.total(r, "(idle)") == pytest.approx(0.1 * r.npes)
        assert cmp.total(r, NOT_ON_CPU) == pytest.approx(0.02 * r.npes)
    # the categories that grow come first; the work does not grow
    assert cmp.rows[0] == "(idle)" and cmp.growth("(idle)") == pytest.approx(1.5)
    assert cmp.growth("eigenvalue:bisect") == pytest.approx(0.0, abs=1e-12)


def test_the_category_behind_the_loss_is_named(cmp):
    lost = cmp.lost(cmp.runs[-1])
    assert lost == pytest.approx(15 * 0.17)
    loss = cmp.loss_by_category()
    assert [n for n, _, _ in loss] == ["(idle)", "(scheduler)", NOT_ON_CPU]
    assert loss[0][2] == pytest.approx(1.5 / lost)
    text = format_compare(cmp)
    lines = text.splitlines()
    assert lines[0] == "% eigenvalue: 5 runs at P = 1, 2, 4, 8, 16"
    assert lines[2] == (
        f"From P=1 to P=16: efficiency {100 * cmp.efficiency(cmp.runs[-1]):.1f} %, speed-up "
        f"{cmp.speedup(cmp.runs[-1]):.2f}; the PEs spent {lost:.3f} s more than at P=1 "
        f"(summed over PEs): (idle) grew +1.500 s ({100 * 1.5 / lost:.1f} % of it), then "
        f"(scheduler) grew +0.750 s ({100 * 0.75 / lost:.1f} % of it), then {NOT_ON_CPU} "
        f"grew +0.300 s ({100 * 0.3 / lost:.1f} % of it)."
    )
    row = next(x for x in lines if x.startswith("  eigenvalue:bisect"))
    cells = re.findall(r"([\d.]+) \(([\d.]+)\)", row)
    assert [float(t) for t, _ in cells] == [8.0] * 5
    assert [float(pp) for _, pp in cells] == pytest.approx([8.0, 4.0, 2.0, 1.0, 0.5], abs=1e-3)


def test_model_prediction_at_each_p(docs):
    cmp = compare(docs, cpu_model(), model_path="m.json")
    text = format_compare(cmp)
    assert "*** Model across P (CPU seconds summed over PEs) ***" in text
    for r in cmp.runs:
        assert r.model_s == pytest.approx(r.report.model_total)
        line = next(
            x
            for x in text.splitlines()[
                text.splitlines().index("*** Model across P (CPU seconds summed over PEs) ***") :
            ]
            if re.match(rf"  +{r.npes} ", x)
        )
        assert f"{r.model_s:.3f}" in line and f"{r.measured_s:.3f}" in line
    data = compare_json(cmp)
    assert [x["model_s"] for x in data["runs"]] == [r.model_s for r in cmp.runs]
    assert data["runs"][0]["model_band_halfwidth_s"] > 0


def test_json_and_html(cmp):
    data = json.loads(json.dumps(compare_json(cmp)))
    assert data["schema"] == "mprof.report-compare"
    assert [r["npes"] for r in data["runs"]] == [1, 2, 4, 8, 16]
    bis = next(c for c in data["categories"] if c["category"] == "eigenvalue:bisect")
    assert bis["totals_s"] == pytest.approx([WORK] * 5)
    assert bis["per_pe_s"] == pytest.approx([WORK / p for p in (1, 2, 4, 8, 16)])
    assert data["loss"][0]["category"] == "(idle)"
    html = render_compare_html(cmp)
    assert html.count("<svg") == 1 and html.count('class="efficiency"') == 5
    assert html.count('class="seg"') == 5 * 4
    assert "(idle) grew +1.500 s" in html


def test_runs_without_categories_compare_by_busy_and_idle():
    old = run_at(2)
    for pe in old["pes"]:
        del pe["categories"]
    cmp = compare([("old.json", old), ("new.json", run_at(4))])
    assert cmp.rows and set(cmp.rows) == {"(busy)", "(idle)", NOT_ON_CPU}
    assert any("no measured category times in this profile: old.json" in w for w in cmp.warnings)
    assert "warning: no measured category times in this profile: old.json" in format_compare(cmp)


def test_cli_compares_several_runs(tmp_path, capsys):
    paths = []
    for p in (1, 2, 4):
        path = tmp_path / f"eig-{p}.json"
        path.write_text(json.dumps(run_at(p)))
        paths.append(str(path))
    assert main(["report", *paths, "--html", f"{tmp_path}/out/"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("% eigenvalue: 3 runs at P = 1, 2, 4")
    assert (tmp_path / "out" / "eig-1-compare.html").exists()
    assert main(["report", *paths, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "mprof.report-compare"
    # runs of different programs, --per-pe: one line, exit 2
    other = run_at(8)
    other["program"] = "pipe"
    (tmp_path / "pipe.json").write_text(json.dumps(other))
    assert main(["report", paths[0], str(tmp_path / "pipe.json")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("mprof: report: the runs are of different programs") and err.count("\n") == 1
    )
    assert main(["report", *paths, "--per-pe"]) == 2
    assert "--per-pe applies to one run" in capsys.readouterr().err


@pytest.mark.parametrize("zero_at", [1, 2])
def test_a_run_that_took_no_time_has_no_speedup(zero_at):
    """A run of 0 s at either end: the speed-up was printed as nan (and efficiency n/a)."""
    docs = [(f"r{p}.json", run_at(p)) for p in (1, 2)]
    for pe in docs[zero_at - 1][1]["pes"]:
        pe["elapsed_s"] = pe["idle_s"] = 0.0
    c = compare(docs)
    text = format_compare(c)
    assert "nan" not in text.lower() and "speed-up n/a" in text, text
    assert "nan" not in render_compare_html(c).lower()
