"""Synthetic profile databases built from known coefficients, with the real .perf files."""

from pathlib import Path

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB

ROOT = Path(__file__).resolve().parents[2]
PIPE_PERF = ROOT / "tests/iface/data/pipe.perf"
GRAPH_PERF = ROOT / "tests/iface/data/graph.perf"
RTS_PERF = ROOT / "runtime/rts.perf"

# "Truth" for the PIPE-like workload; pipe:P is left out because P = 1 for every module makes
# the start-up terms collinear (exactly the paper's finding).
TRUTH = {"pipe:Comp": 4.5e-6, "graph:P": 6e-3, "graph:Op": 1.4e-5, "graph:Data": 1.5e-7}


def pipe_objects(rng):
    m, t, n = rng.integers(200, 2000), rng.integers(10, 200), rng.integers(1, 20)
    nop = int(rng.integers(50, 3000))
    graph = {
        "P": 1,
        "EltSize": 100,
        "EdgeCap": 10,
        "Node": 4,
        "Edge": 4,
        "NOp": nop,
        "NBlock": int(rng.integers(0, 100)),
        "NMsg": int(rng.integers(0, 200)),
        "EnqSize": int(rng.integers(0, 50000)),
        "DeqSize": int(rng.integers(0, 50000)),
    }
    pipe = {"P": 1, "T": int(t), "N": int(n), "M": int(m)}
    return [("pipe", pipe), ("graph", graph)]


def true_time(objects, truth):
    pipe, graph = dict(objects)["pipe"], dict(objects)["graph"]
    terms = {
        "pipe:P": pipe["P"],
        "pipe:Comp": pipe["M"] * pipe["T"],
        "graph:P": graph["P"],
        "graph:Op": graph["NOp"] + graph["NBlock"] + graph["NMsg"],
        "graph:Data": graph["EnqSize"] + graph["DeqSize"],
    }
    return sum(truth.get(k, 0.0) * v for k, v in terms.items())


def build_db(
    path, rng, *, runs=16, npes=(2, 4), noise=0.0, truth=TRUTH, extra_module=False, program="pipe"
):
    """Per-PE time = sum of truth * terms, plus N(0, noise) seconds."""
    docs = []
    for r in range(runs):
        p = npes[r % len(npes)]
        pe_objects, times = [], []
        for _ in range(p):
            objs = pipe_objects(rng)
            if extra_module:
                objs.append(("unknownmod", {"X": 1}))
            pe_objects.append(objs)
            times.append(true_time(objs, truth) + rng.normal(0.0, noise))
        docs.append(
            (
                f"run{r}.json",
                make_profile(program, pe_objects, times, params={"run": r, "M": r % 3}),
            )
        )
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path


def write_script(tmp_path, text, name="model.tcl"):
    path = tmp_path / name
    path.write_text(
        text.replace("@PIPE@", str(PIPE_PERF))
        .replace("@GRAPH@", str(GRAPH_PERF))
        .replace("@RTS@", str(RTS_PERF))
    )
    return path


BASE_SCRIPT = """
FitDatabase fit.db
TestDatabase test.db
Interface @PIPE@
Interface @GRAPH@
IgnoreTerm pipe P
"""
