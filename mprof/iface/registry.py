"""Where performance interfaces (`MODULE.perf`) are found: one search order for modelling
scripts, the gate and model files, and a lookup by the digest a run profile records.

The search order, first match wins:

    1. folders the caller names: a modelling script's `InterfacePath` folders and its own
       folder, the gate's `--interface` folders
    2. $MPROF_PERF_PATH (os.pathsep separated; an installed prefix's `share/mprof/perf`)
    3. the source tree, as a last resort: runtime/, instrumented-lib/*/, benchmarks/*/ beside
       this package (an installed package has none)

A run profile names the interfaces its program was built with, each with the digest of its
`.perf` text (`interfaces` in docs/run-profile.md; the generated hooks carry it, the runtime
writes it).  `find_by_digest` finds the file with that text on the same search path, so a
consumer gets the very interface the run was counted with, or learns that none is at hand.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import MprofError

ENV = "MPROF_PERF_PATH"
SOURCE_TREE = Path(__file__).resolve().parents[2]
SUFFIX = ".perf"


def digest(text: str | bytes) -> str:
    """The digest a run profile records for an interface: SHA-256 of its UTF-8 text, hex."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def env_dirs() -> list[Path]:
    """The folders of $MPROF_PERF_PATH, in order."""
    return [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p]


def source_tree_dirs(root: Path = SOURCE_TREE) -> list[Path]:
    """The source tree's interface folders: runtime/, instrumented-lib/*/, benchmarks/*/."""
    dirs = [root / "runtime"]
    for pattern in ("instrumented-lib/*", "benchmarks/*"):
        dirs.extend(Path(p) for p in sorted(glob.glob(str(root / pattern))) if Path(p).is_dir())
    return dirs


def default_dirs() -> list[Path]:
    """Where a module's interface is looked for after the caller's own folders."""
    return [*env_dirs(), *source_tree_dirs()]


def search_path(explicit: Iterable[str | Path] = ()) -> list[Path]:
    """The whole search order: the caller's folders, then `default_dirs()`."""
    return [*(Path(d) for d in explicit), *default_dirs()]


def find(module: str, explicit: Iterable[str | Path] = ()) -> Path | None:
    """The first MODULE.perf on the search path, or None."""
    for directory in search_path(explicit):
        candidate = directory / f"{module}{SUFFIX}"
        if candidate.is_file():
            return candidate
    return None


def find_by_digest(module: str, wanted: str,
                   explicit: Iterable[str | Path] = ()) -> Path | None:
    """The MODULE.perf on the search path whose text has the digest `wanted` (a run profile's
    `interfaces[].digest`), or None: an older or newer version of the file does not match."""
    for directory in search_path(explicit):
        candidate = directory / f"{module}{SUFFIX}"
        try:
            if candidate.is_file() and digest(candidate.read_bytes()) == wanted:
                return candidate
        except OSError:
            continue
    return None


def locate(module: str, recorded: Mapping[str, str] | None = None,
           explicit: Iterable[str | Path] = ()) -> Path | None:
    """The interface of `module` for runs that record digests (`RunProfile.interfaces`,
    module -> digest): the file with the recorded text, else None; for runs without one, the
    first MODULE.perf on the search path."""
    wanted = (recorded or {}).get(module)
    if wanted:
        return find_by_digest(module, wanted, explicit)
    return find(module, explicit)


def load_at(module: str, path: str | Path):
    """The interface of `module` from a recorded path (a version-1 model file's), with the
    registry's message when the file is gone."""
    from . import load_interface

    if not Path(path).exists():
        raise MprofError(f"interface of module '{module}' not found at {path}")
    return load_interface(path)


def describe(explicit: Iterable[str | Path] = ()) -> str:
    """The search path, for messages."""
    return ", ".join(str(d) for d in search_path(explicit))


__all__ = ["ENV", "SOURCE_TREE", "default_dirs", "describe", "digest", "env_dirs", "find",
           "find_by_digest", "load_at", "locate", "search_path", "source_tree_dirs"]
