"""Plain-text and JSON renderings of a Report, each one pass over it (mprof.report.build).

The text leads with the finding, then keeps the paper's shape (Figs 4.12, 4.15), whose
`*** Cost Profile ***` block, `Id N: CAT= x.xxx` lines and `Time: Model= ..., Total= ...` line
other tools parse (the C helper prints the same lines):

    *** Where the time went (model, CPU seconds summed over PEs) ***
      pipe:COMP   0.0996 s   69.7 %
      rts:IDLE    0.0369 s   25.8 %
    *** Why the PEs waited (observed latency) ***
    consume waited 0.0377 s; 0.0199 s (52.8 %) along DEQ -> ENQ -> produce -> consume
    *** Model quality ***
    The measured total 0.143194 s is inside the model's 90 % band [0.138074, 0.147975] s.
    *** Cost Profile ***
    Id 0: THREAD= 45.912 IDLE=147.729 COMM_ALPHA= 10.317 COMM_BETA= 53.037
    Time: Model= 427.325, Total= 406.569
    *** Observed Latency ***
    consume = 134.063 s -- DEQ: 92.700 s produce: 41.363 s
"""

from __future__ import annotations

import math

from ..latency import access_latency_json, chain_json
from ..latency.text import chains_section, latency_section
from ..numbers import percent, percent_of
from .build import AGG_WHY, CostRow, Report, decimals_for
from .measured import NO_CATEGORIES

__all__ = ["decimals_for", "format_text", "report_json"]

LEAD_ROWS = 5  # categories listed by name in the lead; the rest are summed as "N more"


def _num(value: float, d: int) -> str:
    return f"{value:{d + 4}.{d}f}"


def lead_rows(report: Report, limit: int = LEAD_ROWS) -> tuple[list[CostRow], CostRow | None]:
    """The first `limit` categories of `where`, and the rest summed into one row (or None)."""
    rows, rest = report.where[:limit], report.where[limit:]
    if not rest:
        return rows, None
    seconds = sum(r.seconds for r in rest)
    share = seconds / report.where_total if report.where_total > 0 else math.nan
    return rows, CostRow("", f"{len(rest)} more", seconds, math.nan, share)


def basis(report: Report) -> str:
    return ("model" if report.model_total is not None else "measured") + ", " + report.seconds_unit


def lead_lines(report: Report, d: int) -> list[str]:
    """Load imbalance (when there is), where the time went (measured first), wall-clock idle
    beside CPU idle, the chain behind the waits, and model quality."""
    out = imbalance_lines(report, d)
    if report.has_categories:
        out += measured_lines(report, d)
        if report.model_total is not None and not report.model_beside:
            out += model_where_lines(report, d)
    else:
        out += model_where_lines(report, d)
        out.append(f"  ({NO_CATEGORIES})")
    out += idle_lines(report, d)
    out += message_lines(report)
    out.append("*** Why the PEs waited (observed latency) ***")
    out.append(chain_sentence(report, d))
    if report.model_total is not None:
        out.append("*** Model quality ***")
        out.append(report.verdict())
    if report.what_if is not None:
        from .whatif import what_if_lines

        out += what_if_lines(report.what_if, d)
    return out


def imbalance_lines(report: Report, d: int) -> list[str]:
    im = report.imbalance
    if im is None:
        return []
    return ["*** Load imbalance ***", imbalance_sentence(report, d)]


def _pes(numbers, limit=8) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    more = f" and {len(numbers) - limit} more" if len(numbers) > limit else ""
    return ("PE " if len(numbers) == 1 else "PEs ") + shown + more


def imbalance_sentence(report: Report, d: int) -> str:
    """The load-imbalance finding in one paragraph (wall-clock seconds)."""
    im = report.imbalance
    out = (
        f"{_pes(im.busiest)} {'was' if len(im.busiest) == 1 else 'were'} busy the most: "
        f"{im.busiest_s:.{d}f} s, {percent_of(im.excess, '.0f')} above the mean of "
        f"{im.mean_s:.{d}f} s ("
        + (
            "busy: CPU time outside the idle loop)"
            if im.measure == "cpu"
            else "wall-clock busy time: elapsed minus idle)"
        )
    )
    if im.idlest:
        out += f"; {_pes(im.idlest)} under half the mean"
    return out + ". " + _gap_sentence(im, d) + _statistic_sentence(report)


