"""A command's output file is never one of its inputs: `-o`, `--html`, `--junit` or a fit's
SaveModel naming a file the command reads (by its name, another path or a symbolic link) is
refused with one line, and the input is left byte for byte as it was (mprof.files)."""

import json

import pytest
from model_helpers import BASE_SCRIPT, write_script

from mprof.cli import main


def refused(capsys, argv, victim):
    before = victim.read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    out = capsys.readouterr().err.strip()
    assert victim.read_bytes() == before
    assert "Traceback" not in out
    err = out.splitlines()[-1]  # after any warnings
    assert "it is an input of this command" in err, out
    return err


def test_db_export_onto_its_database(tmp_path, capsys, pipe_dbs):
    fit, _ = pipe_dbs
    err = refused(capsys, ["db", "export", str(fit), "-o", str(fit)], fit)
    assert err.startswith(f"mprof: cannot write export {fit}: ")


def test_report_html_onto_its_profile_by_another_path(tmp_path, capsys, pipe_dbs, monkeypatch):
    fit, _ = pipe_dbs
    profile = tmp_path / "run.json"
    assert main(["db", "export", str(fit), "-o", str(tmp_path / "all.jsonl")]) == 0
    profile.write_text((tmp_path / "all.jsonl").read_text().splitlines()[0])
    json.loads(profile.read_text())
    link = tmp_path / "link.html"
    link.symlink_to(profile)
    monkeypatch.chdir(tmp_path)
    err = refused(capsys, ["report", "run.json", "--html", str(link)], profile)
    assert "read as run.json" in err


def test_gate_junit_onto_its_baseline(tmp_path, capsys, pipe_dbs):
    fit, _ = pipe_dbs
    candidate = tmp_path / "candidate.db"
    candidate.write_bytes(fit.read_bytes())
    err = refused(
        capsys,
        ["gate", "--baseline", str(fit), "--candidate", str(candidate), "-q", "--junit", str(fit)],
        fit,
    )
    assert f"cannot write {fit}" in err


def test_fit_saves_no_model_over_its_database(tmp_path, capsys, pipe_dbs):
    fit, _ = pipe_dbs
    script = write_script(tmp_path, BASE_SCRIPT + "Fit\nSaveModel fit.db\n")
    refused(capsys, ["fit", str(script)], fit)


def test_fit_saves_no_model_over_its_own_script(tmp_path, capsys, pipe_dbs):
    script = write_script(tmp_path, BASE_SCRIPT + "Fit\nSaveModel model.tcl\n")
    refused(capsys, ["fit", str(script)], script)


def test_fit_saves_no_model_over_a_file_it_sources(tmp_path, capsys, pipe_dbs):
    """A sourced file is an input too; a file beside the script that it does not source is
    written as any other output."""
    helper = tmp_path / "helper.tcl"
    helper.write_text("set unused 1\n")
    script = write_script(tmp_path, "source helper.tcl\n" + BASE_SCRIPT + "SaveModel helper.tcl\n")
    refused(capsys, ["fit", str(script)], helper)
    other = tmp_path / "other.tcl"
    other.write_text("set unused 1\n")
    script = write_script(tmp_path, BASE_SCRIPT + "SaveModel other.tcl\n", name="m2.tcl")
    assert main(["fit", str(script)]) == 0
    assert json.loads(other.read_text())["schema"] == "mprof.model"


@pytest.mark.parametrize("flag", ["-o", "--html"])
def test_an_output_that_is_no_input_is_written(tmp_path, pipe_dbs, flag):
    """The guard looks at the files, not at names: a new file and an old unrelated one are
    written as before."""
    fit, _ = pipe_dbs
    out = tmp_path / "other.txt"
    out.write_text("old")
    argv = (
        ["db", "export", str(fit), "-o", str(out)]
        if flag == "-o"
        else ["history", "show", str(tmp_path / "none.db"), "--html", str(out)]
    )
    if flag == "-o":
        assert main(argv) == 0 and out.read_text() != "old"
    else:
        assert main(argv) == 2 and out.read_text() == "old"  # no history: nothing to show


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_table_export_onto_its_database(tmp_path, capsys, pipe_dbs, fmt):
    fit, _ = pipe_dbs
    err = refused(
        capsys, ["db", "export", str(fit), "--format", fmt, "--table", "runs", "-o", str(fit)], fit
    )
    assert err.startswith(f"mprof: cannot write table {fit}: ")


def test_a_table_export_onto_its_model_file(tmp_path, capsys, pipe_dbs):
    fit, _ = pipe_dbs
    model = write_script(tmp_path, BASE_SCRIPT + "SaveModel m.json\n")
    assert main(["fit", str(model)]) == 0
    saved = tmp_path / "m.json"
    refused(
        capsys,
        [
            "db",
            "export",
            str(fit),
            "--format",
            "csv",
            "--table",
            "fits",
            "--model",
            str(saved),
            "-o",
            str(saved),
        ],
        saved,
    )


def test_a_model_no_table_uses_is_refused_before_anything_is_written(tmp_path, capsys, pipe_dbs):
    """--model with --table runs would be read by nothing, and -o naming it would have replaced
    it unnoticed: the option is refused instead."""
    fit, _ = pipe_dbs
    model = write_script(tmp_path, BASE_SCRIPT + "SaveModel m.json\n")
    assert main(["fit", str(model)]) == 0
    saved = tmp_path / "m.json"
    before = saved.read_bytes()
    capsys.readouterr()
    argv = ["db", "export", str(fit), "--format", "csv", "--table", "runs", "--model", str(saved)]
    assert main([*argv, "-o", str(saved)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "mprof: --model adds the tables cost_categories and fits; --table runs does not use it "
        "(leave it out, or name one of those tables)"
    )
    assert saved.read_bytes() == before


def test_tables_into_a_folder_holding_an_input_write_none(tmp_path, capsys, pipe_dbs):
    """Every table's file is checked before any is written: one that is the database (by a
    link) leaves the folder as it was."""
    fit, _ = pipe_dbs
    out = tmp_path / "tables"
    out.mkdir()
    (out / "statistics.csv").symlink_to(fit)
    refused(capsys, ["db", "export", str(fit), "--format", "csv", "-o", str(out)], fit)
    assert sorted(p.name for p in out.iterdir()) == ["statistics.csv"]
