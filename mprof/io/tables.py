"""The tidy tables of mprof.frames written as CSV or Parquet files (docs/frames.md): one file
per table in a folder, one file for one table, or one table as CSV on standard output."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import MprofError
from ..files import make_folder, write_files
from ..profile import RunProfile
from . import WriteOptions


def write_tables(
    runs: Sequence[RunProfile], target: Path | None, options: WriteOptions, ext: str
) -> str:
    """`options.tables` of the runs (cost_categories and fits need `options.model`) to
    `target`: a folder of NAME.EXT files, or for one table the file itself (None: CSV on
    standard output)."""
    from .. import frames

    names = list(options.tables)
    if ext == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise MprofError(
                "--format parquet needs pyarrow: pip install pyarrow "
                "(scripts/bootstrap.sh installs it into .venv)"
            ) from None
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
        make_folder(target)
        paths = {name: target / f"{name}.{ext}" for name in names}
    files = []
    for name, path in paths.items():
        # rendered in memory, then written as every output is (mprof.files): atomically, and
        # never over one of the command's inputs (its database, its model file)
        try:
            if ext == "csv":
                data = tables[name].to_csv(index=False)
            else:
                buffer = io.BytesIO()
                _exact_integers(tables[name]).to_parquet(buffer, index=False)
                data = buffer.getvalue()
        except (ValueError, TypeError, OverflowError) as exc:  # pyarrow: a value it cannot type
            raise MprofError(f"{path}: cannot write table {name} as {ext}: {exc}") from None
        files.append((path, data))
    write_files(files, what="table")
    return f"exported {len(runs)} run(s): {', '.join(paths)} as {ext} to {target}"


def _exact_integers(frame):
    """The frame with each column of integers that no one integer type holds (statistics of
    -1 and 2^64-1: pandas keeps them as Python ints, dtype object, which pyarrow cannot write)
    as decimals, which Parquet keeps exact (decimal128(20, 0)).  Integer columns that fit
    int64 or uint64 are typed so by pandas already and written as they are."""
    from decimal import Decimal

    out = frame
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object or not len(values):
            continue
        if all(v.__class__ is int for v in values):
            if out is frame:
                out = frame.copy()
            out[column] = [Decimal(v) for v in values]
    return out
