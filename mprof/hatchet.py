"""Run profiles as Hatchet GraphFrames (LLNL Hatchet, PyPI `llnl-hatchet`), docs/frames.md.

    import mprof.hatchet
    gf = mprof.hatchet.graphframe("run.json")            # a run profile file
    gf = mprof.hatchet.graphframe("runs.db", run_id=3)  # or a run of a profile database
    print(gf.tree(metric_column="time (inc)"))

`graphframe` is mprof.frames.graphframe: the exports' call tree (mprof.exports.calltree) with
the PE as the index level `rank` beside `node`, as Hatchet's own multi-process readers do, and
the run's configuration in `gf.metadata`.

`literal(run)` is the nested list `GraphFrame.from_literal` reads, which has no index level for
processes; it puts one node per PE between the program and its parts instead:

    <program>
      PE <n>                     time: the PE's time (exclusive 0: it is the sum of its parts)
        busy                     time: busy time
        idle                     time: idle time
        <module:ACCESS>          fibers, latency_observed, latency_critical
          <module:ENABLER>       the same, per enabling category

`time (inc)` is the inclusive time Hatchet expects beside `time`; the latency columns are not
times spent in the node (they overlap busy and idle time) and are not summed into it."""

from __future__ import annotations

from pathlib import Path

from .exports.calltree import Node, run_tree
from .errors import MprofError
from .profile import DEFAULT_MEASURE, RunProfile, load_profiles

_LATENCY = ("fibers", "latency_observed", "latency_critical")


def load_run(source: str | Path, run_id: int | None = None) -> RunProfile:
    """A run profile from a JSON file, or run `run_id` of a profile database."""
    from .db.store import ProfileDB
    from .db.validate import parse_profile, read_text

    path = Path(source)
    if run_id is None:
        return RunProfile.from_document(parse_profile(read_text(str(path)), str(path)), str(path))
    with ProfileDB(path, create=False) as db:
        if run_id not in {r.id for r in db.runs()}:
            raise MprofError(f"{path}: no run with id {run_id}")
    (run,) = load_profiles(path, run_ids=[run_id])
    run.source = f"{path}: run {run_id}"
    return run


def literal(run: RunProfile, measure: str = DEFAULT_MEASURE) -> list[dict]:
    """The run as the nested list GraphFrame.from_literal reads."""
    tree = run_tree(run, measure)
    idle = next(c for c in tree.children if c.kind == "idle")
    pes = []
    for i, pe in enumerate(run.pes):
        busy_t, idle_t = tree.values["time"][i], idle.values["time"][i]
        children = [_leaf("busy", "busy", busy_t), _leaf("idle", "idle", idle_t)]
        children += [_access(c, i) for c in tree.children if c.kind == "access"]
        pes.append(
            {
                "frame": {"name": f"PE {pe.pe}", "type": "pe"},
                "metrics": _metrics(0.0, busy_t + idle_t),
                "children": children,
            }
        )
    total = sum(p["metrics"]["time (inc)"] for p in pes)
    return [
        {
            "frame": {"name": tree.name, "type": "program"},
            "metrics": _metrics(0.0, total),
            "children": pes,
        }
    ]


def graphframe(
    source: str | Path | RunProfile, run_id: int | None = None, measure: str = DEFAULT_MEASURE
):
    """A Hatchet GraphFrame of one run, indexed by (node, rank): mprof.frames.graphframe."""
    from .frames import graphframe as indexed

    return indexed(source, run_id, measure)


def _metrics(exclusive: float, inclusive: float, **extra) -> dict:
    out = {"time": exclusive, "time (inc)": inclusive}
    for name in _LATENCY:
        out[name] = extra.get(name, 0.0)
    return out


def _leaf(name: str, kind: str, t: float) -> dict:
    return {"frame": {"name": name, "type": kind}, "metrics": _metrics(t, t)}


def _access(node: Node, pe: int) -> dict:
    out = {
        "frame": {"name": node.name, "type": node.kind},
        "metrics": _metrics(0.0, 0.0, **{m: node.values[m][pe] for m in _LATENCY}),
    }
    if node.children:
        out["children"] = [_access(c, pe) for c in node.children]
    return out
