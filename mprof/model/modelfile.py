"""Model files: an instantiated cost model as versioned JSON (schema `mprof.model`, version 1).

A model file is self-describing for later stages: besides parameter values, their covariance and
the fit's quality figures, it records for every module the interface path and the
category -> terms structure, so a report can list categories and combine per-term costs without
parsing the interface again.  Turning statistics into term values still needs the term
expressions; `Model` loads the recorded interface lazily for that (once per module).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scipy import stats as sstats

from ..errors import MprofError

SCHEMA = "mprof.model"
VERSION = 1


@dataclass
class ModuleInfo:
    module: str
    path: str  # absolute path of the .perf file when the model was made
    statistics: list[str]
    terms: list[str]
    categories: dict[str, list[str]]  # category -> terms, in interface order
    descriptions: dict[str, str] = field(default_factory=dict)  # category -> description

    def to_json(self, base: Path | None) -> dict:
        out = {"path": self.path, "statistics": self.statistics, "terms": self.terms,
               "categories": self.categories, "category_descriptions": self.descriptions}
        if base is not None:
            try:
                out["relative_path"] = str(Path(self.path).relative_to(base))
            except ValueError:
                import os

                out["relative_path"] = os.path.relpath(self.path, base)
        return out

    @classmethod
    def from_json(cls, module: str, data: dict, base: Path | None) -> "ModuleInfo":
        path = data["path"]
        rel = data.get("relative_path")
        if base is not None and rel and not Path(path).exists() and (base / rel).exists():
            path = str((base / rel).resolve())
        return cls(module, path, list(data["statistics"]), list(data["terms"]),
                   {k: list(v) for k, v in data["categories"].items()},
                   dict(data.get("category_descriptions", {})))

    @classmethod
    def from_interface(cls, iface, path: str) -> "ModuleInfo":
        return cls(
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
    fitted: list[str]  # parameters estimated by this fit; order of `covariance`
    covariance: np.ndarray
    imported: dict[str, str] = field(default_factory=dict)  # parameter -> source model file
    ignored: list[str] = field(default_factory=list)
    quality: dict = field(default_factory=dict)
    interfaces: dict[str, ModuleInfo] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    created_at: str = ""
    path: Path | None = None
    _ifaces: dict = field(default_factory=dict, repr=False)

    # -- persistence ------------------------------------------------------------------------

    def to_json(self, base: Path | None = None) -> dict:
        params = {}
        for name, value in self.values.items():
            params[name] = {
                "value": value,
                "halfwidth": self.halfwidths.get(name),
                "source": "imported" if name in self.imported else "fit",
            }
            if name in self.imported:
                params[name]["from"] = self.imported[name]
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "created_at": self.created_at
            or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "parameters": params,
            "fitted": self.fitted,
            "covariance": [[float(x) for x in row] for row in np.atleast_2d(self.covariance)]
            if self.fitted else [],
            "ignored": self.ignored,
            "quality": self.quality,
            "flags": self.flags,
            "interfaces": {m: info.to_json(base) for m, info in self.interfaces.items()},
            "settings": self.settings,
        }

    def save(self, path: str | Path) -> None:
        path = Path(path)
        text = json.dumps(self.to_json(path.resolve().parent), indent=2, allow_nan=False)
        if path.is_dir():
            raise MprofError(f"{path} is a directory, not a model file")
        tmp = path.with_suffix(path.suffix + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text + "\n")
            tmp.replace(path)  # never leave a half-written model behind
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise MprofError(f"cannot write model {path}: {exc.strerror or exc}") from None
        self.path = path

    @classmethod
    def from_json(cls, data: dict, source: str = "<model>", base: Path | None = None) -> "Model":
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise MprofError(f"{source}: not an mprof model file (schema is not '{SCHEMA}')")
        if data.get("version") != VERSION:
            raise MprofError(f"{source}: model version {data.get('version')} is not supported "
                             f"(this mprof reads version {VERSION})")
        try:
            params = data["parameters"]
            fitted = list(data["fitted"])
            cov = np.array(data["covariance"], dtype=float).reshape(len(fitted), len(fitted))
            return cls(
                values={k: float(v["value"]) for k, v in params.items()},
                halfwidths={k: (float("nan") if v.get("halfwidth") is None
                                else float(v["halfwidth"])) for k, v in params.items()},
                fitted=fitted,
                covariance=cov,
                imported={k: v.get("from", "") for k, v in params.items()
                          if v.get("source") == "imported"},
                ignored=list(data.get("ignored", [])),
                quality=dict(data.get("quality", {})),
                interfaces={m: ModuleInfo.from_json(m, info, base)
                            for m, info in data.get("interfaces", {}).items()},
                settings=dict(data.get("settings", {})),
                flags=dict(data.get("flags", {})),
                created_at=data.get("created_at", ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MprofError(f"{source}: malformed model file ({type(exc).__name__}: {exc})") \
                from None

    # -- evaluation -------------------------------------------------------------------------

    def _interface(self, module: str):
        if module not in self.interfaces:
            raise MprofError(f"the model has no module '{module}' "
                             f"(modules: {', '.join(self.interfaces) or 'none'})")
        if module not in self._ifaces:
            from ..iface import load_interface

            path = self.interfaces[module].path
            if not Path(path).exists():
                raise MprofError(f"interface of module '{module}' not found at {path}")
            self._ifaces[module] = load_interface(path)
        return self._ifaces[module]

    def term_values(self, module: str, stats: Mapping[str, float]) -> dict[str, float]:
        info = self.interfaces.get(module)
        iface = self._interface(module)
        record = dict.fromkeys(info.statistics, 0.0)
        record.update(stats)
        return iface.term_values(record)

    def category_costs(self, module: str, stats: Mapping[str, float] | None = None, *,
                       terms: Mapping[str, float] | None = None) -> dict[str, float]:
        """Estimated seconds per cost category for one statistics record (or term values).
        Ignored terms cost nothing; so do terms whose parameter the model lacks."""
        if terms is None:
            terms = self.term_values(module, stats or {})
        info = self.interfaces[module]
        return {
            cat: float(sum(self.values.get(f"{module}:{term}", 0.0) * terms.get(term, 0.0)
                           for term in cat_terms))
            for cat, cat_terms in info.categories.items()
        }

    def category_bands(self, module: str, stats: Mapping[str, float] | None = None, *,
                       terms: Mapping[str, float] | None = None,
                       confidence: float = 0.90) -> dict[str, tuple[float, float]]:
        """(cost, half width) per category: the half width of the `confidence` interval of the
        category's cost from the fitted parameters' covariance (imported parameters are taken
        as exact)."""
        if terms is None:
            terms = self.term_values(module, stats or {})
        costs = self.category_costs(module, terms=terms)
        info = self.interfaces[module]
        index = {name: i for i, name in enumerate(self.fitted)}
        quantile = self.t_quantile(confidence)
        out = {}
        for cat, cat_terms in info.categories.items():
            f = np.zeros(len(self.fitted))
            for term in cat_terms:
                i = index.get(f"{module}:{term}")
                if i is not None:
                    f[i] = terms.get(term, 0.0)
            var = float(f @ self.covariance @ f) if len(f) else 0.0
            out[cat] = (costs[cat], math.sqrt(max(var, 0.0)) * quantile)
        return out

    def t_quantile(self, confidence: float = 0.90) -> float:
        dof = self.quality.get("dof") or 0
        if dof <= 0:
            return float("nan")
        return float(sstats.t.ppf(0.5 + confidence / 2, dof))


def load_model(path: str | Path) -> Model:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise MprofError(f"{path}: cannot read model: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise MprofError(f"{path}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
    except UnicodeDecodeError:
        raise MprofError(f"{path}: not valid UTF-8: is it a model file?") from None
    except (ValueError, RecursionError) as exc:  # huge integers, deep nesting
        raise MprofError(f"{path}: not a model file: {exc or 'nested too deeply'}") from None
    model = Model.from_json(data, str(path), path.resolve().parent)
    model.path = path
    return model
