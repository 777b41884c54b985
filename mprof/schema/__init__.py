"""The run profile's JSON Schema (run-profile.schema.json, package data): the one statement of
the format that the C runtime writes (runtime/src/profile.c), `mprof.db.validate` checks and
docs/run-profile.md describes (generated from it by `python -m mprof.schema.doc`)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().with_name("run-profile.schema.json")


@cache
def run_profile_schema() -> dict:
    """The schema document (read once; callers must not change it)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@cache
def inlined_schema() -> dict:
    """The schema with its `$ref`s to `$defs` replaced by what they name: the same rules, but a
    validator then does not resolve a reference for every value of a large profile (half its
    time).  The format has no recursive definitions, so this ends."""
    schema = run_profile_schema()
    defs = schema.get("$defs", {})

    def inline(node):
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = dict(defs[node["$ref"].removeprefix("#/$defs/")])
            target.update((k, v) for k, v in node.items() if k != "$ref")
            return inline(target)
        return {k: inline(v) for k, v in node.items() if k != "$defs"}

    return inline(schema)
