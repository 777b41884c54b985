"""Term definitions as C expressions: the one emitter behind the hook generator (codegen.py:
each term a function of the statistics record) and `mprof model export-c` (each category's
cost from an array of statistics).

Both print the same expression trees the Python evaluator walks (Expr.to_c), so C and Python
compute the same doubles; they differ only in how a statistic is read and how another term's
value is named, which the caller says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .expr import STATISTIC, Expr

Spell = Callable[[str], str]  # a statistic's or a term's name -> its C text


def c_expression(expr: Expr, statistic: Spell, term: Spell) -> str:
    """`expr` as a C double expression: `statistic(name)` reads a statistic (as a double),
    `term(name)` is another term's value."""
    return expr.to_c(lambda ref: statistic(ref.name) if ref.kind == STATISTIC else term(ref.name))


def term_expressions(iface, statistic: Spell, term: Spell) -> dict[str, str]:
    """Each term's own definition as a C expression (terms it uses through `term`)."""
    return {t.name: c_expression(t.expr, statistic, term) for t in iface.terms}


def term_definitions(
    iface, names: Iterable[str], statistic: Spell, term: Spell
) -> list[tuple[str, str]]:
    """(C name, C expression) of the terms `names` and every term they use, each once,
    dependencies first: straight-line code that defines `term(name)` for each of them."""
    out, emitted = [], set()
    for name in names:
        wanted = iface.term(name)
        for dep in wanted.plan or [wanted]:  # dependencies first, the term itself last
            if dep.name not in emitted:
                emitted.add(dep.name)
                out.append((term(dep.name), c_expression(dep.expr, statistic, term)))
    return out
