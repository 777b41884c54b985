"""What the installation tests share: running a command that must succeed, and the build
tree installed into a temporary prefix (a fixture, once per test module)."""

from __future__ import annotations

import subprocess

import pytest


def run(cmd, **kwargs):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def prefix(build_dir, tmp_path_factory):
    dest = tmp_path_factory.mktemp("install") / "prefix"
    run(["cmake", "--install", build_dir, "--prefix", dest])
    return dest
