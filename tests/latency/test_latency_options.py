"""`mprof latency` checks --digits, --roots and --min-fraction with the same argparse types as
`mprof report` (one definition, mprof.latency.cli): a bad value is a one-line usage error."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mprof.cli import main  # noqa: E402
from test_latency import profile_doc  # noqa: E402


@pytest.mark.parametrize("command", ["latency", "report"])
@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--digits", "-1", "expected a whole number in [0, 17], got -1"),
        ("--digits", "1000", "expected a whole number in [0, 17], got 1000"),
        ("--roots", "-1", "expected a whole number in [0, 1000000], got -1"),
        ("--roots", "99999999999", "expected a whole number in [0, 1000000], got 99999999999"),
        ("--min-fraction", "1", "expected a number in [0, 1), got 1"),
        ("--digits", "nan", "expected a whole number, got 'nan'"),
    ],
)
def test_out_of_range_options_are_usage_errors(tmp_path, capsys, command, option, value, message):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(profile_doc()))
    with pytest.raises(SystemExit) as exc:
        main([command, option, value, str(run)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {message}" in err and "Traceback" not in err, err


def test_options_in_range_are_used(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(profile_doc()))
    assert main(["latency", "--digits", "0", "--roots", "1", str(run)]) == 0
    out = capsys.readouterr().out
    assert "consume = 134 s" in out, out


def test_the_types_are_shared_with_report():
    from mprof.latency import cli as latency
    from mprof.report import cli as report

    assert report.DIGITS is latency.DIGITS and report.ROOTS is latency.ROOTS
