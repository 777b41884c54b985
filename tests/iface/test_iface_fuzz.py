"""Property-based fuzzing: whatever the input, the front end either returns a checked model
or raises SourceError/MprofError with a sensible location -- never another exception.

Across the tests below hypothesis generates more than 10,000 inputs per run."""

import math
import subprocess
import tempfile
from pathlib import Path

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
        # Lines as an editor counts them: a final newline ends the last line, it does not
        # start another; a column is at most one past the end of its line.
        lines = text.replace("\r\n", "\n").split("\n")
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()
        assert 1 <= err.line <= len(lines), err.format()
        assert 1 <= err.column <= len(lines[err.line - 1]) + 1, err.format()
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


# -- interfaces built from the grammar, with names that collide with C, C++ and the code ----
# -- generated from them: whatever `check` accepts must compile ------------------------------

# Keywords of C11/C23 and C++20, written out here (not taken from the checker, which they
# test).  A declared name that is one must be rejected, or the generated code must compile.
C_CXX_KEYWORDS = """auto break case char const continue default do double else enum extern
    float for goto if inline int long register restrict return short signed sizeof static
    struct switch typedef union unsigned void volatile while bool true false nullptr typeof
    constexpr static_assert thread_local alignas alignof and and_eq asm bitand bitor catch
    char8_t char16_t char32_t class co_await co_return co_yield compl concept const_cast
    consteval constinit decltype delete dynamic_cast explicit export friend mutable namespace
    new noexcept not not_eq operator or or_eq private protected public reinterpret_cast
    requires static_cast template this throw try typeid typename using virtual wchar_t xor
    xor_eq final override import module""".split()
MODULES = ["gm", "Gm", "mp", "MP", "mpr", "mprof", "m", "x_y", "q_", "int", "stats", "a" * 64,
           "b" * 65, "c" * 240]  # fmt: skip


def generated_names(module, terms=("Op",), cats=("OPS",), accs=("ENQ",)):
    """The identifiers the hook generator makes for a module (perf.h.j2, perf.c.j2)."""
    m, M = module, module.upper()
    names = [
        f"{M}_PERF_H",
        f"{M}_NSTATS",
        f"{M}_NTERMS",
        f"{M}_NACCESSES",
        f"{M}_SET",
        f"{M}_INC",
        f"{M}_READ",
        f"{M}_ACCESS",
        f"{m}_stats_t",
        f"{m}_stats_create",
        f"{m}_stat_module",
        f"{m}_stat_fields",
        f"{m}_perf_init",
        f"{m}_access_ids",
        f"{m}_access_words",
    ]
    names += [f"{M}_TERM_{t}" for t in terms] + [f"{m}_term_{t}" for t in terms]
    names += [f"{m}_cost_{c}" for c in cats] + [f"{M}_ACCESS_{a}" for a in accs]
    return names


# The runtime's public names (runtime/include/mp.h) and what the generated code uses.
RUNTIME_NAMES = """mp_stat_module mp_stat_field mp_stat_type mp_stats_new MP_STAT_U64 MP_H
    MP_ACCESS_UNCLASSIFIED MP_OBJ_RTS mp_access_register mp_access_declare MPROF_DISABLE
    mp_access_word mp_access_declare_word mpr_access_bytes
    mp_main mp_fiber_t uint64_t int64_t size_t NULL stdin stderr fprintf abort fmin fmax
    log2 sqrt s params rec names id i M_PI linux unix EOF INT64_MAX errno""".split()
PLAIN = ["A", "b", "Xy", "N_1", "op", "Op", "OP", "T", "t2", "Stat", "EltSize", "P", "q_",
         "Zz9", "M", "k", "x" * 64, "y" * 65]  # fmt: skip
NAME_POOL = sorted(
    set(
        PLAIN
        + C_CXX_KEYWORDS
        + RUNTIME_NAMES
        + [n for m in MODULES[:10] for n in generated_names(m)]
    )
)
NAMES = st.one_of(st.sampled_from(PLAIN), st.sampled_from(NAME_POOL))
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
    module = draw(st.one_of(st.sampled_from(MODULES), NAMES))
    lines = [f"interface {module} -- {draw(DESCS)}", "statistics"]
    for s in stats:
        t = draw(
            st.sampled_from(
                ["", " : u64", " : i64", " : double", " measured", " : double measured"]
            )
        )
        lines.append(f"  {s}{t} -- {draw(DESCS)}")
    lines.append("terms")
    for k, t in enumerate(terms):
        expr = draw(expressions(stats + terms[:k]))
        if draw(st.integers(0, 9)) == 0:  # min/max of many arguments: deep nesting in C
            many = draw(st.integers(min_value=2, max_value=300))
            expr = f"{draw(st.sampled_from(['min', 'max']))}({', '.join([expr] * many)})"
        lines += [f"  {t} -- {draw(DESCS)}", f"    {{ {t} = {expr}; }}"]
    members = terms + draw(st.lists(st.sampled_from(stats), unique=True))
    ncat = draw(st.integers(min_value=1, max_value=len(members)))
    cats = draw(st.lists(NAMES, min_size=ncat, max_size=ncat, unique=True))
    lines.append("categories")
    for c in range(ncat):
        lines += [f"  {cats[c]} -- {draw(DESCS)}", "    { " + " ".join(members[c::ncat]) + " }"]
    accs = draw(st.lists(NAMES, max_size=3, unique=True))
    if accs:
        lines += ["accesses"] + [f"  {a} -- {draw(DESCS)}" for a in accs]
    return "\n".join(lines) + "\n", stats, terms


