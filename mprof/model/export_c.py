"""`mprof model export-c`: C functions computing each category's estimated cost.

Term expressions are printed by the interface package's own C emitter (Expr.to_c over the
parsed AST), the same trees the fitter evaluated, so the C and Python costs cannot disagree.
Parameter values are written with repr(), the shortest text that reads back as the same double.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ..errors import MprofError
from .modelfile import Model

_TEMPLATES = Path(__file__).with_name("templates")


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _double(value: float) -> str:
    text = repr(float(value))
    if text in ("nan", "inf", "-inf"):
        raise MprofError(f"parameter value {text} cannot be exported")
    return text if any(c in text for c in ".e") else text + ".0"


def _module_context(model: Model, module: str, prefix: str) -> dict:
    from ..iface.expr import STATISTIC

    iface = model._interface(module)  # loads the recorded .perf once
    info = model.interfaces[module]
    index = {s.name: i for i, s in enumerate(iface.statistics)}
    if [s.name for s in iface.statistics] != info.statistics:
        raise MprofError(f"interface {info.path} changed since the model was fitted "
                         "(its statistics differ); refit before exporting")

    upper = f"{prefix.upper()}_{_ident(module).upper()}"

    def render(ref) -> str:
        if ref.kind == STATISTIC:
            return f"stats[{upper}_STAT_{_ident(ref.name)}]"
        return f"v_{_ident(ref.name)}"

    categories = []
    for cat in iface.categories:
        lets, emitted, terms = [], set(), []
        for name in cat.terms:
            param = f"{module}:{name}"
            if param not in model.values or param in model.ignored:
                continue  # ignored term: costs nothing, and its value is not computed
            term = iface.term(name)
            for dep in term.plan or [term]:  # dependencies first, the term itself last
                if dep.name not in emitted:
                    emitted.add(dep.name)
                    lets.append(f"const double v_{_ident(dep.name)} = {dep.expr.to_c(render)};")
            terms.append({"param": _double(model.values[param]), "var": f"v_{_ident(name)}"})
        categories.append({"name": _ident(cat.name), "description": cat.description,
                           "lets": lets, "terms": terms})
    return {
        "name": module,
        "path": info.path,
        "upper": upper,
        "iface_upper": module.upper(),  # the hook generator's macro prefix
        "fn": f"{prefix}_{_ident(module)}",
        "statistics": [_ident(s.name) for s in iface.statistics],
        "categories": categories,
    }


def export_c(model: Model, outdir: str | Path, prefix: str = "mpm") -> list[Path]:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise MprofError(f"prefix '{prefix}' is not a C identifier")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES),
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    context = {
        "source": str(model.path or "model"),
        "prefix": prefix,
        "header": f"{prefix}_model.h",
        "guard": f"{prefix.upper()}_MODEL_H",
        "modules": [_module_context(model, m, prefix) for m in model.interfaces],
    }
    written = []
    for template, name in (("model.h.j2", f"{prefix}_model.h"),
                           ("model.c.j2", f"{prefix}_model.c")):
        path = outdir / name
        path.write_text(env.get_template(template).render(context))
        written.append(path)
    return written
