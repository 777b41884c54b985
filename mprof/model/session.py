"""A modeling session: what a modeling script sets up, and the fit it asks for.

The Tcl layer (script.py) only translates commands into calls on FitSession, so the same
session can be driven from Python (tests, notebooks) without any Tcl.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import linalg

from ..db.store import Condition
from ..errors import MprofError
from ..iface import registry
from ..numbers import parse_number
from ..profile import MEASURES
from .filecheck import GRANULARITIES, REPLICATES
from .fit import DEFAULT_CUTOFF, Design, FitOptions, FitResult, mre, replicate_mre, solve
from .misses import Miss
from .misses import find as find_misses
from .modelfile import FIXED, Model, ModuleInfo, load_model
from .runset import RunSet, database_interface_digests, database_modules
from .samples import LoadedInterface, load_samples, make_design


class SaveFailed(MprofError):
    """A model file named before a fit could not be written after it: `origin` is what the
    caller passed to SaveModel to say where the request came from."""

    def __init__(self, message: str, origin: object):
        super().__init__(message)
        self.origin = origin


@dataclass
class Imported:
    module_spec: str  # as written in the script (the paper writes "Rts" for module rts)
    model_path: Path
    terms: list[str]


@dataclass
class FitOutcome:
    result: FitResult
    model: Model
    warnings: list[str]
    # the designs fitted and tested, each with all of its runs (None: it holds them all), for
    # misses(): computed only when asked for (mprof fit --misses), not on every fit
    designs: list[tuple[str, Design, Design | None]] = field(default_factory=list)

    def misses(self) -> list[Miss]:
        """Every fit and test sample with its prediction (misses.py)."""
        return [
            m
            for which, design, every in self.designs
            for m in find_misses(which, design, self.result, every)
        ]


@dataclass
class FitSession:
    base_dir: Path = field(default_factory=Path.cwd)
    fit_databases: list[Path] = field(default_factory=list)
    test_databases: list[Path] = field(default_factory=list)
    interfaces: dict[str, LoadedInterface] = field(default_factory=dict)
    search_path: list[Path] = field(default_factory=list)
    imports: list[Imported] = field(default_factory=list)
    ignores: list[tuple[str, str]] = field(default_factory=list)  # (module spec, term)
    fixes: list[tuple[str, str, float]] = field(default_factory=list)  # (module spec, term, v)
    granularity: str = "pe"
    measure: str | None = None  # None: cpu where recorded, else elapsed (mprof.profile)
    # "median" or "min": a sample is each configuration's median or fastest run
    replicates: str = "all"
    normalize: bool = False
    cutoff: float = DEFAULT_CUTOFF
    select: list[Condition] = field(default_factory=list)
    # where each SaveModel's file goes, with what the caller passed to name the request in an
    # error (the script: its file and line); written after every fit from then on
    save_paths: dict[Path, object] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    last: FitOutcome | None = None
    # Set by a caller that reuses a script's model on runs of its own (the gate, through
    # fit_script_on): they replace the script's fit databases (its Select still applies), test
    # databases and SaveModel are not used.
    runs: RunSet | None = None

    def resolve(self, path: str) -> Path:
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.base_dir / p)

    # -- directives -------------------------------------------------------------------------

    def add_database(self, path: str, test: bool = False) -> None:
        if self.runs is not None:
            return
        resolved = self.resolve(path)
        if not resolved.exists():
            raise MprofError(f"profile database {path} not found ({resolved})")
        target = self.test_databases if test else self.fit_databases
        real = resolved.resolve()
        if any(p.resolve() == real for p in target):
            self.warnings.append(f"database {path} is listed twice; its runs are counted once")
            return
        other = self.fit_databases if test else self.test_databases
        if any(p.resolve() == real for p in other):
            self.warnings.append(
                f"database {path} is both a fit and a test database: the test "
                "MRE is then not a held-out error"
            )
        target.append(resolved)

    def load_interface(self, spec: str) -> str:
        """Load a .perf file by path, or find MODULE.perf on the search path."""

        if spec.endswith(".perf") or os.sep in spec or "/" in spec:
            path = self.resolve(spec)
            if not path.exists():
                raise MprofError(f"interface file {spec} not found ({path})")
        else:
            path = self.find_interface(spec)
            if path is None:
                raise MprofError(
                    f"no interface {spec}.perf on the search path: "
                    + registry.describe(self.own_search_dirs())
                )
        return self._load_file(path)

    def _load_file(self, path: Path) -> str:
        from ..iface import load_interface

        iface = load_interface(str(path))
        self.interfaces[iface.name] = LoadedInterface(
            iface.name, str(path.resolve()), iface, path.read_text(encoding="utf-8")
        )
        return iface.name

    def own_search_dirs(self) -> list[Path]:
        """The script's folders on the interface search path (mprof.iface.registry): its
        InterfacePath entries, then its own folder."""
        return [*self.search_path, self.base_dir]

    def find_interface(self, module: str) -> Path | None:
        return registry.find(module, self.own_search_dirs())

    def import_parameters(self, module: str, model_path: str, terms: list[str]) -> None:
        path = self.resolve(model_path)
        model = load_model(path)  # read now so a bad file is reported at this line
        name = _match_module(
            module, model.interfaces.keys() | {k.split(":")[0] for k in model.values}
        )
        if name is None:
            raise MprofError(f"model {model_path} has no module '{module}'")
        unknown = [t for t in terms if f"{name}:{t}" not in model.values]
        if unknown:
            ignored = [t for t in unknown if f"{name}:{t}" in model.ignored]
            note = (
                (
                    f" ({', '.join(ignored)} ignored when that model was fitted; IgnoreTerm "
                    "them here too)"
                )
                if ignored
                else ""
            )
            raise MprofError(
                f"model {model_path} has no parameter(s) "
                + ", ".join(f"{name}:{t}" for t in unknown)
                + note
            )
        if not terms:
            raise MprofError("ImportParameter needs at least one term")
        self.imports.append(Imported(module, path, list(terms)))

    def fix_parameter(self, module: str, term: str, value: str) -> None:
        """A parameter whose value the physics fixes (e.g. 1 for a term already in seconds):
        it is not fitted, counts like an imported parameter with no uncertainty, and its
        term's time is taken out of the samples before the fit."""
        number = parse_number(value, "FixParameter: the value")
        self.fixes.append((module, term, number))

    def ignore_terms(self, module: str, terms: list[str]) -> None:
        if not terms:
            raise MprofError("IgnoreTerm needs at least one term")
        self.ignores.extend((module, t) for t in terms)

    def set_measure(self, value: str) -> None:
        if value not in MEASURES:
            raise MprofError(f"measure must be one of {', '.join(MEASURES)}, got '{value}'")
        self.measure = value

    def set_replicates(self, value: str) -> None:
        if value not in REPLICATES:
            raise MprofError(f"replicates must be 'all', 'median' or 'min', got '{value}'")
        self.replicates = value

    def set_granularity(self, value: str) -> None:
        if value not in GRANULARITIES:
            raise MprofError(f"granularity must be 'pe' or 'run', got '{value}'")
        self.granularity = value

    def set_cutoff(self, value: str) -> None:
        self.cutoff = parse_number(value, "cut-off", low=0.0, high=1.0, open_high=True)

    # -- the fit ----------------------------------------------------------------------------

    def _autoload(self) -> None:
        """With no Interface directive, use every module of the fit data that has an interface:
        the text the runs recorded (by its digest) or the file on the search path
        (mprof.iface.registry.for_runs, which warns when the two differ); the paper's scripts
        name no interfaces."""
        modules = (
            self.runs.modules if self.runs is not None else database_modules(self.fit_databases)
        )
        digests = (
            self.runs.interface_digests()
            if self.runs is not None
            else database_interface_digests(self.fit_databases)
        )
        for module in sorted(modules):
            path, warnings = registry.for_runs(
                module, digests.get(module, ()), self.own_search_dirs()
            )
            self.warnings.extend(warnings)
            if path is not None:
                self._load_file(path)

    def _resolve_names(self) -> tuple[dict[str, float], dict[str, str], set[str], np.ndarray]:
        """Imported values, their sources, ignored parameters, and the imported parameters'
        joint covariance (parameters from one model keep their correlations; different source
        models are independent)."""
        values: dict[str, float] = {}
        sources: dict[str, str] = {}
        blocks = []
        self._import_halfwidths = {}
        for imp in self.imports:
            module = _match_module(imp.module_spec, self.interfaces.keys())
            if module is None:
                raise MprofError(
                    f"ImportParameter: module '{imp.module_spec}' has no loaded interface"
                )
            model = load_model(imp.model_path)
            src_module = _match_module(imp.module_spec, {k.split(":")[0] for k in model.values})
            fresh = [t for t in imp.terms if f"{module}:{t}" not in values]
            for term in fresh:
                self._check_term(module, term, "ImportParameter")
                values[f"{module}:{term}"] = model.values[f"{src_module}:{term}"]
                sources[f"{module}:{term}"] = str(imp.model_path)
                self._import_halfwidths[f"{module}:{term}"] = model.halfwidths.get(
                    f"{src_module}:{term}", float("nan")
                )
            blocks.append(model.sub_covariance([f"{src_module}:{t}" for t in fresh]))
        for spec, term, number in self.fixes:
            module = _match_module(spec, self.interfaces.keys())
            if module is None:
                raise MprofError(f"FixParameter: module '{spec}' has no loaded interface")
            self._check_term(module, term, "FixParameter")
            name = f"{module}:{term}"
            if name in values:  # quoted as the directive's arguments: the error's line is its
                kind = "fixed" if sources[name] == FIXED else "imported"
                raise MprofError(
                    f"FixParameter: term '{term}' of module '{spec}' is already {kind}"
                )
            values[name] = number
            sources[name] = FIXED
            self._import_halfwidths[name] = 0.0
            blocks.append(np.zeros((1, 1)))
        ignored = set()
        for spec, term in self.ignores:
            module = _match_module(spec, self.interfaces.keys())
            if module is None:
                raise MprofError(f"IgnoreTerm: module '{spec}' has no loaded interface")
            self._check_term(module, term, "IgnoreTerm")
            name = f"{module}:{term}"
            if name in values:  # priced by a given value, or left out: not both
                kind = (
                    "fixed (FixParameter)"
                    if sources[name] == FIXED
                    else "imported (ImportParameter)"
                )
                raise MprofError(
                    f"IgnoreTerm: term '{term}' of module '{spec}' is {kind}; "
                    "a term is priced by a given value or left out, not both"
                )
            ignored.add(name)
        cov = linalg.block_diag(*blocks) if blocks else np.zeros((0, 0))
        return values, sources, ignored, cov

    def _check_term(self, module: str, term: str, directive: str) -> None:
        terms = self.interfaces[module].term_names
        if term not in terms:
            raise MprofError(
                f"{directive}: module '{module}' has no term '{term}' (terms: {', '.join(terms)})"
            )

    def fit_runs(self) -> RunSet:
        """The runs the fit reads: the caller's run set, else the fit databases' runs, as the
        script's Select keeps them."""
        if self.runs is not None:
            return self.runs.where(self.select)
        return RunSet.from_databases(self.fit_databases, self.select)

    def test_runs(self) -> RunSet | None:
        """The test databases' runs that the script's Select keeps; None without any."""
        if self.runs is not None or not self.test_databases:
            return None
        return RunSet.from_databases(self.test_databases, self.select)

    def fit(self) -> FitOutcome:
        if self.runs is not None:
            self.test_databases = []
        return self._fit()

    @staticmethod
    def _ignore_absent(samples, imported, ignored: set[str], warnings: list[str]) -> set[str]:
        """Terms that need a statistic some runs could not count (a PAPI event unavailable
        there) are left out of the fit, with a message; an imported one cannot be priced."""
        out = set(ignored)
        for term, why in samples.absent_terms.items():
            if term in imported:
                raise MprofError(
                    why.replace("the term is ignored", "an imported term cannot be left out")
                )
            if term not in out:
                warnings.append(why)
                out.add(term)
        return out

    def _fit(self) -> FitOutcome:
        if self.runs is None and not self.fit_databases:
            raise MprofError("no fit database (use FitDatabase)")
        if not self.interfaces:
            self._autoload()
        if not self.interfaces:
            raise MprofError(
                "no interface loaded and none found for the modules in the fit "
                "databases (use Interface path.perf)"
            )
        warnings: list[str] = []
        warnings.extend(self.warnings)
        imported, sources, ignored, imported_cov = self._resolve_names()
        samples = load_samples(
            self.fit_runs(), self.interfaces, self.granularity, (), warnings, self.measure
        )
        measure = samples.measure
        ignored = self._ignore_absent(samples, imported, ignored, warnings)
        test_samples = None
        test_runs = self.test_runs()
        if test_runs is not None:
            test_samples = load_samples(
                test_runs, self.interfaces, self.granularity, (), warnings, measure
            )
            ignored = self._ignore_absent(test_samples, imported, ignored, warnings)
            if test_samples.n == 0:
                warnings.append(
                    "the test databases give no samples (Select excludes them?); no test MRE"
                )
                test_samples = None

        def design(sample_set):
            return make_design(sample_set, imported, ignored, imported_cov)

        how = self.replicates
        pick = (lambda s: s) if how == "all" else (lambda s: s.representatives(how))
        test = None
        if test_samples is not None:
            test = design(pick(test_samples))
        options = FitOptions(normalize=self.normalize, cutoff=self.cutoff)
        fitted = design(pick(samples))
        result = solve(fitted, options, test)
        every_run = test_runs = None
        if how != "all":
            # the noise floor from every run; single runs' test error beside the representatives'
            result.replicates = how
            every_run = design(samples)
            result.noise_mre = replicate_mre(every_run.t, every_run.groups)
            if test_samples is not None:
                test_runs = design(test_samples)
                result.run_test_mre = mre(result.predict(test_runs), test_runs.t)
        designs = [("fit", fitted, every_run)]
        if test is not None:
            designs.append(("test", test, test_runs))
        warnings.extend(diagnostics(result))
        model = self._model(result, imported, sources, ignored, measure)
        self.last = FitOutcome(result, model, list(dict.fromkeys(warnings)), designs)
        if self.runs is None:
            for path, origin in self.save_paths.items():
                try:
                    model.save(path)
                except MprofError as exc:
                    raise SaveFailed(str(exc), origin) from None
        return self.last

    def save_model(self, path: str, origin: object = None) -> None:
        if self.runs is not None:
            return
        resolved = self.resolve(path)
        self.save_paths.setdefault(resolved, origin)
        if self.last is not None:
            self.last.model.save(resolved)

    def _model(self, result: FitResult, imported, sources, ignored, measure: str) -> Model:
        values = {n: float(v) for n, v in zip(result.names, result.values)}
        halfwidths = {n: float(h) for n, h in zip(result.names, result.halfwidths)}
        values.update(imported)
        halfwidths.update({n: self._import_halfwidths.get(n, float("nan")) for n in imported})
        halfwidths = {n: (None if h != h else h) for n, h in halfwidths.items()}  # NaN -> null
        return Model(
            values=values,
            halfwidths=halfwidths,
            fitted=list(result.names),
            covariance=result.covariance,
            cov_names=[*result.names, *result.imported],
            imported=sources,
            ignored=sorted(ignored),
            quality=quality_dict(result),
            interfaces={
                m: ModuleInfo.from_interface(li.iface, li.path, li.source)
                for m, li in self.interfaces.items()
            },
            settings={
                "granularity": self.granularity,
                "replicates": self.replicates,
                "measure": measure,
                "normalize": self.normalize,
                "cutoff": self.cutoff,
                "confidence": result.options.confidence,
                "select": [f"{c.name}={c.value}" for c in self.select],
                "fit_databases": (
                    list(self.runs.sources)
                    if self.runs is not None
                    else [str(p) for p in self.fit_databases]
                ),
                "test_databases": [str(p) for p in self.test_databases],
            },
            flags={
                "interval_contains_zero": result.zero_interval,
                "rank_deficient_terms": result.null_groups,
            },
        )


