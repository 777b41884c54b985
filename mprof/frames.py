"""Profiles as tidy pandas DataFrames, Hatchet GraphFrames and Thickets (docs/frames.md).

    import mprof.frames as mf
    mf.runs("pipe.db")          # one row per run: configuration, parameters, settings
    mf.pe_times("pipe.db")      # one row per (run, PE): elapsed, idle and CPU times
    mf.statistics("pipe.db")    # one row per (run, PE, object, statistic)
    mf.latency("pipe.db")       # one row per (run, PE, access category, enabler)
    mf.category_times("pipe.db")  # sampled CPU time per (run, PE, access category), if recorded
    mf.cost_categories("pipe.db", "pipe.model.json")  # the Cost Profile per (run, PE, category)
    mf.fits("pipe.model.json")  # one row per model parameter
    mf.graphframe("pipe.db", run_id=3)                # Hatchet, index (node, rank)
    mf.thicket("pipe.db")                             # every run of a database, one Thicket

A source is a profile database, a run profile JSON file, or a list of such files or of
`mprof.profile.RunProfile` objects (a run read from a file has `run_id` 1, 2, ... in the order
given).  The columns are listed in docs/frames.md; every frame has them even when it has no
rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from .errors import MprofError
from .profile import DEFAULT_MEASURE, MEASURES, RunProfile, load_profiles

RUN_COLUMNS = [
    "run_id",
    "program",
    "backend",
    "npes",
    "started_at",
    "elapsed_s",
    "hostname",
    "machine_fingerprint",
    "source",
]
PE_COLUMNS = ["run_id", "pe", "elapsed_s", "idle_s", "cpu_s", "idle_cpu_s"]
STAT_COLUMNS = ["run_id", "pe", "object_id", "module", "statistic", "value"]
LATENCY_COLUMNS = ["run_id", "pe", "access", "enabler", "count", "observed_s", "critical_s"]
CATEGORY_COLUMNS = ["run_id", "pe", "access", "cpu_s", "samples"]
COST_COLUMNS = ["run_id", "pe", "module", "category", "seconds", "sd", "halfwidth"]
FIT_COLUMNS = ["parameter", "module", "term", "value", "halfwidth", "sd", "origin", "ignored"]
TABLES = ("runs", "pe_times", "statistics", "latency", "category_times")

_SQLITE_MAGIC = b"SQLite format 3\x00"


def _pandas():
    try:
        import pandas
    except ImportError:
        raise MprofError(
            "pandas is not installed: pip install pandas "
            "(scripts/bootstrap.sh installs it into .venv)"
        ) from None
    return pandas


def _is_database(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError as exc:
        raise MprofError(f"{path}: {exc.strerror or exc}") from None


def load_runs(source, run_id: int | None = None, where: Sequence = ()) -> list[RunProfile]:
    """The runs of a source (module docstring), each with its `id`."""
    from .db.store import ProfileDB
    from .db.validate import parse_profile, read_text

    if isinstance(source, RunProfile):
        source = [source]
    if isinstance(source, (list, tuple)):
        out = []
        for i, item in enumerate(source, 1):
            run = item if isinstance(item, RunProfile) else load_runs(item)[0]
            if run.id is None:
                run.id = i
            out.append(run)
        return [r for r in out if run_id is None or r.id == run_id]
    path = Path(source)
    if not path.exists():
        raise MprofError(f"{path}: no such file")
    if not _is_database(path):
        if run_id not in (None, 1):
            raise MprofError(f"{path}: a run profile file holds run 1 only")
        run = RunProfile.from_document(parse_profile(read_text(str(path)), str(path)), str(path))
        run.id = 1
        return [run]
    if run_id is not None:
        with ProfileDB(path, create=False) as db:
            if run_id not in {r.id for r in db.runs()}:
                raise MprofError(f"{path}: no run with id {run_id}")
    out = load_profiles(
        path, () if run_id is not None else where, None if run_id is None else [run_id]
    )
    for run in out:
        run.source = f"{path}: run {run.id}"
    return out


def runs(source, where: Sequence = ()):
    """One row per run: RUN_COLUMNS, then `param.NAME` per program parameter and
    `setting.NAME` per runtime setting (missing where a run does not have it)."""
    pd = _pandas()
    rows = []
    for run in load_runs(source, where=where):
        rows.append(_run_row(run))
    frame = pd.DataFrame(rows)
    extra = sorted(c for c in frame.columns if c not in RUN_COLUMNS)
    extra = [c for c in extra if c.startswith("param.")] + [
        c for c in extra if c.startswith("setting.")
    ]
    return frame.reindex(columns=RUN_COLUMNS + extra)


def pe_times(source, where: Sequence = ()):
    """One row per (run, PE): PE_COLUMNS (CPU times missing for schema version 1 runs)."""
    pd = _pandas()
    rows = [
        {
            "run_id": run.id,
            "pe": pe.pe,
            "elapsed_s": pe.elapsed_s,
            "idle_s": pe.idle_s,
            "cpu_s": pe.cpu_s,
            "idle_cpu_s": pe.idle_cpu_s,
        }
        for run in load_runs(source, where=where)
        for pe in run.pes
    ]
    return pd.DataFrame(rows, columns=PE_COLUMNS)


def statistics(source, where: Sequence = ()):
    """One row per (run, PE, object, statistic): STAT_COLUMNS.  Values keep their type: a
    column of whole counters is an integer column (uint64 where one exceeds 2^63 - 1), exact
    to the last digit; negative values beside ones beyond 2^63 - 1 make it dtype object, still
    exact.  With fractions among the values it is float64, where counters beyond 2^53 lose
    digits: select one statistic's rows for those."""
    pd = _pandas()
    rows = [
        (run.id, pe.pe, obj.id, obj.module, stat, value)
        for run in load_runs(source, where=where)
        for pe in run.pes
        for obj in pe.objects
        for stat, value in obj.stats.items()
    ]
    return pd.DataFrame(rows, columns=STAT_COLUMNS)