def _gap_sentence(im, d: int) -> str:
    """What the PEs' busy time short of the busiest PE's (the gap, summed over PEs) is beside
    their wall-clock idle time.  Waiting for the busiest PE is idle time only as far as there
    is idle time: the rest of the gap the PEs were neither busy nor idle (off a CPU outside
    the idle loop, preempted or blocked, or not running: a shorter elapsed time), so it is
    stated apart and never as a share of the idle time over 100 %."""
    gap, idle = im.caused_s, im.idle_s
    if gap <= idle and idle > 0:
        return (
            f"Waiting for the busiest PE accounts for {gap:.{d}f} s, "
            f"{percent_of(im.idle_share)} of the PEs' {idle:.{d}f} s of wall-clock idle "
            "time (the PEs' busy time short of the busiest's, summed over PEs)."
        )
    elsewhere = (
        "off a CPU outside the idle loop or not running"
        if im.measure == "cpu"
        else "not running: their elapsed times differ"
    )
    if idle <= 0:
        return (
            f"The PEs were busy {gap:.{d}f} s less than the busiest PE (summed over PEs) "
            f"and had no wall-clock idle time: they were {elsewhere} for that time."
        )
    return (
        f"The PEs were busy {gap:.{d}f} s less than the busiest PE (summed over PEs), more "
        f"than their {idle:.{d}f} s of wall-clock idle time: waiting for it can account "
        f"for all of that idle time; for the other {gap - idle:.{d}f} s they were "
        f"{elsewhere}."
    )


def _statistic_sentence(report: Report) -> str:
    im = report.imbalance
    out = ""
    if im.statistic:
        values = im.stat_values
        top = max(range(len(values)), key=lambda i: (values[i], -i))
        zero = sum(v == 0 for v in values)
        out += (
            f" The statistic that differs most between PEs: {im.statistic} (PE "
            f"{report.pe_measured[top].pe}: {_stat(values[top])}, mean "
            f"{_stat(sum(values) / len(values))}, min {_stat(min(values))}"
            + (f"; {zero} PEs 0" if zero > 1 else "")
            + ")."
        )
    return out


def measured_lines(report: Report, d: int) -> list[str]:
    """Measured CPU time per access category, largest first, with the model beside."""
    title = "measured, CPU seconds summed over PEs" + (
        "; the model's estimate beside" if report.model_beside else ""
    )
    out = [f"*** Where the time went ({title}) ***"]
    rows = report.measured_rows
    width = max([len(r.label) for r in rows] + [len("category"), len("total")])
    head = f"  {'category':<{width}} {'measured':>{d + 6}} {'share':>8}"
    if report.model_beside:
        head += "   model (90 % band)"
    out.append(head)
    for r in rows:
        line = (
            f"  {r.label:<{width}} "
            + (f"{_num(r.cpu_s, d)} s" if r.cpu_s is not None else f"{'-':>{d + 6}}")
            + f" {percent_of(r.share) if r.cpu_s is not None else '':>8}"
        )
        if report.model_beside and r.model_s is not None:
            line += "   " + _model_cell(r, d)
        elif report.model_beside and r.kind == "category" and _alone(report, r):
            line += "   -"  # nothing in the model prices this category
        out.append(line.rstrip())
    total = f"  {'total':<{width}} {_num(report.measured_cpu_total, d)} s {percent_of(1.0):>8}"
    if report.model_beside:
        total += f"   {report.model_total:.{d}f} s (model)"
    out.append(total)
    if report.model_total is not None and not report.model_beside:
        out.append("  (the model prices elapsed seconds: its estimates follow, not beside)")
    return out


def _alone(report: Report, row) -> bool:
    """Whether a category row is the only one of its group (it would carry the estimate)."""
    return sum(r.group == row.group and r.kind == "category" for r in report.measured_rows) == 1


def _model_cell(r, d: int) -> str:
    return f"{r.model_s:.{d}f} s +-{_hw(r.model_halfwidth, d)} ({', '.join(r.model_categories)})"


def idle_lines(report: Report, d: int) -> list[str]:
    """Wall-clock idle beside the idle loops' CPU time, and what ended the waits."""
    out = ["*** Idle (wall-clock seconds summed over PEs) ***"]
    wall, elapsed = report.idle_total, report.elapsed_total
    line = (
        f"  idle {wall:.{d}f} s of {elapsed:.{d}f} s elapsed "
        f"({percent_of(wall / elapsed if elapsed > 0 else math.nan)})"
    )
    if report.cpu_idle is not None:
        line += f"; the idle loops took {report.cpu_idle:.{d}f} CPU s of it"
    else:
        line += "; the idle loops' CPU time was not measured"
    out.append(line)
    if report.idle_enablers:
        shown = report.idle_enablers[:4]
        rest = sum(v for _, v in report.idle_enablers[4:])
        out.append(
            "  waits ended by: "
            + ", ".join(f"{report.names.get(e, e)} {v:.{d}f} s" for e, v in shown)
            + (f", {len(report.idle_enablers) - 4} more {rest:.{d}f} s" if rest else "")
            + " (critical latency by enabling category)"
        )
    return out


