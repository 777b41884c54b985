"""The shared-memory backend's transport (runtime/src/shm/machine.c): per-(worker, PE)
single-producer single-consumer rings, a ready bitmap per receiver, held chains when a ring is
full, futex wake-ups, and pooled buffers returned on channels of their own.

rt_channels checks every record's sender order and payload on arrival and every (sender,
receiver) count at the end, so a lost, duplicated or overtaking record fails the program.
"""

import subprocess
import sys

import pytest

# A thread per PE (every producer a worker of its own) and PEs multiplexed on a few workers
# (PEs of one worker share its channels, and a worker sends to its own PEs through a ring that
# nobody drains while it runs).
# Past 65 PEs with a thread each, records travel in two hops (runtime/src/comm.c, "Routing"):
# 97 PEs are a grid of ten columns whose last row is short.
MESH_LAYOUTS = [(16, 16), (16, 3), (64, 64), (64, 4), (97, 97)]


@pytest.mark.parametrize("pes, workers", MESH_LAYOUTS, ids=lambda v: str(v))
@pytest.mark.parametrize("agg", [0, 1024])
def test_mesh_delivers_every_record_once_in_order(rt, pes, workers, agg):
    run = rt.run(
        "channels",
        "mesh",
        60,
        timeout=120,
        env={"MPROF_PES": pes, "MPROF_WORKERS": workers, "MPROF_AGG_BYTES": agg},
    )
    assert f"arrivals={60 * pes * (pes - 1)} " in run.stdout
    # every pooled buffer came back on the return channels: as many returns as messages
    sent = sum(run.pe_stats(p)["MsgSent"] + run.pe_stats(p)["FastMsgSent"] for p in range(pes))
    returned = sum(run.pe_stats(p)["FlowMsgSent"] for p in range(pes))
    assert returned == sent


@pytest.mark.parametrize("workers", [4, 2], ids=["thread-per-pe", "multiplexed"])
@pytest.mark.parametrize("ring", [1, 2, 8])
def test_full_ring_holds_and_keeps_order(rt, workers, ring):
    """Three senders far ahead of a slow receiver through rings of 1-8 slots: what does not
    fit waits on the sender's held chain, in order, and nothing is dropped or stuck."""
    run = rt.run(
        "channels",
        "flood",
        3000,
        timeout=120,
        env={"MPROF_WORKERS": workers, "MPROF_AGG_BYTES": 0, "MPROF_SHM_RING": ring},
    )
    assert "arrivals=9000 expected=9000" in run.stdout
    assert all(run.pe_stats(pe)["MsgSent"] == 3000 for pe in (1, 2, 3))
    # every buffer went back to its sender, through return rings that fill as well
    assert run.pe_stats(0)["FlowMsgSent"] == 9000


@pytest.mark.parametrize("workers", [2, 1], ids=["thread-per-pe", "multiplexed"])
def test_blocked_sender_is_woken(rt, workers):
    """A burst of 8 through a 1-slot ring: 7 wait on the sender's held chain while it sleeps
    (it waits for the acknowledgement); the receiver that frees the slot must wake it, or each
    round waits for the sender's 50 ms nap."""
    run = rt.run(
        "channels",
        "burst",
        30,
        timeout=60,
        env={"MPROF_WORKERS": workers, "MPROF_AGG_BYTES": 0, "MPROF_SPIN": 1, "MPROF_SHM_RING": 1},
    )
    assert "arrivals=240 expected=240" in run.stdout
    median = float(run.stdout.split("latency_ms median=")[1].split()[0])
    assert median < 5.0, run.stdout


@pytest.mark.parametrize("ring", [2048, 4096, 65536])
def test_rings_larger_than_a_chunk_get_memory_of_their_own(rt_san, ring):
    """Channels are carved out of their producer's 64 KiB chunks; a ring of 4096 slots or more
    (two words a slot) is larger than a chunk, and was written past its end."""
    run = rt_san.run("channels", "mesh", 10, env={"MPROF_SHM_RING": ring, "MPROF_PES": 4})
    assert "arrivals=120 expected=120" in run.stdout, run.describe()
    assert run.profile["settings"]["shm_ring"] == ring