def latency(source, where: Sequence = ()):
    """One row per (run, PE, access category, enabling category): LATENCY_COLUMNS."""
    pd = _pandas()
    rows = []
    for run in load_runs(source, where=where):
        for e in run.latency:
            rows.append((run.id, e.pe, e.access, e.enabler, e.count, e.observed_s, e.critical_s))
    return pd.DataFrame(rows, columns=LATENCY_COLUMNS)


def category_times(source, where: Sequence = ()):
    """The PE's CPU time by what its thread was doing, as the runtime sampled it (the run
    profile's optional per-PE `categories`, docs/run-profile.md): one row per (run, PE,
    access category or `(scheduler)` / `(idle)`): CATEGORY_COLUMNS.  Runs recorded without
    sampling have no rows."""
    pd = _pandas()
    rows = []
    for run in load_runs(source, where=where):
        for pe in run.pes:
            for c in pe.categories or []:
                rows.append((run.id, pe.pe, c.access, c.cpu_s, c.samples))
    return pd.DataFrame(rows, columns=CATEGORY_COLUMNS)


def cost_categories(source, model, where: Sequence = (), confidence: float = 0.90):
    """The Cost Profile per (run, PE, cost category) as `model` prices it: COST_COLUMNS.
    `seconds` is the category's cost summed over the PE's objects of that module, `sd` its
    standard deviation from the parameters' covariance, `halfwidth` the `confidence` band's
    half width (the parameters' share of `mprof report`'s band).  Modules the model does not
    describe have no rows."""
    pd = _pandas()
    from .model.modelfile import Model, load_model

    if not isinstance(model, Model):
        model = load_model(model)
    quantile = model.t_quantile(confidence)
    rows = []
    for run in load_runs(source, where=where):
        for pe in run.pes:
            by_module: dict[str, dict[str, float]] = {}
            for obj in pe.objects:
                if obj.module not in model.interfaces:
                    continue
                terms = by_module.setdefault(obj.module, {})
                for name, value in model.priced_terms([obj]).items():
                    terms[name] = terms.get(name, 0.0) + value
            for module in sorted(by_module):
                for cat, est in model.price_categories(module, by_module[module]).items():
                    rows.append(
                        (run.id, pe.pe, module, cat, est.seconds, est.sd, est.halfwidth(quantile))
                    )
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def fits(model, confidence: float = 0.90):
    """One row per parameter of a model file: FIT_COLUMNS.  `origin` is `fitted`, `fixed`
    (set by the script) or the model file it was imported from; `halfwidth` the interval's half
    width at `confidence` (imported parameters: as recorded in their source)."""
    pd = _pandas()
    from .model.modelfile import FIXED, Model, load_model

    if not isinstance(model, Model):
        model = load_model(model)
    quantile = model.t_quantile(confidence)
    index = {n: i for i, n in enumerate(model.cov_names or [])}
    rows = []
    for name in sorted(set(model.values) | set(model.ignored)):
        module, _, term = name.partition(":")
        i = index.get(name)
        recorded = model.halfwidths.get(name, math.nan)
        if i is not None:
            sd = math.sqrt(max(float(model.covariance[i, i]), 0.0))
        else:
            sd = recorded / quantile if quantile == quantile and quantile > 0 else math.nan
        halfwidth = recorded if recorded == recorded else quantile * sd
        if name in model.fitted:
            origin = "fitted"
        elif model.imported.get(name) == FIXED:
            origin = "fixed"
        else:
            origin = model.imported.get(name, "")
        rows.append(
            (
                name,
                module,
                term,
                model.values.get(name, math.nan),
                halfwidth,
                sd,
                origin,
                name in model.ignored,
            )
        )
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def table(name: str, source, where: Sequence = ()):
    """One of TABLES by name (what `mprof db export --format csv|parquet` writes)."""
    readers = {
        "runs": runs,
        "pe_times": pe_times,
        "statistics": statistics,
        "latency": latency,
        "category_times": category_times,
    }
    if name not in readers:
        raise MprofError(f"unknown table '{name}' (known: {', '.join(TABLES)})")
    return readers[name](source, where)


