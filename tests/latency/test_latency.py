"""mprof.latency: sums over PEs, the dependence graph and the chain walk (Wen 1995, §4.5.4)."""

import json

import pytest

from mprof.cli import main
from mprof.latency import (
    LatencyRow,
    build_graph,
    display_names,
    find_chains,
    pes_of,
    rows_from_profile,
    summarize,
)
from mprof.latency.text import latency_section

# Fig 4.15 (PIPE, 32 PEs, AGG 1000): access, enabler, observed, critical.
FIG_4_15 = [
    ("graph:ENQ", "graph:DEQ", 47.337, 47.337),
    ("graph:DEQ", "graph:ENQ", 92.700, 92.700),
    ("pipe:produce", "graph:ENQ", 47.337, 0.0),
    ("pipe:consume", "graph:DEQ", 92.700, 0.0),
    ("pipe:consume", "pipe:produce", 41.363, 0.0),
]
DECLARED = ["unclassified", "graph:ENQ", "graph:DEQ", "pipe:produce", "pipe:consume"]


def fig_rows(pes=(None,)):
    share = 1.0 / len(pes)
    return [LatencyRow(a, e, 1, o * share, c * share, pe) for pe in pes for a, e, o, c in FIG_4_15]


def names(chains, graph):
    short = display_names(graph.nodes)
    return [c.name(short) for c in chains]


def test_fig_4_15_observed_chains():
    graph = build_graph(fig_rows(), DECLARED)
    chains = find_chains(graph, "observed")
    assert names(chains, graph) == ["ENQ -> DEQ -> consume", "DEQ -> ENQ -> produce -> consume"]
    assert [c.latency for c in chains] == pytest.approx([92.700, 41.363])
    assert chains[1].edge_latencies == pytest.approx((47.337, 47.337, 41.363))
    assert [c.stop for c in chains] == ["cycle", "cycle"]
    assert [c.closes_at for c in chains] == ["graph:DEQ", "graph:ENQ"]


def test_fig_4_15_critical_chain_is_the_flow_control_cycle_once():
    graph = build_graph(fig_rows(), DECLARED)
    chains = find_chains(graph, "critical")
    assert names(chains, graph) == ["ENQ -> DEQ"]  # DEQ -> ENQ is the same cycle
    assert chains[0].latency == pytest.approx(92.7)


def test_chains_are_found_from_rows_spread_over_pes():
    graph = build_graph(fig_rows(pes=(1, 2, 3, 4)), DECLARED)
    assert names(find_chains(graph), graph)[0] == "ENQ -> DEQ -> consume"
    assert graph.latency("pipe:consume") == pytest.approx(134.063)


def test_summarize_sums_over_pes_and_breaks_down_by_enabler():
    rows = fig_rows(pes=(0, 1))
    total = summarize(rows, DECLARED)
    assert [a.access for a in total] == ["graph:ENQ", "graph:DEQ", "pipe:produce", "pipe:consume"]
    consume = total[-1]
    assert consume.observed_s == pytest.approx(134.063)
    assert consume.count == 4
    assert [(e.enabler, round(e.observed_s, 3)) for e in consume.breakdown("observed")] == [
        ("graph:DEQ", 92.7),
        ("pipe:produce", 41.363),
    ]
    assert consume.breakdown("critical") == []
    one = summarize(rows, DECLARED, pe=1)
    assert one[-1].observed_s == pytest.approx(134.063 / 2)
    assert pes_of(rows) == [0, 1]


def test_text_has_the_paper_shape():
    rows = fig_rows()
    graph = build_graph(rows, DECLARED)
    text = latency_section(summarize(rows, DECLARED), display_names(graph.nodes))
    assert text == [
        "*** Observed Latency ***",
        "ENQ = 47.337 s -- DEQ: 47.337 s",
        "DEQ = 92.700 s -- ENQ: 92.700 s",
        "produce = 47.337 s -- ENQ: 47.337 s",
        "consume = 134.063 s -- DEQ: 92.700 s produce: 41.363 s",
        "*** Critical Latency ***",
        "ENQ = 47.337 s -- DEQ: 47.337 s",
        "DEQ = 92.700 s -- ENQ: 92.700 s",
    ]


