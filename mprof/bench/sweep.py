"""Running a sweep: each point is a subprocess with MPROF_OUT set; its profile is imported.

Runs are sequential on purpose: the measured times are the data, and concurrent runs on a
shared machine would disturb each other.  A point already recorded in the database (same
program, parameters, PE count, environment and repetition index) is skipped, so an interrupted
sweep resumes where it stopped.  A failing point is reported and the sweep goes on.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..console import message_console
from ..db.store import ProfileDB
from ..errors import MprofError
from .probe import MachineProbe, probe_values
from .procs import Interrupted, exit_text, interruptible, read_run_profile, run_group, stderr_tail
from .spec import Point, SweepSpec, make_database_folder

STDERR_TAIL_LINES = 8


@dataclass
class Failure:
    point: Point
    reason: str


@dataclass
class SweepSummary:
    total: int = 0
    ran: int = 0
    skipped: int = 0
    failures: list[Failure] = field(default_factory=list)
    # with a probe: extra repetitions run for configurations without a steady run, the
    # configurations still without one, and the fastest probe
    extra: int = 0
    unsteady: list[Point] = field(default_factory=list)
    probe_best: float | None = None

    @property
    def ok(self) -> bool:
        return not self.failures


def build_command(spec: SweepSpec, point: Point) -> list[str]:
    values = {
        "program": str(spec.program_path),
        "npes": point.npes,
        "python": sys.executable,
        "rep": point.repetition,
        **point.params,
    }
    try:
        argv = shlex.split(spec.command.format(**values))
    except KeyError as exc:
        raise MprofError(f"{spec.path}: command uses unknown placeholder {exc}") from None
    except ValueError as exc:  # checked at load (spec.check_template); kept as a backstop
        raise MprofError(
            f"{spec.path}: the command of {point.describe()} does not split like "
            f"a shell command line: {exc}"
        ) from None
    if any("\0" in word for word in argv):
        raise MprofError(f"{spec.path}: the command of {point.describe()} holds a NUL character")
    return argv


def online_cores() -> int:
    """Cores this process may run on (its affinity), which is what its PEs can use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def oversubscribed(point: Point) -> bool:
    return point.npes > online_cores()


def run_point(
    spec: SweepSpec, point: Point, db: ProfileDB, probe: MachineProbe | None = None
) -> str | None:
    """Run one point and import its profile; return a failure reason, or None.

    With a probe, the caller has just measured it; it is measured again after the run, and
    both values go into the run's document (`bench.probe_s`).

    The point's PE count reaches the program twice: as {npes} in the command, and as MPROF_PES
    for programs that take it from the runtime's default (mp_config_init).  A profile with
    another PE count is refused, so a point is never recorded under the wrong npes.  A point
    with more PEs than online cores is recorded with the setting `oversubscribed = 1`: its
    times include preemption, which the cost models do not describe."""
    argv = build_command(spec, point)
    with tempfile.TemporaryDirectory(prefix="mprof-bench-") as tmp:
        out = Path(tmp) / "profile.json"
        env = dict(os.environ, **point.env, MPROF_OUT=str(out), MPROF_PES=str(point.npes))
        try:
            proc = run_group(argv, cwd=spec.root, env=env, timeout=spec.timeout_s)
        except subprocess.TimeoutExpired:
            return f"timed out after {spec.timeout_s:g} s (its process group was killed)"
        except OSError as exc:
            return f"cannot run {argv[0]}: {exc.strerror}"
        if proc.returncode != 0:
            tail = "\n".join(stderr_tail(proc.stderr, STDERR_TAIL_LINES))
            return exit_text(proc.returncode) + (f"; stderr:\n{tail}" if tail else "")
        try:
            doc = read_run_profile(out)
        except MprofError as exc:
            return str(exc)
        if doc["npes"] != point.npes:
            return (
                f"the program ran on {doc['npes']} PE(s), but the point asks for "
                f"npes={point.npes}: pass {{npes}} in the spec's command, or let the "
                "program take its PE count from MPROF_PES"
            )
        record_sweep_axes(doc, point)
        if oversubscribed(point):
            doc.setdefault("settings", {})["oversubscribed"] = 1
        if probe is not None:
            doc["bench"] = {"probe_s": [probe.values[-1], probe.measure()]}
        db.import_documents([(" ".join(argv), doc)], validate=False, point=point)
    return None


