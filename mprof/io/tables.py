"""The tidy tables of mprof.frames written as CSV or Parquet files (docs/frames.md): one file
per table in a folder, one file for one table, or one table as CSV on standard output."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import MprofError
from ..profile import RunProfile
from . import WriteOptions


def write_tables(runs: Sequence[RunProfile], target: Path | None, options: WriteOptions,
                 ext: str) -> str:
    """`options.tables` of the runs (cost_categories and fits need `options.model`) to
    `target`: a folder of NAME.EXT files, or for one table the file itself (None: CSV on
    standard output)."""
    from .. import frames

    names = list(options.tables)
    if ext == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise MprofError("--format parquet needs pyarrow: pip install pyarrow "
                             "(scripts/bootstrap.sh installs it into .venv)") from None
    tables = {}
    for name in names:
        if name == "cost_categories":
            tables[name] = frames.cost_categories(list(runs), options.model)
        elif name == "fits":
            tables[name] = frames.fits(options.model)
        else:
            tables[name] = frames.table(name, list(runs))
    if target is None:
        tables[names[0]].to_csv(sys.stdout, index=False)
        return ""
    if len(names) == 1:
        paths = {names[0]: target}
    else:
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MprofError(f"{target}: cannot create the folder: {exc.strerror or exc}") \
                from None
        paths = {name: target / f"{name}.{ext}" for name in names}
    for name, path in paths.items():
        try:
            if ext == "csv":
                tables[name].to_csv(path, index=False)
            else:
                tables[name].to_parquet(path, index=False)
        except OSError as exc:
            raise MprofError(f"{path}: cannot write: {exc.strerror or exc}") from None
        except (ValueError, TypeError, OverflowError) as exc:  # pyarrow: a value it cannot type
            raise MprofError(f"{path}: cannot write table {name} as {ext}: {exc}") from None
    return f"exported {len(runs)} run(s): {', '.join(paths)} as {ext} to {target}"
