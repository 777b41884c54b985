"""Recursive-descent parser: tokens -> a syntax tree that still holds unresolved names.

Grammar (see docs/interface-language.md):

    file        = "interface" NAME DESC section*
    section     = ("statistics" | "terms" | "categories" | "accesses") decl*
    statistic   = NAME [":" TYPE] ["measured"] ["papi" EVENT] DESC
    EVENT       = NAME (":" | NAME)*  written without spaces (PAPI_L1_DCM, perf::CYCLES)
    term        = NAME DESC "{" NAME "=" expr [";"] "}"
    category    = NAME DESC "{" NAME* "}"
    access      = NAME DESC
    expr        = product (("+" | "-") product)*
    product     = unary (("*" | "/") unary)*
    unary       = "-" unary | primary
    primary     = NUMBER | NAME | FUNC "(" expr ("," expr)* ")" | "(" expr ")"

The parser checks shape only; names are resolved by the checker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .expr import FUNCTIONS, MAX_DEPTH, BinOp, Call, Expr, Neg, Num, Ref
from .lexer import DESC, EOF, NAME, NUMBER, Source, Token, tokenize

SECTIONS = ("statistics", "terms", "categories", "accesses")
KEYWORDS = frozenset(("interface",) + SECTIONS)
# Attributes a statistic may carry after its type (on the same line as its name).
ATTRIBUTES = ("measured", "papi")

# Singular nouns for messages.
_NOUN = {
    "statistics": "statistic",
    "terms": "term",
    "categories": "category",
    "accesses": "access",
}


@dataclass
class Decl:
    """One declaration `NAME [: TYPE] -- description [block]` as written."""

    section: str
    name: Token
    desc: Token
    type: Token | None = None
    attributes: list[Token] = field(default_factory=list)  # statistics: e.g. `measured`
    block: Token | None = None  # the "{" token
    def_name: Token | None = None  # terms: the name left of "="
    expr: Expr | None = None  # terms: the definition
    members: list[Token] = field(default_factory=list)  # categories: the term names
    papi_event: str | None = None  # statistics: the event of a `papi EVENT` attribute


@dataclass
class Section:
    keyword: Token
    decls: list[Decl] = field(default_factory=list)


@dataclass
class Syntax:
    source: Source
    keyword: Token  # "interface"
    name: Token
    desc: Token
    sections: dict[str, Section] = field(default_factory=dict)


class Parser:
    def __init__(self, source: Source):
        self.source = source
        self.tokens = tokenize(source)
        self.pos = 0
        self.depth = 0  # nesting of parentheses, calls and unary minus

    # -- token helpers ------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != EOF:
            self.pos += 1
        return tok

    def error(self, token: Token, message: str):
        return self.source.error_at(token, message)

    def expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self.error(self.tok, f"expected {what}, found {self.tok.describe()}")
        return self.advance()

    def expect_name(self, what: str) -> Token:
        tok = self.expect(NAME, what)
        if tok.text in KEYWORDS:
            raise self.error(tok, f"'{tok.text}' is a keyword and cannot be used as {what}")
        return tok

    def close_block(self, opening: Token, what: str) -> Token:
        if self.tok.kind == EOF:
            raise self.error(
                self.tok, f"the block opened on line {opening.line} is never closed (missing '}}')"
            )
        return self.expect("}", what)

    def at_keyword(self) -> bool:
        return self.tok.kind == NAME and self.tok.text in KEYWORDS

    # -- file structure -----------------------------------------------------------------

    def parse_file(self) -> Syntax:
        tok = self.tok
        if not (tok.kind == NAME and tok.text == "interface"):
            raise self.error(tok, "a performance interface starts with 'interface NAME -- text'")
        self.advance()
        name = self.expect_name("the interface name")
        desc = self.expect_description(name, "the interface")
        syntax = Syntax(self.source, tok, name, desc)
        while self.tok.kind != EOF:
            tok = self.tok
            if not self.at_keyword():
                raise self.error(
                    tok,
                    f"expected a section ({', '.join(SECTIONS)}), found {tok.describe()}",
                )
            if tok.text == "interface":
                raise self.error(tok, "only one interface may be declared per file")
            if tok.text in syntax.sections:
                first = syntax.sections[tok.text].keyword
                raise self.error(
                    tok, f"section '{tok.text}' appears twice (first on line {first.line})"
                )
            self.advance()
            section = Section(tok)
            syntax.sections[tok.text] = section
            while self.tok.kind == NAME and not self.at_keyword():
                section.decls.append(self.parse_decl(tok.text))
            if self.tok.kind not in (EOF, NAME):
                raise self.error(
                    self.tok,
                    f"expected a {_NOUN[tok.text]} name or a section, found {self.tok.describe()}",
                )
            if not section.decls:
                raise self.error(tok, f"section '{tok.text}' declares nothing")
        return syntax

    def expect_description(self, name: Token, what: str) -> Token:
        if self.tok.kind != DESC and self.tok.kind != EOF and self.tok.line == name.line:
            # something else stands where the description belongs (`T : i64 : u64 -- ...`)
            raise self.error(
                self.tok,
                f"expected a description ('-- text') after {what} "
                f"'{name.text}', found {self.tok.describe()}",
            )
        if self.tok.kind != DESC:
            raise self.error(
                name, f"{what} '{name.text}' needs a description: '{name.text} -- text'"
            )
        return self.advance()

    def parse_papi_event(self, attr: Token) -> str:
        """The PAPI event after `papi`: a preset (PAPI_L1_DCM) or a component's native event
        (perf::PERF_COUNT_HW_CACHE_MISSES, sde:::MPROF::rts::RemoteOp), names and colons
        written without spaces."""
        if self.tok.kind != NAME or self.tok.line != attr.line:
            raise self.error(
                attr, "expected a PAPI event name after 'papi' (e.g. 'papi PAPI_L1_DCM')"
            )
        first = self.advance()
        text, end = first.text, first.column + len(first.text)
        while (
            self.tok.kind in (NAME, ":") and self.tok.line == first.line and self.tok.column == end
        ):
            tok = self.advance()
            text += tok.text
            end = tok.column + len(tok.text)
        return text

    def parse_decl(self, section: str) -> Decl:
        noun = _NOUN[section]
        name = self.advance()
        type_tok = None
        if self.tok.kind == ":":
            colon = self.advance()
            if section != "statistics":
                raise self.error(colon, f"only statistics have a type, not a {noun}")
            type_tok = self.expect(NAME, "a statistic type (u64, i64 or double)")
        attributes = []
        papi_event = None
        # A name on the same line before the description is an attribute (`measured`); a
        # name on a later line is the next declaration (this one lacks its description).
        while self.tok.kind == NAME and self.tok.line == name.line and not self.at_keyword():
            attr = self.advance()
            if section != "statistics":
                raise self.error(
                    attr,
                    f"expected a description ('-- text') after {noun} '{name.text}', "
                    f"found '{attr.text}'",
                )
            if attr.text not in ATTRIBUTES:
                raise self.error(
                    attr,
                    f"unknown statistic attribute '{attr.text}' (known: "
                    f"{', '.join(ATTRIBUTES)}; a description starts with '--')",
                )
            if any(a.text == attr.text for a in attributes):
                raise self.error(attr, f"attribute '{attr.text}' is given twice")
            if attr.text == "papi":
                papi_event = self.parse_papi_event(attr)
            attributes.append(attr)
        desc = self.expect_description(name, noun)
        decl = Decl(section, name, desc, type_tok, attributes)
        decl.papi_event = papi_event
        if section == "terms":
            if self.tok.kind != "{":
                raise self.error(
                    name,
                    f"term '{name.text}' needs a definition: '{{ {name.text} = expression; }}'",
                )
            decl.block = self.advance()
            decl.def_name = self.expect_name("the defined term's name")
            self.expect("=", "'='")
            decl.expr = self.parse_expr()
            if self.tok.kind == ";":
                self.advance()
            if self.tok.kind == NAME and self.tokens[self.pos + 1].kind == "=":
                raise self.error(self.tok, "a definition block defines exactly one term")
            self.close_block(decl.block, "'}' or an operator")
        elif section == "categories":
            if self.tok.kind != "{":
                raise self.error(
                    name, f"category '{name.text}' needs its terms: '{{ Term Term ... }}'"
                )
            decl.block = self.advance()
            while self.tok.kind == NAME and not self.at_keyword():
                decl.members.append(self.advance())
            self.close_block(decl.block, "a term name or '}'")
        elif self.tok.kind == "{":
            raise self.error(self.tok, f"a {noun} has no definition block")
        return decl

    # -- expressions --------------------------------------------------------------------

    def nest(self, token: Token):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(token, f"expression is nested too deeply (limit {MAX_DEPTH})")

    def checked(self, node: Expr) -> Expr:
        if node.depth > MAX_DEPTH:
            note = ""
            if isinstance(node, Call) and len(node.args) > 2:
                note = (
                    f"; {node.func} of {len(node.args)} arguments counts "
                    f"{(len(node.args) - 1).bit_length()} levels"
                )
            raise self.source.error(
                node.line,
                node.column,
                f"expression is nested too deeply (limit {MAX_DEPTH}){note}",
            )
        return node

    def parse_expr(self) -> Expr:
        left = self.parse_product()
        while self.tok.kind in ("+", "-"):
            op = self.advance()
            right = self.parse_product()
            left = self.checked(BinOp(op.text, left, right, op.line, op.column))
        return left

    def parse_product(self) -> Expr:
        left = self.parse_unary()
        while self.tok.kind in ("*", "/"):
            op = self.advance()
            right = self.parse_unary()
            left = self.checked(BinOp(op.text, left, right, op.line, op.column))
        return left

    def parse_unary(self) -> Expr:
        # A run of minus signs is read in a loop, not by recursion.
        signs = []
        while self.tok.kind == "-":
            signs.append(self.advance())
            self.nest(signs[-1])
        node = self.parse_primary()
        for sign in reversed(signs):
            node = self.checked(Neg(node, sign.line, sign.column))
        self.depth -= len(signs)
        return node

    def parse_primary(self) -> Expr:
        tok = self.tok
        if tok.kind == NUMBER:
            self.advance()
            return Num(tok.value, tok.text, tok.line, tok.column)
        if tok.kind == "(":
            self.advance()
            self.nest(tok)
            node = self.parse_expr()
            self.expect(")", "')' or an operator")
            self.depth -= 1
            return node
        if tok.kind == NAME:
            if tok.text in KEYWORDS:
                raise self.error(tok, f"'{tok.text}' is a keyword, not a value")
            self.advance()
            if self.tok.kind == "(":
                return self.parse_call(tok)
            if tok.text in FUNCTIONS:
                raise self.error(tok, f"function '{tok.text}' needs arguments: {tok.text}(...)")
            return Ref(tok.text, tok.line, tok.column)
        raise self.error(tok, f"expected a number, a name or '(', found {tok.describe()}")

    def parse_call(self, name: Token) -> Expr:
        if name.text not in FUNCTIONS:
            known = ", ".join(FUNCTIONS)
            raise self.error(name, f"unknown function '{name.text}' (functions: {known})")
        self.nest(self.advance())
        args = [self.parse_expr()]
        while self.tok.kind == ",":
            self.advance()
            args.append(self.parse_expr())
        self.expect(")", "',' or ')'")
        self.depth -= 1
        low, high, _ = FUNCTIONS[name.text]
        if len(args) < low or (high is not None and len(args) > high):
            want = f"{low}" if low == high else f"at least {low}"
            raise self.error(
                name, f"function '{name.text}' takes {want} argument(s), got {len(args)}"
            )
        return self.checked(Call(name.text, args, name.line, name.column))


def parse(text: str, path: str) -> Syntax:
    return Parser(Source(text, path)).parse_file()
