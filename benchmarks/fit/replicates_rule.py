"""Which run of each configuration should the runtime model be fitted to?

    python benchmarks/fit/replicates_rule.py DIR... [--script workflows/rts/model.tcl]
        [--ignore TERM]

Each DIR holds one sweep pair as `mprof bench` writes it (rts-fit.db and rts-test.db, e.g.
copies of build/workflows after `make demo`).  For every pair the script fits the modeling
script as it is, except for its Replicates line, once per rule (min: each configuration's
fastest run; median: its median run), and with --ignore TERM also without that term; it prints
one JSON line per pair and fit (test MRE, single runs' test MRE, noise floor) and a last line
with the mean test MRE of each variant.  docs/fitting.md ("Sweeps on a shared machine") quotes
its figures for seven pairs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mprof.errors import MprofError  # noqa: E402
from mprof.model.script import ModelingScript  # noqa: E402


def variant(script: str, folder: Path, rule: str, ignore: str | None) -> str:
    """The script's text fitted to folder's databases with `rule`, nothing saved."""
    # directives may be indented (inside an if), and each occurrence is replaced
    text = re.sub(
        r"(?m)^(\s*)FitDatabase:?\s.*$", rf"\1FitDatabase: {folder / 'rts-fit.db'}", script
    )
    text = re.sub(
        r"(?m)^(\s*)TestDatabase:?\s.*$", rf"\1TestDatabase: {folder / 'rts-test.db'}", text
    )
    text = re.sub(r"(?m)^Replicates\s.*$", f"Replicates {rule}", text)
    text = re.sub(r"(?m)^\s*SaveModel\s.*$", "", text)
    text = text.replace("../../", f"{ROOT}/")
    if ignore:  # before the first Fit, or at the end where the fit is implicit
        fit_line = re.search(r"(?m)^Fit\s*$", text)
        at = fit_line.start() if fit_line else len(text)
        text = text[:at] + f"\nIgnoreTerm: {ignore}\n" + text[at:]
    return text


def fit(text: str) -> dict:
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.tcl"
        path.write_text(text)
        ModelingScript(path, on_fit=outcomes.append, warn=lambda w: None).run()
    r = outcomes[-1].result
    return {
        "test_mre_pct": round(r.test_mre, 2),
        "single_runs_pct": round(r.run_test_mre, 2),
        "noise_floor_pct": round(r.noise_mre, 2),
        "negative": r.negative,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="folders with rts-fit.db, rts-test.db")
    parser.add_argument("--script", type=Path, default=ROOT / "workflows/rts/model.tcl")
    parser.add_argument(
        "--ignore",
        metavar="TERM",
        help="also fit each rule without this term (module and term: rts Notify)",
    )
    args = parser.parse_args(argv)
    script = args.script.read_text()
    if not re.search(r"(?m)^Replicates\s", script):
        parser.error(f"{args.script} has no Replicates line to vary")
    variants = [(rule, None) for rule in ("min", "median")]
    if args.ignore:
        variants += [(rule, args.ignore) for rule in ("min", "median")]
    means: dict[str, list[float]] = {}
    for folder in args.dirs:
        for db in ("rts-fit.db", "rts-test.db"):
            if not (folder / db).is_file():
                parser.error(f"{folder} has no {db}")
        for rule, ignore in variants:
            name = rule + (f" without {ignore}" if ignore else "")
            try:
                figures = fit(variant(script, folder.resolve(), rule, ignore))
            except MprofError as e:
                print(f"replicates_rule: {folder}: {e}", file=sys.stderr)
                return 2
            means.setdefault(name, []).append(figures["test_mre_pct"])
            print(json.dumps({"pair": str(folder), "fit": name, **figures}), flush=True)
    print(
        json.dumps(
            {
                "mean_test_mre_pct": {k: round(statistics.mean(v), 2) for k, v in means.items()},
                "pairs": len(args.dirs),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
