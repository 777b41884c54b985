"""Validation of run profiles (docs/run-profile.md) before anything touches a database.

Every check names the file and the JSON path of the offending value, so that a user looking at a
rejected import knows exactly what to fix; a profile read from text (`parse_profile`,
`load_profile`) also gets the line and column of that value (`run.json:12:18: pes[0].cpu_s:
...`).  The whole document is checked; the first problem is reported.
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
        self.message = message
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
    try:
        validate_profile(doc, source)
    except ProfileError as exc:
        line_col = locate(text, exc.where)
        if line_col is None:
            raise
        raise ProfileError(source, exc.where, exc.message,
                           place=f":{line_col[0]}:{line_col[1]}") from None
    return doc


def locate(text: str, where: str) -> tuple[int, int] | None:
    """Line and column (1-based) of the value at the JSON path `where` of a validation error
    (`pes[0].objects[1].id`, `document`) in the JSON `text`; where a part of the path is not
    in the text (a missing field), the place of the deepest value found.  None for text that
    cannot be scanned."""
    try:
        pos = _skip_ws(text, 0)
        rest = "" if where == "document" else where
        while rest and pos < len(text):
            if text[pos] == "[" and rest.startswith("["):
                close = rest.find("]")
                if close < 0 or not rest[1:close].isdigit():
                    break
                found = _nth_element(text, pos, int(rest[1:close]))
                rest = rest[close + 1:].removeprefix(".")
            elif text[pos] == "{":
                found, rest = _member(text, pos, rest)
            else:
                break
            if found is None:
                break
            pos = found
        before = text[:pos]
        return before.count("\n") + 1, pos - (before.rfind("\n") + 1) + 1
    except (ValueError, IndexError):
        return None


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _skip_value(text: str, pos: int) -> int:
    """The index just past the JSON value starting at `pos` (iterative: no recursion)."""
    if text[pos] == '"':
        return json.decoder.scanstring(text, pos + 1)[1]
    if text[pos] not in "[{":
        while pos < len(text) and text[pos] not in ",]} \t\r\n":
            pos += 1
        return pos
    depth = 0
    while pos < len(text):
        ch = text[pos]
        if ch == '"':
            pos = json.decoder.scanstring(text, pos + 1)[1]
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    raise ValueError("unterminated value")


def _nth_element(text: str, pos: int, n: int) -> int | None:
    pos = _skip_ws(text, pos + 1)
    index = 0
    while pos < len(text) and text[pos] != "]":
        if index == n:
            return pos
        pos = _skip_ws(text, _skip_value(text, pos))
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        index += 1
    return None


def _member(text: str, pos: int, rest: str) -> tuple[int | None, str]:
    """The value of the object member at `pos` that the path `rest` starts with (the longest
    matching name; of duplicate names the last, as the JSON reader keeps it) and the path
    after it."""
    best, best_key = None, ""
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] == '"':
        key, pos = json.decoder.scanstring(text, pos + 1)
        pos = _skip_ws(text, pos)
        pos = _skip_ws(text, pos + 1)  # the colon
        if (rest.startswith(key) and rest[len(key):len(key) + 1] in ("", ".", "[")
                and len(key) >= len(best_key)):
            best, best_key = pos, key
        pos = _skip_ws(text, _skip_value(text, pos))
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
    if best is None:
        return None, rest
    return best, rest[len(best_key):].removeprefix(".")


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
    # the interfaces the program was built with: module and digest of its .perf text
    # (mprof.iface.registry)
    for i, entry in enumerate(c.array(doc.get("interfaces", []), "interfaces")):
        c.obj(entry, f"interfaces[{i}]")
        c.string(c.required(entry, "name", f"interfaces[{i}]"), f"interfaces[{i}].name",
                 nonempty=True)
        c.string(c.required(entry, "digest", f"interfaces[{i}]"), f"interfaces[{i}].digest",
                 nonempty=True)

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
        if "categories" in pe:
            _check_categories(c, pe, where)


# A PE's category times may differ from its cpu_s by rounding only; this much is allowed.
CATEGORY_SUM_TOLERANCE = 0.01


def _check_categories(c: _Checker, pe: dict, where: str) -> None:
    """A PE's measured CPU time per access category: non-negative finite seconds, sample
    counts, each category once, and together the PE's cpu_s (within 1 %)."""
    seen: set[str] = set()
    total = 0.0
    for j, row in enumerate(c.array(pe["categories"], f"{where}.categories")):
        cwhere = f"{where}.categories[{j}]"
        c.obj(row, cwhere)
        access = c.string(c.required(row, "access", cwhere), f"{cwhere}.access", nonempty=True)
        if access in seen:
            c.fail(f"{cwhere}.access", f"category '{access}' appears twice on this PE")
        seen.add(access)
        total += c.time(c.required(row, "cpu_s", cwhere), f"{cwhere}.cpu_s")
        c.integer(c.required(row, "samples", cwhere), f"{cwhere}.samples", minimum=0)
    cpu = pe.get("cpu_s")
    if seen and cpu is not None and abs(total - cpu) > CATEGORY_SUM_TOLERANCE * cpu + 1e-9:
        c.fail(f"{where}.categories", f"the categories' cpu_s add up to {total:.6g} s, but the "
               f"PE's cpu_s is {cpu:.6g} s (they must agree within 1 %)")
