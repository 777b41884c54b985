"""benchmarks/micro/rt_workload: malformed arguments are a usage error, not a silent zero."""

import subprocess

import pytest


@pytest.mark.parametrize(
    "args, message",
    [
        (["2", "x", "1", "16"], "FIBERS must be an integer in [0, 9223372036854775807] (got 'x')"),
        (["0", "1", "1", "16"], "PES must be an integer in [1, 9223372036854775807] (got '0')"),
        (
            ["2", "1", "1", "16", "-1"],
            "SELF must be an integer in [0, 9223372036854775807] (got '-1')",
        ),
        (["2", "1", "1", "2000"], "BYTES must be at most 1024"),
        (["2", "1", "1"], "usage:"),
    ],
)
def test_bad_arguments_are_a_usage_error(cmake_build, args, message):
    exe = cmake_build("build", targets=["rt_workload"]) / "benchmarks" / "micro" / "rt_workload"
    run = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=20)
    assert run.returncode == 2 and message in run.stderr
