"""The bipartite graph (instrumented-lib/bipartite): validate makes every ghost equal its
owner, exactly one message per communicating PE pair and colour per validate (or one per chunk
where the states exceed the chunk limit), iterators and update fibers; statistics predicted
exactly by replaying the test graph's generator.

The C program is instrumented-lib/bipartite/tests/bg_test.c: it checks every edge's source
state during the updates and every ghost after each validate, and exits non-zero on a
mismatch."""

from __future__ import annotations

import re

import pytest
from libtest import build_program, run_misuse, run_program

TARGET = "mprof_bipartite_tests"
PROGRAM = "bg_test"
STATE = 16  # two doubles
M64 = (1 << 64) - 1
MAX_MESSAGE = 64 << 20  # mp_max_message()
ID = 8  # bytes of a node id


def _program(cmake_build, sanitize=None):
    return build_program(cmake_build, TARGET, PROGRAM, sanitize)


_run = run_program


def mix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def per_chunk(size: int, limit: int) -> int:
    """Items of `size` bytes per chunk (bg_internal.h: bgi_per_chunk)."""
    return max(limit // size, 1)


def answer_per_chunk(state: int, limit: int) -> int:
    """Nodes per chunk of a finalize answer: colours padded to 16 bytes, then states."""
    c = limit // (state + 1)
    while c > 1 and -(-c // 16) * 16 + c * state > limit:
        c -= 1
    return max(c, 1)


def chunks(n: int, per: int) -> int:
    return -(-n // per)


def expected_stats(
    P: int, n: int, d: int, span: int, steps: int, state: int = STATE, chunk: int = 0
) -> list[dict]:
    """Replays bg_test.c's generator; returns each PE's statistics.  `chunk`: the chunk limit
    bg_test set (0: none below mp_max_message())."""
    limit = min(chunk, MAX_MESSAGE) if chunk else MAX_MESSAGE
    per_state, per_id = per_chunk(state, limit), per_chunk(ID, limit)
    per_answer = answer_per_chunk(state, limit)
    ghosts = [set() for _ in range(P)]  # (owner, index) of the remote sources of PE p
    remote = [0] * P
    for p in range(P):
        for i in range(n):
            for e in range(d):
                h = mix64(((p << 40) ^ (i << 8) ^ e) & M64)
                dq = h % (2 * span + 1) - span
                q = (p + dq) % P
                j = 2 * ((h >> 20) % (n // 2)) + (1 - (i & 1))
                if q != p:
                    ghosts[p].add((q, j))
                    remote[p] += 1
    out = []
    for p in range(P):
        # validate of colour c: p sends one message (a chunk) to every r that ghosts a
        # colour-c node of p, carrying all of them; p receives one from every q it ghosts
        # colour c of.  Finalize: p answers every subscriber (an empty answer is one chunk)
        sends = reads = answers = 0
        nbytes = 0
        for r in range(P):
            if r == p:
                continue
            mine = [j for (q, j) in ghosts[r] if q == p]
            reads += chunks(len(mine), per_id)
            answers += max(chunks(len(mine), per_answer), 1)
            for c in (0, 1):
                k = sum(1 for j in mine if j & 1 == c)
                sends += chunks(k, per_state)
                nbytes += k * state
        recvs = sum(
            chunks(sum(1 for (o, j) in ghosts[p] if o == q and j & 1 == c), per_state)
            for q in range(P)
            for c in (0, 1)
        )
        out.append(
            {
                "P": 1,
                "StateSize": state,
                "Node": n,
                "Ghost": len(ghosts[p]),
                "Edge": n * d,
                "RemoteEdge": remote[p],
                "NValidate": 2 * steps,
                "NUpdate": n * steps,
                "NEdgeVisit": n * d * steps,
                # finalize: a subscription to every other PE, the bulk reads of the subscribers'
                # lists and the answers; then the validates
                "NMsg": (P - 1) + reads + answers + steps * sends,
                "NRecv": steps * recvs,
                "Bytes": steps * nbytes,
            }
        )
    return out


def _stats(profile):
    rows = []
    for pe in profile["pes"]:
        recs = [o["stats"] for o in pe["objects"] if o["module"] == "bipartite"]
        assert len(recs) == 1
        rows.append(recs[0])
    return rows


@pytest.fixture(scope="module")
def bg_test(cmake_build):
    return _program(cmake_build)


@pytest.mark.parametrize(
    "pes,n,d,span,steps",
    [
        (1, 100, 4, 2, 2),
        (2, 200, 6, 1, 3),
        (3, 150, 5, 3, 2),
        (4, 200, 6, 2, 3),
        (8, 120, 8, 3, 2),
        (8, 40, 2, 1, 2),  # sparse: some PE pairs do not communicate in some colour
    ],
)
def test_validate_and_statistics(bg_test, tmp_path, pes, n, d, span, steps):
    args = [f"n={n}", f"d={d}", f"span={span}", f"steps={steps}"]
    profile, out = _run(bg_test, args, pes, tmp_path)
    assert "bipartite: OK" in out
    got = _stats(profile)
    want = expected_stats(pes, n, d, span, steps)
    for p in range(pes):
        assert got[p] == want[p], f"PE {p}"
    # every validate message sent was received: one per communicating pair and colour
    finalize = sum(2 * (pes - 1) for _ in range(pes))
    reads = sum(w["NMsg"] for w in want) - finalize - sum(w["NRecv"] for w in want)
    assert sum(r["NRecv"] for r in got) == sum(r["NMsg"] for r in got) - finalize - reads


@pytest.mark.parametrize(
    "pes,n,d,span,size,chunk",
    [
        (2, 200, 6, 1, 16, 100),  # 6 states a chunk; answers of 5 nodes
        (4, 120, 8, 3, 48, 100),  # 2 states a chunk; answers of 1 node (16 + 48 x 2 > 100)
        (3, 60, 4, 1, 24, 1),  # one state, one id, one node a chunk
        (4, 200, 6, 2, 40, 4096),  # a few chunks per pair and colour
    ],
)
def test_transfers_in_chunks(bg_test, tmp_path, pes, n, d, span, size, chunk):
    """Transfers larger than the chunk limit go in chunks of whole states (their order of
    arrival is the runtime's): every ghost still equals its owner after each validate, state
    bytes at both ends of a state included, and the messages are the chunks predicted."""
    steps = 2
    args = [f"n={n}", f"d={d}", f"span={span}", f"steps={steps}", f"size={size}", f"chunk={chunk}"]
    profile, out = _run(bg_test, args, pes, tmp_path)
    assert "bipartite: OK" in out
    got = _stats(profile)
    want = expected_stats(pes, n, d, span, steps, size, chunk)
    unchunked = expected_stats(pes, n, d, span, steps, size)
    for p in range(pes):
        assert got[p] == want[p], f"PE {p}"
    assert sum(w["NMsg"] for w in want) > sum(w["NMsg"] for w in unchunked)


def test_states_past_the_largest_message(bg_test, tmp_path):
    """A finalize answer of about 100 states of 1 MiB (more than mp_max_message(), 64 MiB)
    ended the run ("bulk store ... failed"): it goes in chunks now."""
    size = 1 << 20
    args = ["n=100", "d=6", "span=1", "steps=1", f"size={size}"]
    profile, out = _run(bg_test, args, 2, tmp_path, timeout=300)
    assert "bipartite: OK" in out
    got = _stats(profile)
    want = expected_stats(2, 100, 6, 1, 1, size)
    assert got == want
    assert max(g["Ghost"] for g in got) * size > MAX_MESSAGE


def test_access_categories(bg_test, tmp_path):
    profile, _ = _run(bg_test, ["n=100", "d=4", "steps=2"], 4, tmp_path)
    assert {"bipartite:VALIDATE", "bipartite:UPDATE"} <= set(profile["accesses"])
    seen = {row["access"] for pe in profile["pes"] for row in pe["latency"]}
    assert {"bipartite:VALIDATE", "bipartite:UPDATE"} <= seen


# ---- misuse: refused with a message on stderr ------------------------------------------


def _misuse(exe, case, pes, tmp_path):
    proc = run_misuse(exe, ["misuse", case], pes, tmp_path)
    return proc, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("sanitize", [None, "address"], ids=["plain", "asan"])
def test_a_state_size_that_differs_between_pes_ends_the_run(cmake_build, tmp_path, sanitize):
    """bg_create is collective with one state size: the owners answered a subscription with
    their own size into buffers sized for the subscriber's (a heap overrun, a double free).  A
    subscription carries the subscriber's size and the owner names both."""
    exe = build_program(cmake_build, TARGET, PROGRAM, sanitize)
    proc = run_misuse(
        exe, ["misuse", "sizes_differ"], 2, tmp_path, env_extra={"ASAN_OPTIONS": "detect_leaks=0"}
    )
    msg = f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode != 0 and "Sanitizer" not in proc.stderr, msg
    assert "finalized" not in proc.stdout, msg
    # each PE subscribes to the other: whichever answers first names the other's size
    assert re.search(
        r"graph 1024: (PE 0 created it with 8-byte node states, this PE with 64|PE 1 created it "
        r"with 64-byte node states, this PE with 8): bg_create must be given the same state size "
        r"on every PE\n",
        proc.stderr,
    ), msg


def test_one_validate_at_a_time_and_one_destroy(bg_test, tmp_path):
    """A second validate while one runs was accepted, its barrier refused inside, and its
    counter never reached (a hang); a second destroy aborted with a message about a snapshot
    the graph does not have.  Both are refused (MP_FAIL, 2) with a line, and the graph goes on."""
    proc, msg = _misuse(bg_test, "overlap", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "bipartite misuse overlap: OK" in proc.stdout, msg
    for case in ("validate_again", "destroy_while_validating", "destroy_again"):
        assert proc.stdout.count(f"{case} 2\n") == 2, msg
    for pe in range(2):
        assert (
            f"bipartite (PE {pe}): bg_validate: graph 1024 has a validate in progress; wait for "
            "its counter"
        ) in proc.stderr, msg
        assert f"bipartite (PE {pe}): bg_destroy: graph 1024 has a validate in progress" in (
            proc.stderr
        ), msg
        assert f"bipartite (PE {pe}): bg_destroy: graph 1024 is being destroyed already" in (
            proc.stderr
        ), msg


def test_misuse_state_size_refused(bg_test, tmp_path):
    """bg_create(2^56 + 1) was accepted: the node array's size wrapped to 256 bytes and the
    first bg_add_node cleared 2^56 bytes of it.  SIZE_MAX was accepted too."""
    proc, msg = _misuse(bg_test, "sizes", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "bipartite misuse sizes: OK" in proc.stdout, msg
    for pe in range(2):
        for size in ((1 << 56) + 1, (1 << 64) - 1, MAX_MESSAGE + 1, MAX_MESSAGE - 15):
            assert (
                f"bipartite (PE {pe}): bg_create: state_size {size} exceeds the largest "
                f"state a message can carry ({MAX_MESSAGE - 16} bytes)"
            ) in proc.stderr, msg
        assert f"bipartite (PE {pe}): bg_create: state_size is 0" in proc.stderr, msg
        assert (
            f"bipartite (PE {pe}): bg_reserve: 4294967297 nodes of 16 bytes and 0 edges "
            "exceed what one PE can hold"
        ) in proc.stderr, msg
        assert f"bipartite (PE {pe}): bg_reserve: the graph is finalized" in proc.stderr, msg


def test_misuse_wrong_kind_of_object(bg_test, tmp_path):
    """Another object's id (a snapshot, a plain object) is refused by the calls that return an
    error (they read its partition as a graph's) ..."""
    proc, msg = _misuse(bg_test, "kind", 2, tmp_path)
    assert proc.returncode == 0, msg
    assert "bipartite misuse kind: OK" in proc.stdout, msg
    for fn in (
        "bg_add_edge",
        "bg_reserve",
        "bg_finalize",
        "bg_validate",
        "bg_update",
        "bg_destroy",
    ):
        assert (
            len(re.findall(rf"\): {fn}: object \d+ is not a bipartite graph\n", proc.stderr)) == 4
        ), (fn, msg)
        assert f"{fn}: object 77777 is not a bipartite graph on this PE" in proc.stderr, msg


def test_misuse_wrong_kind_add_node_ends_run(bg_test, tmp_path):
    """... and bg_add_node, which has no error value, ends the run with the message."""
    proc, msg = _misuse(bg_test, "kind_node", 1, tmp_path)
    assert proc.returncode != 0, msg
    assert re.search(r"bipartite \(PE 0\): object \d+ is not a bipartite graph\n", proc.stderr), msg


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_sanitizers(cmake_build, tmp_path, sanitize):
    exe = _program(cmake_build, sanitize)
    # the programs destroy their structures: leaks are reported
    env = {"TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=1"}
    _, out = _run(
        exe, ["n=100", "d=5", "span=2", "steps=2"], 4, tmp_path, timeout=300, env_extra=env
    )
    assert "OK" in out
    # chunked transfers (chunks may arrive in any order)
    _, out = _run(
        exe,
        ["n=60", "d=5", "span=2", "steps=2", "size=40", "chunk=100"],
        4,
        tmp_path,
        timeout=300,
        env_extra=env,
    )
    assert "OK" in out
    # edges added out of their destinations' order: laid out by finalize
    _, out = _run(
        exe,
        ["n=60", "d=5", "span=2", "steps=2", "order=1"],
        4,
        tmp_path,
        timeout=300,
        env_extra=env,
    )
    assert "OK" in out


@pytest.mark.parametrize("pes,n,d,span", [(1, 100, 4, 2), (3, 150, 5, 3), (4, 64, 7, 1)])
def test_edges_added_in_any_order(bg_test, tmp_path, pes, n, d, span):
    """Edges added node by node (order=0) lie in CSR as they came and are resolved in place;
    edges added edge-major (order=1: every node's first edge, then every second ...) are laid
    out by destination.  Either way every node's edges come in the order they were added, with
    their weights and sources (bg_test checks each), and the statistics are the same; so
    with the arrays reserved at their final size first (bg_reserve)."""
    want = expected_stats(pes, n, d, span, 2)
    for order, reserve in ((0, 0), (1, 0), (0, 1), (1, 1)):
        args = [
            f"n={n}",
            f"d={d}",
            f"span={span}",
            "steps=2",
            f"order={order}",
            f"reserve={reserve}",
        ]
        profile, out = _run(bg_test, args, pes, tmp_path)
        assert "bipartite: OK" in out, (order, reserve)
        assert _stats(profile) == want, (order, reserve)


def test_misuse_a_colour_that_is_neither_ends_the_run(bg_test, tmp_path):
    """bg_local_count(g, 7) returned the black count (the colour was masked)."""
    proc, msg = _misuse(bg_test, "colour", 1, tmp_path)
    assert proc.returncode != 0 and "count " not in proc.stdout, msg
    assert (
        "bipartite (PE 0): bg_local_count: colour 7 is neither BG_RED nor BG_BLACK" in proc.stderr
    ), msg
