"""Extra-P JSON Lines: one line per (run, call path, metric), the value summed over PEs.

    {"params": {"M": 2000, "N": 5}, "callpath": "pipe->idle", "metric": "time", "value": 0.01}

Extra-P reads it with `extrap --json FILE`; repetitions are lines with the same parameters.
Every run gets a line for every (call path, metric) that any exported run has: an access
category a run never entered ran no fibers and waited for nothing, so its values are zero,
and Extra-P needs a value at every point."""

from __future__ import annotations

import json

from ..exports.calltree import applicable_metrics, model_params, numeric_params, run_tree
from ..profile import RunProfile


def extrap_lines(runs: list[RunProfile], measure: str, params: list[str] | None = None):
    """The lines; `params` as mprof.exports.calltree.model_params takes them (None: the
    varying parameters that are not settings)."""
    names, _ = model_params(runs, params)
    trees = [run_tree(run, measure) for run in runs]
    keys: dict[tuple, None] = {}  # ordered union of (call path, metric)
    for tree in trees:
        for path, node in tree.walk():
            for metric in applicable_metrics(node.kind):
                keys.setdefault(("->".join(path), metric), None)
    for run, tree in zip(runs, trees):
        values = numeric_params(run)
        coord = {n: _num(values[n]) for n in names}
        have = {
            ("->".join(path), m): sum(node.values[m])
            for path, node in tree.walk()
            for m in applicable_metrics(node.kind)
        }
        for callpath, metric in keys:
            yield (
                json.dumps(
                    {
                        "params": coord,
                        "callpath": callpath,
                        "metric": metric,
                        "value": have.get((callpath, metric), 0.0),
                    },
                    separators=(",", ":"),
                )
                + "\n"
            )


def _num(x: float):
    return int(x) if float(x).is_integer() else x
