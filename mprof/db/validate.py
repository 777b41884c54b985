"""Validation of run profiles before anything touches a database: the JSON Schema of
mprof/schema/run-profile.schema.json (docs/run-profile.md is generated from it), checked with
the `jsonschema` package, and in Python the rules it cannot express (values that must agree).

Every check names the file and the JSON path of the offending value, so that a user looking at a
rejected import knows exactly what to fix; a profile read from text (`parse_profile`,
`load_profile`) also gets the line and column of that value (`run.json:12:18: pes[0].cpu_s:
...`).  The whole document is checked; the first problem is reported.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import MprofError, line_column
from ..files import read_bytes
from ..jsontext import DuplicateKey, duplicate_key, huge_integer, unique_keys
from ..schema import inlined_schema

SCHEMA = "mprof.run-profile"
SCHEMA_VERSIONS = (1, 2)  # 2 added each PE's cpu_s and idle_cpu_s


class ProfileError(MprofError):
    """A run profile that does not follow the schema."""

    def __init__(self, source: str, where: str, message: str, place: str = ""):
        """`where` names a field of the document; `place` (":line:column") a place in the
        file, for text that is not JSON at all."""
        self.source = source
        self.where = where  # as in the document (`locate` finds it there)
        self.message = message
        shown = shown_text(where)
        super().__init__(f"{source}{place}: {shown + ': ' if shown else ''}{message}")


# A lone UTF-16 surrogate: JSON's `\ud800` escape decodes to one, which no UTF-8 writer (SQLite,
# the terminal, a CSV file) accepts.  A valid pair has become one code point by then.
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def shown_text(text: str) -> str:
    """`text` safe to print: lone surrogates and NUL written as escapes (a JSON path may hold
    the very name that is rejected)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).replace("\0", "\\u0000")


NOT_UNICODE = "not valid Unicode (a lone surrogate)"


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
        raise MprofError(
            f"{path}:{line}:{column}: not valid UTF-8 (byte 0x{data[exc.start]:02x}, "
            f"column counted in bytes); is it a {what}?"
        ) from None


def load_profile(path: str | Path, *, schema_optional: bool = False) -> dict:
    """Read and validate one run profile file (`schema_optional`: see validate_profile)."""
    return parse_profile(read_text(path), str(path), schema_optional=schema_optional)


def _place(text: str, offset: int, first_line: int) -> str:
    line, column = line_column(text, offset)
    return f":{first_line + line - 1}:{column}"


# A run profile is a few levels deep; the decoder recurses per level and gives up far deeper.
DEEP_JSON = 100


