"""benchmarks/fit/replicates_rule.py: the modeling script it fits, per rule and term left
out, and its refusals."""

import subprocess
import sys
from pathlib import Path

from tooling import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "fit" / "replicates_rule.py"


def test_variant_rewrites_databases_rule_and_ignores_before_the_fit(tmp_path):
    mod = load_script(SCRIPT)
    script = (ROOT / "workflows" / "rts" / "model.tcl").read_text()
    text = mod.variant(script, tmp_path, "min", "rts Notify")
    assert f"FitDatabase: {tmp_path / 'rts-fit.db'}" in text
    assert f"TestDatabase: {tmp_path / 'rts-test.db'}" in text
    assert "\nReplicates min\n" in text and "Replicates median" not in text
    assert "SaveModel" not in text and "../../" not in text
    # an IgnoreTerm after Fit would not change that fit
    assert text.index("IgnoreTerm: rts Notify") < text.index("\nFit\n")
    plain = mod.variant(script, tmp_path, "median", None)
    assert "\nReplicates median\n" in plain and "IgnoreTerm: rts Notify" not in plain


def test_refuses_a_folder_without_databases_and_a_script_without_replicates(tmp_path):
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and "has no rts-fit.db" in run.stderr
    assert "Traceback" not in run.stderr
    bare = tmp_path / "bare.tcl"
    bare.write_text("FitDatabase: x.db\nFit\n")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--script", str(bare)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "no Replicates line" in run.stderr
