"""Synthetic run profiles (docs/run-profile.md), for tests, demos and fitting experiments.

A synthetic workload draws statistics, computes each PE's time from known coefficients plus
Gaussian noise, and writes a schema-valid profile, so a fit can be checked against the truth.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence


def make_profile(
    program: str,
    pe_objects: Sequence[Sequence[tuple[str, Mapping]]],
    pe_elapsed: Sequence[float],
    *,
    params: Mapping | None = None,
    settings: Mapping | None = None,
    pe_idle: Sequence[float] | None = None,
    argv: Sequence[str] | None = None,
    hostname: str = "synthetic",
) -> dict:
    """pe_objects[pe] lists (module, stats) of that PE's objects; ids count from 0 per PE."""
    npes = len(pe_objects)
    if len(pe_elapsed) != npes:
        raise ValueError("one elapsed time per PE is needed")
    idle = list(pe_idle) if pe_idle is not None else [0.0] * npes
    return {
        "schema": "mprof.run-profile",
        "schema_version": 1,
        "program": program,
        "argv": list(argv or [program]),
        "backend": "shm",
        "npes": npes,
        "started_at": "2026-01-01T00:00:00Z",
        "elapsed_s": float(max(pe_elapsed)),
        "machine": {
            "hostname": hostname,
            "cpu": "synthetic",
            "cores": 2,
            "fingerprint": hashlib.sha256(hostname.encode()).hexdigest(),
        },
        "settings": dict(settings or {}),
        "params": dict(params or {}),
        "accesses": ["unclassified"],
        "pes": [
            {
                "pe": pe,
                "elapsed_s": float(pe_elapsed[pe]),
                "idle_s": float(idle[pe]),
                "objects": [
                    {"id": i, "module": module, "stats": dict(stats)}
                    for i, (module, stats) in enumerate(pe_objects[pe])
                ],
                "latency": [],
            }
            for pe in range(npes)
        ],
    }
