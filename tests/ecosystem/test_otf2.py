"""OTF2 traces (docs/tracing.md): MPROF_TRACE=DIR writes DIR/traces.otf2; otf2-print reads it
and the Python otf2 reader's per-PE figures agree with the run profile: one location per PE,
balanced Enter/Leave, a send per remote invocation and a receive per arrived record, the
statistics as metrics, and idle time as the profile measured it."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
from pathlib import Path

import otf2
import pytest
from tooling import require_tool

PIPE_ARGS = ["2", "300", "5", "20", "15", "64", "1000"]  # PES M N T F ELTSIZE AGG
MPIRUN = shutil.which("mpirun")


def traced_run(exe: Path, tmp: Path, np: int | None = None, workers: int | None = None):
    trace, out = tmp / "trace", tmp / "run.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    env.update(MPROF_TRACE=str(trace), MPROF_OUT=str(out))
    if workers:
        env["MPROF_WORKERS"] = str(workers)
    cmd = [str(exe), *PIPE_ARGS]
    if np:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [MPIRUN, "-np", str(np), "--oversubscribe", *cmd]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return trace / "traces.otf2", json.loads(out.read_text())


def summarize(archive: Path):
    """Per location name: event counts by type, idle seconds, metric values, region stack
    depth at the end."""
    per = collections.defaultdict(
        lambda: {
            "counts": collections.Counter(),
            "idle": 0.0,
            "metrics": {},
            "settings": {},
            "stack": [],
            "errors": [],
            "first": None,
            "last": None,
            "root_s": 0.0,
        }
    )
    with otf2.reader.open(str(archive)) as trace:
        resolution = trace.timer_resolution
        locations = sorted(loc.name for loc in trace.definitions.locations)
        for loc, ev in trace.events:
            s = per[loc.name]
            s["counts"][type(ev).__name__] += 1
            if s["first"] is None:
                s["first"] = (type(ev).__name__, getattr(ev, "region", None) and ev.region.name)
            s["last"] = (type(ev).__name__, getattr(ev, "region", None) and ev.region.name)
            if isinstance(ev, otf2.events.Enter):
                s["stack"].append((ev.region.name, ev.time))
            elif isinstance(ev, otf2.events.Leave):
                name, t0 = s["stack"].pop()
                if name != ev.region.name:
                    s["errors"].append(f"leave {ev.region.name} inside {name}")
                if name == "idle":
                    s["idle"] += (ev.time - t0) / resolution
                if not s["stack"]:
                    s["root_s"] += (ev.time - t0) / resolution
            elif isinstance(ev, otf2.events.Metric):
                for member, value in zip(ev.metric.members, ev.values):
                    if member.name.startswith("setting::"):
                        s["settings"][member.name] = (value, member.metric_mode)
                    else:  # sampled through the run: the last sample is the PE's end
                        s["metrics"][member.name] = value
    return locations, per


def check_against_profile(archive: Path, profile: dict):
    locations, per = summarize(archive)
    assert locations == [f"PE {pe['pe']}" for pe in profile["pes"]]
    for pe in profile["pes"]:
        s = per[f"PE {pe['pe']}"]
        assert not s["errors"] and not s["stack"], s["errors"]
        assert s["counts"]["Enter"] == s["counts"]["Leave"] > 0
        # every event lies in the PE's root region, named after the program, which lasts
        # as long as the PE ran
        assert s["first"] == ("Enter", profile["program"])
        assert s["last"] == ("Leave", profile["program"])
        # (the PE and its root region start and end a few instructions apart, which a
        # preemption on a loaded machine can stretch to milliseconds)
        assert s["root_s"] == pytest.approx(pe["elapsed_s"], rel=0.05, abs=0.02)
        stats = {f"{o['module']}::{k}": v for o in pe["objects"] for k, v in o["stats"].items()}
        assert s["metrics"] == stats
        absolute = otf2.MetricMode.ABSOLUTE_POINT
        assert s["settings"] == {
            "setting::npes": (profile["npes"], absolute),
            **{f"setting::{k}": (v, absolute) for k, v in profile["settings"].items()},
        }
        assert s["counts"]["MpiSend"] == stats["rts::RemoteOp"]
        assert s["counts"]["MpiRecv"] == stats["rts::ThreadArrived"]
        # the trace's idle intervals are the ones the runtime measures, read a few
        # instructions apart
        assert s["idle"] == pytest.approx(pe["idle_s"], rel=0.05, abs=5e-4)
    sends = sum(per[n]["counts"]["MpiSend"] for n in locations)
    assert sends == sum(per[n]["counts"]["MpiRecv"] for n in locations) > 0


def check_hosts(archive: Path, profile: dict, processes: int):
    """Every process's location group sits under a system tree node of class "node" named for
    the host it ran on, under the machine node."""
    with otf2.reader.open(str(archive)) as trace:
        groups = {loc.group for loc in trace.definitions.locations}
    assert len(groups) == processes
    for group in groups:
        node = group.system_tree_parent
        assert (node.class_name, node.name) == ("node", profile["machine"]["hostname"])
        assert node.parent.class_name == "machine"


@pytest.mark.parametrize("workers", [2, 1])
def test_pipe_trace_agrees_with_the_profile(build_dir, tmp_path, workers):
    """Also where the PEs share one worker thread: each begins at the run's start, waiting for
    its first slice, and the backend divides the thread's CPU time among them at the end
    (IdleCpuNs), after the PEs' own end."""
    archive, profile = traced_run(build_dir / "benchmarks/pipe/pipe", tmp_path, workers=workers)
    assert profile["settings"]["workers"] == workers
    check_against_profile(archive, profile)
    check_hosts(archive, profile, 1)
    with otf2.reader.open(str(archive)) as trace:
        regions = {r.name for r in trace.definitions.regions}
    assert {"idle", "pipe:produce", "pipe:consume", "graph:ENQ", "graph:DEQ"} <= regions


