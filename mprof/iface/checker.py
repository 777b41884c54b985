"""Semantic checks: syntax tree -> checked `Interface`, or the first problem as a SourceError.

Rules (each reported at the offending name's line and column):
  - `statistics` and `categories` sections are required;
  - statistic types are u64 (default), i64 or double;
  - names are C identifiers usable in the generated code, also when the header is compiled
    as C++: no C/C++ keywords, no standard or generated macros the generated files see, no
    names starting with `_` or holding `__`, none ending in `_t`, none in the runtime's
    namespace (`mp_`, `MP_`, `mpr_`, `MPROF_`), no built-in function names, at most 64
    characters;
  - statistics and terms share one namespace; categories and accesses have their own;
    no name is declared twice;
  - a term's block defines that term (`Op -- ... { Op = ...; }`);
  - a name in an expression is a statistic or a term; terms may use other terms, but not
    in a cycle;
  - a category lists statistics or terms, at least one, and every term (declared or a
    statistic used as a term) belongs to exactly one category.
"""

from __future__ import annotations

import re

from ..errors import SourceError
from .expr import FUNCTIONS, STATISTIC, TERM, Ref
from .lexer import Source, Token
from .model import DEFAULT_TYPE, STAT_TYPES, Access, Category, Interface, Statistic, Term
from .parser import Decl, Syntax, parse
from .registry import digest

