"""`mprof gate` on synthetic databases: verdicts, configuration, allow-list, machines,
exit codes and the three report formats."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from mprof.cli import main
from mprof.db.store import ProfileDB
from mprof.errors import MprofError
from mprof.gate.config import config_from_dict
from mprof.gate.data import load_side
from mprof.gate.evaluate import ALLOWED, BEHAVIOUR, INCONCLUSIVE, INFO, PASS, REGRESSION, evaluate

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
    return main(["gate", "--baseline", str(dbs[base]), "--candidate", str(dbs[cand]), "-q", *extra])


def verdicts(dbs, cand, config=None, **kw):
    report = evaluate(
        load_side("baseline", dbs["base"]),
        load_side("candidate", dbs[cand]),
        config_from_dict(config or {}),
        **kw,
    )
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
    config = {
        "defaults": {"tolerance": 0.05},
        "unit": [{"match": "*(npes=2,n=4000)::time", "tolerance": 0.5}],
    }
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
    cfg.write_text(
        "[defaults]\ntolerance = 0.05\nalpha = 0.05\n\n"
        '[[allow]]\nmatch = "*(npes=2,n=4000)::time"\nreason = "new algorithm"\n\n'
        '[[allow]]\nmatch = "nothing::*"\nreason = "stale"\n'
    )
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


@pytest.mark.parametrize(
    "args",
    [
        ["--baseline", "/nonexistent.db", "--candidate", "/nonexistent.db"],
        ["--candidate", "X"],
        ["--tolerance", "-1"],
        ["--alpha", "0.9"],
        ["--correction", "magic"],
        ["--where", "n=12345"],  # selects nothing
        ["--config", "/nonexistent.toml"],
    ],
)
def test_input_errors_exit_2(dbs, args, capsys):
    full = ["gate"]
    if "--baseline" not in args and "--candidate" not in args:
        full += ["--baseline", str(dbs["base"]), "--candidate", str(dbs["same"])]
    assert main(full + args) == 2
    assert "mprof gate: error" in capsys.readouterr().err


def test_bad_config_files_exit_2(dbs, tmp_path):
    for text in (
        '[defaults]\ntolerance = "x"\n',
        "[[unit]]\ntolerance = 0.1\n",
        '[[allow]]\nmatch = "*"\n',
        "[weird]\n",
        "not toml [",
    ):
        cfg = tmp_path / "bad.toml"
        cfg.write_text(text)
        assert gate(dbs, "same", "--config", str(cfg)) == 2, text


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"tolerance": 0.1}, "'match' (a unit id or glob pattern) is required"),
        ({"match": 5}, "'match' must be a string (a unit id or glob pattern), got 5"),
    ],
)
def test_a_unit_match_missing_or_of_another_type_is_named(entry, message):
    with pytest.raises(MprofError, match=re.escape(message)):
        config_from_dict({"unit": [entry]})


def test_where_and_program_selection(dbs):
    assert gate(dbs, "slow", "--where", "n=1000", "--inconclusive-ok") == 0
    assert gate(dbs, "slow", "--where", "n=4000") == 1
    assert gate(dbs, "slow", "--program", "synth") == 1
    assert gate(dbs, "slow", "--program", "other") == 2  # nothing selected


def test_reports_are_well_formed(dbs, tmp_path):
    md, xml, js = tmp_path / "o.md", tmp_path / "o.xml", tmp_path / "o.json"
    code = main(
        [
            "gate",
            "--baseline",
            str(dbs["base"]),
            "--candidate",
            str(dbs["slow"]),
            "--markdown",
            str(md),
            "--junit",
            str(xml),
            "--json",
            str(js),
        ]
    )
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


def test_two_reports_into_one_file_are_refused(dbs, tmp_path, capsys):
    """By a link as by its name: only the last written would be left."""
    out = tmp_path / "o.json"
    (tmp_path / "link.xml").symlink_to(out)
    argv = ["gate", "--baseline", str(dbs["base"]), "--candidate", str(dbs["slow"])]
    capsys.readouterr()
    assert main([*argv, "--json", str(out), "--junit", str(tmp_path / "link.xml")]) == 2
    assert capsys.readouterr().err == (
        f"mprof gate: error: --junit and --json name the same file {out}: give each its own\n"
    )
    assert not out.exists()


def test_terminal_table_lists_regressions_first(dbs, capsys):
    main(["gate", "--baseline", str(dbs["base"]), "--candidate", str(dbs["slow"]), "--show-pass"])
    out = capsys.readouterr().out
    assert out.index("REGRESSION") < out.index("PASS")
    assert "mprof gate: FAIL" in out


def test_one_run_on_a_side_shows_no_interval_in_any_format(dbs, tmp_path, capsys):
    """A configuration with one candidate run has no test and no bounds: every output shows
    the real run counts and "-", never [-inf, +inf] or a p-value of 1, and the unit is
    INCONCLUSIVE."""
    one = write_db(tmp_path / "one.db", np.random.default_rng(3), reps=1)
    md, xml, js = tmp_path / "o.md", tmp_path / "o.xml", tmp_path / "o.json"
    code = main(
        [
            "gate",
            "--baseline",
            str(dbs["base"]),
            "--candidate",
            str(one),
            "--markdown",
            str(md),
            "--junit",
            str(xml),
            "--json",
            str(js),
        ]
    )
    assert code == 3
    terminal = capsys.readouterr().out
    units = {u["id"]: u for u in json.loads(js.read_text())["units"]}
    for label in ("synth(npes=2,n=1000)", "synth(npes=2,n=4000)"):
        u = units[f"{label}::time"]
        assert u["verdict"] == INCONCLUSIVE
        assert (u["n_baseline"], u["n_candidate"]) == (8, 1)
        assert u["tested"] is False and u["bounded"] is False
        assert u["p_adjusted"] is None and u["p_regression"] is None
        assert u["change_low"] is None and u["change_high"] is None
        assert u["change"] is not None and "1 candidate run" in u["note"]
        row = next(line for line in md.read_text().splitlines() if f"`{label}::time`" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[5:9] == ["-", "5%", "-", "8/1"]  # bounds, tol, p adj, n
        assert re.search(rf"{re.escape(label)}::time .* - .* - .* 8/1", terminal)
    for text in (terminal, md.read_text(), xml.read_text()):
        assert "inf" not in text
    assert "(no bounds)" in xml.read_text()


def test_a_configuration_without_a_test_is_not_counted_by_the_correction(dbs, tmp_path):
    """Holm multiplies a p-value by the number of tests: a configuration with one candidate
    run makes none, so the slowed configuration's p-value is corrected for one test."""
    rng = np.random.default_rng(11)
    slow = write_db(tmp_path / "slow4000.db", rng, configs=((4000, 2),), factor=1.3)
    one = write_db(tmp_path / "one1000.db", rng, configs=((1000, 2),), reps=1)
    with ProfileDB(one) as db:
        docs = [(f"one{i}", doc) for i, doc in db.documents()]
    with ProfileDB(slow) as db:
        db.import_documents(docs)
    report = evaluate(
        load_side("baseline", dbs["base"]), load_side("candidate", slow), config_from_dict({})
    )
    units = {u.id: u for u in report.units}
    single, slowed = units["synth(npes=2,n=1000)::time"], units["synth(npes=2,n=4000)::time"]
    assert single.verdict == INCONCLUSIVE and not single.comparison.tested
    assert single.p_adjusted is None
    assert slowed.verdict == REGRESSION
    assert slowed.p_adjusted == slowed.comparison.p_regression


