"""The Chapter 5 studies (benchmarks/<app>/experiments/run.py, benchmarks/common/study.py):
README's applications section quotes each summary's short paragraph verbatim
(benchmarks/common/readme.py), every summary renders again from its summary.json, the EM3D
study runs at the small size with the PE-count and flush axes and reports the ratio of
computation to runtime overhead, and C2670's CMOS stages make the subcircuits the CSWEC study
simulates."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from apps import build
from test_cswec import check_ok, netlist

from mprof.iface import load_interface
from mprof.model import Model, ModuleInfo

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ["em3d", "tripuzzle", "eigenvalue", "phylogeny", "cswec"]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


readme = load(ROOT / "benchmarks/common/readme.py", "study_readme")
study = load(ROOT / "benchmarks/common/study.py", "study")


def test_readme_quotes_every_summary():
    assert readme.differences(readme.README.read_text()) == []


def test_a_figure_readme_does_not_take_from_the_summary_is_found():
    text = readme.README.read_text()
    m = readme.block("em3d").search(text)
    figure = re.sub(r"\d+\.\d", "9.9", m.group(2), count=1)
    changed = text[: m.start(2)] + figure + text[m.end(2) :]
    assert changed != text
    diff = readme.differences(changed)
    assert len(diff) == 1 and "em3d paragraph differs" in diff[0], diff
    assert readme.differences(readme.update(changed)) == []


@pytest.mark.parametrize("app", STUDIES)
def test_summary_renders_from_its_json(app, tmp_path):
    results = ROOT / "benchmarks" / app / "experiments" / "results"
    for name in ("summary.json", "calibration.json"):
        if (results / name).exists():
            shutil.copy(results / name, tmp_path / name)
    mod = load(results.parent / "run.py", f"study_{app}")
    assert mod.main(["--render", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "summary.md").read_text() == (results / "summary.md").read_text()


def test_commands_name_repository_paths_relative_to_it():
    assert study.in_repo(ROOT / "build/benchmarks/em3d/em3d") == "build/benchmarks/em3d/em3d"
    assert study.in_repo(f"--netlist={ROOT}/build/c.net") == "--netlist=build/c.net"
    for outside in ("/tmp/x.net", "--netlist=/tmp/x.net", "MPROF_PES=2", "--pes=2"):
        assert study.in_repo(outside) == outside


def test_paper_ratio_from_fig_5_1():
    # CM5, 10 % remote edges: (12.9 - 1.87 - 0.07 - 0.13 - 1.63) / (0.07 + 0.13 + 1.63)
    assert study.paper_ratio(12.9, 1.87, 0.07, 0.13, 1.63) == pytest.approx(9.2 / 1.83)


def _render_at(app: str, tmp_path: Path, change=lambda name, row: None) -> str:
    """The study's summary rendered from its saved 2-PE rows, copied to 16 PEs as well
    (`change(name, row)` edits each 16-PE copy): what a run with --pes 2,16 would render."""
    results = ROOT / "benchmarks" / app / "experiments" / "results"
    rows = json.loads((results / "summary.json").read_text())
    copies = []
    for row in rows:
        if row["name"] == "_study":
            row["pes"] = [2, 16]
        elif row["name"].endswith("@2"):
            copy = json.loads(json.dumps(row))
            copy["name"] = row["name"][:-2] + "@16"
            change(copy["name"][:-3], copy)
            copies.append(copy)
    (tmp_path / "summary.json").write_text(json.dumps(rows + copies))
    if (results / "calibration.json").exists():
        shutil.copy(results / "calibration.json", tmp_path)
    mod = load(results.parent / "run.py", f"study_{app}_16")
    assert mod.main(["--render", "--out", str(tmp_path)]) == 0
    return (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("app", STUDIES)
def test_the_short_paragraph_speaks_of_the_largest_pe_count(app, tmp_path):
    summary = _render_at(app, tmp_path)
    short = next(line for line in summary.splitlines() if line.startswith("In short: "))
    assert " on 16 PEs" in short and " on 2 PEs" not in short, short
    assert "## 2 PEs" in summary and "## 16 PEs" in summary
    assert "PE counts measured: 2, 16." in summary


def _scale(row: dict, key: str, factor: float) -> None:
    row[key] *= factor
    if "range:" + key in row:
        row["range:" + key] = [v * factor for v in row["range:" + key]]


def test_em3d_barrier_verdict_follows_the_latencies(tmp_path):
    """Fig 5.1's "the idle time is the barrier's latency, observed = critical" is computed from
    the runs: stated where the validate barrier's critical latency is most of the idle time and
    equals its observed latency, denied where not."""
    barrier = "bipartite:VALIDATE"

    def like_the_paper(name, row):
        if name == "remote10":
            row["crit:" + barrier] = row["obs:" + barrier] = 0.9 * row["Idle"]

    def unlike(name, row):
        if name == "remote10":
            row["crit:" + barrier], row["obs:" + barrier] = 0.2 * row["Idle"], 0.6 * row["Idle"]

    short = _render_at("em3d", tmp_path, like_the_paper).splitlines()[2]
    assert "at 10 %, the idle time is the validate barrier's latency, observed = critical" in short
    short = _render_at("em3d", tmp_path, unlike).splitlines()[2]
    assert "carries less than half of the idle time (20 % on the critical path)" in short
    assert "observed != critical: unlike the paper" in short


def test_cswec_preemption_and_collapsing_findings_follow_the_runs(tmp_path):
    """The preemption finding says it pays only where every round says so, and collapsing is
    judged against the paper's 95 % on the PE count measured."""

    def preempt_pays(name, row):
        if name == "c2670-preempt":
            for p in row["rep_params"]:
                p["sim_s"] *= 0.5
        if name.endswith("-initial"):
            row["params"] = [{**p, "collapse": 0.97} for p in row["params"]]

    summary = _render_at("cswec", tmp_path, preempt_pays)
    details = summary.split("## Details on 16 PEs")[1]
    assert "- Preemption pays on C2670 here, as in the paper" in details
    assert "Collapsing of identical messages on 16 PEs: 97 % of REGFILE's" in details
    assert "with its own partitioning: reproduced." in details
    assert "about 94 % of its edges cross PEs" in details
    summary = _render_at("cswec", tmp_path)
    details = summary.split("## Details on 16 PEs")[1]
    assert "- Why preemption does not pay on C2670 here" in details
    assert "reproduced on REGFILE only." in details


