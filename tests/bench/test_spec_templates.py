"""Sweep specs with bad command templates, environments, parameters or databases are refused
when read (`file:line:column: message`), before anything runs or any database is created; the
same checks hold for `mprof gate run --baseline-cmd/--candidate-cmd`."""

from pathlib import Path

import pytest

from mprof.cli import main

HERE = Path(__file__).resolve().parent

SPEC = """\
program = "{program}"
command = "{{python}} {{program}} {{npes}} {{work}} 0 {count}"
database = "{database}"
npes = [1]
timeout_s = 20

[params]
work = [10, 20]

[env]
MPROF_AGG_BYTES = ["0"]
"""


def write(tmp_path, *, command=None, database="out/sweep.db", params="", env="", top=""):
    text = SPEC.format(
        program=HERE / "fake_program.py", count=tmp_path / "count.txt", database=database
    )
    if command is not None:
        text = text.replace(text.splitlines()[1], f"command = {command}")
    text = text.replace("timeout_s = 20\n", f"timeout_s = 20\n{top}")
    text = text.replace("[params]\n", f"[params]\n{params}").replace("[env]\n", f"[env]\n{env}")
    spec = tmp_path / "sweep.toml"
    spec.write_text(text)
    return spec


def refused(tmp_path, capsys, spec, *extra, dry_run=False):
    args = ["bench", *(["--dry-run"] if dry_run else []), *extra, str(spec)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "count.txt").exists()
    return err


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    "command, message",
    [
        (
            '"{python} {program} {npes} {work} 16 \'0"',
            "sweep.toml:2:11: command does not split like a shell command line: no closing quotation",
        ),
        (
            '"{python} {program} {npes} {work:>99999999999}"',
            "sweep.toml:2:11: command: {work:>99999999999}: the width 99999999999 is more than 1000",
        ),
        ('"{python} {program} {npes} {work:.5000f}"', "the precision 5000 is more than 1000"),
        (
            '"{python} {program} {npes} {work:s}"',
            "{work:s} cannot format the value 10: Unknown format code 's'",
        ),
        ('"{python} {program} {npes} {work!z}"', "unknown conversion '!z'"),
        ('"{python} {program} {npes} {work:{npes}}"', "a format spec cannot hold a placeholder"),
        ('"{python} {program} {npes:x<5} {work}"', None),  # a good format spec is accepted
    ],
)
def test_command_templates_are_checked_at_load(tmp_path, capsys, command, message, dry_run):
    spec = write(tmp_path, command=command)
    if message is None:
        assert main(["bench", "--dry-run", str(spec)]) == 0
        assert " 1xxxx 10 " in capsys.readouterr().out
        return
    assert message in refused(tmp_path, capsys, spec, dry_run=dry_run)


def test_a_text_value_that_unbalances_the_quotes_is_refused(tmp_path, capsys):
    spec = write(
        tmp_path, command='"{python} {program} {npes} {work} {tag}"', params='tag = ["a", "b\'"]\n'
    )
    err = refused(tmp_path, capsys, spec)
    assert "sweep.toml:2:11: command does not split" in err


@pytest.mark.parametrize(
    "where, entry, message",
    [
        (
            "env",
            'MPROF_OUT = "/tmp/x.json"\n',
            "sweep.toml:11:13: env.MPROF_OUT: MPROF_OUT is set by mprof bench for every run",
        ),
        ("env", 'MPROF_PES = "2"\n', "sweep.toml:11:13: env.MPROF_PES: MPROF_PES is set"),
        ("top", 'env = {MPROF_PES = "2"}\n', "sweep.toml:6:7: env.MPROF_PES: MPROF_PES is set"),
        ("env", '"A=B" = "1"\n', "env.A=B: 'A=B' is not an environment variable name"),
        ("env", '"A\\u0000B" = "1"\n', r"'A\x00B' is not an environment variable name"),
        ("env", 'TAG = "x\\u0000y"\n', "sweep.toml:11:7: env.TAG: a value holds a NUL character"),
        ("params", 'tag = ["x\\u0000y"]\n', "sweep.toml:8:7: params.tag: a value holds a NUL"),
        ("params", "npes = [4]\n", "sweep.toml:8:8: params.npes: 'npes' is a built-in placeholder"),
        ("params", 'program = ["x"]\n', "params.program: 'program' is a built-in placeholder"),
    ],
)
def test_environment_and_parameters_are_checked_at_load(tmp_path, capsys, where, entry, message):
    spec = write(tmp_path, **{where: entry})
    if where == "top":  # an inline env table replaces the [env] one
        spec.write_text(spec.read_text().replace('[env]\nMPROF_AGG_BYTES = ["0"]\n', ""))
    assert message in refused(tmp_path, capsys, spec)


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    "database, message",
    [
        (
            "/proc/nonexist/bench.db",
            "sweep.toml:3:12: database: cannot create "
            "/proc/nonexist/bench.db: /proc is not writable",
        ),
        ("sweep.toml/bench.db", "sweep.toml is not a folder"),
        (".", "is a folder, not a database file"),
    ],
)
def test_databases_that_cannot_be_created_are_refused(tmp_path, capsys, database, message, dry_run):
    if not database.startswith("/"):
        database = str(tmp_path / database)
    spec = write(tmp_path, database=database)
    assert message in refused(tmp_path, capsys, spec, dry_run=dry_run)


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_db_option_that_cannot_be_created_is_refused(tmp_path, capsys, dry_run):
    spec = write(tmp_path)
    err = refused(tmp_path, capsys, spec, "--db", "/proc/nonexist/x.db", dry_run=dry_run)
    assert "--db: cannot create /proc/nonexist/x.db" in err


