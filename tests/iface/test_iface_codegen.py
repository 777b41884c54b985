"""Generated C: compiles warning-free with gcc and clang (hooks on and off), vanishes with
MPROF_DISABLE, keeps its access declarations as long as latency accounting is on, and computes
the same term values as the Python evaluator."""

import math
import random
import subprocess

import pytest
from iface_helpers import CFLAGS, INTERFACES, RUNTIME_INCLUDE, compilers, run
from tooling import require_tool

from mprof.errors import MprofError
from mprof.iface import load_interface, parse_interface
from mprof.iface.codegen import write

COMPILERS = compilers()


@pytest.fixture(autouse=True)
def _compiler_installed():
    """scripts/bootstrap.sh installs gcc and clang: a machine with neither is broken."""
    if not COMPILERS:
        require_tool("gcc", "clang")


# A user of the hooks: `st`, `n` and `x` are only used inside hooks, so with MPROF_DISABLE
# the hooks must still "use" them or -Werror=unused-variable would reject the caller.
USER_C = """
#include "pipe_perf.h"

double user(uint64_t id, int k);
double user(uint64_t id, int k) {
    pipe_stats_t *st = pipe_stats_create(id);
    int n = k * 2;
    PIPE_SET(st, P, 1);
    PIPE_INC(st, M, n);
    PIPE_INC(st, T, 3u);
    PIPE_ACCESS(consume);
    uint64_t m = PIPE_READ(st, M);
    return (double)m;
}
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    for path in INTERFACES.values():
        write(load_interface(path), out)
    (out / "user.c").write_text(USER_C)
    return out


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("disable", [False, True], ids=["hooks", "disabled"])
def test_compiles_warning_free(generated, cc, disable):
    flags = CFLAGS + ["-O2", f"-I{RUNTIME_INCLUDE}"] + (["-DMPROF_DISABLE"] if disable else [])
    for name in [*INTERFACES, "user"]:
        src = generated / (f"{name}_perf.c" if name != "user" else "user.c")
        obj = generated / f"{name}-{cc}-{int(disable)}.o"
        run([cc, *flags, "-c", str(src), "-o", str(obj)])
        symbols = run(["nm", str(obj)]).stdout
        uses_runtime = any(line.split()[-1].startswith("mp_") for line in symbols.splitlines())
        assert uses_runtime == (not disable), symbols


# Terms named like the generated file's own tables, categories like its cost functions' prefix
OWN_NAMES = """interface own -- names the generated code uses for itself
statistics
  P -- p
  Q -- q
terms
  names -- a term called names
    { names = Q; }
  values -- a term called values
    { values = 2 * Q; }
  term -- a term called term
    { term = P; }
categories
  cost -- a category called cost
    { P names values term }
"""


@pytest.mark.parametrize("cc", COMPILERS)
def test_terms_named_like_the_generated_tables_compile(tmp_path, cc):
    write(parse_interface(OWN_NAMES, "own.perf"), tmp_path)
    for disable in ([], ["-DMPROF_DISABLE"]):
        run(
            [
                cc,
                *CFLAGS,
                "-O2",
                *disable,
                f"-I{RUNTIME_INCLUDE}",
                "-c",
                str(tmp_path / "own_perf.c"),
                "-o",
                str(tmp_path / "own.o"),
            ]
        )


@pytest.mark.parametrize("cc", COMPILERS)
def test_disabled_hooks_generate_no_code(generated, cc):
    obj = generated / f"user-{cc}-empty.o"
    run(
        [
            cc,
            *CFLAGS,
            "-O2",
            "-DMPROF_DISABLE",
            f"-I{RUNTIME_INCLUDE}",
            "-c",
            str(generated / "user.c"),
            "-o",
            str(obj),
        ]
    )
    undefined = run(["nm", "-u", str(obj)]).stdout.split()
    # Only the (NULL-returning) create function remains; no runtime symbol at all.
    assert undefined == ["U", "pipe_stats_create"]


# (defines, what the compiled user and pipe_perf.c may reference): statistics hooks need
# mp_stats_new, access hooks mp_access_register and mp_access_word (registration, which checks
# the id), mpr_access_bytes (the inline declaration) and mp_access_declare (its fallback).
# Access declarations serve latency accounting: MPROF_NO_LATENCY drops them, MPROF_DISABLE too
# unless MPROF_KEEP_ACCESS (statistics off, latency accounting on).
ACCESS = {"mp_access_register", "mp_access_word", "mpr_access_bytes", "mp_access_declare"}
SWITCHES = [
    ([], {"mp_stats_new", *ACCESS}),
    (["-DMPROF_NO_LATENCY"], {"mp_stats_new"}),
    (["-DMPROF_DISABLE", "-DMPROF_KEEP_ACCESS"], ACCESS),
    (["-DMPROF_DISABLE"], set()),
    (["-DMPROF_DISABLE", "-DMPROF_NO_LATENCY", "-DMPROF_KEEP_ACCESS"], set()),
]


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize(
    "defines,expected", SWITCHES, ids=["+".join(d) or "default" for d, _ in SWITCHES]
)
def test_access_hooks_follow_latency_switch(generated, cc, defines, expected):
    used = set()
    for name in ("pipe", "user"):
        src = generated / (f"{name}_perf.c" if name != "user" else "user.c")
        obj = generated / f"{name}-{cc}-sw{abs(hash(tuple(defines)))}.o"
        run([cc, *CFLAGS, "-O2", *defines, f"-I{RUNTIME_INCLUDE}", "-c", str(src), "-o", str(obj)])
        used |= {line.split()[-1] for line in run(["nm", "-u", str(obj)]).stdout.splitlines()}
    assert {s for s in used if s.startswith(("mp_", "mpr_"))} == expected, used


CALC = """
interface calc -- exercises every expression form
statistics
  U          -- unsigned counter
  I : i64    -- signed counter
  D : double -- real value
  Z : double -- often zero
