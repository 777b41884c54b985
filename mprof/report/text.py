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
from .build import CostRow, Report, decimals_for

__all__ = ["decimals_for", "format_text", "report_json", "share_text"]

LEAD_ROWS = 5  # categories listed by name in the lead; the rest are summed as "N more"


def _num(value: float, d: int) -> str:
    return f"{value:{d + 4}.{d}f}"


def share_text(share: float) -> str:
    return "n/a" if not math.isfinite(share) else f"{100 * share:.1f} %"


def lead_rows(report: Report, limit: int = LEAD_ROWS) -> tuple[list[CostRow], CostRow | None]:
    """The first `limit` categories of `where`, and the rest summed into one row (or None)."""
    rows, rest = report.where[:limit], report.where[limit:]
    if not rest:
        return rows, None
    seconds = sum(r.seconds for r in rest)
    share = seconds / report.where_total if report.where_total > 0 else math.nan
    return rows, CostRow("", f"{len(rest)} more", seconds, math.nan, share)


def basis(report: Report) -> str:
    return ("model" if report.model_total is not None else "measured") + ", " \
        + report.seconds_unit


def lead_lines(report: Report, d: int) -> list[str]:
    """Where the time went, the chain behind the waits, and model quality."""
    out = [f"*** Where the time went ({basis(report)}) ***"]
    rows, rest = lead_rows(report)
    width = max([len(r.name) for r in rows] + [len(rest.category) if rest else 0] + [8])
    for r in rows + ([rest] if rest else []):
        label = r.name if r.module else r.category
        out.append(f"  {label:<{width}} {_num(r.seconds, d)} s {share_text(r.share):>8}")
    if report.model_total is not None:
        out.append(f"  {'total':<{width}} {_num(report.where_total, d)} s (model); measured "
                   f"{report.measured_total:.{d}f} s")
    else:
        out.append(f"  {'total':<{width}} {_num(report.where_total, d)} s")
    out.append("*** Why the PEs waited (observed latency) ***")
    out.append(chain_sentence(report, d))
    if report.model_total is not None:
        out.append("*** Model quality ***")
        out.append(report.verdict())
    return out


def chain_sentence(report: Report, d: int) -> str:
    chain = report.lead_chain
    if chain is None:
        return "(no dependence chain: the run profile has no latency to explain)"
    last = report.names.get(chain.nodes[-1], chain.nodes[-1])
    share = chain.latency / report.lead_access_latency if report.lead_access_latency else 0.0
    return (f"{last} waited {report.lead_access_latency:.{d}f} s; {chain.latency:.{d}f} s "
            f"({100 * share:.1f} %) along {chain.name(report.names)}")


def cost_profile_lines(report: Report, d: int, bands: bool = True) -> list[str]:
    out = ["*** Cost Profile ***"]
    for oc in report.objects:
        if oc.modelled and oc.categories:
            out.append(f"Id {oc.id}: " + " ".join(f"{c.name}={_num(c.seconds, d)}"
                                                   for c in oc.categories))
    out.append(f"Time: Model={_num(report.model_total, d)}, "
               f"Total={_num(report.measured_total, d)}"
               + (" (CPU seconds)" if report.measure == "cpu" else ""))
    if report.unmodelled:
        out.append("Unmodelled: " + ", ".join(report.unmodelled))
    if bands:
        pct = int(round(report.confidence * 100))
        out.append(f"*** Bands ({pct} % half widths, seconds) ***")
        for oc in report.objects:
            if oc.modelled and oc.categories:
                out.append(f"Id {oc.id}: " + " ".join(f"{c.name} +-{_hw(c.halfwidth, d)}"
                                                       for c in oc.categories))
        out.append(f"Time: Model= {report.model_total:.{d}f} +-{_hw(report.band_halfwidth, d)} "
                   f"(parameters +-{_hw(report.param_halfwidth, d)}, plus the fit's residual "
                   f"scatter)")
    return out