def test_the_papers_figure_beside_ours_at_every_pe_count(tmp_path):
    """Fig 5.3 as times relative to the initial version: the paper's machines, then ours at
    each PE count, the median of the same-round ratios."""

    def faster(name, row):
        if name == "preempt-1k":
            for p in row["rep_params"]:
                p["search_s"] *= 0.5

    summary = _render_at("tripuzzle", tmp_path, faster)
    head = "| configuration | CM5 | Paragon | SP1 | ours, 2 PEs | ours, 16 PEs |"
    table = summary.split(head)[1].split("\n\n")[0].splitlines()
    row = next(line for line in table if line.startswith("| Preemptive Scheduler, 1K"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["0.85", "0.93", "0.90"], cells  # 6.55 / 7.69, 16.4 / 17.6, ...
    at2, at16 = (float(c.split()[0]) for c in cells[4:6])
    assert at16 == pytest.approx(at2 / 2, abs=0.011), cells


def test_tripuzzle_and_phylogeny_figures_follow_the_pe_count(tmp_path):
    summary = _render_at("tripuzzle", tmp_path, lambda n, r: _scale(r, "IDLE", 2.0))
    section = summary.split("## 16 PEs")[1]
    assert "With 2 PEs" not in section
    m = re.search(r"The idle loop took (\d+) % of the run's CPU time", section)
    base = re.search(r"The idle loop took (\d+) % of the run's CPU time", summary)
    assert m and base and int(m.group(1)) >= 2 * int(base.group(1)) - 1, (m, base)
    summary = _render_at("phylogeny", tmp_path)
    section = summary.split("## 16 PEs")[1]
    assert "holds about 1/16 of the successes" in section and "With 2 PEs" not in section
    assert ".  The tasks are far finer" in section


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--pes", "1", "PE counts must be distinct"),
        ("--pes", "2,x", "not a list of PE counts"),
        ("--flush", "8", "FIBERS:DELAY_US"),
        ("--size", "huge", "invalid choice"),
    ],
)
def test_bad_study_options(option, value, message):
    proc = subprocess.run(
        [sys.executable, ROOT / "benchmarks/em3d/experiments/run.py", option, value, "--render"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def rts_model(path: Path) -> Path:
    """A made-up runtime model over rts.perf (the study needs one to price the runs)."""
    perf = ROOT / "runtime/rts.perf"
    info = ModuleInfo.from_interface(load_interface(perf), str(perf), perf.read_text())
    rng = np.random.default_rng(5)
    values = {f"rts:{t}": float(rng.uniform(1e-8, 1e-6)) for t in info.terms}
    values["rts:IdleCpu"] = 1.0
    for name in ("rts:P", "rts:Idle", "rts:ThreadContext"):
        values.pop(name, None)
    names = list(values)
    Model(
        values=values,
        halfwidths={n: 0.1 * v for n, v in values.items()},
        fitted=names,
        covariance=np.diag([(0.05 * values[n]) ** 2 for n in names]),
        cov_names=names,
        interfaces={"rts": info},
        quality={"residual_se": 0.03, "dof": 40, "t_quantile": 1.68},
        settings={"granularity": "pe", "normalize": True, "measure": "cpu", "confidence": 0.9},
    ).save(path)
    return path


def test_small_em3d_study_with_the_pe_and_flush_axes(cmake_build, tmp_path):
    build(cmake_build, "em3d")
    model = rts_model(tmp_path / "rts.model.json")
    out = tmp_path / "results"
    proc = subprocess.run(
        [
            sys.executable,
            ROOT / "benchmarks/em3d/experiments/run.py",
            "--size",
            "small",
            "--reps",
            "1",
            "--pes",
            "2",
            "--flush",
            "default,2:0",
            "--model",
            model,
            "--out",
            out,
            "--work",
            tmp_path / "work",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["name"]: r for r in json.loads((out / "summary.json").read_text())}
    assert set(rows) == {
        "_study",
        "sequential",
        "remote0@2",
        "remote10@2",
        "remote20@2",
        "remote10-flush2.0@2",
    }
    assert rows["_study"]["pes"] == [2] and rows["_study"]["size"] == "small"
    assert "MPROF_PES=1" in rows["sequential"]["cmd"]
    assert "MPROF_FLUSH_FIBERS=2 MPROF_FLUSH_DELAY_US=0" in rows["remote10-flush2.0@2"]["cmd"]
    assert "--nodes=300" in rows["remote10@2"]["cmd"]
    # the kept report names the program as run from the repository, not by this checkout's path
    report = (out / "remote10@2.txt").read_text()
    assert "% build/benchmarks/em3d/em3d --nodes=300" in report and str(ROOT) not in report
    for name, row in rows.items():
        if name != "_study":
            assert row["Runtime"] > 0 and row["ratio"] == pytest.approx(
                row["Comp"] / row["Runtime"], rel=0.5
            ), name
    summary = (out / "summary.md").read_text()
    assert summary.count("## 2 PEs") == 1 and "pending a run on a machine with 16 cores" in summary
    assert re.search(
        r"^In short: at the small size .* the ratio of computation to runtime "
        r"overhead is -?\d",
        summary,
        re.M,
    ), summary[:2000]


def test_c2670_cmos_stages(cmake_build, tmp_path):
    net = netlist(tmp_path, "iscas", "c2670", "--stages")
    head = net.read_text().splitlines()[1].split()
    assert head[head.index("subcircuits") + 1] == "1030"  # 368 inverting gates + 2 x 331
    gates = [ln.split()[1] for ln in net.read_text().splitlines() if ln.startswith("gate ")]
    assert set(gates) == {"nand", "nor", "not"}
    exe = build(cmake_build, "cswec")
    proc = subprocess.run(
        [exe, f"--netlist={net}", "--vectors=2", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"MPROF_PES": "2", "PATH": "/usr/bin:/bin"},
    )

    class R:
        stdout = proc.stdout

        def describe(self):
            return proc.stdout[-2000:] + proc.stderr[-2000:]

    check_ok(R())
