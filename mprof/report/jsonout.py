"""JSON output that is JSON: never `Infinity` or `NaN` (which json.dumps writes by default and
no strict parser reads).

Every `--json` writer (report, latency, fit, model show, gate power) goes through `dumps`: a
figure that overflowed (times of 1e308 s, a what-if factor of 1e308) is an MprofError that
names it, and nothing is written.  Figures that are legitimately undefined are written as null
by their producers before they get here (e.g. a relative change of a zero time).
"""

from __future__ import annotations

import json
import math


def non_finite(value, path: str = "") -> tuple[str, float] | None:
    """The path ("categories[2].now_s") and value of the first non-finite float inside
    nested dicts, lists and tuples, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        items = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", item) for i, item in enumerate(value))
    else:
        return None
    for where, item in items:
        found = non_finite(item, where)
        if found is not None:
            return found
    return None


def dumps(data, what: str, nothing: str = "no JSON was written", **kwargs) -> str:
    """`data` as strict JSON; a non-finite number in it is an MprofError ("`what`: FIELD is
    inf: ... overflows; `nothing`"), so a reader never gets Infinity or NaN."""
    from ..errors import MprofError

    found = non_finite(data)
    if found is not None:
        path, value = found
        raise MprofError(
            f"{what}: {path or 'the value'} is {value!r}, not a finite number: "
            "the figures behind it overflow (are some times or statistics of the "
            f"input absurdly large?); {nothing}"
        )
    return json.dumps(data, allow_nan=False, **kwargs)