def message_lines(report: Report) -> list[str]:
    """Remote operations per message, and why the aggregation buffers went."""
    m = report.messages
    if m is None:
        return []
    out = [
        "*** Messages (summed over PEs) ***",
        f"  {m.remote_ops} remote operations in {m.messages} messages "
        f"({m.per_message:.1f} per message)",
    ]
    if m.why:
        at_once = m.messages - m.aggregated
        out.append(
            f"  {m.aggregated} aggregation buffers went: "
            + ", ".join(f"{n} {AGG_WHY[k]}" for k, n in m.why)
            + (f"; {at_once} messages went at once" if at_once > 0 else "")
        )
    if m.carried:
        out.append(
            f"  {m.carried} of the {m.arrived} arrived records ran from their message "
            "buffers (carriers)"
        )
    return out


def model_where_lines(report: Report, d: int) -> list[str]:
    """Where the time went by the model's categories (or, without a model, measured busy and
    idle time)."""
    out = [f"*** Where the time went ({basis(report)}) ***"]
    rows, rest = lead_rows(report)
    width = max([len(r.name) for r in rows] + [len(rest.category) if rest else 0] + [8])
    for r in rows + ([rest] if rest else []):
        label = r.name if r.module else r.category
        out.append(f"  {label:<{width}} {_num(r.seconds, d)} s {percent_of(r.share):>8}")
    if report.model_total is not None:
        out.append(
            f"  {'total':<{width}} {_num(report.where_total, d)} s (model); measured "
            f"{report.measured_total:.{d}f} s"
        )
    else:
        out.append(f"  {'total':<{width}} {_num(report.where_total, d)} s")
    return out


def chain_sentence(report: Report, d: int) -> str:
    chain = report.lead_chain
    if chain is None and report.lead_access is not None:
        return wait_sentence(report, d)
    if chain is None:
        return "(no dependence chain: the run profile has no latency to explain)"
    last = report.names.get(chain.nodes[-1], chain.nodes[-1])
    share = chain.latency / report.lead_access_latency if report.lead_access_latency else 0.0
    return (
        f"{last} waited {report.lead_access_latency:.{d}f} s; {chain.latency:.{d}f} s "
        f"({percent_of(share)}) along {chain.name(report.names)}"
    )


def wait_sentence(report: Report, d: int) -> str:
    """The largest wait when no chain of other accesses lies behind it (the waits were ended
    by fibers without a category, by the same category, or by many small contributions)."""
    names = report.names
    access = names.get(report.lead_access, report.lead_access)
    parts = []
    for e in report.lead_enablers[:3]:
        who = (
            "unclassified fibers"
            if e.enabler == "unclassified"
            else f"{names.get(e.enabler, e.enabler)} itself"
            if e.enabler == report.lead_access
            else names.get(e.enabler, e.enabler)
        )
        parts.append(f"{who} {e.observed_s:.{d}f} s")
    return (
        f"{access} waited {report.lead_access_latency:.{d}f} s, enabled by "
        + ", ".join(parts)
        + "; no dependence chain of other accesses lies behind it"
    )


def cost_profile_lines(report: Report, d: int, bands: bool = True) -> list[str]:
    out = ["*** Cost Profile ***"]
    for oc in report.objects:
        if oc.modelled and oc.categories:
            out.append(
                f"Id {oc.id}: " + " ".join(f"{c.name}={_num(c.seconds, d)}" for c in oc.categories)
            )
    out.append(
        f"Time: Model={_num(report.model_total, d)}, "
        f"Total={_num(report.measured_total, d)}"
        + (" (CPU seconds)" if report.measure == "cpu" else "")
    )
    if report.unmodelled:
        out.append("Unmodelled: " + ", ".join(report.unmodelled))
    if bands:
        pct = int(round(report.confidence * 100))
        out.append(f"*** Bands ({pct} % half widths, seconds) ***")
        for oc in report.objects:
            if oc.modelled and oc.categories:
                out.append(
                    f"Id {oc.id}: "
                    + " ".join(f"{c.name} +-{_hw(c.halfwidth, d)}" for c in oc.categories)
                )
        out.append(
            f"Time: Model= {report.model_total:.{d}f} +-{_hw(report.band_halfwidth, d)} "
            f"(parameters +-{_hw(report.param_halfwidth, d)}, plus the fit's residual "
            f"scatter)"
        )
    return out


