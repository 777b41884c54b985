"""One test per checker rule: the error names the right line and column."""

from pathlib import Path

import pytest

from mprof.errors import MprofError, SourceError
from mprof.iface import load_interface, parse_interface


def perf(*lines):
    return "\n".join(lines) + "\n"


ROOT = Path(__file__).resolve().parents[2]
HEAD = "interface t -- test"
STATS = ("statistics", "  A -- a", "  B -- b")
CATS = ("categories", "  C -- c", "    { A }")

# (id, text, line, column, message fragment)
CASES = [
    ("empty-file", "", 1, 1, "starts with 'interface NAME -- text'"),
    ("no-interface", perf("statistics", "  A -- a"), 1, 1, "starts with 'interface"),
    ("interface-description", perf("interface t", *STATS, *CATS), 1, 11, "needs a description"),
    ("interface-keyword-name", perf("interface terms -- x"), 1, 11, "'terms' is a keyword"),
    ("missing-statistics", perf(HEAD, *CATS), 1, 1, "has no 'statistics' section"),
    ("missing-categories", perf(HEAD, *STATS), 1, 1, "has no 'categories' section"),
    (
        "duplicate-section",
        perf(HEAD, *STATS, *CATS, "statistics", "  D -- d"),
        8,
        1,
        "section 'statistics' appears twice (first on line 2)",
    ),
    ("empty-section", perf(HEAD, *STATS, "terms", *CATS), 5, 1, "section 'terms' declares nothing"),
    ("second-interface", perf(HEAD, *STATS, *CATS, "interface u -- v"), 8, 1, "only one interface"),
    (
        "stray-token",
        perf(HEAD, *STATS, "  42", *CATS),
        5,
        3,
        "expected a statistic name or a section, found number 42",
    ),
    (
        "statistic-description",
        perf(HEAD, "statistics", "  A", "  B -- b", *CATS),
        3,
        3,
        "statistic 'A' needs a description",
    ),
    (
        "empty-description",
        perf(HEAD, "statistics", "  A --   # nothing", *CATS),
        3,
        5,
        "empty description",
    ),
    (
        "unknown-type",
        perf(HEAD, "statistics", "  A : float -- a", *CATS),
        3,
        7,
        "unknown statistic type 'float' (expected u64, i64 or double)",
    ),
    (
        "type-on-term",
        perf(HEAD, *STATS, "terms", "  X : double -- x", "  { X = A; }", *CATS),
        6,
        5,
        "only statistics have a type",
    ),
    (
        "block-on-statistic",
        perf(HEAD, "statistics", "  A -- a", "  { A = 1; }", *CATS),
        4,
        3,
        "a statistic has no definition block",
    ),
    (
        "duplicate-statistic",
        perf(HEAD, "statistics", "  A -- a", "  A -- again", *CATS),
        4,
        3,
        "'A' is already declared as a statistic on line 3",
    ),
    (
        "term-shadows-statistic",
        perf(HEAD, *STATS, "terms", "  A -- x", "    { A = B; }", *CATS),
        6,
        3,
        "'A' is already declared as a statistic on line 3",
    ),
    (
        "duplicate-category",
        perf(HEAD, *STATS, *CATS, "  C -- again", "    { B }"),
        8,
        3,
        "'C' is already declared as a category on line 6",
    ),
    (
        "duplicate-access",
        perf(HEAD, *STATS, *CATS, "accesses", "  get -- g", "  get -- g2"),
        10,
        3,
        "'get' is already declared as a access on line 9",
    ),
    (
        "term-without-block",
        perf(HEAD, *STATS, "terms", "  X -- x", *CATS),
        6,
        3,
        "term 'X' needs a definition",
    ),
    (
        "block-defines-other-name",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { Y = A; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        7,
        "the block of term 'X' defines 'Y'",
    ),
    (
        "two-definitions",
        perf(HEAD, *STATS, "terms", "  X -- x", "    { X = A; Y = B; }", *CATS),
        7,
        14,
        "defines exactly one term",
    ),
    (
        "undefined-name",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = A + Q * 2; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        15,
        "undefined name 'Q' in the definition of term 'X'",
    ),
    (
        "category-in-expression",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = C; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        11,
        "undefined name 'C' in the definition of term 'X' ('C' is a category)",
    ),
    (
        "unknown-function",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = log(A); }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        11,
        "unknown function 'log'",
    ),
    (
        "function-arity",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = 1 + sqrt(A, B); }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        15,
        "function 'sqrt' takes 1 argument(s), got 2",
    ),
    (
        "min-arity",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = min(A); }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        11,
        "function 'min' takes at least 2 argument(s), got 1",
    ),
    (
        "function-without-call",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = max; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        11,
        "function 'max' needs arguments",
    ),
    (
        "missing-operand",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = A + ; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        15,
        "expected a number, a name or '(', found ';'",
    ),
    (
        "unclosed-paren",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = (A + B; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        17,
        "expected ')' or an operator, found ';'",
    ),
    (
        "unknown-category-term",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { A Z }"),
        7,
        9,
        "unknown term 'Z' in category 'C'",
    ),
    (
        "access-in-category",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { get }", "accesses", "  get -- g"),
        7,
        7,
        "('get' is an access category)",
    ),
    (
        "term-in-two-categories",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { A }", "  D -- d", "    { B A }"),
        9,
        9,
        "term 'A' is already in category 'C' (line 6)",
    ),
    (
        "term-twice-in-category",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { A B A }"),
        7,
        11,
        "term 'A' appears twice in category 'C'",
    ),
    (
        "empty-category",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { }"),
        6,
        3,
        "category 'C' has no terms",
    ),
    (
        "category-without-block",
        perf(HEAD, *STATS, "categories", "  C -- c", "  D -- d"),
        6,
        3,
        "category 'C' needs its terms",
    ),
    (
        "unclosed-category",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { A", "accesses", "  get -- g"),
        8,
        1,
        "expected a term name or '}', found 'accesses'",
    ),
    (
        "unused-term",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = A; }",
            "categories",
            "  C -- c",
            "    { B }",
        ),
        6,
        3,
        "term 'X' is not used by any category",
    ),
    (
        "self-reference",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = A + X; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        15,
        "term 'X' is defined in terms of itself",
    ),
    (
        "cycle",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = 2 * Y; }",
            "  Y -- y",
            "    { Y = Z; }",
            "  Z -- z",
            "    { Z = A + X; }",
            "categories",
            "  C -- c",
            "    { X Y Z }",
        ),
        11,
        15,
        "terms are defined in a cycle: X -> Y -> Z -> X",
    ),
    (
        "c-keyword",
        perf(HEAD, "statistics", "  int -- i", *CATS),
        3,
        3,
        "statistic name 'int' is a C/C++ keyword",
    ),
    (
        "reserved-identifier",
        perf(HEAD, "statistics", "  A -- a", "  _Count -- c", *CATS),
        4,
        3,
        "is reserved in C",
    ),
    (
        "builtin-name",
        perf(HEAD, "statistics", "  A -- a", "  max -- m", *CATS),
        4,
        3,
        "statistic name 'max' is a built-in function",
    ),
    (
        "standard-macro",
        perf(HEAD, *STATS, *CATS, "accesses", "  EOF -- end"),
        9,
        3,
        "access name 'EOF' is a standard C macro",
    ),
    (
        "bad-interface-name",
        perf("interface double -- d", *STATS, *CATS),
        1,
        11,
        "interface name 'double' is a C/C++ keyword",
    ),
    (
        "unexpected-character",
        perf(HEAD, "statistics", "  A@ -- a", *CATS),
        3,
        4,
        "unexpected character '@'",
    ),
    (
        "control-character",
        perf(HEAD, "statistics", "  A -- a\x07b", *CATS),
        3,
        9,
        "unexpected character U+0007",
    ),
    # it would reorder the generated comment as shown, and GCC's -Wbidi-chars refuses it
    (
        "bidi-character",
        perf(HEAD, "statistics", "  A -- a\u202eb", *CATS),
        3,
        9,
        "unexpected character U+202E (RIGHT-TO-LEFT OVERRIDE)",
    ),
    (
        "malformed-number",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = 3x; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        11,
        "malformed number '3x'",
    ),
    (
        "number-too-large",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = A * 1e999; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        15,
        "number 1e999 is too large",
    ),
    (
        "too-deep-parentheses",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = " + "(" * 150 + "A" + ")" * 150 + "; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        111,
        "nested too deeply (limit 100)",
    ),
    # names the generated C would not compile with (the generated header is also C++)
    *[
        (case, perf(HEAD, "statistics", "  A -- a", f"  {name} -- x", *CATS), 4, 3, fragment)
        for case, name, fragment in [
            ("cxx-keyword", "class", "statistic name 'class' is a C/C++ keyword"),
            ("cxx-alternative-token", "xor", "is a C/C++ keyword"),
            (
                "generated-macro",
                "T_NSTATS",
                "statistic name 'T_NSTATS' is the name of a macro of the generated headers",
            ),
            ("include-guard", "T_PERF_H", "is the name of a macro of the generated headers"),
            ("runtime-macro", "MP_H", "in the runtime's namespace"),
            ("type-name", "uint64_t", "ends in '_t'"),
            ("gnu-macro", "M_PI", "is a standard C macro"),
            ("double-underscore", "a__b", "is reserved in C and C++"),
        ]
    ],
    (
        "runtime-module",
        perf("interface mp -- m", *STATS, *CATS),
        1,
        11,
        "interface name 'mp' is in the runtime's namespace",
    ),
    (
        "long-module-name",
        perf("interface " + "m" * 200 + " -- m", *STATS, *CATS),
        1,
        11,
        "is longer than 64 characters (200)",
    ),
    (
        "too-deep-calls",
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = " + "max(A, " * 120 + "A" + ")" * 120 + "; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        714,
        "nested too deeply (limit 100)",
    ),
    # a statistic attribute
    (
        "second-type",
        perf(HEAD, "statistics", "  A : i64 : u64 -- a", *CATS),
        3,
        11,
        "expected a description ('-- text') after statistic 'A', found ':'",
    ),
    (
        "unknown-attribute",
        perf(HEAD, "statistics", "  A : u64 timing -- a", *CATS),
        3,
        11,
        "unknown statistic attribute 'timing' (known: measured",
    ),
    (
        "attribute-on-category",
        perf(HEAD, *STATS, "categories", "  C measured -- c", "    { A }"),
        6,
        5,
        "expected a description ('-- text') after category 'C', found 'measured'",
    ),
    # the end of the file is on its last line, not past it
    (
        "unclosed-block-at-end",
        perf(HEAD, *STATS, "categories", "  C -- c", "    { A"),
        7,
        8,
        "the block opened on line 7 is never closed (missing '}')",
    ),
    (
        "unclosed-term",
        perf(HEAD, *STATS, *CATS, "terms", "  X -- x", "    { X = A + B"),
        10,
        16,
        "the block opened on line 10 is never closed",
    ),
    (
        "too-deep-alternation",  # each (...) of another precedence is a real level
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = " + "A * (" * 120 + "A" + ")" * 120 + "; }",
            "categories",
            "  C -- c",
            "    { X }",
        ),
        7,
        515,
        "nested too deeply (limit 100)",
    ),
]


