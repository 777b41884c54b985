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
from pathlib import Path

from ..db.validate import load_profile
from ..errors import MprofError, bounded_message


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
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    # The pipes are drained by threads and the program's own exit ends the point: a child it
    # left running may hold the pipes open, and is killed with the group below.
    chunks: dict[str, list[str]] = {"out": [], "err": []}
    readers = [
        threading.Thread(target=_drain, args=(stream, chunks[name]), daemon=True)
        for name, stream in (("out", proc.stdout), ("err", proc.stderr))
    ]
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
    return subprocess.CompletedProcess(
        argv, proc.returncode, "".join(chunks["out"]), "".join(chunks["err"])
    )


# What of a program's output is kept: its last KEPT_CHARS characters per stream (the messages
# quote the last lines of stderr), so that a program printing gigabytes does not fill memory.
KEPT_CHARS = 1 << 20


def _drain(stream, into: list[str]) -> None:
    kept = 0
    with contextlib.suppress(OSError, ValueError):
        for block in iter(lambda: stream.read(65536), ""):
            into.append(block)
            kept += len(block)
            while kept - len(into[0]) >= KEPT_CHARS:
                kept -= len(into.pop(0))
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


LINE_LIMIT = 500  # characters of one quoted line of a program's stderr


def stderr_tail(text: str, lines: int) -> list[str]:
    """The last `lines` lines of a program's stderr, each at most LINE_LIMIT characters."""
    return [bounded_message(line, LINE_LIMIT) for line in text.rstrip().splitlines()[-lines:]]


def read_run_profile(out: Path) -> dict:
    """The profile a run wrote to MPROF_OUT (`out`, in a temporary folder); what is wrong with
    it is an MprofError that names it by the variable, as the temporary file is gone by the
    time the message is read."""
    if not out.exists():
        raise MprofError("the program wrote no run profile (is MPROF_OUT honoured?)")
    if not out.is_file():  # a FIFO would block the read for ever
        raise MprofError("the program left something other than a file at MPROF_OUT")
    try:
        return load_profile(out, schema_optional=True)
    except MprofError as exc:
        raise MprofError(f"bad run profile: {str(exc).replace(str(out), 'MPROF_OUT')}") from None


def exit_text(code: int) -> str:
    """How a program ended: `exit code 3`, or `killed by SIGSEGV (signal 11)`."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        else:
            name = f"{name} (signal {-code})"
        return f"killed by {name}"
    return f"exit code {code}"
