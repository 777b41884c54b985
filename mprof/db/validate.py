"""Validation of run profiles (docs/run-profile.md) before anything touches a database.

Every check names the file and the JSON path of the offending value, so that a user looking at a
rejected import knows exactly what to fix.  The whole document is checked; the first problem is
reported.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import MprofError
from ..files import read_bytes

SCHEMA = "mprof.run-profile"
SCHEMA_VERSIONS = (1, 2)  # 2 added each PE's cpu_s and idle_cpu_s


class ProfileError(MprofError):
    """A run profile that does not follow the schema."""

    def __init__(self, source: str, where: str, message: str, place: str = ""):
        """`where` names a field of the document; `place` (":line:column") a place in the
        file, for text that is not JSON at all."""
        self.source = source
        self.where = where
        super().__init__(f"{source}{place}: {where + ': ' if where else ''}{message}")


# Integers a run profile may hold: i64 and u64 statistics, object ids, counts.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def read_text(path: str | Path, what: str = "run profile") -> str:
    """A UTF-8 file's text; unreadable files and bad bytes are MprofErrors naming the place."""
    path = Path(path)
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise MprofError(f"{path}:{line}:{column}: not valid UTF-8 (byte 0x{data[exc.start]:02x}, "
                         f"column counted in bytes); is it a {what}?") from None


def load_profile(path: str | Path) -> dict:
    """Read and validate one run profile file."""
    return parse_profile(read_text(path), str(path))


