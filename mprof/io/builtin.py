"""The built-in formats of mprof.io, registered on first use of the registry."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..files import write_file
from ..profile import RunProfile
from . import Format, WriteOptions, register

SQLITE_MAGIC = b"SQLite format 3\x00"


def read_json(path: Path, where: Sequence = ()) -> list[RunProfile]:
    """A run profile file: one run, id 1 (`where` selects it or not)."""
    from ..db.validate import load_profile

    run = RunProfile.from_document(load_profile(path), str(path))
    run.id = 1
    return [run] if all(c.matches(run) for c in where) else []


def read_sqlite(path: Path, where: Sequence = ()) -> list[RunProfile]:
    """The runs of a profile database that match `where`, in id order, each whole (latency
    rows and category times included), read from the database's tables."""
    from ..profile import load_profiles

    out = load_profiles(path, where)
    for run in out:
        run.source = f"{path}: run {run.id}"
    return out


def write_extrap(runs: Sequence[RunProfile], target: Path | None, options: WriteOptions) -> str:
    """Extra-P JSON Lines (mprof.io.extrap) to `target`, or standard output."""
    from .extrap import extrap_lines

    lines = extrap_lines(list(runs), options.measure, options.params)
    if target is None:
        sys.stdout.writelines(lines)
        return ""
    text = "".join(lines)
    write_file(target, text, what="export")
    return (
        f"exported {len(runs)} run(s) ({text.count(chr(10))} measurements) as Extra-P "
        f"JSON Lines to {target}"
    )


def write_cube(runs: Sequence[RunProfile], target: Path | None, options: WriteOptions) -> str:
    """CUBE4 experiment folders (mprof.io.cube) under the folder `target`."""
    from ..errors import MprofError
    from .cube import write_cube_experiment

    if target is None:
        raise MprofError("--format cube needs -o DIR (the experiment folder)")
    paths = write_cube_experiment(list(runs), target, options.measure, options.params)
    return f"exported {len(paths)} run(s) as CUBE4 profiles under {target}"


def write_csv(runs: Sequence[RunProfile], target: Path | None, options: WriteOptions) -> str:
    from .tables import write_tables

    return write_tables(runs, target, options, "csv")


def write_parquet(runs: Sequence[RunProfile], target: Path | None, options: WriteOptions) -> str:
    from .tables import write_tables

    return write_tables(runs, target, options, "parquet")


register(Format("json", (".json",), read=read_json))
register(Format("sqlite", (".db", ".sqlite", ".sqlite3"), read=read_sqlite, magic=SQLITE_MAGIC))
register(Format("extrap", (".jsonl",), write=write_extrap))
register(Format("cube", (), write=write_cube))
register(Format("csv", (".csv",), write=write_csv))
register(Format("parquet", (".parquet",), write=write_parquet))
