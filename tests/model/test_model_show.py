"""`mprof model show` says what `mprof fit` said of each parameter: the notes of a parameter the
data could not determine (rank deficient) and of an interval that contains 0, read from the
model file's flags, and which terms the data could not tell apart."""

from __future__ import annotations

import json
import re

from model_helpers import write_script

from mprof.cli import main

# pipe:P and graph:P are 1 in every sample: the data cannot tell them apart
SCRIPT = """FitDatabase fit.db
Interface @PIPE@
Interface @GRAPH@
SaveModel m.json
"""


def notes_by_parameter(fit_text: str) -> dict[str, str]:
    """`module:Term: value +- h   [notes]` lines of the fit's output: parameter -> notes."""
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"^(\w+:\w+): \S+(?: \+- \S+)?(?:   \[(.*)\])?$", fit_text, re.M)
    }


def test_model_show_notes_rank_deficient_parameters_as_the_fit_does(tmp_path, pipe_dbs, capsys):
    script = write_script(tmp_path, SCRIPT)
    assert main(["fit", str(script)]) == 0
    fit_notes = notes_by_parameter(capsys.readouterr().out)
    undetermined = {
        n for n, notes in fit_notes.items() if notes and "not determined (rank deficient)" in notes
    }
    assert undetermined == {"pipe:P", "graph:P"}, fit_notes
    model = tmp_path / "m.json"
    groups = json.loads(model.read_text())["flags"]["rank_deficient_terms"]
    assert main(["model", "show", str(model)]) == 0
    shown = capsys.readouterr().out
    for group in groups:
        assert (
            "Not determined (rank deficient), linearly dependent: " + ", ".join(group) in shown
        ), shown
    for name, notes in fit_notes.items():
        module, term = name.split(":")
        part = re.search(
            rf"\b{term}=\S+(?: \+- \S+)?(?: \[([^\]]*)\])?",
            shown.split(f"\n{module}  (")[1].split("\n\n")[0],
        )
        assert part, (name, shown)
        assert (part.group(1) or None) == (notes or None), (name, part.group(0), notes)
