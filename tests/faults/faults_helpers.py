"""Shared pieces of the fault-injection suites: a small file system that fills up, and the
`mprof` command in a process of its own (what a user sees, tracebacks included)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/report"))
sys.path.insert(0, str(ROOT / "tests/gate"))
sys.path.insert(0, str(ROOT / "tests/model"))


def run_mprof(*args, cwd=None, stdout=subprocess.PIPE, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "mprof", *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def assert_one_line_error(proc, *words):
    """Exit 2, one `mprof: ...` line on stderr naming `words`, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("mprof: ", "mprof gate: error: ")), err
    for word in words:
        assert word in err, (word, err)


@contextlib.contextmanager
def small_fs(where: Path, size: str = "64k"):
    """A tmpfs of `size` mounted at `where`.  Missing tools or rights fail the test."""
    where.mkdir(parents=True, exist_ok=True)
    assert shutil.which("mount") and shutil.which("umount"), "mount(8) is needed"
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"cannot mount a tmpfs (the suite runs as root): {proc.stderr}"
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path) -> None:
    """Take every free block of `folder`'s file system."""
    fd = os.open(folder / ".filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    st = os.statvfs(folder)
    assert st.f_bavail == 0, "the file system did not fill up"


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep | {".filler"})
