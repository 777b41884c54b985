"""The types of a model file's fields, checked when it is read (Model.from_json).

A model file is JSON that anyone can edit; every later use (pricing, `model show`, `export-c`,
the report's bands) trusts its fields' types.  So each field is checked here once, and a wrong
one is an MprofError naming the file and the field's path ("m.json: quality.dof: expected a
number >= 0, got 'x'") instead of a TypeError wherever the field is first used.  Fields are
optional unless the reader needs them (`parameters`, `fitted`, `covariance`); fields this
version does not know are left alone (a newer mprof may add some).
"""

from __future__ import annotations

import math

from ..errors import MprofError
from ..numbers import check_number
from ..profile import MEASURES

# The values a fit's settings take (the directives Granularity and Replicates check them too):
# a model file with another one was edited by hand, and would fail later, far from its field.
GRANULARITIES = ("pe", "run")
# `Replicates`: every run is a sample, or each configuration's median or fastest run
REPLICATES = ("all", "median", "min")
SETTING_VALUES = {"granularity": GRANULARITIES, "replicates": REPLICATES, "measure": MEASURES}

# field -> kind, for the fields with a known meaning; every one may also be null
QUALITY = {
    "chi_square": "nonnegative",
    "sse": "nonnegative",
    "dof": "nonnegative",
    "residual_se": "nonnegative",
    "noise_mre_percent": "number",
    "replicates": "text",
    "run_test_mre_percent": "number",
    "lack_of_fit": "lack_of_fit",
    "t_quantile": "number",
    "singular_values": "numbers",
    "rank": "count",
    "n_parameters": "count",
    "n_samples": "count",
    "sample_mre_percent": "number",
    "n_test": "count",
    "test_mre_percent": "number",
}
LACK_OF_FIT = {
    "pure_error_ss": "number",
    "pure_error_dof": "number",
    "lack_of_fit_ss": "number",
    "lack_of_fit_dof": "number",
    "groups": "count",
    "f": "number",
    "p_value": "number",
}
SETTINGS = {
    "granularity": "text",
    "replicates": "text",
    "measure": "text",
    "normalize": "bool",
    "cutoff": "number",
    "confidence": "number",
    "select": "texts",
    "fit_databases": "texts",
    "test_databases": "texts",
}
FLAGS = {"interval_contains_zero": "texts", "rank_deficient_terms": "text_lists"}
INTERFACE = {
    "path": "text",
    "relative_path": "text",
    "statistics": "texts",
    "terms": "texts",
    "categories": "text_lists_map",
    "category_descriptions": "text_map",
}  # `source` is checked with the carried interface (Model.check_interfaces)
PARAMETER = {"value": "number", "halfwidth": "nonnegative", "source": "text", "from": "text"}
TOP = {
    "created_at": "text",
    "fitted": "texts",
    "covariance_parameters": "texts",
    "ignored": "texts",
}

_EXPECTED = {
    "text": "a string",
    "bool": "true or false",
    "texts": "a list of strings",
    "text_lists": "a list of lists of strings",
    "text_map": "an object of strings",
    "text_lists_map": "an object of lists of strings",
    "object": "an object",
}


def _show(value) -> str:
    text = "null" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _texts(value) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


_SHAPES = {
    "text": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "texts": _texts,
    "text_lists": lambda v: isinstance(v, list) and all(_texts(x) for x in v),
    "text_map": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "text_lists_map": lambda v: isinstance(v, dict) and all(_texts(x) for x in v.values()),
    "object": lambda v: isinstance(v, dict),
}


def check_value(value, kind: str, where: str) -> None:
    """One field's value (not null) is of its kind; else an MprofError naming `where`."""
    if kind == "number":
        check_number(value, where)
    elif kind == "nonnegative":
        check_number(value, where, low=0.0)
    elif kind == "count":
        check_number(value, where, low=0, integer=True)
    elif kind == "numbers":
        if not isinstance(value, list):
            raise MprofError(f"{where}: expected a list of numbers, got {_show(value)}")
        for i, x in enumerate(value):
            check_number(x, f"{where}[{i}]")
    elif kind == "lack_of_fit":
        check_fields(value, LACK_OF_FIT, where)
    elif not _SHAPES[kind](value):
        raise MprofError(f"{where}: expected {_EXPECTED[kind]}, got {_show(value)}")


def check_fields(data, kinds: dict[str, str], where: str, *, nullable: bool = True) -> None:
    """`data` is an object whose known fields are of their kinds (null allowed unless not
    `nullable`).  `where` is the object's path, or "file:" for the file's top level."""
    check_value(data, "object", where)
    for name, kind in kinds.items():
        field = f"{where} {name}" if where.endswith(":") else f"{where}.{name}"
        value = data.get(name)
        if value is None:
            if name in data and not nullable:
                raise MprofError(f"{field}: expected {_EXPECTED.get(kind, kind)}, got null")
            continue
        check_value(value, kind, field)