def test_walk_stops_at_unclassified_and_small_contributions():
    rows = [
        LatencyRow("a:X", "a:Y", 1, 10.0, 0.0),
        LatencyRow("a:Y", "unclassified", 1, 9.0, 0),
        LatencyRow("a:Z", "a:W", 1, 10.0, 0.0),
        LatencyRow("a:W", "a:V", 1, 0.1, 0.0),
    ]
    graph = build_graph(rows)
    chains = {c.nodes: c for c in find_chains(graph, roots=5)}
    assert chains[("a:Y", "a:X")].stop == "unclassified"
    assert chains[("a:W", "a:Z")].stop == "small"  # 0.1 < 5 % of 10
    # Unclassified is never a root, and no chain starts with it.
    assert all(c.nodes[0] != "unclassified" for c in chains.values())


def test_min_fraction_and_roots_limit_the_chains():
    graph = build_graph(fig_rows(), DECLARED)
    assert len(find_chains(graph, roots=1, min_fraction=0.5)) == 1  # produce: 41/134 < 0.5
    assert find_chains(graph, roots=0) == []
    with pytest.raises(ValueError):
        find_chains(graph, "bogus")


def test_display_names_keep_the_module_when_ambiguous():
    assert display_names(["a:ENQ", "b:ENQ", "a:DEQ", "unclassified"]) == {
        "a:ENQ": "a:ENQ",
        "b:ENQ": "b:ENQ",
        "a:DEQ": "DEQ",
        "unclassified": "unclassified",
    }


def test_empty_graph():
    graph = build_graph([])
    assert graph.nodes == [] and find_chains(graph) == []


def profile_doc():
    pes = []
    for pe in range(3):  # Fig 4.15's run idled for minutes, and critical latency is idle time
        pes.append(
            {
                "pe": pe,
                "elapsed_s": 100.0,
                "idle_s": 50.0,
                "objects": [],
                "latency": [
                    {
                        "access": a,
                        "enabler": e,
                        "count": 2,
                        "observed_s": o / 3,
                        "critical_s": c / 3,
                    }
                    for a, e, o, c in FIG_4_15
                ],
            }
        )
    return {
        "schema": "mprof.run-profile",
        "schema_version": 1,
        "program": "pipe",
        "argv": ["pipe"],
        "backend": "shm",
        "npes": 3,
        "started_at": "2026-01-01T00:00:00Z",
        "elapsed_s": 100.0,
        "machine": {"hostname": "h", "cpu": "c", "cores": 2, "fingerprint": "0" * 64},
        "settings": {},
        "params": {},
        "accesses": DECLARED,
        "pes": pes,
    }


def test_rows_from_profile():
    rows = rows_from_profile(profile_doc())
    assert len(rows) == 15 and {r.pe for r in rows} == {0, 1, 2}


def test_cli_text_and_json(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(profile_doc()))
    assert main(["latency", str(path)]) == 0
    out = capsys.readouterr().out
    assert "consume = 134.063 s -- DEQ: 92.700 s produce: 41.363 s" in out
    assert "1. ENQ -> DEQ -> consume = 92.700 s" in out
    assert "2. DEQ -> ENQ -> produce -> consume = 41.363 s" in out
    assert main(["latency", str(path), "--json", "--per-pe"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["chain"] for c in doc["chains"]["observed"]] == [
        "ENQ -> DEQ -> consume",
        "DEQ -> ENQ -> produce -> consume",
    ]
    assert set(doc["latency_per_pe"]) == {"0", "1", "2"}
    assert main(["latency", str(path), "--per-pe"]) == 0
    assert "PE2: consume = 44.688 s" in capsys.readouterr().out


def test_cli_rejects_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["latency", str(bad)]) == 2
    assert "mprof:" in capsys.readouterr().err
    good = tmp_path / "run.json"
    good.write_text(json.dumps(profile_doc()))
    with pytest.raises(SystemExit) as exc:  # a checked option: argparse's usage error
        main(["latency", str(good), "--min-fraction", "2"])
    assert exc.value.code == 2