def record_sweep_axes(doc: dict, point: Point) -> None:
    """The sweep's own axes become part of the run's identity whether or not the program
    reports them: a parameter axis the program did not record with mp_param (under that name,
    in any case: PIPE reports `EltSize` for the axis `eltsize`) is added to the run's params,
    an environment axis that is not a runtime setting (`MPROF_*`, which the runtime records
    itself) to its settings.  What the program recorded wins."""
    params = doc.setdefault("params", {})
    reported = {name.lower() for name in params}
    for name, value in point.params.items():
        if name.lower() not in reported:
            params[name] = value
    settings = doc.setdefault("settings", {})
    for name, value in point.env.items():
        if not name.startswith("MPROF_") and name not in settings:
            settings[name] = value


def interleave(todos: list[list[Point]]) -> list[tuple[int, Point]]:
    """The points of several sweeps in one order, as (sweep index, point): repetition by
    repetition, each round running every sweep's configurations once.  A slow spell of a shared
    machine then falls on different configurations of every sweep in different repetitions,
    instead of on the whole of a short sweep (a test set measured after its fit set) that ran
    during it."""
    order = [
        (point.repetition, i, k, point)
        for i, todo in enumerate(todos)
        for k, point in enumerate(todo)
    ]
    order.sort(key=lambda item: item[:3])
    return [(i, point) for _, i, _, point in order]


def run_sweeps(
    specs: list[SweepSpec], *, databases: list[Path], console: Console | None = None
) -> list[SweepSummary]:
    """Several sweeps run together, their points interleaved by repetition (`interleave`);
    each sweep records into its own database and has its own summary.  Sweeps with a probe
    then top up configurations that have no steady run (`top_up`)."""
    console = console or message_console()
    over = sorted({p.npes for spec in specs for p in spec.points() if oversubscribed(p)})
    if over:
        console.print(
            f"warning: npes={', '.join(map(str, over))} exceed the {online_cores()} "
            "online core(s): those runs share cores, their times include preemption, "
            "and they are recorded with the setting oversubscribed=1",
            highlight=False,
        )
    summaries, todos, dbs = [], [], []
    try:
        with interruptible():
            _run_all(specs, databases, console, summaries, todos, dbs)
    except (KeyboardInterrupt, Interrupted) as exc:
        exc.summaries = summaries  # what was recorded before the interruption (mprof.bench.cli)
        raise
    return summaries