terms
  Lin  -- linear
          { Lin = 3 * U - I / 2 + 0.25 * D; }
  Fun  -- functions
          { Fun = log2(U + 1) + sqrt(D * D + 1) - min(I, D, U) + max(U, -I); }
  Div  -- maybe by zero
          { Div = (U - I) / Z; }
  Neg  -- unary minus
          { Neg = -(-D) * -Lin; }
  Nest -- terms of terms
          { Nest = Lin * 2 + Fun / (1 + Neg * Neg) - log2(Z) - sqrt(I); }
categories
  A -- first
       { U Lin Fun }
  B -- second
       { Div Neg Nest }
"""


def random_expr(rng, names, depth=0):
    """A random expression in the language's concrete syntax."""
    if depth > 4 or rng.random() < 0.3:
        if rng.random() < 0.6:
            return rng.choice(names)
        return rng.choice(["0", "1", "2.5", "1e-3", "7", "0.1", "123456789"])
    kind = rng.random()
    if kind < 0.55:
        op = rng.choice("+-*/")
        return f"({random_expr(rng, names, depth + 1)} {op} {random_expr(rng, names, depth + 1)})"
    if kind < 0.7:
        return f"-{random_expr(rng, names, depth + 1)}"
    func = rng.choice(["log2", "sqrt", "min", "max"])
    nargs = 1 if func in ("log2", "sqrt") else rng.randint(2, 4)
    args = ", ".join(random_expr(rng, names, depth + 1) for _ in range(nargs))
    return f"{func}({args})"


def random_interface(seed=7, nterms=60):
    rng = random.Random(seed)
    stats = ["U", "I", "D", "Z"]
    lines = [
        "interface rnd -- random expressions",
        "statistics",
        "  U -- u",
        "  I : i64 -- i",
        "  D : double -- d",
        "  Z : double -- z",
        "terms",
    ]
    for k in range(nterms):
        # Later terms may use earlier ones: no cycles by construction.
        names = stats + [f"T{j}" for j in range(k)]
        lines += [f"  T{k} -- term {k}", f"    {{ T{k} = {random_expr(rng, names)}; }}"]
    lines += [
        "categories",
        "  ALL -- everything",
        "    { " + " ".join(f"T{k}" for k in range(nterms)) + " }",
    ]
    return "\n".join(lines) + "\n"


def random_stats(rng):
    def real():
        return rng.choice(
            [
                0.0,
                -0.0,
                1.0,
                -1.0,
                rng.uniform(-1e3, 1e3),
                rng.uniform(0, 1),
                rng.lognormvariate(0, 20) * rng.choice([-1, 1]),
                1e308,
                5e-324,
                math.inf,
            ]
        )

    return {
        "U": rng.choice([0, 1, 2**64 - 1, 2**53 + 1, rng.randrange(2**64), rng.randrange(1000)]),
        "I": rng.choice(
            [0, -1, -(2**63), 2**63 - 1, rng.randrange(-(2**63), 2**63), rng.randrange(-1000, 1000)]
        ),
        "D": real(),
        "Z": rng.choice([0.0, real()]),
    }


