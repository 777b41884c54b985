"""Modeling scripts run in a child process, so that a script that kills its interpreter does not
take mprof with it.

Tcl ends the process, not the script, on a few errors that a script can provoke: a value past
Tcl's 2 GB limit (`append s $s` in a loop) or memory it cannot get calls Tcl's panic, which
aborts.  In mprof's own process that is a bare SIGABRT with Tcl's one line and no word of which
script did it; in a child, mprof reports it as a failed script (exit 2), and a `mprof gate
--fit` does not lose the comparison it was making.

The child is forked, so it starts with everything the parent has loaded (nothing is pickled on
the way in).  Its standard output and error are pipes that the parent copies to its own
`sys.stdout` and `sys.stderr` as they arrive: the order of a script's `puts` and mprof's own
lines is kept, and a caller that replaced `sys.stdout` (a test, a program using mprof as a
library) still sees everything.  What the function returns, or the error it ends with, comes
back pickled through a third pipe.  Ctrl-C: the parent passes SIGINT on to the child, whose
script handles it as it would in one process (it ends with "file:line: interrupted").
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import sys
import traceback
from collections.abc import Callable
from typing import TypeVar

from ..errors import MprofError

T = TypeVar("T")
CHUNK = 1 << 16


class ScriptKilled(MprofError):
    """The child running a modeling script died from a signal."""


def run_isolated(script: str, fn: Callable[[], T]) -> T:
    """fn() in a forked child; its result, or its MprofError or KeyboardInterrupt raised here
    with the same message.  `script` names the modeling script in the message of a child that
    died."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or the child would write the parent's buffered text a second time
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(out_r)
        os.close(err_r)
        os.close(res_r)
        _child(fn, out_w, err_w, res_w)
    for fd in (out_w, err_w, res_w):
        os.close(fd)
    previous = _forward_sigint(pid)
    try:
        result = _relay(out_r, err_r, res_r)
    except BaseException:  # our own output failed (a closed pipe): the child goes too
        os.kill(pid, signal.SIGKILL)
        _wait(pid)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    status = _wait(pid)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        cause = (
            "Tcl gave up: its message is above (a value past Tcl's 2 GB limit, or "
            "memory it could not get)"
            if sig == signal.SIGABRT
            else "The system ended it (out of memory?)"
            if sig == signal.SIGKILL
            else "A crash in the interpreter"
        )
        raise ScriptKilled(
            f"{script}: the script's interpreter died ({name}). {cause}. "
            "Fits before that point were printed and saved (SaveModel)."
        )
    if result is None:  # exited without a word: only a bug of ours does that
        raise MprofError(
            f"{script}: the modeling script's process ended (exit status "
            f"{os.WEXITSTATUS(status)}) without a result"
        )
    kind, value = result
    if kind == "ok":
        return value
    if kind == "error":
        raise MprofError(value)
    if kind == "interrupt":
        from .script import ScriptInterrupted

        raise ScriptInterrupted(value)
    raise RuntimeError(f"modeling script process failed:\n{value}")


def _child(fn, out_w: int, err_w: int, res_w: int) -> None:
    """Run fn with standard output and error on the pipes, send the outcome, exit."""
    code = 0
    try:
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        # the parent's sys.stdout may be anything (a test's capture): the child's is fd 1,
        # the descriptor Tcl's `puts` writes to as well
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        try:
            outcome = ("ok", fn())
        except MprofError as exc:
            outcome = ("error", str(exc))
        except KeyboardInterrupt as exc:
            outcome = ("interrupt", str(exc))
        except BaseException:
            outcome = ("bug", traceback.format_exc())
        try:
            data = pickle.dumps(outcome)
        except Exception:
            data = pickle.dumps(("bug", traceback.format_exc()))
        sys.stdout.flush()
        sys.stderr.flush()
        with os.fdopen(res_w, "wb") as res:
            res.write(data)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _forward_sigint(pid: int):
    """SIGINT to the parent goes on to the child (from a terminal both get it: the script's
    handler takes a second one as the same request).  Returns the handler to restore, or None
    where this is not the main thread (signals are not ours there)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def forward(signum, frame):
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    return signal.signal(signal.SIGINT, forward)


def _relay(out_r: int, err_r: int, res_r: int):
    """Copy the child's output to ours until it closes every pipe; the unpickled outcome (None
    if the child sent none)."""
    sel = selectors.DefaultSelector()
    sinks = {out_r: sys.stdout, err_r: sys.stderr}
    decoders = {fd: _decoder() for fd in sinks}
    result = bytearray()
    for fd in (out_r, err_r, res_r):
        sel.register(fd, selectors.EVENT_READ)
    open_fds = 3
    while open_fds:
        for key, _ in sel.select():
            fd = key.fd
            try:
                data = os.read(fd, CHUNK)
            except InterruptedError:
                continue
            if not data:
                sel.unregister(fd)
                os.close(fd)
                open_fds -= 1
                if fd in sinks:
                    _write(sinks[fd], decoders[fd].decode(b"", final=True))
                continue
            if fd == res_r:
                result += data
            else:
                _write(sinks[fd], decoders[fd].decode(data))
    sel.close()
    return pickle.loads(bytes(result)) if result else None


def _decoder():
    import codecs

    return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _write(stream, text: str) -> None:
    if text:
        stream.write(text)
        stream.flush()


def _wait(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
