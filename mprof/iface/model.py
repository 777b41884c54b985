"""The checked model of one performance interface: what the hook generator emits as C and
what the fitter evaluates in Python.

Objects are built by the checker (`checker.build_interface`); every name in them has been
resolved, so evaluation can only fail on the caller's statistics, never on the interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import MprofError
from .expr import STATISTIC, Expr, Ref

# Statistic types: the C type of the record slot and the runtime's mp_stat_type tag.
STAT_TYPES = {
    "u64": ("uint64_t", "MP_STAT_U64"),
    "i64": ("int64_t", "MP_STAT_I64"),
    "double": ("double", "MP_STAT_F64"),
}
DEFAULT_TYPE = "u64"


@dataclass(eq=False)
class Statistic:
    name: str
    type: str
    description: str
    line: int = 0
    column: int = 0
    # A measurement (a time, or a count that depends on timing, like idle cycles) rather than
    # a count fixed by the program and its input: never compared exactly (mprof gate).
    measured: bool = False
    # Bound to a PAPI event (`papi EVENT`, docs/papi.md): the runtime reads the counter around
    # every fiber of the module's access categories; absent from a run profile when the
    # counter could not be read there.
    papi_event: str | None = None

    @property
    def c_type(self) -> str:
        return STAT_TYPES[self.type][0]

    @property
    def c_tag(self) -> str:
        return STAT_TYPES[self.type][1]


@dataclass(eq=False)
class Term:
    """A linear component of a category's cost; it gets one free parameter `module:name`.

    A statistic named directly in a category is a term too (`is_statistic`), whose
    expression is the statistic itself."""

    name: str
    description: str
    expr: Expr
    category: str
    line: int = 0
    column: int = 0
    is_statistic: bool = False
    module: str = ""
    # Terms this one depends on (transitively), dependencies first, itself last.  Set by the
    # checker; evaluation walks it instead of recursing so long chains cannot overflow.
    plan: list[Term] = field(default_factory=list, repr=False)

    def evaluate(self, stats: Mapping[str, float]) -> float:
        values: dict[str, float] = {}
        for term in self.plan or [self]:
            values[term.name] = term.expr.evaluate(_lookup(stats, values, self.module))
        return values[self.name]


@dataclass(eq=False)
class Category:
    name: str
    description: str
    terms: list[str]
    line: int = 0
    column: int = 0


@dataclass(eq=False)
class Access:
    name: str
    description: str
    line: int = 0
    column: int = 0


@dataclass(eq=False)
class Interface:
    name: str
    description: str
    path: str
    statistics: list[Statistic]
    terms: list[Term]  # category order, statistic terms included
    categories: list[Category]
    accesses: list[Access]
    line: int = 0
    column: int = 0
    # Declared terms in source order (the `terms` section), for printing the interface back.
    declared_terms: list[Term] = field(default_factory=list, repr=False)
    # SHA-256 of the .perf text (mprof.iface.registry.digest): what the generated hooks carry
    # and a run profile records in `interfaces`
    digest: str = field(default="", repr=False, compare=False)

    def statistic(self, name: str) -> Statistic:
        for s in self.statistics:
            if s.name == name:
                return s
        raise MprofError(f"interface '{self.name}' has no statistic '{name}'")

    def term(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        raise MprofError(f"interface '{self.name}' has no term '{name}'")

    def category(self, name: str) -> Category:
        for c in self.categories:
            if c.name == name:
                return c
        raise MprofError(f"interface '{self.name}' has no category '{name}'")

    def term_values(self, stats: Mapping[str, float]) -> dict[str, float]:
        """Every term's value for one object's statistics, in `terms` order."""
        values: dict[str, float] = {}
        lookup = _lookup(stats, values, self.name)
        for term in self.terms:
            for dep in term.plan or [term]:
                if dep.name not in values:
                    values[dep.name] = dep.expr.evaluate(lookup)
        return {t.name: values[t.name] for t in self.terms}

    def parameter_names(self) -> list[str]:
        return [f"{self.name}:{t.name}" for t in self.terms]

    def to_dict(self) -> dict:
        """A JSON-ready description (no source positions): what the model stage needs."""
        return {
            "name": self.name,
            "description": self.description,
            "statistics": [
                {
                    "name": s.name,
                    "type": s.type,
                    "measured": s.measured,
                    "description": s.description,
                    **({"papi": s.papi_event} if s.papi_event else {}),
                }
                for s in self.statistics
            ],
            "terms": [
                {
                    "name": t.name,
                    "description": t.description,
                    "definition": t.expr.to_text(),
                    "category": t.category,
                    "is_statistic": t.is_statistic,
                    "parameter": f"{self.name}:{t.name}",
                }
                for t in self.terms
            ],
            "categories": [
                {"name": c.name, "description": c.description, "terms": list(c.terms)}
                for c in self.categories
            ],
            "accesses": [{"name": a.name, "description": a.description} for a in self.accesses],
        }


def _lookup(stats: Mapping[str, float], values: dict[str, float], module: str):
    def lookup(ref: Ref) -> float:
        if ref.kind != STATISTIC:
            return values[ref.name]  # a term: evaluated earlier in the plan
        try:
            raw = stats[ref.name]
        except KeyError:
            raise MprofError(f"statistic '{ref.name}' of interface '{module}' is missing") from None
        try:
            return float(raw)
        except (TypeError, ValueError, OverflowError):
            raise MprofError(
                f"statistic '{ref.name}' of interface '{module}' is not a double: {raw!r}"
            ) from None

    return lookup
