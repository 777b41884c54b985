"""The run profiles the C runtime writes (runtime/src/profile.c) against the JSON Schema of the
format (mprof/schema/run-profile.schema.json): every field written is one the schema knows, and
every field the schema describes is written, so that the writer, the validator and the
generated docs/run-profile.md cannot drift apart."""

import jsonschema

from mprof.db.validate import validate_profile
from mprof.schema import run_profile_schema

# Fields of the schema that a run of the runtime's test programs does not write: `bench` is
# added by `mprof bench`, `absent` only for PAPI events that could not be counted.
NOT_WRITTEN = {"bench", "absent"}
# MPROF_SPIN: the waiting PE spins, so that it has CPU time to sample (tests/runtime/
# test_categories.py)
SAMPLED = {"MPROF_SPIN": 1_000_000_000, "MPROF_WORKERS": 2}


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def field_problems(schema: dict, node: dict, value, where: str = "document") -> list[str]:
    """Fields of `value` the schema does not know, and fields it describes that are missing,
    at every level of the document."""
    node = resolve(schema, node)
    problems = []
    if isinstance(value, dict) and "properties" in node:
        known = set(node["properties"])
        problems += [f"{where}: writes unknown field '{k}'" for k in sorted(set(value) - known)]
        problems += [
            f"{where}: omits field '{k}'" for k in sorted(known - set(value) - NOT_WRITTEN)
        ]
        for key in set(value) & known:
            problems += field_problems(
                schema, node["properties"][key], value[key], f"{where}.{key}"
            )
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            problems += field_problems(schema, node["items"], item, f"{where}[{i}]")
    return problems


def check_against_schema(run) -> None:
    schema = run_profile_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = [
        f"{list(e.absolute_path)}: {e.message}"
        for e in jsonschema.Draft202012Validator(schema).iter_errors(run.profile)
    ]
    assert not errors, f"{errors}\n{run.describe()}"
    assert not field_problems(schema, schema, run.profile), run.describe()
    validate_profile(run.profile, " ".join(run.args))  # and the rules the schema cannot say


def test_profile_of_a_sampled_run_has_exactly_the_schemas_fields(rt):
    run = rt.run("categories", "ms=40", env=SAMPLED, timeout=120)
    assert all("categories" in pe for pe in run.profile["pes"]), run.describe()
    check_against_schema(run)


def test_profile_with_latency_rows_has_exactly_the_schemas_fields(rt):
    run = rt.run("latency", 5, env={"MPROF_SAMPLE_US": 0})
    assert run.profile["pes"][1]["latency"], run.describe()
    assert not any("categories" in pe for pe in run.profile["pes"])
    # without samples no PE has `categories`, which is then the one field the schema allows
    # to be missing
    schema = run_profile_schema()
    problems = field_problems(schema, schema, run.profile)
    assert problems == [
        f"document.pes[{i}]: omits field 'categories'" for i in range(run.profile["npes"])
    ], run.describe()
    validate_profile(run.profile, " ".join(run.args))


def test_field_check_finds_unknown_and_missing_fields():
    """The check above would see a writer that adds or drops a field."""
    schema = run_profile_schema()
    doc = {
        "schema": "mprof.run-profile",
        "npes": 1,
        "extra": 1,
        "pes": [{"pe": 0, "objects": [{"id": 0, "module": "rts", "stats": {}, "x": 0}]}],
    }
    problems = field_problems(schema, schema, doc)
    assert "document: writes unknown field 'extra'" in problems
    assert "document: omits field 'accesses'" in problems
    assert "document.pes[0]: omits field 'latency'" in problems
    assert "document.pes[0].objects[0]: writes unknown field 'x'" in problems