# -- nothing to compare is an input error (exit 2), saying what did not match ---------------


def test_no_shared_configuration_is_an_input_error(tmp_path, capsys):
    rng = np.random.default_rng(3)
    a = write_db(tmp_path / "a.db", rng, program="alpha")
    b = write_db(tmp_path / "b.db", rng, program="beta")
    for extra in ([], ["--inconclusive-ok"]):
        assert main(["gate", "--baseline", str(a), "--candidate", str(b), "-q", *extra]) == 2
        err = capsys.readouterr().err
        assert "nothing to compare" in err and "programs differ" in err, err
        assert "alpha(npes=2,n=1000)" in err and "beta(npes=2,n=1000)" in err


def test_misspelled_where_says_what_did_not_match(dbs, capsys):
    assert gate(dbs, "same", "--where", "nn=1000") == 2
    err = capsys.readouterr().err
    assert "no run has a parameter or setting 'nn'" in err and "did you mean 'n'" in err, err
    assert gate(dbs, "same", "--where", "n=12345") == 2
    assert "no run has n=12345 (n is 1000, 4000)" in capsys.readouterr().err
    assert gate(dbs, "same", "--program", "other") == 2
    assert "programs: synth" in capsys.readouterr().err


def test_db_list_with_a_where_that_selects_nothing_exits_2(dbs, capsys):
    assert main(["db", "list", str(dbs["base"]), "--where", "nn=1000"]) == 2
    assert "did you mean 'n'" in capsys.readouterr().err
    assert main(["db", "list", str(dbs["base"]), "--where", "n=1000", "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 8


def test_no_unit_compared_after_the_filter_is_an_input_error(dbs, tmp_path):
    rng = np.random.default_rng(5)
    half = write_db(tmp_path / "half.db", rng, configs=((1000, 2),))
    with pytest.raises(MprofError, match="no unit compares"):
        evaluate(
            load_side("baseline", dbs["base"]),
            load_side("candidate", half),
            config_from_dict({}),
            unit_filter=lambda u: "n=4000" in u.id,
        )


# -- which statistics are compared exactly: what they are, not coincidence ------------------


def test_measured_statistic_equal_by_chance_is_no_behaviour_change(tmp_path):
    """rts.IdleNs is declared `measured` in runtime/rts.perf: two baseline runs that happen
    to idle equally long (here: not at all) say nothing about the candidate's idle time."""
    rng = np.random.default_rng(11)
    base = write_db(tmp_path / "b.db", rng, reps=2, extra=lambda n, rep: {"IdleNs": 0})
    cand = write_db(tmp_path / "c.db", rng, reps=2, extra=lambda n, rep: {"IdleNs": 1000 + 7 * rep})
    report = evaluate(
        load_side("baseline", base), load_side("candidate", cand), config_from_dict({})
    )
    ids = {u.id for u in report.units}
    assert not any("IdleNs" in i for i in ids), ids
    assert BEHAVIOUR not in {u.verdict for u in report.units}
    assert report.inexact_stats["rts.IdleNs"].startswith("declared measured in ")
    assert "synth(npes=2,n=1000)::stat:rts.Ops" in ids  # counts are still compared


def test_statistic_varying_in_one_configuration_is_not_exact_in_any(tmp_path):
    """`Steals` varies between repetitions of n=4000: it depends on timing, so its equal
    values in the n=1000 repetitions are luck, not a behaviour to hold the candidate to."""
    rng = np.random.default_rng(12)
    base = write_db(
        tmp_path / "b.db", rng, reps=3, extra=lambda n, rep: {"Steals": 0 if n == 1000 else rep}
    )
    cand = write_db(tmp_path / "c.db", rng, reps=3, extra=lambda n, rep: {"Steals": 1})
    report = evaluate(
        load_side("baseline", base), load_side("candidate", cand), config_from_dict({})
    )
    assert not any("Steals" in u.id for u in report.units)
    assert "varies between baseline repetitions" in report.inexact_stats["rts.Steals"]


def test_interface_option_declares_measured_statistics(tmp_path, capsys):
    perf = tmp_path / "perf"
    perf.mkdir()
    (perf / "mylib.perf").write_text(
        "interface mylib -- test\nstatistics\n  P -- p\n  Ops -- ops\n  Noise -- noise\n"
        "  WaitNs measured -- waiting time\ncategories\n  ALL -- all\n    { P Ops Noise WaitNs }\n"
    )
    rng = np.random.default_rng(13)
    base = write_db(tmp_path / "b.db", rng, module="mylib", extra=lambda n, rep: {"WaitNs": 5})
    cand = write_db(tmp_path / "c.db", rng, module="mylib", extra=lambda n, rep: {"WaitNs": 9})
    args = ["gate", "--baseline", str(base), "--candidate", str(cand), "--inconclusive-ok", "-q"]
    assert main(args) == 1  # no interface found: a constant count that changed
    assert main(args + ["--interface", str(perf)]) == 0
    assert main(args + ["--interface", str(perf / "mylib.perf")]) == 0
    assert main(args + ["--interface", str(tmp_path / "missing.perf")]) == 2
    capsys.readouterr()


def test_a_single_baseline_run_shows_no_statistic_is_deterministic(tmp_path):
    rng = np.random.default_rng(14)
    base = write_db(tmp_path / "b.db", rng, reps=1)
    cand = write_db(tmp_path / "c.db", rng, reps=3, stat_delta=1)
    report = evaluate(
        load_side("baseline", base), load_side("candidate", cand), config_from_dict({})
    )
    assert not [u for u in report.units if u.kind == "stat"]


def test_mprof_starts_without_scipy():
    """Every command (`mprof db list`, `mprof iface check`) starts in a fraction of a second:
    SciPy, which takes most of a second to import, loads only where statistics are needed."""
    import subprocess
    import sys

    from mprof.gate import cli as gate_cli
    from mprof.gate import evaluate as gate_evaluate

    assert gate_cli.EXIT_ERROR == gate_evaluate.EXIT_ERROR
    code = (
        "import sys\nfrom mprof.cli import build_parser\nbuild_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out


def test_table_columns_are_labelled_and_explained(dbs, tmp_path, capsys):
    """The change is a Hodges-Lehmann estimate, not the ratio of the medians shown beside
    it: the table says so, and `--help` shows no required ACTION."""
    md = tmp_path / "o.md"
    main(
        [
            "gate",
            "--baseline",
            str(dbs["base"]),
            "--candidate",
            str(dbs["slow"]),
            "--markdown",
            str(md),
        ]
    )
    out = capsys.readouterr().out
    for text in (out, md.read_text()):
        assert "baseline¹" in text and "change²" in text and "bounds³" in text
        assert "Hodges-Lehmann" in text and "median of the runs" in text
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "ACTION" not in usage and "mprof gate --baseline DB --candidate DB" in usage
    from mprof.gate.stats import compare_samples

    c = compare_samples([1.0, 1.0, 1.3], [1.1, 1.3, 1.3], 0.05, 0.05)  # the docs' example
    assert (c.baseline, c.candidate, round(c.change, 3)) == (1.0, 1.3, 0.1)
