"""Build switches (issue 18, part 2): -DMPROF_STATS=OFF and -DMPROF_LATENCY=OFF compile the
statistics hooks (the runtime's own included) and the latency accounting away.

The runtime and a test program are built in build-nostats with both switches off; a failed
build fails the test.  The run profile then has no rts record, and the latency rows keep their
dispatch counts with no latency."""

import subprocess
import sys

from rt_helpers import REPO_ROOT, RuntimeTests


def _run(cmd):
    r = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"$ {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def test_statistics_and_latency_compile_out():
    bdir = REPO_ROOT / "build-nostats"
    _run(["cmake", "-S", str(REPO_ROOT), "-B", str(bdir), "-G", "Ninja",
          "-DMPROF_STATS=OFF", "-DMPROF_LATENCY=OFF", f"-DPython3_EXECUTABLE={sys.executable}"])
    _run(["cmake", "--build", str(bdir), "--target", "rt_latency"])
    run = RuntimeTests(None, bdir / "tests" / "c").run("latency", 20)
    for pe in run.profile["pes"]:
        assert [o["module"] for o in pe["objects"]] == [], pe["objects"]
    row = run.latency(1, "lat:wait", "lat:send")
    assert row is not None and row["count"] == 2  # dispatches are still counted
    assert row["observed_s"] == 0 and row["critical_s"] == 0
    assert run.profile["pes"][1]["idle_s"] > 0.01  # idle accounting is not latency accounting