# Keywords of C (C11 and C23) and C++ (C++20, with the alternative operator spellings): the
# generated header is also compiled as C++.
C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex
    _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    alignas alignof bool false true nullptr static_assert thread_local typeof typeof_unqual
    constexpr
    and and_eq asm bitand bitor catch char8_t char16_t char32_t class co_await co_return
    co_yield compl concept const_cast consteval constinit decltype delete dynamic_cast explicit
    export friend mutable namespace new noexcept not not_eq operator or or_eq private protected
    public reinterpret_cast requires static_cast template this throw try typeid typename using
    virtual wchar_t xor xor_eq""".split()
)

# Object-like macros of the standard headers the generated files include (stddef, stdint,
# stdio, stdlib, math), also in GNU mode (gcc's default), and the compilers' predefined
# ones: a statistic named like one would be macro-expanded in `s->NAME`.
STD_MACROS = frozenset(
    """NULL EOF BUFSIZ FILENAME_MAX FOPEN_MAX L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END
    SEEK_DATA SEEK_HOLE P_tmpdir L_ctermid L_cuserid
    stdin stdout stderr EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX INFINITY NAN HUGE_VAL
    HUGE_VALF HUGE_VALL MATH_ERRNO MATH_ERREXCEPT math_errhandling errno assert
    MAXFLOAT HUGE WNOHANG WUNTRACED WSTOPPED WEXITED WCONTINUED WNOWAIT
    LITTLE_ENDIAN BIG_ENDIAN PDP_ENDIAN BYTE_ORDER FD_SETSIZE NFDBITS
    RENAME_EXCHANGE RENAME_NOREPLACE RENAME_WHITEOUT
    linux unix i386""".split()
)
_STD_MACRO_RE = re.compile(
    r"^(U?INT(\d+|_LEAST\d+|_FAST\d+|MAX|PTR)|SIZE|PTRDIFF|SIG_ATOMIC|WCHAR|WINT)"
    r"_(MAX|MIN|C|WIDTH)$"  # <stdint.h>; the widths are C23's
    r"|^FP_[A-Z0-9_]+$"  # <math.h>: FP_NAN, FP_ILOGB0 ...
    r"|^M_\w+$"  # <math.h> constants in GNU mode: M_PI, M_SQRT2, M_PIl, M_PIf128 ...
    r"|^(HUGE_VAL|SNAN)\w*$"  # <math.h>: HUGE_VAL_F64, SNANF ...
)
# Macros every generated header defines, for its own module M (and another module's header
# may be included next to it): `M_PERF_H`, `M_NSTATS`, `M_NTERMS`, `M_NACCESSES`.
_GENERATED_MACRO_RE = re.compile(r"^[A-Z0-9_]+_(PERF_H|NSTATS|NTERMS|NACCESSES)$")
# The runtime's (mp.h: mp_*, MP_*, struct mpr_*) and the toolkit's (MPROF_*) namespaces.
_RUNTIME_PREFIX_RE = re.compile(r"^(mp|mpr|mprof)(_|$)", re.IGNORECASE)
# Names become file names (`<module>_perf.h`) and parts of longer C identifiers.
MAX_NAME_LENGTH = 64


def check_name(source: Source, tok: Token, what: str) -> None:
    name = tok.text
    problem = None
    if name in C_KEYWORDS:
        problem = "is a C/C++ keyword"
    elif name in FUNCTIONS:
        problem = "is a built-in function"
    elif name in STD_MACROS or _STD_MACRO_RE.match(name):
        problem = "is a standard C macro"
    elif name.startswith("_") or "__" in name:
        problem = "is reserved in C and C++ (it starts with '_' or holds '__')"
    elif name.endswith("_t"):
        problem = "ends in '_t', which names types (POSIX reserves it; stdint.h uses it)"
    elif _GENERATED_MACRO_RE.match(name):
        problem = "is the name of a macro of the generated headers"
    elif _RUNTIME_PREFIX_RE.match(name):
        problem = "is in the runtime's namespace (mp_, MP_, mpr_, MPROF_)"
    elif len(name) > MAX_NAME_LENGTH:
        problem = f"is longer than {MAX_NAME_LENGTH} characters ({len(name)})"
    elif what == "interface" and name.endswith("_"):
        problem = "ends in '_' (the generated names would hold '__')"
    if problem:
        raise source.error_at(tok, f"{what} name '{name}' {problem}")


class Checker:
    def __init__(self, syntax: Syntax):
        self.syntax = syntax
        self.source = syntax.source

    def error(self, tok, message) -> SourceError:
        return self.source.error(tok.line, tok.column, message)

    def decls(self, section: str) -> list[Decl]:
        sec = self.syntax.sections.get(section)
        return sec.decls if sec else []

    def check(self) -> Interface:
        syn = self.syntax
        check_name(self.source, syn.name, "interface")
        for required in ("statistics", "categories"):
            if required not in syn.sections:
                raise self.error(
                    syn.keyword, f"interface '{syn.name.text}' has no '{required}' section"
                )

        # Declarations, in file order, each name checked once.
        values: dict[str, Decl] = {}  # statistics and terms share this namespace
        others: dict[str, dict[str, Decl]] = {"categories": {}, "accesses": {}}
        statistics = []
        for decl in self._all_decls():
            check_name(self.source, decl.name, _noun(decl))
            table = values if decl.section in ("statistics", "terms") else others[decl.section]
            name = decl.name.text
            if name in table:
                first = table[name]
                raise self.error(
                    decl.name,
                    f"'{name}' is already declared as a {_noun(first)} on line {first.name.line}",
                )
            table[name] = decl
            if decl.section == "statistics":
                statistics.append(self._statistic(decl))
            elif decl.section == "terms" and decl.def_name.text != name:
                raise self.error(
                    decl.def_name,
                    f"the block of term '{name}' defines '{decl.def_name.text}'; "
                    f"write '{{ {name} = ...; }}'",
                )

        stat_names = {s.name for s in statistics}
        term_decls = {d.name.text: d for d in self.decls("terms")}

        # Names inside expressions.
        for decl in self.decls("terms"):
            for ref in decl.expr.refs():
                if ref.name in stat_names:
                    ref.kind = STATISTIC
                elif ref.name in term_decls:
                    ref.kind = TERM
                else:
                    raise self.error(
                        ref,
                        f"undefined name '{ref.name}' in the definition of term "
                        f"'{decl.name.text}'{self._hint(ref.name, others)}",
                    )
        self._check_cycles(term_decls)

        # Category membership.
        owner: dict[str, tuple[Decl, Token]] = {}
        categories = []
        for decl in self.decls("categories"):
            if not decl.members:
                raise self.error(decl.name, f"category '{decl.name.text}' has no terms")
            for member in decl.members:
                name = member.text
                if name not in stat_names and name not in term_decls:
                    raise self.error(
                        member,
                        f"unknown term '{name}' in category '{decl.name.text}'"
                        f"{self._hint(name, others)}",
                    )
                if name in owner:
                    cat, _ = owner[name]
                    if cat is decl:
                        raise self.error(
                            member, f"term '{name}' appears twice in category '{cat.name.text}'"
                        )
                    raise self.error(
                        member,
                        f"term '{name}' is already in category '{cat.name.text}' "
                        f"(line {cat.name.line}); a term belongs to one category",
                    )
                owner[name] = (decl, member)
            categories.append(
                Category(
                    decl.name.text,
                    decl.desc.text,
                    [m.text for m in decl.members],
                    decl.name.line,
                    decl.name.column,
                )
            )
        for name, decl in term_decls.items():
            if name not in owner:
                raise self.error(
                    decl.name,
                    f"term '{name}' is not used by any category "
                    "(every term needs a category to be fitted)",
                )

        return self._build(statistics, categories, owner, term_decls)

    # -- helpers ------------------------------------------------------------------------

    def _all_decls(self):
        # Fixed section order, so that "already declared" always points backwards in the
        # common layout and the first problem reported is stable.
        decls = [d for sec in self.syntax.sections.values() for d in sec.decls]
        return sorted(decls, key=lambda d: (d.name.line, d.name.column))

    def _statistic(self, decl: Decl) -> Statistic:
        stype = DEFAULT_TYPE
        if decl.type is not None:
            stype = decl.type.text
            if stype not in STAT_TYPES:
                raise self.error(
                    decl.type,
                    f"unknown statistic type '{stype}' (expected u64, i64 or double)",
                )
        papi = decl.papi_event
        # A counter is a measurement: its count depends on the machine and on timing.
        return Statistic(
            decl.name.text,
            stype,
            decl.desc.text,
            decl.name.line,
            decl.name.column,
            measured=papi is not None or any(a.text == "measured" for a in decl.attributes),
            papi_event=papi,
        )

    def _hint(self, name: str, others: dict[str, dict[str, Decl]]) -> str:
        if name in others["categories"]:
            return f" ('{name}' is a category)"
        if name in others["accesses"]:
            return f" ('{name}' is an access category)"
        return ""

    def _check_cycles(self, term_decls: dict[str, Decl]) -> None:
        """Iterative depth-first search over term -> term references."""
        edges = {
            name: [r for r in decl.expr.refs() if r.kind == TERM]
            for name, decl in term_decls.items()
        }
        WHITE, GREY, BLACK = 0, 1, 2
        color = dict.fromkeys(term_decls, WHITE)
        for root in term_decls:  # source order
            if color[root] != WHITE:
                continue
            color[root] = GREY
            stack: list[tuple[str, int]] = [(root, 0)]
            while stack:
                name, i = stack[-1]
                if i == len(edges[name]):
                    color[name] = BLACK
                    stack.pop()
                    continue
                stack[-1] = (name, i + 1)
                ref: Ref = edges[name][i]
                if color[ref.name] == GREY:
                    path = [n for n, _ in stack]
                    cycle = path[path.index(ref.name) :] + [ref.name]
                    if len(cycle) == 2:
                        raise self.error(ref, f"term '{name}' is defined in terms of itself")
                    raise self.error(ref, "terms are defined in a cycle: " + " -> ".join(cycle))
                if color[ref.name] == WHITE:
                    color[ref.name] = GREY
                    stack.append((ref.name, 0))

    def _build(self, statistics, categories, owner, term_decls) -> Interface:
        module = self.syntax.name.text
        stats_by_name = {s.name: s for s in statistics}
        terms: list[Term] = []
        by_name: dict[str, Term] = {}
        for cat in categories:
            for name in cat.terms:
                _, member = owner[name]
                if name in term_decls:
                    decl = term_decls[name]
                    term = Term(
                        name,
                        decl.desc.text,
                        decl.expr,
                        cat.name,
                        decl.name.line,
                        decl.name.column,
                        False,
                        module,
                    )
                else:
                    ref = Ref(name, member.line, member.column)
                    ref.kind = STATISTIC
                    stat = stats_by_name[name]
                    term = Term(
                        name,
                        stat.description,
                        ref,
                        cat.name,
                        member.line,
                        member.column,
                        True,
                        module,
                    )
                terms.append(term)
                by_name[name] = term
        for term in terms:
            term.plan = _plan(term, by_name)
        syn = self.syntax
        return Interface(
            name=module,
            description=syn.desc.text,
            path=self.source.path,
            statistics=statistics,
            terms=terms,
            categories=categories,
            accesses=[
                Access(d.name.text, d.desc.text, d.name.line, d.name.column)
                for d in self.decls("accesses")
            ],
            line=syn.keyword.line,
            column=syn.keyword.column,
            declared_terms=[by_name[d.name.text] for d in self.decls("terms")],
        )


def _noun(decl: Decl) -> str:
    return {
        "statistics": "statistic",
        "terms": "term",
        "categories": "category",
        "accesses": "access",
    }[decl.section]


def _plan(term: Term, by_name: dict[str, Term]) -> list[Term]:
    """Post-order of the term's dependencies (acyclic, checked): evaluation order."""
    order: list[Term] = []
    seen = {term.name}
    stack = [(term, iter([r for r in term.expr.refs() if r.kind == TERM]))]
    while stack:
        node, refs = stack[-1]
        ref = next(refs, None)
        if ref is None:
            order.append(node)
            stack.pop()
        elif ref.name not in seen:
            seen.add(ref.name)
            dep = by_name[ref.name]
            stack.append((dep, iter([r for r in dep.expr.refs() if r.kind == TERM])))
    return order


def check(syntax: Syntax) -> Interface:
    return Checker(syntax).check()


def parse_interface(text: str, path: str = "<string>") -> Interface:
    """Parses and checks one interface given as text; its digest is that of the text
    (mprof.iface.registry.digest)."""
    iface = check(parse(text, path))
    iface.digest = digest(text)
    return iface