@pytest.mark.parametrize(
    "text,line,column,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_error_location(text, line, column, fragment):
    with pytest.raises(SourceError) as info:
        parse_interface(text, "t.perf")
    err = info.value
    assert fragment in err.message
    assert (err.line, err.column) == (line, column), err.format()
    assert err.path == "t.perf"
    # The printed form quotes the line and puts the caret under the column.
    printed = err.format().split("\n")
    assert printed[0] == f"t.perf:{line}:{column}: {err.message}"
    if text:
        assert printed[1] == text.split("\n")[line - 1].rstrip()
        assert printed[2] == " " * (column - 1) + "^"


def test_every_case_is_otherwise_valid():
    """The base pieces the cases are built from form a valid interface."""
    iface = parse_interface(perf(HEAD, *STATS, *CATS, "accesses", "  get -- g"))
    assert iface.parameter_names() == ["t:A"]


def test_invalid_utf8_is_located(tmp_path):
    path = tmp_path / "bin.perf"
    path.write_bytes(b"interface t -- test\nstatistics\n  A -- caf\xe9\n")
    with pytest.raises(SourceError) as info:
        load_interface(path)
    assert (info.value.line, info.value.column) == (3, 11)
    assert "not valid UTF-8" in info.value.message


def test_measured_statistics():
    iface = parse_interface(
        perf(
            HEAD,
            "statistics",
            "  A : u64 measured -- a",
            "  B measured -- b",
            "  D : double -- d",
            *CATS,
        )
    )
    assert [(s.name, s.type, s.measured) for s in iface.statistics] == [
        ("A", "u64", True),
        ("B", "u64", True),
        ("D", "double", False),
    ]
    rts = load_interface(ROOT / "runtime" / "rts.perf")
    assert {s.name for s in rts.statistics if s.measured} == {
        "IdleNs",
        "IdleCycle",
        "IdleCpuNs",
        "Wakes",
        "MsgAlloc",
        "ByteAlloc",
        "FlowWait",
        "AggFull",
        "AggHalf",
        "AggAged",
        "AggFed",
        "AggDrain",
        "AggOrder",
        "AggTaken",
        "ChanNotify",
        "ChanDrain",
        "ThreadCarried",
    }


def test_missing_file(tmp_path):
    with pytest.raises(MprofError, match="cannot read interface"):
        load_interface(tmp_path / "nope.perf")


def test_missing_statistic_is_named():
    iface = parse_interface(
        perf(
            HEAD,
            *STATS,
            "terms",
            "  X -- x",
            "    { X = A * B; }",
            "categories",
            "  C -- c",
            "    { X }",
        )
    )
    with pytest.raises(MprofError, match="statistic 'B' of interface 't' is missing"):
        iface.term("X").evaluate({"A": 1.0})
    with pytest.raises(MprofError, match="statistic 'A' of interface 't' is not a double"):
        iface.term_values({"A": "many", "B": 1})
