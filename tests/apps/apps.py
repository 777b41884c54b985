"""Shared helpers of the application tests (benchmarks/em3d, tripuzzle, eigenvalue, phylogeny,
cswec): build and
run the programs on shared memory or under mpirun, read their run profiles, and replay their
input generators in Python to predict the statistics that follow from the input."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from itertools import permutations
from pathlib import Path

PROGRAMS = ["em3d", "tripuzzle", "eigenvalue", "phylogeny", "cswec"]
MPIRUN = shutil.which("mpirun")
SANITIZER_ERRORS = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
    r"runtime error:|ThreadSanitizer: reported"
)
M64 = (1 << 64) - 1


def build(cmake_build, program: str, sanitize: str | None = None) -> Path:
    bdir = cmake_build(sanitize=sanitize, targets=PROGRAMS)
    return bdir / "benchmarks" / program / program


class Run:
    def __init__(self, proc, profile, cmd):
        self.rc, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.profile, self.cmd = profile, cmd

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.cmd)}\nexit {self.rc}\n--- stdout\n{self.stdout[-3000:]}\n"
            f"--- stderr\n{self.stderr[-3000:]}"
        )

    def stats(self, module: str) -> list[dict]:
        """`module`'s statistics on every PE, summed over its objects there (Tripuzzle has
        two hash tables)."""
        out = []
        for pe in self.profile["pes"]:
            recs = [o["stats"] for o in pe["objects"] if o["module"] == module]
            assert recs, (pe["pe"], module)
            out.append({k: sum(r[k] for r in recs) for k in recs[0]})
        return out

    def total(self, module: str, name: str):
        return sum(s[name] for s in self.stats(module))


def run(
    exe: Path,
    *args,
    pes: int | None = None,
    np: int | None = None,
    sanitize=None,
    expect_rc: int | None = 0,
    timeout=120,
    **env_extra,
) -> Run:
    """pes: MPROF_PES on shared memory (None: the program's default); np: mpirun -np."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPROF_", "OMPI_", "PMIX_"))}
    env.update(
        MPROF_IDLE_TIMEOUT="20",
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )
    if pes is not None:
        env["MPROF_PES"] = str(pes)
    if sanitize == "address":
        env.update(
            ASAN_OPTIONS="abort_on_error=0:detect_leaks=1",
            UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
        )
    elif sanitize == "thread":
        env.update(TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1")
    env.update({k: str(v) for k, v in env_extra.items()})
    cmd = [str(exe), *map(str, args)]
    if np is not None:
        cmd = [MPIRUN, "-np", str(np), "--oversubscribe", *cmd]
    with tempfile.TemporaryDirectory(prefix="mprof-app-") as tmp:
        out = Path(tmp) / "profile.json"
        env["MPROF_OUT"] = str(out)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        profile = json.loads(out.read_text()) if out.exists() else None
    r = Run(proc, profile, cmd)
    if expect_rc is not None:
        assert r.rc == expect_rc, r.describe()
    if sanitize:
        assert not SANITIZER_ERRORS.search(r.stderr), r.describe()
    return r


# ---------------------------------------------------------------------------------------
# Generators (benchmarks/common/bench_util.h)


def mix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def hash3(seed: int, a: int, b: int, c: int) -> int:
    return mix64((mix64((mix64((seed + a) & M64) + b) & M64) + c) & M64)


def em3d_expected(
    P: int, n: int, d: int, remote: float, span: int, iters: int, seed: int = 1
) -> list[dict]:
    """Replays em3d.c's generator: the bipartite and em3d statistics of every PE."""
    bp = round(remote * 100)
    count = [(n + 1) // 2, n // 2]  # nodes of kind 0 (E) and 1 (H)
    ghosts = [set() for _ in range(P)]
    remote_edges = [0] * P
    for p in range(P):
        cand = []
        for dist in range(1, span + 1):
            if p - dist >= 0:
                cand.append(p - dist)
            if p + dist < P:
                cand.append(p + dist)
        for i in range(n):
            other = 1 - i % 2
            for e in range(d):
                h = hash3(seed, p, i, e)
                q = cand[(h >> 16) % len(cand)] if P > 1 and h % 10000 < bp else p
                j = 2 * ((h >> 32) % count[other]) + other
                if q != p:
                    ghosts[p].add((q, j))
                    remote_edges[p] += 1
    out = []
    for p in range(P):
        sends = reads = nbytes = 0
        for r in range(P):
            if r == p:
                continue
            mine = [j for (q, j) in ghosts[r] if q == p]
            reads += bool(mine)
            for c in (0, 1):
                k = sum(1 for j in mine if j % 2 == c)
                sends += bool(k)
                nbytes += 8 * k
        recvs = sum(
            1
            for q in range(P)
            for c in (0, 1)
            if any(o == q and j % 2 == c for (o, j) in ghosts[p])
        )
        bip = {
            "P": 1,
            "StateSize": 8,
            "Node": n,
            "Ghost": len(ghosts[p]),
            "Edge": n * d,
            "RemoteEdge": remote_edges[p],
            "NValidate": 2 * iters,
            "NUpdate": n * iters,
            "NEdgeVisit": n * d * iters,
            "NMsg": 2 * (P - 1) + reads + iters * sends,
            "NRecv": iters * recvs,
            "Bytes": iters * nbytes,
        }
        em = {
            "P": 1,
            "Iter": iters,
            "NodeUpdate": n * iters,
            "EdgeRead": n * d * iters,
            "RemoteRead": remote_edges[p] * iters,
        }
        out.append({"bipartite": bip, "em3d": em})
    return out


def tripuzzle_bfs(rows: int, hole_r: int, hole_c: int) -> dict:
    """The canonical breadth-first search of tripuzzle.c, in Python: solutions, boards
    expanded, moves made and distinct boards inserted over all phases."""
    idx = lambda r, c: r * (r + 1) // 2 + c  # noqa: E731
    holes = [(r, c) for r in range(rows) for c in range(r + 1)]
    moves = []
    for r, c in holes:
        for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, -1)):
            r2, c2 = r + 2 * dr, c + 2 * dc
            if 0 <= r2 < rows and 0 <= c2 <= r2:
                moves.append((1 << idx(r, c) | 1 << idx(r + dr, c + dc), 1 << idx(r2, c2)))
    images = []
    for perm in permutations(range(3)):
        image = {}
        for r, c in holes:
            b = (c, r - c, rows - 1 - r)
            x, z = b[perm[0]], b[perm[2]]
            image[idx(r, c)] = idx(rows - 1 - z, x)
        images.append(image)

    def canonical(board: int) -> int:
        return min(sum(1 << im[i] for i in range(len(holes)) if board >> i & 1) for im in images)

    start = canonical((1 << len(holes)) - 1 & ~(1 << idx(hole_r - 1, hole_c - 1)))
    level = {start: 1}
    expanded = made = 0
    distinct = 1  # the initial board
    for _ in range(len(holes) - 2):
        nxt: dict[int, int] = defaultdict(int)
        for board, paths in level.items():
            expanded += 1
            for need, empty in moves:
                if board & need == need and not board & empty:
                    nxt[canonical(board ^ need ^ empty)] += paths
                    made += 1
        distinct += len(nxt)
        level = nxt
    return {
        "solutions": sum(level.values()),
        "expanded": expanded,
        "moves": made,
        "distinct": distinct,
        "final_boards": len(level),
    }


def unit(h: int) -> float:
    return (h >> 11) * 2.0**-53


def phylogeny_maximal(species: int, chars: int, noise: float, seed: int = 1) -> list[set]:
    """Replays the generator of benchmarks/phylogeny/phylo_characters.c and finds the maximal
    compatible character subsets by brute force over all subsets of the (pairwise) compatible
    graph's cliques."""
    cluster = [1 << i for i in range(species)]
    clades = []
    step = 0
    while len(cluster) > 1:
        h = hash3(seed, 1, step, 0)
        n = len(cluster)
        a, b = h % n, (h >> 32) % (n - 1)
        if b >= a:
            b += 1
        merged = cluster[a] | cluster[b]
        if n > 2:
            clades.append(merged)
        lo, hi = min(a, b), max(a, b)
        cluster[lo] = merged
        cluster[hi] = cluster[-1]
        cluster.pop()
        step += 1
    masks = []
    for c in range(chars):
        m = clades[hash3(seed, 2, c, 0) % len(clades)]
        for s in range(species):
            if unit(hash3(seed, 3, c, s)) < noise:
                m ^= 1 << s
        masks.append(m)
    full = (1 << species) - 1

    def ok(a, b):
        return not ((a & b) and (a & ~b) and (~a & b & full) and (~a & ~b & full))

    compat = [{j for j in range(chars) if j != i and ok(masks[i], masks[j])} for i in range(chars)]
    # every compatible subset is a clique of the pair graph (the four-gamete theorem)
    found = []

    def grow(members, candidates):
        extend = [
            c for c in range(chars) if c not in members and all(c in compat[m] for m in members)
        ]
        if not extend:
            found.append(set(members))
            return
        for c in candidates:
            if c in extend:
                grow(members | {c}, [d for d in candidates if d > c])

    grow(set(), list(range(chars)))
    return sorted(found, key=lambda s: sorted(s))
