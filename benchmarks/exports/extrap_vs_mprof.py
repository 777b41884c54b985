#!/usr/bin/env python3
"""mprof's held-out error beside Extra-P's on the same PIPE databases and the same samples.

    python benchmarks/exports/extrap_vs_mprof.py [--fit-db DB --test-db DB] [--with-settings]

Without options it uses the demo's databases (build/workflows/pipe-{fit,test}.db), first running
whatever of the demo's sweeps and the runtime fit is missing (resumable: `mprof bench` skips
recorded points).  Both tools are trained and scored on the same samples:

  sample   a PE's CPU time (the measure `cpu`).  Training: each configuration's fastest run,
           per PE, as `Replicates min` in workflows/pipe/model.tcl makes mprof's fit.  Scoring:
           the test database's samples chosen the same way (mprof's test MRE), and beside it
           every single test run (mprof's single-run test MRE).
  mprof    `mprof fit workflows/pipe/model.tcl`: the PIPE and event-graph model with the
           runtime's parameters imported (docs/fitting.md).
  Extra-P  the same training samples written as Extra-P JSON Lines over the parameters
           `mprof db export --format extrap` passes (the varying numeric parameters less the
           settings, such as the on/off AGG; --with-settings passes those too); every
           multi-parameter modeler of Extra-P is tried and each one's model is evaluated at the
           test samples.

The export's warnings (settings left out, fewer than 5 values per parameter) are printed as
they are.  Errors are mean relative errors.  The last line printed is one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mprof.exports.calltree import model_params, numeric_params, varying_params  # noqa: E402
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


def mprof_test_mre(fit_db: Path, test_db: Path) -> tuple[float, float]:
    """mprof's test MRE on the representative (fastest) test samples and on every test run."""
    script = (ROOT / "workflows/pipe/model.tcl").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        text = (
            script.replace("../../build/workflows/pipe-fit.db", str(fit_db))
            .replace("../../build/workflows/pipe-test.db", str(test_db))
            .replace("../../", f"{ROOT}/")
        )
        text = text.replace("SaveModel ", "# SaveModel ")  # leave the demo's model alone
        path = Path(tmp) / "model.tcl"
        path.write_text(text)
        out = mprof_cmd("fit", str(path), "--json").stdout
    fits = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    quality = fits[-1]["quality"]
    run_mre = quality.get("run_test_mre_percent")
    return (
        float(quality["test_mre_percent"]) / 100,
        float(run_mre) / 100 if run_mre is not None else float("nan"),
    )


def samples(runs, names: list[str], fastest: bool) -> list[tuple[tuple, float]]:
    """(parameter values, PE time) per sample: each configuration's fastest run per PE (mprof's
    `Replicates min`: replicates are runs with the same configuration, PE by PE), or every PE
    of every run."""
    groups: dict[tuple, list] = {}
    for run in runs:
        values = numeric_params(run)
        coord = tuple(values[n] for n in names)
        for pe in run.pes:
            groups.setdefault((run.config_key, pe.pe), []).append((coord, pe.time(MEASURE)))
    if fastest:
        return [min(group, key=lambda s: s[1]) for group in groups.values()]
    return [s for group in groups.values() for s in group]


