"""mprof.latency: observed and critical-path latency, the dependence graph of synchronization
events, and problematic dependence chains (Wen 1995, §4.5).

    from mprof.latency import rows_from_profile, summarize, build_graph, find_chains
    rows = rows_from_profile(run)               # a RunProfile (mprof.profile)
    graph = build_graph(rows, run.accesses)
    find_chains(graph, "observed")       # [Chain(nodes=("graph:ENQ", "graph:DEQ", ...)), ...]
"""

from .analysis import (
    METRICS,
    UNCLASSIFIED,
    AccessLatency,
    Chain,
    DependenceGraph,
    Edge,
    EnablerLatency,
    LatencyRow,
    access_latency_json,
    build_graph,
    chain_json,
    display_names,
    find_chains,
    pes_of,
    rows_from_profile,
    summarize,
)

__all__ = [
    "METRICS",
    "UNCLASSIFIED",
    "AccessLatency",
    "Chain",
    "DependenceGraph",
    "Edge",
    "EnablerLatency",
    "LatencyRow",
    "access_latency_json",
    "build_graph",
    "chain_json",
    "display_names",
    "find_chains",
    "pes_of",
    "rows_from_profile",
    "summarize",
]
