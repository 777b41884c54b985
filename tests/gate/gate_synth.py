"""Synthetic profile databases for the gate tests: runs of a few configurations whose times
and statistics are drawn from known distributions, so the right verdicts are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mprof.bench.synth import make_profile
from mprof.db.store import ProfileDB


def write_db(
    path: Path,
    rng: np.random.Generator,
    *,
    reps: int = 8,
    configs=((1000, 2), (4000, 2)),
    factor: float = 1.0,
    factors: dict | None = None,
    sigma: float = 0.05,
    stat_delta: int = 0,
    hostname: str = "gatehost",
    program: str = "synth",
    module: str = "rts",
    extra=None,
) -> Path:
    """One run per (config, repetition): time = n * 1e-6 * factor * lognormal(sigma);
    statistic `Ops` = n + stat_delta (deterministic), `Noise` random.  `factors` maps a
    config's n to its own factor; `extra(n, rep)` gives more statistics of each PE's
    object of `module`."""
    docs = []
    for n, npes in configs:
        f = (factors or {}).get(n, factor)
        for rep in range(reps):
            t = n * 1e-6 * f * float(rng.lognormal(0.0, sigma))
            pe_objects = [
                [
                    (
                        module,
                        {
                            "P": 1,
                            "Ops": n + stat_delta,
                            "Noise": int(rng.integers(0, 1000)),
                            **(extra(n, rep) if extra else {}),
                        },
                    )
                ]
                for _ in range(npes)
            ]
            doc = make_profile(program, pe_objects, [t] * npes, params={"n": n}, hostname=hostname)
            doc["started_at"] = f"2026-01-01T00:00:{rep:02d}Z"
            docs.append((f"{path.name}:{n}:{rep}", doc))
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path


def write_category_db(
    path: Path,
    rng: np.random.Generator,
    *,
    reps: int = 6,
    sizes=(1000, 2000, 4000),
    slow: dict | None = None,
    sigma: float = 0.03,
    idle_sigma: float = 0.3,
    program: str = "dca",
    hostname: str = "gatehost",
    categories: bool = True,
    sample_s: float = 20e-6,
) -> Path:
    """Runs of a counter-array-like program `dca` on 2 PEs, with measured CPU time per access
    category (version 2 profiles: cpu_s, idle_cpu_s and `categories`).  Per PE and run:
    dca:UPDATE takes n updates x 2 us, dca:LOOKUP L = 7n mod 5000 + 500 lookups x 1 us,
    (scheduler) 0.1 ms, each with log-normal noise `sigma`, times `slow.get(access, 1)`;
    (idle) a random idle CPU time (log-normal `idle_sigma` around 0.5 ms), also the statistic
    rtx.IdleCpuNs (measured, as the runtime's rts.IdleCpuNs).
    Statistics: dca.NUpdate = n, dca.NLookup = L, dca.P = 1.  `categories=False` leaves the
    categories out (older runtimes).  The categories' sample counts are as if sampled every
    `sample_s` seconds (MPROF_SAMPLE_US=20 by default: the (scheduler) row gets 5)."""
    slow = slow or {}
    docs = []
    for n in sizes:
        for rep in range(reps):
            lookups = (n * 7) % 5000 + 500  # not proportional to n: the fit tells them apart
            pe_objects, times, pes_cats, idles = [], [], [], []
            for _pe in range(2):
                cats = {"dca:UPDATE": n * 2e-6, "dca:LOOKUP": lookups * 1e-6, "(scheduler)": 1e-4}
                cats = {
                    k: v * slow.get(k, 1.0) * float(rng.lognormal(0.0, sigma))
                    for k, v in cats.items()
                }
                idle = 5e-4 * slow.get("(idle)", 1.0) * float(rng.lognormal(0.0, idle_sigma))
                cats["(idle)"] = idle
                pe_objects.append(
                    [
                        ("dca", {"P": 1, "NUpdate": n, "NLookup": lookups}),
                        ("rtx", {"P": 1, "IdleCpuNs": int(idle * 1e9)}),
                    ]
                )
                times.append(sum(cats.values()))
                pes_cats.append(cats)
                idles.append(idle)
            doc = make_profile(program, pe_objects, times, params={"n": n}, hostname=hostname)
            doc["schema_version"] = 2
            doc["accesses"] = ["unclassified", "dca:UPDATE", "dca:LOOKUP"]
            for pe, cats, t, idle in zip(doc["pes"], pes_cats, times, idles):
                pe["cpu_s"], pe["idle_cpu_s"] = t, idle
                if categories:
                    pe["categories"] = [
                        {"access": k, "cpu_s": v, "samples": max(1, round(v / sample_s))}
                        for k, v in cats.items()
                    ]
            doc["started_at"] = f"2026-01-01T00:00:{rep:02d}Z"
            docs.append((f"{path.name}:{n}:{rep}", doc))
    with ProfileDB(path) as db:
        db.import_documents(docs)
    return path


DCA_PERF = """interface dca -- a distributed counter array (gate tests)

statistics
  P       -- Partitions per processor
  NUpdate -- Updates
  NLookup -- Lookups

terms
  Update  -- Cost of updates
          { Update = NUpdate; }
  Lookup  -- Cost of lookups
          { Lookup = NLookup; }

categories
  UPDATE  -- Updates
          { Update }
  LOOKUP  -- Lookups
          { Lookup }
  STARTUP -- Start-up
          { P }

accesses
  UPDATE  -- update
  LOOKUP  -- lookup
"""


RTX_PERF = """interface rtx -- the runtime's idle accounting, as runtime/rts.perf has it

statistics
  P       -- Partitions per processor
  IdleCpuNs measured -- CPU time of the idle loop in nanoseconds

terms
  IdleCpu -- CPU time of the idle loop in seconds
          { IdleCpu = IdleCpuNs / 1000000000; }

categories
  STARTUP -- Start-up
          { P }
  IDLE    -- Idle time
          { IdleCpu }
"""


def write_dca_model(folder: Path) -> Path:
    """dca.perf, rtx.perf and a modeling script that fits dca's unit costs with the idle CPU
    time's parameter fixed at 1 (as workflows/rts/model.tcl fixes rts IdleCpu): the IDLE
    category is priced, not fitted."""
    (folder / "dca.perf").write_text(DCA_PERF)
    (folder / "rtx.perf").write_text(RTX_PERF)
    script = folder / "dca.tcl"
    script.write_text(
        "FitDatabase: unused.db\nInterface: dca.perf rtx.perf\nMeasure cpu\n"
        "IgnoreTerm: dca P\nIgnoreTerm: rtx P\nFixParameter rtx IdleCpu 1\n"
    )
    return script
