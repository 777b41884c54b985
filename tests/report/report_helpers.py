"""Synthetic run profiles and a synthetic model file for the report tests.

The model prices the real interfaces (runtime/rts.perf and the graph/pipe interfaces of
tests/iface/data) with known parameters, so every Cost Profile number can be computed by hand.
The latency rows are the paper's Fig 4.15 split evenly over PEs 1..3.
"""

from pathlib import Path

import numpy as np

from mprof.bench.synth import make_profile
from mprof.iface import load_interface
from mprof.model import Model, ModuleInfo

ROOT = Path(__file__).resolve().parents[2]
PERFS = {
    "rts": ROOT / "runtime/rts.perf",
    "graph": ROOT / "tests/iface/data/graph.perf",
    "pipe": ROOT / "tests/iface/data/pipe.perf",
}

PARAMS = {
    "rts:Thread": 1e-6,
    "rts:Idle": 1.0,
    "rts:RemoteOp": 2e-6,
    "rts:Msg": 3e-6,
    "rts:ByteSent": 1e-8,
    "graph:P": 1e-3,
    "graph:Op": 1.4e-5,
    "graph:Data": 1.5e-7,
    "pipe:Comp": 4.5e-6,
}
HALF = {k: 0.01 * v for k, v in PARAMS.items()}  # 1 % half widths
IGNORED = ["rts:P", "rts:ByteCopy", "rts:FastMsgSent", "rts:ThreadContext", "pipe:P"]
T_Q = 1.6602343260853425  # t(0.95; 100)

FIG_4_15 = [  # (access, enabler, observed, critical)
    ("graph:ENQ", "graph:DEQ", 47.337, 47.337),
    ("graph:DEQ", "graph:ENQ", 92.700, 92.700),
    ("pipe:produce", "graph:ENQ", 47.337, 0.0),
    ("pipe:consume", "graph:DEQ", 92.700, 0.0),
    ("pipe:consume", "pipe:produce", 41.363, 0.0),
]
# Fig 4.15's latencies are of a run whose idle time was minutes; this fixture's PEs idle for
# 10-40 ms, and a PE's critical latencies are a part of its idle time (the database refuses a
# run where they add up to more): the fixture scales them down.
LATENCY_SCALE = 1e-4


def lat(seconds: float) -> float:
    """A latency of Fig 4.15 as this fixture's runs hold it."""
    return seconds * LATENCY_SCALE


def lat_text(seconds: float) -> str:
    """A latency of Fig 4.15 as a report of this fixture prints it (3 decimals: the fixture's
    model total is above a second)."""
    return f"{lat(seconds):.3f}"


ACCESSES = ["unclassified", "graph:ENQ", "graph:DEQ", "pipe:produce", "pipe:consume"]


def make_model(sigma=0.02, dof=100, normalize=True) -> Model:
    fitted = list(PARAMS)
    cov = np.diag([(HALF[k] / T_Q) ** 2 for k in fitted])
    interfaces = {m: ModuleInfo.from_interface(load_interface(p), str(p)) for m, p in PERFS.items()}
    return Model(
        values=dict(PARAMS),
        halfwidths=dict(HALF),
        fitted=fitted,
        covariance=cov,
        ignored=list(IGNORED),
        interfaces=interfaces,
        quality={"chi_square": sigma**2 * dof, "dof": dof, "t_quantile": T_Q},
        settings={"granularity": "pe", "normalize": normalize},
    )


def pe_stats(pe):
    rts = {
        "P": 1,
        "Sched": 2,
        "ThreadAlloc": 1000 * (pe + 1),
        "ThreadEnable": 1000,
        "ThreadDisp": 1000,
        "ThreadContext": 0,
        "IdleCycle": 10,
        "MsgSent": 100,
        "FlowMsgSent": 50,
        "ByteSent": 100000,
        "FastMsgSent": 0,
        "RemoteOp": 200,
        "ByteCopy": 0,
        "IdleNs": 10_000_000 * (pe + 1),
    }
    graph = {
        "P": 1,
        "EltSize": 100,
        "EdgeCap": 15,
        "Node": 1,
        "Edge": 2,
        "NOp": 500,
        "NBlock": 20,
        "NMsg": 80,
        "EnqSize": 50000,
        "DeqSize": 50000,
    }
    pipe = {"P": 1, "T": 100, "N": 10, "M": 1000}
    return rts, graph, pipe


