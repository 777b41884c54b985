"""The Python sources follow ruff's format and pass its checks (pyproject.toml, [tool.ruff])."""

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# ruff installs into the virtual environment beside the interpreter that runs the suite
RUFF = Path(sys.executable).parent / "ruff"


def py_sources() -> list[str]:
    return subprocess.run(
        ["git", "ls-files", "*.py"], cwd=REPO_ROOT, check=True, capture_output=True, text=True
    ).stdout.split()


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), *args], cwd=REPO_ROOT, capture_output=True, text=True)


def test_python_sources_are_ruff_formatted():
    files = py_sources()
    assert len(files) > 100
    run = ruff("format", "--check", "--no-cache", *files)
    assert run.returncode == 0, "run `make format`:\n" + (run.stdout + run.stderr)[:4000]


def test_python_sources_pass_ruff_check():
    run = ruff("check", "--no-cache", *py_sources())
    assert run.returncode == 0, (run.stdout + run.stderr)[:4000]