DRIVER = """
#include <stdio.h>
#include <stdlib.h>
#include "{m}_perf.h"

int main(void) {{
    char u[64], i[64], d[64], z[64];
    while (scanf("%63s %63s %63s %63s", u, i, d, z) == 4) {{
        {m}_stats_t s;
        s.U = strtoull(u, NULL, 10);
        s.I = strtoll(i, NULL, 10);
        s.D = strtod(d, NULL);
        s.Z = strtod(z, NULL);
{prints}
        printf("\\n");
    }}
    return 0;
}}
"""


def c_values(iface, tmp_path, cc, samples):
    write(iface, tmp_path)
    prints = "\n".join(
        f'        printf("%a ", {iface.name}_term_{t.name}(&s));' for t in iface.terms
    )
    (tmp_path / "driver.c").write_text(DRIVER.format(m=iface.name, prints=prints))
    exe = tmp_path / "driver"
    run(
        [
            cc,
            *CFLAGS,
            "-O2",
            "-DMPROF_DISABLE",
            f"-I{tmp_path}",
            str(tmp_path / "driver.c"),
            str(tmp_path / f"{iface.name}_perf.c"),
            "-o",
            str(exe),
            "-lm",
        ]
    )
    stdin = "".join(
        f"{s['U']} {s['I']} {float(s['D']).hex()} {float(s['Z']).hex()}\n" for s in samples
    )
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    return [[_from_c(v) for v in line.split()] for line in out.stdout.splitlines()]


def _from_c(text):
    return math.nan if "nan" in text else float.fromhex(text)


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("text", [CALC, random_interface()], ids=["calc", "random"])
def test_c_and_python_agree(tmp_path, cc, text):
    iface = parse_interface(text, "agree.perf")
    rng = random.Random(2024)
    samples = [random_stats(rng) for _ in range(300)]
    from_c = c_values(iface, tmp_path, cc, samples)
    assert len(from_c) == len(samples)
    for stats, row in zip(samples, from_c):
        expected = list(iface.term_values(stats).values())
        for term, want, got in zip(iface.terms, expected, row):
            assert _same(want, got), (term.name, term.expr.to_text(), stats, want, got)
        for term, want in zip(iface.terms, expected):
            assert _same(term.evaluate(stats), want)


# The headers the generated files include, and the language modes users compile them in.
GENERATED_INCLUDES = ["math.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h"]
MODES = {
    "c": ["-std=c11", "-std=gnu11", "-std=c2x", "-std=gnu2x"],
    "c++": ["-std=c++17", "-std=gnu++17", "-std=c++20"],
}


def _object_macros(cc, lang, mode, tmp_path):
    source = tmp_path / "includes.h"
    source.write_text("".join(f"#include <{h}>\n" for h in GENERATED_INCLUDES))
    driver = {"gcc": "g++", "clang": "clang++"}[cc] if lang == "c++" else cc
    out = run([driver, mode, "-dM", "-E", "-x", lang, str(source)]).stdout
    return {
        line.split()[1]
        for line in out.splitlines()
        if line.startswith("#define ") and "(" not in line.split()[1]
    }


@pytest.mark.parametrize("cc", COMPILERS)
def test_no_macro_of_the_generated_files_headers_is_a_name(tmp_path, cc):
    """A statistic named like an object-like macro of a header the generated files include
    (BIG_ENDIAN from <stdlib.h> in GNU mode, INT32_WIDTH in C23) would be expanded in
    `s->NAME`: the checker refuses every such name the compilers define, in every mode."""
    names = set()
    for lang, modes in MODES.items():
        for mode in modes:
            names |= _object_macros(cc, lang, mode, tmp_path)
    names = {n for n in names if not n.startswith("_")}  # refused as reserved already
    assert "BIG_ENDIAN" in names and "EOF" in names  # the probe itself works
    accepted = []
    for name in sorted(names):
        text = (
            f"interface zz -- z\nstatistics\n  A -- a\n  {name} -- x\ncategories\n"
            "  C -- c\n    { A }\n"
        )
        try:
            parse_interface(text, "zz.perf")
        except MprofError:
            continue
        accepted.append(name)
    assert not accepted, f"names the checker accepts that {cc} defines as macros: {accepted}"
