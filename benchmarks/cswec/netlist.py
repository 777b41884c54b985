#!/usr/bin/env python3
"""Netlists for CSWEC (benchmarks/cswec): reads a combinational gate-level Verilog module (the
ISCAS-85 circuits as the PyPI package circuitgraph ships them) or generates the 32-bit
register file REGFILE, and writes the simple text netlist cswec reads.

    netlist.py verilog FILE.v [--stages] -o OUT.net     a gate-level Verilog file
    netlist.py iscas NAME [--stages] -o OUT.net         circuitgraph's netlists/NAME.v (c2670...)
    netlist.py regfile [--regs 32] [--bits 32] -o OUT.net

The Verilog subset: one module; `input`, `output`, `wire` declarations; gate primitives
and, nand, or, nor, xor, xnor, not, buf with the output first; `assign a = b;` where b is a
signal or a constant 1'b0 / 1'b1.  Errors are
reported as `file:line:column: message`.

Output format (whitespace separated, one item per line):

    cswec-netlist 1 NAME
    signals S inputs I outputs O subcircuits K ties T
    in SIG...                      (I primary input signals)
    out SIG...                     (O primary output signals)
    tie SIG VALUE                  (T times: a constant 0 or 1, `assign x = 1'b0;`)
    sub G                          (K times, in topological order; then G gates:)
    gate TYPE OUT NIN IN...        (the last gate's output is the subcircuit's output)

Signals are numbered 0..S-1; every gate output is a distinct signal.  A subcircuit's gates
are in evaluation order and only its last gate's output leaves it.  The ISCAS circuits get
one subcircuit per gate, or with --stages one per static CMOS stage (STAGES), the
channel-connected components of a transistor-level partition like the paper's: AND and OR
become NAND and NOR followed by an inverter, BUF two inverters, and each stage is a subcircuit
(C2670 of circuitgraph: 699 gates, 1030 stages; Wen 1995 partitions its C2670 into 2033
subcircuits); REGFILE groups each bit slice of its read multiplexer into
one large subcircuit (32 large among many small ones, as in Wen 1995, section 5.1.5).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

GATES = {"and", "nand", "or", "nor", "xor", "xnor", "not", "buf"}
TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|1'[bB][01]|[A-Za-z_\\][A-Za-z0-9_$\[\]\\.]*|[(),;=]|\S",
                   re.S)


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


# Static CMOS: the inverting stage a gate type is built from, and whether an inverter follows.
STAGES = {"and": ("nand", True), "or": ("nor", True), "buf": ("not", True),
          "nand": ("nand", False), "nor": ("nor", False), "not": ("not", False),
          "xor": ("xor", False), "xnor": ("xnor", False)}


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


def build(name, inputs, outputs, gates, aliases, path, stages=False):
    """One subcircuit per gate (per CMOS stage with `stages`), in topological order; returns
    the netlist text."""
    if stages:
        gates = cmos_stages(gates)
    def resolve(s, at, seen=()):
        if s in aliases:
            if s in seen:
                raise NetlistError(f"{at}: assignments form a loop through '{s}'")
            return resolve(aliases[s][0], aliases[s][1], seen + (s,))
        return s

    consts = sorted({s for s in [a for a, _ in aliases.values()] + [x for g in gates for x in g[2]]
                     if re.match(r"1'[bB][01]$", s)})
    driver = {}
    for k, (typ, out, ins, at) in enumerate(gates):
        if out in driver or out in inputs:
            raise NetlistError(f"{at}: signal '{out}' has two drivers")
        driver[out] = k
    sig = {s: n for n, s in enumerate(inputs + consts)}
    order, state = [], {}

    def visit(k):  # depth-first topological order, iterative (deep circuits)
        stack = [(k, 0)]
        while stack:
            g, j = stack.pop()
            typ, out, ins, at = gates[g]
            if j == 0:
                if state.get(g) == 2:
                    continue
                if state.get(g) == 1:
                    raise NetlistError(f"{at}: combinational loop through '{out}'")
                state[g] = 1
            if j < len(ins):
                stack.append((g, j + 1))
                s = resolve(ins[j], at)
                if s in sig:  # a primary input or a constant
                    continue
                if s not in driver:
                    raise NetlistError(f"{at}: signal '{ins[j]}' has no driver")
                if state.get(driver[s]) == 1:
                    raise NetlistError(f"{at}: combinational loop through '{s}'")
                if state.get(driver[s]) != 2:
                    stack.append((driver[s], 0))
            else:
                state[g] = 2
                order.append(g)

    for k in range(len(gates)):
        visit(k)
    for g in order:
        sig[gates[g][1]] = len(sig)
    outs = []
    for o in outputs:
        s = resolve(o, path)
        if s not in sig:
            raise NetlistError(f"{path}: output '{o}' has no driver")
        outs.append(sig[s])
    subs = [[(gates[g][0], sig[gates[g][1]], [sig[resolve(x, gates[g][3])] for x in gates[g][2]])]
            for g in order]
    ties = [(sig[c], int(c[-1])) for c in consts]
    return render(name, len(sig), [sig[s] for s in inputs], outs, subs, ties)


def render(name, nsig, ins, outs, subs, ties=()) -> str:
    lines = ["cswec-netlist 1 " + name,
             f"signals {nsig} inputs {len(ins)} outputs {len(outs)} subcircuits {len(subs)} "
             f"ties {len(ties)}",
             "in " + " ".join(map(str, ins)), "out " + " ".join(map(str, outs))]
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


def iscas_path(name: str) -> Path:
    spec = importlib.util.find_spec("circuitgraph")
    if spec is None or not spec.submodule_search_locations:
        raise NetlistError("the Python package circuitgraph is not installed "
                           "(scripts/bootstrap.sh installs it into .venv)")
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
    r = sub.add_parser("regfile")
    r.add_argument("--regs", type=int, default=32)
    r.add_argument("--bits", type=int, default=32)
    for p in (v, i, r):
        p.add_argument("-o", "--output", type=Path, required=True)
    for p in (v, i):
        p.add_argument("--stages", action="store_true",
                       help="a subcircuit per static CMOS stage instead of per gate")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "regfile":
            if not (2 <= args.regs <= 1024 and 1 <= args.bits <= 1024):
                raise NetlistError("regfile: --regs must be in [2, 1024], --bits in [1, 1024]")
            text = regfile(args.regs, args.bits)
        else:
            path = args.file if args.cmd == "verilog" else iscas_path(args.name)
            try:
                src = path.read_text()
            except OSError as exc:
                raise NetlistError(f"{path}: {exc.strerror}") from None
            text = build(*parse_verilog(src, str(path)), str(path), stages=args.stages)
        args.output.write_text(text)
    except NetlistError as exc:
        print(f"netlist.py: {exc}" if not str(exc).startswith(("/", ".")) else str(exc),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
