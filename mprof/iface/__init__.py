"""mprof.iface: the performance-interface language (`*.perf`), its checker and the C hook
generator.

    from mprof.iface import load_interface, parse_interface
    iface = load_interface("instrumented-lib/graph/graph.perf")
    iface.term_values({"NOp": 10, ...})     # term name -> value
    iface.parameter_names()                # ["graph:P", "graph:Op", "graph:Data"]
"""

from __future__ import annotations

import os

from ..errors import SourceError, line_column
from ..files import read_bytes
from .checker import parse_interface
from .model import Access, Category, Interface, Statistic, Term

__all__ = [
    "Access",
    "Category",
    "Interface",
    "Statistic",
    "Term",
    "SourceError",
    "load_interface",
    "parse_interface",
]


def load_interface(path) -> Interface:
    """Reads, parses and checks one `.perf` file; every problem is an MprofError."""
    path = os.fspath(path)
    data = read_bytes(path, "interface")  # "PATH: cannot read interface: why"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Locate the bad byte as line:column (columns count decoded characters).
        before = data[: exc.start].decode("utf-8", errors="replace")
        line, column = line_column(before, len(before))
        lines = data.decode("utf-8", errors="replace").split("\n")
        raise SourceError(
            path, line, column, "file is not valid UTF-8", lines[line - 1] if lines else None
        ) from None
    return parse_interface(text, path)
