"""mprof.io: the readers and writers of run formats, registered in one place.

Like Hatchet's readers and Extra-P's file-reader plugins, every format is one function of one
signature per kind:

    reader(path, where=()) -> list[RunProfile]          # runs of a file, `where`-selected
    writer(runs, target, options) -> str                # writes; returns what it wrote

    from mprof import io
    runs = io.read("pipe.db")                           # the reader by content or suffix
    io.writer("extrap")(runs, Path("pipe.jsonl"), io.WriteOptions(measure="cpu"))

Formats: `json` (a run profile file, docs/run-profile.md) and `sqlite` (a profile database,
docs/database.md) are read; `extrap` (Extra-P JSON Lines), `cube` (CUBE4 experiment folders),
`csv` and `parquet` (the tidy tables of mprof.frames) are written.  `mprof db export
--format NAME` uses the writers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MprofError
from ..profile import DEFAULT_MEASURE, RunProfile


@dataclass
class WriteOptions:
    measure: str = DEFAULT_MEASURE  # the time the exported values are (mprof.profile)
    params: list[str] | None = None  # the model parameters (extrap, cube); None: varying ones
    tables: list[str] = field(default_factory=list)  # csv, parquet: which tables
    model: str | None = None  # csv, parquet: the model file of cost_categories and fits


Reader = Callable[..., list[RunProfile]]
Writer = Callable[[Sequence[RunProfile], Path | None, WriteOptions], str]


@dataclass(frozen=True)
class Format:
    name: str
    suffixes: tuple[str, ...] = ()
    read: Reader | None = None
    write: Writer | None = None
    # a file of this format starts with these bytes (None: recognised by suffix only)
    magic: bytes | None = None


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a format (a plugin: one reader and/or one writer under a name)."""
    if fmt.name in FORMATS:
        raise MprofError(f"I/O format '{fmt.name}' is registered twice")
    FORMATS[fmt.name] = fmt
    return fmt


def _loaded() -> dict[str, Format]:
    from . import builtin  # noqa: F401  (registers the built-in formats once)

    return FORMATS


def format_of(path: str | Path) -> Format:
    """The readable format of a file: by its first bytes, else by its suffix."""
    path = Path(path)
    formats = [f for f in _loaded().values() if f.read is not None]
    try:
        with path.open("rb") as stream:
            head = stream.read(64)
    except OSError as exc:
        raise MprofError(f"{path}: {exc.strerror or exc}") from None
    for fmt in formats:
        if fmt.magic is not None and head.startswith(fmt.magic):
            return fmt
    for fmt in formats:
        if path.suffix.lower() in fmt.suffixes and fmt.magic is None:
            return fmt
    known = ", ".join(f"{f.name} ({' '.join(f.suffixes)})" for f in formats)
    raise MprofError(f"{path}: not a format mprof reads (known: {known})")


def read(path: str | Path, where: Sequence = ()) -> list[RunProfile]:
    """The runs of a file, by its format's reader."""
    return format_of(path).read(Path(path), where)


def reader(name: str) -> Reader:
    return _get(name, "read")


def writer(name: str) -> Writer:
    return _get(name, "write")


def _get(name: str, kind: str):
    fmt = _loaded().get(name)
    function = getattr(fmt, kind, None) if fmt is not None else None
    if function is None:
        names = sorted(n for n, f in FORMATS.items() if getattr(f, kind) is not None)
        raise MprofError(
            f"no {kind[:-1] if kind == 'write' else kind}er for format '{name}' "
            f"(known: {', '.join(names)})"
        )
    return function


__all__ = ["FORMATS", "Format", "WriteOptions", "format_of", "read", "reader", "register", "writer"]
