"""Benchmark processes and the signals that end a sweep.

Every point (and every probe) runs in a process group of its own: on a timeout the whole group
is killed, the program's children included, and after a normal exit whatever the program left
running in its group is killed too.  SIGTERM and SIGHUP of mprof itself become `Interrupted`
(SIGINT stays KeyboardInterrupt); the point running then has its group killed on the way out,
and the temporary folders are removed by their context managers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading


class Interrupted(BaseException):
    """mprof received SIGTERM or SIGHUP; `signum` says which."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_group(argv: list[str], *, cwd, env, timeout: float) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, text=True, timeout=timeout) in a new process
    group (session), which is killed whatever way the run ends."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    # The pipes are drained by threads and the program's own exit ends the point: a child it
    # left running may hold the pipes open, and is killed with the group below.
    chunks: dict[str, list[str]] = {"out": [], "err": []}
    readers = [threading.Thread(target=_drain, args=(stream, chunks[name]), daemon=True)
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=timeout)
    except BaseException:  # the timeout, or mprof interrupted
        _kill_group(proc)
        with contextlib.suppress(BaseException):
            proc.wait(timeout=10)
        raise
    finally:
        _kill_group(proc)  # what the program left behind in its group
        for reader in readers:
            reader.join(timeout=10)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(chunks["out"]),
                                       "".join(chunks["err"]))


def _drain(stream, into: list[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for block in iter(lambda: stream.read(65536), ""):
            into.append(block)
    with contextlib.suppress(OSError):
        stream.close()


@contextlib.contextmanager
def interruptible():
    """SIGTERM and SIGHUP raise Interrupted in the main thread while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(signum)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
