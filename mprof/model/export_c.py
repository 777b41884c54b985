"""`mprof model export-c`: C functions computing each category's estimated cost.

Term expressions are printed by the interface package's one C expression emitter
(mprof.iface.cexpr, which the hook generator uses too) from the parsed trees the fitter
evaluated, so the C and Python costs cannot disagree.
Parameter values are written with repr(), the shortest text that reads back as the same double.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ..errors import MprofError
from ..files import make_folder, write_file
from ..iface.cexpr import term_definitions
from .modelfile import Model

_TEMPLATES = Path(__file__).with_name("templates")


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _double(value: float) -> str:
    text = repr(float(value))
    if text in ("nan", "inf", "-inf"):
        raise MprofError(f"parameter value {text} cannot be exported")
    return text if any(c in text for c in ".e") else text + ".0"


# The functions export-c makes for a module besides one per category (<prefix>_<module>_<CAT>):
# a category of one of these names would declare the same C name twice.
_MODULE_FUNCTIONS = ("category_names", "costs", "terms", "costs_record", "terms_record")


def _module_context(model: Model, module: str, prefix: str) -> dict:
    iface = model.interface(module)  # parsed once from the text the model file carries
    info = model.interfaces[module]
    if [s.name for s in iface.statistics] != info.statistics:
        raise MprofError(
            f"interface {info.path} changed since the model was fitted "
            "(its statistics differ); refit before exporting"
        )

    upper = f"{prefix.upper()}_{_ident(module).upper()}"

    def lets_for(names):
        """A local double per term the names need, dependencies first."""
        return [
            f"const double {var} = {expr};"
            for var, expr in term_definitions(
                iface,
                names,
                lambda stat: f"stats[{upper}_STAT_{_ident(stat)}]",
                lambda term: f"v_{_ident(term)}",
            )
        ]

    index = {name: i for i, name in enumerate(model.cov_names)}
    covnames = [t.name for t in iface.terms if f"{module}:{t.name}" in index]
    covterms = [{"index": index[f"{module}:{n}"], "var": f"v_{_ident(n)}"} for n in covnames]

    categories = []
    for cat in iface.categories:
        if _ident(cat.name) in _MODULE_FUNCTIONS:
            raise MprofError(
                f"interface {module}: category '{cat.name}' cannot be exported to "
                f"C: its function {prefix}_{_ident(module)}_{_ident(cat.name)} would "
                f"be one of the module's own ({', '.join(_MODULE_FUNCTIONS)}); "
                "rename the category and refit"
            )
        # ignored terms cost nothing, and their values are not computed
        names = [
            n
            for n in cat.terms
            if f"{module}:{n}" in model.values and f"{module}:{n}" not in model.ignored
        ]
        terms = [
            {"param": _double(model.values[f"{module}:{n}"]), "var": f"v_{_ident(n)}"}
            for n in names
        ]
        categories.append(
            {
                "name": _ident(cat.name),
                "description": cat.description,
                "lets": lets_for(names),
                "terms": terms,
            }
        )
    return {
        "name": module,
        "path": info.path,
        "upper": upper,
        "iface_upper": module.upper(),  # the hook generator's macro prefix
        "fn": f"{prefix}_{_ident(module)}",
        "statistics": [_ident(s.name) for s in iface.statistics],
        "categories": categories,
        "covlets": lets_for(covnames),
        "covterms": covterms,
    }


def export_c(model: Model, outdir: str | Path, prefix: str = "mpm") -> list[Path]:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
        raise MprofError(f"prefix '{prefix}' is not a C identifier")
    outdir = Path(outdir)
    make_folder(outdir)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    context = {
        "source": str(model.path or "model"),
        "prefix": prefix,
        "header": f"{prefix}_model.h",
        "guard": f"{prefix.upper()}_MODEL_H",
        "modules": [_module_context(model, m, prefix) for m in model.interfaces],
        "params": list(model.cov_names),
        "covariance": [[_double(x) for x in row] for row in model.covariance],
        "quantile": _double(
            model.t_quantile() if model.t_quantile() == model.t_quantile() else 0.0
        ),
        "confidence_pct": 90,
    }
    written = []
    for template, name in (
        ("model.h.j2", f"{prefix}_model.h"),
        ("model.c.j2", f"{prefix}_model.c"),
    ):
        path = outdir / name
        write_file(path, env.get_template(template).render(context), what="C file")
        written.append(path)
    return written
