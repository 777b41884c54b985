"""`mprof gate run`: measure a baseline and a candidate build with a sweep spec, then gate.

Every sweep point runs once for each build, alternately (baseline first on even repetitions,
candidate first on odd ones: an ABBA order, so a linear drift of the machine's speed cancels),
into two profile databases, through the sweep machinery of mprof.bench (`run_point`, the
sweep points table, resumption).  After the first evaluation, repetitions are added only for
configurations with an INCONCLUSIVE unit (all configurations when a fitted coefficient is
inconclusive), two runs per build at a time, until nothing is inconclusive or the budget of
extra runs is spent.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console

from ..bench.spec import (
    Point,
    SweepSpec,
    check_database,
    check_template,
    load_spec,
    make_database_folder,
    template_samples,
)
from ..bench.sweep import run_point
from ..console import message_console
from ..db.store import Condition, ProfileDB
from ..errors import MprofError
from .config import GateConfig
from .data import load_side
from .evaluate import INCONCLUSIVE, GateReport, evaluate


@dataclass
class Build:
    name: str  # baseline | candidate
    spec: SweepSpec
    database: Path


@dataclass
class RunLog:
    runs: int = 0
    extra_runs: int = 0
    rounds: int = 0
    failures: list[str] = field(default_factory=list)
    power: object = None  # mprof.gate.power.PowerCheck, the last one made
    repetitions: int = 0  # repetitions per point and build aimed at (adaptive: raised)


def make_build(
    name: str,
    spec: SweepSpec,
    database: Path,
    *,
    command: str | None = None,
    binary: str | None = None,
) -> Build:
    changes = {}
    if binary:
        changes["program"] = str(Path(binary).expanduser().resolve())
    if command:
        changes["command"] = command
    return Build(name, replace(spec, **changes) if changes else spec, database)


def _check_build(build: Build, command: str | None) -> None:
    """A build's command template is checked as a spec's is (mprof.bench.spec.check_template),
    before anything runs."""
    if command is not None:
        check_template(command, template_samples(build.spec), f"--{build.name}-cmd")
    if "{program}" in build.spec.command and not build.spec.program_path.exists():
        raise MprofError(f"{build.name} program {build.spec.program_path} does not exist")
    if not shlex.split(build.spec.command):
        raise MprofError(f"{build.name}: empty command")


def _base_point(point: Point) -> tuple:
    return (
        point.program,
        json.dumps(point.params, sort_keys=True),
        point.npes,
        json.dumps(point.env, sort_keys=True),
    )


def _run_pair(
    builds: Sequence[Build], dbs: dict, point: Point, log: RunLog, console: Console, extra: bool
) -> None:
    order = builds if point.repetition % 2 == 0 else list(reversed(builds))
    for build in order:
        db = dbs[build.name]
        if point.key in db.recorded_points():
            continue
        reason = run_point(build.spec, point, db)
        log.runs += 1
        if extra:
            log.extra_runs += 1
        if reason is not None:
            text = f"{build.name} {point.describe()}: {reason}"
            log.failures.append(text)
            console.print(f"[red]FAILED[/] {text}", highlight=False)


def _point_index(db: ProfileDB) -> dict[int, Point]:
    """run id -> the sweep point that produced it."""
    out = {}
    for run_id, program, params, npes, env, rep in db.conn.execute(
        "SELECT run_id, program, params_json, npes, env_json, repetition FROM sweep_points"
    ):
        out[run_id] = Point(program, json.loads(params), npes, json.loads(env), rep)
    return out


def run_gate(
    spec_path: str | Path,
    *,
    baseline_cmd: str | None = None,
    baseline_bin: str | None = None,
    candidate_cmd: str | None = None,
    candidate_bin: str | None = None,
    out_dir: str | Path = "gate-out",
    budget: int = 0,
    config: GateConfig | None = None,
    model=None,
    fit_script: str | Path | None = None,
    where: Sequence[Condition] = (),
    allow_cross_machine: bool = False,
    inconclusive_ok: bool = False,
    console: Console | None = None,
    on_round: Callable[[GateReport], None] | None = None,
    interfaces: Sequence[str | Path] = (),
    focus: Sequence[str] = (),
    adaptive: bool = False,
    noise_from: str | Path | None = None,
    change: float | None = None,
) -> tuple[GateReport, RunLog]:
    """Run the sweep for both builds, interleaved, and gate.  The power check (mprof.gate.power)
    is printed before any run when the noise is known (`noise_from`, a database of earlier
    baseline runs, or runs already recorded in `out_dir`), and after the spec's repetitions.
    `adaptive`: raise the repetitions to those the power check recommends for `change`
    (default twice the tolerance), within `budget` extra runs, before the first evaluation;
    then add repetitions for inconclusive units while the budget lasts."""
    console = console or message_console()
    spec = load_spec(spec_path)
    if not (baseline_cmd or baseline_bin) or not (candidate_cmd or candidate_bin):
        raise MprofError(
            "gate run needs --baseline-cmd or --baseline-bin, and "
            "--candidate-cmd or --candidate-bin"
        )
    if not 0 <= budget <= MAX_BUDGET:  # a spec's repetitions stop at 10^6 per point too
        raise MprofError(
            f"--budget must be in [0, {MAX_BUDGET}] (extra runs, both builds counted), got {budget}"
        )
    out = Path(out_dir)
    builds = [
        make_build(
            "baseline", spec, out / "baseline.db", command=baseline_cmd, binary=baseline_bin
        ),
        make_build(
            "candidate", spec, out / "candidate.db", command=candidate_cmd, binary=candidate_bin
        ),
    ]
    for build, command in zip(builds, (baseline_cmd, candidate_cmd)):
        _check_build(build, command)
    for build in builds:  # before anything is created
        check_database(build.database, "--out-dir")
    if noise_from is not None and not Path(noise_from).exists():
        raise MprofError(f"--noise-from: {noise_from} does not exist")
    noise = None
    if noise_from is not None:  # named by the user: a file that is no such database is an error
        try:  # (the baseline's own database, below, may still hold no run of the points)
            noise = load_side("baseline", noise_from, where)
        except MprofError as exc:
            raise MprofError(f"--noise-from: {exc}") from None
    for build in builds:
        make_database_folder(build.database, "--out-dir")
    log = RunLog(repetitions=spec.repetitions)
    config = config or GateConfig()
    if noise is None and builds[0].database.exists():  # runs of an earlier gate run
        noise = _baseline_side(builds[0].database, where)
    dbs = {b.name: ProfileDB(b.database) for b in builds}

    def stop_on_failures() -> None:
        if log.failures:
            raise MprofError(f"{len(log.failures)} run(s) failed; first: {log.failures[0]}")

    def evaluate_round() -> GateReport:
        report = _evaluate(
            builds,
            config,
            model,
            fit_script,
            where,
            allow_cross_machine,
            inconclusive_ok,
            interfaces,
            focus,
        )
        if on_round:
            on_round(report)
        return report

    try:
        points = spec.points()
        if noise is not None:
            target = _power(noise, config, change, focus, log, console)
            if adaptive and target:
                points = _more_points(spec, points, target, budget, log, console)
        console.print(f"gate run: {len(points)} point(s) x 2 builds -> {out}", highlight=False)
        for point in points:
            _run_pair(builds, dbs, point, log, console, extra=point.repetition >= spec.repetitions)
        stop_on_failures()
        target = _power(
            _baseline_side(builds[0].database, where), config, change, focus, log, console
        )
        if adaptive and target and target > log.repetitions:
            more = _more_points(spec, points, target, budget - log.extra_runs, log, console)
            for point in more[len(points) :]:
                _run_pair(builds, dbs, point, log, console, extra=True)
            points = more
            stop_on_failures()
        report = evaluate_round()
        while budget - log.extra_runs >= 2:
            targets = _inconclusive_points(report, dbs["baseline"], points)
            if not targets:
                break
            log.rounds += 1
            added = 0
            for base in targets:
                if budget - log.extra_runs < 2:
                    break
                recorded = [
                    p.repetition
                    for p in _point_index(dbs["baseline"]).values()
                    if _base_point(p) == _base_point(base)
                ]
                rep = max(recorded, default=-1) + 1
                _run_pair(builds, dbs, replace(base, repetition=rep), log, console, extra=True)
                added += 1
            stop_on_failures()
            if not added:
                break
            report = evaluate_round()
            console.print(
                f"gate run: round {log.rounds}: +{added} point(s) per build, "
                f"{report.counts()[INCONCLUSIVE]} unit(s) inconclusive, "
                f"{budget - log.extra_runs} extra run(s) left",
                highlight=False,
            )
    finally:
        for db in dbs.values():
            db.close()
    return report, log


def _baseline_side(database, where):
    """The baseline runs of one of the gate's own databases, or None where it holds none that
    load (the power check then waits for runs)."""
    try:
        return load_side("baseline", database, where)
    except MprofError:
        return None


def _power(side, config, change, focus, log: RunLog, console) -> int | None:
    """Print the power check of the baseline runs of `side` (None: none yet); the repetitions
    it recommends (None when it cannot tell)."""
    from .power import check

    if side is None or not side.runs:
        return None
    log.power = check(side, config, change=change, focus=focus)
    console.print(log.power.sentence(), highlight=False, soft_wrap=True)
    if log.power.recommended is None and log.power.lines:
        return OUT_OF_REACH  # as many as the budget allows
    return log.power.recommended


OUT_OF_REACH = 10**6
MAX_BUDGET = 2 * 10**6


def _more_points(
    spec: SweepSpec, points: list[Point], target: int, budget: int, log: RunLog, console
) -> list[Point]:
    """The points of `target` repetitions (or as many more as `budget` extra runs allow, both
    builds counted)."""
    configurations = len(spec.configurations())
    affordable = log.repetitions + max(0, budget) // (2 * max(1, configurations))
    reps = min(target, affordable)
    if reps <= log.repetitions:
        if target > log.repetitions:
            wanted = "more than 200" if target >= OUT_OF_REACH else str(target)
            console.print(
                f"gate run: the budget allows no more repetitions ({wanted} recommended)",
                highlight=False,
            )
        return points
    wanted = "more than 200" if target >= OUT_OF_REACH else str(target)
    console.print(
        f"gate run: adaptive: {reps} repetitions per point and build"
        + (f" ({wanted} recommended, the budget allows {reps})" if reps < target else ""),
        highlight=False,
    )
    log.repetitions = reps
    return replace(spec, repetitions=reps).points()


def _evaluate(
    builds,
    config,
    model,
    fit_script,
    where,
    allow_cross_machine,
    inconclusive_ok,
    interfaces=(),
    focus=(),
):
    baseline = load_side("baseline", builds[0].database, where)
    candidate = load_side("candidate", builds[1].database, where)
    return evaluate(
        baseline,
        candidate,
        config,
        model=model,
        fit_script=fit_script,
        allow_cross_machine=allow_cross_machine,
        inconclusive_ok=inconclusive_ok,
        interfaces=interfaces,
        focus=focus,
        same_program=True,
    )


def _inconclusive_points(report: GateReport, db: ProfileDB, points: Sequence[Point]) -> list:
    """Base points (repetition 0) of the configurations that need more runs."""
    inconclusive = [u for u in report.units if u.verdict == INCONCLUSIVE]
    if not inconclusive:
        return []
    firsts = {}
    for p in points:
        firsts.setdefault(_base_point(p), replace(p, repetition=0))
    if any(u.config_key is None for u in inconclusive):
        return list(firsts.values())
    keys = {u.config_key for u in inconclusive}
    index = _point_index(db)
    wanted = {}
    for run in report.baseline.runs:
        if run.config_key in keys and run.id in index:
            p = index[run.id]
            wanted.setdefault(_base_point(p), replace(p, repetition=0))
    return list(wanted.values())