def test_bad_ring_setting_is_reported(rt):
    run = rt.run("channels", "mesh", 10, env={"MPROF_SHM_RING": 3})
    assert "ignoring MPROF_SHM_RING=3" in run.stderr
    assert "arrivals=20 expected=20" in run.stdout


def test_sleeping_receiver_is_woken(rt):
    """PE 1 sleeps on its futex while PE 0 computes; each message must wake it at once.  The
    idle loop naps at most 50 ms, so a lost wake-up shows as latencies of tens of ms."""
    run = rt.run(
        "channels",
        "wake",
        25,
        timeout=60,
        env={"MPROF_WORKERS": 2, "MPROF_AGG_BYTES": 0, "MPROF_SPIN": 1},
    )
    median = float(run.stdout.split("latency_ms median=")[1].split()[0])
    assert median < 5.0, run.stdout
    # most rounds found PE 1 asleep (it has 20 ms to fall asleep) and PE 0 woke it
    assert run.pe_stats(0)["Wakes"] >= 20, run.pe_stats(0)["Wakes"]


@pytest.mark.sanitizer
@pytest.mark.parametrize("pes, workers", MESH_LAYOUTS, ids=lambda v: str(v))
def test_mesh_under_sanitizer(rt_san, pes, workers):
    run = rt_san.run(
        "channels",
        "mesh",
        20,
        timeout=240,
        env={"MPROF_PES": pes, "MPROF_WORKERS": workers, "MPROF_AGG_BYTES": 0},
    )
    assert f"arrivals={20 * pes * (pes - 1)} " in run.stdout


@pytest.mark.sanitizer
@pytest.mark.parametrize("workers", [4, 2], ids=["thread-per-pe", "multiplexed"])
def test_full_ring_under_sanitizer(rt_san, workers):
    run = rt_san.run(
        "channels",
        "flood",
        1000,
        timeout=240,
        env={"MPROF_WORKERS": workers, "MPROF_AGG_BYTES": 0, "MPROF_SHM_RING": 1},
    )
    assert "arrivals=3000 expected=3000" in run.stdout


@pytest.mark.sanitizer
def test_wake_under_sanitizer(rt_san):
    run = rt_san.run(
        "channels",
        "wake",
        5,
        timeout=60,
        env={"MPROF_WORKERS": 2, "MPROF_AGG_BYTES": 0, "MPROF_SPIN": 1},
    )
    assert "arrivals=5 expected=5" in run.stdout


MAXRSS = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


@pytest.mark.parametrize("workers", [None, 1024], ids=["default-workers", "thread-per-pe"])
def test_memory_at_1024_pes(cmake_build, workers, tmp_path):
    """1024 PEs each sending round-robin to 300 others (300 channels a PE with a thread per PE,
    both directions) stay far below 512 MB: channels are made on first use and small."""
    exe = cmake_build("build", targets=["rt_workload"]) / "benchmarks" / "micro" / "rt_workload"
    env = {
        "MPROF_AGG_BYTES": "0",
        "MPROF_OUT": str(tmp_path / "p.json"),
        "MPROF_STACK_KB": "256",
        "PATH": "/usr/bin:/bin",
    }
    if workers:
        env["MPROF_WORKERS"] = str(workers)
    out = subprocess.run(
        [sys.executable, "-c", MAXRSS, str(exe), "1024", "0", "200", "16", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    rc, maxrss_kb = map(int, out.stdout.split())
    assert rc == 0, out.stderr
    # (about 95 MB with the default workers and 290 MB with a thread per PE, of which 145 MB
    # are some 600 000 channels; P * P channels of 64 slots made up front would be 1.2 GB)
    assert maxrss_kb < 512 * 1024, f"{maxrss_kb / 1024:.0f} MB"
