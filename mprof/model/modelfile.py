"""Model files: an instantiated cost model as versioned JSON (schema `mprof.model`, version 2).

A model file is self-contained: besides parameter values, their joint covariance (fitted and
imported parameters) and the fit's quality figures, it records for every module the source text
of its interface, so turning statistics into term values needs nothing but the file.  Version 1
files (covariance of the fitted parameters only, interfaces found by path) are still read.

Every cost and every band of every stage is priced here, by `Model.price` over a TermMatrix
(many samples at once; a mapping for one): the report, the gate, frames and what-if call it,
the fit's own error figures use the same arithmetic (mprof.model.pricing), `export-c` prints
its formula, and term values come from the one term evaluator (mprof.model.terms), so there is
one pricing of a model.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .. import jsontext
from ..db.validate import read_text
from ..errors import MprofError, SourceError, line_column
from ..files import write_file
from ..numbers import check_number
from ..report.jsonout import dumps
from .filecheck import check_model_data
from .fit import t_quantile
from .pricing import Estimate, Estimates, cost, known_cost, variance
from .terms import TermEvaluator, TermMatrix, lacking_statistics

__all__ = [
    "Estimate",
    "Estimates",
    "FIXED",
    "Model",
    "ModuleInfo",
    "TermMatrix",
    "load_model",
    "missing_text",
]

SCHEMA = "mprof.model"
FIXED = "(fixed by the script)"  # Model.imported source of a FixParameter value
VERSION = 2
READABLE_VERSIONS = (1, 2)


@dataclass
class ModuleInfo:
    module: str
    path: str  # absolute path of the .perf file when the model was made
    statistics: list[str]
    terms: list[str]
    categories: dict[str, list[str]]  # category -> terms, in interface order
    descriptions: dict[str, str] = field(default_factory=dict)  # category -> description
    source: str | None = None  # the interface's text (None in version 1 files)

    def to_json(self, base: Path | None) -> dict:
        out = {
            "path": self.path,
            "statistics": self.statistics,
            "terms": self.terms,
            "categories": self.categories,
            "category_descriptions": self.descriptions,
            "source": self.source,
        }
        if base is not None:
            out["relative_path"] = os.path.relpath(self.path, base)
        return out

    @classmethod
    def from_json(cls, module: str, data: dict, base: Path | None) -> "ModuleInfo":
        path = data["path"]
        rel = data.get("relative_path")
        if base is not None and rel and not Path(path).exists() and (base / rel).exists():
            path = str((base / rel).resolve())
        return cls(
            module,
            path,
            list(data["statistics"]),
            list(data["terms"]),
            {k: list(v) for k, v in data["categories"].items()},
            dict(data.get("category_descriptions", {})),
            data.get("source"),
        )

    @classmethod
    def from_interface(cls, iface, path: str, source: str | None = None) -> "ModuleInfo":
        return cls(
            source=source,
            module=iface.name,
            path=str(Path(path).resolve()),
            statistics=[s.name for s in iface.statistics],
            terms=[t.name for t in iface.terms],
            categories={c.name: list(c.terms) for c in iface.categories},
            descriptions={c.name: c.description for c in iface.categories},
        )


@dataclass
class Model:
    values: dict[str, float]  # every usable parameter: fitted and imported
    halfwidths: dict[str, float]  # 90 % interval half widths (imported: as in their source)
    fitted: list[str]  # parameters estimated by this fit
    covariance: np.ndarray  # joint covariance over `cov_names`
    # parameter -> source model file, or FIXED for a value the script set (FixParameter)
    imported: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    quality: dict = field(default_factory=dict)
    interfaces: dict[str, ModuleInfo] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    created_at: str = ""
    path: Path | None = None
    cov_names: list[str] | None = None  # default: `fitted` (version 1 files)
    _ifaces: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.cov_names is None:
            self.cov_names = list(self.fitted)
        n = len(self.cov_names)
        self.covariance = np.asarray(self.covariance, dtype=float).reshape(n, n)
        self._index = {name: i for i, name in enumerate(self.cov_names)}

    # -- persistence ------------------------------------------------------------------------

    def to_json(self, base: Path | None = None) -> dict:
        params = {}
        for name, value in self.values.items():
            source = "fit"
            if name in self.imported:
                source = "fixed" if self.imported[name] == FIXED else "imported"
            params[name] = {
                "value": value,
                "halfwidth": self.halfwidths.get(name),
                "source": source,
            }
            if source == "imported":
                params[name]["from"] = self.imported[name]
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "created_at": self.created_at
            or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "parameters": params,
            "fitted": self.fitted,
            "covariance_parameters": self.cov_names,
            "covariance": [[float(x) for x in row] for row in self.covariance],
            "ignored": self.ignored,
            "quality": self.quality,
            "flags": self.flags,
            "interfaces": {m: info.to_json(base) for m, info in self.interfaces.items()},
            "settings": self.settings,
        }

    def save(self, path: str | Path) -> None:
        path = Path(path)
        if path.is_dir():
            raise MprofError(f"{path}: is a directory; SaveModel needs a file name")
        # a fit that overflowed is refused, naming the figure, before anything is written
        text = dumps(
            self.to_json(path.resolve().parent),
            f"cannot save model {path}",
            "the model was not saved",
            indent=2,
        )
        if path.is_dir():
            raise MprofError(f"{path} is a directory, not a model file")
        if not path.parent.is_dir():
            raise MprofError(f"cannot write model {path}: the folder {path.parent} does not exist")
        write_file(path, text + "\n", what="model", make_parents=False)  # never half-written
        self.path = path

    @classmethod
    def from_json(cls, data: dict, source: str = "<model>", base: Path | None = None) -> "Model":
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise MprofError(f"{source}: not an mprof model file (schema is not '{SCHEMA}')")
        if data.get("version") not in READABLE_VERSIONS:
            raise MprofError(
                f"{source}: model version {data.get('version')} is not supported "
                f"(this mprof reads versions {READABLE_VERSIONS})"
            )
        check_model_data(data, source)  # every field's type, named by its path
        try:
            params = data["parameters"]
            fitted = list(data["fitted"])
            cov_names = list(data.get("covariance_parameters", fitted))
            cov = np.array(data["covariance"], dtype=float).reshape(len(cov_names), len(cov_names))
            for key, names in (("fitted", fitted), ("covariance_parameters", cov_names)):
                for name in names:
                    if name not in params:
                        raise MprofError(
                            f"{source}: parameters: missing '{name}' (listed in "
                            f"{key}): the file was cut or edited"
                        )
            for k, v in params.items():
                if "halfwidth" not in v:  # every writer gives it, null where there is none
                    raise MprofError(
                        f"{source}: parameters.{k}: missing 'halfwidth' (its 90 % "
                        "interval; null where it has none)"
                    )
                check_number(v["value"], f"{source}: parameters.{k}.value")
                if v.get("halfwidth") is not None:
                    check_number(v["halfwidth"], f"{source}: parameters.{k}.halfwidth", low=0.0)
            if not np.isfinite(cov).all():
                raise MprofError(f"{source}: covariance: not every entry is a finite number")
            return cls(
                values={k: float(v["value"]) for k, v in params.items()},
                halfwidths={
                    k: (float("nan") if v.get("halfwidth") is None else float(v["halfwidth"]))
                    for k, v in params.items()
                },
                fitted=fitted,
                covariance=cov,
                cov_names=cov_names,
                imported={
                    k: (FIXED if v.get("source") == "fixed" else v.get("from", ""))
                    for k, v in params.items()
                    if v.get("source") in ("imported", "fixed")
                },
                ignored=list(data.get("ignored", [])),
                quality=dict(data.get("quality", {})),
                interfaces={
                    m: ModuleInfo.from_json(m, info, base)
                    for m, info in data.get("interfaces", {}).items()
                },
                settings=dict(data.get("settings", {})),
                flags=dict(data.get("flags", {})),
                created_at=data.get("created_at", ""),
            )
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise MprofError(
                f"{source}: malformed model file ({type(exc).__name__}: {exc})"
            ) from None

    # -- evaluation -------------------------------------------------------------------------

    def interface(self, module: str):
        """The module's parsed interface: from the text the file carries, else (version 1)
        from the recorded path."""
        if module not in self.interfaces:
            raise MprofError(
                f"the model has no module '{module}' "
                f"(modules: {', '.join(self.interfaces) or 'none'})"
            )
        if module not in self._ifaces:
            from ..iface import parse_interface, registry

            info = self.interfaces[module]
            if info.source is not None:
                self._ifaces[module] = parse_interface(info.source, info.path)
            else:
                self._ifaces[module] = registry.load_at(module, info.path)
        return self._ifaces[module]

    def check_interfaces(self, source: str) -> None:
        """The interface texts the model file carries parse, and declare the statistics and
        terms the file records for them: a damaged copy is the model file's fault (its path
        and the module named), never the original .perf file's, which may be fine."""
        for module, info in self.interfaces.items():
            if info.source is None:
                continue
            if not isinstance(info.source, str):
                raise MprofError(
                    f"{source}: interfaces.{module}.source: the interface text of "
                    f"module '{module}' that the model file carries is not text "
                    "(the file is damaged); refit the model or restore the file"
                )
            try:
                iface = self.interface(module)
            except MprofError as exc:
                detail = str(exc)
                if isinstance(exc, SourceError):
                    detail = f"line {exc.line}, column {exc.column} of that text: {exc.message}"
                raise MprofError(
                    f"{source}: interfaces.{module}.source: the interface text of "
                    f"module '{module}' that the model file carries is damaged "
                    f"({detail}); refit the model or restore the file"
                ) from None
            stats = [s.name for s in iface.statistics]
            terms = [t.name for t in iface.terms]
            if set(stats) != set(info.statistics) or set(terms) != set(info.terms):
                raise MprofError(
                    f"{source}: interfaces.{module}: the interface text the model "
                    "file carries does not declare the statistics and terms the "
                    "file records for it (the file is damaged); refit the model "
                    "or restore the file"
                )
            if iface.name != module:
                raise MprofError(
                    f"{source}: interfaces.{module}: the carried interface text "
                    f"is of module '{iface.name}' (the file is damaged)"
                )

    def _evaluator(self, modules: Iterable[str]) -> TermEvaluator:
        """The term evaluator of the model's interfaces of `modules` (parsed on first use)."""
        wanted = set(modules)
        return TermEvaluator({m: self.interface(m) for m in self.interfaces if m in wanted})

    def missing_statistics(self, objects: Iterable) -> dict[str, list[str]]:
        """Module -> statistics of the model's interface that some record of a run lacks
        (a run made with another version of the interface): they are priced as 0.  A lacking
        statistic bound to a PAPI event is absent instead (term_matrix)."""
        objects = list(objects)
        interfaces = {}
        for module in {obj.module for obj in objects if obj.module in self.interfaces}:
            try:
                interfaces[module] = self.interface(module)
            except MprofError:
                continue  # the caller reports the module as unpriced
        return lacking_statistics(interfaces, objects)

    def term_matrix(self, samples: Iterable[Iterable]) -> TermMatrix:
        """Parameter name -> term value for many samples at once: one row per sample, the sum
        over its statistics records (anything with `module` and `stats`, e.g.
        mprof.profile.ObjectRecord) of the modules the model has; one column per term of those
        modules.  A term that needs a statistic the run could not count (an absent PAPI
        statistic, mprof.model.terms) cannot be priced: an error when the model prices it."""
        samples = [[obj for obj in records if obj.module in self.interfaces] for records in samples]
        matrix = self._evaluator(obj.module for records in samples for obj in records).matrix(
            samples
        )
        for name, why in matrix.absent.items():
            if name in self.values and name not in self.ignored:
                raise MprofError(
                    f"{why}: the model prices that term (parameter {name}), so "
                    "the run cannot be priced without it; price it with a model "
                    "fitted without the term (IgnoreTerm)"
                )
        return matrix

    def term_values(self, module: str, stats: Mapping[str, float]) -> dict[str, float]:
        """Term name -> value for one statistics record of `module`."""
        self.interface(module)  # a module the model lacks is an error, not an empty record
        record = _Record(module, stats)
        return {
            name.split(":", 1)[1]: value
            for name, value in self.term_matrix([[record]]).row(0).items()
        }

    def priced_terms(self, objects: Iterable) -> dict[str, float]:
        """Parameter name -> term value summed over statistics records (anything with
        `module` and `stats`, e.g. mprof.profile.ObjectRecord) of the modules the model has."""
        return self.term_matrix([objects]).row(0)

    def price(self, terms: Mapping[str, float] | TermMatrix) -> Estimate | Estimates:
        """THE pricing of the model: cost = sum c_p f_p over the parameters it has (ignored
        terms and terms without a parameter cost nothing), variance = f . Cov . f over the joint
        covariance of fitted and imported parameters.  For a TermMatrix, every row at once
        (Estimates); for a mapping parameter -> term value, that one sample (Estimate)."""
        matrix = terms if isinstance(terms, TermMatrix) else TermMatrix.of(terms)
        # huge term values overflow to inf (and inf - inf to nan): the callers check what they
        # print or write (mprof.report.jsonout), so numpy's warnings would only be noise
        with np.errstate(over="ignore", invalid="ignore"):
            return self._price(matrix, isinstance(terms, TermMatrix))

    def _price(self, matrix: TermMatrix, many: bool) -> Estimate | Estimates:
        priced = [n for n in self.values if n not in self.ignored]
        fitted = [n for n in self.fitted if n in self.values and n not in self.ignored]
        # imported and fixed parameters: in the covariance's order, as the fit's offset adds them
        # (then any outside the covariance: imported into a version 1 file)
        outside = [n for n in priced if n not in self._index]
        known = [n for n in self.cov_names if n not in fitted and n in priced] + outside
        seconds = cost(
            matrix.columns(fitted),
            np.array([self.values[n] for n in fitted]),
            known_cost(matrix.columns(known), np.array([self.values[n] for n in known])),
        )
        f = matrix.columns(self.cov_names)
        f[:, [self._index[n] for n in self.cov_names if n not in priced]] = 0.0
        spread = variance(f, self.covariance) + self._uncorrelated_variance(matrix, outside)
        if many:
            return Estimates(seconds, spread)
        return Estimate(float(seconds[0]), float(spread[0]))

    def _uncorrelated_variance(self, matrix: TermMatrix, outside: list[str]) -> np.ndarray:
        """Parameters outside the covariance (imported into a version 1 file) count with their
        own interval, as independent."""
        if not outside:
            return np.zeros(matrix.rows)
        q = self.t_quantile()
        own = np.array([self._own_variance(n, q) for n in outside])
        return (matrix.columns(outside) ** 2) @ own

    def _own_variance(self, name: str, quantile: float) -> float:
        """A parameter's variance from its interval half width (0 when unknown)."""
        h = self.halfwidths.get(name, float("nan"))
        return (h / quantile) ** 2 if h == h and quantile == quantile else 0.0

    def categories_of(self, module: str) -> dict[str, list[str]]:
        """Category -> parameter names, for categories with at least one priced term."""
        info = self.interfaces[module]
        out = {}
        for cat, terms in info.categories.items():
            names = [f"{module}:{t}" for t in terms]
            if any(n in self.values and n not in self.ignored for n in names):
                out[cat] = names
        return out

    def price_categories(
        self, module: str, terms: Mapping[str, float] | TermMatrix
    ) -> dict[str, Estimate | Estimates]:
        """Category -> priced cost, for one module's term values (parameter names as keys, or
        a TermMatrix: every row at once)."""
        if isinstance(terms, TermMatrix):
            return {
                cat: self.price(terms.restrict(names))
                for cat, names in self.categories_of(module).items()
            }
        return {
            cat: self.price({n: terms.get(n, 0.0) for n in names})
            for cat, names in self.categories_of(module).items()
        }

    def residual_variance(self, sample_times: Iterable[float]) -> float:
        """Variance of the fit's residual scatter summed over samples of the given model times
        (seconds^2): sigma^2 per sample, relative to the time when the fit was normalised."""
        q = self.quality
        se = q.get("residual_se")
        if se is None:  # version 1 files
            chi, dof = q.get("chi_square"), q.get("dof")
            if chi is None or not dof or dof <= 0:
                return float("nan")
            se = math.sqrt(float(chi) / float(dof))
        times = list(sample_times)
        if self.settings.get("normalize"):
            return se * se * sum(t * t for t in times)
        return se * se * len(times)

    def t_quantile(self, confidence: float = 0.90) -> float:
        return t_quantile(confidence, self.quality.get("dof") or 0)

    def sub_covariance(self, names: list[str]) -> np.ndarray:
        """The joint covariance of some parameters (imports of a later session)."""
        idx = [self._index.get(n) for n in names]
        out = np.zeros((len(names), len(names)))
        q = self.t_quantile()
        for a, i in enumerate(idx):
            for b, j in enumerate(idx):
                if i is not None and j is not None:
                    out[a, b] = self.covariance[i, j]
            if i is None:
                out[a, a] = self._own_variance(names[a], q)
        return out