@pytest.mark.parametrize(
    "option, message",
    [
        ("{program", "--baseline-cmd: template '{program': expected '}' before end of string"),
        ("'x", "--baseline-cmd does not split like a shell command line: no closing quotation"),
        ("{program} {nope}", "--baseline-cmd uses unknown placeholder 'nope'"),
        ("{program} {work:>99999999999}", "--baseline-cmd: {work:>99999999999}: the width"),
    ],
)
def test_gate_run_command_templates_are_checked(tmp_path, capsys, option, message):
    spec = write(tmp_path)
    out = tmp_path / "gate-out"
    assert (
        main(
            [
                "gate",
                "run",
                "--spec",
                str(spec),
                "--baseline-cmd",
                option,
                "--candidate-bin",
                "/bin/true",
                "--out-dir",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "internal error" not in err, err
    assert not out.exists()


def test_gate_run_refuses_a_spec_with_a_bad_command(tmp_path, capsys):
    spec = write(tmp_path, command='"{python} {program} \'0"')
    assert (
        main(
            [
                "gate",
                "run",
                "--spec",
                str(spec),
                "--baseline-bin",
                "/bin/true",
                "--candidate-bin",
                "/bin/true",
                "--out-dir",
                str(tmp_path / "g"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "sweep.toml:2:11: command does not split" in err and "Traceback" not in err, err


def test_gate_run_out_dir_that_cannot_be_created(tmp_path, capsys):
    spec = write(tmp_path)
    assert (
        main(
            [
                "gate",
                "run",
                "--spec",
                str(spec),
                "--baseline-bin",
                "/bin/true",
                "--candidate-bin",
                "/bin/true",
                "--out-dir",
                "/proc/nonexist",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--out-dir: cannot create /proc/nonexist/baseline.db" in err, err


@pytest.mark.parametrize(
    "params, top, message",
    [
        # values the program would get as Python's text of them
        (
            "when = [1979-05-27]\n",
            "",
            "sweep.toml:8:8: params.when: values must be numbers or strings, not a date or time",
        ),
        (
            "at = [07:32:00]\n",
            "",
            "sweep.toml:8:6: params.at: values must be numbers or strings, not a date or time",
        ),
        ("flag = [true, false]\n", "", "sweep.toml:8:8: params.flag: true is not a value here"),
        ('self = [0, "0"]\n', "", "sweep.toml:8:8: params.self: value '0' is repeated"),
        # the database keeps 64-bit integers: its export would not import again
        (
            "big = [1, 18446744073709551616]\n",
            "",
            "sweep.toml:8:7: params.big: 18446744073709551616 does not fit 64 bits",
        ),
        (
            "small = [-9223372036854775809]\n",
            "",
            "sweep.toml:8:9: params.small: -9223372036854775809 does not fit 64 bits",
        ),
        # tomllib recurses once per level of nesting
        ("deep = " + "[" * 65 + "]" * 65 + "\n", "", "sweep.toml:8:72: invalid TOML: arrays or"),
        # names the command could not refer to as {name}
        ('"0" = [1]\n', "", "sweep.toml:8:7: params.0: '0' cannot name a parameter"),
        ('"" = [1]\n', "", "sweep.toml:8:6: params.: '' cannot name a parameter"),
        ('"a.b" = [1]\n', "", "sweep.toml:8:9: params.a.b: 'a.b' cannot name a parameter"),
        ('"a[0]" = [1]\n', "", "'a[0]' cannot name a parameter"),
        ('"a!r" = [1]\n', "", "'a!r' cannot name a parameter"),
        # keys of the spec itself
        ("", "root = 5\n", "sweep.toml:6:8: root: expected a non-empty string, got 5"),
        ("", 'root = "a\\u0000b"\n', "sweep.toml:6:8: root: the path holds a NUL character"),
        ("", "colour = 1\n", "sweep.toml:6:10: colour: unknown key; a sweep spec has"),
        (
            "",
            "repetition = 2\n",
            "sweep.toml:6:14: repetition: unknown key (did you mean repetitions?)",
        ),
        (
            "",
            "repetitions = 1000001\n",
            "sweep.toml:6:15: repetitions: expected a whole number in [1, 1000000], got 1000001",
        ),
    ],
)
def test_bad_values_and_keys_are_refused_at_their_place(tmp_path, capsys, params, top, message):
    spec = write(tmp_path, params=params, top=top)
    assert message in refused(tmp_path, capsys, spec, dry_run=True)


def test_a_key_inside_a_multiline_string_is_not_taken_for_one(tmp_path, capsys):
    spec = write(tmp_path, top='description = """\nnpes = 1\n"""\n')
    spec.write_text(spec.read_text().replace("npes = [1]", "npes = [0]"))
    assert "sweep.toml:4:8: npes: expected a whole number in [1, 4096], got 0" in refused(
        tmp_path, capsys, spec, dry_run=True
    )


def test_a_command_that_is_no_string_is_refused_at_its_place(tmp_path, capsys):
    spec = write(tmp_path, command='["a"]')
    assert "sweep.toml:2:11: command: expected a non-empty string, got ['a']" in refused(
        tmp_path, capsys, spec, dry_run=True
    )


def test_an_array_of_tables_for_params_is_refused_at_its_place(tmp_path, capsys):
    spec = write(tmp_path)
    spec.write_text(
        spec.read_text().replace("[params]\nwork = [10, 20]\n", "[[params]]\nwork = [10, 20]\n")
    )
    assert "sweep.toml:7:1: params: [params] must be a table" in refused(
        tmp_path, capsys, spec, dry_run=True
    )