def extrap_mres(fit_db: Path, test_db: Path, with_settings: bool) -> dict[str, dict]:
    """Per Extra-P modeler: its held-out MRE on the fastest test samples and on every test run,
    and its model."""
    from extrap.fileio.file_reader.jsonlines_file_reader import read_jsonlines_file
    from extrap.modelers import multi_parameter
    from extrap.modelers.model_generator import ModelGenerator
    import numpy as np

    fit_runs, test_runs = load_profiles(fit_db), load_profiles(test_db)
    names, notes = model_params(fit_runs, varying_params(fit_runs) if with_settings else None)
    for note in notes:
        print(f"mprof: warning: {note}", file=sys.stderr)
    train = samples(fit_runs, names, fastest=True)
    tests = {
        "fastest": samples(test_runs, names, fastest=True),
        "runs": samples(test_runs, names, fastest=False),
    }
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fit.jsonl"
        with path.open("w") as f:
            for coord, t in train:
                f.write(
                    json.dumps(
                        {
                            "params": dict(zip(names, coord)),
                            "callpath": "pipe",
                            "metric": "time",
                            "value": t,
                        }
                    )
                    + "\n"
                )
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
            model = next(m for (cp, metric), m in generator.models.items() if metric.name == "time")
            scores = {}
            for which, sample_list in tests.items():
                errors = []
                for coord, t in sample_list:
                    point = np.array([[v] for v in coord], dtype=float)
                    with np.errstate(all="ignore"):
                        predicted = float(np.ravel(model.hypothesis.function.evaluate(point))[0])
                    errors.append(abs(predicted - t) / t if np.isfinite(predicted) else np.inf)
                scores[which] = float(np.mean(errors))
            function = re.sub(
                r"\d+\.\d+(?:e[-+]?\d+)?",
                lambda m: f"{float(m.group()):.3g}",
                model.hypothesis.function.to_string(*experiment.parameters),
            )
            out[modeler] = {**scores, "model": function}
            print(f"Extra-P {modeler}: {function}", file=sys.stderr)
    return {
        "params": names,
        "train_samples": len(train),
        "test_samples": {k: len(v) for k, v in tests.items()},
        "modelers": out,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit-db", type=Path)
    ap.add_argument("--test-db", type=Path)
    ap.add_argument(
        "--with-settings",
        action="store_true",
        help="pass Extra-P the settings too (AGG), as the export does with --params",
    )
    args = ap.parse_args()
    if bool(args.fit_db) != bool(args.test_db):
        ap.error("give both --fit-db and --test-db, or neither")
    fit_db, test_db = (args.fit_db, args.test_db) if args.fit_db else ensure_demo_databases()
    fit_db, test_db = fit_db.resolve(), test_db.resolve()
    mprof = mprof_test_mre(fit_db, test_db)
    extrap = extrap_mres(fit_db, test_db, args.with_settings)
    modelers = extrap["modelers"]
    best = min(modelers, key=lambda m: modelers[m]["fastest"]) if modelers else None
    print(
        f"Samples: {MEASURE} time per PE; trained on each configuration's fastest run per PE "
        f"({extrap['train_samples']} samples, mprof's `Replicates min`); Extra-P parameters "
        f"{', '.join(extrap['params'])}"
    )
    for which, label, mine in (
        ("fastest", "fastest test runs (mprof's test MRE)", mprof[0]),
        ("runs", "every single test run", mprof[1]),
    ):
        line = f"PIPE held-out MRE, {label}: mprof {100 * mine:.1f} %"
        if best:
            line += f", Extra-P best ({best}) {100 * modelers[best][which]:.1f} %"
        print(line)
    for name, value in sorted(modelers.items()):
        print(
            f"  Extra-P {name}: {100 * value['fastest']:.1f} % / {100 * value['runs']:.1f} %"
            f"  {value['model']}"
        )
    print(
        json.dumps(
            {
                "benchmark": "extrap_vs_mprof",
                "fit_db": str(fit_db),
                "test_db": str(test_db),
                "measure": MEASURE,
                "training": "fastest run per configuration and PE",
                "mprof_test_mre": mprof[0],
                "mprof_run_test_mre": mprof[1],
                "extrap_params": extrap["params"],
                "extrap_test_mre": {k: v["fastest"] for k, v in modelers.items()},
                "extrap_run_test_mre": {k: v["runs"] for k, v in modelers.items()},
                "extrap_best": best,
                "extrap_best_mre": modelers[best]["fastest"] if best else None,
                "extrap_best_run_mre": modelers[best]["runs"] if best else None,
            }
        )
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
