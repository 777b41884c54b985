"""The installable package (docs/install.md): `cmake --install` into a temporary prefix, then a
small out-of-tree project (examples/out-of-tree) built twice, with find_package(mprof) and
with pkg-config, and run; and the Python package installed outside the source tree, where it
must find its database migrations as package data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from install_helpers import prefix, run  # noqa: F401 (prefix: a fixture)

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "examples" / "out-of-tree"


def check_run(exe: Path, tmp_path: Path):
    out = tmp_path / "run.json"
    env = dict(os.environ, MPROF_PES="3", MPROF_OUT=str(out))
    proc = run([exe, "5"], env=env)
    assert proc.stdout.split() == ["greetings", "15", "keys", "15"]
    profile = json.loads(out.read_text())
    greets = [
        r["stats"]["NGreet"]
        for pe in profile["pes"]
        for r in pe["objects"]
        if r["module"] == "hello"
    ]
    assert greets == [5, 5, 5]
    # the generated hooks: the record belongs to one distributed object (one id on every PE,
    # from the object manager), and the access category is the interface's
    ids = {r["id"] for pe in profile["pes"] for r in pe["objects"] if r["module"] == "hello"}
    assert len(ids) == 1 and ids.pop() >= 1024
    assert "hello:SEND" in profile["accesses"]


def test_install_layout(prefix):
    for rel in [
        "include/mprof/mp.h",
        "include/mprof/eventgraph.h",
        "include/mprof/hashtable.h",
        "lib/libmprof_rt.a",
        "lib/libmprof_hashtable.a",
        "lib/cmake/mprof/mprofConfig.cmake",
        "lib/cmake/mprof/MprofInterface.cmake",
        "lib/pkgconfig/mprof.pc",
        "share/mprof/perf/rts.perf",
        "lib/libmprof_sde_events.so",
    ]:
        assert (prefix / rel).is_file(), rel


def configure_example(prefix: Path, build: Path, path: str, *extra, ok: bool = True):
    """Configure examples/out-of-tree against `prefix` with PATH = `path` (the `mprof` command,
    if any, that mprof_add_interface finds)."""
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    env = dict(os.environ, PATH=path)
    env.pop("PYTHONHOME", None)
    env.pop("PYTHONPATH", None)  # a Python finds mprof only where it is installed
    cmd = ["cmake", "-S", PROJECT, "-B", build, *gen, f"-DCMAKE_PREFIX_PATH={prefix}", *extra]
    if ok:
        return run(cmd, env=env)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)


VENV_PATH = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"


def test_find_package_build(prefix, tmp_path):
    build = tmp_path / "build"
    configure_example(prefix, build, VENV_PATH)
    run(["cmake", "--build", build], env=dict(os.environ, PATH=VENV_PATH))
    assert (build / "perf" / "hello_perf.h").is_file()  # mprof_add_interface ran
    check_run(build / "hello", tmp_path)


def test_installed_package_is_relocatable(prefix, build_dir, tmp_path):
    """No file of the CMake package or of mprof.pc names a folder of the machine it was built
    on (source tree, build tree, virtual environment, install prefix); a copy of the prefix
    elsewhere builds the example with the original gone."""
    moved = tmp_path / "elsewhere" / "mprof"
    shutil.copytree(prefix, moved, symlinks=True)
    build_paths = [str(ROOT), str(build_dir.resolve()), str(Path(sys.prefix)), str(prefix)]
    for path in [
        *(moved / "lib" / "cmake" / "mprof").iterdir(),
        moved / "lib" / "pkgconfig" / "mprof.pc",
    ]:
        text = path.read_text()
        for folder in build_paths:
            assert folder not in text, (path.name, folder)
        assert 'MPROF_PYTHON "/' not in text, path.name
    hidden = prefix.with_name("hidden")
    prefix.rename(hidden)
    try:
        build = tmp_path / "build"
        configure_example(moved, build, VENV_PATH)
        cache = (build / "CMakeCache.txt").read_text()
        assert f"mprof_DIR:PATH={moved}/lib/cmake/mprof" in cache
        assert f"MPROF_COMMAND:FILEPATH={Path(sys.executable).parent}/mprof" in cache
        run(["cmake", "--build", build])
        check_run(build / "hello", tmp_path)
    finally:
        hidden.rename(prefix)


def test_generator_choice(prefix, tmp_path):
    """MPROF_PYTHON wins over the `mprof` command; with neither a command nor a Python that
    imports mprof, configuring stops with a message that says what to set."""
    build = tmp_path / "build-python"
    configure_example(prefix, build, "/usr/bin:/bin", f"-DMPROF_PYTHON={sys.executable}")
    run(["cmake", "--build", build])
    check_run(build / "hello", tmp_path)
    proc = configure_example(prefix, tmp_path / "build-none", "/usr/bin:/bin", ok=False)
    assert proc.returncode != 0, proc.stdout
    assert "no mprof command on PATH" in proc.stderr and "-DMPROF_PYTHON" in proc.stderr


def test_pkg_config_build(prefix, tmp_path):
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "mprof"], env=env).stdout.split()
    gen = tmp_path / "perf"
    run(
        [sys.executable, "-m", "mprof", "iface", "compile", "-q", "-o", gen, PROJECT / "hello.perf"]
    )
    exe = tmp_path / "hello"
    sources = [PROJECT / "hello.c", gen / "hello_perf.c"]
    run(["cc", "-std=c11", f"-I{gen}", "-o", exe, *sources, *flags])
    check_run(exe, tmp_path)


def test_python_package_outside_source_tree(build_dir, tmp_path):
    """A non-editable install of a copy of the sources: nothing may be found through the
    source tree's folders."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "mprof", src / "mprof", ignore=shutil.ignore_patterns("__pycache__"))
    # Build the wheel through the PEP 517 backend the project declares (no network, no
    # isolation), then lay it out as an installer would: a pure-Python wheel is unpacked.
    dist = tmp_path / "dist"
    build = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"
    wheel = run([sys.executable, "-c", build, dist], cwd=src).stdout.strip().splitlines()[-1]
    site = tmp_path / "site"
    with zipfile.ZipFile(dist / wheel) as zf:
        zf.extractall(site)
    shutil.rmtree(src)
    env = dict(os.environ, PYTHONPATH=str(site))
    where = run(
        [sys.executable, "-c", "import mprof; print(mprof.__file__)"], env=env, cwd=tmp_path
    ).stdout.strip()
    assert where.startswith(str(site)), where
    profile = tmp_path / "run.json"
    run(
        [build_dir / "benchmarks" / "pipe" / "pipe", "2", "10", "4", "2", "2", "16", "0"],
        env=dict(os.environ, MPROF_OUT=str(profile)),
    )
    db = tmp_path / "runs.db"
    run([sys.executable, "-m", "mprof", "db", "import", db, profile], env=env, cwd=tmp_path)
    listing = run([sys.executable, "-m", "mprof", "db", "list", db], env=env, cwd=tmp_path)
    assert "pipe" in listing.stdout
