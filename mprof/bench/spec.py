"""Sweep specifications (TOML) for `mprof bench`.

    program     = "build/benchmarks/micro/rt_workload"     # relative to `root`
    command     = "{program} {npes} {fibers} {msgs} {bytes}"
    database    = "rt-fit.db"                              # relative to `root`
    root        = ".."            # optional; default: the folder holding the spec
    npes        = [2, 4]
    repetitions = 2               # optional, default 1
    timeout_s   = 120             # optional per-run timeout, default 600

    [params]                      # grid axes substituted into the command
    fibers = [100, 400]

    [env]                         # environment axes (values are strings)
    MPROF_AGG_BYTES = ["0", "4096"]

    [probe]                       # optional: the machine-state probe (mprof/bench/probe.py)
    command = "{program} 2 300000 30000 16 0"

The command template sees {program}, {npes}, {python} (this Python), {rep} and every
parameter; it is split like a shell command line but never run through a shell.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import shutil
import string
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..db.validate import read_text
from ..errors import MprofError
from ..numbers import check_number
from .probe import ProbeSpec

DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Point:
    program: str  # as written in the spec: the stable part of the identity
    params: dict
    npes: int
    env: dict
    repetition: int

    @property
    def key(self) -> str:
        identity = json.dumps({"program": self.program, "params": self.params, "npes": self.npes,
                               "env": self.env, "repetition": self.repetition},
                              sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(identity.encode()).hexdigest()

    def describe(self) -> str:
        parts = [f"npes={self.npes}", *(f"{k}={v}" for k, v in self.params.items()),
                 *(f"{k}={v}" for k, v in self.env.items()), f"rep={self.repetition}"]
        return " ".join(parts)


@dataclass
class SweepSpec:
    path: Path
    program: str
    command: str
    database: Path
    root: Path
    npes: list[int]
    repetitions: int = 1
    timeout_s: float = DEFAULT_TIMEOUT
    params: dict[str, list] = field(default_factory=dict)
    env: dict[str, list[str]] = field(default_factory=dict)
    probe: ProbeSpec | None = None

    @property
    def program_path(self) -> Path:
        p = Path(self.program)
        return p if p.is_absolute() else self.root / p

    def configurations(self) -> list[Point]:
        """Every configuration once, as its first repetition's point."""
        return [p for p in self.points() if p.repetition == 0]

    def points(self) -> list[Point]:
        """Every point, repetitions interleaved: each configuration runs once before any runs
        again, so a slow spell of a shared machine falls on different configurations in
        different repetitions (and the median of a configuration's runs sheds it) instead of on
        every repetition of the few configurations that ran during it."""
        names = list(self.params)
        env_names = list(self.env)
        out = []
        for rep in range(self.repetitions):
            for npes in self.npes:
                for values in itertools.product(*(self.params[n] for n in names)):
                    for env_values in itertools.product(*(self.env[n] for n in env_names)):
                        out.append(Point(self.program, dict(zip(names, values)), npes,
                                         dict(zip(env_names, env_values)), rep))
        return out


# The most points one sweep may have: counted from the axes before any point is built, so an
# absurd grid is refused at once instead of exhausting memory.
MAX_POINTS = 1_000_000
MAX_NPES = 4096  # the runtime's limit (mp_main)


class _Places:
    """Where a key of a TOML file is written (`file:line:column` of its value), found by a
    scan of the text: tomllib gives values, not places."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.places: dict[str, tuple[int, int]] = {}
        table = ""
        for number, line in enumerate(text.splitlines(), 1):
            m = re.match(r"\s*\[\s*([^\]\[]+?)\s*\]\s*(#.*)?$", line)
            if m:
                table = m[1].replace('"', "").replace(" ", "") + "."
                continue
            m = re.match(r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=\s*""", line)
            if m:
                key = table + m[1].strip("\"'")
                self.places.setdefault(key, (number, m.end() + 1))

    def __call__(self, key: str) -> str:
        if key in self.places:
            line, column = self.places[key]
            return f"{self.path}:{line}:{column}: {key}"
        return f"{self.path}: {key}"


def _axis(value, where: str, *, strings: bool = False) -> list:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise MprofError(f"{where}: an axis needs at least one value")
    seen = set()
    for v in values:
        if isinstance(v, (dict, list)) or (strings and isinstance(v, float)):
            raise MprofError(f"{where}: values must be numbers or strings")
        if isinstance(v, float):
            check_number(v, where)
        key = str(v) if strings else (type(v) is str, v)
        if key in seen:
            raise MprofError(f"{where}: value {v!r} is repeated (each value is one "
                             "configuration; use repetitions to run it more than once)")
        seen.add(key)
    return values


