"""Times of 1e-300 s (valid JSON, accepted by the import) beside a model's milliseconds: every
percentage and ratio of the text, terminal, HTML and comparison outputs stays a few characters
long.  A share or error over a total that rounds to zero reads as a bound (">99999 %"), never
as hundreds of digits."""

import io
import json
import math
import re

import pytest
from report_helpers import cpu_model, make_run, with_categories
from rich.console import Console

from mprof.cli import main
from mprof.report.build import build_report
from mprof.report.terminal import print_rich

LONG_NUMBER = re.compile(r"\d{13,}")


def scaled(doc, factor):
    """The run profile with every time (`*_s`) multiplied by `factor`."""

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k.endswith("_s") and isinstance(v, float):
                    x[k] = v * factor
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return doc


@pytest.fixture
def tiny(tmp_path):
    run = tmp_path / "tiny.json"
    run.write_text(json.dumps(scaled(with_categories(make_run(4)), 1e-300)))
    model = tmp_path / "model.json"
    cpu_model().save(model)
    return run, model


def test_bounded_and_percent():
    from mprof.numbers import bounded, percent

    assert percent(12.345) == "12.3 %" and percent(-7.0, "+.1f", "%") == "-7.0%"
    assert percent(99999.0) == "99999.0 %"
    assert percent(1e302) == ">99999 %" and percent(-1e302) == "<-99999 %"
    assert percent(math.inf, "f", "%") == ">99999%" and percent(-math.inf) == "<-99999 %"
    assert percent(math.nan) == "n/a" and percent(None) == "n/a"
    assert bounded(2.5) == "2.50" and bounded(1e300) == ">99999"


def test_text_report_of_tiny_times_has_bounded_percentages(tiny, capsys):
    run, model = tiny
    assert (
        main(
            [
                "report",
                "--format",
                "text",
                "--per-pe",
                "--model",
                str(model),
                "--what-if",
                "rts:Msg=2x",
                str(run),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert not LONG_NUMBER.search(out), LONG_NUMBER.search(out).group()[:40]
    unexplained = next(
        line
        for line in out.splitlines()
        if line.lstrip().startswith("not explained by any model term")
    )
    assert unexplained.rstrip().endswith("<-99999 %"), unexplained
    per_pe = [line for line in out.splitlines() if line.startswith("PE0: Model=")]
    assert per_pe and per_pe[0].endswith("error >99999%"), per_pe


def test_terminal_and_html_of_tiny_times_have_bounded_percentages(tiny, tmp_path, capsys):
    run, model = tiny
    from mprof.model import load_model

    report = build_report(json.loads(run.read_text()), load_model(model), what_if=["rts:Msg=2x"])
    out = io.StringIO()
    print_rich(report, per_pe=True, console=Console(file=out, width=400))
    text = out.getvalue()
    assert not LONG_NUMBER.search(text), LONG_NUMBER.search(text).group()[:40]
    assert "<-99999 %" in text and ">99999%" in text
    page = tmp_path / "tiny.html"
    assert (
        main(
            [
                "report",
                "--format",
                "text",
                "--model",
                str(model),
                "--what-if",
                "rts:Msg=2x",
                "--html",
                str(page),
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    html = page.read_text()
    assert not LONG_NUMBER.search(html), LONG_NUMBER.search(html).group()[:40]
    assert "&lt;-99999 %" in html and "&gt;99999%" in html


def test_comparison_with_tiny_times_has_bounded_ratios(tmp_path, capsys):
    normal = tmp_path / "p2.json"
    normal.write_text(json.dumps(with_categories(make_run(2))))
    tiny = tmp_path / "p4.json"
    tiny.write_text(json.dumps(scaled(with_categories(make_run(4)), 1e-300)))
    assert main(["report", str(normal), str(tiny)]) == 0
    out = capsys.readouterr().out
    assert not LONG_NUMBER.search(out), LONG_NUMBER.search(out).group()[:40]
    assert "speed-up >99999" in out and "efficiency >99999 %" in out, out
