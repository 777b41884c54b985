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
writes it).  `mprof iface compile`, which the build runs to generate the hooks, also keeps a
copy of each text in a content-addressed store (`store_dir()`, file `<digest>.perf`), so
`find_by_digest` finds the very interface a run was counted with there, without walking the
source tree, and only then looks on the search path; `for_runs` says when the file found by
name is not the text the runs were recorded with.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import MprofError

ENV = "MPROF_PERF_PATH"
STORE_ENV = "MPROF_IFACE_STORE"
SOURCE_TREE = Path(__file__).resolve().parents[2]
SUFFIX = ".perf"


def digest(text: str | bytes) -> str:
    """The digest a run profile records for an interface: SHA-256 of its UTF-8 text, hex."""
    # surrogatepass: a text that is not valid Unicode (a lone surrogate) still has a digest,
    # and the parser, not the digest, reports what is wrong with it
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
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


def store_dir() -> Path:
    """The content-addressed store of interface texts: $MPROF_IFACE_STORE, else
    $XDG_CACHE_HOME/mprof/interfaces, else ~/.cache/mprof/interfaces."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "mprof" / "interfaces"


def remember(text: str | bytes) -> Path:
    """Keep a copy of an interface's text in the store as `<digest>.perf` (once: the name is
    the content) and return its path.  Written to a temporary file and renamed, so that builds
    running side by side never leave a partial file; OSError when the store cannot be written."""
    # surrogatepass: a text that is not valid Unicode (a lone surrogate) still has a digest,
    # and the parser, not the digest, reports what is wrong with it
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    directory = store_dir()
    path = directory / f"{digest(data)}{SUFFIX}"
    if path.is_file():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{path.name}.{os.getpid()}.tmp"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def stored(wanted: str) -> Path | None:
    """The store's copy of the interface text with digest `wanted`, or None (also for a copy
    whose content no longer has its name's digest)."""
    path = store_dir() / f"{wanted}{SUFFIX}"
    return path if _has_digest(path, wanted) else None


def _has_digest(path: Path, wanted: str) -> bool:
    """Whether `path` is a readable file whose text has the digest `wanted`."""
    try:
        return path.is_file() and digest(path.read_bytes()) == wanted
    except OSError:
        return False


def find_by_digest(module: str, wanted: str, explicit: Iterable[str | Path] = ()) -> Path | None:
    """The interface text with the digest `wanted` (a run profile's `interfaces[].digest`):
    the store's copy, else the MODULE.perf on the search path with that text, else None (an
    older or newer version of the file does not match)."""
    copy = stored(wanted)
    if copy is not None:
        return copy
    for directory in search_path(explicit):
        candidate = directory / f"{module}{SUFFIX}"
        if _has_digest(candidate, wanted):
            return candidate
    return None


def locate(
    module: str, recorded: Mapping[str, str] | None = None, explicit: Iterable[str | Path] = ()
) -> Path | None:
    """The interface of `module` for runs that record digests (`RunProfile.interfaces`,
    module -> digest): the file with the recorded text, else None; for runs without one, the
    first MODULE.perf on the search path."""
    wanted = (recorded or {}).get(module)
    if wanted:
        return find_by_digest(module, wanted, explicit)
    return find(module, explicit)


def for_runs(
    module: str, recorded: Iterable[str | None], explicit: Iterable[str | Path] = ()
) -> tuple[Path | None, list[str]]:
    """The interface of `module` for a set of runs, each with the digest its profile recorded
    for the module (None or "": a run recorded before profiles carried digests), and warnings.

    The first MODULE.perf on the search path, when its text is the one the runs agree on (its
    path is then the one model files record, as before profiles carried digests).  When its
    text is another (the interface changed since the runs were recorded) or there is none by
    that name, the file with the runs' text (`find_by_digest`: the store, then the search
    path), with a warning; without one, the file found by name, with a warning that its
    statistics and terms may not be the runs'.  Runs recorded with different versions of the
    interface get the file found by name and a warning."""
    digests = sorted({d for d in recorded if d})
    warnings: list[str] = []
    by_name = find(module, explicit)
    if len(digests) > 1:
        warnings.append(
            f"the runs were recorded with {len(digests)} versions of interface "
            f"{module} (digests {', '.join(d[:12] for d in digests)}): their "
            f"statistics may not mean the same; using {by_name}"
        )
    if len(digests) != 1:
        return by_name, warnings
    wanted = digests[0]
    if by_name is not None and _digest_of(by_name) == wanted:
        return by_name, warnings
    changed = (
        f"interface {module}: {by_name} has changed since the runs were recorded "
        f"(digest {_digest_of(by_name)[:12]}, the runs' {wanted[:12]})"
        if by_name is not None
        else f"interface {module}: no {module}{SUFFIX} on the search path"
    )
    recorded_copy = find_by_digest(module, wanted, explicit)
    if recorded_copy is not None:
        warnings.append(f"{changed}; using the text they were recorded with, {recorded_copy}")
        return recorded_copy, warnings
    if by_name is not None:
        warnings.append(
            f"{changed}, and the text they were recorded with is not in the "
            f"interface store ({store_dir()}) nor on the search path: using it, "
            "but its statistics and terms may not be the runs'"
        )
    return by_name, warnings


def _digest_of(path: Path) -> str:
    try:
        return digest(path.read_bytes())
    except OSError:
        return "?"


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


__all__ = [
    "ENV",
    "SOURCE_TREE",
    "STORE_ENV",
    "default_dirs",
    "describe",
    "digest",
    "env_dirs",
    "find",
    "find_by_digest",
    "for_runs",
    "load_at",
    "locate",
    "remember",
    "search_path",
    "source_tree_dirs",
    "store_dir",
    "stored",
]
