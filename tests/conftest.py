"""Shared fixtures of the whole test suite: CMake build trees.

`cmake_build(name, sanitize=None, targets=None)` configures (once) and builds a build tree
under the repository root incrementally, so re-runs are fast:

    build       the normal build (what `cmake -S . -B build -G Ninja` makes)
    build-asan  -DMPROF_SANITIZE=address (ASan + UBSan)
    build-tsan  -DMPROF_SANITIZE=thread

Each (tree, targets) pair is built at most once per session, and builds of one tree are
serialised with a lock file, so several pytest processes (other engineers' suites in the same
checkout) do not run Ninja in the same tree at once.

Fixtures:
    repo_root        the repository root (Path)
    cmake_build      the function above, for suites that need their own targets
    build_dir        the normal build tree, fully built (every target)
    build_asan_dir   the ASan+UBSan tree (configured; build the targets you need)
    build_tsan_dir   the TSan tree (configured; build the targets you need)
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

_SANITIZE_DIRS = {None: "build", "address": "build-asan", "thread": "build-tsan"}
_built: dict[tuple, Path | Exception] = {}


class BuildError(RuntimeError):
    pass


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-60:])
        raise BuildError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")


def _cached_sanitize(cache: Path) -> str | None:
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith("MPROF_SANITIZE:"):
            return line.split("=", 1)[1].strip() or None
    return None


def cmake_build(
    name: str | None = None,
    sanitize: str | None = None,
    targets: list[str] | None = None,
    source: Path | None = None,
) -> Path:
    """Configure and build REPO_ROOT/<name>; returns the build directory.

    `name` defaults to the conventional directory of `sanitize`.  `targets=None` builds the
    default target (everything); `targets=[]` only configures.  `source` is the CMake source
    directory (default: the repository root).  A failure is remembered for the session and
    raised again (BuildError) without rebuilding."""
    if sanitize not in _SANITIZE_DIRS:
        raise ValueError(f"unknown sanitizer {sanitize!r}")
    name = name or _SANITIZE_DIRS[sanitize]
    source = source or REPO_ROOT
    key = (name, sanitize, tuple(targets) if targets is not None else None, str(source))
    if key in _built:
        if isinstance(_built[key], BuildError):
            raise _built[key]
        return _built[key]
    try:
        _built[key] = _cmake_build(name, sanitize, targets, source)
    except BuildError as exc:
        _built[key] = exc
        raise
    return _built[key]


def _cmake_build(name, sanitize, targets, source) -> Path:
    if not shutil.which("cmake") or not shutil.which("ninja"):
        raise BuildError("cmake and ninja are needed: run scripts/bootstrap.sh (make test does)")
    bdir = REPO_ROOT / name
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".pytest-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cache = bdir / "CMakeCache.txt"
        if (
            not cache.exists()
            or _cached_sanitize(cache) != sanitize
            or not (bdir / "build.ninja").exists()
        ):
            _run(
                [
                    "cmake",
                    "-S",
                    str(source),
                    "-B",
                    str(bdir),
                    "-G",
                    "Ninja",
                    f"-DMPROF_SANITIZE={sanitize or ''}",
                    # code generators (mprof iface compile) run with this interpreter
                    f"-DPython3_EXECUTABLE={sys.executable}",
                ],
                REPO_ROOT,
            )
        if targets is None:
            _run(["cmake", "--build", str(bdir)], REPO_ROOT)
        elif targets:
            _run(["cmake", "--build", str(bdir), "--target", *targets], REPO_ROOT)
    return bdir


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def model_and_run(tmp_path):
    """A model file (tests/report/report_helpers.py's make_model) and a run it prices."""
    import json

    if str(REPO_ROOT / "tests/report") not in sys.path:
        sys.path.insert(0, str(REPO_ROOT / "tests/report"))
    from report_helpers import make_model, make_run

    model = tmp_path / "model.json"
    make_model().save(model)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(make_run()))
    return model, run


@pytest.fixture(scope="session", name="cmake_build")
def cmake_build_fixture():
    return cmake_build


@pytest.fixture(scope="session")
def build_dir() -> Path:
    return cmake_build("build")


@pytest.fixture(scope="session")
def build_asan_dir() -> Path:
    return cmake_build(sanitize="address", targets=[])


@pytest.fixture(scope="session")
def build_tsan_dir() -> Path:
    return cmake_build(sanitize="thread", targets=[])


@pytest.fixture(autouse=True)
def interface_store(tmp_path_factory, monkeypatch) -> Path:
    """Each test has an empty interface store of its own (mprof.iface.registry.store_dir), so
    that what a build or another test kept there, or the user's cache, decides no lookup."""
    store = tmp_path_factory.mktemp("iface-store")
    monkeypatch.setenv("MPROF_IFACE_STORE", str(store))
    return store