def _hw(value, d):
    if value is None or not math.isfinite(value):
        return " n/a"
    return f"{value:.{d}f}" if value >= 10**-d else f"{value:.2g}"


def raw_lines(report: Report) -> list[str]:
    out = ["*** Statistics (summed over PEs) ***"]
    for oc in report.objects:
        stats = " ".join(f"{k}={_stat(v)}" for k, v in oc.stats.items()) or "(no statistics)"
        out.append(f"Id {oc.id} ({oc.module}): {stats}")
    out.append(f"Time: Total= {report.measured_total:.6g} s, Idle= {report.idle_total:.6g} s")
    return out


def per_pe_lines(report: Report, d: int) -> list[str]:
    """Every PE's wall-clock times, CPU time by category, and statistics."""
    out = ["*** Per PE (wall-clock seconds) ***"]
    for p in report.pe_measured:
        out.append(
            f"PE{p.pe}: elapsed={_num(p.elapsed_s, d)} busy={_num(p.busy_s, d)} "
            f"idle={_num(p.idle_s, d)}"
        )
    out.append("*** Per PE (CPU seconds by category) ***")
    if not report.has_categories:
        out.append(f"({NO_CATEGORIES})")
    for p in report.pe_measured:
        if p.cpu_s is None:
            out.append(f"PE{p.pe}: (CPU time not measured)")
            continue
        line = f"PE{p.pe}: cpu={_num(p.cpu_s, d)} idle loop={_num(p.idle_cpu_s or 0.0, d)}"
        if p.categories:
            line += " | " + " ".join(
                f"{a}={_num(v, d).strip()}"
                for a, v in sorted(p.categories.items(), key=lambda kv: (-kv[1], kv[0]))
            )
        out.append(line)
    out.append("*** Per PE (statistics, summed over the PE's objects) ***")
    for p in report.pe_measured:
        modules: dict[str, list[str]] = {}
        for name, value in p.stats.items():
            module, _, stat = name.partition(":")
            modules.setdefault(module, []).append(f"{stat}={_stat(value)}")
        out.append(
            f"PE{p.pe}: " + " | ".join(f"{m}: {' '.join(v)}" for m, v in modules.items())
            if modules
            else f"PE{p.pe}: (no statistics)"
        )
    return out


def _stat(v) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def format_text(
    report: Report, *, per_pe: bool = False, digits: int | None = None, chains: bool = True
) -> str:
    d = digits if digits is not None else report.decimals
    head = f"% {' '.join(report.argv) or report.program}"
    out = [head, ""] + lead_lines(report, d)
    if report.model_total is not None:
        out += cost_profile_lines(report, d)
        if per_pe:
            # one measure per table: the model's (CPU or wall-clock seconds), idle included
            unit = "CPU seconds" if report.measure == "cpu" else "wall-clock seconds"
            out.append(f"*** Time per PE ({unit}) ***")
            for pc in report.pes:
                err = pc.error_percent
                idle = pc.measured_idle_s
                out.append(
                    f"PE{pc.pe}: Model={_num(pc.model_s, d)} +-{_hw(pc.halfwidth, d)}, "
                    f"Total={_num(pc.measured_s, d)}, Idle="
                    + (_num(idle, d) if idle is not None else "n/a")
                    + (f", error {percent(err, '+.1f', '%')}" if err is not None else "")
                )
    else:
        out += raw_lines(report)
    if per_pe:
        out += per_pe_lines(report, d)
    out += latency_section(
        report.latency, report.names, report.latency_per_pe if per_pe else None, d
    )
    if not report.latency:
        out.append("(the run profile has no latency rows)")
    if chains:
        out += chains_section(report.chains, report.names, d)
    for w in report.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out) + "\n"


