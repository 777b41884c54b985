"""A benchmark stand-in for the interruption tests.

usage: hanging_program.py MODE PIDFILE
MODE ok: writes a synthetic run profile to $MPROF_OUT at once.
MODE hang: starts a child (and a grandchild) that sleep, writes their pids to PIDFILE, and
sleeps itself; it never finishes.
MODE leave: writes a profile and exits, leaving a sleeping child behind (with its pid in
PIDFILE).
"""

import json
import os
import subprocess
import sys
import time

from mprof.bench.synth import make_profile

mode, pidfile = sys.argv[1], sys.argv[2]


def profile():
    doc = make_profile(
        "hang",
        [[("rts", {"P": 1, "MsgSent": 1})]],
        [0.01],
        params={"mode": mode},
        hostname=f"h-{time.time_ns()}",
    )
    with open(os.environ["MPROF_OUT"], "w") as f:
        json.dump(doc, f)


def children():
    # the child starts a grandchild of its own: both must die with the point.  The grandchild's
    # pid is renamed into place: `echo > FILE` creates FILE before it writes, and a reader
    # that saw it empty (on one CPU the shell may be preempted in between) lost a pid.
    child = subprocess.Popen(
        [
            "sh",
            "-c",
            'sleep 300 & echo $! > "$0.grand.tmp" && mv "$0.grand.tmp" "$0.grand"; exec sleep 300',
            pidfile,
        ]
    )
    while not os.path.exists(pidfile + ".grand"):
        time.sleep(0.01)
    with open(pidfile + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid} {open(pidfile + '.grand').read().strip()}\n")
    os.rename(pidfile + ".tmp", pidfile)


if mode == "ok":
    profile()
elif mode == "hang":
    children()
    time.sleep(300)
elif mode == "leave":
    profile()
    children()
