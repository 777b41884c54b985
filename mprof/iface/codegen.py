"""C hook generator: a checked Interface -> `<module>_perf.h` and `<module>_perf.c`.

The templates (templates/perf.h.j2, perf.c.j2) target the runtime's public header mp.h.
Term definitions are printed from the same expression trees the Python evaluator walks, by the
one C expression emitter (cexpr.py) that `mprof model export-c` uses too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import jinja2

from ..errors import MprofError, SourceError
from ..files import make_folder, write_files
from .cexpr import term_expressions
from .model import Interface

_TEMPLATES = Path(__file__).with_name("templates")

# When the access declarations (M_ACCESS) compile in: they serve latency accounting, so
# MPROF_NO_LATENCY drops them; MPROF_DISABLE (statistics off) drops them too unless the build
# keeps latency accounting and says so with MPROF_KEEP_ACCESS (CMakeLists.txt).
ACCESS_ON = "!defined(MPROF_NO_LATENCY) && (!defined(MPROF_DISABLE) || defined(MPROF_KEEP_ACCESS))"


def _ccomment(text) -> str:
    """Makes text safe inside a /* */ comment: no comment end, no nested comment start
    (-Wcomment), no trigraphs (-Wtrigraphs under -std=c11)."""
    text = str(text)
    while "*/" in text or "/*" in text or "??" in text:
        text = text.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    return text


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["ccomment"] = _ccomment
    return env


_ENV = None


def _env() -> jinja2.Environment:
    global _ENV
    if _ENV is None:
        _ENV = _environment()
    return _ENV


def term_c_expressions(iface: Interface) -> dict[str, str]:
    """Each term's definition as a C expression over `const <m>_stats_t *s`: another term is
    its own generated function."""
    m = iface.name
    return term_expressions(
        iface, lambda stat: f"(double)s->{stat}", lambda term: f"{m}_term_{term}(s)"
    )


def render(iface: Interface) -> dict[str, str]:
    """File name -> contents of the generated header and source."""
    context = {
        "iface": iface,
        "m": iface.name,
        "M": iface.name.upper(),
        "source": os.path.basename(iface.path),
        "term_c": term_c_expressions(iface),
        "acc_on": ACCESS_ON,
    }
    env = _env()
    return {
        f"{iface.name}_perf.h": env.get_template("perf.h.j2").render(context),
        f"{iface.name}_perf.c": env.get_template("perf.c.j2").render(context),
    }


def check_module_names(ifaces: list[Interface]) -> None:
    """Modules compiled together must not produce the same files, macro prefixes or C names:
    `a`'s term `b_stats_create` and module `a_term_b` would both declare `a_term_b_stats_create`
    (and a program that includes both headers would not compile).  Every name a module's header
    declares starts with the module's name (`a_`, `A_`), so those are compared."""
    seen: dict[str, Interface] = {}
    for iface in ifaces:
        key = iface.name.upper()
        if key in seen:
            other = seen[key]
            raise MprofError(
                f"interfaces '{other.name}' ({other.path}) and '{iface.name}' ({iface.path}) "
                "would generate the same hook names"
            )
        seen[key] = iface
    owners: dict[str, Interface] = {}
    for iface in ifaces:
        for name in sorted(_declared_names(iface)):
            other = owners.setdefault(name, iface)
            if other is not iface:
                line, column, what = _origin(iface, name)
                _, _, first = _origin(other, name)
                raise SourceError(
                    iface.path,
                    line,
                    column,
                    f"{what} of interface '{iface.name}' generates the C name {name}, which "
                    f"{first} of interface '{other.name}' ({other.path}) generates too: "
                    "modules compiled together need distinct names (rename one)",
                )


def _declared_names(iface: Interface) -> set[str]:
    """The identifiers of the generated header that carry the module's prefix."""
    header = render(iface)[f"{iface.name}_perf.h"]
    header = re.sub(r"/\*.*?\*/|//[^\n]*", " ", header, flags=re.S)  # descriptions are no C
    prefixes = (f"{iface.name}_", f"{iface.name.upper()}_")
    return {w for w in re.findall(r"\b[A-Za-z_]\w*\b", header) if w.startswith(prefixes)}


def _origin(iface: Interface, name: str) -> tuple[int, int, str]:
    """Where a generated name comes from: the declaration whose name ends it (the longest),
    else the interface itself."""
    best = None
    for kind, decls in (
        ("statistic", iface.statistics),
        ("term", iface.declared_terms),
        ("category", iface.categories),
        ("access", iface.accesses),
    ):
        for decl in decls:
            if name.endswith("_" + decl.name) and (
                best is None or len(decl.name) > len(best[1].name)
            ):
                best = (kind, decl)
    if best is None:
        return iface.line, iface.column, "the hook API"
    kind, decl = best
    return decl.line, decl.column, f"{kind} '{decl.name}'"


def write(ifaces: Interface | list[Interface], outdir) -> list[Path]:
    """Writes the generated files of one or more interfaces into outdir (created if needed);
    returns their paths.  Every file is checked before any is written (one that is an input of
    the command leaves all unwritten), then each is rewritten atomically, so build tools see
    them newer than the .perf."""
    if isinstance(ifaces, Interface):
        ifaces = [ifaces]
    outdir = make_folder(outdir)
    files = [(outdir / name, text) for iface in ifaces for name, text in render(iface).items()]
    write_files(files)
    return [path for path, _ in files]
