"""The suite fails when something is broken: a build failure or a missing tool is an error,
never a skip or a stale artifact, and set-up is scripts/bootstrap.sh's job, not the tests'."""

import re
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _suite_conftest():
    """tests/conftest.py as a module of its own ("conftest" may name another folder's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("suite_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_build_tools_fail_instead_of_skipping(monkeypatch):
    conftest = _suite_conftest()
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


def test_missing_tools_fail_instead_of_skipping():
    """Tests that need a tool call tooling.require_tool, which fails; the only skips left are
    of tests for machines without hardware counters, which a machine with them cannot run."""
    for path in _sources():
        for line in path.read_text().splitlines():
            if re.search(r"skipif|pytest\.skip\(|importorskip", line):
                assert "hardware_counters_available()" in line, (path, line)


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
        assert not re.search(
            r"except[^\n]*(BuildError|RuntimeError|Exception)[^\n]*:\n"
            r"(?:[^\n]*\n){0,3}[^\n]*(warn|skip|exists\(\))",
            text,
        ), path
    projects = [
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("CMakeLists.txt")
        if re.search(r"^\s*project\(", p.read_text(), re.M)
    ]
    assert projects == ["mpi/CMakeLists.txt"], projects


def test_sources_cite_what_a_reader_has():
    """The dissertation is cited by author and title (README: Reference), the architecture is
    docs/architecture.md; no file points at documents outside the repository."""
    import subprocess

    root = TESTS.parent
    files = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert (root / "docs" / "architecture.md").is_file()
    for name in files:
        path = root / name
        if (
            path.suffix
            in (".py", ".md", ".perf", ".c", ".h", ".tcl", ".toml", ".sh", ".txt", ".j2", ".sql")
            and path.is_file()
            and path.name != Path(__file__).name
        ):
            text = path.read_text(errors="replace")
            assert not re.search(r"DESIGN\.md|seeds?[ /]0\d\d", text), name
            # nor the tracker's numbers: a reader has the repository, not the issues
            assert not re.search(r"\bissue #?\d+", text, re.I), name


def test_package_metadata_uses_current_setuptools_fields():
    """`project.license` as a table makes setuptools print a deprecation warning three times
    during `pip install -e .` (scripts/bootstrap.sh): an SPDX string needs setuptools >= 77."""
    import tomllib

    data = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    assert isinstance(data["project"]["license"], str)
    assert any(
        r.replace(" ", "").startswith("setuptools>=")
        and tuple(map(int, r.split(">=")[1].split("."))) >= (77,)
        for r in data["build-system"]["requires"]
    )