def expected_costs(pe):
    """Per-category seconds of PE `pe`, by hand from PARAMS."""
    rts, graph, pipe = pe_stats(pe)
    p = PARAMS
    return {
        "rts:THREAD": p["rts:Thread"]
        * (rts["ThreadAlloc"] + rts["ThreadEnable"] + rts["ThreadDisp"]),
        "rts:IDLE": p["rts:Idle"] * rts["IdleNs"] / 1e9,
        "rts:COMM_ALPHA": p["rts:RemoteOp"] * rts["RemoteOp"]
        + p["rts:Msg"] * (rts["MsgSent"] + rts["FlowMsgSent"]),
        "rts:COMM_BETA": p["rts:ByteSent"] * rts["ByteSent"],
        "graph:STARTUP": p["graph:P"] * graph["P"],
        "graph:OP": p["graph:Op"] * (graph["NOp"] + graph["NBlock"] + graph["NMsg"]),
        "graph:DATA": p["graph:Data"] * (graph["EnqSize"] + graph["DeqSize"]),
        "pipe:COMP": p["pipe:Comp"] * pipe["M"] * pipe["T"],
    }


def make_run(npes=4, scale=1.0, extra_module=True, latency=True):
    """A run whose PE i takes `scale` times its model time."""
    pe_objects, times = [], []
    for pe in range(npes):
        rts, graph, pipe = pe_stats(pe)
        objs = [
            ("rts", rts),
            ("graph", graph),
            ("hashtable" if extra_module else "pipe", {}),
            ("pipe", pipe),
        ]
        pe_objects.append(objs)
        times.append(scale * sum(expected_costs(pe).values()))
    doc = make_profile(
        "pipe",
        pe_objects,
        times,
        pe_idle=[0.01 * (pe + 1) for pe in range(npes)],
        argv=["pipe", str(npes), "1000", "10", "100", "15", "100", "1000"],
    )
    if not extra_module:  # drop the placeholder object so ids stay 0, 1, 3
        for pe in doc["pes"]:
            pe["objects"].pop(2)
    doc["accesses"] = list(ACCESSES)
    if latency:
        for pe in doc["pes"]:
            if pe["pe"] == 0:
                continue
            share = LATENCY_SCALE / (npes - 1)
            pe["latency"] = [
                {
                    "access": a,
                    "enabler": e,
                    "count": 10,
                    "observed_s": o * share,
                    "critical_s": c * share,
                }
                for a, e, o, c in FIG_4_15
            ]
    return doc


# Measured CPU time per access category: each PE's share of its CPU time by category.
CATEGORY_SHARES = {
    "pipe:consume": 0.5,
    "pipe:produce": 0.25,
    "graph:ENQ": 0.05,
    "graph:DEQ": 0.05,
    "(scheduler)": 0.1,
    "(idle)": 0.05,
}


def with_categories(doc, shares=CATEGORY_SHARES, cpu_fraction=0.9):
    """The run profile with CPU times (cpu_fraction of each PE's elapsed time) and the
    categories of `shares`, samples at one per millisecond: as the runtime writes them."""
    doc["schema_version"] = 2
    for pe in doc["pes"]:
        cpu = cpu_fraction * pe["elapsed_s"]
        pe["cpu_s"] = cpu
        pe["idle_cpu_s"] = shares.get("(idle)", 0.0) * cpu
        pe["categories"] = [
            {"access": a, "cpu_s": f * cpu, "samples": round(f * cpu * 1000)}
            for a, f in shares.items()
            if f > 0
        ]
    # every category a row names is registered, as in the runtime's profiles
    doc["accesses"] += [a for a in shares if a not in doc["accesses"] and not a.startswith("(")]
    return doc


def cpu_model(**kwargs) -> Model:
    """make_model() fitted with `Measure cpu`."""
    model = make_model(**kwargs)
    model.settings["measure"] = "cpu"
    return model