def _deep_offset(text: str, limit: int) -> int | None:
    """The offset of the first '[' or '{' that opens level limit + 1 of JSON `text`, strings
    skipped; None if there is none."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return None


def _line(first_line: int) -> str:
    """The place of an error somewhere in a whole file (none) or a line of one."""
    return f":{first_line}" if first_line > 1 else ""


def parse_profile(
    text: str, source: str, first_line: int = 1, *, schema_optional: bool = False
) -> dict:
    """The run profile in `text`, validated; `first_line` is the line of the file `source` on
    which `text` begins (a line of a JSON-lines export), so that places are the file's."""
    if not text.strip():
        raise ProfileError(source, "", "file is empty (was the run interrupted?)")
    try:
        doc = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        # A profile ends with its closing brace; without it the writer was cut short.
        truncated = exc.pos >= len(text.rstrip()) or not text.rstrip().endswith("}")
        hint = " (the file looks truncated)" if truncated else ""
        if not text.lstrip().startswith("{"):  # binary or other text, not a cut-off profile
            hint = " (a run profile is one JSON object, '{...}': is this one?)"
        raise ProfileError(
            source, "", f"not valid JSON: {exc.msg}{hint}", place=_place(text, exc.pos, first_line)
        ) from None
    except RecursionError:
        deep = _deep_offset(text, DEEP_JSON)
        raise ProfileError(
            source,
            "",
            f"not a run profile: JSON nested too deeply (more than {DEEP_JSON} levels)",
            place=_line(first_line) if deep is None else _place(text, deep, first_line),
        ) from None
    except DuplicateKey:
        found = duplicate_key(text)
        offset, key = found if found else (0, "?")
        raise ProfileError(
            source,
            "",
            f"key {json.dumps(key)} appears twice in one object (each key once)",
            place=_place(text, offset, first_line),
        ) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        digits = huge_integer(text)
        if digits is None:
            raise ProfileError(
                source, "", f"not valid JSON: {exc}", place=_line(first_line)
            ) from None
        raise ProfileError(
            source,
            "",
            f"integer of {len(digits.group().lstrip('-'))} digits "
            "does not fit 64 bits (-2^63 .. 2^64-1)",
            place=_place(text, digits.start(), first_line),
        ) from None
    try:
        validate_profile(doc, source, schema_optional=schema_optional)
    except ProfileError as exc:
        line_col = locate(text, exc.where)
        if line_col is None:
            if first_line == 1:
                raise
            line_col = (1, 1)
        raise ProfileError(
            source, exc.where, exc.message, place=f":{first_line + line_col[0] - 1}:{line_col[1]}"
        ) from None
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
                rest = rest[close + 1 :].removeprefix(".")
            elif text[pos] == "{":
                found, rest = _member(text, pos, rest)
            else:
                break
            if found is None:
                break
            pos = found
        return line_column(text, pos)
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
        if (
            rest.startswith(key)
            and rest[len(key) : len(key) + 1] in ("", ".", "[")
            and len(key) >= len(best_key)
        ):
            best, best_key = pos, key
        pos = _skip_ws(text, _skip_value(text, pos))
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
    if best is None:
        return None, rest
    return best, rest[len(best_key) :].removeprefix(".")


def value_kind(value) -> str:
    """A JSON value as a message names it: `null`, `the string 'x'`, `an array` ..."""
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