def parse_profile(text: str, source: str) -> dict:
    if not text.strip():
        raise ProfileError(source, "", "file is empty (was the run interrupted?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        # A profile ends with its closing brace; without it the writer was cut short.
        truncated = exc.pos >= len(text.rstrip()) or not text.rstrip().endswith("}")
        hint = " (the file looks truncated)" if truncated else ""
        raise ProfileError(source, "", f"not valid JSON: {exc.msg}{hint}",
                           place=f":{exc.lineno}:{exc.colno}") from None
    except RecursionError:
        raise ProfileError(source, "", "not a run profile: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ProfileError(source, "", f"not valid JSON: {exc}") from None
    validate_profile(doc, source)
    return doc


def _is_number(value: Any) -> bool:
    # bool is an int subclass in Python but not a number in a run profile.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str):
        raise ProfileError(self.source, where, message)

    def obj(self, value, where) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def array(self, value, where) -> list:
        if not isinstance(value, list):
            self.fail(where, f"expected an array, got {_kind(value)}")
        return value

    def string(self, value, where, nonempty=False) -> str:
        if not isinstance(value, str):
            self.fail(where, f"expected a string, got {_kind(value)}")
        if nonempty and not value:
            self.fail(where, "must not be empty")
        return value

    def integer(self, value, where, minimum=None) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(where, f"expected an integer, got {_kind(value)}")
        if minimum is not None and value < minimum:
            self.fail(where, f"must be >= {minimum}, got {value}")
        return value

    def number(self, value, where) -> float:
        if not _is_number(value):
            self.fail(where, f"expected a number, got {_kind(value)}")
        if not math.isfinite(value):
            self.fail(where, f"must be finite, got {value}")
        return value

    def time(self, value, where) -> float:
        self.number(value, where)
        if value < 0:
            self.fail(where, f"a time must be non-negative, got {value}")
        return value

    def required(self, doc: dict, key: str, where: str):
        if key not in doc:
            self.fail(where or "document", f"missing required field '{key}'")
        return doc[key]

    def scalar_map(self, value, where):
        for name, item in self.obj(value, where).items():
            if not (isinstance(item, (str, bool)) or _is_number(item)):
                self.fail(f"{where}.{name}", f"expected a number or string, got {_kind(item)}")
            if _is_number(item) and not math.isfinite(item):
                self.fail(f"{where}.{name}", f"must be finite, got {item}")


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _check_values(doc: Any, c: _Checker) -> None:
    """Every number anywhere in the document, also in fields the schema does not describe, is
    finite (JSON has no NaN or Infinity, though Python's parser accepts them), and every
    integer fits 64 bits; nesting is bounded.  Iterative, so depth costs no recursion."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > 64:
            c.fail(where, "nested too deeply (a run profile is at most a few levels deep)")
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k), depth + 1)
                         for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1)
                         for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        elif isinstance(value, int):
            if not INT_MIN <= value <= INT_MAX:
                c.fail(where or "document",
                       f"integer {_short_int(value)} does not fit 64 bits "
                       "(-2^63 .. 2^64-1)")
        elif isinstance(value, float) and not math.isfinite(value):
            c.fail(where or "document", f"must be a finite number, got {value}")


def _short_int(value: int) -> str:
    digits = len(str(abs(value)))
    return str(value) if digits <= 30 else f"of {digits} digits"


def validate_profile(doc: Any, source: str = "<profile>") -> None:
    """Raise ProfileError unless `doc` is a complete, well-typed run profile."""
    c = _Checker(source)
    c.obj(doc, "document")
    _check_values(doc, c)
    schema = c.required(doc, "schema", "")
    if schema != SCHEMA:
        c.fail("schema", f"expected '{SCHEMA}', got {_kind(schema)}")
    version = c.integer(c.required(doc, "schema_version", ""), "schema_version")
    if version not in SCHEMA_VERSIONS:
        c.fail("schema_version", f"version {version} is not supported (known: {SCHEMA_VERSIONS})")
    c.string(c.required(doc, "program", ""), "program", nonempty=True)
    npes = c.integer(c.required(doc, "npes", ""), "npes", minimum=1)
    pes = c.array(c.required(doc, "pes", ""), "pes")
    if len(pes) != npes:
        c.fail("pes", f"npes is {npes} but the profile lists {len(pes)} PEs")

    # Optional fields are checked when present.
    if "argv" in doc:
        for i, arg in enumerate(c.array(doc["argv"], "argv")):
            c.string(arg, f"argv[{i}]")
    for key in ("backend", "started_at"):
        if key in doc:
            c.string(doc[key], key)
    if "elapsed_s" in doc:
        c.time(doc["elapsed_s"], "elapsed_s")
    if "machine" in doc:
        machine = c.obj(doc["machine"], "machine")
        for key in ("hostname", "cpu", "fingerprint"):
            if key in machine:
                c.string(machine[key], f"machine.{key}")
        if "cores" in machine:
            c.integer(machine["cores"], "machine.cores", minimum=0)
    for key in ("settings", "params"):
        if key in doc:
            c.scalar_map(doc[key], key)
    if "accesses" in doc:
        for i, name in enumerate(c.array(doc["accesses"], "accesses")):
            c.string(name, f"accesses[{i}]")

    for index, pe in enumerate(pes):
        where = f"pes[{index}]"
        c.obj(pe, where)
        number = c.integer(c.required(pe, "pe", where), f"{where}.pe")
        if number != index:
            c.fail(f"{where}.pe", f"PEs must appear once each, ordered by pe; expected {index}, "
                   f"got {number}")
        c.time(c.required(pe, "elapsed_s", where), f"{where}.elapsed_s")
        c.time(c.required(pe, "idle_s", where), f"{where}.idle_s")
        for key in ("cpu_s", "idle_cpu_s"):  # measured since schema version 2
            if version >= 2 or key in pe:
                c.time(c.required(pe, key, where), f"{where}.{key}")
        seen_ids = set()
        for j, obj in enumerate(c.array(c.required(pe, "objects", where), f"{where}.objects")):
            owhere = f"{where}.objects[{j}]"
            c.obj(obj, owhere)
            oid = c.integer(c.required(obj, "id", owhere), f"{owhere}.id", minimum=0)
            if oid in seen_ids:
                c.fail(f"{owhere}.id", f"object id {oid} appears twice on this PE")
            seen_ids.add(oid)
            c.string(c.required(obj, "module", owhere), f"{owhere}.module", nonempty=True)
            stats = c.obj(c.required(obj, "stats", owhere), f"{owhere}.stats")
            for name, value in stats.items():
                c.number(value, f"{owhere}.stats.{name}")
            # statistics bound to PAPI events that could not be counted (docs/papi.md)
            absent = c.obj(obj.get("absent", {}), f"{owhere}.absent")
            for name, why in absent.items():
                c.string(why, f"{owhere}.absent.{name}")
                if name in stats:
                    c.fail(f"{owhere}.absent.{name}", "a statistic cannot be both measured and "
                           "absent")
        for j, row in enumerate(c.array(pe.get("latency", []), f"{where}.latency")):
            lwhere = f"{where}.latency[{j}]"
            c.obj(row, lwhere)
            c.string(c.required(row, "access", lwhere), f"{lwhere}.access")
            c.string(c.required(row, "enabler", lwhere), f"{lwhere}.enabler")
            c.integer(c.required(row, "count", lwhere), f"{lwhere}.count", minimum=0)
            c.time(c.required(row, "observed_s", lwhere), f"{lwhere}.observed_s")
            c.time(c.required(row, "critical_s", lwhere), f"{lwhere}.critical_s")
