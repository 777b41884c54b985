"""docs/run-profile.md, generated from the run profile's JSON Schema so that the page cannot
drift from what is validated: `python -m mprof.schema.doc > docs/run-profile.md` (a test
compares the checked-in page with this output)."""

from __future__ import annotations

import json
import sys

from . import run_profile_schema

HEADER = (
    "<!-- Generated from mprof/schema/run-profile.schema.json by "
    "`python -m mprof.schema.doc`; edit the schema, not this page. -->"
)


def _type_text(node: dict) -> str:
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    kind = node.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    text = " or ".join(k for k in kinds if k)
    if "enum" in node:
        text += " (" + ", ".join(json.dumps(v) for v in node["enum"]) + ")"
    if node.get("minimum") is not None:
        text += f", >= {node['minimum']}"
    if node.get("maximum") is not None:
        text += f", <= {node['maximum']}"
    if node.get("minLength"):
        text += ", not empty"
    return text


def _resolve(schema: dict, node: dict) -> dict:
    """`node` with a `$ref` to a definition merged in (its own keywords win)."""
    if "$ref" not in node:
        return node
    target = dict(_resolve(schema, schema["$defs"][node["$ref"].removeprefix("#/$defs/")]))
    target.update((k, v) for k, v in node.items() if k != "$ref")
    return target


def field_lines(schema: dict, node: dict, prefix: str = "") -> list[str]:
    """One bullet per field, depth first, in the schema's order."""
    lines = []
    node = _resolve(schema, node)
    required = set(node.get("required", []))
    for name, child in node.get("properties", {}).items():
        child = _resolve(schema, child)
        path = f"{prefix}{name}"
        kind = _type_text(child)
        if child.get("type") == "array" and "items" in child:
            item = _resolve(schema, child["items"])
            kind = f"array of {_type_text(item) if 'properties' not in item else 'objects'}"
        elif child.get("type") == "object" and isinstance(child.get("additionalProperties"), dict):
            kind = f"object of {_type_text(child['additionalProperties'])} values"
        need = "required" if name in required else "optional"
        text = f"- `{path}` ({kind}; {need})"
        if child.get("description"):
            text += f": {child['description']}"
        lines.append(text)
        if "properties" in child:
            lines += field_lines(schema, child, f"{path}.")
        elif child.get("type") == "array" and "properties" in _resolve(
            schema, child.get("items", {})
        ):
            lines += field_lines(schema, child["items"], f"{path}[].")
    return lines


def _conditions(schema: dict) -> list[str]:
    """The schema's conditional requirements, in words."""
    out = []
    for rule in schema.get("allOf", []):
        version = rule["if"]["properties"]["schema_version"]["const"]
        needed = rule["then"]["properties"]["pes"]["items"]["required"]
        out.append(
            f"- With `schema_version` {version}, every PE has "
            + " and ".join(f"`{n}`" for n in needed)
            + "."
        )
    return out


def render(schema: dict | None = None) -> str:
    schema = schema or run_profile_schema()
    example = json.dumps(schema["examples"][0], indent=2, ensure_ascii=False)
    parts = [
        HEADER,
        "",
        f"# {schema['title']}",
        "",
        schema["description"],
        "",
        "```json",
        example,
        "```",
        "",
        "## Fields",
        "",
        "Fields not listed here are rejected (`additionalProperties` is false wherever the "
        "format is closed); maps of statistics, parameters and settings take any name.",
        "",
        *field_lines(schema, schema),
        "",
        *_conditions(schema),
    ]
    return "\n".join(parts).rstrip() + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
