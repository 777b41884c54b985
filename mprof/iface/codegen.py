"""C hook generator: a checked Interface -> `<module>_perf.h` and `<module>_perf.c`.

The templates (templates/perf.h.j2, perf.c.j2) target the runtime's public header mp.h.
Term definitions are printed from the same expression trees the Python evaluator walks, by the
one C expression emitter (cexpr.py) that `mprof model export-c` uses too.
"""

from __future__ import annotations

import os

from pathlib import Path

import jinja2

from ..errors import MprofError
from ..files import make_folder, write_file
from .cexpr import term_expressions
from .model import Interface

_TEMPLATES = Path(__file__).with_name("templates")

# When the access declarations (M_ACCESS) compile in: they serve latency accounting, so
# MPROF_NO_LATENCY drops them; MPROF_DISABLE (statistics off) drops them too unless the build
# keeps latency accounting and says so with MPROF_KEEP_ACCESS (CMakeLists.txt).
ACCESS_ON = ("!defined(MPROF_NO_LATENCY) && "
             "(!defined(MPROF_DISABLE) || defined(MPROF_KEEP_ACCESS))")


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
    return term_expressions(iface, lambda stat: f"(double)s->{stat}",
                            lambda term: f"{m}_term_{term}(s)")


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
    """Modules compiled together must not produce the same files or macro prefixes."""
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


def write(iface: Interface, outdir) -> list[Path]:
    """Writes the generated files into outdir (created if needed); returns their paths.

    Files are always rewritten (atomically) so build tools see them newer than the .perf."""
    outdir = make_folder(outdir)
    written = []
    for name, text in render(iface).items():
        written.append(write_file(outdir / name, text))
    return written
