"""Values a run profile must not hold (lone surrogates, NUL in names, times and core counts no
run has, a start time that is not a date, idle time beyond the wall time) are rejected at import
with `file:line:column: path: message` and nothing stored; a database whose cells were damaged
after the import gives one line naming the run, table and column, never a traceback."""

import json
import shutil
import sqlite3

import pytest

from mprof.bench.synth import make_profile
from mprof.cli import main


def profile(npes=2):
    objects = [[("rts", {"P": 1, "MsgSent": 10 + pe})] for pe in range(npes)]
    doc = make_profile(
        "prog", objects, [0.5] * npes, params={"i": 1, "mode": "fast"}, pe_idle=[0.1] * npes
    )
    doc["argv"] = ["prog", "2"]
    doc["machine"] = {"hostname": "h", "cpu": "c", "cores": 2, "fingerprint": "0" * 16}
    return doc


def write(path, doc):
    # the JSON text the test means, with `\ud800` escapes kept as escapes (ensure_ascii)
    path.write_text(json.dumps(doc, indent=1))
    return path


def stored(db_path):
    if not db_path.exists():
        return None
    with sqlite3.connect(db_path) as conn:
        return [line for line in conn.iterdump()]


def rejected(tmp_path, capsys, doc):
    """Import `doc` into a database holding one good run; the error line, once checked that
    the database is unchanged."""
    return rejected_text(tmp_path, capsys, json.dumps(doc, indent=1))


