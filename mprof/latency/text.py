"""Latency sections in the shape of the paper's Fig 4.15:

    *** Observed Latency ***
    consume = 134.063 s -- DEQ: 92.700 s produce: 41.363 s
    *** Critical Latency ***
    PE31: DEQ = 62.669 s -- ENQ: 62.669 s

(the paper prints bare numbers; every value here carries its unit, seconds of idle time)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .analysis import AccessLatency, Chain


def fmt(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def sec(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f} s"


def latency_lines(
    metric: str,
    items: Sequence[AccessLatency],
    names: Mapping[str, str],
    decimals: int = 3,
    prefix: str = "",
) -> list[str]:
    """One line per access category with a non-zero `metric` latency."""
    lines = []
    for a in items:
        if a.value(metric) <= 0:
            continue
        parts = " ".join(
            f"{names.get(e.enabler, e.enabler)}: {sec(e.value(metric), decimals)}"
            for e in a.breakdown(metric)
        )
        lines.append(
            f"{prefix}{names.get(a.access, a.access)} = "
            f"{sec(a.value(metric), decimals)} -- {parts}".rstrip(" -")
        )
    return lines


def latency_section(
    total: Sequence[AccessLatency],
    names: Mapping[str, str],
    per_pe: Mapping[int, Sequence[AccessLatency]] | None = None,
    decimals: int = 3,
) -> list[str]:
    out = []
    for metric, title in (("observed", "Observed"), ("critical", "Critical")):
        out.append(f"*** {title} Latency ***")
        if per_pe is not None:
            for pe, items in per_pe.items():
                out += latency_lines(metric, items, names, decimals, prefix=f"PE{pe}: ")
        else:
            out += latency_lines(metric, total, names, decimals)
    return out


STOP_TEXT = {
    "cycle": "cycle back to {closes}",
    "unclassified": "enabled by unclassified fibers",
    "small": "earlier contributions are small",
    "source": "nothing enables it",
    "length": "chain length limit",
}


def chain_lines(chains: Sequence[Chain], names: Mapping[str, str], decimals: int = 3) -> list[str]:
    lines = []
    for i, c in enumerate(chains, 1):
        why = STOP_TEXT.get(c.stop, c.stop).format(closes=names.get(c.closes_at or "", c.closes_at))
        steps = " ".join(fmt(w, decimals) for w in c.edge_latencies)
        lines.append(
            f"{i}. {c.name(names)} = {sec(c.latency, decimals)}  (edges: {steps} s; {why})"
        )
    return lines


def chains_section(
    chains: Mapping[str, Sequence[Chain]], names: Mapping[str, str], decimals: int = 3
) -> list[str]:
    out = []
    for metric, title in (("observed", "observed"), ("critical", "critical")):
        items = chains.get(metric, [])
        out.append(f"*** Dependence Chains ({title} latency) ***")
        out += chain_lines(items, names, decimals) or ["(none)"]
    return out
