"""The tools the suite runs, found or failed for (imported by test modules of any folder).

`make test` installs every tool the suite uses (scripts/bootstrap.sh), so a missing one is a
broken machine: the test that needs it fails and says what to run, never skips."""

from __future__ import annotations

import shutil

import pytest


def require_tool(*names: str) -> str:
    """The path of the first of `names` on PATH; fails the calling test when none is there."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(f"{' or '.join(names)} not found: run scripts/bootstrap.sh (make test does)",
                pytrace=False)