@dataclass
class _Record:
    """One statistics record, for pricing a bare mapping of statistics."""

    module: str
    stats: Mapping[str, float]


class _NonFinite(ValueError):
    def __init__(self, token: str):
        super().__init__(token)
        self.token = token


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise _NonFinite(text)
    return value


def _refuse_constant(token: str):  # NaN, Infinity, -Infinity
    raise _NonFinite(token)


def _locate(text: str, token: str) -> tuple[int, int]:
    """Line and column of the first `token` outside a JSON string."""
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|' + re.escape(token), text):
        if m.group(0) == token:
            return line_column(text, m.start())
    return 1, 1


def missing_text(module: str, names: list[str]) -> str:
    """The warning about statistics a run lacks (Model.missing_statistics)."""
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    return (
        f"module {module}: the run lacks statistic(s) {shown} of the model's interface "
        f"(recorded with another version of {module}.perf?); they are priced as 0"
    )


def load_model(path: str | Path) -> Model:
    path = Path(path)
    text = None
    try:
        text = read_text(path, "model")  # bad bytes are an error at their place
        data = jsontext.loads(
            text, str(path), parse_float=_finite_float, parse_constant=_refuse_constant
        )
    except _NonFinite as exc:
        line, column = _locate(text, exc.token)
        raise MprofError(
            f"{path}:{line}:{column}: {exc.token} is not a finite number; a model "
            "file holds finite parameters only (refit, or fix the file)"
        ) from None
    except json.JSONDecodeError as exc:
        raise MprofError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise MprofError(f"{path}: not a model file: JSON nested too deeply") from None
    except ValueError:  # an integer of more than 4300 digits (Python's limit)
        digits = jsontext.huge_integer(text or "")
        if digits is None:
            raise MprofError(f"{path}: not a model file") from None
        line, column = line_column(text, digits.start())
        raise MprofError(
            f"{path}:{line}:{column}: an integer of {len(digits.group().lstrip('-'))} digits "
            "is no parameter value: is it a model file?"
        ) from None
    model = Model.from_json(data, str(path), path.resolve().parent)
    model.path = path
    model.check_interfaces(str(path))
    return model
