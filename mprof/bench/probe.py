"""The machine-state probe of a sweep (`[probe]` in a spec).

A shared machine changes state under a benchmark: on the 2-core development VM, runs that keep
two threads busy slow down 2-4x for spells of 10-30 s (docs/fitting.md, "Sweeps on a shared
machine"), and nothing inside the guest announces it.  A careful experimenter checks the
instrument between measurements.  The probe is a short run of an mprof program, measured
before and after every point; its busy CPU time (CPU less idle CPU, summed over PEs) is the
machine's state.  A run is *steady* when both probes around it came within `tolerance` of the
sweep's fastest probes (their 10th percentile).  Interference only ever adds time, so the
fastest probes are the machine at its best; a configuration with no steady run gets extra
repetitions at the end of the sweep, each started once the probe is steady again, for at most
`patience_s` seconds.
Models that take each configuration's fastest run (`Replicates min`) then have one measured
in the state they describe.  The probe values are kept in each run's document under
`bench.probe_s` ([before, after]); they are not settings, so they do not split a
configuration's repetitions.

    [probe]
    command = "{program} 2 300000 30000 16 0"   # {program}: the spec's program; {python}
    env = { MPROF_AGG_BYTES = "4096" }           # optional
    tolerance = 0.3                              # optional, default 0.3
    patience_s = 120                             # optional, default 120
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MprofError
from ..numbers import check_number
from ..profile import RunProfile
from .procs import exit_text, read_run_profile, run_group, stderr_tail

DEFAULT_TOLERANCE = 0.3
DEFAULT_PATIENCE_S = 120.0
PROBE_TIMEOUT_S = 60.0
POLL_S = 0.5  # between probes while waiting for a steady machine
BEST_QUANTILE = 0.1


@dataclass
class ProbeSpec:
    command: str
    env: dict[str, str] = field(default_factory=dict)
    tolerance: float = DEFAULT_TOLERANCE
    patience_s: float = DEFAULT_PATIENCE_S

    @classmethod
    def parse(cls, data, where) -> ProbeSpec:
        """The [probe] table; its command's placeholders are checked with the spec's
        (mprof.bench.spec).  `where(key)` places a key of the spec ("spec.toml:9:1: probe")."""
        if not isinstance(data, dict):
            raise MprofError(f"{where('probe')}: [probe] must be a table")
        unknown = [key for key in data if key not in ("command", "env", "tolerance", "patience_s")]
        if unknown:
            raise MprofError(
                f"{where('probe.' + unknown[0])}: unknown key in [probe] (it has "
                "command, env, tolerance and patience_s)"
            )
        command = data.get("command")
        if command is None:
            raise MprofError(
                f'{where("probe")}: [probe] needs command = "..." (the probe\'s command line)'
            )
        if not isinstance(command, str) or not command.strip():
            raise MprofError(
                f"{where('probe.command')}: expected a non-empty string (the probe's command line)"
            )
        env = data.get("env", {})
        if not isinstance(env, dict):
            raise MprofError(f"{where('probe.env')}: expected a table of strings")
        for key, value in env.items():
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise MprofError(
                    f"{where('probe.env.' + key)}: expected a string or a whole "
                    f"number, got {value!r}"[:200]
                )
        numbers = {}
        for key, default in (("tolerance", DEFAULT_TOLERANCE), ("patience_s", DEFAULT_PATIENCE_S)):
            numbers[key] = check_number(
                data.get(key, default), where(f"probe.{key}"), low=0.0, high=1e9
            )
        return cls(command, {k: str(v) for k, v in env.items()}, **numbers)

    def argv(self, program: Path) -> list[str]:
        return shlex.split(self.command.format(program=str(program), python=sys.executable))


def busy_time(doc: dict) -> float:
    """A profile's busy time summed over PEs: its time less its idle time, in CPU seconds
    where every PE recorded them, else in wall seconds (mprof.profile)."""
    run = RunProfile.from_document(doc)
    return run.time(None) - run.idle_time(None)


class MachineProbe:
    """Runs a spec's probe and keeps every value it measured."""

    def __init__(self, probe: ProbeSpec, program: Path, root: Path, where: str):
        self.probe = probe
        self.root = root
        self.where = where
        self.argv = probe.argv(program)
        self.values: list[float] = []
        self.recorded: list[float] = []  # values read back from runs already in the database

    @property
    def best(self) -> float:
        """The machine at its best: the 10th percentile of every probe (the fastest of fewer
        than 11), so that one lucky probe does not make every run unsteady."""
        values = sorted(self.values + self.recorded)
        return values[int(BEST_QUANTILE * (len(values) - 1))] if values else float("inf")

    def steady(self, values) -> bool:
        """Whether every one of `values` is within tolerance of the fastest probe."""
        return bool(values) and max(values) <= self.best * (1.0 + self.probe.tolerance)

    def measure(self) -> float:
        """One probe run; a probe that cannot run stops the sweep (it is part of the spec)."""
        with tempfile.TemporaryDirectory(prefix="mprof-probe-") as tmp:
            out = Path(tmp) / "profile.json"
            env = dict(os.environ, **self.probe.env, MPROF_OUT=str(out))
            try:
                proc = run_group(self.argv, cwd=self.root, env=env, timeout=PROBE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise MprofError(
                    f"{self.where}: the probe timed out after {PROBE_TIMEOUT_S:g} s"
                ) from None
            except OSError as exc:
                raise MprofError(
                    f"{self.where}: cannot run the probe {self.argv[0]}: {exc.strerror}"
                ) from None
            if proc.returncode != 0:
                tail = stderr_tail(proc.stderr, 1)
                raise MprofError(
                    f"{self.where}: the probe failed ({exit_text(proc.returncode)}"
                    f"{': ' + tail[0] if tail else ''})"
                )
            try:
                value = busy_time(read_run_profile(out))
            except MprofError as exc:
                raise MprofError(f"{self.where}: the probe's run: {exc}") from None
        self.values.append(value)
        return value

    def wait_steady(self, deadline: float) -> float | None:
        """Probes until one is steady (its value) or the deadline passes (None)."""
        while True:
            value = self.measure()
            if self.steady([value]):
                return value
            if time.monotonic() + POLL_S >= deadline:
                return None
            time.sleep(POLL_S)


def probe_values(bench: dict) -> list[float]:
    """The [before, after] probe values a sweep recorded with a run (empty without), from its
    `bench` metadata (RunProfile.bench, ProfileDB.bench_metadata)."""
    values = bench.get("probe_s", [])
    return [float(v) for v in values if isinstance(v, (int, float))]
