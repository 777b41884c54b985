"""CSWEC's subcircuits at the paper's granularity (benchmarks/cswec/netlist.py --grain ccc):
the channel-connected components of the static CMOS netlist.  The original ISCAS-85 C2670
(benchmarks/cswec/data/c2670.bench) has its 1193 gates and gives as many CCCs as the
expansion rule says from its gate types; the rule, on a small circuit partitioned by hand;
the CCC netlists compute the same logic functions as the gate-level ones (a Python logic
simulation of both on random vectors); REGFILE in transmission-gate/inverter CCCs; cswec's
--check on the new grain at 1, 2 and 3 PEs; bad .bench input gives file:line:column."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from apps import build, run
from test_cswec import check_ok

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "benchmarks/cswec/netlist.py"
C2670 = ROOT / "benchmarks/cswec/data/c2670.bench"
FUNCS = {
    "and": all,
    "nand": lambda v: not all(v),
    "or": any,
    "nor": lambda v: not any(v),
    "xor": lambda v: sum(v) % 2 == 1,
    "xnor": lambda v: sum(v) % 2 == 0,
    "not": lambda v: not v[0],
    "buf": lambda v: v[0],
}


def make(tmp: Path, *args) -> tuple[Path, str]:
    """The netlist of `args` and netlist.py's --summary line."""
    out = tmp / (re.sub(r"[^\w.-]", "_", "-".join(map(str, args)))[-80:] + ".net")
    proc = subprocess.run(
        [sys.executable, TOOL, *map(str, args), "-o", out, "--summary"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


def header(net: Path) -> dict:
    words = net.read_text().splitlines()[1].split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}


def parse(net: Path):
    """(inputs, outputs, ties, subcircuits as [(type, out, [ins])])."""
    lines = net.read_text().splitlines()
    ins = [int(x) for x in lines[2].split()[1:]]
    outs = [int(x) for x in lines[3].split()[1:]]
    ties, subs = {}, []
    for ln in lines[4:]:
        w = ln.split()
        if w[0] == "tie":
            ties[int(w[1])] = bool(int(w[2]))
        elif w[0] == "sub":
            subs.append([])
        else:
            subs[-1].append((w[1], int(w[2]), [int(x) for x in w[4:]]))
    return ins, outs, ties, subs


def simulate(net: Path, vectors: list[list[bool]]) -> list[list[bool]]:
    """The primary outputs' logic values for each input vector (zero-delay evaluation in the
    netlist's topological order)."""
    ins, outs, ties, subs = parse(net)
    result = []
    for vec in vectors:
        val = dict(zip(ins, vec))
        val.update(ties)
        for sub in subs:
            for typ, out, gins in sub:
                val[out] = bool(FUNCS[typ]([val[s] for s in gins]))
        result.append([val[o] for o in outs])
    return result


def random_vectors(n_inputs: int, count: int, seed: int) -> list[list[bool]]:
    rng = random.Random(seed)
    return [[rng.random() < 0.5 for _ in range(n_inputs)] for _ in range(count)]


def bench_gates(path: Path) -> list[tuple[str, int]]:
    """(type, fan-in) of every gate of a .bench file, read independently of netlist.py."""
    text = path.read_text()
    return [
        (t.upper(), len(a.split(",")))
        for t, a in re.findall(r"^\s*[^#\s=]+\s*=\s*(\w+)\s*\(([^)]*)\)", text, re.M)
    ]


def expected_cccs(gates, max_fanin: int) -> tuple[int, int]:
    """CCCs and transistors of a netlist of AND/NAND/OR/NOR/NOT/BUFF gates by the rule: an
    inverting gate is one stage of 2 transistors per input, AND/OR add an inverter, BUFF is
    two inverters; a gate wider than max_fanin (up to twice as wide) is a stage per group of
    inputs and one combining stage (AND: NANDs then a NOR; OR: NORs then a NAND), NAND/NOR
    then also an inverter."""
    cccs = transistors = 0
    for typ, k in gates:
        if typ == "NOT":
            cccs, transistors = cccs + 1, transistors + 2
        elif typ == "BUFF":
            cccs, transistors = cccs + 2, transistors + 4
        elif k <= max_fanin:
            extra = typ in ("AND", "OR")
            cccs, transistors = cccs + 1 + extra, transistors + 2 * k + 2 * extra
        else:
            assert k <= 2 * max_fanin, (typ, k)
            extra = typ in ("NAND", "NOR")
            cccs += 3 + extra
            transistors += 2 * k + 4 + 2 * extra
    return cccs, transistors


def test_the_original_c2670_has_1193_gates(tmp_path):
    gates = bench_gates(C2670)
    assert len(gates) == 1193
    assert Counter(t for t, _ in gates) == {
        "AND": 333,
        "NAND": 254,
        "OR": 77,
        "NOR": 12,
        "NOT": 321,
        "BUFF": 196,
    }
    net, summary = make(tmp_path, "bench", C2670)
    assert header(net) == {
        "signals": 233 + 1193,
        "inputs": 233,
        "outputs": 140,
        "subcircuits": 1193,
        "ties": 0,
    }
    assert "1193 subcircuits at the gate grain" in summary


@pytest.mark.parametrize("max_fanin", [4, 5])
def test_c2670_cccs_follow_the_rule(tmp_path, max_fanin):
    cccs, transistors = expected_cccs(bench_gates(C2670), max_fanin)
    net, summary = make(tmp_path, "bench", C2670, "--grain", "ccc", "--max-fanin", max_fanin)
    assert header(net)["subcircuits"] == cccs
    assert f"{cccs} subcircuits at the ccc grain, {transistors} transistors" in summary
    # the widest gates (5 inputs) split at 4; kept whole they give the transistor count of
    # the paper's C2670 (Wen 1995, section 2.2.4.3: 5364 transistors)
    assert (cccs, transistors) == ((1808, 5382) if max_fanin == 4 else (1799, 5364))
    # every CCC is one inverting stage: an inverter, NAND or NOR within the fan-in limit
    _, _, _, subs = parse(net)
    assert all(len(s) == 1 and s[0][0] in ("not", "nand", "nor") for s in subs)
    assert max(len(s[0][2]) for s in subs) == (4 if max_fanin == 4 else 5)


SMALL = """module m(a, b, c, d, e, y1, y2, y3, y4);
  input a, b, c, d, e;
  output y1, y2, y3, y4;
  and g1 (y1, a, b, c, d, e);
  xor g2 (y2, a, b);
  buf g3 (y3, y1);
  nand g4 (y4, y2, c);
endmodule
"""


def test_ccc_rule_on_a_small_circuit_partitioned_by_hand(tmp_path):
    v = tmp_path / "m.v"
    v.write_text(SMALL)
    net, summary = make(tmp_path, "verilog", v, "--grain", "ccc")
    ins, outs, _, subs = parse(net)
    a, b, c, d, e = ins
    y1, y2, y3, y4 = outs
    out = {s[-1][1]: s for s in subs}  # each CCC by the node it drives

    def shape(sig):
        return [(t, len(i)) for t, _, i in out[sig]]

    # by hand: AND5 = NOR(NAND(a, b, c), NAND(d, e)) (3 CCCs, 6 + 4 + 4 transistors); XOR =
    # INV a, INV b, AOI22 (3 CCCs, 2 + 2 + 8); BUF = INV, INV (2 CCCs, 4); NAND2 (1 CCC, 4)
    assert len(subs) == 9 and "9 subcircuits at the ccc grain, 34 transistors" in summary
    assert shape(y1) == [("nor", 2)]
    n1, n2 = out[y1][0][2]
    assert out[n1][0][:1] + (sorted(out[n1][0][2]),) == ("nand", [a, b, c])
    assert out[n2][0][:1] + (sorted(out[n2][0][2]),) == ("nand", [d, e])
    p, q, (t, _, pq) = out[y2]
    assert shape(y2) == [("and", 2), ("and", 2), ("nor", 2)] and t == "nor"
    assert pq == [p[1], q[1]]  # the AOI22's two series pairs are internal to its CCC
    na, nb = [x for x in q[2]]
    assert p[2] == [a, b] and out[na] == [("not", na, [a])] and out[nb] == [("not", nb, [b])]
    (inv2,) = out[y3]
    assert inv2[0] == "not" and out[inv2[2][0]] == [("not", inv2[2][0], [y1])]
    assert out[y4] == [("nand", y4, [y2, c])]
    # with five transistors in series allowed, the AND is one NAND5 stage and an inverter
    net5, summary5 = make(tmp_path, "verilog", v, "--grain", "ccc", "--max-fanin", "5")
    out5 = {s[-1][1]: s for s in parse(net5)[3]}
    (g,) = out5[parse(net5)[1][0]]
    assert g[0] == "not" and out5[g[2][0]][0][0] == "nand" and len(out5[g[2][0]][0][2]) == 5
    assert "8 subcircuits at the ccc grain, 32 transistors" in summary5


@pytest.mark.parametrize("source", [["bench", C2670], ["iscas", "c432"], ["verilog", "SMALL"]])
def test_cccs_compute_the_gates_logic(tmp_path, source):
    if source[1] == "SMALL":
        source = ["verilog", tmp_path / "m.v"]
        source[1].write_text(SMALL)
    gate, _ = make(tmp_path, *source)
    ccc, _ = make(tmp_path, *source, "--grain", "ccc")
    vectors = random_vectors(header(gate)["inputs"], 64, seed=7)
    want = simulate(gate, vectors)
    assert simulate(ccc, vectors) == want
    assert len({tuple(w) for w in want}) > 1  # the vectors exercise the outputs
    # a wrong expansion is caught: swap one NAND for a NOR in the CCC netlist
    broken = tmp_path / "broken.net"
    broken.write_text(ccc.read_text().replace("gate nand", "gate nor", 1))
    assert simulate(broken, vectors) != want


@pytest.mark.parametrize("regs,bits,fanin", [(8, 4, 4), (32, 32, 4), (32, 32, 5)])
def test_regfile_cccs(tmp_path, regs, bits, fanin):
    gate, _ = make(tmp_path, "regfile", "--regs", regs, "--bits", bits)
    ccc, summary = make(
        tmp_path, "regfile", "--regs", regs, "--bits", bits, "--grain", "ccc", "--max-fanin", fanin
    )
    abits = (regs - 1).bit_length()
    # address inverters; per register a NAND and an inverter (sel', sel), or, wider than the
    # fan-in, the NAND-NOR tree of the AND, then an inverter (sel'); per bit the bit line
    # and the output inverter
    per_reg = 2 if abits <= fanin else len(range(0, abits, fanin)) + 2
    assert header(ccc)["subcircuits"] == abits + regs * per_reg + 2 * bits
    big = [s for s in parse(ccc)[3] if len(s) > 4]
    assert len(big) == bits and all(len(s) == 4 * regs + regs - 1 for s in big)
    cells = 4 * regs * bits  # a cell inverter and a transmission gate per register bit
    total = int(re.search(r"(\d+) transistors", summary).group(1))
    if regs == bits == 32:  # the bit lines hold most transistors, as in the paper's
        assert cells / total > 0.8
    # the read port returns the addressed register, as the gate-level one does
    vectors = random_vectors(header(gate)["inputs"], 24, seed=regs + fanin)
    want = simulate(gate, vectors)
    assert simulate(ccc, vectors) == want
    for vec, got in zip(vectors, want):
        r = sum(1 << i for i, x in enumerate(vec[regs * bits :]) if x)
        assert got == vec[r * bits : (r + 1) * bits]


@pytest.fixture(scope="module")
def cswec(cmake_build):
    return build(cmake_build, "cswec")


@pytest.fixture(scope="module")
def ccc_nets(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ccc")
    return {
        "c2670": make(tmp, "bench", C2670, "--grain", "ccc")[0],
        "regfile": make(tmp, "regfile", "--regs", "8", "--bits", "4", "--grain", "ccc")[0],
    }


@pytest.mark.parametrize("pes", [1, 2, 3])
@pytest.mark.parametrize("circuit", ["c2670", "regfile"])
def test_check_on_the_ccc_grain(cswec, ccc_nets, circuit, pes):
    r = run(cswec, "--check", f"--netlist={ccc_nets[circuit]}", "--vectors=3", pes=pes)
    check_ok(r)
    h = header(ccc_nets[circuit])
    assert f"nodes={h['inputs'] + h['ties'] + h['subcircuits']} " in r.stdout
    assert sum(s["Node"] for s in r.stats("cswec")) == h["inputs"] + h["subcircuits"]


@pytest.mark.parametrize(
    "text,where,message",
    [
        ("INPUT(a)\nOUTPUT(q)\nq = DFF(a)\n", "3:5", "unsupported gate type 'DFF'"),
        ("INPUT(a)\n  q == NOT(a)\n", "2:3", "expected 'INPUT(s)'"),
        ("INPUT(a)\nOUTPUT(q)\nq = NOT(a, a)\n", "3:1", "gate 'NOT' with inputs 'a, a'"),
        ("INPUT(a)\nOUTPUT(q)\nq = AND(a, b)\n", "3:1", "signal 'b' has no driver"),
    ],
)
def test_bad_bench_files(tmp_path, text, where, message):
    bad = tmp_path / "bad.bench"
    bad.write_text(text)
    proc = subprocess.run(
        [sys.executable, TOOL, "bench", bad, "--grain", "ccc", "-o", tmp_path / "x.net"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and f"{bad}:{where}: {message}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_study_simulates_the_cccs(tmp_path):
    """The CSWEC study's default grain is ccc: its netlists are netlist.py's CCC ones."""
    import importlib.util
    import types

    spec = importlib.util.spec_from_file_location(
        "cswec_study", ROOT / "benchmarks/cswec/experiments/run.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert {s["grain"] for s in mod.SIZES.values()} == {"ccc"}
    args = types.SimpleNamespace(work=tmp_path / "work", grain="ccc", subs={})
    want = {
        "c2670": make(tmp_path, "bench", C2670, "--grain", "ccc")[0],
        "regfile": make(tmp_path, "regfile", "--grain", "ccc")[0],
    }
    for circ in mod.CIRCUITS:
        net = mod.netlist(circ, args)
        assert net.read_text() == want[circ].read_text()
        assert args.subs[circ] == header(want[circ])["subcircuits"]
    assert f"{args.subs['c2670']} CCCs" in mod.grain_text(args)
