"""docs/run-profile.md is generated from the run profile's JSON Schema: the checked-in page
must be what the generator writes now (regenerate with `python -m mprof.schema.doc >
docs/run-profile.md`)."""

import subprocess
import sys
from pathlib import Path

from mprof.schema import run_profile_schema
from mprof.schema.doc import render

ROOT = Path(__file__).resolve().parents[2]


def test_checked_in_page_is_the_generated_one():
    page = (ROOT / "docs" / "run-profile.md").read_text(encoding="utf-8")
    assert page == render(), (
        "docs/run-profile.md differs from the schema; regenerate it with "
        "`python -m mprof.schema.doc > docs/run-profile.md`"
    )


def test_generator_runs_as_a_module_and_lists_every_field():
    out = subprocess.run(
        [sys.executable, "-m", "mprof.schema.doc"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert out == render()
    schema = run_profile_schema()
    for name in schema["properties"]:
        assert f"- `{name}` (" in out
    for name in schema["$defs"]["latency"]["properties"]:
        assert f"- `pes[].latency[].{name}` (" in out


def test_a_changed_description_changes_the_page():
    schema = run_profile_schema()
    changed = {
        **schema,
        "properties": {
            **schema["properties"],
            "program": {"type": "string", "description": "X-Y-Z"},
        },
    }
    assert "X-Y-Z" in render(changed) and "X-Y-Z" not in render()
