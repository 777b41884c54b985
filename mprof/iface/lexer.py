"""Tokens of the performance-interface language.

The language is free-form except for descriptions: `--` outside a definition block starts a
one-line description that runs to the end of the line (or to a `#` comment).  Inside `{ }`
blocks `-` is always the minus operator, so `a--b` there means `a - (-b)`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..errors import SourceError

# Token kinds that are not punctuation.
NAME = "name"
NUMBER = "number"
DESC = "desc"
EOF = "eof"

PUNCTUATION = set("{};=:(),+-*/")

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_RE = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # NAME, NUMBER, DESC, EOF, or the punctuation character itself
    text: str  # the source text (for DESC: the description, stripped)
    line: int  # 1-based
    column: int  # 1-based, counted in characters (a tab is one column)
    value: float | None = None  # NUMBER only

    def describe(self):
        """How the token is named in error messages."""
        if self.kind == EOF:
            return "end of file"
        if self.kind == DESC:
            return "a description ('--')"
        if self.kind == NAME:
            return f"'{self.text}'"
        if self.kind == NUMBER:
            return f"number {self.text}"
        return f"'{self.text}'"


class Source:
    """A file's text split into lines, to build errors that quote the offending line."""

    def __init__(self, text: str, path: str):
        self.path = path
        # Only "\n" ends a line (str.splitlines would also split on form feeds and U+2028,
        # which would make our line numbers disagree with editors and compilers).
        self.text = text.replace("\r\n", "\n")
        self.lines = self.text.split("\n")

    def line_text(self, line: int) -> str | None:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return None

    def error(self, line: int, column: int, message: str) -> SourceError:
        return SourceError(self.path, line, column, message, self.line_text(line))

    def error_at(self, token: Token, message: str) -> SourceError:
        return self.error(token.line, token.column, message)


def _char_name(ch: str) -> str:
    if ch.isprintable() and not ch.isspace():
        return f"'{ch}'"
    return f"U+{ord(ch):04X}" + (f" ({unicodedata.name(ch)})" if unicodedata.name(ch, "") else "")


# Bidirectional formatting characters (embeddings, overrides, isolates, marks): they reorder
# how the text around them is shown, so a description could hide code in the generated
# comments ("Trojan Source"), and GCC's -Wbidi-chars refuses the generated files.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _bad_char(ch: str) -> bool:
    """Characters rejected everywhere, descriptions included: control characters other than
    tab (they break line/column reporting and generated C comments), bidirectional
    formatting characters and lone surrogates (they cannot be written to a file)."""
    cat = unicodedata.category(ch)
    return (cat == "Cc" and ch != "\t") or cat == "Cs" or ch in _BIDI


def tokenize(source: Source) -> list[Token]:
    tokens: list[Token] = []
    depth = 0  # brace depth: decides whether `--` is a description or two minus signs
    for lineno, text in enumerate(source.lines, start=1):
        i = 0
        n = len(text)
        while i < n:
            ch = text[i]
            col = i + 1
            if ch in " \t":
                i += 1
                continue
            if ch == "#":
                break
            if _bad_char(ch):
                raise source.error(lineno, col, f"unexpected character {_char_name(ch)}")
            if depth == 0 and text.startswith("--", i):
                end = text.find("#", i + 2)
                if end < 0:
                    end = n
                body = text[i + 2 : end]
                for j, c in enumerate(body):
                    if _bad_char(c):
                        raise source.error(
                            lineno, i + 3 + j, f"unexpected character {_char_name(c)}"
                        )
                desc = body.strip()
                if not desc:
                    raise source.error(lineno, col, "empty description after '--'")
                tokens.append(Token(DESC, desc, lineno, col))
                break
            m = _NAME_RE.match(text, i)
            if m:
                tokens.append(Token(NAME, m.group(), lineno, col))
                i = m.end()
                continue
            m = _NUMBER_RE.match(text, i)
            if m:
                end = m.end()
                if end < n and (text[end].isalnum() or text[end] in "_."):
                    tail = _NAME_RE.match(text, end)
                    bad = text[i : tail.end() if tail else end + 1]
                    raise source.error(lineno, col, f"malformed number '{bad}'")
                value = float(m.group())
                if value == float("inf"):
                    raise source.error(lineno, col, f"number {m.group()} is too large")
                tokens.append(Token(NUMBER, m.group(), lineno, col, value))
                i = end
                continue
            if ch in PUNCTUATION:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth = max(depth - 1, 0)
                tokens.append(Token(ch, ch, lineno, col))
                i += 1
                continue
            raise source.error(lineno, col, f"unexpected character {_char_name(ch)}")
    # End of file: after the last character, on the file's last line as editors count
    # lines (a final newline ends that line; it does not start another one).
    last = len(source.lines)
    if last > 1 and source.lines[-1] == "":
        last -= 1
    tokens.append(Token(EOF, "", last, len(source.lines[last - 1]) + 1))
    return tokens