# -- Hatchet and Thicket --------------------------------------------------------------------

GRAPH_METRICS = ("time", "time (inc)", "fibers", "latency_observed", "latency_critical")


def graphframe(source, run_id: int | None = None, measure: str = DEFAULT_MEASURE):
    """One run as a Hatchet GraphFrame indexed by (node, rank), rank = PE, the way Hatchet's
    own multi-process readers index theirs.  The tree is the exports' call tree: `<program>`
    (exclusive `time`: busy time), its `idle` child and the access categories with their
    enablers (`fibers`, `latency_observed`, `latency_critical`), with exclusive values counted
    once (mprof.exports.calltree.exclusive_values): where the run measured CPU time per access
    category, a category's `time` is that time and the program's the rest of the busy time, so
    `update_inclusive_columns()` gives the root the PEs' total time.  `gf.metadata` holds the
    run's configuration (the columns of `runs()`)."""
    try:
        import hatchet
        from hatchet.frame import Frame
        from hatchet.graph import Graph
        from hatchet.node import Node
    except ImportError:
        raise MprofError(
            "Hatchet is not installed: pip install llnl-hatchet "
            "(scripts/bootstrap.sh installs it into .venv)"
        ) from None
    from .exports.calltree import exclusive_values, run_tree

    if measure not in MEASURES:
        raise MprofError(f"unknown measure '{measure}' (known: {', '.join(MEASURES)})")
    found = load_runs(source, run_id)
    if not found:
        raise MprofError(f"{source}: no run {run_id}")
    if len(found) > 1:
        raise MprofError(f"{source}: holds {len(found)} runs; name one with run_id")
    run = found[0]
    tree = run_tree(run, measure)
    values = exclusive_values(tree, run, measure)
    pd = _pandas()
    rows, roots = [], []

    def visit(cnode, parent, depth):
        hnode = Node(
            Frame({"name": cnode.name, "type": cnode.kind}), parent, hnid=len(rows), depth=depth
        )
        if parent is None:
            roots.append(hnode)
        else:
            parent.add_child(hnode)
        inclusive = _inclusive_time(cnode, values)
        own = values[id(cnode)]
        for i, pe in enumerate(run.pes):
            rows.append(
                {
                    "node": hnode,
                    "rank": pe.pe,
                    "name": cnode.name,
                    "type": cnode.kind,
                    "time": own["time"][i],
                    "time (inc)": inclusive[i],
                    "fibers": own["fibers"][i],
                    "latency_observed": own["latency_observed"][i],
                    "latency_critical": own["latency_critical"][i],
                }
            )
        for child in cnode.children:
            visit(child, hnode, depth + 1)

    visit(tree, None, 0)
    graph = Graph(roots)
    graph.enumerate_traverse()
    frame = pd.DataFrame(rows).set_index(["node", "rank"]).sort_index()
    return hatchet.GraphFrame(
        graph,
        frame,
        exc_metrics=["time"],
        inc_metrics=["time (inc)"],
        default_metric="time",
        metadata=_run_row(run, measure=measure),
    )