def _nodes(doc: Any):
    """(JSON path, value, depth, whether it is a member's name) of every value of `doc` and
    every member name, in document order, a member's names before its values.  Iterative, so
    depth costs no recursion."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        yield where, value, depth, False
        if isinstance(value, dict):
            for key in value:
                yield (f"{where}.{key}" if where else str(key)), key, depth + 1, True
            stack.extend(
                (v, f"{where}.{k}" if where else str(k), depth + 1)
                for k, v in reversed(list(value.items()))
            )
        elif isinstance(value, list):
            stack.extend(
                (v, f"{where}[{i}]", depth + 1) for i, v in reversed(list(enumerate(value)))
            )


def _check_values(doc: Any, source: str) -> None:
    """Every number anywhere in the document, also in fields the schema does not describe, is
    finite (JSON has no NaN or Infinity, though Python's parser accepts them), and every
    integer fits 64 bits; every string and name is valid Unicode; nesting is bounded."""
    for where, value, depth, is_name in _nodes(doc):
        if depth > 64 and not is_name:  # a name's value is checked next
            raise ProfileError(
                source, where, "nested too deeply (a run profile is at most a few levels deep)"
            )
        if is_name:
            if has_lone_surrogate(value):
                raise ProfileError(source, where, f"the name is {NOT_UNICODE}")
        elif isinstance(value, str):
            if has_lone_surrogate(value):
                raise ProfileError(source, where or "document", NOT_UNICODE)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not INT_MIN <= value <= INT_MAX:
                raise ProfileError(
                    source,
                    where or "document",
                    f"integer {_short_int(value)} does not fit 64 bits (-2^63 .. 2^64-1)",
                )
        elif isinstance(value, float) and not math.isfinite(value):
            raise ProfileError(source, where or "document", f"must be a finite number, got {value}")


def find_lone_surrogate(doc: Any) -> tuple[str, bool] | None:
    """(JSON path, whether it is a member's name) of the first string or name in `doc` that
    holds a lone surrogate, for readers of other JSON documents (gate results); None if none
    does."""
    for where, value, _, is_name in _nodes(doc):
        if isinstance(value, str) and has_lone_surrogate(value):
            return where or "document", is_name
    return None


def _short_int(value: int, alone: bool = False) -> str:
    """An integer as a message quotes it: "of N digits" past 30 digits (after "integer"), or
    "a number of N digits" where it stands `alone` ("got ...")."""
    digits = len(str(abs(value)))
    if digits <= 30:
        return str(value)
    return f"{'a number ' if alone else ''}of {digits} digits"


# -- the schema -----------------------------------------------------------------------------
# The structure and types are the JSON Schema's (mprof/schema/run-profile.schema.json); a
# jsonschema error is turned into the message a user reads, naming the JSON path of the value.


def _is_integer(_checker, value) -> bool:
    # JSON Schema counts 2.0 as an integer; a run profile's counts and ids are written without
    # a fraction, and a float there means a writer that lost precision.
    return isinstance(value, int) and not isinstance(value, bool)


@cache
def _validator():
    """The schema's validator, or None where the jsonschema package is not installed."""
    try:
        import jsonschema
    except ImportError:
        return None
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", _is_integer)
    return jsonschema.validators.extend(base, type_checker=checker)(inlined_schema())


_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}
# Of several errors at one value, the most basic is reported: a value of the wrong type says
# more than a constraint it then also breaks.
_KEYWORD_ORDER = {"type": 0, "required": 1, "additionalProperties": 2}


def path_text(path) -> str:
    """A JSON path as the messages write it: `pes[0].objects[1].id` (`document` for the
    root)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


def _document_order(doc: Any, error) -> tuple:
    """Where the error's value comes in the document (member and element indices), so that
    of several errors the first one in the text is reported."""
    order, value = [], doc
    for part in error.absolute_path:
        if isinstance(value, dict):
            order.append(list(value).index(part))
        else:
            order.append(part)
        value = value[part]
    return (*order, -1, _KEYWORD_ORDER.get(error.validator, 9))


def _schema_problem(error) -> tuple[str, str]:
    """(JSON path, message) of one jsonschema error."""
    where = path_text(error.absolute_path)
    value, keyword, schema = error.instance, error.validator, error.schema
    if keyword == "type":
        names = [
            _TYPE_NAMES[t]
            for t in ([schema["type"]] if isinstance(schema["type"], str) else schema["type"])
        ]
        expected = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        return where, f"expected {expected}, got {value_kind(value)}"
    if keyword == "required":
        missing = next(name for name in error.validator_value if name not in value)
        return where, f"missing required field '{missing}'"
    if keyword == "additionalProperties":
        known = schema.get("properties", {})
        unknown = next(name for name in value if name not in known)
        fields = ", ".join(known)
        return (
            f"{where}.{unknown}" if error.absolute_path else unknown,
            f"unknown field '{unknown}' (known here: {fields})",
        )
    if keyword == "minimum":
        if schema.get("type") == "number":
            return where, f"a time must be non-negative, got {value}"
        return where, f"must be >= {error.validator_value}, got {value}"
    if keyword == "maximum":
        if schema.get("type") == "number":
            return where, (
                f"a time must be at most {error.validator_value:g} s, got {value:g} "
                "(a writer's error: no run lasts that long)"
            )
        return where, f"must be <= {error.validator_value}, got {_short_int(value, alone=True)}"
    if keyword == "minLength" and "propertyNames" in error.schema_path:
        return where, 'a name must not be empty ("": ...)'
    if keyword == "minLength":
        return where, "must not be empty"
    if keyword == "const":
        return where, f"expected '{error.validator_value}', got {value_kind(value)}"
    if keyword == "enum" and where == "schema_version":
        return where, f"version {value} is not supported (known: {SCHEMA_VERSIONS})"
    return where, error.message


NO_SCHEMA = (
    "validating a run profile needs the jsonschema package, which is not installed "
    "(`make` installs it into .venv; or: pip install jsonschema)"
)


def validate_profile(doc: Any, source: str = "<profile>", *, schema_optional: bool = False) -> None:
    """Raise ProfileError unless `doc` is a complete, well-typed run profile: the values
    anywhere in it (finite, 64 bits), the schema, then what the schema cannot say.

    Without the jsonschema package this is an MprofError, except with `schema_optional`: a
    program's own profile that `mprof bench` reads back is then checked without the schema
    (the 16-core measuring machine has numpy, scipy, jinja2 and rich, not jsonschema; the
    runtime's output is checked against the schema by the tests)."""
    if isinstance(doc, (dict, list)):
        _check_values(doc, source)
    validator = _validator()
    if validator is None:
        if not schema_optional:
            raise MprofError(f"{source}: {NO_SCHEMA}")
        if not isinstance(doc, dict):
            raise ProfileError(source, "", "not a run profile (a JSON object)")
        try:
            _check_semantics(doc, source)
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
            raise ProfileError(
                source,
                "",
                f"not a complete run profile ({type(exc).__name__}: "
                f"{exc}; checked without the schema, as jsonschema is not "
                "installed)",
            ) from None
        return
    errors = list(validator.iter_errors(doc))
    if errors:
        raise ProfileError(
            source, *_schema_problem(min(errors, key=lambda e: _document_order(doc, e)))
        )
    _check_semantics(doc, source)


# A PE's category times may differ from its cpu_s by rounding only; this much is allowed.
CATEGORY_SUM_TOLERANCE = 0.01


def _check_semantics(doc: dict, source: str) -> None:
    """The rules of a schema-valid document that relate values to each other."""

    def fail(where: str, message: str):
        raise ProfileError(source, where, message)

    _check_identifiers(doc, fail)
    _check_started_at(doc, fail)
    accesses = _check_accesses(doc, fail)
    declared = _recorded_interfaces(doc)
    pes = doc["pes"]
    if len(pes) != doc["npes"]:
        fail("pes", f"npes is {doc['npes']} but the profile lists {len(pes)} PEs")
    for index, pe in enumerate(pes):
        where = f"pes[{index}]"
        if pe["pe"] != index:
            fail(
                f"{where}.pe",
                f"PEs must appear once each, ordered by pe; expected {index}, got {pe['pe']}",
            )
        _check_idle(pe, where, fail)
        seen_ids = set()
        for j, obj in enumerate(pe["objects"]):
            owhere = f"{where}.objects[{j}]"
            if obj["id"] in seen_ids:
                fail(f"{owhere}.id", f"object id {obj['id']} appears twice on this PE")
            seen_ids.add(obj["id"])
            for name in obj.get("absent", {}):
                if name in obj["stats"]:
                    fail(
                        f"{owhere}.absent.{name}", "a statistic cannot be both measured and absent"
                    )
            if obj["module"] in declared:
                _check_statistics(obj, owhere, declared[obj["module"]], fail)
        _check_latency(pe, where, accesses, fail)
        if "categories" in pe:
            _check_categories(pe, where, accesses, fail)


# Statistic types' value ranges (mprof.iface.model.STAT_TYPES); a double takes any number.
INTEGER_RANGES = {"u64": (0, 2**64 - 1), "i64": (-(2**63), 2**63 - 1)}

# (module, digest) -> the interface with that text: content-addressed, so a hit stays true
# (a miss is looked up again: the text may be stored meanwhile).
_interfaces: dict[tuple[str, str], Any] = {}


def _recorded_interfaces(doc: dict) -> dict:
    """module -> the interface the run was counted with, for the modules whose `interfaces`
    digest finds its very text (mprof.iface.registry.find_by_digest); modules whose text is not
    at hand are not checked against it."""
    from ..iface import load_interface
    from ..iface.registry import find_by_digest

    found = {}
    for entry in doc.get("interfaces", []):
        key = (entry["name"], entry["digest"])
        if key not in _interfaces:
            path = find_by_digest(*key)
            if path is None:
                continue
            try:
                _interfaces[key] = load_interface(path)
            except MprofError:
                continue  # a text that does not load now (a newer syntax): check nothing
        found[entry["name"]] = _interfaces[key]
    return found


def _check_statistics(obj: dict, where: str, iface, fail) -> None:
    """An object's statistics are those its interface declares, each a value of its type."""
    types = {s.name: s.type for s in iface.statistics}
    for name in obj.get("absent", {}):
        if name not in types:
            fail(
                f"{where}.absent.{name}",
                f"interface {iface.name} (the text this run was "
                f"built with, {iface.path}) declares no statistic '{name}'",
            )
    for name, value in obj["stats"].items():
        if name not in types:
            fail(
                f"{where}.stats.{name}",
                f"interface {iface.name} (the text this run was "
                f"built with, {iface.path}) declares no statistic '{name}'",
            )
        bounds = INTEGER_RANGES.get(types[name])
        if bounds is None:
            continue
        if isinstance(value, float) and not value.is_integer():
            fail(
                f"{where}.stats.{name}",
                f"statistic '{name}' is a {types[name]} in interface "
                f"{iface.name}: a whole number, got {value!r}",
            )
        if not bounds[0] <= value <= bounds[1]:
            fail(
                f"{where}.stats.{name}",
                f"statistic '{name}' is a {types[name]} in interface "
                f"{iface.name}: between {bounds[0]} and {bounds[1]}, got "
                f"{_short_int(int(value), alone=True)}",
            )


# The categories' rows of the runtime's own time, which are no access category.
RUNTIME_ROWS = ("(scheduler)", "(idle)")


def _check_accesses(doc: dict, fail) -> set[str] | None:
    """`accesses` names each registered category once; the set, or None for a profile of an
    older runtime without the key (its rows can then name any category)."""
    if "accesses" not in doc:
        return None
    seen: set[str] = set()
    for j, name in enumerate(doc["accesses"]):
        if name in seen:
            fail(f"accesses[{j}]", f"access category '{name}' is listed twice")
        seen.add(name)
    return seen


def _check_latency(pe: dict, where: str, accesses: set[str] | None, fail) -> None:
    """One row per (access, enabler) pair that occurred, both of them registered categories,
    and the critical latency a part of the observed one."""
    pairs: set[tuple[str, str]] = set()
    for j, row in enumerate(pe.get("latency", [])):
        rwhere = f"{where}.latency[{j}]"
        for key in ("access", "enabler"):
            if accesses is not None and row[key] not in accesses:
                fail(
                    f"{rwhere}.{key}",
                    f"'{row[key]}' is not an access category of this run (not in its accesses)",
                )
        pair = (row["access"], row["enabler"])
        if pair in pairs:
            fail(
                rwhere,
                f"a second row for access '{pair[0]}' enabled by '{pair[1]}' on this "
                "PE (a PE has one row per pair)",
            )
        pairs.add(pair)
        # the runtime writes a row only for a pair that occurred: a count of 0 with times
        # would be waits that never happened
        if row["count"] == 0:
            fail(
                f"{rwhere}.count",
                "a latency row counts at least one access (pairs that never occurred have no row)",
            )
        # printed with the same decimals, so the order of the values survives
        if row["critical_s"] > row["observed_s"]:
            fail(
                f"{rwhere}.critical_s",
                f"critical latency {row['critical_s']} s is more than the observed "
                f"{row['observed_s']} s (it is a part of it)",
            )
    # each idle period is charged as critical latency once, to the fiber it held up first
    # (sched.c, critical_of): the PE's critical latencies together are a part of its idle time
    critical = math.fsum(row["critical_s"] for row in pe.get("latency", []))
    idle = pe["idle_s"]
    if critical > idle * (1 + IDLE_RELATIVE_TOLERANCE) + IDLE_ABSOLUTE_TOLERANCE:
        fail(
            f"{where}.latency",
            f"the critical latencies add up to {critical:.9g} s, more than "
            f"the PE's idle_s {idle} s (each idle period is charged once: they are a part of "
            "it)",
        )


# idle_s sums the idle periods in nanoseconds, elapsed_s is the difference of two readings of
# another clock function, each printed with 9 decimals: they may disagree by a little, and a
# run is worth more than the last microseconds of its accounting.  The runtime's own tests
# allow a millisecond; so does this, which still refuses idle time a writer made up.
IDLE_RELATIVE_TOLERANCE, IDLE_ABSOLUTE_TOLERANCE = 1e-6, 1e-3


def _check_idle(pe: dict, where: str, fail) -> None:
    """Idle time is a part of the PE's wall time, the idle loop's CPU time a part of its CPU
    time (the runtime caps it so where it scales both, PEs that share a worker thread)."""
    idle, elapsed = pe["idle_s"], pe["elapsed_s"]
    if idle > elapsed * (1 + IDLE_RELATIVE_TOLERANCE) + IDLE_ABSOLUTE_TOLERANCE:
        fail(
            f"{where}.idle_s",
            f"idle time {idle} s is more than the PE's elapsed_s {elapsed} s (it is a part of it)",
        )
    idle_cpu, cpu = pe.get("idle_cpu_s"), pe.get("cpu_s")
    if (
        idle_cpu is not None
        and cpu is not None
        and idle_cpu > cpu * (1 + IDLE_RELATIVE_TOLERANCE) + IDLE_ABSOLUTE_TOLERANCE
    ):
        fail(
            f"{where}.idle_cpu_s",
            f"the idle loop's CPU time {idle_cpu} s is more than the "
            f"PE's cpu_s {cpu} s (it is a part of it)",
        )


# Names that identify a run (its program, host, parameters): a NUL in one is a writer's
# error, and it would cut the name short in C and in terminals.
def _check_identifiers(doc: dict, fail) -> None:
    named = [
        ("program", doc["program"]),
        ("machine.hostname", doc.get("machine", {}).get("hostname", "")),
    ]
    named += [
        (f"{table}.{key}", key) for table in ("params", "settings") for key in doc.get(table, {})
    ]
    for where, text in named:
        if "\0" in text:
            fail(where, "must not contain a NUL character (\\u0000)")


def _check_started_at(doc: dict, fail) -> None:
    """`started_at` is ISO 8601, as the runtime writes it (`2026-11-23T18:40:00Z`)."""
    text = doc.get("started_at")
    if text is None:
        return
    try:
        # fromisoformat reads a trailing Z only from Python 3.11 on
        datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        fail(
            "started_at",
            f"not an ISO 8601 date and time (such as 2026-11-23T18:40:00Z), got {value_kind(text)}",
        )


def _check_categories(pe: dict, where: str, accesses: set[str] | None, fail) -> None:
    """Each category once on a PE, each a registered one or the runtime's own, and together
    the PE's cpu_s (within 1 %): an empty list only where the PE used no CPU time."""
    seen: set[str] = set()
    total = 0.0
    for j, row in enumerate(pe["categories"]):
        if (
            accesses is not None
            and row["access"] not in accesses
            and row["access"] not in RUNTIME_ROWS
        ):
            fail(
                f"{where}.categories[{j}].access",
                f"'{row['access']}' is not an access "
                "category of this run (not in its accesses, nor (scheduler) or (idle))",
            )
        if row["access"] in seen:
            fail(
                f"{where}.categories[{j}].access",
                f"category '{row['access']}' appears twice on this PE",
            )
        seen.add(row["access"])
        total += row["cpu_s"]
    cpu = pe.get("cpu_s")
    if cpu is None or abs(total - cpu) <= CATEGORY_SUM_TOLERANCE * cpu + 1e-9:
        return
    if not seen:
        # the runtime writes the key only where the PE took a sample, and then a row for
        # each category a sample charged time to (runtime/src/profile.c, put_categories):
        # an empty list would say that the PE's CPU time went to nothing
        fail(
            f"{where}.categories",
            f"no category rows, but the PE's cpu_s is {cpu:.6g} s (a "
            "PE that took no sample has no categories key)",
        )
    fail(
        f"{where}.categories",
        f"the categories' cpu_s add up to {total:.6g} s, but the "
        f"PE's cpu_s is {cpu:.6g} s (they must agree within 1 %)",
    )