def _hw(value, d):
    if value is None or not math.isfinite(value):
        return " n/a"
    return f"{value:.{d}f}" if value >= 10 ** -d else f"{value:.2g}"


def raw_lines(report: Report) -> list[str]:
    out = ["*** Statistics (summed over PEs) ***"]
    for oc in report.objects:
        stats = " ".join(f"{k}={_stat(v)}" for k, v in oc.stats.items()) or "(no statistics)"
        out.append(f"Id {oc.id} ({oc.module}): {stats}")
    out.append(f"Time: Total= {report.measured_total:.6g} s, Idle= {report.idle_total:.6g} s")
    return out


def _stat(v) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def format_text(report: Report, *, per_pe: bool = False, digits: int | None = None,
                chains: bool = True) -> str:
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
                out.append(f"PE{pc.pe}: Model={_num(pc.model_s, d)} +-{_hw(pc.halfwidth, d)}, "
                           f"Total={_num(pc.measured_s, d)}, Idle="
                           + (_num(idle, d) if idle is not None else "n/a")
                           + (f", error {err:+.1f}%" if err is not None else ""))
    else:
        out += raw_lines(report)
    out += latency_section(report.latency, report.names,
                           report.latency_per_pe if per_pe else None, d)
    if not report.latency:
        out.append("(the run profile has no latency rows)")
    if chains:
        out += chains_section(report.chains, report.names, d)
    for w in report.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out) + "\n"


def report_json(report: Report) -> dict:
    doc = {
        "schema": "mprof.report", "version": 1,
        "run": report.source, "program": report.program, "argv": report.argv,
        "npes": report.npes, "settings": report.settings, "params": report.params,
        "model": report.model_path,
        "measured_total_s": report.measured_total, "measure": report.measure,
        "idle_total_s": report.idle_total,
        "model_total_s": report.model_total,
        "model_band_halfwidth_s": _finite(report.band_halfwidth),
        "model_param_halfwidth_s": _finite(report.param_halfwidth),
        "confidence": report.confidence,
        "explained": report.explained, "verdict": report.verdict(),
        "where": [{"module": r.module, "category": r.category, "seconds": r.seconds,
                   "halfwidth": _finite(r.halfwidth), "share": _finite(r.share)}
                  for r in report.where],
        "where_total_s": report.where_total,
        "lead_chain": (chain_json(report.lead_chain, report.names) | {
            "access_latency_s": report.lead_access_latency}) if report.lead_chain else None,
        "objects": [
            {"id": oc.id, "module": oc.module, "pes": oc.pes, "modelled": oc.modelled,
             "note": oc.note, "stats": oc.stats,
             "categories": {c.name: {"seconds": c.seconds, "halfwidth": _finite(c.halfwidth)}
                            for c in oc.categories},
             "total_s": oc.total if oc.modelled else None}
            for oc in report.objects],
        "unmodelled": report.unmodelled,
        "pes": [{"pe": pc.pe, "measured_s": pc.measured_s, "idle_s": pc.idle_s,
                 "measured_idle_s": pc.measured_idle_s,
                 "model_s": pc.model_s, "halfwidth_s": _finite(pc.halfwidth),
                 "categories": pc.categories} for pc in report.pes],
        "latency": access_latency_json(report.latency),
        "latency_per_pe": {str(pe): access_latency_json(v)
                           for pe, v in report.latency_per_pe.items()},
        "graph": {"nodes": report.graph.nodes,
                  "edges": [{"enabler": e.enabler, "access": e.access, "count": e.count,
                             "observed_s": e.observed_s, "critical_s": e.critical_s}
                            for e in report.graph.edges]},
        "chains": {m: [chain_json(c, report.names) for c in cs]
                   for m, cs in report.chains.items()},
        "warnings": report.warnings,
    }
    return doc


def _finite(value):
    return value if value is not None and math.isfinite(value) else None
