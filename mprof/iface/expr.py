"""Expression trees of term definitions.

The same tree is evaluated in Python (by the fitter) and printed as C (by the hook
generator), so both follow IEEE double arithmetic: statistics are converted to double,
division by zero gives an infinity or NaN, log2/sqrt outside their domain give -inf/NaN,
and min/max ignore a NaN operand like C's fmin/fmax.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

# Deepest expression tree accepted.  Evaluation and printing recurse over the tree, so the
# limit keeps them far from Python's recursion limit; real cost terms are a few levels deep.
MAX_DEPTH = 100

# name -> (minimum arguments, maximum arguments or None for "any", C function)
FUNCTIONS = {
    "log2": (1, 1, "log2"),
    "sqrt": (1, 1, "sqrt"),
    "min": (2, None, "fmin"),
    "max": (2, None, "fmax"),
}

# Binary operators and their precedence (higher binds tighter); all are left-associative.
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_UNARY_PREC = 3
_ATOM_PREC = 4

# What a name in an expression refers to, set by the checker.
STATISTIC = "statistic"
TERM = "term"


def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _log2(x: float) -> float:
    if math.isnan(x) or x < 0.0:
        return math.nan
    if x == 0.0:
        return -math.inf
    return math.log2(x)


def _sqrt(x: float) -> float:
    if math.isnan(x) or x < 0.0:
        return math.nan
    return math.sqrt(x)


def _fmin(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a <= b else b


def _fmax(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a >= b else b


_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
}


class Expr:
    """Base of expression nodes.  `line`/`column` locate the node in its .perf file."""

    __slots__ = ("line", "column", "depth")
    prec = _ATOM_PREC

    def evaluate(self, lookup: Callable[[Ref], float]) -> float:
        raise NotImplementedError

    def to_c(self, render: Callable[[Ref], str]) -> str:
        raise NotImplementedError

    def to_text(self) -> str:
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        return ()

    def refs(self) -> Iterator[Ref]:
        """Every name reference, left to right."""
        stack: list[Expr] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Ref):
                yield node
            stack.extend(reversed(node.children()))

    def key(self):
        """A structural value for comparing trees independently of source positions."""
        raise NotImplementedError

    def __str__(self):
        return self.to_text()

    def __repr__(self):
        return f"<{type(self).__name__} {self.to_text()}>"


class Num(Expr):
    __slots__ = ("value", "text")

    def __init__(self, value: float, text: str, line: int = 0, column: int = 0):
        self.value = float(value)
        self.text = text
        self.line, self.column, self.depth = line, column, 1

    def evaluate(self, lookup):
        return self.value

    def to_c(self, render):
        # repr() is the shortest text that reads back as the same double, in C as in Python.
        text = repr(self.value)
        if not any(c in text for c in ".e"):
            text += ".0"
        return text

    def to_text(self):
        return self.text

    def key(self):
        return ("num", self.value)


class Ref(Expr):
    """A statistic or term name; `kind` (STATISTIC or TERM) is filled in by the checker."""

    __slots__ = ("name", "kind")

    def __init__(self, name: str, line: int = 0, column: int = 0):
        self.name = name
        self.kind: str | None = None
        self.line, self.column, self.depth = line, column, 1

    def evaluate(self, lookup):
        return lookup(self)

    def to_c(self, render):
        return render(self)

    def to_text(self):
        return self.name

    def key(self):
        return ("ref", self.name)


class Neg(Expr):
    __slots__ = ("operand",)
    prec = _UNARY_PREC

    def __init__(self, operand: Expr, line: int = 0, column: int = 0):
        self.operand = operand
        self.line, self.column = line, column
        self.depth = operand.depth + 1

    def children(self):
        return (self.operand,)

    def evaluate(self, lookup):
        return -self.operand.evaluate(lookup)

    def to_c(self, render):
        return f"(-{self.operand.to_c(render)})"

    def to_text(self):
        inner = self.operand.to_text()
        if self.operand.prec < _UNARY_PREC:
            inner = f"({inner})"
        return f"-{inner}"

    def key(self):
        return ("neg", self.operand.key())


class BinOp(Expr):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, line: int = 0, column: int = 0):
        self.op, self.left, self.right = op, left, right
        self.line, self.column = line, column
        self.depth = max(left.depth, right.depth) + 1

    @property
    def prec(self):
        return PRECEDENCE[self.op]

    def children(self):
        return (self.left, self.right)

    def evaluate(self, lookup):
        return _BINARY[self.op](self.left.evaluate(lookup), self.right.evaluate(lookup))

    def to_c(self, render):
        return f"({self.left.to_c(render)} {self.op} {self.right.to_c(render)})"

    def to_text(self):
        # Parenthesise only where needed to read back as the same (left-associative) tree.
        left = self.left.to_text()
        if self.left.prec < self.prec:
            left = f"({left})"
        right = self.right.to_text()
        if self.right.prec <= self.prec:
            right = f"({right})"
        return f"{left} {self.op} {right}"

    def key(self):
        return ("bin", self.op, self.left.key(), self.right.key())


class Call(Expr):
    __slots__ = ("func", "args")

    def __init__(self, func: str, args: list[Expr], line: int = 0, column: int = 0):
        self.func, self.args = func, list(args)
        self.line, self.column = line, column
        # min/max of k arguments become k - 1 nested calls in C: each counts as a level (a
        # C compiler limits bracket nesting, clang to 256).
        self.depth = max(a.depth for a in self.args) + max(len(self.args) - 1, 1)

    def children(self):
        return tuple(self.args)

    def evaluate(self, lookup):
        values = [a.evaluate(lookup) for a in self.args]
        if self.func == "log2":
            return _log2(values[0])
        if self.func == "sqrt":
            return _sqrt(values[0])
        combine = _fmin if self.func == "min" else _fmax
        result = values[0]
        for v in values[1:]:
            result = combine(result, v)
        return result

    def to_c(self, render):
        cname = FUNCTIONS[self.func][2]
        args = [a.to_c(render) for a in self.args]
        # min/max of more than two values nest left to right, exactly like evaluate().
        text = args[0]
        if len(args) == 1:
            return f"{cname}({text})"
        for a in args[1:]:
            text = f"{cname}({text}, {a})"
        return text

    def to_text(self):
        return f"{self.func}({', '.join(a.to_text() for a in self.args)})"

    def key(self):
        return ("call", self.func, tuple(a.key() for a in self.args))