def _run_all(specs, databases, console, summaries, todos, dbs) -> None:
    probes = _probes(specs)
    # Each probe runs once before any database is created: one that cannot run stops the
    # sweeps with nothing made (its value counts, as the first point's probe before).
    measured = None
    for probe in dict.fromkeys(p for p in probes if p is not None):
        probe.measure()
        measured = probe
    with ExitStack() as stack:
        for spec, db_path in zip(specs, databases):
            points = spec.points()
            summary = SweepSummary(total=len(points))
            make_database_folder(db_path, spec.database_where or str(spec.path))
            db = stack.enter_context(ProfileDB(db_path))
            done = db.recorded_points()
            todo = [p for p in points if p.key not in done]
            summary.skipped = len(points) - len(todo)
            if summary.skipped:
                console.print(
                    f"{summary.skipped} of {len(points)} point(s) already recorded in "
                    f"{db_path}; resuming"
                )
            summaries.append(summary)
            todos.append(todo)
            dbs.append(db)
        runner = _Runner(specs, dbs, summaries, console, probes)
        runner.fresh = measured
        order = interleave(todos)
        # A live bar on a terminal; elsewhere one plain line per point.
        plain = not console.is_terminal
        columns = (
            TextColumn("[bold]bench[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
        )
        if order:
            with Progress(*columns, console=console, transient=False, disable=plain) as progress:
                task = progress.add_task("", total=len(order))
                for index, (i, point) in enumerate(order, 1):
                    progress.update(task, description=runner.name(i, point))
                    runner.run(
                        i,
                        point,
                        f"bench {index}/{len(order)}",
                        progress.console if not plain else None,
                    )
                    progress.advance(task)
        top_up(runner)


class _Runner:
    """Runs points of several sweeps: their probes (shared by sweeps that probe alike), what
    was measured last, and the report of each point."""

    def __init__(self, specs, dbs, summaries, console, probes):
        self.specs, self.dbs, self.summaries, self.console = specs, dbs, summaries, console
        self.probes: list[MachineProbe | None] = probes
        # (sweep, run id) -> the probe values recorded with the run, read once (top_up)
        self.run_probes: dict[tuple[int, int], list[float]] = {}
        for i, (probe, db) in enumerate(zip(probes, dbs)):
            if probe is not None:
                for run_id, bench in db.bench_metadata().items():
                    self.run_probes[i, run_id] = probe_values(bench)
                    probe.recorded.extend(self.run_probes[i, run_id])
        self.fresh: MachineProbe | None = None  # the probe measured right before, if any

    def name(self, i: int, point: Point) -> str:
        return (f"{self.specs[i].path.name}: " if len(self.specs) > 1 else "") + point.describe()

    def run(self, i: int, point: Point, label: str, live: Console | None) -> str | None:
        probe = self.probes[i]
        if probe is not None and self.fresh is not probe:
            probe.measure()
        reason = run_point(self.specs[i], point, self.dbs[i], probe)
        self.fresh = probe if reason is None else None
        summary = self.summaries[i]
        if reason is None:
            summary.ran += 1
        else:
            summary.failures.append(Failure(point, reason))
        what = self.name(i, point)
        if live is None:
            self.console.print(
                f"{label}: {what}: " + ("ok" if reason is None else f"FAILED: {reason}"),
                markup=False,
            )
        elif reason is not None:
            live.print(
                f"[red]FAILED[/] {what}: {reason}", markup=True, highlight=False, soft_wrap=True
            )
        return reason


def top_up(runner: _Runner) -> None:
    """Extra repetitions of the configurations that have no steady run, each started once its
    sweep's probe is steady, until every configuration has one or the patience runs out (the
    longest of the sweeps' `patience_s`, for all of them together: mprof/bench/probe.py)."""
    probed = [i for i, probe in enumerate(runner.probes) if probe is not None]
    if not probed:
        return
    recorded = {i: runner.dbs[i].point_runs() for i in probed}
    memo = runner.run_probes  # runs recorded before this invocation; the new ones join it

    def values_of(i: int, run_id: int) -> list[float]:
        if (i, run_id) not in memo:
            bench = runner.dbs[i].bench_metadata([run_id]).get(run_id, {})
            memo[i, run_id] = probe_values(bench)
        return memo[i, run_id]

    def runs_of(i: int, config: Point) -> tuple[list[list[float]], int]:
        """The probe values of every recorded repetition, and the next free repetition."""
        values, rep = [], 0
        while (key := replace(config, repetition=rep).key) in recorded[i]:
            values.append(values_of(i, recorded[i][key]))
            rep += 1
        return values, rep

    def unsteady(i: int) -> list[Point]:
        probe = runner.probes[i]
        return [
            c
            for c in runner.specs[i].configurations()
            if not any(probe.steady(v) for v in runs_of(i, c)[0] if len(v) == 2)
        ]

    lacking = [(i, c) for i in probed for c in unsteady(i)]
    patience = max(runner.specs[i].probe.patience_s for i in probed)
    if lacking:
        runner.console.print(
            f"{len(lacking)} configuration(s) have no run measured while the "
            f"probe was steady: extra repetitions (for at most {patience:g} s)",
            markup=False,
        )
    deadline = time.monotonic() + patience
    attempts: dict[tuple[int, str], int] = {}  # extra repetitions tried per configuration
    failed: set[tuple[int, str]] = set()  # configurations whose extra repetition failed
    while lacking and time.monotonic() < deadline:
        # the configuration tried least often first, so one that never comes out steady does
        # not use up the patience of all
        i, config = min(lacking, key=lambda item: attempts.get((item[0], item[1].key), 0))
        probe = runner.probes[i]
        if probe.wait_steady(deadline) is None:
            break
        runner.fresh = probe
        ident = (i, config.key)
        attempts[ident] = attempts.get(ident, 0) + 1
        point = replace(config, repetition=runs_of(i, config)[1])
        if runner.run(i, point, "bench extra", None) is not None:
            failed.add(ident)
        runner.summaries[i].extra += 1
        recorded[i] = runner.dbs[i].point_runs()
        # every sweep's list again: the fastest probe may have moved
        lacking = [(j, c) for j in probed for c in unsteady(j) if (j, c.key) not in failed]
    for i in probed:
        runner.summaries[i].unsteady = unsteady(i)
        runner.summaries[i].probe_best = runner.probes[i].best


def _probes(specs: list[SweepSpec]) -> list[MachineProbe | None]:
    """Each sweep's probe (None: it has none), one object for the sweeps that probe alike."""
    shared: dict[tuple, MachineProbe] = {}
    probes: list[MachineProbe | None] = []
    for spec in specs:
        if spec.probe is None:
            probes.append(None)
            continue
        probe = MachineProbe(spec.probe, spec.program_path, spec.root, _probe_where(spec))
        probes.append(
            shared.setdefault(
                (tuple(probe.argv), tuple(sorted(spec.probe.env.items())), str(spec.root)), probe
            )
        )
    return probes


def _probe_where(spec: SweepSpec) -> str:
    return spec.probe_where or f"{spec.path}: probe"
