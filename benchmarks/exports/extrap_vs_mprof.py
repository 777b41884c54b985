#!/usr/bin/env python3
"""mprof's held-out error beside Extra-P's on the same PIPE databases, from one command.

    python benchmarks/exports/extrap_vs_mprof.py [--fit-db DB --test-db DB]

Without options it uses the demo's databases (build/workflows/pipe-{fit,test}.db), first running
whatever of the demo's sweeps and the runtime fit is missing (resumable: `mprof bench` skips
recorded points).  Then:

  mprof    `mprof fit workflows/pipe/model.tcl`: the PIPE and event-graph model with the
           runtime's parameters imported (docs/fitting.md); its test MRE over the test database.
  Extra-P  the fit database exported as Extra-P JSON Lines (`mprof db export --format extrap`
           with the measure `cpu`), but with one line per PE (repetitions) so that Extra-P
           models the same sample mprof does, a PE's CPU time; every multi-parameter modeler
           of Extra-P is tried and each one's model of `time` is evaluated at the test runs.

Both errors are mean relative errors over the same samples (each PE of each test run).  The
last line printed is one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mprof.exports.calltree import numeric_params, varying_params  # noqa: E402
from mprof.profile import load_profiles  # noqa: E402

MEASURE = "cpu"


def mprof_cmd(*args) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mprof")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mprof"]
    return subprocess.run(cmd + list(args), cwd=ROOT, capture_output=True, text=True, check=True)


def ensure_demo_databases():
    wf = ROOT / "build" / "workflows"
    for spec in ("rts/sweep-fit", "rts/sweep-test", "pipe/sweep-fit", "pipe/sweep-test"):
        print(f"mprof bench workflows/{spec}.toml", file=sys.stderr)
        mprof_cmd("bench", f"workflows/{spec}.toml")
    if not (wf / "rts.model.json").exists():
        mprof_cmd("fit", "workflows/rts/model.tcl")
    return wf / "pipe-fit.db", wf / "pipe-test.db"


def mprof_test_mre(fit_db: Path, test_db: Path) -> float:
    script = (ROOT / "workflows/pipe/model.tcl").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        text = (script.replace("../../build/workflows/pipe-fit.db", str(fit_db))
                .replace("../../build/workflows/pipe-test.db", str(test_db))
                .replace("../../", f"{ROOT}/"))
        text = text.replace("SaveModel ", "# SaveModel ")  # leave the demo's model alone
        path = Path(tmp) / "model.tcl"
        path.write_text(text)
        out = mprof_cmd("fit", str(path), "--json").stdout
    fits = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    quality = fits[-1]["quality"]
    return float(quality["test_mre_percent"]) / 100


def extrap_mres(fit_db: Path, test_db: Path) -> dict[str, float]:
    from extrap.fileio.file_reader.jsonlines_file_reader import read_jsonlines_file
    from extrap.modelers import multi_parameter
    from extrap.modelers.model_generator import ModelGenerator
    import numpy as np

    fit_runs, test_runs = load_profiles(fit_db), load_profiles(test_db)
    names = varying_params(fit_runs)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fit.jsonl"
        with path.open("w") as f:
            for run in fit_runs:
                values = numeric_params(run)
                for pe in run.pes:
                    f.write(json.dumps({"params": {n: values[n] for n in names},
                                        "callpath": run.program, "metric": "time",
                                        "value": pe.time(MEASURE)}) + "\n")
        for modeler in sorted(multi_parameter.all_modelers):
            experiment = read_jsonlines_file(str(path))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    generator = ModelGenerator(experiment, modeler=modeler)
                    generator.model_all()
                except Exception as exc:  # a modeler that cannot handle this design
                    print(f"Extra-P modeler {modeler}: {exc}", file=sys.stderr)
                    continue
            models = generator.models
            model = next(m for (cp, metric), m in models.items()
                         if metric.name == "time")
            errors = []
            for run in test_runs:
                values = numeric_params(run)
                point = np.array([[values[n]] for n in names], dtype=float)
                with np.errstate(all="ignore"):
                    predicted = float(np.ravel(model.hypothesis.function.evaluate(point))[0])
                for pe in run.pes:
                    t = pe.time(MEASURE)
                    errors.append(abs(predicted - t) / t if np.isfinite(predicted) else np.inf)
            out[modeler] = float(np.mean(errors))
            function = model.hypothesis.function.to_string(*experiment.parameters)
            print(f"Extra-P {modeler}: {function}", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit-db", type=Path)
    ap.add_argument("--test-db", type=Path)
    args = ap.parse_args()
    if bool(args.fit_db) != bool(args.test_db):
        ap.error("give both --fit-db and --test-db, or neither")
    fit_db, test_db = (args.fit_db, args.test_db) if args.fit_db else ensure_demo_databases()
    fit_db, test_db = fit_db.resolve(), test_db.resolve()
    mprof = mprof_test_mre(fit_db, test_db)
    extrap = extrap_mres(fit_db, test_db)
    best = min(extrap, key=extrap.get) if extrap else None
    print(f"PIPE held-out MRE ({MEASURE} time per PE): mprof {100 * mprof:.1f} %"
          + (f", Extra-P best ({best}) {100 * extrap[best]:.1f} %" if best else ", Extra-P: none"))
    for name, value in sorted(extrap.items()):
        print(f"  Extra-P {name}: {100 * value:.1f} %")
    print(json.dumps({"benchmark": "extrap_vs_mprof", "fit_db": str(fit_db),
                      "test_db": str(test_db),
                      "mprof_test_mre": mprof, "extrap_test_mre": extrap,
                      "extrap_best": best, "extrap_best_mre": extrap.get(best)}))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