def test_otf2_print_reads_the_trace(build_dir, tmp_path):
    archive, _ = traced_run(build_dir / "benchmarks/pipe/pipe", tmp_path)
    proc = subprocess.run(["otf2-print", str(archive)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    kinds = collections.Counter(
        line.split()[0]
        for line in proc.stdout.splitlines()
        if line[:1].isupper() and not line.startswith("Event")
    )
    assert kinds["ENTER"] == kinds["LEAVE"] > 0
    assert kinds["MPI_SEND"] == kinds["MPI_RECV"] > 0
    # the settings at each PE's start, then rts, graph, pipe every period and at each PE's end
    assert kinds["METRIC"] >= 2 * (1 + 3)
    assert proc.stdout.count('"setting::agg_bytes"') == 2
    assert 'Region: "pipe:produce"' in proc.stdout


def test_mpi_backend_writes_one_archive(build_dir, tmp_path):
    require_tool("mpirun")
    archive, profile = traced_run(build_dir / "benchmarks/pipe/pipe", tmp_path, np=2)
    assert profile["backend"] == "mpi"
    check_against_profile(archive, profile)
    check_hosts(archive, profile, 2)
    # two clock offsets per rank (start and end) onto rank 0's clock: 0 for rank 0, and on one
    # host no more than the skew of leaving a collective
    proc = subprocess.run(
        ["otf2-print", "-C", str(archive)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    offsets = collections.defaultdict(list)
    for line in proc.stdout.splitlines():
        if line.startswith("CLOCK_OFFSET"):
            fields = line.split()
            offsets[int(fields[1])].append(int(line.split("Offset: ")[1].split(",")[0]))
    assert sorted(offsets) == [0, 1] and offsets[0] == [0, 0]
    assert len(offsets[1]) == 2 and all(abs(o) < 50_000_000 for o in offsets[1])


def test_existing_trace_is_not_overwritten(build_dir, tmp_path):
    exe = build_dir / "benchmarks/pipe/pipe"
    traced_run(exe, tmp_path)
    before = sorted(p.name for p in (tmp_path / "trace" / "traces").iterdir())
    env = dict(os.environ, MPROF_TRACE=str(tmp_path / "trace"))
    proc = subprocess.run(
        [str(exe), *PIPE_ARGS], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert "already exists" in proc.stderr and "not traced" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "trace" / "traces").iterdir()) == before


def test_missing_folders_of_the_trace_are_created(build_dir, tmp_path):
    """`MPROF_TRACE=traces/pipe` in a folder without `traces/` made only the last folder: the
    run said `cannot create traces/pipe` and was not traced (docs/tracing.md's first example)."""
    exe = build_dir / "benchmarks/pipe/pipe"
    env = dict(os.environ, MPROF_TRACE="traces/pipe")
    proc = subprocess.run(
        [str(exe), *PIPE_ARGS], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0 and "not traced" not in proc.stderr, proc.stderr
    assert (tmp_path / "traces/pipe/traces.otf2").is_file()
    # a file in the way is still a clear refusal
    (tmp_path / "file").write_text("")
    env["MPROF_TRACE"] = "file/x/y"
    proc = subprocess.run(
        [str(exe), *PIPE_ARGS], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0
    assert (
        "mprof: MPROF_TRACE: cannot create file/x/y: Not a directory. This run is not "
        "traced." in proc.stderr
    ), proc.stderr


def _two_ranks(exe, tmp_path, trace0, trace1):
    """mpirun with MPROF_TRACE=trace0 on rank 0 and trace1 on rank 1 (None: unset)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OMPI_", "PMIX_")) and k != "MPROF_TRACE"
    }
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [MPIRUN, "--oversubscribe"]
    for i, trace in enumerate((trace0, trace1)):
        cmd += [":"] if i else []
        cmd += [
            "-np",
            "1",
            "env",
            *([f"MPROF_TRACE={trace}"] if trace else []),
            str(exe),
            *PIPE_ARGS,
        ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_mpi_ranks_decide_together_whether_to_trace(build_dir, tmp_path):
    """The archive's set-up is collective: MPROF_TRACE on one rank only (mpirun forwards it
    to other hosts only with -x), or a folder one rank cannot make, left the other ranks
    waiting in its first collective for ever."""
    require_tool("mpirun")
    exe = build_dir / "benchmarks/pipe/pipe"
    proc = _two_ranks(exe, tmp_path, tmp_path / "t0", None)
    assert proc.returncode == 0, proc.stderr
    assert (
        "mprof: MPROF_TRACE is set on some ranks only (pass it to every rank: mpirun -x "
        "MPROF_TRACE). This run is not traced."
    ) in proc.stderr
    assert not (tmp_path / "t0").exists()
    (tmp_path / "file").write_text("")
    proc = _two_ranks(exe, tmp_path, tmp_path / "t1", tmp_path / "file" / "x")
    assert proc.returncode == 0, proc.stderr
    assert f"cannot create {tmp_path / 'file' / 'x'}: Not a directory" in proc.stderr
    assert "another rank cannot write its trace" in proc.stderr
    assert not (tmp_path / "t1" / "traces.otf2").exists()
