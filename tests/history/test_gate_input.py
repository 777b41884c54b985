"""`mprof history add` checks a gate result whole before storing any of it: a document shaped
like one (units beside a schema or version) with another schema, an unknown version, values of
the wrong type, NaN or infinity, or a lone surrogate is an error naming the file, line, column
and field, and the history database is left as it was."""

import json
import sqlite3

import pytest

from mprof.cli import main


def gate_result():
    """What `mprof gate --json` writes (mprof/gate/evaluate.py), reduced to what history
    reads: a measured unit and an exactly compared statistic."""
    return {
        "schema": "mprof.gate",
        "version": 1,
        "status": "PASS",
        "units": [
            {
                "id": "pipe(npes=2)::time",
                "kind": "time",
                "category": None,
                "baseline": 1.0,
                "candidate": 1.1,
                "change_low": 0.05,
                "change_high": 0.15,
            },
            {
                "id": "pipe(npes=2)::stat:rts.P",
                "kind": "stat",
                "category": None,
                "baseline": "2",
                "candidate": "2",
            },
        ],
    }


def stored(db_path):
    if not db_path.exists():
        return None
    with sqlite3.connect(db_path) as conn:
        return list(conn.iterdump())


def add(tmp_path, capsys, doc, text=None):
    """`history add` of `doc` (or the raw `text`) into a history that holds a good result:
    (exit code, error output, whether the history is unchanged)."""
    db_path = tmp_path / "h.db"
    good = tmp_path / "good.json"
    good.write_text(json.dumps(gate_result(), indent=2))
    assert (
        main(
            [
                "history",
                "add",
                "--commit",
                "abc123",
                "--date",
                "2026-01-01T00:00:00Z",
                "--machine",
                "m",
                str(db_path),
                str(good),
            ]
        )
        == 0
    )
    before = stored(db_path)
    capsys.readouterr()
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc, indent=2) if text is None else text)
    code = main(
        [
            "history",
            "add",
            "--commit",
            "abc999",
            "--date",
            "2026-01-02T00:00:00Z",
            "--machine",
            "m",
            str(db_path),
            str(path),
        ]
    )
    return code, capsys.readouterr().err.strip(), stored(db_path) == before


def changed(change):
    doc = gate_result()
    change(doc)
    return doc


BAD = [
    (lambda d: d.update(schema="x"), "g.json:2:13: schema: expected 'mprof.gate'"),
    (
        lambda d: d.update(version=99),
        "g.json:3:14: version: gate result version 99 is not supported",
    ),
    (lambda d: d.pop("version"), "version: gate result version null is not supported"),
    (lambda d: d.update(units={}), "units: expected an array of units"),
    (lambda d: d.pop("units"), "g.json:1:1: missing 'units' (the gate's compared units)"),
    (
        lambda d: d["units"][0].update(baseline="x"),
        "units[0].baseline: expected a number or null like the other side's value",
    ),
    (
        lambda d: d["units"][0].update(candidate=float("nan")),
        "units[0].candidate: must be a finite number, got nan",
    ),
    (
        lambda d: d["units"][0].update(change_low=float("inf")),
        "units[0].change_low: must be a finite number, got inf",
    ),
    (lambda d: d["units"][0].update(candidate=True), "units[0].candidate: expected a number"),
    (lambda d: d["units"][1].update(id=7), "units[1].id: expected the unit's id"),
    (
        lambda d: d["units"][1].update(id="a\ud800"),
        "units[1].id: not valid Unicode (a lone surrogate)",
    ),
]


@pytest.mark.parametrize("change, message", BAD)
def test_bad_gate_results_are_errors(tmp_path, capsys, change, message):
    code, err, unchanged = add(tmp_path, capsys, changed(change))
    assert code != 0 and unchanged
    assert message in err and err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"mprof: {tmp_path / 'g.json'}:")


def test_nan_in_the_text_is_an_error(tmp_path, capsys):
    text = json.dumps(gate_result(), indent=2).replace('"candidate": 1.1', '"candidate": NaN')
    code, err, unchanged = add(tmp_path, capsys, None, text)
    assert code != 0 and unchanged and "units[0].candidate: must be a finite number" in err


def test_a_good_gate_result_stores_its_numeric_unit(tmp_path, capsys):
    code, err, unchanged = add(tmp_path, capsys, gate_result())
    assert code == 0 and not unchanged
    assert "1 gate measurement(s)" in err


def test_benchmark_names_with_a_lone_surrogate_are_errors(tmp_path, capsys):
    text = '== t (benchmarks/x.py)\n  {"k\\ud800": 1}\n'
    code, err, unchanged = add(tmp_path, capsys, None, text)
    assert code != 0 and unchanged
    assert (
        err == f"mprof: {tmp_path / 'g.json'}:2:15: k\\ud800: the name is not valid Unicode "
        "(a lone surrogate)"
    )


@pytest.mark.parametrize(
    "text, place",
    [
        # a gate result whose unit names its candidate twice: which would be the measurement?
        (None, None),
        # a benchmark's line of numbers, indented as the scripts print them
        ('== t (benchmarks/x.py)\n  {"k": 1, "m": 2, "k": 3}\n', "2:20"),
    ],
)
def test_a_key_given_twice_is_an_error_at_its_place(tmp_path, capsys, text, place):
    if text is None:
        text = json.dumps(gate_result(), indent=2).replace(
            '"candidate": 1.1', '"candidate": 1.1, "candidate": 9'
        )
        offset = text.index('"candidate": 9')
        place = f"{text.count(chr(10), 0, offset) + 1}:{offset - text.rfind(chr(10), 0, offset)}"
    code, err, unchanged = add(tmp_path, capsys, None, text)
    assert code != 0 and unchanged
    assert err.startswith(f"mprof: {tmp_path / 'g.json'}:{place}: key "), err
    assert "appears twice in one object" in err
