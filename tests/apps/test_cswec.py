"""CSWEC (benchmarks/cswec): the primary outputs' waveforms equal, bit for bit, the sequential
event-driven simulation of the same circuit and model, for ISCAS-85 c17 (by hand and from
circuitgraph) and c432 (circuitgraph's netlist through netlist.py) and a small generated
register file, at 1-4 PEs, on shared memory and under mpirun, with the event graph's fibers on
the FIFO and on the preemptive scheduler (--sched); the smallest edge capacity needs deadlock
recovery and does not deadlock; the event graph's counts agree with the
program's; bad netlists give file:line:column errors; sanitizer runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from apps import build, run
from tooling import require_tool

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "benchmarks/cswec/netlist.py"


def netlist(tmp: Path, *args) -> Path:
    out = tmp / ("-".join(args) + ".net")
    proc = subprocess.run([sys.executable, TOOL, *args, "-o", out], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def cswec(cmake_build):
    return build(cmake_build, "cswec")


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nets")
    return {
        "c17": netlist(tmp, "iscas", "c17"),
        "c432": netlist(tmp, "iscas", "c432"),
        "regfile": netlist(tmp, "regfile", "--regs", "8", "--bits", "4"),
    }


def outputs(stdout: str) -> list[str]:
    return re.findall(r"^  output \d+: .*$", stdout, re.M)


def check_ok(r):
    assert "check against the sequential simulation: OK" in r.stdout, r.describe()


def test_check_alone_runs_the_builtin_c17_on_two_pes(cswec):
    r = run(cswec, "--check", timeout=30)
    check_ok(r)
    assert "circuit=c17 nodes=11 edges=12" in r.stdout
    assert r.profile["npes"] == 2


def test_circuitgraph_c17_is_the_builtin_one(cswec, nets):
    a = run(cswec, "--check", "--verbose", pes=2)
    b = run(cswec, "--check", "--verbose", f"--netlist={nets['c17']}", pes=2)
    check_ok(b)
    assert outputs(a.stdout) == outputs(b.stdout) and len(outputs(a.stdout)) == 2


@pytest.mark.parametrize("sched", ["fifo", "preempt"])
@pytest.mark.parametrize("pes", [1, 2, 3, 4])
@pytest.mark.parametrize("circuit", ["c432", "regfile"])
def test_waveforms_and_statistics(cswec, nets, circuit, pes, sched):
    r = run(cswec, "--check", f"--netlist={nets[circuit]}", f"--sched={sched}", pes=pes)
    check_ok(r)
    # the scheduler the graph was made with (eg_sched), not the command line echoed
    assert f"sched={sched}:" in r.stdout
    assert r.profile["params"]["preempt"] == (sched == "preempt")
    cs, g = r.stats("cswec"), r.stats("graph")
    elt = g[0]["EltSize"]
    assert elt == 32
    # every element enqueued on an edge is consumed (nodes drain their inputs to the FIN)
    assert sum(s["EnqSize"] for s in g) == sum(s["DeqSize"] for s in g)
    assert sum(s["EnqSize"] for s in g) == elt * sum(s["NEdgeMsg"] for s in cs)
    assert sum(s["Node"] for s in cs) == sum(s["Node"] for s in g)
    if pes == 1:
        assert sum(s["NPhys"] for s in cs) == 0
    else:
        assert 0 < sum(s["NPhys"] for s in cs) < sum(s["NEdgeMsg"] for s in cs)
    # the waveforms do not depend on the schedule: the same steps and events for every P
    steps = int(re.search(r"(\d+) steps sequentially", r.stdout).group(1))
    assert sum(s["NStep"] for s in cs) == steps


@pytest.mark.parametrize("pes", [2, 3])
def test_block_placement(cswec, nets, pes):
    size = run(cswec, "--check", f"--netlist={nets['c432']}", pes=pes)
    block = run(cswec, "--check", f"--netlist={nets['c432']}", "--place=block", pes=pes)
    check_ok(block)
    assert "place=block" in block.stdout and block.profile["params"]["block"] == 1
    # contiguous runs of the topological order keep most edges on one PE
    assert block.total("cswec", "NPhys") < size.total("cswec", "NPhys")


@pytest.mark.parametrize("sched", ["fifo", "preempt"])
def test_smallest_capacity_recovers(cswec, nets, sched):
    r = run(
        cswec,
        "--check",
        f"--netlist={nets['c432']}",
        "--capacity=1",
        "--null-steps=1000",
        f"--sched={sched}",
        pes=2,
    )
    check_ok(r)
    assert r.total("cswec", "NRecover") > 0 and r.total("cswec", "NSendBlock") > 0


def test_a_wrong_waveform_fails_the_check(cswec):
    r = run(cswec, "--check", "--fault", pes=2, expect_rc=1)
    assert "check against the sequential simulation: FAILED (1 of 2" in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--capacity=0"],
        ["--netlist=/nonexistent.net"],
        ["--check", "--vectors=-1"],
        ["--check", "--place=random"],
        ["--check", "--sched=lifo"],
        ["x"],
    ],
)
def test_bad_command_lines(cswec, args):
    r = run(cswec, *args, expect_rc=2)
    assert "cswec" in r.stderr and r.profile is None


def test_a_netlist_that_cannot_be_read_says_why(cswec, tmp_path):
    """A folder opens and reads nothing: it was reported as an empty netlist
    ("unexpected end of file")."""
    r = run(cswec, f"--netlist={tmp_path}", expect_rc=2)
    assert f"cswec: {tmp_path}: cannot read: Is a directory" in r.stderr
    r = run(cswec, f"--netlist={tmp_path / 'none.net'}", expect_rc=2)
    assert f"cswec: {tmp_path / 'none.net'}: cannot open: No such file or directory" in r.stderr


def test_bad_netlists(cswec, tmp_path):
    bad = tmp_path / "bad.net"
    bad.write_text(
        "cswec-netlist 1 x\nsignals 3 inputs 1 outputs 1 subcircuits 1 ties 0\n"
        "in 0\nout 2\nsub 1\ngate nandx 2 1 0\n"
    )
    r = run(cswec, f"--netlist={bad}", expect_rc=2)
    assert f"{bad}:6:6: unknown gate type nandx" in r.stderr
    v = tmp_path / "bad.v"
    v.write_text("module m(a, y);\n  input a;\n  output y;\n  nand g1 (y, a, b);\nendmodule\n")
    proc = subprocess.run(
        [sys.executable, TOOL, "verilog", v, "-o", tmp_path / "x.net"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and f"{v}:4:3: signal 'b' has no driver" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "circuit,capacity,sched",
    [("c17", 1, "fifo"), ("c432", 64, "fifo"), ("c17", 1, "preempt"), ("c432", 64, "preempt")],
)
def test_mpi_backend(cswec, nets, circuit, capacity, sched):
    require_tool("mpirun")
    r = run(
        cswec,
        "--check",
        f"--netlist={nets[circuit]}",
        f"--capacity={capacity}",
        f"--sched={sched}",
        np=2,
    )
    check_ok(r)
    assert f"sched={sched}:" in r.stdout
    assert r.profile["backend"] == "mpi" and r.profile["npes"] == 2


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, nets, sanitize):
    exe = build(cmake_build, "cswec", sanitize)
    for args in (
        ["--capacity=1"],
        [f"--netlist={nets['c432']}", "--vectors=3"],
        ["--capacity=1", "--sched=preempt"],
    ):
        r = run(exe, "--check", *args, pes=3, sanitize=sanitize, timeout=300)
        check_ok(r)