def check_model_data(data: dict, source: str) -> None:
    """Every field of a model file (a dict with the right schema and version) is of its type:
    called before any field is used."""
    for name in ("parameters", "fitted", "covariance"):
        if name not in data:
            raise MprofError(f"{source}: the model file has no '{name}'")
    check_fields(data, TOP, f"{source}:", nullable=False)
    _check_parameters(data["parameters"], f"{source}: parameters")
    for name, kinds in (("quality", QUALITY), ("flags", FLAGS), ("settings", SETTINGS)):
        if name in data:
            check_fields(data[name], kinds, f"{source}: {name}")
    _check_settings(data.get("settings") or {}, f"{source}: settings")
    for name in ("fitted", "covariance_parameters"):
        names = data.get(name) or []
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise MprofError(f"{source}: {name}: {', '.join(twice)} named more than once")
    if "interfaces" in data:
        check_value(data["interfaces"], "object", f"{source}: interfaces")
        for module, info in data["interfaces"].items():
            check_fields(info, INTERFACE, f"{source}: interfaces.{module}", nullable=False)
            for key in ("path", "statistics", "terms", "categories"):
                if key not in info:
                    raise MprofError(f"{source}: interfaces.{module}: no '{key}'")
        # a parameter prices a term of its module's interface: without the interface its
        # cost would be left out of every report, with nothing said
        for name in data["parameters"]:
            module = name.partition(":")[0]
            if module not in data["interfaces"]:
                raise MprofError(
                    f"{source}: parameters.{name}: the file carries no interface of module "
                    f"{module} (interfaces: {', '.join(sorted(data['interfaces'])) or 'none'})"
                )
    _check_covariance(data, source)


def _check_settings(settings: dict, where: str) -> None:
    for name, allowed in SETTING_VALUES.items():
        value = settings.get(name)
        if value is not None and value not in allowed:
            raise MprofError(
                f"{where}.{name}: expected one of {', '.join(allowed)}, got {_show(value)}"
            )
    confidence = settings.get("confidence")
    if confidence is not None and not 0 < confidence < 1:
        raise MprofError(f"{where}.confidence: expected a level in (0, 1), got {_show(confidence)}")


def _check_parameters(params, where: str) -> None:
    check_value(params, "object", where)
    for name, entry in params.items():
        module, _, term = name.partition(":")
        if not module or not term:
            raise MprofError(f"{where}: {_show(name)} is no parameter name (module:Term)")
        check_fields(entry, PARAMETER, f"{where}.{name}")
        if "value" not in entry:
            raise MprofError(f"{where}.{name}: no 'value'")
        if entry.get("source") not in (None, "fit", "imported", "fixed"):
            raise MprofError(
                f'{where}.{name}.source: expected "fit", "imported" or '
                f'"fixed", got {_show(entry["source"])}'
            )


def _check_covariance(data: dict, source: str) -> None:
    """A square matrix of finite numbers over `covariance_parameters` (default: `fitted`)."""
    n = len(data.get("covariance_parameters", data["fitted"]))
    rows = data["covariance"]
    where = f"{source}: covariance"
    if (
        not isinstance(rows, list)
        or len(rows) != n
        or not all(isinstance(row, list) and len(row) == n for row in rows)
    ):
        raise MprofError(
            f"{where}: expected a {n} x {n} matrix (one row and column per covariance parameter)"
        )
    for i, row in enumerate(rows):
        for j, x in enumerate(row):
            check_number(x, f"{where}[{i}][{j}]")
    # a covariance matrix: variances are not negative and the matrix is symmetric, up to the
    # rounding of the fit's arithmetic (a variance that should be 0 may come out -1e-40; two
    # entries that should be equal may differ in their last bits), measured against the
    # variances, which bound every covariance: |c_ij| <= sqrt(c_ii c_jj)
    scale = max((abs(rows[i][i]) for i in range(n)), default=0.0)
    for i in range(n):
        if rows[i][i] < -ROUNDING * scale:
            raise MprofError(f"{where}[{i}][{i}]: a variance cannot be negative, got {rows[i][i]}")
        for j in range(i):
            a, b = rows[i][j], rows[j][i]
            if abs(a - b) > ROUNDING * math.sqrt(abs(rows[i][i] * rows[j][j])):
                raise MprofError(f"{where}: not symmetric ([{i}][{j}] = {a!r}, [{j}][{i}] = {b!r})")


ROUNDING = 1e-9  # far above the fit's rounding, far below any edit that means something
