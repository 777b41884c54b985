"""`mprof gate` on synthetic databases: verdicts, configuration, allow-list, machines,
exit codes and the three report formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from mprof.cli import main
from mprof.gate.config import config_from_dict
from mprof.gate.data import load_side
from mprof.gate.evaluate import (ALLOWED, BEHAVIOUR, INCONCLUSIVE, INFO, PASS, REGRESSION,
                                 evaluate)

from gate_synth import write_db


@pytest.fixture
def dbs(tmp_path):
    rng = np.random.default_rng(7)
    return {
        "base": write_db(tmp_path / "base.db", rng),
        "same": write_db(tmp_path / "same.db", rng),
        "slow": write_db(tmp_path / "slow.db", rng, factors={4000: 1.3}),
        "stat": write_db(tmp_path / "stat.db", rng, stat_delta=3),
        "other": write_db(tmp_path / "other.db", rng, hostname="elsewhere"),
        "noisy": write_db(tmp_path / "noisy.db", rng, reps=3, sigma=0.3),
        "tmp": tmp_path,
    }


def gate(dbs, cand, *extra, base="base"):
    return main(["gate", "--baseline", str(dbs[base]), "--candidate", str(dbs[cand]),
                 "-q", *extra])


def verdicts(dbs, cand, config=None, **kw):
    report = evaluate(load_side("baseline", dbs["base"]), load_side("candidate", dbs[cand]),
                      config_from_dict(config or {}), **kw)
    return report, {u.id: u.verdict for u in report.units}


def test_regression_found_in_the_slowed_configuration_only(dbs):
    report, v = verdicts(dbs, "slow")
    assert v["synth(npes=2,n=4000)::time"] == REGRESSION
    assert v["synth(npes=2,n=1000)::time"] != REGRESSION
    assert v["synth(npes=2,n=4000)::stat:rts.Ops"] == PASS
    assert "synth(npes=2,n=4000)::stat:rts.Noise" not in v  # varies: not compared exactly
    assert report.exit_code == 1
    assert gate(dbs, "slow") == 1


def test_same_distribution_has_no_regression(dbs):
    report, v = verdicts(dbs, "same")
    assert REGRESSION not in v.values() and BEHAVIOUR not in v.values()
    assert gate(dbs, "same", "--inconclusive-ok") == 0


def test_behaviour_change_of_deterministic_counts(dbs):
    report, v = verdicts(dbs, "stat")
    assert v["synth(npes=2,n=1000)::stat:rts.Ops"] == BEHAVIOUR
    assert v["synth(npes=2,n=1000)::stat:rts.P"] == PASS
    assert gate(dbs, "stat", "--inconclusive-ok") == 1
    report, _ = verdicts(dbs, "stat", {"defaults": {"behaviour_change": "warn"}})
    assert report.exit_code in (0, 3)


def test_inconclusive_exit_code_and_inconclusive_ok(dbs):
    report, v = verdicts(dbs, "noisy")
    assert INCONCLUSIVE in v.values() and REGRESSION not in v.values()
    assert gate(dbs, "noisy") == 3
    assert gate(dbs, "noisy", "--inconclusive-ok") == 0


def test_per_unit_tolerance_and_alpha(dbs):
    config = {"defaults": {"tolerance": 0.05},
              "unit": [{"match": "*(npes=2,n=4000)::time", "tolerance": 0.5}]}
    report, v = verdicts(dbs, "slow", config)
    assert v["synth(npes=2,n=4000)::time"] == PASS  # +30 % is inside a 50 % tolerance
    u = next(u for u in report.units if u.id == "synth(npes=2,n=4000)::time")
    assert u.tolerance == 0.5 and u.alpha == 0.05
    config["unit"].append({"match": "*::time", "alpha": 0.001})
    report, _ = verdicts(dbs, "slow", config)
    u = next(u for u in report.units if u.id == "synth(npes=2,n=4000)::time")
    assert (u.tolerance, u.alpha) == (0.5, 0.001)  # later rules override field by field


def test_correction_is_configurable(dbs):
    for method in ("holm", "bh", "none"):
        report, v = verdicts(dbs, "slow", {"defaults": {"correction": method}})
        assert v["synth(npes=2,n=4000)::time"] == REGRESSION
        assert report.config.correction == method
    tested = [u for u in report.units if u.comparison is not None]
    assert all(u.p_adjusted == u.comparison.p_regression for u in tested)  # none


def test_allow_list(dbs, tmp_path):
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[defaults]\ntolerance = 0.05\nalpha = 0.05\n\n'
                   '[[allow]]\nmatch = "*(npes=2,n=4000)::time"\nreason = "new algorithm"\n\n'
                   '[[allow]]\nmatch = "nothing::*"\nreason = "stale"\n')
    assert gate(dbs, "slow", "--config", str(cfg), "--inconclusive-ok") == 0
    report, v = verdicts(dbs, "slow", {"allow": [{"match": "*::time", "reason": "ok"}]})
    assert v["synth(npes=2,n=4000)::time"] == ALLOWED
    u = next(u for u in report.units if u.verdict == ALLOWED)
    assert "ok" in u.note and "was REGRESSION" in u.note
    out = tmp_path / "r.json"
    gate(dbs, "slow", "--config", str(cfg), "--json", str(out))
    assert json.loads(out.read_text())["unused_allow"] == ["nothing::*"]


def test_cross_machine_refused_or_informational(dbs, capsys):
    assert gate(dbs, "other") == 2
    assert "different machines" in capsys.readouterr().err
    report, v = verdicts(dbs, "other", allow_cross_machine=True)
    assert set(v.values()) == {INFO}
    assert report.exit_code == 0
    assert gate(dbs, "other", "--allow-cross-machine") == 0


@pytest.mark.parametrize("args", [
    ["--baseline", "/nonexistent.db", "--candidate", "/nonexistent.db"],
    ["--candidate", "X"],
    ["--tolerance", "-1"],
    ["--alpha", "0.9"],
    ["--correction", "magic"],
    ["--where", "n=12345"],  # selects nothing
    ["--config", "/nonexistent.toml"],
])
def test_input_errors_exit_2(dbs, args, capsys):
    full = ["gate"]
    if "--baseline" not in args and "--candidate" not in args:
        full += ["--baseline", str(dbs["base"]), "--candidate", str(dbs["same"])]
    assert main(full + args) == 2
    assert "mprof gate: error" in capsys.readouterr().err


def test_bad_config_files_exit_2(dbs, tmp_path):
    for text in ('[defaults]\ntolerance = "x"\n', '[[unit]]\ntolerance = 0.1\n',
                 '[[allow]]\nmatch = "*"\n', '[weird]\n', 'not toml ['):
        cfg = tmp_path / "bad.toml"
        cfg.write_text(text)
        assert gate(dbs, "same", "--config", str(cfg)) == 2, text


def test_where_and_program_selection(dbs):
    assert gate(dbs, "slow", "--where", "n=1000", "--inconclusive-ok") == 0
    assert gate(dbs, "slow", "--where", "n=4000") == 1
    assert gate(dbs, "slow", "--program", "synth") == 1
    assert gate(dbs, "slow", "--program", "other") == 2  # nothing selected


def test_reports_are_well_formed(dbs, tmp_path):
    md, xml, js = tmp_path / "o.md", tmp_path / "o.xml", tmp_path / "o.json"
    code = main(["gate", "--baseline", str(dbs["base"]), "--candidate", str(dbs["slow"]),
                 "--markdown", str(md), "--junit", str(xml), "--json", str(js)])
    assert code == 1
    data = json.loads(js.read_text())
    assert data["status"] == "FAIL" and data["exit_code"] == 1
    assert data["units"][0]["verdict"] == REGRESSION  # regressions first
    root = ET.parse(xml).getroot()
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(data["units"])
    failures = [c for c in cases if c.find("failure") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert len(failures) == data["counts"][REGRESSION] == 1
    assert len(skipped) == data["counts"][INCONCLUSIVE]
    assert int(root.find("testsuite").get("tests")) == len(cases)
    assert failures[0].get("classname") == "synth(npes=2,n=4000)"
    text = md.read_text()
    assert text.startswith("## mprof gate:") and "FAIL" in text.splitlines()[0]
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len({line.count("|") - line.count("\\|") for line in table}) == 1
    assert "**REGRESSION**" in table[2]


def test_terminal_table_lists_regressions_first(dbs, capsys):
    main(["gate", "--baseline", str(dbs["base"]), "--candidate", str(dbs["slow"]),
          "--show-pass"])
    out = capsys.readouterr().out
    assert out.index("REGRESSION") < out.index("PASS")
    assert "mprof gate: FAIL" in out
