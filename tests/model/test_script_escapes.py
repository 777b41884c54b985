"""A modeling script ended by a command that is not an error where it runs (`break` or
`continue` outside a loop, `return -code ...` at a file's top level) and a model file named
before the fit that cannot be written after it: each error names the line that caused it,
as every other script error does (file:line:column)."""

import pytest
from model_helpers import BASE_SCRIPT, write_script

from mprof.cli import main


def fit_error(capfd, script, *flags):
    capfd.readouterr()
    assert main(["fit", *flags, str(script)]) == 2
    out = capfd.readouterr()  # the script's puts writes to the process's own stdout
    assert "Traceback" not in out.err
    return out.err.strip().splitlines()[-1], out.out


@pytest.mark.parametrize("flags", [[], ["--unsafe-tcl"]])
@pytest.mark.parametrize(
    "ending, message",
    [
        ("break", 'invoked "break" outside of a loop'),
        ("continue", 'invoked "continue" outside of a loop'),
        ("return -code 5 x", "command returned bad code: 5"),
        ("return -code error stopped", "stopped"),
    ],
)
def test_an_escape_at_top_level_is_pointed_at(tmp_path, capfd, pipe_dbs, flags, ending, message):
    # a loop's own break before it must not be taken for the one that ended the script
    script = write_script(
        tmp_path,
        BASE_SCRIPT + "foreach i {1 2} { break }\nset x 1\nif {$x} {\n"
        f"    {ending}\n}}\nFit\n",
    )
    err, _ = fit_error(capfd, script, *flags)
    assert err == f"mprof: {script}:10:5: {message}"


@pytest.mark.parametrize("flags", [[], ["--unsafe-tcl"]])
def test_a_sourced_files_break_goes_on_to_its_source_command(
    tmp_path, capfd, pipe_dbs, flags, monkeypatch
):
    """As in Tcl: inside a loop it ends the loop; at the top level it is an error at the
    sourced file's line."""
    monkeypatch.chdir(tmp_path)  # full Tcl (--unsafe-tcl) sources from the working folder
    (tmp_path / "part.tcl").write_text("set y 1\nbreak\n")
    script = write_script(
        tmp_path,
        BASE_SCRIPT + "foreach i {1 2} {\n    source part.tcl\n"
        '    puts "after source"\n}\nputs "after loop"\nflush stdout\n'
        "source part.tcl\n",
    )
    err, out = fit_error(capfd, script, *flags)
    assert "after source" not in out and "after loop" in out, (out, err)
    assert err == f'mprof: {tmp_path / "part.tcl"}:2:1: invoked "break" outside of a loop'


def test_a_sourced_file_holding_nul_is_named_at_the_source_command(tmp_path, capfd, pipe_dbs):
    """Tcl stops at a NUL byte with the message "error"; the script says which file and line."""
    (tmp_path / "part.tcl").write_bytes(b"set y 1\nset z \0\n")
    script = write_script(tmp_path, BASE_SCRIPT + "source part.tcl\n")
    err, _ = fit_error(capfd, script)
    assert err == f"mprof: {script}:7:1: source: part.tcl: a NUL byte on line 2: a script is text"


@pytest.mark.parametrize("explicit_fit", [False, True])
def test_a_model_named_before_the_fit_that_cannot_be_written_names_its_line(
    tmp_path, capfd, pipe_dbs, explicit_fit
):
    """The file is written after the fit (the script's end, or a later Fit): its refusal,
    here a model file over the fit database, is reported at the SaveModel line."""
    fit, _ = pipe_dbs
    before = fit.read_bytes()
    script = write_script(
        tmp_path, BASE_SCRIPT + "SaveModel fit.db\nset x 1\n" + ("Fit\n" if explicit_fit else "")
    )
    err, _ = fit_error(capfd, script)
    assert err.startswith(f"mprof: {script}:7:1: SaveModel: cannot write model {fit}: ")
    assert "it is an input of this command" in err and err.endswith("(after the fit)")
    assert fit.read_bytes() == before
