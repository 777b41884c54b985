"""The C and C++ sources follow .clang-format (the templates of generated hooks excepted)."""

import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def c_sources() -> list[str]:
    files = subprocess.run(
        ["git", "ls-files", "*.c", "*.h", "*.cpp"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [f for f in files if "templates/" not in f]


def test_c_sources_are_clang_formatted():
    files = c_sources()
    assert len(files) > 20
    run = subprocess.run(
        ["clang-format", "--dry-run", "--Werror", *files],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, "run clang-format -i on:\n" + run.stderr[:4000]