def read_toml(path: Path, what: str) -> dict:
    """Parses a TOML file; unreadable or malformed files become an MprofError naming `what`."""
    text = read_text(path, what)  # unreadable files and bad bytes, named with their place
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib ends its message with "(at line L, column C)": put the place up front
        m = re.fullmatch(r"(?s)(.*) \(at line (\d+), column (\d+)\)", str(exc))
        if m:
            raise MprofError(f"{path}:{m[2]}:{m[3]}: invalid TOML: {m[1]}") from None
        raise MprofError(f"{path}: invalid TOML: {exc}") from None


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    data = read_toml(path, "sweep spec")
    known = {"program", "command", "database", "root", "npes", "repetitions", "timeout_s",
             "params", "env", "description", "probe"}
    unknown = set(data) - known
    if unknown:
        raise MprofError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    for key in ("program", "database", "npes"):
        if key not in data:
            raise MprofError(f"{path}: missing required key '{key}'")
    where = _Places(path, read_text(path, "sweep spec"))
    root = (path.resolve().parent / data.get("root", ".")).resolve()
    npes = _axis(data["npes"], where("npes"))
    for p in npes:
        if isinstance(p, float) or not isinstance(p, int):
            raise MprofError(f"{where('npes')}: expected whole numbers in [1, {MAX_NPES}], "
                             f"got {p!r}")
        check_number(p, where("npes"), low=1, high=MAX_NPES, integer=True)
    reps = data.get("repetitions", 1)
    if isinstance(reps, float):
        raise MprofError(f"{where('repetitions')}: expected a whole number >= 1, got {reps!r}")
    reps = check_number(reps, where("repetitions"), low=1, high=MAX_POINTS, integer=True)
    timeout = check_number(data.get("timeout_s", DEFAULT_TIMEOUT), where("timeout_s"),
                           low=0.0, open_low=True, high=1e7)
    for table in ("params", "env"):
        if not isinstance(data.get(table, {}), dict):
            raise MprofError(f"{where(table)}: [{table}] must be a table")
    params = {k: _axis(v, where(f"params.{k}")) for k, v in data.get("params", {}).items()}
    env = {k: [str(x) for x in _axis(v, where(f"env.{k}"), strings=True)]
           for k, v in data.get("env", {}).items()}
    _check_grid_size(path, reps, npes, params, env)
    command = data.get("command", "{program} {npes} " + " ".join(f"{{{k}}}" for k in params))
    if not isinstance(command, str) or not command.strip():
        raise MprofError(f"{path}: command must be a non-empty string")
    _check_placeholders(path, command, [*PLACEHOLDERS, *params])
    database = Path(data["database"])
    probe = None
    if "probe" in data:
        probe = ProbeSpec.parse(data["probe"], str(path))
        _check_placeholders(path, probe.command, PROBE_PLACEHOLDERS, "probe.command")
    return SweepSpec(path=path, program=str(data["program"]), command=command,
                     database=database if database.is_absolute() else root / database,
                     root=root, npes=npes, repetitions=reps, timeout_s=float(timeout),
                     params=params, env=env, probe=probe)


def _check_grid_size(path: Path, reps: int, npes: list, params: dict, env: dict) -> None:
    sizes = [("repetitions", reps), ("npes", len(npes)),
             *((f"params.{k}", len(v)) for k, v in params.items()),
             *((f"env.{k}", len(v)) for k, v in env.items())]
    total = math.prod(n for _, n in sizes)
    if total > MAX_POINTS:
        shape = " x ".join(f"{n} {name}" for name, n in sizes if n > 1)
        raise MprofError(f"{path}: the sweep has {total:,} points ({shape}), more than the "
                         f"{MAX_POINTS:,} one sweep may have; split it into several specs")


PLACEHOLDERS = ("program", "npes", "python", "rep")
PROBE_PLACEHOLDERS = ("program", "python")  # a probe is the same run for every point


def _check_placeholders(path: Path, command: str, known, what: str = "command") -> None:
    """Every `{name}` of a command template is one of `known`: checked when the spec is read,
    before anything runs or any database is created."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(command) if f is not None]
    except ValueError as exc:
        raise MprofError(f"{path}: {what} template {command!r}: {exc} (write {{{{ and }}}} "
                         "for literal braces)") from None
    for field_name in fields:
        if field_name not in known:
            close = difflib.get_close_matches(field_name, known, n=1)
            hint = f"; did you mean {{{close[0]}}}?" if close else ""
            raise MprofError(f"{path}: {what} uses unknown placeholder '{field_name}' "
                             f"(known: {', '.join('{' + k + '}' for k in known)}){hint}")


def check_runnable(spec: SweepSpec) -> None:
    """Stop before the first run when the program cannot run at all (rather than failing every
    point one by one): the `{program}` file must exist, and the command's first word must be
    an executable file or a command on PATH."""
    if "{program}" in spec.command and not spec.program_path.exists():
        raise MprofError(f"{spec.path}: program {spec.program_path} does not exist "
                         "(not built yet?)")
    points = spec.points()
    values = {"program": str(spec.program_path), "npes": points[0].npes,
              "python": sys.executable, "rep": 0, **points[0].params}
    argv = shlex.split(spec.command.format(**values))
    if not argv:
        raise MprofError(f"{spec.path}: the command is empty")
    _check_executable(spec, argv[0])
    if spec.probe is not None:
        probe_argv = spec.probe.argv(spec.program_path)
        if not probe_argv:
            raise MprofError(f"{spec.path}: the probe's command is empty")
        _check_executable(spec, probe_argv[0])


def _check_executable(spec: SweepSpec, exe: str) -> None:
    if "/" in exe:
        target = Path(exe) if Path(exe).is_absolute() else spec.root / exe
        if not target.is_file() or not os.access(target, os.X_OK):
            why = "does not exist" if not target.exists() else "is not an executable file"
            raise MprofError(f"{spec.path}: {target} {why}")
    elif shutil.which(exe) is None:
        raise MprofError(f"{spec.path}: command '{exe}' not found on PATH")