def _match_module(spec: str, modules) -> str | None:
    modules = list(modules)
    if spec in modules:
        return spec
    folded = [m for m in modules if m.lower() == spec.lower()]
    return folded[0] if len(folded) == 1 else None


def _finite(x):
    """A quality figure that may be undefined (no replicates, no degrees of freedom) or
    overflow (replicate times of 1e308 s): null in the model file then (docs/fitting.md)."""
    return None if x is None or not math.isfinite(x) else float(x)


def quality_dict(result: FitResult) -> dict:
    lof = result.lack_of_fit
    return {
        "chi_square": result.chi_square,
        "sse": result.sse,
        "dof": result.dof,
        "residual_se": result.residual_se,
        "noise_mre_percent": _finite(result.noise_mre),
        "replicates": result.replicates,
        "run_test_mre_percent": _finite(result.run_test_mre),
        "lack_of_fit": None
        if lof is None
        else {
            "pure_error_ss": lof.pure_error_ss,
            "pure_error_dof": lof.pure_error_dof,
            "lack_of_fit_ss": lof.lack_of_fit_ss,
            "lack_of_fit_dof": lof.lack_of_fit_dof,
            "groups": lof.groups,
            "f": _finite(lof.f_statistic),
            "p_value": _finite(lof.p_value),
        },
        "t_quantile": _finite(result.t_quantile),
        "singular_values": [float(w) for w in result.singular_values],
        "rank": result.rank,
        "n_parameters": len(result.names),
        "n_samples": result.n_samples,
        "sample_mre_percent": _finite(result.sample_mre),
        "n_test": result.n_test,
        "test_mre_percent": _finite(result.test_mre),
    }


def diagnostics(result: FitResult) -> list[str]:
    out = []
    if result.rank_deficient:
        out.append(
            f"rank {result.rank} < {len(result.names)} parameters: the data cannot "
            "separate some terms (more varied runs, merged terms or IgnoreTerm needed)"
        )
        for group in result.null_groups:
            out.append("  linearly dependent: " + ", ".join(group))
    if result.zero_interval:
        out.append("interval contains 0 (term may not matter): " + ", ".join(result.zero_interval))
    for name in result.negative:
        out.append(
            f"{name} has a negative unit cost ({result.parameter(name)[0]:g} s): the "
            "terms do not match what the data measures (a missing or collinear term?)"
        )
    lof = result.lack_of_fit
    if lof is not None and lof.p_value == lof.p_value and lof.p_value < 0.01:
        out.append(
            f"lack of fit (F test p = {lof.p_value:.2g}): the residual is larger than the "
            "replicates' scatter; the model misses something the noise does not explain"
        )
    return out
