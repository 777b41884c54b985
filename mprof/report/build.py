"""The content of a post-run report: a run profile combined (optionally) with a cost model.

`build_report(run, model)` computes everything the text, terminal, JSON and HTML outputs show,
so that they cannot disagree; each renderer makes one pass over the Report and computes
nothing but layout.  The Report leads with the finding (Wen 1995 reads a Cost Profile for where
the time went, then the chains that explain the idle time, §4.5.4):

- `where`: the categories (module:CATEGORY, summed over objects and PEs) by cost, largest
  first, each with its share of the total (the model's total; without a model the measured busy
  and idle time and their share of the measured total);
- `lead_chain`: the observed-latency chain with the largest latency, and the latency of the
  access it ends at (so a reader sees what share of that wait the chain explains);
- then model quality: `verdict()`.

`cost_rows` (every object's categories) and `latency_by_cost` are the tables, sorted by cost.

Cost Profile (Wen 1995, Figs 4.10/4.12): for every object (id, module) the statistics' term values
are summed over PEs and priced with the model (`Model.price`, cost and 90 % half width from the
joint covariance of fitted and imported parameters).  `Time: Model=` is the sum of all
categories, `Total=` the sum of the PEs' times by the model's measure (CPU or elapsed time;
the paper's times are summed over PEs).

Whether the model explains the run: the model total's band adds the residual scatter of the
fit (sigma^2 = chi-square / dof, relative when the fit was normalised) to the parameters'
uncertainty, i.e. it is a 90 % prediction band; a measured total outside it is reported as a
run the model does not explain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


from ..errors import MprofError
from ..model.modelfile import missing_text
from ..latency import (
    METRICS,
    AccessLatency,
    Chain,
    DependenceGraph,
    build_graph,
    display_names,
    find_chains,
    pes_of,
    summarize,
)
from ..profile import RunProfile, fallback_measure


@dataclass
class CategoryCost:
    name: str
    seconds: float
    halfwidth: float  # 90 % half width from the parameters' covariance (nan: unknown)


@dataclass
class CostRow:
    """One line of a cost table: a category of one object (`id`), or of a module summed over
    its objects (`id` None).  `share` is the fraction of the report's `where_total`."""

    module: str
    category: str
    seconds: float
    halfwidth: float
    share: float
    id: int | None = None

    @property
    def name(self) -> str:
        return f"{self.module}:{self.category}"


@dataclass
class ObjectCost:
    id: int
    module: str
    pes: list[int]
    stats: dict[str, float]  # summed over PEs
    categories: list[CategoryCost] = field(default_factory=list)
    modelled: bool = False
    note: str = ""  # why it is not modelled

    @property
    def total(self) -> float:
        return sum(c.seconds for c in self.categories)


@dataclass
class PECost:
    pe: int
    measured_s: float
    idle_s: float
    model_s: float | None = None
    halfwidth: float | None = None  # prediction band of this PE's model time
    categories: dict[str, float] = field(default_factory=dict)  # "module:CAT" -> seconds
    # the idle part of measured_s, in its measure (wall-clock idle_s for elapsed, the idle
    # loop's CPU time for cpu); None: not measured
    measured_idle_s: float | None = None

    @property
    def error_percent(self) -> float | None:
        if self.model_s is None or self.measured_s <= 0:
            return None
        return 100.0 * (self.model_s - self.measured_s) / self.measured_s


# Why the runtime sent its aggregation buffers (rts.perf's Agg statistics; docs/runtime.md,
# "The flush policy"), as the report names each reason.
AGG_WHY = {
    "AggHalf": "half full at a communication period",
    "AggFull": "full",
    "AggFed": "to a PE that waited for work",
    "AggAged": "open for the flush delay",
    "AggDrain": "all at once (out of work, mp_flush)",
    "AggOrder": "ahead of a message sent at once",
    "AggTaken": "taken by a PE of the same worker",
}


