#!/usr/bin/env python3
"""README.md's section "The applications" quotes each Chapter 5 study's short paragraph (the
`In short:` line of benchmarks/<app>/experiments/results/summary.md, which the study renders
from its summary.json) between `<!-- study:<app> -->` and `<!-- /study:<app> -->`.

    .venv/bin/python benchmarks/common/readme.py           rewrites those blocks
    .venv/bin/python benchmarks/common/readme.py --check   exits 1 where README differs

benchmarks/studies.sh runs it after the studies; a test runs --check, so README never quotes
a figure its summary does not hold."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
STUDIES = ["em3d", "tripuzzle", "eigenvalue", "phylogeny", "cswec"]


def summary_path(app: str) -> Path:
    return ROOT / "benchmarks" / app / "experiments" / "results" / "summary.md"


def in_short(app: str) -> str:
    """The study's short paragraph, from its summary."""
    path = summary_path(app)
    for line in path.read_text().splitlines():
        if line.startswith("In short: "):
            return line
    raise SystemExit(f"{path}:1:1: no 'In short:' paragraph (render the study again)")


def block(app: str) -> re.Pattern:
    return re.compile(rf"(<!-- study:{app} -->\n)(.*?)(\n<!-- /study:{app} -->)", re.S)


def differences(text: str) -> list[str]:
    """The studies whose README block is missing or differs from the summary's paragraph."""
    out = []
    for app in STUDIES:
        m = block(app).search(text)
        if not m:
            out.append(f"{README}:1:1: no block <!-- study:{app} --> ... <!-- /study:{app} -->")
        elif m.group(2) != in_short(app):
            line = text.count("\n", 0, m.start(2)) + 1
            out.append(
                f"{README}:{line}:1: the {app} paragraph differs from "
                f"{summary_path(app).relative_to(ROOT)} (run benchmarks/common/readme.py)"
            )
    return out


def update(text: str) -> str:
    for app in STUDIES:
        text = block(app).sub(lambda m, app=app: m.group(1) + in_short(app) + m.group(3), text)
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    args = ap.parse_args(argv)
    text = README.read_text()
    diff = differences(text)
    if args.check:
        for d in diff:
            print(d, file=sys.stderr)
        return 1 if diff else 0
    missing = [d for d in diff if "no block" in d]
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 1
    new = update(text)
    if new != text:
        tmp = README.with_suffix(".md.tmp")
        tmp.write_text(new)
        tmp.replace(README)
    return 0


if __name__ == "__main__":
    sys.exit(main())