def _inclusive_time(cnode, values) -> list[float]:
    total = list(values[id(cnode)]["time"])
    for child in cnode.children:
        for i, t in enumerate(_inclusive_time(child, values)):
            total[i] += t
    return total


def _run_row(run: RunProfile, **more) -> dict:
    """A run's columns (RUN_COLUMNS), `more`, then `param.NAME` per program parameter and
    `setting.NAME` per runtime setting: a row of runs(), a Thicket profile's metadata."""
    row = {
        "run_id": run.id,
        "program": run.program,
        "backend": run.backend,
        "npes": run.npes,
        "started_at": run.started_at,
        "elapsed_s": run.elapsed_s,
        "hostname": run.machine.get("hostname"),
        "machine_fingerprint": run.fingerprint,
        "source": run.source,
        **more,
    }
    row.update({f"param.{k}": v for k, v in run.params.items()})
    row.update({f"setting.{k}": v for k, v in run.settings.items()})
    return row


def thicket(source, where: Sequence = (), measure: str = DEFAULT_MEASURE, per_pe: bool = False):
    """Every run of a source (selected by `where`, mprof.db.store.Condition) as one Thicket
    (PyPI `llnl-thicket`), its metadata table the runs' configurations (the columns of
    `runs()`, indexed by Thicket's profile hash).  Thicket indexes performance data by
    (node, profile) only, so the PEs of a run are summed (the sum over PEs is what the
    exports and fits use); with `per_pe=True` every (run, PE) is a profile of its own instead,
    with the metadata column `rank`."""
    try:
        from thicket import Thicket
    except ImportError:
        raise MprofError(
            "Thicket is not installed: pip install llnl-thicket "
            "(scripts/bootstrap.sh installs it into .venv)"
        ) from None
    import warnings

    selected = load_runs(source, where=where)
    if not selected:
        raise MprofError(f"{source}: no run selected")
    parts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for run in selected:
            gf = graphframe([run], run.id, measure)
            ranks = [pe.pe for pe in run.pes] if per_pe else [None]
            for rank in ranks:
                part = gf.deepcopy()
                if rank is not None:
                    part.dataframe = part.dataframe.xs(rank, level="rank", drop_level=False)
                    part.metadata = dict(part.metadata, rank=rank)
                part.drop_index_levels(function="sum")
                name = run.source + ("" if rank is None else f": PE {rank}")
                parts.append(Thicket.thicketize_graphframe(part, name))
        if len(parts) == 1:
            return parts[0]
        return Thicket.concat_thickets(parts, disable_tqdm=True)
