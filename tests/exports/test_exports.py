"""`mprof db export --format extrap|cube` read by the tools themselves (the `extrap` command
line, pycubexr, `extrap --cube`), and mprof.hatchet's GraphFrame (docs/exports.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mprof.cli import main
from mprof.profile import load_profiles

from conftest import M_VALUES

EXTRAP = Path(sys.executable).with_name("extrap")


def run_times(db):
    """(M, busy seconds summed over PEs, idle seconds summed over PEs) per run."""
    out = []
    for run in load_profiles(db):
        # busy time is clamped at 0: on a loaded machine a PE's idle CPU time can exceed
        # its thread CPU time (the clocks are read at different moments)
        busy = sum(max(pe.time("cpu") - pe.idle_time("cpu"), 0.0) for pe in run.pes)
        idle = sum(pe.idle_time("cpu") for pe in run.pes)
        out.append((run.params["M"], busy, idle))
    return out


def test_extrap_jsonl_lines_match_the_profiles(pipe_db, tmp_path, capsys):
    out = tmp_path / "pipe.jsonl"
    assert main(["db", "export", str(pipe_db), "--format", "extrap", "-o", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # only M varies: npes, N, T, F, eltsize and agg are constant and left out
    assert {tuple(x["params"]) for x in lines} == {("M",)}
    busy = sorted(
        (x["params"]["M"], x["value"])
        for x in lines
        if x["callpath"] == "pipe" and x["metric"] == "time"
    )
    expected = sorted((m, b) for m, b, _ in run_times(pipe_db))
    assert [m for m, _ in busy] == [m for m, _ in expected]
    assert [b for _, b in busy] == pytest.approx([b for _, b in expected])
    assert any(
        x["callpath"].startswith("pipe->graph:ENQ") and x["metric"] == "latency_observed"
        for x in lines
    )


def test_extrap_command_line_reads_the_export(pipe_db, tmp_path):
    out = tmp_path / "pipe.jsonl"
    assert main(["db", "export", str(pipe_db), "--format", "extrap", "-o", str(out)]) == 0
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
    models = dict(
        line.rsplit("|", 1)[0:1] + [line.rsplit("|", 1)[1]]
        for line in proc.stdout.splitlines()
        if line.count("|") == 2
    )
    model = models["pipe|time"]
    assert "M" in model  # PIPE's busy time grows with the number of elements


def test_cube_export_read_by_pycubexr_and_extrap(pipe_db, tmp_path):
    from pycubexr import CubexParser

    out = tmp_path / "cube"
    assert main(["db", "export", str(pipe_db), "--format", "cube", "-o", str(out)]) == 0
    folders = sorted(p.name for p in out.iterdir())
    assert folders == sorted(f"mprof.M{m}.r{r}" for m in M_VALUES for r in (1, 2))
    expected = {}
    for m, b, i in run_times(pipe_db):
        expected.setdefault(m, []).append((b, i))
    by_m = {}
    for folder in out.iterdir():
        with CubexParser(folder / "profile.cubex") as cube:
            time = cube.get_metric_values(cube.get_metric_by_name("time"))
            names = {cube.get_region(c).name: c for c in cube.all_cnodes()}
            # the root's inclusive time is the PEs' CPU time; the categories' measured time
            # sits in their nodes, the rest of the busy time in the root's own
            total = time.cnode_values(names["pipe"], convert_to_inclusive=True)
            idle_pe = time.cnode_values(names["idle"])
            busy = float(sum(t - i for t, i in zip(total, idle_pe)))
            idle = float(sum(idle_pe))
            consume = float(sum(time.cnode_values(names["pipe:consume"])))
            assert 0 <= consume <= busy + 1e-9
            assert len(cube.get_locations()) == 2
            assert "graph:ENQ" in names
            by_m.setdefault(int(folder.name.split(".")[1][1:]), []).append((busy, idle))
    for m in M_VALUES:
        got, want = sorted(by_m[m]), sorted(expected[m])
        assert [x for pair in got for x in pair] == pytest.approx([x for p in want for x in p])
    check_cube_counts_once(out, pipe_db)
    proc = subprocess.run(
        [str(EXTRAP), "--cube", str(out), "--disable-progress", "--print", "callpaths"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pipe->idle" in proc.stdout and "pipe->graph:ENQ" in proc.stdout


def check_cube_counts_once(out, pipe_db):
    """An access category's fibers and latency are its enablers' sums: exclusive 0 at the
    category, the inclusive value equal to the profile's (no double count)."""
    from pycubexr import CubexParser

    runs = {run.source: run for run in load_profiles(pipe_db)}
    assert runs
    for folder in out.iterdir():
        with CubexParser(folder / "profile.cubex") as cube:
            fibers = cube.get_metric_values(cube.get_metric_by_name("fibers"))
            consume = next(
                c for c in cube.all_cnodes() if cube.get_region(c).name == "pipe:consume"
            )
            assert sum(fibers.cnode_values(consume)) == 0
            inclusive = sum(fibers.cnode_values(consume, convert_to_inclusive=True))
            below = sum(sum(fibers.cnode_values(c)) for c in consume.get_all_children())
            assert inclusive == below > 0