def rejected_text(tmp_path, capsys, text, name="bad.json"):
    """Import raw text into a database holding one good run; the error line, once checked
    that the database is unchanged."""
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(write(tmp_path / "good.json", profile()))]) == 0
    before = stored(db_path)
    capsys.readouterr()
    (tmp_path / name).write_text(text)
    assert main(["db", "import", str(db_path), str(tmp_path / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert stored(db_path) == before and "Traceback" not in err and err.count("\n") == 0
    return err


def mutated(change):
    doc = profile()
    change(doc)
    return doc


SURROGATES = [
    (lambda d: d.update(program="\ud800"), "program"),
    (lambda d: d["machine"].update(hostname="a\udc00"), "machine.hostname"),
    (lambda d: d["params"].update({"k\ud800": 1}), "params.k\\ud800: the name is"),
    (lambda d: d["params"].update(mode="v\ud800"), "params.mode"),
    (lambda d: d["argv"].append("\ud800"), "argv[2]"),
    (
        lambda d: d["pes"][0]["objects"][0]["stats"].update({"S\ud800": 1}),
        "pes[0].objects[0].stats.S\\ud800: the name is",
    ),
    (lambda d: d.update(accesses=["unclassified", "m:\ud800"]), "accesses[1]"),
]


@pytest.mark.parametrize("change, where", SURROGATES)
def test_lone_surrogates_are_rejected_with_their_place(tmp_path, capsys, change, where):
    err = rejected(tmp_path, capsys, mutated(change))
    assert err.startswith(f"mprof: {tmp_path / 'bad.json'}:")
    assert f"{where}" in err and "not valid Unicode (a lone surrogate)" in err
    line, column = err.split(".json:", 1)[1].split(":")[:2]
    assert int(line) > 1 and int(column) > 1


def test_report_rejects_a_lone_surrogate(tmp_path, capsys):
    path = write(
        tmp_path / "r.json",
        mutated(lambda d: d["pes"][0]["objects"][0]["stats"].update({"S\ud800": 1})),
    )
    assert main(["report", str(path)]) != 0
    assert "not valid Unicode (a lone surrogate)" in capsys.readouterr().err


BAD_VALUES = [
    (
        lambda d: d["machine"].update(cores=2**64 - 1),
        "machine.cores: must be <= 2147483647, got 18446744073709551615",
    ),
    (lambda d: d.update(elapsed_s=1e308), "elapsed_s: a time must be at most 1e+07 s"),
    (
        lambda d: d["pes"][1].update(cpu_s=1e308, idle_cpu_s=0.0),
        "pes[1].cpu_s: a time must be at most 1e+07 s",
    ),
    (lambda d: d.update(started_at="yesterday"), "started_at: not an ISO 8601 date and time"),
    (lambda d: d.update(program="a\0b"), "program: must not contain a NUL character"),
    (lambda d: d["machine"].update(hostname="h\0"), "machine.hostname: must not contain a NUL"),
    (lambda d: d["params"].update({"a\0b": 1}), "params.a\\u0000b: must not contain a NUL"),
    (lambda d: d["params"].update({"": 1}), 'params: a name must not be empty ("": ...)'),
    (lambda d: d["pes"][1].update(idle_s=0.6), "pes[1].idle_s: idle time 0.6 s is more than"),
    (
        lambda d: d["pes"][0].update(cpu_s=0.2, idle_cpu_s=0.3),
        "pes[0].idle_cpu_s: the idle loop's CPU time 0.3 s is more than the PE's cpu_s 0.2 s",
    ),
    # latency and category rows name the run's registered categories, a pair once per PE
    (
        lambda d: d["accesses"].append("unclassified"),
        "accesses[1]: access category 'unclassified' is listed twice",
    ),
    (
        lambda d: d["pes"][1]["latency"].append(lat("unclassified", "lib:GONE")),
        "pes[1].latency[0].enabler: 'lib:GONE' is not an access category of this run",
    ),
    (
        lambda d: d["pes"][0]["latency"].extend([lat(), lat()]),
        "pes[0].latency[1]: a second row for access 'unclassified' enabled by 'unclassified'",
    ),
    (
        lambda d: d["pes"][0]["latency"].append(lat(count=0)),
        "pes[0].latency[0].count: a latency row counts at least one access",
    ),
    (
        lambda d: d["pes"][0].update(
            cpu_s=0.4,
            idle_cpu_s=0.0,
            categories=[
                {"access": "(scheduler)", "cpu_s": 0.1, "samples": 1},
                {"access": "lib:GONE", "cpu_s": 0.3, "samples": 3},
            ],
        ),
        "pes[0].categories[1].access: 'lib:GONE' is not an access category of this run",
    ),
    # a PE's CPU time with no category rows: the runtime leaves the key out where it took no
    # sample, and writes a row for what each sample charged
    (
        lambda d: d["pes"][1].update(cpu_s=0.4, idle_cpu_s=0.0, categories=[]),
        "pes[1].categories: no category rows, but the PE's cpu_s is 0.4 s",
    ),
]


def lat(access="unclassified", enabler="unclassified", count=2):
    return {
        "access": access,
        "enabler": enabler,
        "count": count,
        "observed_s": 0.01,
        "critical_s": 0.0,
    }


@pytest.mark.parametrize("change, message", BAD_VALUES)
def test_values_no_run_has_are_rejected(tmp_path, capsys, change, message):
    err = rejected(tmp_path, capsys, mutated(change))
    assert message in err and err.count("\n") == 0


GOOD_VALUES = [
    lambda d: d.update(started_at="2026-11-23T18:40:00Z"),
    lambda d: d.update(started_at="2026-11-23T18:40:00.123+01:00"),
    lambda d: d["machine"].update(cores=2**31 - 1),
    lambda d: d.update(elapsed_s=1e7),
    # idle_s equal to elapsed_s but for the rounding of the nine printed decimals
    lambda d: d["pes"][0].update(elapsed_s=0.5, idle_s=0.500000001),
    lambda d: d["pes"][0].update(cpu_s=0.25, idle_cpu_s=0.250000001),
    lambda d: d["params"].update(mode="\U0001f600 ünïcode"),
    # a profile of a runtime that wrote no `accesses`: its rows may name any category
    lambda d: (d.pop("accesses"), d["pes"][0]["latency"].append(lat("lib:A", "lib:B"))),
    # the same pair on two PEs, and the runtime's own rows among the categories
    lambda d: [pe["latency"].append(lat()) for pe in d["pes"]],
    lambda d: d["pes"][0].update(
        cpu_s=0.4,
        idle_cpu_s=0.1,
        categories=[
            {"access": "(scheduler)", "cpu_s": 0.1, "samples": 1},
            {"access": "(idle)", "cpu_s": 0.1, "samples": 1},
            {"access": "unclassified", "cpu_s": 0.2, "samples": 2},
        ],
    ),
    # sampled on a PE that used no CPU time: nothing to share out
    lambda d: d["pes"][1].update(cpu_s=0.0, idle_cpu_s=0.0, categories=[]),
]


@pytest.mark.parametrize("change", GOOD_VALUES)
def test_values_at_the_bounds_are_stored(tmp_path, change):
    path = write(tmp_path / "ok.json", mutated(change))
    assert main(["db", "import", str(tmp_path / "p.db"), str(path)]) == 0


# -- damaged cells -------------------------------------------------------------------------

DAMAGE = [
    ("UPDATE run_params SET value_json = '{bad' WHERE run_id = 1", "run_params", "value_json"),
    ("UPDATE runs SET argv = 'notjson' WHERE id = 1", "runs", "argv"),
    ("UPDATE runs SET accesses = '{}' WHERE id = 1", "runs", "accesses"),
    ("UPDATE object_stats SET value_exact = 'abc' WHERE run_id = 1", "object_stats", "value_exact"),
    ("UPDATE object_stats SET value = 'abc' WHERE run_id = 1", "object_stats", "value"),
    ("UPDATE pe_samples SET elapsed_s = 'x' WHERE run_id = 1", "pe_samples", "elapsed_s"),
    ("UPDATE latency SET count = 'x' WHERE run_id = 1", "latency", "count"),
    # infinities: SQLite reads 9e999 as one, and no profile holds one (imports refuse it)
    ("UPDATE object_stats SET value = 9e999 WHERE run_id = 1", "object_stats", "value"),
    ("UPDATE pe_samples SET elapsed_s = -9e999 WHERE run_id = 1", "pe_samples", "elapsed_s"),
    ("UPDATE latency SET observed_s = 9e999 WHERE run_id = 1", "latency", "observed_s"),
]


@pytest.fixture(scope="module")
def good_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("damage")
    doc = profile()
    doc["pes"][0]["latency"] = [
        {
            "access": "unclassified",
            "enabler": "unclassified",
            "count": 3,
            "observed_s": 0.01,
            "critical_s": 0.005,
        }
    ]
    docs = [write(tmp / f"{i}.json", {**doc, "params": {"i": i, "mode": "fast"}}) for i in range(2)]
    assert main(["db", "import", str(tmp / "good.db"), *map(str, docs)]) == 0
    return tmp / "good.db"


# Every command that reads a damaged cell; db list reads the runs and their parameters only.
CASES = [
    (update, table, column, command)
    for update, table, column in DAMAGE
    for command in (["db", "list"], ["db", "show", "1"], ["db", "export"], ["gate"])
    if command != ["db", "list"] or table == "run_params"
]


@pytest.mark.parametrize("update, table, column, command", CASES)
def test_damaged_cells_are_one_line(tmp_path, capsys, good_db, update, table, column, command):
    db_path = tmp_path / "c.db"
    shutil.copy(good_db, db_path)
    with sqlite3.connect(db_path) as conn:
        conn.execute(update)
    if command == ["gate"]:
        args = ["gate", "--baseline", str(good_db), "--candidate", str(db_path)]
    else:
        args = [*command[:2], str(db_path), *command[2:]]
    code = main(args)
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "internal error" not in err
    assert f"{db_path}: run 1: damaged value in table {table} (column {column})" in err


def test_a_file_name_that_is_not_utf8_is_kept_escaped(tmp_path, capsys):
    """A name with a byte that is not UTF-8 reaches Python as a lone surrogate, which SQLite
    cannot store: the run is imported and its source kept with the byte escaped."""
    name = tmp_path / "run\udcff.json"  # the file name's byte 0xff
    write(name, profile())
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(name)]) == 0
    with sqlite3.connect(db_path) as conn:
        (source,) = conn.execute("SELECT source FROM runs").fetchone()
    assert source == str(tmp_path / "run\\xff.json")
    assert main(["db", "list", str(db_path)]) == 0


# A run that records the digest of its interface's text is checked against that text: each
# statistic declared there, and a value of its declared type.
TYPED_PERF = """interface typed  -- statistics of each type

statistics
  P            -- Partitions per processor (= 1)
  Count        -- an unsigned counter (u64, the default)
  Delta : i64    -- a signed statistic
  Mean : double  -- a real-valued statistic

terms
  T  -- everything
     { T = Count + Delta + Mean; }

categories
  ALL  -- all of it
       { P T }
"""


@pytest.fixture
def typed(tmp_path, monkeypatch):
    """A profile with a `typed` object whose interface the registry finds by its digest."""
    from mprof.iface.registry import digest

    folder = tmp_path / "perf"
    folder.mkdir()
    (folder / "typed.perf").write_text(TYPED_PERF)
    monkeypatch.setenv("MPROF_PERF_PATH", str(folder))
    monkeypatch.setenv("MPROF_IFACE_STORE", str(tmp_path / "store"))

    def make(**stats):
        doc = profile()
        doc["interfaces"] = [{"name": "typed", "digest": digest(TYPED_PERF)}]
        values = {"P": 1, "Count": 3, "Delta": -2, "Mean": 0.25}
        values.update(stats)
        for pe in doc["pes"]:
            pe["objects"].append({"id": 7, "module": "typed", "stats": values})
        return doc

    return make


@pytest.mark.parametrize(
    "stats, message",
    [
        (
            {"Count": -1},
            "pes[0].objects[1].stats.Count: statistic 'Count' is a u64 in interface "
            "typed: between 0 and 18446744073709551615, got -1",
        ),
        ({"Count": 2.5}, "statistic 'Count' is a u64 in interface typed: a whole number, got 2.5"),
        (
            {"Delta": 2**63},
            "statistic 'Delta' is a i64 in interface typed: between "
            "-9223372036854775808 and 9223372036854775807",
        ),
        (
            {"Nope": 1},
            "pes[0].objects[1].stats.Nope: interface typed (the text this run was built with, ",
        ),
    ],
)
def test_statistics_contradicting_their_interface_are_rejected(
    tmp_path, capsys, typed, stats, message
):
    err = rejected(tmp_path, capsys, typed(**stats))
    assert message in err and err.count("\n") == 0


@pytest.mark.parametrize(
    "stats",
    [
        {"Count": 2**64 - 1, "Delta": -(2**63), "Mean": -1.5e300},
        {"Count": 0, "Delta": 2**63 - 1, "Mean": 7},
    ],
)
def test_statistics_of_their_types_are_stored(tmp_path, typed, stats):
    db_path = tmp_path / "p.db"
    doc = typed(**stats)
    assert main(["db", "import", str(db_path), str(write(tmp_path / "a.json", doc))]) == 0


def test_an_interface_text_not_at_hand_checks_nothing(tmp_path, typed, monkeypatch):
    """Without the recorded text (another machine's build), the statistics are not judged."""
    from mprof.db import validate

    monkeypatch.setenv("MPROF_PERF_PATH", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(validate, "_interfaces", {})  # what earlier imports found
    db_path = tmp_path / "p.db"
    doc = typed(Count=-1, Other=4)
    assert main(["db", "import", str(db_path), str(write(tmp_path / "a.json", doc))]) == 0


def test_a_key_named_twice_in_an_object_is_rejected_at_its_second_place(tmp_path, capsys):
    text = json.dumps(profile(), indent=1)
    text = text.replace('"program": "prog"', '"program": "prog",\n "program": "other"', 1)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(' "program": "o'))
    err = rejected_text(tmp_path, capsys, text)
    assert (
        err == f'mprof: {tmp_path / "bad.json"}:{line}:2: key "program" appears twice in '
        "one object (each key once)"
    )


def test_a_key_in_two_objects_is_no_duplicate(tmp_path):
    doc = profile()
    doc["pes"][0]["latency"] = [lat()]
    doc["pes"][1]["latency"] = [lat()]
    path = write(tmp_path / "a.json", doc)
    assert main(["db", "import", str(tmp_path / "p.db"), str(path)]) == 0


def test_errors_in_a_json_lines_export_name_the_files_line(tmp_path, capsys):
    good, bad = profile(), profile()
    bad["elapsed_s"] = -1
    first = json.dumps(good)
    text = first + "\n\n" + json.dumps(bad) + "\n"  # a blank line between: the bad run is line 3
    column = json.dumps(bad).index('"elapsed_s": -1') + len('"elapsed_s": ') + 1
    err = rejected_text(tmp_path, capsys, text, "runs.jsonl")
    assert err.startswith(f"mprof: {tmp_path / 'runs.jsonl'}:3:{column}: elapsed_s: "), err
    err = rejected_text(tmp_path, capsys, first + "\n" + first[:200] + "\n", "cut.jsonl")
    assert err.startswith(f"mprof: {tmp_path / 'cut.jsonl'}:2:"), err
    assert "not valid JSON" in err and "(the file looks truncated)" in err


def test_an_integer_of_thousands_of_digits_is_located(tmp_path, capsys):
    text = json.dumps(profile(), indent=1).replace('"npes": 2', '"npes": ' + "9" * 5000, 1)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(' "npes"'))
    err = rejected_text(tmp_path, capsys, text)
    assert (
        err == f"mprof: {tmp_path / 'bad.json'}:{line}:10: integer of 5000 digits does not "
        "fit 64 bits (-2^63 .. 2^64-1)"
    )


def test_a_database_of_a_newer_mprof_is_named_and_left_alone(tmp_path, capsys):
    db_path = tmp_path / "p.db"
    assert main(["db", "import", str(db_path), str(write(tmp_path / "good.json", profile()))]) == 0
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO schema_version (version, name) VALUES (999, 'future')")
    conn.close()
    before = stored(db_path)
    capsys.readouterr()
    for argv in (
        ["db", "import", str(db_path), str(tmp_path / "good.json")],
        ["db", "list", str(db_path)],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"mprof: {db_path}: database schema version 999 is newer"), err
    assert stored(db_path) == before


def test_a_file_that_is_no_json_object_is_not_called_truncated(tmp_path, capsys):
    err = rejected_text(tmp_path, capsys, "\x00\x01\x02abc", "bin.json")
    assert err.startswith(f"mprof: {tmp_path / 'bin.json'}:1:1: not valid JSON"), err
    assert "truncated" not in err and "is one JSON object" in err
