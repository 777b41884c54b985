"""A stand-in benchmark: writes a synthetic run profile to $MPROF_OUT.

usage: fake_program.py NPES WORK FAIL [COUNT_FILE]
NPES "env" takes the PE count from MPROF_PES, as the runtime's mp_config_init does.
FAIL=1 exits with status 3 after printing to stderr; FAIL=2 writes a truncated profile;
FAIL=3 sleeps (for timeouts); FAIL=4 prints to stderr and dies of SIGSEGV; FAIL=5 leaves a FIFO
at MPROF_OUT; FAIL=6 prints one line of 3 MB to stderr and exits with status 3.  COUNT_FILE gets
one line per invocation.  With FAKE_NO_PARAMS=1 in the environment the profile records no
params (a program that does not call mp_param).
"""

import json
import os
import sys
import time

from mprof.bench.synth import make_profile

npes = int(os.environ["MPROF_PES"]) if sys.argv[1] == "env" else int(sys.argv[1])
work, fail = int(sys.argv[2]), int(sys.argv[3])
if len(sys.argv) > 4:
    with open(sys.argv[4], "a") as f:
        f.write(f"{npes} {work}\n")
if fail == 1:
    print("setting up\nfake_program: simulated crash", file=sys.stderr)
    sys.exit(3)
if fail == 3:
    time.sleep(30)
if fail == 4:
    import signal

    print("fake_program: about to crash\nfake_program: last words", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
if fail == 5:
    os.mkfifo(os.environ["MPROF_OUT"])
    sys.exit(0)
if fail == 6:
    print("x" * (3 << 20), file=sys.stderr)
    sys.exit(3)
agg = int(os.environ.get("MPROF_AGG_BYTES", "0"))
objects = [
    [("rts", {"P": 1, "ThreadAlloc": work, "MsgSent": work // 2, "ByteSent": agg})]
    for _ in range(npes)
]
doc = make_profile(
    "fake",
    objects,
    [0.001 * work + 0.01 * pe for pe in range(npes)],
    params={} if os.environ.get("FAKE_NO_PARAMS") == "1" else {"work": work},
    settings={"agg_bytes": agg},
    argv=sys.argv,
    hostname=f"host-{time.time_ns()}",
)
text = json.dumps(doc)
if fail == 2:
    text = text[: len(text) // 2]
with open(os.environ["MPROF_OUT"], "w") as f:
    f.write(text)
