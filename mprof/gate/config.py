"""Gate configuration: tolerances and significance levels per unit, and the allow-list.

[defaults]
tolerance = 0.05          # relative change that counts as a regression
alpha = 0.05              # significance level
correction = "holm"       # holm | bh | none: multiple-testing correction over all units
behaviour_change = "fail" # fail | warn: whether a BEHAVIOUR CHANGE fails the gate
measure = "cpu"           # ::time units compare CPU time (where recorded) | elapsed
fastest = 2               # --fit: fit each configuration's 2 fastest runs per side (0: all)
disturbed = 0             # --fit: runs this much slower than their configuration's lower
                          # median are left out of the fits (e.g. 0.10; 0: keep every run)

[[unit]]                  # per-unit overrides; later entries win, field by field
match = "*::time"         # glob (fnmatch) on the unit id
tolerance = 0.2
alpha = 0.01

[[allow]]                 # accepted changes: REGRESSION / BEHAVIOUR CHANGE become ALLOWED
match = "gate_ops(*)::fit:gateops.OP_B"
reason = "lookups now hash twice, by design"
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from ..bench.spec import read_toml
from ..errors import MprofError
from ..numbers import check_number
from .stats import CORRECTIONS

DEFAULT_TOLERANCE = 0.05
DEFAULT_ALPHA = 0.05
BEHAVIOUR_POLICIES = ("fail", "warn")
DEFAULT_FASTEST = 2  # docs/measurements/gate-rates.md: the fits' sample
MEASURES = ("cpu", "elapsed")  # what ::time units compare


@dataclass
class UnitRule:
    match: str
    tolerance: float | None = None
    alpha: float | None = None


@dataclass
class AllowRule:
    match: str
    reason: str
    used: int = 0


@dataclass
class GateConfig:
    tolerance: float = DEFAULT_TOLERANCE
    alpha: float = DEFAULT_ALPHA
    correction: str = "holm"
    behaviour_change: str = "fail"
    disturbed_limit: float = 0.0  # mprof.gate.disturbed (0: off)
    fastest: int = DEFAULT_FASTEST  # --fit: each configuration's N fastest runs (0: all)
    measure: str = "cpu"  # ::time units: cpu (where every PE recorded it) | elapsed
    units: list[UnitRule] = field(default_factory=list)
    allow: list[AllowRule] = field(default_factory=list)
    source: str = "<defaults>"
    unsafe_tcl: bool = False  # --fit scripts with full Tcl (--unsafe-tcl; never from a file)

    def settings_for(self, unit_id: str) -> tuple[float, float]:
        """(tolerance, alpha) of a unit: the defaults, overridden by every matching rule in
        order."""
        tolerance, alpha = self.tolerance, self.alpha
        for rule in self.units:
            if fnmatch.fnmatchcase(unit_id, rule.match):
                if rule.tolerance is not None:
                    tolerance = rule.tolerance
                if rule.alpha is not None:
                    alpha = rule.alpha
        return tolerance, alpha

    def allowed(self, unit_id: str) -> AllowRule | None:
        for rule in self.allow:
            if fnmatch.fnmatchcase(unit_id, rule.match):
                return rule
        return None


def check_tolerance(value, where: str) -> float:
    return check_number(value, where, low=0.0)


def check_alpha(value, where: str) -> float:
    return check_number(value, where, low=0.0, high=0.5, open_low=True, open_high=True)


def load_config(path: str | Path | None) -> GateConfig:
    if path is None:
        return GateConfig()
    path = Path(path)
    return config_from_dict(read_toml(path, "gate config"), str(path))


def config_from_dict(data: dict, source: str = "<config>") -> GateConfig:
    unknown = set(data) - {"defaults", "unit", "allow"}
    if unknown:
        raise MprofError(
            f"{source}: unknown section(s) {', '.join(sorted(unknown))} "
            "(expected [defaults], [[unit]], [[allow]])"
        )
    cfg = GateConfig(source=source)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise MprofError(f"{source}: [defaults] must be a table")
    extra = set(defaults) - {
        "tolerance",
        "alpha",
        "correction",
        "behaviour_change",
        "disturbed",
        "fastest",
        "measure",
    }
    if extra:
        raise MprofError(f"{source}: [defaults]: unknown key(s) {', '.join(sorted(extra))}")
    if "tolerance" in defaults:
        cfg.tolerance = check_tolerance(defaults["tolerance"], f"{source}: defaults.tolerance")
    if "alpha" in defaults:
        cfg.alpha = check_alpha(defaults["alpha"], f"{source}: defaults.alpha")
    if "correction" in defaults:
        cfg.correction = check_correction(defaults["correction"], f"{source}: defaults")
    if "behaviour_change" in defaults:
        cfg.behaviour_change = _choice(
            defaults["behaviour_change"], BEHAVIOUR_POLICIES, f"{source}: defaults.behaviour_change"
        )
    if "measure" in defaults:
        cfg.measure = _choice(defaults["measure"], MEASURES, f"{source}: defaults.measure")
    if "fastest" in defaults:
        value = defaults["fastest"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MprofError(
                f"{source}: defaults.fastest must be a whole number >= 0 (0: fit "
                f"every run), got {value!r}"
            )
        cfg.fastest = value
    if "disturbed" in defaults:
        cfg.disturbed_limit = check_tolerance(
            defaults["disturbed"], f"{source}: defaults.disturbed"
        )
    for i, entry in enumerate(_table_list(data.get("unit", []), source, "unit")):
        where = f"{source}: unit[{i}]"
        extra = set(entry) - {"match", "tolerance", "alpha"}
        if extra:
            raise MprofError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        rule = UnitRule(_pattern(entry, where))
        if "tolerance" in entry:
            rule.tolerance = check_tolerance(entry["tolerance"], f"{where}.tolerance")
        if "alpha" in entry:
            rule.alpha = check_alpha(entry["alpha"], f"{where}.alpha")
        cfg.units.append(rule)
    for i, entry in enumerate(_table_list(data.get("allow", []), source, "allow")):
        where = f"{source}: allow[{i}]"
        extra = set(entry) - {"match", "reason"}
        if extra:
            raise MprofError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise MprofError(f"{where}: an accepted change needs a reason")
        cfg.allow.append(AllowRule(_pattern(entry, where), reason.strip()))
    return cfg


def check_correction(value, where: str) -> str:
    return _choice(value, CORRECTIONS, f"{where}: correction")


def _choice(value, choices, what: str):
    """`value` if it is one of `choices`, else an error naming `what` and the choices."""
    if value not in choices:
        raise MprofError(f"{what} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _table_list(value, source: str, name: str) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise MprofError(f"{source}: '{name}' must be an array of tables ([[{name}]])")
    return value


def _pattern(entry: dict, where: str) -> str:
    match = entry.get("match")
    if match is None or match == "":
        raise MprofError(f"{where}: 'match' (a unit id or glob pattern) is required")
    if not isinstance(match, str):
        raise MprofError(
            f"{where}: 'match' must be a string (a unit id or glob pattern), got {match!r}"
        )
    return match