# What a rejected generated interface may be rejected for: a name, or nesting.
REJECTIONS = (
    "keyword",
    "reserved",
    "macro",
    "function",
    "namespace",
    "longer than",
    "ends in",
    "nested too deeply",
    "already declared",
)
CXX_HEADER_CHECK = '#include "{m}_perf.h"\nint main() {{ return {M}_NSTATS > 0 ? 0 : 1; }}\n'


def compile_all(ifaces, tmp):
    """Generate every interface into its own folder and compile: the C files with gcc and
    clang as C11 (hooks on and off) and gcc's default GNU dialect, the headers as C++17."""
    from iface_helpers import RUNTIME_INCLUDE

    from mprof.iface.codegen import write

    c_files, cxx_files = [], []
    for k, iface in enumerate(ifaces):
        out = tmp / f"i{k}"
        write(iface, out)
        c_files.append(str(out / f"{iface.name}_perf.c"))
        cxx = out / "header.cpp"
        cxx.write_text(CXX_HEADER_CHECK.format(m=iface.name, M=iface.name.upper()))
        cxx_files.append(str(cxx))
    common = ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{RUNTIME_INCLUDE}"]
    jobs = [
        ["gcc", "-std=c11", *common, *c_files],
        ["gcc", "-std=c11", "-DMPROF_DISABLE", *common, *c_files],
        ["gcc", *common, *c_files],  # gnu17: GNU macros (linux, M_PI) are defined
        ["clang", "-std=c11", *common, *c_files],
        ["g++", "-std=c++17", *common, *cxx_files],
        ["clang++", "-std=c++17", *common, *cxx_files],
    ]
    for cmd in jobs:
        proc = subprocess.run([*cmd, f"-I{tmp}"], capture_output=True, text=True, cwd=tmp)
        assert proc.returncode == 0, (
            f"{' '.join(cmd[:3])} rejects what `iface check` accepts:\n{proc.stderr[-3000:]}\n"
            + "\n---\n".join(format_interface(i) for i in ifaces)
        )


def accepted(text):
    try:
        return parse_interface(text)
    except SourceError as err:
        assert any(r in err.message for r in REJECTIONS), err.format()
        return None


@settings(FUZZ, max_examples=120)
@given(interfaces(), st.data())
def test_generated_valid_interfaces(generated, data):
    text, stats, terms = generated
    iface = accepted(text)
    if iface is None:
        return
    iface = exercise(text)
    assert [s.name for s in iface.statistics] == stats
    assert sorted(iface.parameter_names()) == sorted(
        f"{iface.name}:{n}"
        for n in terms + [m for c in iface.categories for m in c.terms if m in stats]
    )
    values = {s: data.draw(st.floats(allow_nan=False, width=64)) for s in stats}
    for name, value in iface.term_values(values).items():
        assert isinstance(value, float) and (math.isnan(value) or value == value)


@settings(FUZZ, max_examples=25)
@given(st.lists(interfaces(), min_size=1, max_size=8))
def test_whatever_check_accepts_compiles(generated):
    """Names from generated identifiers, the runtime's names and C/C++ keywords; module names
    near and beyond the file-name limit; min/max of hundreds of arguments: every interface
    `check` accepts compiles warning-free as C11 (gcc, clang) and its header as C++17."""
    ifaces = []
    for text, _, _ in generated:
        COUNT["inputs"] += 1
        iface = accepted(text)
        if iface is not None and iface.name not in {i.name for i in ifaces}:
            ifaces.append(iface)
    if ifaces:
        with tempfile.TemporaryDirectory(prefix="mprof-fuzz-cc-") as tmp:
            compile_all(ifaces, Path(tmp))


def test_fuzz_volume():
    """When the whole module ran, it fed at least 10,000 inputs through the front end."""
    if COUNT["inputs"] == 0:  # run alone with -k: nothing to count
        return
    print(f"fuzzed {COUNT['inputs']} inputs")
    assert COUNT["inputs"] >= 10_000, COUNT
