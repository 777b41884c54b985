"""The tools the suite runs, found or failed for, and scripts loaded as modules (imported by
test modules of any folder).

`make test` installs every tool the suite uses (scripts/bootstrap.sh), so a missing one is a
broken machine: the test that needs it fails and says what to run, never skips."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest


def require_tool(*names: str) -> str:
    """The path of the first of `names` on PATH; fails the calling test when none is there."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        f"{' or '.join(names)} not found: run scripts/bootstrap.sh (make test does)", pytrace=False
    )


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """A benchmark or study script (not a package module) imported by its path.  Its folder is
    on sys.path while it loads, as when it is run: scripts import their neighbours
    (`from aggregation_scale import rts_totals`)."""
    spec = importlib.util.spec_from_file_location(name or Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    folder = str(Path(path).resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module
