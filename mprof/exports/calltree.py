"""The call tree every export shares (docs/exports.md).

mprof measures no call stacks; what it knows per PE is the PE's time, the part of it spent
idle, and per (access category, enabling category) pair the number of fibers run and the
latency they observed and put on the critical path (Wen 1995, section 4.5.3).  That becomes a
tree of three levels:

    <program>                      time: busy time (the PE's time less its idle time)
      idle                         time: idle time
      <module:ACCESS>              fibers, observed and critical latency of that category
        <module:ENABLER>           the same, for the fibers that category enabled

`time` follows the measure (`cpu`, the default, or `elapsed`: mprof.profile.MEASURES), so an
exported tree's times add up to what `mprof fit` models."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import MprofError
from ..profile import IDLE, NOT_SAMPLED, SCHEDULER, RunProfile

METRICS = ("time", "fibers", "latency_observed", "latency_critical")
UNITS = {"time": "sec", "fibers": "occ", "latency_observed": "sec", "latency_critical": "sec"}
DESCRIPTIONS = {
    "time": "busy time of the PE (program node) or its idle time (idle node), seconds",
    "fibers": "fibers that ran in this access category (enabled by this category)",
    "latency_observed": "time the fibers waited while their PE was idle (Wen 1995, 4.5.3)",
    "latency_critical": "the part of the observed latency on the critical path",
}


@dataclass
class Node:
    name: str
    kind: str  # program, idle, access, enabler
    # metric -> one value per PE (index = PE number)
    values: dict[str, list[float]] = field(default_factory=dict)
    children: list["Node"] = field(default_factory=list)

    def child(self, name: str, kind: str, npes: int) -> "Node":
        for c in self.children:
            if c.name == name:
                return c
        node = Node(name, kind, {m: [0.0] * npes for m in METRICS})
        self.children.append(node)
        return node

    def walk(self, path: tuple[str, ...] = ()):
        """(call path, node) in pre-order."""
        here = path + (self.name,)
        yield here, self
        for c in self.children:
            yield from c.walk(here)


def run_tree(run: RunProfile, measure: str) -> Node:
    """The call tree of one run: its time by `measure`, and its latency rows."""
    npes = len(run.pes)
    root = Node(run.program or "program", "program", {m: [0.0] * npes for m in METRICS})
    idle = root.child("idle", "idle", npes)
    for i, pe in enumerate(run.pes):
        try:
            total, idle_t = pe.time(measure), pe.idle_time(measure)
        except MprofError as exc:
            raise MprofError(f"{run.source}: {exc}") from None
        root.values["time"][i] = max(total - idle_t, 0.0)
        idle.values["time"][i] = idle_t
    for i, pe in enumerate(run.pes):
        for row in pe.latency:
            access = root.child(row.access, "access", npes)
            enabler = access.child(row.enabler, "enabler", npes)
            for node in (access, enabler):
                node.values["fibers"][i] += float(row.count)
                node.values["latency_observed"][i] += row.observed_s
                node.values["latency_critical"][i] += row.critical_s
    return root


def numeric_params(run: RunProfile) -> dict[str, float]:
    """The run's numeric parameters, with its PE count as `npes`."""
    out = {"npes": float(run.npes)}
    for name, value in run.params.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[str(name)] = float(value)
    return out


def varying_params(runs: list[RunProfile]) -> list[str]:
    """Parameters that take more than one value across the runs, in first-seen order; modelling
    tools cannot fit a parameter that never changes."""
    seen: dict[str, set] = {}
    for run in runs:
        for name, value in numeric_params(run).items():
            seen.setdefault(name, set()).add(value)
    names = [n for n, values in seen.items() if len(values) > 1]
    missing = [n for n in names if any(n not in numeric_params(r) for r in runs)]
    if missing:
        raise MprofError(
            f"parameter(s) {', '.join(missing)} are not set in every run: "
            "select runs of one program with --where"
        )
    return names


# Extra-P needs at least this many values of a parameter to model it (its own warning)
MIN_VALUES = 5


