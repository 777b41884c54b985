"""Shared helpers of the interface-language tests (a uniquely named module, so it cannot
clash with other test directories' helpers)."""

import shutil
import subprocess
from pathlib import Path

DATA = Path(__file__).with_name("data")
ROOT = Path(__file__).resolve().parents[2]
RUNTIME_INCLUDE = ROOT / "runtime" / "include"

INTERFACES = {
    "pipe": DATA / "pipe.perf",
    "graph": DATA / "graph.perf",
    "rts": ROOT / "runtime" / "rts.perf",
}

CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror"]


def compilers():
    return [cc for cc in ("gcc", "clang") if shutil.which(cc)]


def run(cmd, **kwargs):
    """Runs a command; on failure the assertion shows its output."""
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc
