#!/usr/bin/env python3
"""Netlists for CSWEC (benchmarks/cswec): reads a combinational gate-level netlist (Verilog,
as the PyPI package circuitgraph ships the ISCAS-85 circuits, or the ISCAS .bench format of
the original ISCAS-85 netlists, benchmarks/cswec/data/c2670.bench) or generates the 32-bit
register file REGFILE, and writes the simple text netlist cswec reads.

    netlist.py verilog FILE.v [--grain G] -o OUT.net     a gate-level Verilog file
    netlist.py iscas NAME [--grain G] -o OUT.net         circuitgraph's netlists/NAME.v (c2670...)
    netlist.py bench FILE.bench [--grain G] -o OUT.net   an ISCAS .bench file
    netlist.py regfile [--regs 32] [--bits 32] [--grain G] -o OUT.net
    (G: gate, stage or ccc; --stages is --grain stage; --max-fanin N for ccc, default 4;
    --summary prints the subcircuit and, at ccc, transistor counts)

The Verilog subset: one module; `input`, `output`, `wire` declarations; gate primitives
and, nand, or, nor, xor, xnor, not, buf with the output first; `assign a = b;` where b is a
signal or a constant 1'b0 / 1'b1.  The .bench subset: `INPUT(s)`, `OUTPUT(s)`,
`s = TYPE(a, b, ...)` with TYPE one of AND NAND OR NOR XOR XNOR NOT BUFF BUF, `#` comments.
Errors are reported as `file:line:column: message`.

Output format (whitespace separated, one item per line):

    cswec-netlist 1 NAME
    signals S inputs I outputs O subcircuits K ties T
    in SIG...                      (I primary input signals)
    out SIG...                     (O primary output signals)
    tie SIG VALUE                  (T times: a constant 0 or 1, `assign x = 1'b0;`)
    sub G                          (K times, in topological order; then G gates:)
    gate TYPE OUT NIN IN...        (the last gate's output is the subcircuit's output)

Signals are numbered 0..S-1; every gate output is a distinct signal.  A subcircuit's gates
are in evaluation order and only its last gate's output leaves it.

Grains (the subcircuits cswec simulates, each a thread and an event-graph node):
- gate: one subcircuit per gate of the netlist.
- stage: AND and OR become NAND and NOR followed by an inverter, BUF two inverters, every
  other gate stays whole (STAGES); a subcircuit per stage (circuitgraph's C2670: 699 gates,
  1030 stages).
- ccc: the channel-connected components of the circuit's static CMOS transistor netlist,
  the partition Wen 1995 (section 2.2.4.3) simulates: a CCC is the pull-up and pull-down
  network driving one node, so every inverting stage is one (CMOS, below).  A k-input AND is
  NAND+INV, OR is NOR+INV, BUF two inverters, XOR and XNOR the 12-transistor static CMOS
  gate (an inverter per input, then one AOI22 stage), and a gate with more than --max-fanin
  inputs (more transistors in series than a designer puts in one stack) a tree of NAND and
  NOR stages.  The original ISCAS-85 C2670 (1193 gates) gives 1808 CCCs and 5382
  transistors; with --max-fanin 5 (its widest gates in one stage) 1799 CCCs and 5364
  transistors, the transistor count Wen 1995 gives for his C2670 (he counts 2033
  subcircuits).  REGFILE at ccc: the register bits are primary inputs (CSWEC simulates
  combinational circuits), each read through its cell's inverter and a transmission gate
  onto its bit line: the 32 bit lines are 32 large CCCs among the decoder's small ones.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

GATES = {"and", "nand", "or", "nor", "xor", "xnor", "not", "buf"}
TOKEN = re.compile(
    r"\s+|//[^\n]*|/\*.*?\*/|1'[bB][01]|[A-Za-z_\\][A-Za-z0-9_$\[\]\\.]*|[(),;=]|\S", re.S
)


class NetlistError(Exception):
    pass


def tokens(text: str, path: str):
    line, col, pos = 1, 1, 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        tok = m.group(0)
        if not tok.isspace() and not tok.startswith(("//", "/*")):
            yield tok, f"{path}:{line}:{col}"
        nl = tok.count("\n")
        if nl:
            line += nl
            col = len(tok) - tok.rfind("\n")
        else:
            col += len(tok)
        pos = m.end()


def parse_verilog(text: str, path: str):
    """Returns (name, inputs, outputs, gates, aliases); gates are (type, out, [in], where)."""
    toks = list(tokens(text, path))
    i = 0

    def where():
        return toks[i][1] if i < len(toks) else f"{path}: at end of file"

    def expect(t):
        nonlocal i
        if i >= len(toks) or toks[i][0] != t:
            got = toks[i][0] if i < len(toks) else "end of file"
            raise NetlistError(f"{where()}: expected '{t}', got '{got}'")
        i += 1

    def name_list(end):
        nonlocal i
        names = []
        while True:
            if i >= len(toks) or not re.match(r"[A-Za-z_\\]|1'[bB][01]$", toks[i][0]):
                raise NetlistError(f"{where()}: expected a signal name")
            names.append(toks[i][0])
            i += 1
            if i < len(toks) and toks[i][0] == ",":
                i += 1
                continue
            expect(end)
            return names

    expect("module")
    if i >= len(toks):
        raise NetlistError(f"{where()}: expected the module name")
    name = toks[i][0]
    i += 1
    if toks[i][0] == "(":
        i += 1
        name_list(")")
    expect(";")
    inputs, outputs, gates, aliases = [], [], [], {}
    while True:
        if i >= len(toks):
            raise NetlistError(f"{path}: missing 'endmodule'")
        kw, at = toks[i]
        i += 1
        if kw == "endmodule":
            break
        if kw in ("input", "output", "wire"):
            if i < len(toks) and toks[i][0].startswith("["):
                raise NetlistError(f"{toks[i][1]}: vectors are not supported")
            names = name_list(";")
            (inputs if kw == "input" else outputs if kw == "output" else []).extend(names)
        elif kw in GATES:
            if toks[i][0] != "(":  # an instance name
                i += 1
            expect("(")
            pins = name_list(")")
            expect(";")
            if len(pins) < 2 or (kw in ("not", "buf") and len(pins) != 2):
                raise NetlistError(f"{at}: gate '{kw}' with {len(pins) - 1} inputs")
            gates.append((kw, pins[0], pins[1:], at))
        elif kw == "assign":
            lhs = name_list("=")
            rhs = name_list(";")
            if len(lhs) != 1 or len(rhs) != 1:
                raise NetlistError(f"{at}: only 'assign a = b;' is supported")
            aliases[lhs[0]] = (rhs[0], at)
        else:
            raise NetlistError(f"{at}: unsupported statement '{kw}'")
    return name, inputs, outputs, gates, aliases


BENCH_TYPES = {
    "AND": "and",
    "NAND": "nand",
    "OR": "or",
    "NOR": "nor",
    "XOR": "xor",
    "XNOR": "xnor",
    "NOT": "not",
    "BUFF": "buf",
    "BUF": "buf",
}
BENCH_LINE = re.compile(
    r"\s*(?:(INPUT|OUTPUT)\s*\(\s*([^\s()]+)\s*\)|([^\s=()]+)\s*=\s*"
    r"([A-Za-z]+)\s*\(([^()]*)\))\s*$"
)


def parse_bench(text: str, path: str):
    """An ISCAS .bench netlist; returns what parse_verilog does (no aliases)."""
    inputs, outputs, gates = [], [], []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        col = len(line) - len(line.lstrip()) + 1
        at = f"{path}:{n}:{col}"
        m = BENCH_LINE.match(line)
        if not m:
            raise NetlistError(f"{at}: expected 'INPUT(s)', 'OUTPUT(s)' or 's = TYPE(a, ...)'")
        if m.group(1):
            (inputs if m.group(1) == "INPUT" else outputs).append(m.group(2))
            continue
        typ = BENCH_TYPES.get(m.group(4).upper())
        if typ is None:
            where = f"{path}:{n}:{m.start(4) + 1}"
            raise NetlistError(
                f"{where}: unsupported gate type '{m.group(4)}' (combinational "
                "gates only: " + " ".join(sorted(BENCH_TYPES)) + ")"
            )
        ins = [x.strip() for x in m.group(5).split(",")]
        if not all(ins) or (typ in ("not", "buf") and len(ins) != 1):
            raise NetlistError(f"{at}: gate '{m.group(4)}' with inputs '{m.group(5)}'")
        gates.append((typ, m.group(3), ins, at))
    return Path(path).stem, inputs, outputs, gates, {}


# Static CMOS: the inverting stage a gate type is built from, and whether an inverter follows.
STAGES = {
    "and": ("nand", True),
    "or": ("nor", True),
    "buf": ("not", True),
    "nand": ("nand", False),
    "nor": ("nor", False),
    "not": ("not", False),
    "xor": ("xor", False),
    "xnor": ("xnor", False),
}


def cmos_stages(gates):
    """The gates split into static CMOS stages (STAGES), each a gate of its own: a
    non-inverting gate becomes its inverting stage, driving a new internal signal, and an
    inverter driving the gate's output.  XOR and XNOR stay one (complex) stage."""
    out = []
    for typ, sig, ins, at in gates:
        first, inverter = STAGES[typ]
        if inverter:
            mid = f"{sig}$stage"
            out += [(first, mid, ins, at), ("not", sig, [mid], at)]
        else:
            out.append((typ, sig, ins, at))
    return out


class CMOS:
    """The static CMOS stages of one gate, each a channel-connected component (CCC): the
    pull-up and pull-down networks that drive one node.  A stage is a subcircuit of its own,
    a list of (type, out, ins, where) gates whose last drives the stage's node; `transistors`
    counts, per stage, 2 per input of an inverting gate (a pull-up and a pull-down device)
    and 8 for the AOI22 stage of an XOR.  No stage stacks more than `max_fanin` transistors
    in series: a wider AND or OR becomes a tree of NAND and NOR stages, as a designer splits
    it (AND(a..e) = NOR(NAND(a, b, c), NAND(d, e)) for max_fanin 4)."""

    def __init__(self, out: str, at: str, max_fanin: int):
        self.out, self.at, self.max_fanin = out, at, max_fanin
        self.stages, self.transistors, self.n = [], [], 0

    def fresh(self) -> str:
        self.n += 1
        return f"{self.out}$c{self.n}"

    def stage(self, typ: str, ins: list) -> str:
        """One inverting stage (NOT, NAND or NOR) driving a new node."""
        out = self.fresh()
        typ = "not" if len(ins) == 1 else typ  # a one-input NAND or NOR is an inverter
        return self.complex_stage([(typ, out, ins, self.at)], 2 * len(ins))

    def complex_stage(self, gates: list, transistors: int) -> str:
        """One stage modelled by several gates; the last one's output is the stage's node."""
        self.stages.append(gates)
        self.transistors.append(transistors)
        return gates[-1][1]

    def groups(self, sigs: list) -> list:
        """`sigs` in the fewest groups of at most max_fanin, sizes as even as possible."""
        k = -(-len(sigs) // self.max_fanin)
        size, extra = divmod(len(sigs), k)
        out, i = [], 0
        for j in range(k):
            n = size + (j < extra)
            out.append(sigs[i : i + n])
            i += n
        return out

    def inv(self, a: str) -> str:
        return self.stage("not", [a])

    def nand(self, sigs: list) -> str:  # NAND(all) = OR of the groups' NANDs
        if len(sigs) <= self.max_fanin:
            return self.stage("nand", sigs)
        return self.or_([self.nand(g) for g in self.groups(sigs)])

    def nor(self, sigs: list) -> str:  # NOR(all) = AND of the groups' NORs
        if len(sigs) <= self.max_fanin:
            return self.stage("nor", sigs)
        return self.and_([self.nor(g) for g in self.groups(sigs)])

    def and_(self, sigs: list) -> str:  # AND(all) = NOR of the groups' NANDs
        if len(sigs) <= self.max_fanin:
            return self.inv(self.nand(sigs))
        return self.nor([self.nand(g) for g in self.groups(sigs)])

    def or_(self, sigs: list) -> str:  # OR(all) = NAND of the groups' NORs
        if len(sigs) <= self.max_fanin:
            return self.inv(self.nor(sigs))
        return self.nand([self.nor(g) for g in self.groups(sigs)])

    def xor2(self, a: str, b: str, xnor: bool = False) -> str:
        """The 12-transistor static CMOS XOR: an inverter per input, then one AOI22 stage,
        XOR = NOT(a b + a' b') and XNOR = NOT(a b' + a' b); the AOI22's series pairs are
        modelled as AND gates inside the stage."""
        na, nb = self.inv(a), self.inv(b)
        p, q, out = self.fresh(), self.fresh(), self.fresh()
        pairs = [(a, nb), (na, b)] if xnor else [(a, b), (na, nb)]
        gates = [
            ("and", p, list(pairs[0]), self.at),
            ("and", q, list(pairs[1]), self.at),
            ("nor", out, [p, q], self.at),
        ]
        return self.complex_stage(gates, 8)

    def gate(self, typ: str, ins: list) -> None:
        """Expands one gate into its stages; the last one drives the gate's output."""
        if typ in ("xor", "xnor"):  # wider ones: a chain of two-input XORs
            x = ins[0]
            for k, b in enumerate(ins[1:]):
                x = self.xor2(x, b, xnor=typ == "xnor" and k == len(ins) - 2)
        else:
            build = {
                "and": self.and_,
                "nand": self.nand,
                "or": self.or_,
                "nor": self.nor,
                "not": lambda s: self.inv(s[0]),
                "buf": lambda s: self.inv(self.inv(s[0])),
            }[typ]
            x = build(list(ins))
        last = self.stages[-1]  # the stage that drives x, named after the gate's output
        last[-1] = last[-1][:1] + (self.out,) + last[-1][2:]


def ccc_stages(gates, max_fanin: int):
    """The gates as static CMOS stages (CMOS): ([subcircuit gates], [transistors])."""
    subs, transistors = [], []
    for typ, out, ins, at in gates:
        cmos = CMOS(out, at, max_fanin)
        cmos.gate(typ, ins)
        subs += cmos.stages
        transistors += cmos.transistors
    return subs, transistors


def build(name, inputs, outputs, gates, aliases, path, grain="gate", max_fanin=4):
    """One subcircuit per gate, per CMOS stage (`stage`) or per CCC (`ccc`), in topological
    order; returns (netlist text, subcircuits, transistors or None)."""
    transistors = None
    if grain == "ccc":
        subs, transistors = ccc_stages(gates, max_fanin)
    else:
        subs = [[g] for g in (cmos_stages(gates) if grain == "stage" else gates)]
    return assemble(name, inputs, outputs, subs, aliases, path), len(subs), transistors


def assemble(name, inputs, outputs, subs, aliases, path):
    """The netlist text of subcircuits `subs` (lists of (type, out, ins, where) gates whose
    last drives the subcircuit's output), numbered in depth-first topological order."""

    def resolve(s, at, seen=()):
        if s in aliases:
            if s in seen:
                raise NetlistError(f"{at}: assignments form a loop through '{s}'")
            return resolve(aliases[s][0], aliases[s][1], seen + (s,))
        return s

    consts = sorted(
        {
            s
            for s in [a for a, _ in aliases.values()]
            + [x for sub in subs for g in sub for x in g[2]]
            if re.match(r"1'[bB][01]$", s)
        }
    )
    driver, internal = {}, set()
    for k, sub in enumerate(subs):
        for typ, out, ins, at in sub:
            if out in driver or out in internal or out in inputs:
                raise NetlistError(f"{at}: signal '{out}' has two drivers")
            internal.add(out)
        internal.discard(sub[-1][1])
        driver[sub[-1][1]] = k
    # a subcircuit's inputs: its gates' inputs that no earlier gate of it drives
    external = []
    for sub in subs:
        ins, own = [], set()
        for typ, out, gins, at in sub:
            ins += [(x, at) for x in gins if x not in own]
            own.add(out)
        external.append(ins)
    sig = {s: n for n, s in enumerate(inputs + consts)}
    order, state = [], {}

    def visit(k):  # depth-first topological order, iterative (deep circuits)
        stack = [(k, 0)]
        while stack:
            g, j = stack.pop()
            ins = external[g]
            out, at = subs[g][-1][1], subs[g][-1][3]
            if j == 0:
                if state.get(g) == 2:
                    continue
                if state.get(g) == 1:
                    raise NetlistError(f"{at}: combinational loop through '{out}'")
                state[g] = 1
            if j < len(ins):
                stack.append((g, j + 1))
                s = resolve(ins[j][0], ins[j][1])
                if s in sig:  # a primary input or a constant
                    continue
                if s not in driver:
                    raise NetlistError(f"{ins[j][1]}: signal '{ins[j][0]}' has no driver")
                if state.get(driver[s]) == 1:
                    raise NetlistError(f"{ins[j][1]}: combinational loop through '{s}'")
                if state.get(driver[s]) != 2:
                    stack.append((driver[s], 0))
            else:
                state[g] = 2
                order.append(g)

    for k in range(len(subs)):
        visit(k)
    for k in order:
        for g in subs[k]:
            sig[g[1]] = len(sig)
    outs = []
    for o in outputs:
        s = resolve(o, path)
        if s not in sig or s in internal:
            raise NetlistError(f"{path}: output '{o}' has no driver")
        outs.append(sig[s])
    body = [
        [(g[0], sig[g[1]], [sig[resolve(x, g[3])] for x in g[2]]) for g in subs[k]] for k in order
    ]
    ties = [(sig[c], int(c[-1])) for c in consts]
    return render(name, len(sig), [sig[s] for s in inputs], outs, body, ties)


def render(name, nsig, ins, outs, subs, ties=()) -> str:
    lines = [
        "cswec-netlist 1 " + name,
        f"signals {nsig} inputs {len(ins)} outputs {len(outs)} subcircuits {len(subs)} "
        f"ties {len(ties)}",
        "in " + " ".join(map(str, ins)),
        "out " + " ".join(map(str, outs)),
    ]
    lines += [f"tie {s} {v}" for s, v in ties]
    for sub in subs:
        lines.append(f"sub {len(sub)}")
        for typ, out, gins in sub:
            lines.append(f"gate {typ} {out} {len(gins)} " + " ".join(map(str, gins)))
    return "\n".join(lines) + "\n"


def regfile(regs: int, bits: int) -> str:
    """The read port of a register file: `regs` registers of `bits` bits (primary inputs)
    and a log2(regs)-bit address; a decoder (small subcircuits: address inverters and one
    AND per register) and, per bit, an AND-OR multiplexer over the registers (one large
    subcircuit per bit: regs AND gates and an OR tree)."""
    abits = max(1, (regs - 1).bit_length())
    nsig = 0

    def new():
        nonlocal nsig
        nsig += 1
        return nsig - 1

    data = [[new() for _ in range(bits)] for _ in range(regs)]
    addr = [new() for _ in range(abits)]
    ins = [s for row in data for s in row] + addr
    subs = []
    inv = []
    for a in addr:
        o = new()
        subs.append([("not", o, [a])])
        inv.append(o)
    select = []
    for r in range(regs):
        o = new()
        subs.append([("and", o, [addr[b] if r >> b & 1 else inv[b] for b in range(abits)])])
        select.append(o)
    outs = []
    for b in range(bits):
        gates, level = [], []
        for r in range(regs):
            o = new()
            gates.append(("and", o, [select[r], data[r][b]]))
            level.append(o)
        while len(level) > 1:  # an OR tree of 2-input gates
            nxt = []
            for k in range(0, len(level) - 1, 2):
                o = new()
                gates.append(("or", o, [level[k], level[k + 1]]))
                nxt.append(o)
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        if not gates or gates[-1][1] != level[0]:
            gates.append(("buf", new(), [level[0]]))
        subs.append(gates)
        outs.append(gates[-1][1])
    return render(f"regfile{regs}x{bits}", nsig, ins, outs, subs)


def regfile_ccc(regs: int, bits: int, max_fanin: int = 4):
    """REGFILE at the ccc grain: regfile's read port in static CMOS and transmission gates,
    one subcircuit per channel-connected component.  An inverter per address bit; per
    register, its select line sel = AND of the address literals (CMOS.and_), with sel' the
    NAND stage's output when the AND fits one stack, else an inverter of sel; per bit, one
    large CCC: every register's cell inverter (the register bit, a primary input, drives it)
    and the transmission gate (NMOS gated by sel, PMOS by sel') joining it to the bit line,
    modelled as gates (the inverted bit passes when sel or not sel'; the bit line is the OR
    of what passes); then an inverter restoring the bit.  Returns (text, subcircuits,
    transistors)."""
    abits = max(1, (regs - 1).bit_length())
    data = [[f"d{r}_{b}" for b in range(bits)] for r in range(regs)]
    addr = [f"a{i}" for i in range(abits)]
    subs, transistors = [], []

    def take(cmos):
        subs.extend(cmos.stages)
        transistors.extend(cmos.transistors)

    cmos = CMOS("na", "regfile", max_fanin)
    inv = [cmos.inv(a) for a in addr]
    take(cmos)
    sel, selb = [], []
    for r in range(regs):
        cmos = CMOS(f"sel{r}", "regfile", max_fanin)
        lits = [addr[i] if r >> i & 1 else inv[i] for i in range(abits)]
        if len(lits) <= max_fanin:
            nb = cmos.nand(lits)
            s = cmos.inv(nb)
        else:
            s = cmos.and_(lits)
            nb = cmos.inv(s)
        take(cmos)
        sel.append(s)
        selb.append(nb)
    outs = []
    for b in range(bits):
        gates, level = [], []
        for r in range(regs):
            n, p, on, t = (f"bl{b}$n{r}", f"bl{b}$p{r}", f"bl{b}$on{r}", f"bl{b}$t{r}")
            gates += [
                ("not", n, [data[r][b]], "regfile"),
                ("not", p, [selb[r]], "regfile"),
                ("or", on, [sel[r], p], "regfile"),
                ("and", t, [n, on], "regfile"),
            ]
            level.append(t)
        k = 0
        while len(level) > 1:  # the bit line: an OR tree of 2-input gates
            nxt = []
            for i in range(0, len(level) - 1, 2):
                k += 1
                gates.append(("or", f"bl{b}$or{k}", [level[i], level[i + 1]], "regfile"))
                nxt.append(gates[-1][1])
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        subs.append(gates)
        transistors.append(4 * regs)  # a cell inverter and a transmission gate per register
        subs.append([("not", f"q{b}", [level[0]], "regfile")])
        transistors.append(2)
        outs.append(f"q{b}")
    ins = [x for row in data for x in row] + addr
    text = assemble(f"regfile{regs}x{bits}", ins, outs, subs, {}, "regfile")
    return text, len(subs), transistors


def iscas_path(name: str) -> Path:
    spec = importlib.util.find_spec("circuitgraph")
    if spec is None or not spec.submodule_search_locations:
        raise NetlistError(
            "the Python package circuitgraph is not installed "
            "(scripts/bootstrap.sh installs it into .venv)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "netlists" / f"{name}.v"
    if not path.exists():
        raise NetlistError(f"circuitgraph ships no netlist '{name}' ({path})")
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verilog")
    v.add_argument("file", type=Path)
    i = sub.add_parser("iscas")
    i.add_argument("name")
    b = sub.add_parser("bench")
    b.add_argument("file", type=Path)
    r = sub.add_parser("regfile")
    r.add_argument("--regs", type=int, default=32)
    r.add_argument("--bits", type=int, default=32)
    for p in (v, i, b, r):
        p.add_argument("-o", "--output", type=Path, required=True)
        p.add_argument(
            "--grain",
            choices=["gate", "stage", "ccc"],
            default=None,
            help="a subcircuit per gate (the default), per static CMOS stage, or "
            "per channel-connected component of the transistor netlist",
        )
        p.add_argument(
            "--max-fanin",
            type=int,
            default=4,
            help="ccc: the most transistors in series in one stage (default 4)",
        )
        p.add_argument(
            "--summary",
            action="store_true",
            help="print the subcircuit count (and, at ccc, the transistors)",
        )
    for p in (v, i, b):
        p.add_argument("--stages", action="store_true", help="the same as --grain stage")
    args = ap.parse_args(argv)
    grain = args.grain or ("stage" if getattr(args, "stages", False) else "gate")
    try:
        if getattr(args, "stages", False) and grain != "stage":
            raise NetlistError(f"--stages contradicts --grain {grain}")
        if not 2 <= args.max_fanin <= 64:
            raise NetlistError("--max-fanin must be in [2, 64]")
        if args.cmd == "regfile":
            if not (2 <= args.regs <= 1024 and 1 <= args.bits <= 1024):
                raise NetlistError("regfile: --regs must be in [2, 1024], --bits in [1, 1024]")
            if grain == "ccc":
                text, nsubs, transistors = regfile_ccc(args.regs, args.bits, args.max_fanin)
            elif grain == "gate":
                text, nsubs, transistors = regfile(args.regs, args.bits), None, None
            else:
                raise NetlistError("regfile: --grain gate (bit slices) or ccc")
        else:
            path = args.file if args.cmd != "iscas" else iscas_path(args.name)
            try:
                src = path.read_text()
            except OSError as exc:
                raise NetlistError(f"{path}: {exc.strerror}") from None
            parse = parse_bench if args.cmd == "bench" else parse_verilog
            text, nsubs, transistors = build(
                *parse(src, str(path)), str(path), grain=grain, max_fanin=args.max_fanin
            )
        args.output.write_text(text)
    except NetlistError as exc:
        print(
            f"netlist.py: {exc}" if not str(exc).startswith(("/", ".")) else str(exc),
            file=sys.stderr,
        )
        return 1
    if args.summary:
        head = text.split("\n", 2)[1].split()
        nsubs = int(head[head.index("subcircuits") + 1])
        line = f"{text.split()[2]}: {nsubs} subcircuits at the {grain} grain"
        if transistors is not None:
            line += f", {sum(transistors)} transistors (static CMOS)"
        print(line + f", {head[head.index('inputs') + 1]} primary inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
