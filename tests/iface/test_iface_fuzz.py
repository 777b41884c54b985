"""Property-based fuzzing: whatever the input, the front end either returns a checked model
or raises SourceError/MprofError with a sensible location -- never another exception.

Across the tests below hypothesis generates more than 10,000 inputs per run."""

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iface_helpers import INTERFACES
from test_iface_codegen import CALC

from mprof.errors import MprofError, SourceError
from mprof.iface import parse_interface
from mprof.iface.codegen import render
from mprof.iface.formatter import format_interface

SEEDS = [p.read_text() for p in INTERFACES.values()] + [CALC]

TOKENS = [
    "interface", "statistics", "terms", "categories", "accesses", "--", "-- text", "{", "}",
    ";", "=", ":", "(", ")", ",", "+", "-", "*", "/", "#", "\n", " ", "\t", "P", "T", "M",
    "Comp", "Op", "STARTUP", "X", "u64", "i64", "double", "float", "log2", "sqrt", "min",
    "max", "log2(", "min(1,", "0", "1", "0.5", ".5e3", "1e999", "3x", "int", "NULL", "__x",
    "_Y", "@", "\x00", "\x7f", "é", "\u2028", "\ud800", "\r", "\r\n", "{ Comp = M * T; }",
    "{ P }", "{ }", "((((", "))))", "- - -", "STARTUP -- again\n  { P }\n",
]  # fmt: skip

COUNT = {"inputs": 0}

FUZZ = settings(
    deadline=None,
    database=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def exercise(text):
    """The property: only our error types escape, located inside the text."""
    COUNT["inputs"] += 1
    try:
        iface = parse_interface(text, "fuzz.perf")
    except SourceError as err:
        nlines = len(text.replace("\r\n", "\n").split("\n"))
        assert 1 <= err.line <= nlines, err.format()
        assert err.column >= 1
        assert err.format().startswith(f"fuzz.perf:{err.line}:{err.column}: ")
        return None
    except MprofError:
        return None
    # Valid input: everything downstream must work too.
    files = render(iface)
    assert all(files.values())
    again = parse_interface(format_interface(iface), "printed.perf")
    assert again.to_dict() == iface.to_dict()
    values = iface.term_values({s.name: 1.5 for s in iface.statistics})
    assert list(values) == [t.name for t in iface.terms]
    assert all(isinstance(v, float) for v in values.values())
    return iface


def apply(text, mutations):
    for op, where, payload, count in mutations:
        pos = where % (len(text) + 1)
        if op == "insert":
            text = text[:pos] + payload + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + count :]
        elif op == "replace":
            text = text[:pos] + payload + text[pos + len(payload) :]
        else:  # a whole-line edit
            lines = text.split("\n")
            i = where % len(lines)
            if op == "dup_line":
                lines.insert(i, lines[i])
            elif op == "del_line":
                del lines[i]
            else:  # swap with a line `count` further down
                j = (i + count) % len(lines)
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


payloads = st.one_of(st.sampled_from(TOKENS), st.text(max_size=3))
mutation = st.tuples(
    st.sampled_from(["insert", "delete", "replace", "dup_line", "del_line", "swap_line"]),
    st.integers(min_value=0, max_value=10**6),
    payloads,
    st.integers(min_value=1, max_value=12),
)


@settings(FUZZ, max_examples=1600)
@given(st.sampled_from(SEEDS), st.lists(mutation, min_size=1, max_size=6))
def test_mutated_interfaces(seed, mutations):
    # Every prefix of the mutation list is an input of its own: 1 to 6 inputs per example,
    # which keeps hypothesis' per-example overhead low.
    text = seed
    for m in mutations:
        text = apply(text, [m])
        exercise(text)


@settings(FUZZ, max_examples=2200)
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join))
def test_token_soup(text):
    exercise(text)


@settings(FUZZ, max_examples=3000)
@given(st.text(max_size=200))
def test_arbitrary_text(text):
    exercise("interface t -- x\n" + text if text[:1] == "s" else text)


# -- valid interfaces built from the grammar --------------------------------------------

# A fixed pool keeps generation cheap; it includes names that collide with C.
NAME_POOL = ["A", "b", "Xy", "N_1", "op", "Op", "OP", "T", "t2", "Stat", "EltSize", "P",
             "q_", "Zz9", "int", "NULL", "_Y", "stdin", "M", "k"]  # fmt: skip
NAMES = st.sampled_from(NAME_POOL)
DESCS = (
    st.lists(st.sampled_from(list("ab xyz-*/{}()[];:=?\\\"'\t") + ["é", "€", "*/", "/*", "??/"]),
             min_size=1, max_size=8)
    .map("".join)
    .filter(lambda s: s.strip())
)  # fmt: skip


def expressions(names):
    leaves = st.one_of(
        st.sampled_from(names),
        st.floats(min_value=0, max_value=1e6, allow_nan=False).map(repr),
    )

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from("+-*/"), inner)
            .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda e: f"-{e}"),
            st.tuples(st.sampled_from(["log2", "sqrt"]), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(["min", "max"]), st.lists(inner, min_size=2, max_size=3))
            .map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        )  # fmt: skip

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def interfaces(draw):
    names = draw(st.lists(NAMES, min_size=2, max_size=8, unique=True))
    nstats = draw(st.integers(min_value=1, max_value=len(names) - 1))
    stats, terms = names[:nstats], names[nstats:]
    lines = [f"interface {draw(NAMES)} -- {draw(DESCS)}", "statistics"]
    for s in stats:
        t = draw(st.sampled_from(["", " : u64", " : i64", " : double"]))
        lines.append(f"  {s}{t} -- {draw(DESCS)}")
    lines.append("terms")
    for k, t in enumerate(terms):
        expr = draw(expressions(stats + terms[:k]))
        lines += [f"  {t} -- {draw(DESCS)}", f"    {{ {t} = {expr}; }}"]
    members = terms + draw(st.lists(st.sampled_from(stats), unique=True))
    ncat = draw(st.integers(min_value=1, max_value=len(members)))
    lines.append("categories")
    for c in range(ncat):
        lines += [f"  CAT{c} -- {draw(DESCS)}", "    { " + " ".join(members[c::ncat]) + " }"]
    return "\n".join(lines) + "\n", stats, terms


@settings(FUZZ, max_examples=120)
@given(interfaces(), st.data())
def test_generated_valid_interfaces(generated, data):
    text, stats, terms = generated
    try:
        parse_interface(text)
    except SourceError as err:
        # Random names may hit a reserved C name; nothing else may go wrong.
        assert "name" in err.message and ("keyword" in err.message or "reserved" in err.message
                                          or "macro" in err.message or "function" in err.message)
        return
    iface = exercise(text)
    assert [s.name for s in iface.statistics] == stats
    assert sorted(iface.parameter_names()) == sorted(
        f"{iface.name}:{n}" for n in terms + [m for c in iface.categories for m in c.terms
                                              if m in stats]
    )
    values = {s: data.draw(st.floats(allow_nan=False, width=64)) for s in stats}
    for name, value in iface.term_values(values).items():
        assert isinstance(value, float) and (math.isnan(value) or value == value)


def test_fuzz_volume():
    """When the whole module ran, it fed at least 10,000 inputs through the front end."""
    if COUNT["inputs"] == 0:  # run alone with -k: nothing to count
        return
    print(f"fuzzed {COUNT['inputs']} inputs")
    assert COUNT["inputs"] >= 10_000, COUNT
