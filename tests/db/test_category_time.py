"""Measured CPU time per access category in run profiles: validation (with the file, line and
column of the offending value), the database table, and RunProfile read from a file or from a
database, for runs with and without the times."""

import json
import re
import sqlite3

import pytest

from mprof.bench.synth import make_profile
from mprof.cli import main
from mprof.db import schema
from mprof.db.store import ProfileDB
from mprof.db.validate import locate, parse_profile, validate_profile
from mprof.errors import MprofError
from mprof.profile import IDLE, SCHEDULER, RunProfile, load_profiles

ROWS = [  # per PE: (access, cpu_s, samples); each PE's cpu_s is their sum
    [
        ("pipe:consume", 0.5, 50),
        ("pipe:produce", 0.25, 25),
        (SCHEDULER, 0.1875, 19),
        (IDLE, 0.0625, 6),
    ],
    [("pipe:produce", 0.75, 75), ("unclassified", 0.0625, 6), (IDLE, 0.1875, 19)],
]


def profile(rows=ROWS):
    npes = len(rows)
    doc = make_profile("pipe", [[("rts", {"P": 1})]] * npes, [1.5] * npes, pe_idle=[0.4] * npes)
    doc["schema_version"] = 2
    doc["accesses"] = ["unclassified", "pipe:consume", "pipe:produce"]
    for pe, pe_rows in zip(doc["pes"], rows):
        cpu = sum(r[1] for r in pe_rows)
        pe.update(
            cpu_s=cpu,
            idle_cpu_s=next((r[1] for r in pe_rows if r[0] == IDLE), 0.0),
            categories=[{"access": a, "cpu_s": c, "samples": n} for a, c, n in pe_rows],
        )
    return doc


def test_a_profile_with_categories_is_valid_and_read_into_run_profile():
    doc = profile()
    validate_profile(doc, "run.json")
    run = RunProfile.from_document(doc)
    assert run.has_categories
    pe0 = run.pes[0].categories
    assert [(c.access, c.cpu_s, c.samples) for c in pe0] == ROWS[0]  # largest first
    assert run.category_totals() == {
        "pipe:consume": 0.5,
        "pipe:produce": 1.0,
        SCHEDULER: 0.1875,
        IDLE: 0.25,
        "unclassified": 0.0625,
    }
    assert sum(run.category_totals().values()) == pytest.approx(run.time("cpu"))


def test_a_profile_without_categories_reads_as_not_measured():
    doc = profile()
    for pe in doc["pes"]:
        del pe["categories"]
    validate_profile(doc, "run.json")
    run = RunProfile.from_document(doc)
    assert not run.has_categories and run.pes[0].categories is None
    assert run.category_totals() == {}
    doc = profile([[], []])  # measured, on PEs that used no CPU time: an empty array
    assert doc["pes"][0]["cpu_s"] == 0
    validate_profile(doc, "run.json")
    assert RunProfile.from_document(doc).has_categories


def test_no_category_rows_on_a_pe_that_used_cpu_time_are_refused(tmp_path, capsys):
    """The runtime writes `categories` only on a PE that took a sample, with a row for what
    each sample charged: an empty list beside CPU time would be reported as no CPU time."""
    doc = profile([[], []])
    doc["pes"][1]["cpu_s"] = 0.25
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc, indent=1))
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(path)]) == 2
    err = capsys.readouterr().err
    line, column = locate(path.read_text(), "pes[1].categories")
    assert err.strip() == (
        f"mprof: {path}:{line}:{column}: pes[1].categories: no category "
        "rows, but the PE's cpu_s is 0.25 s (a PE that took no sample has "
        "no categories key)"
    )
    assert not db_path.exists() or not load_profiles(db_path)
    doc["pes"][1]["cpu_s"] = 1e-10  # within rounding of no time at all
    validate_profile(doc, "run.json")


BAD = [
    (
        lambda pe: pe.update(categories={"a": 1}),
        "pes[0].categories",
        "expected an array, got an object",
    ),
    (
        lambda pe: pe["categories"].append(7),
        "pes[0].categories[4]",
        "expected an object, got the number 7",
    ),
    (
        lambda pe: pe["categories"][1].pop("access"),
        "pes[0].categories[1]",
        "missing required field 'access'",
    ),
    (
        lambda pe: pe["categories"][1].update(access=""),
        "pes[0].categories[1].access",
        "must not be empty",
    ),
    (
        lambda pe: pe["categories"][1].update(access=3),
        "pes[0].categories[1].access",
        "expected a string, got the number 3",
    ),
    (
        lambda pe: pe["categories"][2].update(access="pipe:consume"),
        "pes[0].categories[2].access",
        "category 'pipe:consume' appears twice on this PE",
    ),
    (
        lambda pe: pe["categories"][2].update(cpu_s=-0.125),
        "pes[0].categories[2].cpu_s",
        "a time must be non-negative, got -0.125",
    ),
    (
        lambda pe: pe["categories"][2].update(cpu_s="x"),
        "pes[0].categories[2].cpu_s",
        "expected a number",
    ),
    (
        lambda pe: pe["categories"][2].pop("cpu_s"),
        "pes[0].categories[2]",
        "missing required field 'cpu_s'",
    ),
    (
        lambda pe: pe["categories"][3].update(samples=-1),
        "pes[0].categories[3].samples",
        "must be >= 0, got -1",
    ),
    (
        lambda pe: pe["categories"][3].update(samples=1.5),
        "pes[0].categories[3].samples",
        "expected an integer, got the number 1.5",
    ),
    (
        lambda pe: pe["categories"][3].update(samples=True),
        "pes[0].categories[3].samples",
        "expected an integer, got a boolean",
    ),
    (
        lambda pe: pe["categories"][0].update(cpu_s=0.6),
        "pes[0].categories",
        "the categories' cpu_s add up to 1.1 s, but the PE's cpu_s is 1 s",
    ),
]