@dataclass
class Messages:
    """The runtime's remote operations and the messages that carried them, summed over PEs
    (the rts record); `why` counts the aggregation buffers by the rule that sent them, largest
    first (empty for a run made before the runtime counted them); `carried` the arrived
    records (`arrived`) that carriers ran from their message buffers (0 for a run made
    before carriers, or with them off)."""

    remote_ops: int
    messages: int  # data messages: aggregation buffers and messages sent at once
    why: list[tuple[str, int]] = field(default_factory=list)  # (Agg statistic, buffers)
    arrived: int = 0  # ThreadArrived: records that ran as FIFO fibers on their receiver
    carried: int = 0  # ThreadCarried: of them, run by carriers

    @property
    def per_message(self) -> float:
        return self.remote_ops / self.messages if self.messages else math.nan

    @property
    def aggregated(self) -> int:
        return sum(n for _, n in self.why)


@dataclass
class Report:
    source: str
    program: str
    argv: list[str]
    npes: int
    settings: dict
    params: dict
    model_path: str | None
    objects: list[ObjectCost]
    pes: list[PECost]
    measured_total: float
    idle_total: float
    model_total: float | None = None
    param_halfwidth: float | None = None  # from the parameters' covariance only
    band_halfwidth: float | None = None  # prediction band used for the verdict
    explained: bool | None = None  # None: no model, or the band cannot be computed
    unmodelled: list[str] = field(default_factory=list)  # "Id 5 (hashtable)"
    latency: list[AccessLatency] = field(default_factory=list)
    latency_per_pe: dict[int, list[AccessLatency]] = field(default_factory=dict)
    graph: DependenceGraph = field(default_factory=lambda: DependenceGraph([], []))
    chains: dict[str, list[Chain]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # access display names
    warnings: list[str] = field(default_factory=list)
    confidence: float = 0.90
    measure: str = "elapsed"  # what measured_s and measured_total are (the model's measure)
    decimals: int = 3  # of printed seconds: about four significant digits (decimals_for)
    where: list[CostRow] = field(default_factory=list)  # by cost, largest first
    where_total: float = 0.0  # what the shares in `where` and `cost_rows` are of
    cost_rows: list[CostRow] = field(default_factory=list)  # objects' categories by cost
    latency_by_cost: list[AccessLatency] = field(default_factory=list)  # by observed latency
    lead_chain: Chain | None = None  # the observed chain with the largest latency
    lead_access_latency: float = 0.0  # observed latency of the access lead_chain ends at
    lead_access: str | None = None  # the access with the largest observed latency
    lead_enablers: list = field(default_factory=list)  # its EnablerLatency rows, largest first
    # measured figures (mprof.report.measured)
    has_categories: bool = False  # every PE carries measured CPU time per access category
    measured_rows: list = field(default_factory=list)  # MeasuredRow, "where" measured first
    measured_cpu_total: float = 0.0  # the categories' CPU seconds summed over PEs
    model_beside: bool = False  # measured_rows carry the model's estimates (a cpu model)
    unexplained: object = None  # MeasuredRow: measured minus model (None without one)
    cpu_total: float | None = None  # the PEs' CPU time (None: not measured)
    cpu_idle: float | None = None  # CPU time of the idle loops
    elapsed_total: float = 0.0  # the PEs' wall-clock time
    idle_enablers: list = field(default_factory=list)  # (enabler, wall idle s) largest first
    pe_measured: list = field(default_factory=list)  # PEMeasured per PE
    imbalance: object = None  # Imbalance, or None when the PEs were busy alike
    what_if: object = None  # WhatIf (mprof.report.whatif), when asked for
    messages: Messages | None = None  # the runtime's messages, when it sent any

    @property
    def seconds_unit(self) -> str:
        """What the seconds of the costs are: CPU or elapsed seconds, summed over PEs."""
        return ("CPU seconds" if self.measure == "cpu" else "seconds") + " summed over PEs"

    @property
    def band(self) -> tuple[float, float] | None:
        if (
            self.model_total is None
            or self.band_halfwidth is None
            or not math.isfinite(self.band_halfwidth)
        ):
            return None
        return (self.model_total - self.band_halfwidth, self.model_total + self.band_halfwidth)

    def verdict(self) -> str | None:
        """A plain sentence on whether the model explains this run (None without a model)."""
        if self.model_total is None:
            return None
        pct = int(round(self.confidence * 100))
        if self.band is None:
            return (
                "The model's band cannot be computed (the fit has no degrees of freedom), "
                "so it is unknown whether the model explains this run."
            )
        lo, hi = self.band
        if self.explained:
            return (
                f"The measured total {self.measured_total:.6g} s is inside the model's "
                f"{pct} % band [{lo:.6g}, {hi:.6g}] s."
            )
        side = "above" if self.measured_total > hi else "below"
        return (
            f"WARNING: the model does not explain this run: the measured total "
            f"{self.measured_total:.6g} s is {side} the model's {pct} % band "
            f"[{lo:.6g}, {hi:.6g}] s."
        )


def build_report(
    run: RunProfile | Mapping,
    model=None,
    *,
    source: str = "<run>",
    model_path: str | None = None,
    roots: int = 3,
    min_fraction: float = 0.05,
    what_if: list[str] | None = None,
) -> Report:
    """The report of one run (a RunProfile; a validated document is read into one)."""
    if not isinstance(run, RunProfile):
        run = RunProfile.from_document(run, source)
    objects: dict[tuple[int, str], ObjectCost] = {}
    for pe in run.pes:
        for obj in pe.objects:
            key = (obj.id, obj.module)
            oc = objects.setdefault(key, ObjectCost(key[0], key[1], [], {}))
            oc.pes.append(pe.pe)
            for name, value in obj.stats.items():
                oc.stats[name] = oc.stats.get(name, 0) + value
    pe_costs = [PECost(pe.pe, pe.time("elapsed"), pe.idle_time("elapsed")) for pe in run.pes]
    report = Report(
        source=source,
        program=run.program,
        argv=list(run.argv),
        npes=run.npes,
        settings=dict(run.settings),
        params=dict(run.params),
        model_path=model_path,
        objects=[objects[k] for k in sorted(objects)],
        pes=pe_costs,
        measured_total=sum(p.measured_s for p in pe_costs),
        idle_total=sum(p.idle_s for p in pe_costs),
    )

    if model is not None:
        _price(report, run, model)
    _measured(report, run, model)
    report.messages = _messages(report.objects)
    if what_if:
        if model is None:
            raise MprofError(
                "--what-if needs a model (--model MODEL.json): the model predicts the changed run"
            )
        from .whatif import what_if as predict

        report.what_if = predict(run, model, list(what_if), report.confidence)

    declared = list(run.accesses)
    rows = run.latency
    report.latency = summarize(rows, declared)
    report.latency_per_pe = {pe: summarize(rows, declared, pe) for pe in pes_of(rows)}
    report.graph = build_graph(rows, declared)
    report.names = display_names(report.graph.nodes)
    report.chains = {
        m: find_chains(report.graph, m, roots=roots, min_fraction=min_fraction) for m in METRICS
    }
    _lead(report)
    return report


def _messages(objects: list[ObjectCost]) -> Messages | None:
    """The rts record's remote operations and messages, or None without any."""
    stats: dict[str, float] = {}
    for oc in objects:
        if oc.module == "rts":
            for name, value in oc.stats.items():
                stats[name] = stats.get(name, 0) + value
    if not stats.get("RemoteOp"):
        return None
    why = sorted(((k, int(stats[k])) for k in AGG_WHY if stats.get(k)), key=lambda kv: -kv[1])
    return Messages(
        int(stats["RemoteOp"]),
        int(stats.get("MsgSent", 0) + stats.get("FastMsgSent", 0)),
        why,
        int(stats.get("ThreadArrived", 0)),
        int(stats.get("ThreadCarried", 0)),
    )


def decimals_for(report: Report) -> int:
    """3 decimals as in the paper for totals of a second or more; more for short runs so that
    every printed value keeps about four significant digits."""
    largest = max(
        [report.model_total or 0.0, report.measured_total] + [a.observed_s for a in report.latency]
    )
    if largest <= 0 or largest >= 1:
        return 3
    return min(9, 3 + math.ceil(-math.log10(largest)))


def _share(value: float, total: float) -> float:
    return value / total if total > 0 else math.nan


def _lead(report: Report) -> None:
    """The finding first: where the time went, by cost, and the chain behind the waits."""
    report.decimals = decimals_for(report)
    if report.model_total is not None:
        report.where_total = report.model_total
        report.cost_rows = sorted(
            (
                CostRow(
                    oc.module,
                    c.name,
                    c.seconds,
                    c.halfwidth,
                    _share(c.seconds, report.model_total),
                    oc.id,
                )
                for oc in report.objects
                if oc.modelled
                for c in oc.categories
            ),
            key=lambda r: (-r.seconds, r.id, r.category),
        )
        for row in report.where:
            row.share = _share(row.seconds, report.model_total)
        report.where.sort(key=lambda r: (-r.seconds, r.name))
    else:
        total = report.measured_total
        busy = max(total - report.idle_total, 0.0)
        report.where_total = total
        report.where = sorted(
            [
                CostRow("measured", "busy", busy, math.nan, _share(busy, total)),
                CostRow(
                    "measured",
                    "idle",
                    report.idle_total,
                    math.nan,
                    _share(report.idle_total, total),
                ),
            ],
            key=lambda r: -r.seconds,
        )
    report.latency_by_cost = sorted(report.latency, key=lambda a: (-a.observed_s, a.access))
    observed = report.chains.get("observed") or []
    if observed:
        report.lead_chain = observed[0]
        report.lead_access_latency = report.graph.latency(observed[0].nodes[-1], "observed")
    waited = [a for a in report.latency_by_cost if a.observed_s > 0]
    if waited:  # the wait to name even when no chain of other accesses lies behind it
        report.lead_access = waited[0].access
        report.lead_enablers = waited[0].breakdown("observed")
        if report.lead_chain is None:
            report.lead_access_latency = waited[0].observed_s


def _measured(report: Report, run: RunProfile, model) -> None:
    """Measured first: CPU time per access category with the model beside it, wall-clock
    idle beside CPU idle, per-PE figures and load imbalance (mprof.report.measured)."""
    from .measured import (
        add_unexplained,
        find_imbalance,
        idle_by_enabler,
        measured_rows,
        pe_measured,
    )

    report.pe_measured = pe_measured(run)
    report.elapsed_total = run.time("elapsed")
    if fallback_measure(run.pes, "cpu") == "cpu":
        report.cpu_total = run.time("cpu")
        report.cpu_idle = run.idle_time("cpu")
    report.idle_enablers = idle_by_enabler(run)
    report.imbalance = find_imbalance(report.pe_measured)
    report.has_categories = run.has_categories
    if not report.has_categories:
        return
    beside = model is not None and report.measure == "cpu"
    model_rows = (
        [(r.module, r.category, r.seconds, r.halfwidth) for r in report.where] if beside else None
    )
    report.measured_rows, report.measured_cpu_total = measured_rows(run, model_rows)
    report.model_beside = beside
    if beside:
        report.unexplained = add_unexplained(
            report.measured_rows, report.measured_cpu_total, report.model_total
        )


def _price(report: Report, run: RunProfile, model) -> None:
    """Prices every PE and every object with the model (Model.price: the one pricing of a
    model); the measured times the model is compared with are those of the model's measure.
    Each statistics record's terms are evaluated once; PE, object and run totals add them."""
    measure = model.settings.get("measure", "elapsed")
    report.measure = measure
    quantile = model.t_quantile(report.confidence)
    problems: dict[str, str] = {}
    for module in {obj.module for pe in run.pes for obj in pe.objects}:
        if module not in model.interfaces:
            problems[module] = "no model for this module"
            continue
        try:
            model.interface(module)
        except MprofError as exc:
            problems[module] = str(exc)
            report.warnings.append(f"module {module}: {exc}")
    for module, names in model.missing_statistics(
        obj for pe in run.pes for obj in pe.objects if obj.module not in problems
    ).items():
        report.warnings.append(missing_text(module, names))
    # one row of term values per statistics record (object of a PE) the model prices; every
    # figure below prices sums of these rows, all at once (Model.price over a TermMatrix)
    records = [
        (i, obj) for i, pe in enumerate(run.pes) for obj in pe.objects if obj.module not in problems
    ]
    terms = model.term_matrix([[obj] for _, obj in records])
    by_module = {
        module: model.price_categories(module, terms)
        for module in dict.fromkeys(obj.module for _, obj in records)
    }
    pe_rows: list[list[int]] = [[] for _ in run.pes]  # PE -> its records' rows
    for r, (i, _) in enumerate(records):
        pe_rows[i].append(r)
    per_pe = model.price(terms.sum_rows(pe_rows))

    for p, (pe, pc) in enumerate(zip(run.pes, report.pes)):
        used = fallback_measure([pe], measure)
        if used != measure:
            report.warnings.append(
                f"PE {pe.pe}: the run has no CPU times (recorded from a run "
                "profile of schema version 1); compared with elapsed time "
                "instead"
            )
        pc.measured_s = pe.time(used)
        pc.measured_idle_s = pe.idle_time(used) if used == "elapsed" else pe.idle_cpu_s
        for r in pe_rows[p]:
            obj = records[r][1]
            for cat, est in by_module[obj.module].items():
                name = f"{obj.module}:{cat}"
                pc.categories[name] = pc.categories.get(name, 0.0) + float(est.seconds[r])
        pc.model_s = float(per_pe.seconds[p])
        pc.halfwidth = quantile * math.sqrt(
            max(float(per_pe.variance[p]), 0.0) + model.residual_variance([pc.model_s])
        )
    report.measured_total = sum(p.measured_s for p in report.pes)

    by_object: dict[tuple[int, str], list[int]] = {}  # (id, module) -> its rows, PE by PE
    for r, (_, obj) in enumerate(records):
        by_object.setdefault((obj.id, obj.module), []).append(r)
    for oc in report.objects:
        if oc.module in problems:
            oc.note = problems[oc.module]
            report.unmodelled.append(f"Id {oc.id} ({oc.module})")
            continue
        oc.modelled = True
        summed = terms.sum_rows([by_object.get((oc.id, oc.module), [])])
        oc.categories = [
            CategoryCost(cat, float(est.seconds[0]), float(est.halfwidth(quantile)[0]))
            for cat, est in model.price_categories(oc.module, summed).items()
        ]

    module_rows: dict[str, list[int]] = {}
    for (_, module), rows in by_object.items():
        module_rows.setdefault(module, []).extend(rows)
    modules = sorted(module_rows)
    summed = terms.sum_rows([module_rows[m] for m in modules])
    report.where = [
        CostRow(module, cat, float(est.seconds[k]), float(est.halfwidth(quantile)[k]), math.nan)
        for k, module in enumerate(modules)
        for cat, est in model.price_categories(module, summed).items()
    ]

    total = model.price(terms.sum_rows([range(terms.rows)]))[0]
    report.model_total = total.seconds
    report.param_halfwidth = total.halfwidth(quantile)
    per_sample = [pc.model_s for pc in report.pes]
    if model.settings.get("granularity") == "run":
        per_sample = [report.model_total]
    report.band_halfwidth = quantile * math.sqrt(
        max(total.variance, 0.0) + model.residual_variance(per_sample)
    )
    if report.band is not None:
        lo, hi = report.band
        report.explained = lo <= report.measured_total <= hi
