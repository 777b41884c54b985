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

from ..db.validate import INT_MAX, INT_MIN, read_text
from ..errors import MprofError, line_column
from ..numbers import check_number, shown
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
        identity = json.dumps(
            {
                "program": self.program,
                "params": self.params,
                "npes": self.npes,
                "env": self.env,
                "repetition": self.repetition,
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(identity.encode()).hexdigest()

    def describe(self) -> str:
        parts = [
            f"npes={self.npes}",
            *(f"{k}={v}" for k, v in self.params.items()),
            *(f"{k}={v}" for k, v in self.env.items()),
            f"rep={self.repetition}",
        ]
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
    database_where: str = ""  # "spec.toml:4:12: database", for messages about the database
    probe_where: str = ""  # "spec.toml:9:11: probe.command", for messages about the probe

    @property
    def program_path(self) -> Path:
        return _resolved(self.root, self.program)

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
                        out.append(
                            Point(
                                self.program,
                                dict(zip(names, values)),
                                npes,
                                dict(zip(env_names, env_values)),
                                rep,
                            )
                        )
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
        quote = None  # the delimiter of a multi-line string the scan is inside
        for number, line in enumerate(text.splitlines(), 1):
            if quote is not None:  # `npes = 1` inside a description is no key
                if line.count(quote) % 2:
                    quote = None
                continue
            m = re.match(r"\s*\[\[?\s*([^\]\[]+?)\s*\]\]?\s*(#.*)?$", line)  # [t], [[t]]
            if m:
                table = m[1].replace('"', "").replace(" ", "") + "."
                self.places.setdefault(table[:-1], (number, line.index("[") + 1))
                continue
            m = re.match(r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=\s*""", line)
            if m:
                key = table + m[1].strip("\"'")
                self.places.setdefault(key, (number, m.end() + 1))
                rest = line[m.end() :]
                for delimiter in ('"""', "'''"):
                    if rest.startswith(delimiter) and rest.count(delimiter) % 2:
                        quote = delimiter

    def __call__(self, key: str) -> str:
        # a key of an inline table (`env = {A = "1"}`) is placed at its table
        parts = key.split(".")
        for n in range(len(parts), 0, -1):
            if (place := self.places.get(".".join(parts[:n]))) is not None:
                return f"{self.path}:{place[0]}:{place[1]}: {key}"
        return f"{self.path}: {key}"


def _axis(value, where: str, *, strings: bool = False) -> list:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise MprofError(f"{where}: an axis needs at least one value")
    seen = set()
    for v in values:
        if isinstance(v, bool):  # True would reach the program as "True"
            raise MprofError(
                f"{where}: {str(v).lower()} is not a value here: write it as a "
                f'string ("{str(v).lower()}") or a number (1, 0)'
            )
        if not isinstance(v, (int, float, str)) or (strings and isinstance(v, float)):
            what = (
                "a date or time"
                if type(v).__module__ == "datetime"
                else "a table"
                if isinstance(v, dict)
                else "a list"
                if isinstance(v, list)
                else type(v).__name__
            )
            raise MprofError(
                f"{where}: values must be {'whole numbers or ' if strings else ''}"
                f"{'' if strings else 'numbers or '}strings, not {what}"
            )
        if isinstance(v, float):
            check_number(v, where)
        if isinstance(v, int) and not INT_MIN <= v <= INT_MAX:
            # the database holds 64-bit integers: its export would not import again
            shown_v = str(v) if len(str(v)) <= 30 else f"{str(v)[:12]}...({len(str(v))} digits)"
            raise MprofError(
                f"{where}: {shown_v} does not fit 64 bits (-2^63 .. 2^64-1); "
                "write it as a string to pass it on as text"
            )
        key = str(v)  # [0, "0"] would run the same command line twice
        if key in seen:
            raise MprofError(
                f"{where}: value {v!r} is repeated (each value is one "
                "configuration; use repetitions to run it more than once)"
            )
        seen.add(key)
    return values


def read_toml(path: Path, what: str) -> dict:
    """Parses a TOML file; unreadable or malformed files become an MprofError naming `what`."""
    text = read_text(path, what)  # unreadable files and bad bytes, named with their place
    deep = _too_deep(text)
    if deep:  # tomllib recurses once per level: a deep enough file would end in RecursionError
        raise MprofError(
            f"{path}:{deep[0]}:{deep[1]}: invalid TOML: arrays or inline tables nested too "
            f"deeply (at most {TOML_MAX_DEPTH} levels)"
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib ends its message with "(at line L, column C)": put the place up front
        m = re.fullmatch(r"(?s)(.*) \(at line (\d+), column (\d+)\)", str(exc))
        if m:
            raise MprofError(f"{path}:{m[2]}:{m[3]}: invalid TOML: {m[1]}") from None
        m = re.fullmatch(r"(?s)(.*) \(at end of document\)", str(exc))
        if m:  # a file cut off: the place is its end
            line, column = line_column(text, len(text))
            raise MprofError(f"{path}:{line}:{column}: invalid TOML: {m[1]}") from None
        raise MprofError(f"{path}: invalid TOML: {exc}") from None


# Deeper than any configuration needs, and far from Python's recursion limit (tomllib takes
# a few frames per level).
TOML_MAX_DEPTH = 64

_TOML_TOKEN = re.compile(
    "|".join(
        [
            r'"""(?:\\.|[^\\])*?"""',  # multi-line basic string
            r"'''[\s\S]*?'''",  # multi-line literal string
            r'"(?:\\.|[^"\\\n])*"',  # basic string
            r"'[^'\n]*'",  # literal string
            r"#[^\n]*",  # comment
            r"[\[\]{}]",
        ]
    )
)


def _too_deep(text: str) -> tuple[int, int] | None:
    """The line and column of the first bracket or brace that opens level TOML_MAX_DEPTH + 1
    of nested arrays and inline tables, or None.  Strings and comments are skipped; the depth
    is counted only inside values (a table header's brackets close on its line)."""
    depth = 0
    for m in _TOML_TOKEN.finditer(text):
        token = m.group()
        if token in ("[", "{"):
            depth += 1
            if depth > TOML_MAX_DEPTH:
                return line_column(text, m.start())
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return None


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    data = read_toml(path, "sweep spec")
    known = {
        "program",
        "command",
        "database",
        "root",
        "npes",
        "repetitions",
        "timeout_s",
        "params",
        "env",
        "description",
        "probe",
    }
    where = _Places(path, read_text(path, "sweep spec"))
    unknown = [key for key in data if key not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise MprofError(
            f"{where(unknown[0])}: unknown key{hint}; a sweep spec has {', '.join(sorted(known))}"
        )
    for key in ("program", "database", "npes"):
        if key not in data:
            raise MprofError(f"{path}: missing required key '{key}'")
    root = (path.resolve().parent / _text(data.get("root", "."), where("root"))).resolve()
    npes = _axis(data["npes"], where("npes"))
    for p in npes:
        if isinstance(p, float) or not isinstance(p, int):
            raise MprofError(
                f"{where('npes')}: expected whole numbers in [1, {MAX_NPES}], got {p!r}"
            )
        check_number(p, where("npes"), low=1, high=MAX_NPES, integer=True)
    reps = data.get("repetitions", 1)
    if isinstance(reps, float):
        raise MprofError(f"{where('repetitions')}: expected a whole number >= 1, got {reps!r}")
    reps = check_number(reps, where("repetitions"), low=1, high=MAX_POINTS, integer=True)
    timeout = check_number(
        data.get("timeout_s", DEFAULT_TIMEOUT), where("timeout_s"), low=0.0, open_low=True, high=1e7
    )
    for table in ("params", "env"):
        if not isinstance(data.get(table, {}), dict):
            raise MprofError(f"{where(table)}: [{table}] must be a table")
    params = {k: _axis(v, where(f"params.{k}")) for k, v in data.get("params", {}).items()}
    env = {
        k: [str(x) for x in _axis(v, where(f"env.{k}"), strings=True)]
        for k, v in data.get("env", {}).items()
    }
    _check_params(params, where)
    _check_env(env, where, "env", RESERVED_ENV)
    _check_grid_size(path, reps, npes, params, env)
    command = data.get("command", "{program} {npes} " + " ".join(f"{{{k}}}" for k in params))
    if not isinstance(command, str) or not command.strip():
        raise MprofError(f"{where('command')}: expected a non-empty string, got {shown(command)}")
    program = _text(data["program"], where("program"))
    samples = _samples(_resolved(root, program), npes, params)
    check_template(command, samples, where("command"))
    database = Path(_text(data["database"], where("database")))
    probe = None
    if "probe" in data:
        probe = ProbeSpec.parse(data["probe"], where)
        probe_env = {k: [v] for k, v in probe.env.items()}
        _check_env(probe_env, where, "probe.env", ("MPROF_OUT",))
        check_template(
            probe.command, {k: samples[k] for k in PROBE_PLACEHOLDERS}, where("probe.command")
        )
    return SweepSpec(
        path=path,
        program=program,
        command=command,
        database=database if database.is_absolute() else root / database,
        root=root,
        npes=npes,
        repetitions=reps,
        timeout_s=float(timeout),
        params=params,
        env=env,
        probe=probe,
        database_where=where("database"),
        probe_where=where("probe.command") if probe else "",
    )


def _text(value, where: str) -> str:
    """A path of the spec: a string without NUL (which no file name can hold)."""
    if not isinstance(value, str) or not value:
        raise MprofError(f"{where}: expected a non-empty string, got {value!r}")
    if "\0" in value:
        raise MprofError(f"{where}: the path holds a NUL character")
    return value


def _check_params(params: dict, where) -> None:
    """A parameter named like a built-in placeholder would replace it in every command (npes
    = [..] as a parameter made every point's PE count wrong), and text values become command
    words, which cannot hold NUL."""
    for name, values in params.items():
        if not PARAM_NAME.fullmatch(name):
            shown = name if name.isprintable() else ascii(name)
            raise MprofError(
                f"{where('params.' + shown)}: '{shown}' cannot name a parameter: "
                "the command refers to it as {name}, so it is a letter or '_' "
                "followed by letters, digits, '_' or '-'"
            )
        if name in PLACEHOLDERS:
            raise MprofError(
                f"{where('params.' + name)}: '{name}' is a built-in placeholder "
                f"({', '.join('{' + k + '}' for k in PLACEHOLDERS)}); name the "
                "parameter otherwise"
            )
        if any(isinstance(v, str) and "\0" in v for v in values):
            raise MprofError(f"{where('params.' + name)}: a value holds a NUL character")


def _check_env(env: dict, where, table: str, reserved) -> None:
    """Environment names and values the runner can pass on: no '=' or NUL in a name, no NUL in
    a value, and none of the variables the runner sets itself for every run."""
    for name, values in env.items():
        place = where(f"{table}.{name if name.isprintable() else ascii(name)}")
        if name in reserved:
            raise MprofError(
                f"{place}: {name} is set by mprof bench for every run "
                f"({', '.join(reserved)}); a spec cannot set it"
            )
        if not name or "=" in name or "\0" in name:
            raise MprofError(
                f"{place}: {name!r} is not an environment variable name "
                "(it must be non-empty, without '=' or NUL)"
            )
        if any("\0" in v for v in values):
            raise MprofError(f"{place}: a value holds a NUL character")


def _check_grid_size(path: Path, reps: int, npes: list, params: dict, env: dict) -> None:
    sizes = [
        ("repetitions", reps),
        ("npes", len(npes)),
        *((f"params.{k}", len(v)) for k, v in params.items()),
        *((f"env.{k}", len(v)) for k, v in env.items()),
    ]
    total = math.prod(n for _, n in sizes)
    if total > MAX_POINTS:
        shape = " x ".join(f"{n} {name}" for name, n in sizes if n > 1)
        raise MprofError(
            f"{path}: the sweep has {total:,} points ({shape}), more than the "
            f"{MAX_POINTS:,} one sweep may have; split it into several specs"
        )


PLACEHOLDERS = ("program", "npes", "python", "rep")
# A parameter's name is a placeholder of the command: "0" would be a positional field, "a.b"
# an attribute and "a[0]" an index of `a`.
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
PROBE_PLACEHOLDERS = ("program", "python")  # a probe is the same run for every point
# Set by the runner for every point (mprof.bench.sweep.run_point, MachineProbe.measure): a
# spec that sets them would fight the runner, so it is refused when read.
RESERVED_ENV = ("MPROF_OUT", "MPROF_PES")
# The widest field a format spec may ask for: `{msgs:>99999999999}` would build a string of
# 100 GB before the command ever ran.
MAX_FORMAT_WIDTH = 1000
# Python's standard format spec (format(), "Format Specification Mini-Language")
_FORMAT_SPEC = re.compile(
    r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[_,]?"
    r"(?:\.(?P<precision>\d+))?[a-zA-Z%]?",
    re.S,
)
_CONVERSIONS = {None: lambda v: v, "s": str, "r": repr, "a": ascii}


def check_template(command: str, samples: dict[str, list], what: str) -> None:
    """A command template is checked when it is read, before anything runs or any database is
    created: every `{name}` is one of `samples` (placeholder -> the values it takes), its format
    spec formats each of them with bounded width, and the text then splits like a shell command
    line.  `what` names the template in messages ("spec.toml:4:11: command", "--baseline-cmd")."""
    try:
        fields = [
            (f, spec, conv)
            for _, f, spec, conv in string.Formatter().parse(command)
            if f is not None
        ]
    except ValueError as exc:
        raise MprofError(
            f"{what}: template {command!r}: {exc} (write {{{{ and }}}} for literal braces)"
        ) from None
    for name, spec, conversion in fields:
        if name not in samples:
            close = difflib.get_close_matches(name, samples, n=1)
            hint = f"; did you mean {{{close[0]}}}?" if close else ""
            raise MprofError(
                f"{what} uses unknown placeholder '{name}' "
                f"(known: {', '.join('{' + k + '}' for k in samples)}){hint}"
            )
        _check_format(name, spec, conversion, samples[name], what)
    _check_split(command, samples, what)


def template_samples(spec: SweepSpec) -> dict[str, list]:
    """The values each placeholder of the spec's command takes (check_template)."""
    return _samples(spec.program_path, spec.npes, spec.params)


def _samples(program_path: Path, npes: list, params: dict) -> dict[str, list]:
    return {
        "program": [str(program_path)],
        "npes": npes,
        "python": [sys.executable],
        "rep": [0],
        **params,
    }


def _resolved(root: Path, program: str) -> Path:
    """The spec's program: as written when absolute, else relative to the spec's root."""
    p = Path(program)
    return p if p.is_absolute() else root / p


def _check_format(name: str, spec: str, conversion, values: list, what: str) -> None:
    shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
    shown += "}"
    if conversion not in _CONVERSIONS:
        raise MprofError(f"{what}: {shown}: unknown conversion '!{conversion}' (known: !s, !r, !a)")
    if "{" in spec:
        raise MprofError(f"{what}: {shown}: a format spec cannot hold a placeholder")
    m = _FORMAT_SPEC.fullmatch(spec)
    if m:
        for part in ("width", "precision"):
            if m[part] and int(m[part]) > MAX_FORMAT_WIDTH:
                raise MprofError(
                    f"{what}: {shown}: the {part} {m[part]} is more than {MAX_FORMAT_WIDTH}"
                )
    for value in values:
        try:
            format(_CONVERSIONS[conversion](value), spec)
        except (ValueError, TypeError) as exc:
            raise MprofError(f"{what}: {shown} cannot format the value {value!r}: {exc}") from None


def _check_split(command: str, samples: dict[str, list], what: str) -> None:
    """The template filled with each placeholder's first value, then with every other value
    that holds a quote or backslash (which could unbalance the quoting) in turn."""
    first = {name: values[0] for name, values in samples.items() if values}
    trials = [first] + [
        {**first, name: v}
        for name, values in samples.items()
        for v in values[1:]
        if isinstance(v, str) and re.search(r"['\"\\]", v)
    ]
    for values in trials:
        try:
            text = command.format(**values)
        except (KeyError, IndexError):
            return  # a placeholder without values (an empty axis) is reported elsewhere
        if "\0" in text:
            raise MprofError(f"{what} holds a NUL character: {text!r}")
        try:
            shlex.split(text)
        except ValueError as exc:
            raise MprofError(
                f"{what} does not split like a shell command line: {str(exc).lower()} in {text!r}"
            ) from None


def check_database(path: Path, what: str) -> None:
    """A database can be created at `path` (checked without creating anything, for dry runs
    too): it is not a folder, and its nearest existing folder is a folder we may write to."""
    if "\0" in str(path):
        raise MprofError(f"{what}: the path holds a NUL character")
    if path.is_dir():
        raise MprofError(f"{what}: {path} is a folder, not a database file")
    if path.exists():
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise MprofError(f"{what}: cannot create {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or _pseudo_filesystem(parent):
        raise MprofError(f"{what}: cannot create {path}: {parent} is not writable")


def _pseudo_filesystem(folder: Path) -> bool:
    """/proc and /sys take no new files even from root, whom os.access always lets write."""
    return folder.resolve().parts[1:2] in (("proc",), ("sys",))


def make_database_folder(path: Path, what: str) -> None:
    """Creates the database's folder; what the file system refuses is an MprofError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MprofError(
            f"{what}: cannot create the folder of {path}: {exc.strerror or exc}"
        ) from None


def check_runnable(spec: SweepSpec) -> None:
    """Stop before the first run when the program cannot run at all (rather than failing every
    point one by one): the `{program}` file must exist, and the command's first word must be
    an executable file or a command on PATH."""
    if "{program}" in spec.command and not spec.program_path.exists():
        raise MprofError(
            f"{spec.path}: program {spec.program_path} does not exist (not built yet?)"
        )
    points = spec.points()
    values = {
        "program": str(spec.program_path),
        "npes": points[0].npes,
        "python": sys.executable,
        "rep": 0,
        **points[0].params,
    }
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