def setting_like(runs: list[RunProfile], name: str) -> str | None:
    """Why parameter `name` is a setting rather than a scaling parameter, or None: it switches
    something on and off (two values, one of them 0) or it is a runtime setting of the run
    passed to the program too (equal to one of the run's settings in every run), like PIPE's
    AGG, which is MPROF_AGG_BYTES."""
    values = [numeric_params(r).get(name) for r in runs]
    distinct = sorted({v for v in values if v is not None})
    if len(distinct) == 2 and distinct[0] == 0:
        return f"an on/off switch (values 0 and {_fmt(distinct[1])})"
    common = None
    for run, value in zip(runs, values):
        same = {
            k
            for k, v in run.settings.items()
            if isinstance(v, (int, float))
            and not isinstance(v, bool)
            and value is not None
            and float(v) == value
        }
        common = same if common is None else common & same
    if common:
        return f"the runtime setting {sorted(common)[0]} in every run"
    return None


def model_params(
    runs: list[RunProfile], params: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The parameters a modelling tool gets, and warnings about them.  By default the numeric
    parameters that vary (varying_params) less those that are settings (setting_like); `params`
    names them instead.  Warnings: a setting left out or passed, and a parameter with fewer than
    MIN_VALUES values (Extra-P needs at least 5 to model one)."""
    warnings = []
    if params is None:
        names = []
        for name in varying_params(runs):
            why = setting_like(runs, name)
            if why:
                warnings.append(
                    f"parameter {name} is left out: it is {why}, a setting rather "
                    f"than a scaling parameter (name it with --params to pass it)"
                )
            else:
                names.append(name)
    else:
        names = list(params)
        for name in names:
            why = setting_like(runs, name)
            if why:
                warnings.append(
                    f"parameter {name} is {why}: modelling tools fit it as a "
                    "scaling parameter (a power or log of its value)"
                )
    for name in names:
        count = len({numeric_params(r)[name] for r in runs})
        if count < MIN_VALUES:
            warnings.append(
                f"parameter {name} takes {count} value(s); Extra-P needs at least "
                f"{MIN_VALUES} per parameter to model it"
            )
    return names, warnings


def _fmt(x: float):
    return int(x) if float(x).is_integer() else x


def applicable_metrics(kind: str) -> tuple[str, ...]:
    """The metrics a node of this kind measures (the others are not zero but undefined)."""
    return ("time",) if kind in ("program", "idle") else METRICS[1:]


def exclusive_values(
    tree: Node, run: RunProfile, measure: str
) -> dict[int, dict[str, list[float]]]:
    """Per node (by id) and metric, the node's exclusive value per PE, counted once, for
    exports whose tools add children to parents (CUBE, Hatchet).  An access category's fibers
    and latency are its enablers' sums, so its own value is 0 (the inclusive value is the
    sum).  Where the run measured CPU time per access category (the profile's `categories`,
    measure `cpu`), each category's node gets that time and the program node keeps the rest of
    the busy time (the runtime between fibers), so the root's inclusive time stays the PEs'
    CPU time; where the samples put less in the idle loop than its clock did, the categories
    are scaled down to the busy time.  Adds a node for a measured category that ran no fiber
    (pe_main's own code), so call it before walking the tree."""
    npes = len(run.pes)
    if measure == "cpu" and run.has_categories:
        for i, pe in enumerate(run.pes):
            rows = [
                r for r in pe.categories or [] if r.access not in (SCHEDULER, IDLE, NOT_SAMPLED)
            ]
            # The busy time is the clock's (CPU time less the idle loop's); the categories are
            # samples, whose idle share may be smaller: scaled down to fit, never over it.
            busy, sampled = tree.values["time"][i], sum(r.cpu_s for r in rows)
            scale = min(1.0, busy / sampled) if sampled > 0 else 0.0
            for row in rows:
                tree.child(row.access, "access", npes).values["time"][i] += row.cpu_s * scale
            tree.values["time"][i] = max(busy - sampled * scale, 0.0)
    out = {}
    for _, node in tree.walk():
        values = {m: list(v) for m, v in node.values.items()}
        if node.kind == "access":  # its enablers' sums: counted there
            for metric in METRICS[1:]:
                below = [sum(c.values[metric][i] for c in node.children) for i in range(npes)]
                values[metric] = [max(v - b, 0.0) for v, b in zip(values[metric], below)]
        out[id(node)] = values
    return out
