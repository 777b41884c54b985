"""mprof.io: readers and writers registered by format name, one signature per kind."""

from __future__ import annotations

import json

import pytest

from mprof import io
from mprof.db.store import Condition, ProfileDB
from mprof.errors import MprofError
from mprof.profile import load_profiles


def test_a_file_is_read_by_its_format_whatever_its_suffix(pipe_db, tmp_path):
    disguised = tmp_path / "runs.json"  # a database, named like a profile file
    disguised.write_bytes(pipe_db.read_bytes())
    assert io.format_of(disguised).name == "sqlite"
    runs = io.read(disguised)
    assert [r.id for r in runs] == [r.id for r in load_profiles(pipe_db)]
    with ProfileDB(pipe_db, create=False) as db:
        run_id, doc = next(db.documents())
    profile = tmp_path / "run.json"
    profile.write_text(json.dumps(doc))
    assert io.format_of(profile).name == "json"
    [run] = io.read(profile)
    assert run.id == 1 and run.params == runs[0].params
    m = runs[0].params["M"]
    assert len(io.read(pipe_db, [Condition("M", str(m))])) == sum(
        1 for r in runs if r.params["M"] == m
    )


def test_unknown_formats_are_errors_that_name_the_known_ones(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(MprofError, match=r"notes.txt: not a format mprof reads.*sqlite"):
        io.read(text)
    with pytest.raises(MprofError, match=r"no writer for format 'json'.*extrap"):
        io.writer("json")
    with pytest.raises(MprofError, match="registered twice"):
        io.register(io.Format("extrap"))


def test_the_extrap_writer_is_what_db_export_writes(pipe_db, tmp_path):
    from mprof.cli import main

    by_cli = tmp_path / "cli.jsonl"
    assert main(["db", "export", str(pipe_db), "--format", "extrap", "-o", str(by_cli)]) == 0
    direct = tmp_path / "direct.jsonl"
    message = io.writer("extrap")(io.read(pipe_db), direct, io.WriteOptions(measure="cpu"))
    assert direct.read_text() == by_cli.read_text() and "Extra-P" in message
