"""Long expressions in a .perf interface parse in linear time: a node's depth is computed from
its children, not by walking the chain of operators that ends at it (which made an n-term sum
cost n^2/2 steps: 8000 terms took 12 s).  The depth, which the nesting limit checks, is the
same as the chain-walking definition."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from mprof.errors import MprofError
from mprof.iface import parse_interface
from mprof.iface.expr import MAX_DEPTH, BinOp, Call, Expr, Neg

ROOT = Path(__file__).resolve().parents[2]
PIPE = (ROOT / "benchmarks/pipe/pipe.perf").read_text()


def with_comp(expression: str) -> str:
    assert "Comp = M * T;" in PIPE
    return PIPE.replace("Comp = M * T;", f"Comp = {expression};")


def chain_depth(node: Expr) -> int:
    """The depth by its definition: one more than the deepest operand of the chain."""
    if isinstance(node, BinOp):
        first, rest = node.chain()
        return max([chain_depth(first), *(chain_depth(r) for _, r in rest)]) + 1
    if isinstance(node, Neg):
        return chain_depth(node.operand) + 1
    if isinstance(node, Call):
        return max(chain_depth(a) for a in node.args) + max((len(node.args) - 1).bit_length(), 1)
    return 1


def random_expression(rng: random.Random, size: int) -> str:
    if size <= 1:
        return rng.choice(["M", "T", "N", "2", "0.5"])
    left = rng.randint(1, size - 1)
    a, b = random_expression(rng, left), random_expression(rng, size - left)
    form = rng.randrange(6)
    if form == 4:
        return f"-({a})"
    if form == 5:
        return f"max({a}, {b})"
    return f"{a} {'+-*/'[form]} ({b})" if rng.random() < 0.3 else f"{a} {'+-*/'[form]} {b}"


def comp_expression(text: str) -> Expr:
    iface = parse_interface(text, "long.perf")
    return next(t for t in iface.terms if t.name == "Comp").expr


@pytest.mark.parametrize("seed", range(40))
def test_depth_is_the_chain_definition(seed):
    rng = random.Random(seed)
    # trees of up to 60 leaves nest at most 60 deep, within the parser's limit of 100
    expr = comp_expression(with_comp(random_expression(rng, rng.randint(2, 60))))
    stack = [expr]
    while stack:
        node = stack.pop()
        assert node.depth == chain_depth(node), node
        stack.extend(node.children())


def test_mixed_chains_keep_their_depth():
    expr = comp_expression(with_comp("M * T + M * T - N / 2 + (M + T) * N"))
    assert expr.depth == chain_depth(expr) == 4


def test_the_nesting_limit_is_unchanged():
    deep = "M" + " * (M" * (MAX_DEPTH // 2) + ")" * (MAX_DEPTH // 2)
    comp_expression(with_comp(deep))  # within the limit
    too_deep = "M" + " * (M" * MAX_DEPTH + ")" * MAX_DEPTH
    with pytest.raises(MprofError, match=f"nested too deeply \\(limit {MAX_DEPTH}\\)"):
        comp_expression(with_comp(too_deep))


def test_a_sum_of_20000_terms_checks_in_linear_time(tmp_path):
    """Quadratic, this took minutes (8000 terms: 12 s); linear, well under a second of
    parsing.  The generous timeout only fails the quadratic version."""
    perf = tmp_path / "long.perf"
    perf.write_text(with_comp("M" + " + M" * 20000))
    proc = subprocess.run(
        [sys.executable, "-m", "mprof", "iface", "check", str(perf)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    expr = comp_expression(perf.read_text())
    assert expr.depth == 2 and len(list(expr.refs())) == 20001
