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
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..console import message_console
from ..db.store import ProfileDB
from ..db.validate import load_profile
from ..errors import MprofError
from .spec import Point, SweepSpec

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

    @property
    def ok(self) -> bool:
        return not self.failures


def build_command(spec: SweepSpec, point: Point) -> list[str]:
    values = {"program": str(spec.program_path), "npes": point.npes, "python": sys.executable,
              "rep": point.repetition, **point.params}
    try:
        return shlex.split(spec.command.format(**values))
    except KeyError as exc:
        raise MprofError(f"{spec.path}: command uses unknown placeholder {exc}") from None


def online_cores() -> int:
    """Cores this process may run on (its affinity), which is what its PEs can use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def oversubscribed(point: Point) -> bool:
    return point.npes > online_cores()


def run_point(spec: SweepSpec, point: Point, db: ProfileDB) -> str | None:
    """Run one point and import its profile; return a failure reason, or None.

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
            proc = subprocess.run(argv, cwd=spec.root, env=env, capture_output=True, text=True,
                                  timeout=spec.timeout_s)
        except subprocess.TimeoutExpired:
            return f"timed out after {spec.timeout_s:g} s"
        except OSError as exc:
            return f"cannot run {argv[0]}: {exc.strerror}"
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.rstrip().splitlines()[-STDERR_TAIL_LINES:])
            return f"exit code {proc.returncode}" + (f"; stderr:\n{tail}" if tail else "")
        if not out.exists():
            return "the program wrote no run profile (is MPROF_OUT honoured?)"
        try:
            doc = load_profile(out)
        except MprofError as exc:
            return f"bad run profile: {exc}"
        if doc["npes"] != point.npes:
            return (f"the program ran on {doc['npes']} PE(s), but the point asks for "
                    f"npes={point.npes}: pass {{npes}} in the spec's command, or let the "
                    "program take its PE count from MPROF_PES")
        if oversubscribed(point):
            doc.setdefault("settings", {})["oversubscribed"] = 1
        db.import_documents([(" ".join(argv), doc)], validate=False, point=point)
    return None


def interleave(todos: list[list[Point]]) -> list[tuple[int, Point]]:
    """The points of several sweeps in one order, as (sweep index, point): repetition by
    repetition, each round running every sweep's configurations once.  A slow spell of a shared
    machine then falls on different configurations of every sweep in different repetitions,
    instead of on the whole of a short sweep (a test set measured after its fit set) that ran
    during it."""
    order = [(point.repetition, i, k, point) for i, todo in enumerate(todos)
             for k, point in enumerate(todo)]
    order.sort(key=lambda item: item[:3])
    return [(i, point) for _, i, _, point in order]


def run_sweeps(specs: list[SweepSpec], *, databases: list[Path],
               console: Console | None = None) -> list[SweepSummary]:
    """Several sweeps run together, their points interleaved by repetition (`interleave`);
    each sweep records into its own database and has its own summary."""
    console = console or message_console()
    over = sorted({p.npes for spec in specs for p in spec.points() if oversubscribed(p)})
    if over:
        console.print(f"warning: npes={', '.join(map(str, over))} exceed the {online_cores()} "
                      "online core(s): those runs share cores, their times include preemption, "
                      "and they are recorded with the setting oversubscribed=1", highlight=False)
    summaries, todos, dbs = [], [], []
    with ExitStack() as stack:
        for spec, db_path in zip(specs, databases):
            points = spec.points()
            summary = SweepSummary(total=len(points))
            db_path.parent.mkdir(parents=True, exist_ok=True)
            db = stack.enter_context(ProfileDB(db_path))
            done = db.recorded_points()
            todo = [p for p in points if p.key not in done]
            summary.skipped = len(points) - len(todo)
            if summary.skipped:
                console.print(f"{summary.skipped} of {len(points)} point(s) already recorded in "
                              f"{db_path}; resuming")
            summaries.append(summary)
            todos.append(todo)
            dbs.append(db)
        order = interleave(todos)
        if not order:
            return summaries
        # A live bar on a terminal; elsewhere one plain line per point.
        plain = not console.is_terminal
        columns = (TextColumn("[bold]bench[/]"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.description}"))
        name = (lambda i: "") if len(specs) == 1 else (lambda i: f"{specs[i].path.name}: ")
        with Progress(*columns, console=console, transient=False, disable=plain) as progress:
            task = progress.add_task("", total=len(order))
            for index, (i, point) in enumerate(order, 1):
                what = name(i) + point.describe()
                progress.update(task, description=what)
                reason = run_point(specs[i], point, dbs[i])
                if reason is None:
                    summaries[i].ran += 1
                else:
                    summaries[i].failures.append(Failure(point, reason))
                if plain:
                    console.print(f"bench {index}/{len(order)}: {what}: "
                                  + ("ok" if reason is None else f"FAILED: {reason}"),
                                  markup=False)
                elif reason is not None:
                    progress.console.print(f"[red]FAILED[/] {what}: {reason}",
                                           markup=True, highlight=False, soft_wrap=True)
                progress.advance(task)
    return summaries