@pytest.mark.parametrize("mutate, where, message", BAD)
def test_malformed_categories_name_file_line_column_and_path(mutate, where, message):
    doc = profile()
    mutate(doc["pes"][0])
    text = json.dumps(doc, indent=2)
    with pytest.raises(MprofError) as err:
        parse_profile(text, "run.json")
    got = str(err.value)
    m = re.fullmatch(r"run\.json:(\d+):(\d+): (\S+): (.*)", got)
    assert m, got
    assert m.group(3) == where and message in m.group(4), got
    # the line and column point at the value the path names
    line, col = int(m.group(1)), int(m.group(2))
    at = text.splitlines()[line - 1][col - 1 :]
    value = eval(
        "doc"
        + "".join(
            f'["{p}"]' if not p.startswith("[") else p
            for p in re.findall(r"\[\d+\]|[^.\[\]]+", where)
        )
    )
    assert at.startswith(json.dumps(value, indent=2).splitlines()[0].strip()), (at, value)


def test_nan_in_categories_is_rejected_with_its_place(tmp_path):
    text = json.dumps(profile(), indent=1).replace('"cpu_s": 0.25,', '"cpu_s": NaN,', 1)
    path = tmp_path / "nan.json"
    path.write_text(text)
    assert main(["db", "import", str(tmp_path / "p.db"), str(path)]) == 2
    with pytest.raises(
        MprofError,
        match=r"nan\.json:\d+:\d+: pes\[0\]\.categories\[1\]\.cpu_s: "
        "must be a finite number",
    ):
        parse_profile(text, "nan.json")


def test_locate_follows_paths_through_odd_keys_and_nesting():
    text = '{"a.b": {"c": [1, {"d": [true, "x]y", {"e": 2}]}]}, "a": {"b": 3}}'
    assert locate(text, "a.b.c[1].d[2].e") == (1, text.index("2}") + 1)
    assert locate(text, "a.b") == (1, text.index('{"c"') + 1)  # the longest name wins
    assert locate(text, "a.c") == (1, text.index('{"b": 3') + 1)  # no c in a: a itself
    assert locate(text, "a.b.zz") == (1, text.index('{"c"') + 1)  # missing: the deepest found
    assert locate(text, "document") == (1, 1)
    dup = '{"x": 1,\n "x": 2}'
    assert locate(dup, "x") == (2, 7)  # the reader keeps the last


def test_category_times_are_stored_and_read_back(tmp_path):
    db_path = tmp_path / "p.db"
    old = profile()
    for pe in old["pes"]:
        del pe["categories"]
    old["program"] = "old"
    with ProfileDB(db_path) as db:
        assert db.version == schema.LATEST_VERSION >= 5
        db.import_documents(
            [
                ("new.json", profile()),
                ("old.json", old),
                ("empty.json", profile([[], []]) | {"program": "empty"}),
            ]
        )
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute(
            "SELECT run_id, pe, access, cpu_s, samples FROM category_time "
            "ORDER BY run_id, pe, access"
        ).fetchall()
    assert len(rows) == 7 and rows[0] == (1, 0, IDLE, 0.0625, 6)
    runs = {r.program: r for r in load_profiles(db_path)}
    from_file = RunProfile.from_document(profile())
    for a, b in zip(runs["pipe"].pes, from_file.pes):
        assert a.categories == b.categories
    assert runs["pipe"].category_totals() == from_file.category_totals()
    assert not runs["old"].has_categories and runs["old"].pes[1].categories is None
    assert runs["empty"].has_categories and runs["empty"].pes[0].categories == []


def test_a_database_of_version_4_gets_the_table_and_keeps_its_runs(tmp_path):
    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, target=4) == 4
    conn.close()
    old = profile()
    for pe in old["pes"]:
        del pe["categories"]
    with ProfileDB(path, migrate=False) as db:  # a run stored by an mprof before migration 5
        db.conn.execute("BEGIN")
        db.conn.execute(
            "INSERT INTO runs (id, program, npes, imported_at, document_sha256, "
            "document) VALUES (1, 'old', 2, 'x', 'sha', '{}')"
        )
        for pe in (0, 1):
            db.conn.execute(
                "INSERT INTO pe_samples (run_id, pe, elapsed_s, idle_s, cpu_s, "
                "idle_cpu_s) VALUES (1, ?, 1.5, 0.4, 1.0, 0.1)",
                (pe,),
            )
        db.conn.execute("COMMIT")
    (run,) = load_profiles(path)  # read-only: the old schema as it is
    assert not run.has_categories
    with ProfileDB(path) as db:
        assert db.version >= 5
        db.import_documents([("new.json", profile())])
    runs = load_profiles(path)
    assert [r.has_categories for r in runs] == [False, True]


def test_a_pe_without_samples_counts_as_not_sampled():
    """The runtime leaves the key out on a PE that took no sample: the run still measured its
    categories, and that PE's CPU time is kept apart so that the rows add up to the run."""
    doc = profile()
    del doc["pes"][1]["categories"]
    validate_profile(doc, "run.json")
    run = RunProfile.from_document(doc)
    assert run.has_categories and run.pes[1].categories is None
    totals = run.category_totals()
    assert totals["(not sampled)"] == doc["pes"][1]["cpu_s"]
    assert sum(totals.values()) == pytest.approx(run.time("cpu"))