def test_cube_time_per_measured_category(tmp_path):
    """A run with CPU time per access category: each category's node holds its time, the
    root keeps the rest of the busy time, and the root's inclusive time is the CPU time."""
    from pycubexr import CubexParser

    from mprof.io.cube import write_cube_experiment
    from mprof.profile import RunProfile

    pes = []
    for pe, (work, idle) in enumerate([(0.30, 0.05), (0.20, 0.15)]):
        pes.append(
            {
                "pe": pe,
                "elapsed_s": 0.4,
                "idle_s": idle,
                "cpu_s": work + idle,
                "idle_cpu_s": idle,
                "objects": [],
                "latency": [
                    {
                        "access": "app:a",
                        "enabler": "app:b",
                        "count": 10,
                        "observed_s": 0.01,
                        "critical_s": 0.01,
                    }
                ],
                "categories": [
                    {"access": "app:a", "cpu_s": work * 0.75, "samples": 60},
                    {"access": "app:main", "cpu_s": work * 0.2, "samples": 16},
                    {"access": "(scheduler)", "cpu_s": work * 0.05, "samples": 4},
                    {"access": "(idle)", "cpu_s": idle, "samples": 10},
                ],
            }
        )
    doc = {
        "schema": "mprof.run-profile",
        "schema_version": 2,
        "program": "app",
        "argv": ["app"],
        "backend": "shm",
        "npes": 2,
        "elapsed_s": 0.4,
        "settings": {},
        "params": {"n": 1},
        "accesses": ["unclassified", "app:a", "app:b", "app:main"],
        "pes": pes,
    }
    run = RunProfile.from_document(doc, "synthetic")
    [path] = write_cube_experiment([run], tmp_path, "cpu", [])
    with CubexParser(path) as cube:
        time = cube.get_metric_values(cube.get_metric_by_name("time"))
        names = {cube.get_region(c).name: c for c in cube.all_cnodes()}
        a = list(time.cnode_values(names["app:a"]))
        assert a == pytest.approx([0.225, 0.15])
        assert list(time.cnode_values(names["app:main"])) == pytest.approx([0.06, 0.04])
        assert list(time.cnode_values(names["app"])) == pytest.approx([0.015, 0.01])
        total = time.cnode_values(names["app"], convert_to_inclusive=True)
        assert list(total) == pytest.approx([0.35, 0.35])


def test_export_errors(pipe_db, tmp_path, capsys):
    assert main(["db", "export", str(pipe_db), "--format", "cube"]) == 2
    assert "needs -o DIR" in capsys.readouterr().err
    assert main(["db", "export", str(pipe_db), "--format", "extrap", "--where", "M=7"]) == 2
    assert "no run to export" in capsys.readouterr().err
    assert main(["db", "export", str(pipe_db), "--format", "extrap", "--params", "Q"]) == 2
    assert "no numeric parameter Q" in capsys.readouterr().err
    out = str(tmp_path / "x.jsonl")
    for params, message in ((",,", "names no parameter"), ("M,M", "M named more than once")):
        argv = ["db", "export", str(pipe_db), "--format", "extrap", "--params", params]
        assert main([*argv, "-o", out]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_hatchet_graphframe(pipe_db):
    import mprof.hatchet

    run = load_profiles(pipe_db)[0]
    gf = mprof.hatchet.graphframe(pipe_db, run_id=1)
    df = gf.dataframe
    assert list(df.index.names) == ["node", "rank"]
    names = set(df["name"])
    assert {"pipe", "idle", "graph:ENQ", "graph:DEQ"} <= names
    root = df[df["name"] == "pipe"]
    pe_times = [
        max(pe.time("cpu") - pe.idle_time("cpu"), 0.0) + pe.idle_time("cpu") for pe in run.pes
    ]
    assert list(root["time (inc)"]) == pytest.approx(pe_times)
    # The busy time is the program node's exclusive time plus what the category sampler put
    # in the access categories' nodes (none, when no sample fell in a fiber of a run this
    # short): every node but the idle loop's.
    busy = df[df["name"] != "idle"]["time"].sum()
    assert busy == pytest.approx(
        sum(max(pe.time("cpu") - pe.idle_time("cpu"), 0.0) for pe in run.pes)
    )
    enq = df[(df["name"] == "graph:ENQ")]
    assert enq["fibers"].sum() > 0
