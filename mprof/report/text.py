"""Plain-text and JSON renderings of a Report; the text keeps the paper's shape (Figs 4.12, 4.15):

    *** Cost Profile ***
    Id 0: THREAD= 45.912 IDLE=147.729 COMM_ALPHA= 10.317 COMM_BETA= 53.037
    Time: Model= 427.325, Total= 406.569
    *** Observed Latency ***
    consume = 134.063 -- DEQ: 92.700 produce: 41.363
"""

from __future__ import annotations

import math

from ..latency import access_latency_json, chain_json
from ..latency.text import chains_section, latency_section
from .build import Report


def decimals_for(report: Report) -> int:
    """3 decimals as in the paper for totals of a second or more; more for short runs so that
    every printed value keeps about four significant digits."""
    largest = max([report.model_total or 0.0, report.measured_total]
                  + [a.observed_s for a in report.latency])
    if largest <= 0 or largest >= 1:
        return 3
    return min(9, 3 + math.ceil(-math.log10(largest)))


def _num(value: float, d: int) -> str:
    return f"{value:{d + 4}.{d}f}"


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
        out.append(f"*** Bands ({pct} % half widths) ***")
        for oc in report.objects:
            if oc.modelled and oc.categories:
                out.append(f"Id {oc.id}: " + " ".join(f"{c.name} +-{_hw(c.halfwidth, d)}"
                                                       for c in oc.categories))
        out.append(f"Time: Model= {report.model_total:.{d}f} +-{_hw(report.band_halfwidth, d)} "
                   f"(parameters +-{_hw(report.param_halfwidth, d)}, plus the fit's residual "
                   f"scatter)")
        out.append(report.verdict())
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
    out.append(f"Time: Total= {report.measured_total:.6g}, Idle= {report.idle_total:.6g}")
    return out


def _stat(v) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def format_text(report: Report, *, per_pe: bool = False, digits: int | None = None,
                chains: bool = True) -> str:
    d = digits if digits is not None else decimals_for(report)
    head = f"% {' '.join(report.argv) or report.program}"
    out = [head, ""]
    if report.model_total is not None:
        out += cost_profile_lines(report, d)
        if per_pe:
            out.append("*** Time per PE ***")
            for pc in report.pes:
                err = pc.error_percent
                out.append(f"PE{pc.pe}: Model={_num(pc.model_s, d)} +-{_hw(pc.halfwidth, d)}, "
                           f"Total={_num(pc.measured_s, d)}, Idle={_num(pc.idle_s, d)}"
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
        "objects": [
            {"id": oc.id, "module": oc.module, "pes": oc.pes, "modelled": oc.modelled,
             "note": oc.note, "stats": oc.stats,
             "categories": {c.name: {"seconds": c.seconds, "halfwidth": _finite(c.halfwidth)}
                            for c in oc.categories},
             "total_s": oc.total if oc.modelled else None}
            for oc in report.objects],
        "unmodelled": report.unmodelled,
        "pes": [{"pe": pc.pe, "measured_s": pc.measured_s, "idle_s": pc.idle_s,
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
