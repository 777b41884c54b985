"""Build switches: -DMPROF_STATS=OFF and -DMPROF_LATENCY=OFF compile the
statistics hooks (the runtime's own included) and the latency accounting (with the access
declarations of the generated hooks) away.

The runtime and a test program are built in build-nostats with both switches off; a failed
build fails the test.  The run profile then has no rts record, and the latency rows keep their
dispatch counts with no latency."""

import json
import subprocess
import sys

from rt_helpers import REPO_ROOT, RuntimeTests, clean_env


def _run(cmd):
    r = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"$ {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def _build(name: str, target: str, *options: str):
    """Configures REPO_ROOT/<name> with CMake `options` and builds `target`; returns the build
    directory.  A failed build fails the test."""
    bdir = REPO_ROOT / name
    configure = ["cmake", "-S", str(REPO_ROOT), "-B", str(bdir), "-G", "Ninja", *options]
    _run([*configure, f"-DPython3_EXECUTABLE={sys.executable}"])
    _run(["cmake", "--build", str(bdir), "--target", target])
    return bdir


def test_statistics_and_latency_compile_out():
    bdir = _build("build-nostats", "rt_latency", "-DMPROF_STATS=OFF", "-DMPROF_LATENCY=OFF")
    run = RuntimeTests(None, bdir / "tests" / "c").run("latency", 20)
    for pe in run.profile["pes"]:
        assert [o["module"] for o in pe["objects"]] == [], pe["objects"]
    row = run.latency(1, "lat:wait", "lat:send")
    assert row is not None and row["count"] == 2  # dispatches are still counted
    assert row["observed_s"] == 0 and row["critical_s"] == 0
    assert run.profile["pes"][1]["idle_s"] > 0.01  # idle accounting is not latency accounting


def test_statistics_off_keeps_the_access_declarations_of_latency_accounting(tmp_path):
    """-DMPROF_STATS=OFF alone: the statistics hooks are gone (no objects in the profile), but
    the generated access declarations stay with latency accounting (docs/runtime.md), so PIPE's
    latency rows still name its and the event graph's access categories."""
    bdir = _build("build-nostats-latency", "pipe", "-DMPROF_STATS=OFF")
    out = tmp_path / "pipe.json"
    r = subprocess.run(
        [str(bdir / "benchmarks/pipe/pipe"), "2", "400", "10", "0", "4", "16", "256"],
        env=clean_env(MPROF_OUT=str(out)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    profile = json.loads(out.read_text())
    accesses = set()
    for pe in profile["pes"]:
        assert pe["objects"] == [], pe["objects"]
        accesses |= {row["access"] for row in pe["latency"] if row["count"]}
    assert {"pipe:consume", "pipe:produce", "graph:ENQ", "graph:DEQ"} <= accesses, accesses


def test_statistics_off_keeps_the_transport_working():
    """Built without statistics the runtime must move messages as it does with them: no work
    of the transport may hide in a statistics hook's argument, which such a build does not
    evaluate (the shm channels' catch-up, which publishes the chains a sender holds behind a
    full ring, once did).  Three senders flood PE 0 through 1-slot rings, a thread each, and
    idle PEs spin without ever sleeping: only the catch-up of the idle loop's polls can
    publish what they hold."""
    bdir = _build("build-nostats", "rt_channels", "-DMPROF_STATS=OFF", "-DMPROF_LATENCY=OFF")
    run = RuntimeTests(None, bdir / "tests" / "c").run(
        "channels",
        "flood",
        1000,
        timeout=60,
        env={
            "MPROF_WORKERS": 4,
            "MPROF_AGG_BYTES": 0,
            "MPROF_SHM_RING": 1,
            "MPROF_SPIN": 1_000_000_000,
        },
    )
    assert "arrivals=3000 expected=3000" in run.stdout


def test_the_runtime_builds_and_links_with_clang():
    """The runtime is a library C programs link with a C compiler, though its cost engine is
    C++ on Eigen: with clang, Eigen's out-of-memory path (a call of the global operator new)
    stayed in the object and C programs failed to link.  Built with -Werror: the runtime and
    the test program compile warning-free with clang too."""
    bdir = _build(
        "build-clang",
        "rt_comm",
        "-DCMAKE_C_COMPILER=clang",
        "-DCMAKE_CXX_COMPILER=clang++",
        "-DCMAKE_C_FLAGS=-Werror",
    )
    run = RuntimeTests(None, bdir / "tests" / "c").run("comm", "count", 1000, 32)
    assert "arrivals=1000" in run.stdout
    assert run.pe_stats(0)["RemoteOp"] == 1000
