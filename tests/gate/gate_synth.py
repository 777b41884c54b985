"""Synthetic profile databases for the gate tests: runs of a few configurations whose times
and statistics are drawn from known distributions, so the right verdicts are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB


def write_db(path: Path, rng: np.random.Generator, *, reps: int = 8,
             configs=((1000, 2), (4000, 2)), factor: float = 1.0,
             factors: dict | None = None, sigma: float = 0.05, stat_delta: int = 0,
             hostname: str = "gatehost", program: str = "synth", module: str = "rts",
             extra=None) -> Path:
    """One run per (config, repetition): time = n * 1e-6 * factor * lognormal(sigma);
    statistic `Ops` = n + stat_delta (deterministic), `Noise` random.  `factors` maps a
    config's n to its own factor; `extra(n, rep)` gives more statistics of each PE's
    object of `module`."""
    docs = []
    for n, npes in configs:
        f = (factors or {}).get(n, factor)
        for rep in range(reps):
            t = n * 1e-6 * f * float(rng.lognormal(0.0, sigma))
            pe_objects = [[(module, {"P": 1, "Ops": n + stat_delta,
                                     "Noise": int(rng.integers(0, 1000)),
                                     **(extra(n, rep) if extra else {})})]
                          for _ in range(npes)]
            doc = make_profile(program, pe_objects, [t] * npes, params={"n": n},
                               hostname=hostname)
            doc["started_at"] = f"2026-01-01T00:00:{rep:02d}Z"
            docs.append((f"{path.name}:{n}:{rep}", doc))
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path
