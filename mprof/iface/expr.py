"""Expression trees of term definitions.

The same tree is evaluated in Python (by the fitter) and printed as C (by the hook
generator), so both follow IEEE double arithmetic: statistics are converted to double,
division by zero gives an infinity or NaN, log2/sqrt outside their domain give -inf/NaN,
and min/max ignore a NaN operand like C's fmin/fmax.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

# Deepest nesting accepted: parentheses, unary minus, function calls.  A run of one
# precedence's operators (`a + b - c + ...`, `a * b / c ...`) is one level however long it is:
# it is evaluated and printed by a loop, and C reads it without brackets, left to right like
# the tree.  An n-ary min/max counts as log2(n) levels: it becomes a balanced tree of fmin/fmax
# calls, in C and in Python alike.  Evaluation and printing recurse over real nesting only,
# which the limit keeps far from Python's recursion limit and a C compiler's bracket limit.
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


def _balanced(items: list, combine):
    """combine() over items as a balanced tree: the first half's result with the second's."""
    if len(items) == 1:
        return items[0]
    half = (len(items) + 1) // 2
    return combine(_balanced(items[:half], combine), _balanced(items[half:], combine))


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
    """`left op right`.  A left operand of the same precedence continues a chain (`a + b - c`
    is ((a + b) - c)); chains are walked by loops, never by recursion, so a flat sum of
    thousands of statistics costs one level of depth."""

    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, line: int = 0, column: int = 0):
        self.op, self.left, self.right = op, left, right
        self.line, self.column = line, column
        # The depth is one more than the deepest operand of the chain ending here.  Computed
        # from the children (not by walking the chain, which made building an n-term chain
        # cost n^2/2 steps): a left operand that continues the chain already counts its
        # operands plus one, a left operand of another precedence is one operand.
        if isinstance(left, BinOp) and left.prec == self.prec:
            self.depth = max(left.depth, right.depth + 1)
        else:
            self.depth = max(left.depth, right.depth) + 1

    @property
    def prec(self):
        return PRECEDENCE[self.op]

    def chain(self) -> tuple[Expr, list[tuple[str, Expr]]]:
        """(first operand, [(op, operand), ...]) of the run of this precedence's operators
        that ends here, left to right."""
        rest = []
        node: Expr = self
        while isinstance(node, BinOp) and node.prec == self.prec:
            rest.append((node.op, node.right))
            node = node.left
        rest.reverse()
        return node, rest

    def children(self):
        return (self.left, self.right)

    def evaluate(self, lookup):
        first, rest = self.chain()
        value = first.evaluate(lookup)
        for op, operand in rest:
            value = _BINARY[op](value, operand.evaluate(lookup))
        return value

    def to_c(self, render):
        # C's + - * / are left-associative: the chain needs no brackets inside
        first, rest = self.chain()
        parts = [first.to_c(render)]
        for op, operand in rest:
            parts.append(f"{op} {operand.to_c(render)}")
        return f"({' '.join(parts)})"

    def to_text(self):
        # Parenthesise only where needed to read back as the same (left-associative) tree.
        first, rest = self.chain()
        text = first.to_text()
        if first.prec < self.prec:
            text = f"({text})"
        parts = [text]
        for op, operand in rest:
            right = operand.to_text()
            if operand.prec <= self.prec:
                right = f"({right})"
            parts.append(f"{op} {right}")
        return " ".join(parts)

    def key(self):
        first, rest = self.chain()
        return (
            "bin",
            PRECEDENCE[self.op],
            first.key(),
            tuple((op, operand.key()) for op, operand in rest),
        )


class Call(Expr):
    __slots__ = ("func", "args")

    def __init__(self, func: str, args: list[Expr], line: int = 0, column: int = 0):
        self.func, self.args = func, list(args)
        self.line, self.column = line, column
        # min/max of k arguments are a balanced tree of two-argument calls, in C and here:
        # ceil(log2 k) levels (a C compiler limits bracket nesting, clang to 256).
        self.depth = max(a.depth for a in self.args) + max((len(self.args) - 1).bit_length(), 1)

    def children(self):
        return tuple(self.args)

    def evaluate(self, lookup):
        values = [a.evaluate(lookup) for a in self.args]
        if self.func == "log2":
            return _log2(values[0])
        if self.func == "sqrt":
            return _sqrt(values[0])
        return _balanced(values, _fmin if self.func == "min" else _fmax)

    def to_c(self, render):
        cname = FUNCTIONS[self.func][2]
        args = [a.to_c(render) for a in self.args]
        if len(args) == 1:
            return f"{cname}({args[0]})"
        # min/max of more than two values: a balanced tree, exactly like evaluate()
        return _balanced(args, lambda a, b: f"{cname}({a}, {b})")

    def to_text(self):
        return f"{self.func}({', '.join(a.to_text() for a in self.args)})"

    def key(self):
        return ("call", self.func, tuple(a.key() for a in self.args))
