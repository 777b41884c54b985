"""pytest integration of the gate: the `perf_gate` fixture (docs/gate.md, "pytest").

Load it with `-p mprof.gate.pytest_plugin` (or `pytest_plugins = ["mprof.gate.pytest_plugin"]`
in a conftest.py).  A test declares a performance expectation against a baseline database:

    def test_lookup_speed(perf_gate):
        perf_gate.expect(program="gate_ops", params={"na": 20000, "nb": 20000},
                         category="time", tolerance=0.10,
                         run=["build/benchmarks/gate/gate_ops", "1", "20000", "20000"],
                         repetitions=8)

`run` (argv list or command string) runs the candidate now, `repetitions` times, with
MPROF_OUT set, into a temporary database; without it, candidate runs are read from
`--perf-candidate DB`.  The baseline comes from `baseline=`, `--perf-baseline DB` or the ini
option `perf_gate_baseline`.  `category` names the units compared, by the part of their id
after `CONFIG::` (glob allowed): "time", "stat:rts.ThreadDisp", "cost:graph.OP" (with
`model=`), "fit:graph.OP" (with `fit=`).  A REGRESSION (or BEHAVIOUR CHANGE) fails the test;
INCONCLUSIVE skips it by default (`inconclusive="pass"|"skip"|"fail"`).  Runs from another
machine than the baseline's are an error unless `allow_cross_machine=True`.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from ..db.store import Condition, ProfileDB
from ..db.validate import load_profile
from ..errors import MprofError
from .config import GateConfig, UnitRule, load_config
from .data import load_side
from .evaluate import BEHAVIOUR, INCONCLUSIVE, REGRESSION, Unit, evaluate
from .output import cells, change_text


def pytest_addoption(parser):
    group = parser.getgroup("mprof-gate", "mprof performance gate")
    group.addoption("--perf-baseline", metavar="DB", help="baseline profile database")
    group.addoption(
        "--perf-candidate",
        metavar="DB",
        help="candidate profile database (for expectations without run=)",
    )
    group.addoption("--perf-config", metavar="GATE.toml", help="gate configuration")
    parser.addini("perf_gate_baseline", "baseline profile database of perf_gate")
    parser.addini("perf_gate_config", "gate configuration (TOML) of perf_gate")


class PerfGateError(MprofError):
    pass


class PerfGate:
    def __init__(
        self,
        baseline: str | None,
        candidate: str | None,
        config: GateConfig,
        workdir: Path,
        node=None,
    ):
        self.baseline = baseline
        self.candidate = candidate
        self.config = config
        self.workdir = Path(workdir)
        self.node = node
        self.results: list[Unit] = []

    def record_runs(
        self, argv, repetitions: int, env: dict | None = None, timeout: float = 600
    ) -> Path:
        """Run a command `repetitions` times into a fresh database; returns its path."""
        if isinstance(argv, str):
            argv = shlex.split(argv)
        argv = [str(a) for a in argv]
        db_path = Path(tempfile.mkdtemp(prefix="perf-gate-", dir=self.workdir)) / "cand.db"
        with ProfileDB(db_path) as db:
            for rep in range(repetitions):
                out = db_path.parent / f"run{rep}.json"
                proc = subprocess.run(
                    argv,
                    env=dict(os.environ, **(env or {}), MPROF_OUT=str(out)),
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                if proc.returncode != 0:
                    tail = "\n".join(proc.stderr.splitlines()[-8:])
                    raise PerfGateError(f"{' '.join(argv)}: exit code {proc.returncode}\n{tail}")
                db.import_documents([(str(out), load_profile(out))], validate=False)
        return db_path

    def expect(
        self,
        *,
        program: str,
        params: dict | None = None,
        npes: int | None = None,
        category: str = "time",
        tolerance: float | None = None,
        alpha: float | None = None,
        run=None,
        repetitions: int = 8,
        env: dict | None = None,
        baseline: str | None = None,
        model=None,
        fit: str | None = None,
        where: dict | None = None,
        inconclusive: str = "skip",
        allow_cross_machine: bool = False,
    ) -> list[Unit]:
        if inconclusive not in ("skip", "pass", "fail"):
            raise ValueError("inconclusive must be 'skip', 'pass' or 'fail'")
        baseline = baseline or self.baseline
        if not baseline:
            raise PerfGateError(
                "perf_gate: no baseline database (--perf-baseline, the "
                "perf_gate_baseline ini option, or baseline=)"
            )
        conds = [Condition("program", program)]
        conds += [Condition(k, str(v)) for k, v in (params or {}).items()]
        conds += [Condition(k, str(v)) for k, v in (where or {}).items()]
        if npes is not None:
            conds.append(Condition("npes", str(npes)))
        if run is not None:
            cand_db = self.record_runs(run, repetitions, env)
        elif self.candidate:
            cand_db = self.candidate
        else:
            raise PerfGateError("perf_gate: no candidate runs (give run=, or --perf-candidate)")
        config = replace(self.config, units=list(self.config.units))
        if tolerance is not None or alpha is not None:
            config.units.append(UnitRule("*", tolerance, alpha))
        if isinstance(model, (str, Path)):
            from ..model import load_model

            model = load_model(model)

        def wanted(u: Unit) -> bool:
            tail = u.id.split("::", 1)[1] if u.id.count("::") else u.id
            if u.kind == "coef":
                tail = u.id
            return fnmatch.fnmatchcase(tail, category)

        report = evaluate(
            load_side("baseline", baseline, conds),
            load_side("candidate", cand_db, conds),
            config,
            model=model,
            fit_script=fit,
            allow_cross_machine=allow_cross_machine,
            unit_filter=wanted,
        )
        units = report.sorted_units()
        if not units:
            raise PerfGateError(
                f"perf_gate: no unit '{category}' for {program} {params or ''} "
                "(known kinds: time, stat:M.S, cost:M.C, fit:M.C, fit::M.C:T)"
            )
        self.results.extend(units)
        if self.node is not None:
            for u in units:
                self.node.user_properties.append((f"perf_gate {u.id}", u.verdict))
        lines = [_describe(u) for u in units]
        failing = [
            u
            for u in units
            if u.verdict == REGRESSION
            or (u.verdict == BEHAVIOUR and config.behaviour_change == "fail")
        ]
        if failing:
            pytest.fail("performance regression:\n" + "\n".join(lines), pytrace=False)
        if any(u.verdict == INCONCLUSIVE for u in units):
            text = "performance inconclusive:\n" + "\n".join(lines)
            if inconclusive == "fail":
                pytest.fail(text, pytrace=False)
            if inconclusive == "skip":
                pytest.skip(text)
        return units


def _describe(u: Unit) -> str:
    c = cells(u)
    text = f"  {u.verdict}: {u.id}: baseline {c['baseline']}, candidate {c['candidate']}"
    if u.comparison is not None:
        text += f", change {change_text(u)} (tolerance {100 * u.tolerance:g}%, p adj {c['p']})"
    return text + (f"; {u.note}" if u.note else "")


@pytest.fixture
def perf_gate(request, tmp_path):
    """Declare performance expectations against a baseline profile database."""
    opt = request.config.getoption
    root = Path(str(request.config.rootpath))

    def path_option(name, ini):
        value = opt(name) or request.config.getini(ini)
        if not value:
            return None
        p = Path(value)
        return str(p if p.is_absolute() else root / p)

    config_path = path_option("--perf-config", "perf_gate_config")
    try:
        config = load_config(config_path)
    except MprofError as exc:
        raise pytest.UsageError(str(exc)) from None
    candidate = opt("--perf-candidate")
    return PerfGate(
        path_option("--perf-baseline", "perf_gate_baseline"),
        candidate,
        config,
        tmp_path,
        request.node,
    )
