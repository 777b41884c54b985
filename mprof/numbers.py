"""One validation of numbers for every input: sweep specs, command-line options, gate
configurations, modeling-script directives and model files.

A number is accepted when it is a real number (not a boolean, not text), finite, and inside
its range; anything else is an MprofError that says where the value came from (`where`:
"spec.toml:7:13: timeout_s", "--alpha", "model.json: parameters.rts:Msg") and what was
expected.  `option(...)` makes the same check an argparse type.

`bounded` and `percent` print ratios and percentages for the outputs, bounded in length.
"""

from __future__ import annotations

import argparse
import math
import re

from .errors import MprofError


def shown(value) -> str:
    """A value as a message quotes it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# Percentages and ratios past this magnitude print as a bound (">99999 %").
BOUND = 99999


def bounded(value, spec: str = ".2f", unit: str = "") -> str:
    """A ratio as outputs print it, by the format `spec`, `unit` after it: "n/a" where it is
    undefined (None, nan), and past +-BOUND (infinity included) a bound, ">99999" or
    "<-99999".  A ratio over a denominator that rounds to zero (times of 1e-300 s beside a
    model's milliseconds) is true but would print hundreds of digits; the bound says as
    much as those digits do."""
    if value is None or value != value:
        return "n/a"
    if value > BOUND:
        return f">{BOUND}{unit}"
    if value < -BOUND:
        return f"<-{BOUND}{unit}"
    return f"{value:{spec}}{unit}"


def percent(value, spec: str = ".1f", unit: str = " %") -> str:
    """A percentage (`value` already in percent) as outputs print it: see bounded."""
    return bounded(value, spec, unit)


def percent_of(fraction: float, spec: str = ".1f", unit: str = " %") -> str:
    """A fraction (0.25, a share, an efficiency, a relative change) as a percentage ("25.0 %"),
    bounded: see bounded."""
    return percent(100 * fraction, spec, unit)


def _num(x) -> str:
    """A bound or a value as a message shows it: whole numbers in full (a limit of 1000000
    and a value of 1000001 must not both read 1e+06), others to 10 digits."""
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e18):
        return str(int(x))
    return f"{x:.10g}"


def _range_text(low, high, open_low, open_high) -> str:
    if low is not None and high is not None:
        return f"in {'(' if open_low else '['}{_num(low)}, {_num(high)}{')' if open_high else ']'}"
    if low is not None:
        return f"{'>' if open_low else '>='} {_num(low)}"
    if high is not None:
        return f"{'<' if open_high else '<='} {_num(high)}"
    return ""


def check_number(
    value,
    where: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    integer: bool = False,
    what: str | None = None,
) -> float | int:
    """`value` as a float (or an int with `integer`), finite and in range; else MprofError."""
    kind = what or ("a whole number" if integer else "a number")
    expected = " ".join(x for x in (kind, _range_text(low, high, open_low, open_high)) if x)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MprofError(f"{where}: expected {expected}, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise MprofError(
            f"{where}: expected {expected}, got {value!r} (only finite numbers are accepted)"
        )
    if integer:
        if isinstance(value, float):
            if not value.is_integer():
                raise MprofError(f"{where}: expected {expected}, got {value!r}")
            value = int(value)
    else:
        value = float(value)
    bad = (low is not None and (value <= low if open_low else value < low)) or (
        high is not None and (value >= high if open_high else value > high)
    )
    if bad:
        raise MprofError(f"{where}: expected {expected}, got {_num(value)}")
    return value


_NUMBER_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def parse_number(text: str, where: str, **limits) -> float | int:
    """A number written as text (an option, a directive): decimal notation only, so "nan",
    "inf" and "1_000" are refused like any other word."""
    text = str(text).strip()
    if not _NUMBER_TEXT.fullmatch(text):
        kind = "a whole number" if limits.get("integer") else "a number"
        raise MprofError(f"{where}: expected {kind}, got {shown(text)}")
    if limits.get("integer") and re.fullmatch(r"[+-]?\d+", text):
        return check_number(int(text), where, **limits)
    return check_number(float(text), where, **limits)


def option(name: str, **limits):
    """An argparse `type=` for option `name` that applies parse_number's checks."""

    def convert(text):
        try:
            return parse_number(text, name, **limits)
        except MprofError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None

    convert.__name__ = "integer" if limits.get("integer") else "number"
    return convert


def check_finite_tree(value, where: str) -> None:
    """Every number inside nested lists/dicts is finite (a model file's figures)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MprofError(f"{where}: {value!r} is not a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_finite_tree(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_finite_tree(item, f"{where}[{i}]")


def env_number(name: str, default: float, **limits) -> float | int:
    """A numeric setting from the environment, checked like every other number; an unset or
    empty variable is the default, and a bad value is ignored with the runtime's warning,
    `mprof: ignoring NAME=VALUE (...), using the default D`."""
    import os
    import sys

    text = os.environ.get(name, "")
    if not text.strip():
        return default
    try:
        return parse_number(text, name, **limits)
    except MprofError as exc:
        shown = text if len(text) <= 64 else text[:64] + "..."
        why = str(exc).split(": ", 1)[1].rsplit(", got", 1)[0]
        print(
            f"mprof: ignoring {name}={shown} ({why}), using the default {default:g}",
            file=sys.stderr,
        )
        return default
