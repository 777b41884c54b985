"""JSON that names a key twice in one object is an error wherever mprof reads JSON: Python's
json keeps the last value silently, so a file could say two things and be read as one.

    loads(text, source)   json.loads, a repeated key an MprofError at its place
    unique_keys           the object_pairs_hook that refuses them (DuplicateKey)
    duplicate_key(text)   where the first repeated key is (offset, key)
    huge_integer(text)    the integer json.loads refused for its length (a ValueError)
"""

from __future__ import annotations

import json
import re

from .errors import MprofError, line_column


def huge_integer(text: str) -> re.Match | None:
    """The first integer of `text` with more digits than Python converts (4300 by default:
    json.loads raises a ValueError for it), or None."""
    return re.search(r"-?[0-9]{4300,}", text)


class DuplicateKey(ValueError):
    """Raised by unique_keys: an object names a key twice."""


def unique_keys(pairs: list) -> dict:
    """json's object_pairs_hook: an object that names a key twice is an error (json keeps the
    last value silently, so a profile could say two things and be read as one)."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        raise DuplicateKey()
    return doc


# The tokens of JSON text that give an object's keys: strings and the structural characters.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def duplicate_key(text: str) -> tuple[int, str] | None:
    """The offset and name of the first key that its object names a second time, in JSON
    text that parses but for that."""
    stack: list[set | None] = []  # per open container: its keys so far (None: an array)
    expect_key = False
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token == "{":
            stack.append(set())
            expect_key = True
        elif token == "[":
            stack.append(None)
            expect_key = False
        elif token in "]}":
            if stack:
                stack.pop()
            expect_key = False
        elif token == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif token == ":":
            expect_key = False
        else:
            if expect_key:
                key = json.loads(token)
                if key in stack[-1]:
                    return m.start(), key
                stack[-1].add(key)
            expect_key = False
    return None


def loads(text: str, source: str, **kwargs):
    """`json.loads(text, **kwargs)` that refuses a repeated key with `source:line:column:`;
    other errors are json's own (json.JSONDecodeError, ValueError, RecursionError)."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys, **kwargs)
    except DuplicateKey:
        offset, key = duplicate_key(text) or (0, "?")
        line, column = line_column(text, offset)
        raise MprofError(
            f"{source}:{line}:{column}: key {json.dumps(key)} appears twice in "
            "one object (each key once)"
        ) from None
