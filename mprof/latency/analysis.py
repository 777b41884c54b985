"""Observed and critical-path latency (Wen 1995, §4.5): sums, the dependence graph of
synchronization events, and the walk backwards along the chains that cause idle time.

Everything here is a pure function over plain dataclasses so that it can be tested directly.
A latency row of a run profile (docs/run-profile.md) is one synchronization event
`enabler -> access` with the idle time it accounted for; summed over PEs these rows are the
edges of the dependence graph, whose nodes are access categories.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..profile import LatencyRow, RunProfile

UNCLASSIFIED = "unclassified"
METRICS = ("observed", "critical")


@dataclass
class EnablerLatency:
    enabler: str
    count: int = 0
    observed_s: float = 0.0
    critical_s: float = 0.0

    def value(self, metric: str) -> float:
        return self.observed_s if metric == "observed" else self.critical_s


@dataclass
class AccessLatency:
    """An access category's total latency and its breakdown by enabling category."""

    access: str
    count: int = 0
    observed_s: float = 0.0
    critical_s: float = 0.0
    enablers: list[EnablerLatency] = field(default_factory=list)

    def value(self, metric: str) -> float:
        return self.observed_s if metric == "observed" else self.critical_s

    def breakdown(self, metric: str) -> list[EnablerLatency]:
        """Enablers with a non-zero contribution, largest first."""
        rows = [e for e in self.enablers if e.value(metric) > 0]
        return sorted(rows, key=lambda e: (-e.value(metric), e.enabler))


@dataclass(frozen=True)
class Edge:
    """Synchronization event `enabler -> access` summed over PEs."""

    enabler: str
    access: str
    count: int
    observed_s: float
    critical_s: float

    def value(self, metric: str) -> float:
        return self.observed_s if metric == "observed" else self.critical_s


@dataclass
class DependenceGraph:
    nodes: list[str]
    edges: list[Edge]

    def into(self, node: str, metric: str = "observed") -> list[Edge]:
        """Edges ending at `node` with non-zero latency, largest first."""
        out = [e for e in self.edges if e.access == node and e.value(metric) > 0]
        return sorted(out, key=lambda e: (-e.value(metric), e.enabler))

    def latency(self, node: str, metric: str = "observed") -> float:
        return sum(e.value(metric) for e in self.edges if e.access == node)


@dataclass(frozen=True)
class Chain:
    """A chain of synchronization events, source first, ending at the access that waits.

    `latency` is the latency the chain contributes to its last access (the weight of its last
    edge); `edge_latencies[i]` is the weight of `nodes[i] -> nodes[i + 1]`.  `stop` says why
    the backward walk ended: `cycle` (the next enabler is already in the chain; `closes_at`
    names it), `unclassified` (enabled by a fiber without access category), `small` (the next
    contribution is below the cut-off) or `source` (nothing enables the first node)."""

    nodes: tuple[str, ...]
    metric: str
    latency: float
    edge_latencies: tuple[float, ...]
    stop: str
    closes_at: str | None = None

    def name(self, names: Mapping[str, str] | None = None) -> str:
        names = names or {}
        return " -> ".join(names.get(n, n) for n in self.nodes)


# -- reading and summing ------------------------------------------------------------------


def rows_from_profile(run: RunProfile | Mapping) -> list[LatencyRow]:
    """The latency rows of a run (RunProfile.latency), tagged with their PE; a validated run
    profile document is read into a RunProfile first."""
    if not isinstance(run, RunProfile):
        run = RunProfile.from_document(run)
    return run.latency


def access_order(rows: Iterable[LatencyRow], declared: Sequence[str] = ()) -> list[str]:
    """Access categories in the profile's declared order, then any others by name."""
    seen = {r.access for r in rows} | {r.enabler for r in rows}
    order = [a for a in declared if a in seen]
    return order + sorted(seen - set(order))


def summarize(
    rows: Iterable[LatencyRow], declared: Sequence[str] = (), pe: int | None = None
) -> list[AccessLatency]:
    """Per access category: latency summed over PEs (or of PE `pe` only), broken down by
    enabler.  Categories appear in `declared` order; only those that waited are listed."""
    rows = [r for r in rows if pe is None or r.pe == pe]
    by_access: dict[str, AccessLatency] = {}
    for r in rows:
        acc = by_access.setdefault(r.access, AccessLatency(r.access))
        acc.count += r.count
        acc.observed_s += r.observed_s
        acc.critical_s += r.critical_s
        for e in acc.enablers:
            if e.enabler == r.enabler:
                break
        else:
            e = EnablerLatency(r.enabler)
            acc.enablers.append(e)
        e.count += r.count
        e.observed_s += r.observed_s
        e.critical_s += r.critical_s
    order = access_order(rows, declared)
    return [by_access[a] for a in order if a in by_access]


def pes_of(rows: Iterable[LatencyRow]) -> list[int]:
    return sorted({r.pe for r in rows if r.pe is not None})


