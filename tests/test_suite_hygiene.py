"""The suite fails when something is broken: a build failure or a missing tool is an error,
never a skip or a stale artifact, and set-up is scripts/bootstrap.sh's job, not the tests'."""

import re
import shutil
from pathlib import Path

import pytest

import conftest

TESTS = Path(__file__).resolve().parent


def test_missing_build_tools_fail_instead_of_skipping(monkeypatch):
    conftest._built.clear()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    try:
        conftest.cmake_build("build-hygiene-never-created", targets=[])
    except pytest.skip.Exception:
        pytest.fail("a missing cmake skips the tests that need a build instead of failing")
    except conftest.BuildError as exc:
        assert "bootstrap" in str(exc)
    else:
        pytest.fail("no error without cmake")
    finally:
        conftest._built.clear()
    assert not (conftest.REPO_ROOT / "build-hygiene-never-created").exists()


def _sources():
    return [p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name]


def test_no_test_installs_anything():
    for path in _sources():
        text = path.read_text()
        assert not re.search(r"""["'](apt-get|apt|pip|dnf|yum)["']""", text), path


def test_builds_do_not_fall_back_to_other_projects_or_stale_artifacts():
    """One CMake tree builds the C code the tests run (plus the MPI test project); a failed
    build is not retried in a smaller standalone project, nor replaced by an old binary."""
    for path in _sources():
        text = path.read_text()
        for call in re.findall(r"cmake_build\([^)]*source=[^)]*\)", text):
            assert '"mpi"' in call, (path, call)
        assert not re.search(r"except[^\n]*(BuildError|RuntimeError|Exception)[^\n]*:\n"
                             r"(?:[^\n]*\n){0,3}[^\n]*(warn|skip|exists\(\))", text), path
    projects = [p.relative_to(TESTS).as_posix() for p in TESTS.rglob("CMakeLists.txt")
                if re.search(r"^\s*project\(", p.read_text(), re.M)]
    assert projects == ["mpi/CMakeLists.txt"], projects
