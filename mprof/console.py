"""Consoles for progress and messages.

On a terminal: rich's live displays and colours.  Elsewhere (CI logs, files, pipes): plain,
complete lines -- no progress bars, no colour, no wrapping (rich would wrap at 80 columns and
split long paths mid-word).
"""

from __future__ import annotations

from rich.console import Console


def message_console(stderr: bool = True) -> Console:
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, soft_wrap=True, no_color=True, highlight=False)
