"""Bounded inputs: endless or huge files, a database locked by another process, huge names,
and expressions that are long but not deep."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time

import pytest
from faults_helpers import ROOT, assert_one_line_error, run_mprof

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB


def _env(**extra):
    return {**os.environ, **{k: str(v) for k, v in extra.items()}}


@pytest.mark.parametrize(
    "args,what",
    [
        (["db", "import", "{tmp}/x.db", "/dev/zero"], "run profile"),
        (["report", "/dev/zero"], "run profile"),
        (["latency", "/dev/zero"], "run profile"),
        (["model", "show", "/dev/zero"], "model"),
        (["iface", "compile", "/dev/zero", "-o", "{tmp}/gen"], "interface"),
        (["bench", "/dev/zero"], "sweep spec"),
    ],
)
def test_endless_inputs_are_refused_at_the_size_limit(tmp_path, args, what):
    args = [a.format(tmp=tmp_path) for a in args]
    start = time.monotonic()
    proc = run_mprof(*args, env=_env(MPROF_MAX_INPUT_MB=4), timeout=60)
    assert time.monotonic() - start < 30
    assert_one_line_error(proc, f"/dev/zero: {what} is larger than 4 MiB", "MPROF_MAX_INPUT_MB")
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "gen").exists()


def test_iface_check_of_an_endless_file(tmp_path):
    proc = run_mprof("iface", "check", "/dev/zero", env=_env(MPROF_MAX_INPUT_MB=4), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "/dev/zero: interface is larger than 4 MiB (set MPROF_MAX_INPUT_MB to read larger files)"
    )


def test_a_large_file_within_the_limit_is_read(tmp_path):
    doc = make_profile("p", [[("rts", {"P": 1})]], [0.1])
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc) + " " * (3 * 2**20))
    proc = run_mprof("db", "import", tmp_path / "x.db", path, env=_env(MPROF_MAX_INPUT_MB=4))
    assert proc.returncode == 0, proc.stderr
    proc = run_mprof("db", "import", tmp_path / "y.db", path, env=_env(MPROF_MAX_INPUT_MB=2))
    assert_one_line_error(proc, "larger than 2 MiB")


def test_a_bad_size_limit_setting_warns_and_uses_the_default(tmp_path):
    doc = make_profile("p", [[("rts", {"P": 1})]], [0.1])
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    proc = run_mprof("db", "import", tmp_path / "x.db", path, env=_env(MPROF_MAX_INPUT_MB="nan"))
    assert proc.returncode == 0, proc.stderr
    assert "mprof: ignoring MPROF_MAX_INPUT_MB=nan (" in proc.stderr
    assert "using the default 512" in proc.stderr


def test_a_locked_database_is_waited_for_with_a_bound_and_a_message(tmp_path):
    db = tmp_path / "x.db"
    doc = make_profile("p", [[("rts", {"P": 1})]], [0.1])
    with ProfileDB(db) as store:
        store.import_documents([("a", doc)])
    path = tmp_path / "run.json"
    path.write_text(json.dumps(make_profile("p", [[("rts", {"P": 2})]], [0.2])))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        start = time.monotonic()
        proc = run_mprof("db", "import", db, path, env=_env(MPROF_DB_LOCK_TIMEOUT=3))
        took = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == f"mprof: {db}: locked by another process; waiting up to 3 s"
    assert lines[1].startswith(f"mprof: {db}: the database is locked by another process")
    assert "MPROF_DB_LOCK_TIMEOUT" in lines[1] and "Traceback" not in proc.stderr
    assert 3 <= took < 30
    with ProfileDB(db, create=False) as store:
        assert len(store.runs()) == 1
    proc = run_mprof("db", "import", db, path)  # once the lock is gone
    assert proc.returncode == 0, proc.stderr


def test_huge_names_are_cut_in_messages(tmp_path):
    name = "N" * 10_000_000
    doc = make_profile("p", [[("rts", {"P": 1})]], [0.1])
    doc["pes"][0]["objects"][0]["stats"][name] = "not a number"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    proc = run_mprof("db", "import", tmp_path / "x.db", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr) < 10_000, len(proc.stderr)
    assert "characters left out" in proc.stderr
    proc = run_mprof("report", tmp_path / ("y" * 5000 + ".json"))
    assert proc.returncode == 2 and len(proc.stderr) < 10_000


# -- long expressions are not deep ---------------------------------------------------------


def _perf(nstats: int, margs: int) -> str:
    stats = [f"S{i}" for i in range(nstats)]
    return (
        "\n".join(
            [
                "interface wide -- many statistics",
                "statistics",
                *(f"  {s} -- s" for s in stats),
                "terms",
                "  Sum -- every statistic",
                "    { Sum = " + " + ".join(stats) + "; }",
                "  Mixed -- a chain of + and -",
                "    { Mixed = " + " - ".join(f"2 * {s}" for s in stats) + "; }",
                "  Top -- max of many",
                "    { Top = max(" + ", ".join(stats[i % nstats] for i in range(margs)) + "); }",
                "  Low -- min of many",
                "    { Low = min(" + ", ".join(f"{s} / 3" for s in stats[:margs]) + "); }",
                "categories",
                "  C -- c",
                "    { Sum Mixed Top Low }",
            ]
        )
        + "\n"
    )


def test_flat_sums_and_wide_functions_are_accepted_and_compile(tmp_path):
    from mprof.iface import load_interface

    perf = tmp_path / "wide.perf"
    perf.write_text(_perf(2000, 300))
    iface = load_interface(perf)
    stats = {f"S{i}": float(i) for i in range(2000)}
    values = iface.term_values(stats)
    assert values["Sum"] == float(sum(range(2000)))
    expected = 0.0
    for i in range(2000):
        expected = 2.0 * i if i == 0 else expected - 2.0 * i
    assert values["Mixed"] == expected
    assert values["Top"] == 299.0 and values["Low"] == 0.0
    out = tmp_path / "gen"
    proc = run_mprof("iface", "compile", "-q", perf, "-o", out)
    assert proc.returncode == 0, proc.stderr
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed"
    sources = sorted(out.glob("*.c"))
    assert sources
    for source in sources:
        proc = subprocess.run(
            [
                cc,
                "-std=c11",
                "-fsyntax-only",
                "-Wall",
                "-Werror",
                f"-I{out}",
                f"-I{ROOT / 'runtime/include'}",
                str(source),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    # and in text form, written back and read again, the same tree
    from mprof.iface.formatter import format_interface

    again = tmp_path / "again.perf"
    again.write_text(format_interface(iface))
    other = load_interface(again)
    assert [t.expr.key() for t in other.terms] == [t.expr.key() for t in iface.terms]
