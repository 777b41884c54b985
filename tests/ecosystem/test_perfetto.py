"""`mprof trace convert` (docs/tracing.md): the OTF2 trace of a PIPE run as Chrome / Perfetto
trace JSON. The JSON is checked against the Trace Event Format: a named track per PE, slices
that nest and add up to the profile's idle time, one flow per remote invocation, counters whose
last sample is the profile's statistics and the settings; plus the OTF2 side of the counters:
statistics sampled through the run (MPROF_TRACE_SAMPLE_MS), never decreasing."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
from pathlib import Path

import otf2
import pytest

from mprof.cli import main
from mprof.errors import MprofError

PIPE_ARGS = ["2", "2000", "5", "20", "15", "64", "1000"]  # PES M N T F ELTSIZE AGG


def traced(build_dir: Path, tmp: Path, np: int | None = None, **env_extra):
    trace, out = tmp / "trace", tmp / "run.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    env.update(MPROF_TRACE=str(trace), MPROF_OUT=str(out), **env_extra)
    cmd = [str(build_dir / "benchmarks/pipe/pipe"), *PIPE_ARGS]
    if np:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [shutil.which("mpirun"), "-np", str(np), "--oversubscribe", *cmd]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return trace, json.loads(out.read_text())


def convert(trace: Path, tmp: Path, capsys) -> dict:
    out = tmp / "trace.json"
    assert main(["trace", "convert", str(trace), "-o", str(out)]) == 0
    assert "slices" in capsys.readouterr().err
    return json.loads(out.read_text())


def check_trace_json(data: dict, profile: dict):
    events = data["traceEvents"]
    assert data["displayTimeUnit"] == "ns"
    for e in events:
        assert e["ph"] in "MXsfC" and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], float) and e["ts"] >= 0
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert sorted(names.values()) == [f"PE {pe['pe']}" for pe in profile["pes"]]
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"}
    track = {name: key for key, name in names.items()}
    accesses = set(profile["accesses"]) | {"idle", profile["program"]}
    for pe in profile["pes"]:
        key = track[f"PE {pe['pe']}"]
        slices = sorted(
            (e for e in events if e["ph"] == "X" and (e["pid"], e["tid"]) == key),
            key=lambda e: (e["ts"], -e["dur"]),
        )
        assert slices and {e["name"] for e in slices} <= accesses
        assert {e["cat"] for e in slices} == {"idle", "access", "run"}
        (run,) = [e for e in slices if e["cat"] == "run"]  # the PE's root, around the rest
        assert run["name"] == profile["program"] and run is slices[0]
        assert run["dur"] * 1e-6 == pytest.approx(pe["elapsed_s"], rel=0.05, abs=2e-3)
        open_ends: list[float] = []  # slices on one track nest (preemptive fibers) or follow
        for e in slices:
            while open_ends and open_ends[-1] <= e["ts"] + 1e-3:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-3, e
            open_ends.append(end)
        idle = sum(e["dur"] for e in slices if e["name"] == "idle") * 1e-6
        assert idle == pytest.approx(pe["idle_s"], rel=0.05, abs=5e-4)
        stats = {(o["module"], k): v for o in pe["objects"] for k, v in o["stats"].items()}
        sends = [e for e in events if e["ph"] == "s" and (e["pid"], e["tid"]) == key]
        recvs = [e for e in events if e["ph"] == "f" and (e["pid"], e["tid"]) == key]
        assert len(sends) == stats[("rts", "RemoteOp")] > 0
        assert len(recvs) == stats[("rts", "ThreadArrived")]
        counters = collections.defaultdict(list)
        for e in events:
            if e["ph"] == "C" and e["name"].startswith(f"PE {pe['pe']} "):
                counters[e["name"].split(" ", 2)[2]].append(e)
        assert set(counters) == {"settings"} | {m for m, _ in stats}
        for module, samples in counters.items():
            if module == "settings":
                assert samples[0]["args"] == {"npes": profile["npes"], **profile["settings"]}
                continue
            last = max(samples, key=lambda e: e["ts"])
            assert last["args"] == {k: v for (m, k), v in stats.items() if m == module}
    flows = collections.defaultdict(list)
    for e in events:
        if e["ph"] in "sf":
            flows[e["id"]].append(e)
    assert flows and all(sorted(x["ph"] for x in pair) == ["f", "s"] for pair in flows.values())
    for pair in flows.values():
        s, f = sorted(pair, key=lambda x: x["ph"] == "f")
        assert f["bp"] == "e" and s["args"]["bytes"] > 0
    assert data["otherData"]["unmatched_messages"] == 0


def test_convert_pipe_trace(build_dir, tmp_path, capsys):
    trace, profile = traced(build_dir, tmp_path)
    data = convert(trace, tmp_path, capsys)
    check_trace_json(data, profile)
    assert {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "process_name"} == {
        f"process 0 on {profile['machine']['hostname']}"
    }
    for e in data["traceEvents"]:  # one machine, one clock: a record arrives after it left
        if e["ph"] == "s":
            (f,) = [x for x in data["traceEvents"] if x["ph"] == "f" and x["id"] == e["id"]]
            assert f["ts"] >= e["ts"]
            break
    # the archive file itself works as well as its folder, and standard output
    assert main(["trace", "convert", str(trace / "traces.otf2")]) == 0
    assert json.loads(capsys.readouterr().out) == data


def test_no_file_of_the_archive_is_an_output(build_dir, tmp_path, capsys):
    """-o naming the anchor, the definitions or a location's event file (the reader opens
    those later) is refused with the archive left byte for byte as it was."""
    trace, _ = traced(build_dir, tmp_path)
    files = sorted(p for p in trace.rglob("*") if p.is_file())
    assert {p.suffix for p in files} == {".otf2", ".def", ".evt"}
    before = {p: p.read_bytes() for p in files}
    for victim in files:
        capsys.readouterr()
        assert main(["trace", "convert", str(trace), "-o", str(victim)]) == 2
        assert "it is an input of this command" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in files} == before
    convert(trace, tmp_path, capsys)  # still whole


def test_events_that_do_not_nest_are_named_with_the_archive(
    build_dir, tmp_path, capsys, monkeypatch
):
    """The converter's own findings about a location's events (a region never left, as a
    damaged event file gives) name the archive they come from."""
    import mprof.trace.perfetto as perfetto

    trace, _ = traced(build_dir, tmp_path)

    def unbalanced(otf2, archive):
        raise MprofError("PE 1: 1 region(s) entered and never left")

    monkeypatch.setattr(perfetto, "_convert", unbalanced)
    assert main(["trace", "convert", str(trace), "-o", str(tmp_path / "out.json")]) == 2
    assert capsys.readouterr().err == (
        f"mprof: {trace / 'traces.otf2'}: PE 1: 1 region(s) entered and never left\n"
    )
    assert not (tmp_path / "out.json").exists()


def test_convert_mpi_trace(build_dir, tmp_path, capsys):
    trace, profile = traced(build_dir, tmp_path, np=2)
    assert profile["backend"] == "mpi"
    data = convert(trace, tmp_path, capsys)
    check_trace_json(data, profile)
    processes = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "process_name"}
    host = profile["machine"]["hostname"]
    assert processes == {f"process 0 on {host}", f"process 1 on {host}"}  # a process per rank
    assert data["otherData"]["hosts"] == [host]


def test_statistics_are_sampled_through_the_run(build_dir, tmp_path):
    trace, profile = traced(build_dir, tmp_path, MPROF_TRACE_SAMPLE_MS="0.5")
    samples = collections.defaultdict(list)
    with otf2.reader.open(str(trace / "traces.otf2")) as t:
        for loc, ev in t.events:
            if isinstance(ev, otf2.events.Metric):
                for member, value in zip(ev.metric.members, ev.values):
                    if member.metric_mode == otf2.MetricMode.ACCUMULATED_START:
                        samples[(loc.name, member.name)].append((ev.time, value))
                    else:
                        assert member.name.startswith("setting::")
    for pe in profile["pes"]:
        series = samples[(f"PE {pe['pe']}", "rts::ThreadDisp")]
        assert len(series) > 2, series  # more than the end: samples through the run
        values = [v for _, v in sorted(series)]
        assert values == sorted(values)  # counts since the start never go down
        assert (
            values[-1]
            == next(o for o in pe["objects"] if o["module"] == "rts")["stats"]["ThreadDisp"]
        )


def test_sampling_off_and_bad_setting(build_dir, tmp_path):
    (tmp_path / "off").mkdir()
    trace, _ = traced(build_dir, tmp_path / "off", MPROF_TRACE_SAMPLE_MS="0")
    with otf2.reader.open(str(trace / "traces.otf2")) as t:
        metrics = collections.Counter(
            loc.name for loc, ev in t.events if isinstance(ev, otf2.events.Metric)
        )
    assert metrics == {"PE 0": 1 + 3, "PE 1": 1 + 3}  # settings, then rts, graph, pipe at the end
    env = dict(os.environ, MPROF_TRACE=str(tmp_path / "bad"), MPROF_TRACE_SAMPLE_MS="often")
    proc = subprocess.run(
        [str(build_dir / "benchmarks/pipe/pipe"), *PIPE_ARGS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert "ignoring MPROF_TRACE_SAMPLE_MS=often" in proc.stderr


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "missing", "no OTF2 archive"),
        (
            lambda tmp: (tmp / "run.json").write_text("{}") and tmp / "run.json",
            "not an OTF2 archive",
        ),
        (
            lambda tmp: (tmp / "x.otf2").write_text("garbage") and tmp / "x.otf2",
            "cannot read the OTF2 archive",
        ),
    ],
)
def test_convert_bad_input(tmp_path, capsys, make, message):
    path = make(tmp_path)
    assert main(["trace", "convert", str(path), "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mprof: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "out.json").exists()
