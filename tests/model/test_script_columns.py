"""Modeling-script errors carry a column: `file:line:column: message`."""

from mprof.cli import main


def fit_error(tmp_path, capsys, text):
    script = tmp_path / "m.tcl"
    script.write_text(text)
    assert main(["fit", str(script)]) == 2
    return capsys.readouterr().err.strip()


def test_a_misspelled_command_is_pointed_at(tmp_path, capsys):
    err = fit_error(tmp_path, capsys, "Measure cpu\nforeach x {1} {\n    set y [Bogus 1]\n}\n")
    assert f'{tmp_path / "m.tcl"}:3:12: invalid command name "Bogus"' in err


def test_a_failing_directive_is_pointed_at_where_it_starts(tmp_path, capsys):
    err = fit_error(tmp_path, capsys, "Measure cpu\n  FitDatabase: /no/such.db\n")
    assert f"{tmp_path / 'm.tcl'}:2:3: profile database /no/such.db not found" in err