def report_json(report: Report) -> dict:
    doc = {
        "schema": "mprof.report",
        "version": 1,
        "run": report.source,
        "program": report.program,
        "argv": report.argv,
        "npes": report.npes,
        "settings": report.settings,
        "params": report.params,
        "model": report.model_path,
        "measured_total_s": report.measured_total,
        "measure": report.measure,
        "idle_total_s": report.idle_total,
        "model_total_s": report.model_total,
        "model_band_halfwidth_s": _finite(report.band_halfwidth),
        "model_param_halfwidth_s": _finite(report.param_halfwidth),
        "confidence": report.confidence,
        "explained": report.explained,
        "verdict": report.verdict(),
        "where": [
            {
                "module": r.module,
                "category": r.category,
                "seconds": r.seconds,
                "halfwidth": _finite(r.halfwidth),
                "share": _finite(r.share),
            }
            for r in report.where
        ],
        "where_total_s": report.where_total,
        "lead_chain": (
            chain_json(report.lead_chain, report.names)
            | {"access_latency_s": report.lead_access_latency}
        )
        if report.lead_chain
        else None,
        "objects": [
            {
                "id": oc.id,
                "module": oc.module,
                "pes": oc.pes,
                "modelled": oc.modelled,
                "note": oc.note,
                "stats": oc.stats,
                "categories": {
                    c.name: {"seconds": c.seconds, "halfwidth": _finite(c.halfwidth)}
                    for c in oc.categories
                },
                "total_s": oc.total if oc.modelled else None,
            }
            for oc in report.objects
        ],
        "unmodelled": report.unmodelled,
        "pes": [
            {
                "pe": pc.pe,
                "measured_s": pc.measured_s,
                "idle_s": pc.idle_s,
                "measured_idle_s": pc.measured_idle_s,
                "model_s": pc.model_s,
                "halfwidth_s": _finite(pc.halfwidth),
                "categories": pc.categories,
            }
            for pc in report.pes
        ],
        "latency": access_latency_json(report.latency),
        "latency_per_pe": {
            str(pe): access_latency_json(v) for pe, v in report.latency_per_pe.items()
        },
        "graph": {
            "nodes": report.graph.nodes,
            "edges": [
                {
                    "enabler": e.enabler,
                    "access": e.access,
                    "count": e.count,
                    "observed_s": e.observed_s,
                    "critical_s": e.critical_s,
                }
                for e in report.graph.edges
            ],
        },
        "chains": {m: [chain_json(c, report.names) for c in cs] for m, cs in report.chains.items()},
        "warnings": report.warnings,
        "messages": None
        if report.messages is None
        else {
            "remote_ops": report.messages.remote_ops,
            "messages": report.messages.messages,
            "per_message": _finite(report.messages.per_message),
            "why": dict(report.messages.why),
            "arrived": report.messages.arrived,
            "carried": report.messages.carried,
        },
    }
    doc.update(measured_json(report))
    if report.what_if is not None:
        from .whatif import what_if_json

        doc["what_if"] = what_if_json(report.what_if)
    else:
        doc["what_if"] = None
    return doc


def measured_json(report: Report) -> dict:
    """The measured figures: category times with the model beside, idle, per PE, imbalance."""
    im = report.imbalance
    return {
        "categories_measured": report.has_categories,
        "measured_where": [
            {
                "label": r.label,
                "kind": r.kind,
                "group": r.group,
                "cpu_s": r.cpu_s,
                "share": _finite(r.share),
                "samples": r.samples,
                "model_s": r.model_s,
                "model_halfwidth_s": _finite(r.model_halfwidth),
                "model_categories": r.model_categories,
            }
            for r in report.measured_rows
        ],
        "measured_where_total_s": report.measured_cpu_total if report.has_categories else None,
        "measured_where_unit": "CPU seconds summed over PEs",
        "unexplained_s": report.unexplained.cpu_s if report.unexplained else None,
        "idle": {
            "wall_s": report.idle_total,
            "elapsed_s": report.elapsed_total,
            "cpu_s": report.cpu_idle,
            "cpu_total_s": report.cpu_total,
            "by_enabler": [{"enabler": e, "critical_s": v} for e, v in report.idle_enablers],
        },
        "lead_wait": None
        if report.lead_access is None
        else {
            "access": report.lead_access,
            "observed_s": report.lead_access_latency,
            "enablers": [
                {"enabler": e.enabler, "observed_s": e.observed_s} for e in report.lead_enablers
            ],
        },
        "imbalance": None
        if im is None
        else {
            "busiest_pes": im.busiest,
            "busiest_busy_s": im.busiest_s,
            "mean_busy_s": im.mean_s,
            "excess": im.excess,
            "least_busy_pes": im.idlest,
            "caused_idle_s": im.caused_s,
            "idle_s": im.idle_s,
            "idle_share": _finite(im.idle_share),
            "statistic": im.statistic,
            "statistic_per_pe": im.stat_values,
            "sentence": imbalance_sentence(report, report.decimals),
        },
        "pes_measured": [
            {
                "pe": p.pe,
                "elapsed_s": p.elapsed_s,
                "busy_s": p.busy_s,
                "idle_s": p.idle_s,
                "cpu_s": p.cpu_s,
                "idle_cpu_s": p.idle_cpu_s,
                "categories": p.categories,
                "stats": p.stats,
            }
            for p in report.pe_measured
        ],
    }


def _finite(value):
    return value if value is not None and math.isfinite(value) else None