def build_graph(rows: Iterable[LatencyRow], declared: Sequence[str] = ()) -> DependenceGraph:
    """The dependence graph of synchronization events, summed over PEs."""
    rows = list(rows)
    sums: dict[tuple[str, str], list] = {}
    for r in rows:
        s = sums.setdefault((r.enabler, r.access), [0, 0.0, 0.0])
        s[0] += r.count
        s[1] += r.observed_s
        s[2] += r.critical_s
    edges = [Edge(en, acc, c, o, cr) for (en, acc), (c, o, cr) in sums.items()]
    order = access_order(rows, declared)
    rank = {n: i for i, n in enumerate(order)}
    edges.sort(key=lambda e: (rank[e.access], rank[e.enabler]))
    return DependenceGraph(order, edges)


def display_names(nodes: Iterable[str]) -> dict[str, str]:
    """`module:NAME` shortened to `NAME` where no other module uses the same NAME (the paper
    prints `consume`, `ENQ`)."""
    nodes = list(nodes)
    short = {n: n.split(":", 1)[1] if ":" in n else n for n in nodes}
    counts: dict[str, int] = {}
    for s in short.values():
        counts[s] = counts.get(s, 0) + 1
    return {n: (s if counts[s] == 1 else n) for n, s in short.items()}


# -- chains -------------------------------------------------------------------------------


def find_chains(
    graph: DependenceGraph,
    metric: str = "observed",
    *,
    roots: int = 3,
    min_fraction: float = 0.05,
    max_length: int = 32,
) -> list[Chain]:
    """Problematic chains of synchronization events (Wen 1995, §4.5.4).

    Starting from the `roots` access categories with the largest latency, every enabler that
    contributes at least `min_fraction` of the root's latency starts a chain; from there the
    walk goes backwards, each step following the enabler with the largest latency into the
    current node, and stops at a cycle, an unclassified enabler, a contribution smaller than
    `min_fraction` of the chain's latency, or a node nothing enables.  Chains that are part of
    a chain already found, and rotations of an already found cycle, are not repeated.  The
    result is ordered by latency, largest first."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}")
    candidates = [n for n in graph.nodes if n != UNCLASSIFIED and graph.latency(n, metric) > 0]
    candidates.sort(key=lambda n: (-graph.latency(n, metric), graph.nodes.index(n)))
    found: list[Chain] = []
    for root in candidates[: max(roots, 0)]:
        total = graph.latency(root, metric)
        for first in graph.into(root, metric):
            weight = first.value(metric)
            if first.enabler == UNCLASSIFIED or first.enabler == root:
                continue
            if weight < min_fraction * total:
                break  # edges are sorted: the rest are smaller still
            chain = _walk(graph, metric, root, first, min_fraction, max_length)
            if not _redundant(chain, found):
                found.append(chain)
    found.sort(key=lambda c: -c.latency)
    return found


def _walk(graph, metric, root, first, min_fraction, max_length) -> Chain:
    nodes = [first.enabler, root]
    weights = [first.value(metric)]
    stop, closes = "source", None
    while len(nodes) < max_length:
        incoming = graph.into(nodes[0], metric)
        if not incoming:
            stop = "source"
            break
        best = incoming[0]
        if best.enabler == UNCLASSIFIED:
            stop = UNCLASSIFIED
            break
        if best.enabler in nodes:
            stop, closes = "cycle", best.enabler
            break
        if best.value(metric) < min_fraction * weights[-1]:
            stop = "small"
            break
        nodes.insert(0, best.enabler)
        weights.insert(0, best.value(metric))
    else:
        stop = "length"
    return Chain(tuple(nodes), metric, weights[-1], tuple(weights), stop, closes)


def _contains(outer: Sequence[str], inner: Sequence[str]) -> bool:
    n = len(inner)
    return any(tuple(outer[i : i + n]) == tuple(inner) for i in range(len(outer) - n + 1))


def _redundant(chain: Chain, found: list[Chain]) -> bool:
    for other in found:
        if _contains(other.nodes, chain.nodes):
            return True
        # A closed cycle seen from another of its nodes (ENQ -> DEQ and DEQ -> ENQ).
        if (
            chain.stop == other.stop == "cycle"
            and set(chain.nodes) == set(other.nodes)
            and chain.closes_at == chain.nodes[-1]
            and other.closes_at == other.nodes[-1]
        ):
            return True
    return False


# -- documents ----------------------------------------------------------------------------


def access_latency_json(items: Iterable[AccessLatency]) -> list[dict]:
    return [
        {
            "access": a.access,
            "count": a.count,
            "observed_s": a.observed_s,
            "critical_s": a.critical_s,
            "enablers": [
                {
                    "enabler": e.enabler,
                    "count": e.count,
                    "observed_s": e.observed_s,
                    "critical_s": e.critical_s,
                }
                for e in a.enablers
            ],
        }
        for a in items
    ]


def chain_json(chain: Chain, names: Mapping[str, str] | None = None) -> dict:
    return {
        "chain": chain.name(names),
        "nodes": list(chain.nodes),
        "metric": chain.metric,
        "latency_s": chain.latency,
        "edge_latencies_s": list(chain.edge_latencies),
        "stop": chain.stop,
        "closes_at": chain.closes_at,
    }
