"""The Extra-P export's parameters (docs/exports.md): settings (an on/off switch, a parameter
that is a runtime setting) are left out by default and warned about when named; a parameter
with fewer than 5 values is warned about; the `extrap` command line models what is exported.
And benchmarks/exports/extrap_vs_mprof.py trains Extra-P on the samples mprof fits (each
configuration's fastest run per PE), so slow repetitions do not reach Extra-P's model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mprof.bench.synth import make_profile
from mprof.cli import main
from mprof.db.store import ProfileDB

EXTRAP = Path(sys.executable).with_name("extrap")
ROOT = Path(__file__).resolve().parents[2]
M_VALUES = (1000, 2000, 4000, 8000, 16000, 32000)


def cost(m, n):
    return 1e-4 + 2e-7 * m * n


def write_db(path: Path, m_values=M_VALUES, slow_every: int = 0) -> Path:
    """PIPE-like runs on 2 PEs: M (6 values), N (2 values), AGG 0/1000 (also the runtime's
    agg_bytes), FLUSH equal to the runtime's flush_fibers; three repetitions, and with
    `slow_every` every such repetition's second PE three times slower (a busy machine)."""
    docs = []
    k = 0
    for m in m_values:
        for n in (1, 2):
            for agg, flush in ((0, 32), (1000, 64)):
                for rep in range(3):
                    k += 1
                    t = cost(m, n)
                    times = [t, 3 * t if slow_every and k % slow_every == 0 else t]
                    doc = make_profile(
                        "synth",
                        [[("rts", {"P": 1})]] * 2,
                        times,
                        params={"M": m, "N": n, "AGG": agg, "FLUSH": flush},
                        settings={"agg_bytes": agg, "flush_fibers": flush},
                    )
                    doc["schema_version"] = 2
                    for pe, t_pe in zip(doc["pes"], times):
                        pe["cpu_s"], pe["idle_cpu_s"] = t_pe, 0.0
                    doc["started_at"] = f"2026-01-01T00:{k // 60:02d}:{k % 60:02d}Z"
                    docs.append((f"{path.name}:{k}", doc))
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path


@pytest.fixture(scope="module")
def synth_db(tmp_path_factory):
    return write_db(tmp_path_factory.mktemp("fair") / "synth.db")


def test_settings_left_out_and_few_values_warned(synth_db, tmp_path, capsys):
    out = tmp_path / "synth.jsonl"
    assert main(["db", "export", str(synth_db), "--format", "extrap", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {tuple(sorted(x["params"])) for x in lines} == {("M", "N")}
    assert "parameter AGG is left out: it is an on/off switch (values 0 and 1000)" in err
    assert "parameter FLUSH is left out: it is the runtime setting flush_fibers" in err
    assert "parameter N takes 2 value(s); Extra-P needs at least 5" in err
    assert "parameter M takes" not in err  # six values
    # the real Extra-P models the exported busy time in M and N
    proc = subprocess.run(
        [
            str(EXTRAP),
            "--json",
            str(out),
            "--disable-progress",
            "--print",
            "{callpath}|{metric}|{model}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    model = next(
        line.split("|")[2] for line in proc.stdout.splitlines() if line.startswith("synth|time|")
    )
    assert "M" in model


def test_named_settings_are_passed_with_a_warning(synth_db, tmp_path, capsys):
    out = tmp_path / "synth.jsonl"
    assert (
        main(
            [
                "db",
                "export",
                str(synth_db),
                "--format",
                "extrap",
                "-o",
                str(out),
                "--params",
                "M,AGG",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert {tuple(sorted(json.loads(x)["params"])) for x in out.read_text().splitlines()} == {
        ("AGG", "M")
    }
    assert "parameter AGG is an on/off switch" in err and "scaling parameter" in err
    assert "parameter AGG takes 2 value(s)" in err
    assert (
        main(["db", "export", str(synth_db), "--format", "cube", "-o", str(tmp_path / "cube")]) == 0
    )
    assert "AGG is left out" in capsys.readouterr().err
    assert all(".AGG" not in p.name for p in (tmp_path / "cube").iterdir())


def _script():
    spec = importlib.util.spec_from_file_location(
        "extrap_vs_mprof", ROOT / "benchmarks/exports/extrap_vs_mprof.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_comparison_trains_extrap_on_the_fastest_runs(tmp_path, capsys):
    script = _script()
    fit = write_db(tmp_path / "fit.db", slow_every=2)
    test = write_db(tmp_path / "test.db", m_values=(3000, 24000), slow_every=2)
    from mprof.profile import load_profiles

    runs = load_profiles(fit)
    fastest = script.samples(runs, ["M", "N"], fastest=True)
    every = script.samples(runs, ["M", "N"], fastest=False)
    # one sample per configuration and PE (AGG/FLUSH make two configurations per M, N)
    assert len(fastest) == len(M_VALUES) * 2 * 2 * 2 and len(every) == 3 * len(fastest)
    for (m, n), t in fastest:  # the slow repetitions are shed
        assert t == pytest.approx(cost(m, n))
    result = script.extrap_mres(fit, test, with_settings=False)
    assert result["params"] == ["M", "N"] and result["train_samples"] == len(fastest)
    assert result["test_samples"] == {"fastest": 16, "runs": 48}
    best = min(v["fastest"] for v in result["modelers"].values())
    # trained and scored on fastest runs the noiseless cost is found; every single test run
    # includes the slowed ones
    assert best < 0.02
    assert min(v["runs"] for v in result["modelers"].values()) > 0.1
    assert "AGG is left out" in capsys.readouterr().err
