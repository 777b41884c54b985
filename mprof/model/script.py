"""Modeling scripts: Tcl, run by the embedded interpreter of the standard library (tkinter.Tcl).

The paper's directives are Tcl commands implemented in Python.  Python exceptions cannot cross
Tcl with their message intact (tkinter turns them into an empty TclError), so each command is a
small Tcl proc around one dispatcher that returns {ok value} or {error message}; the proc raises
a real Tcl error.  The script is run with `source` so that Tcl knows each command's file and
line, also inside loop bodies and procs (`info frame`, TIP 280).

Safety: the script runs in a safe Tcl interpreter (`interp create -safe`), a child of the one
that holds mprof's commands.  It has pure Tcl (variables, expressions, lists, dicts, strings,
loops, procedures), `puts` to standard output and error, a `file` limited to path arithmetic
(join, split, tail, dirname, rootname, extension), `source` of files in the script's folder
(or below), the environment variables named MPROF_* in `::env`, and the directives; `exec`,
`open`, `socket`, `load`, `cd`, `glob`, `exit` and every other command that touches files,
processes or the network are not there, and calling one is an error at its line that names
`--unsafe-tcl`.  A modeling script may come from a repository under test (`mprof gate --fit`),
so it must not be able to run commands.  With `unsafe=True` (`--unsafe-tcl`) the script runs in
the full interpreter, as trusted code.

Where an error is reported:
  - a directive that fails: the line of that directive call (the proc passes its caller's
    `info frame` to the dispatcher), wherever it sits (loop body, if branch, proc);
  - a fit-time error about a directive (`IgnoreTerm: module 'pipe' has no term 'Pxx'`, found
    only when `Fit` or the end of the script fits): the line of that directive;
  - an unknown command (a misspelled directive): its line, with the closest directive name;
  - any other Tcl error: the innermost line errorInfo gives (file line plus the line within
    the loop or branch body).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import MprofError
from ..numbers import env_number
from .runset import RunSet
from .session import FitOutcome, FitSession, SaveFailed

_FILE_LINE = re.compile(r'\(file "(?P<file>[^"]+)" line (?P<line>\d+)\)')
# "(\"foreach\" body line 3)", "(\"if\" then script line 2)", "(\"dict for\" body line 1)"
_BODY_LINE = re.compile(r'\("[^"]+" (?:[a-z]+ )*(?:body|script|arm) line (?P<line>\d+)\)')
_PROC_LINE = re.compile(r'\(procedure "[^"]+" line \d+\)')
_QUOTED = re.compile(r"'([^']+)'")


def _locate(info: str, path: str) -> tuple[str, int | None]:
    """(file, line) of the innermost command of a Tcl errorInfo trace: the file line of the
    top-level command plus, going inwards, the line within each loop or branch body (exact when
    a body starts on its command's line, the usual layout).  Inside a procedure the call's line
    is kept (the body's own lines are relative to the procedure)."""
    where, line = path, None
    for text in reversed(info.splitlines()):  # outermost first
        text = text.strip()
        m = _FILE_LINE.search(text)
        if m:
            where, line = m.group("file"), int(m.group("line"))
            continue
        if line is None:
            continue
        if _PROC_LINE.search(text):
            break
        m = _BODY_LINE.search(text)
        if m:
            line += int(m.group("line")) - 1
    return where, line


_NAMED = re.compile(r'"([^"]+)"|\'([^\']+)\'')


def _column(path: str, line: int, message: str) -> int | None:
    """The 1-based column of the failing command on `line`: where a name the message quotes
    (`invalid command name "Fitt"`) stands on it, else the line's first non-blank character,
    which is where the command starts.  Tcl reports lines only."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return None
    for m in _NAMED.finditer(message):
        at = text.find(m.group(1) or m.group(2))
        if at >= 0:
            return at + 1
    return len(text) - len(text.lstrip()) + 1


class ScriptInterrupted(KeyboardInterrupt):
    """Ctrl-C while a modeling script ran: its message says where (mprof.cli prints it, exit
    130)."""


def _catch_sigint(handler):
    """Installs a SIGINT handler (main thread only: elsewhere signals are not ours), returning
    the previous one."""
    if threading.current_thread() is not threading.main_thread() or handler is None:
        return None
    return signal.signal(signal.SIGINT, handler)


def _nul_line(path) -> int | None:
    """The line of the first NUL byte of a script file (at most MPROF_MAX_INPUT_MB read), or
    None: an unreadable file is Tcl's to report."""
    from ..files import read_bytes

    try:
        data = read_bytes(path, "modeling script")
    except MprofError:
        return None
    at = data.find(b"\0")
    return data.count(b"\n", 0, at) + 1 if at >= 0 else None


class ScriptError(MprofError):
    """An error at a place of a modeling script, reported as `file:line:column: message`."""

    def __init__(self, path: str, line: int | None, message: str, trace: str = ""):
        self.path, self.line, self.message, self.trace = path, line, message, trace
        self.column = _column(path, line, message) if line else None
        where = f"{path}:{line}" if line else path
        if self.column:
            where += f":{self.column}"
        super().__init__(f"{where}: {message}")


SAFE_CHILD = "mprof_script"  # the interpreter that runs the script (safe, or full: unsafe)
# A script's run is limited in time (docs/fitting.md, "Time limit"): a child interpreter's time
# limit (`interp limit`) ends an endless loop with an error at its line.  The limit is armed
# TICK_S ahead and moved on from Python each time it is reached, so a running script returns
# to Python every TICK_S: that is where Ctrl-C (which Python sees only while Python code runs)
# and the overall limit are noticed.
TIME_LIMIT_ENV = "MPROF_FIT_TIME_LIMIT_S"
DEFAULT_TIME_LIMIT_S = 600.0
TICK_S = 0.1
# Commands that wait for time or events: refused, since a script's run is limited in time
WAITING = ("after", "vwait")
# `file` subcommands that only compute with path strings
PATH_SUBCOMMANDS = (
    "join",
    "split",
    "tail",
    "dirname",
    "rootname",
    "extension",
    "pathtype",
    "separator",
)


class ModelingScript:
    def __init__(
        self,
        path: str | Path,
        on_fit: Callable[[FitOutcome], None] | None = None,
        warn: Callable[[str], None] | None = None,
        session: FitSession | None = None,
        unsafe: bool = False,
    ):
        import tkinter

        self.path = Path(path)
        if not self.path.is_file():
            raise MprofError(f"{path}: no such modeling script")
        self.session = session or FitSession()
        self.session.base_dir = self.path.resolve().parent
        self.on_fit = on_fit or (lambda outcome: None)
        self.warn = warn or (lambda text: print(f"mprof fit: warning: {text}", file=sys.stderr))
        self.fits = 0
        self.calls: list[tuple[str, list, str, int | None]] = []  # directive, args, file, line
        self._failed: tuple[str, str, int | None] | None = None  # message, file, line
        self.tcl = tkinter.Tcl()
        self.unsafe = unsafe
        self.hidden: set[str] = set()
        self.tcl.createcommand("::mprof::dispatch", self._dispatch)
        self.tcl.createcommand("::mprof::unknown", self._unknown)
        self.time_limit = env_number(
            TIME_LIMIT_ENV, DEFAULT_TIME_LIMIT_S, low=0.0, open_low=True, high=1e7
        )
        self._stop: str | None = None  # why the running script is being stopped
        self._deadline = 0.0
        if unsafe:
            self._make_full_child()
        else:
            self._make_safe_child()
        for name in WAITING:  # through `unknown`, refused at their line (_unknown)
            self.tcl.call("interp", "hide", SAFE_CHILD, name)
            self.hidden.add(name)
        self.commands = {
            "FitDatabase": self._fit_database,
            "TestDatabase": self._test_database,
            "Interface": self._interface,
            "InterfacePath": self._interface_path,
            "ImportParameter": self._import_parameter,
            "IgnoreTerm": self._ignore_term,
            "FixParameter": self._fix_parameter,
            "Granularity": self._granularity,
            "Replicates": self._replicates,
            "Measure": self._measure,
            "Normalize": self._normalize,
            "Cutoff": self._cutoff,
            "Select": self._select,
            "SaveModel": self._save_model,
            "Fit": self._fit,
        }
        for name in self.commands:
            # [info frame -1]: where the directive was called (file and absolute line)
            body = (
                "lassign [::mprof::dispatch %s [info frame -1] {*}$args] status value\n"
                'if {$status ne "ok"} {return -code error $value}\n'
                "return $value" % name
            )
            # The paper writes directives with a trailing colon (`FitDatabase: "x.db"`).
            for spelling in (name, name + ":"):
                self._in_script(("proc", spelling, "args", body))
        # A misspelled directive: name the line and the closest directive.
        if unsafe:
            self._in_script("rename unknown ::mprof::tcl_unknown")
            fallback = "uplevel 1 [list ::mprof::tcl_unknown $name {*}$args]"
        else:  # a safe interpreter has no unknown handler of its own
            fallback = 'return -code error "invalid command name \\"$name\\""'
        # `break`, `continue` or `return -code ...` outside any loop or procedure ends the script
        # with an error whose trace names no line: each of them notes where it ran (a frame in
        # a script file), so that the last one can be named (_run)
        self._in_script(
            "proc ::mprof::escape {args} {\n"
            "  set f [info frame -2]\n"
            "  if {[dict get $f type] eq {source}} {\n"
            "    set ::mprof::escaped [list [dict get $f file] [dict get $f line]]\n"
            "  }\n"
            "}"
        )
        for name in ("break", "continue", "return"):
            self._in_script(("trace", "add", "execution", name, "enter", "::mprof::escape"))
        self._in_script(
            "proc unknown {name args} {\n"
            "  lassign [::mprof::unknown $name [info frame -1]] status value\n"
            '  if {$status ne "ok"} {return -code error $value}\n'
            f"  {fallback}\n"
            "}"
        )

    def _make_full_child(self) -> None:
        """--unsafe-tcl: the script runs in a full child interpreter (full Tcl), so that it has
        a time limit too (Tcl limits only child interpreters)."""
        child = SAFE_CHILD
        self.tcl.call("interp", "create", child)
        self.tcl.call("interp", "eval", child, "namespace eval ::mprof {}")
        for name in ("::mprof::dispatch", "::mprof::unknown"):
            self.tcl.call("interp", "alias", child, name, "", name)
        self._in_script = lambda script: self.tcl.call("interp", "eval", child, script)

    def _make_safe_child(self) -> None:
        child = SAFE_CHILD
        self.tcl.call("interp", "create", "-safe", child)
        self.hidden = {
            str(name)
            for name in self.tcl.splitlist(self.tcl.call("interp", "hidden", child))
            if ":" not in str(name)
        }
        for channel in ("stdout", "stderr"):
            self.tcl.call("interp", "share", "", channel, child)
        self.tcl.call("interp", "eval", child, "namespace eval ::mprof {}")
        for name in ("::mprof::dispatch", "::mprof::unknown"):
            self.tcl.call("interp", "alias", child, name, "", name)
        # `file` and `source` as procs of the safe interpreter that call back into Python with
        # the caller's frame (for the folder of relative paths) and turn a refusal into an error
        for name, impl, params, passed in (
            ("file", self._file, "args", "{*}$args"),
            ("source", self._source, "path", "$path"),
        ):
            self.tcl.createcommand(f"::mprof::{name}", impl)
            self.tcl.call("interp", "alias", child, f"::mprof::{name}", "", f"::mprof::{name}")
            self.tcl.call(
                "interp",
                "eval",
                child,
                (
                    f"proc {name} {{{params}}} {{\n"
                    f"  lassign [::mprof::{name} [info frame -1] {passed}] status value\n"
                    '  if {$status eq "ok"} {return $value}\n'
                    '  if {$status eq "error"} {return -code error $value}\n'
                    "  return -code $status $value\n"  # a sourced file's break, continue, ...
                    "}"
                ),
            )
        self.hidden.discard("source")
        self._in_script = lambda script: self.tcl.call("interp", "eval", child, script)
        # the environment, read-only and only mprof's own variables (MPROF_*): a script can
        # take its settings from them, but not read a CI job's credentials
        for key, value in os.environ.items():
            if key.startswith("MPROF_"):
                self._in_script(("set", f"::env({key})", value))

    def _source(self, frame, path):
        """`source FILE` in the safe interpreter: a regular file inside the folder of the
        script (relative paths from there), read by the child's hidden `source`."""
        from ..files import max_input_bytes, note_input

        where, line = self._frame(frame)
        folder = self.path.resolve().parent
        target = (folder / str(path)).resolve()
        if not target.is_relative_to(folder):
            message = (
                f"source: {path} is outside the script's folder {folder} (a modeling "
                "script may source only files beside it or below; --unsafe-tcl lifts "
                "this)"
            )
        elif not target.is_file():
            message = f"source: {path}: no such file in the script's folder"
        elif target.stat().st_size > max_input_bytes():
            message = f"source: {path} is larger than MPROF_MAX_INPUT_MB"
        elif nul := _nul_line(target):
            message = f"source: {path}: a NUL byte on line {nul}: a script is text"
        else:
            note_input(target)
            # caught in Tcl, not by tkinter, which takes a `break` for success: the file's
            # break, continue or other code goes on to the `source` command, as in Tcl
            code = int(
                self.tcl.call(
                    "catch",
                    ("interp", "invokehidden", SAFE_CHILD, "source", str(target)),
                    "::mprof_sourced",
                )
            )
            value = self.tcl.call("set", "::mprof_sourced")
            if code in (0, 2):  # a `return` at its top level ends the file, as in Tcl
                return ("ok", value)
            if code != 1:
                return (code, value)
            message = str(value) or "error"
            if self._failed is not None and self._failed[0] == message:
                return ("error", message)  # located already (a directive in that file)
            info = str(self.tcl.eval("set ::errorInfo"))
            where, line = _locate(info, str(target))
        self._failed = (message, where, line)
        return ("error", message)

    def _file(self, frame, *args):
        import tkinter

        if not args or str(args[0]) not in PATH_SUBCOMMANDS:
            what = f"file {args[0]}" if args else "file"
            message = (
                f"{what} is not available to modeling scripts (they run in a safe Tcl "
                "interpreter: file only joins and splits paths; mprof fit --unsafe-tcl "
                "runs a trusted script with full Tcl)"
            )
        else:
            try:
                return ("ok", self.tcl.call("file", *args))
            except tkinter.TclError as exc:
                message = str(exc)
        where, line = self._frame(frame)
        self._failed = (message, where, line)
        return ("error", message)

    # -- running ----------------------------------------------------------------------------

    def run(self) -> FitOutcome | None:
        try:
            return self._run()
        except ScriptInterrupted:
            raise
        except KeyboardInterrupt:  # Ctrl-C outside the Tcl evaluation (e.g. in the last fit)
            raise ScriptInterrupted(f"{self.path}: interrupted") from None
        finally:
            # a last `puts -nonewline` waits in Tcl's buffer, which a child process ending
            # with os._exit (mprof.model.isolate) would lose
            for channel in ("stdout", "stderr"):
                with contextlib.suppress(Exception):
                    self.tcl.call("flush", channel)

    def _run(self) -> FitOutcome | None:
        import tkinter

        from ..files import note_input

        note_input(self.path)  # SaveModel must not replace the script (nor a file it sources)
        nul = _nul_line(self.path)
        if nul:  # Tcl would stop there with the message "error"
            raise ScriptError(str(self.path), nul, "a NUL byte: a modeling script is text")
        try:
            with self._limited():
                if self.unsafe:
                    self._in_script(("source", str(self.path)))
                else:
                    self.tcl.call("interp", "invokehidden", SAFE_CHILD, "source", str(self.path))
        except tkinter.TclError as exc:
            info = str(self.tcl.eval("set ::errorInfo"))
            message = str(exc) or "error"
            if self._stop is not None:
                self._stopped(info)
            if self._failed is not None and self._failed[0] == message:
                _, where, line = self._failed  # a directive (or a misspelled one) failed
            else:
                where, line = _locate(info, str(self.path))
                if line is None:
                    where, line = self._escaped(where)
            raise ScriptError(where, line, message, info) from None
        if self.fits == 0:  # no explicit Fit: fit once at the end
            try:
                self._do_fit()
            except ScriptError:
                raise
            except MprofError as exc:
                raise ScriptError(str(self.path), None, f"at end of script: {exc}") from None
            except Exception as exc:  # a bug: still no traceback for the user
                raise ScriptError(
                    str(self.path),
                    None,
                    f"at end of script: internal error: {type(exc).__name__}: {exc}",
                ) from None
        return self.session.last

    def _escaped(self, where: str) -> tuple[str, int | None]:
        """Where the last `break`, `continue` or `return` in a script file ran: the command
        that ended the script when its error names no line (a `break` outside a loop)."""
        if not int(self._in_script(("info", "exists", "::mprof::escaped"))):
            return where, None
        file, line = self.tcl.splitlist(self._in_script(("set", "::mprof::escaped")))
        file = str(file)
        if Path(file) == self.path.resolve():
            file = str(self.path)  # as the user wrote it
        return file, int(str(line))

    @contextlib.contextmanager
    def _limited(self):
        """The script's evaluation under its time limit, with Ctrl-C seen (TICK_S)."""
        self._stop = None
        self._deadline = time.monotonic() + self.time_limit
        self.tcl.createcommand("::mprof::tick", self._tick)
        self._arm()
        self.tcl.call(
            "interp", "limit", SAFE_CHILD, "time", "-granularity", 1, "-command", "::mprof::tick"
        )
        previous = _catch_sigint(self._interrupt)
        try:
            yield
        finally:
            _catch_sigint(previous)
            # no limit once the script is done (a limit left exceeded refuses everything)
            self.tcl.call(
                "interp",
                "limit",
                SAFE_CHILD,
                "time",
                "-seconds",
                "",
                "-milliseconds",
                "",
                "-command",
                "",
            )

    def _arm(self) -> None:
        at = time.time() + TICK_S
        self.tcl.call(
            "interp",
            "limit",
            SAFE_CHILD,
            "time",
            "-seconds",
            int(at),
            "-milliseconds",
            min(int(at % 1 * 1000), 999),
        )

    def _tick(self, *_) -> None:
        """The limit was reached: move it on, unless the script is to stop (then Tcl ends it
        with "time limit exceeded" at the command running)."""
        try:
            if self._stop is None and time.monotonic() >= self._deadline:
                self._stop = "time"
            if self._stop is None:
                self._arm()
        except BaseException:  # Ctrl-C arriving here: the handler has set _stop
            self._stop = self._stop or "interrupt"

    def _interrupt(self, signum, frame) -> None:
        """SIGINT while the script runs: noted, and acted on at the next tick; raised at once
        when Python code (a directive, a fit) is running, as Ctrl-C always is."""
        self._stop = "interrupt"
        raise KeyboardInterrupt

    def _stopped(self, info: str) -> None:
        where, line = _locate(info, str(self.path))
        if self._stop == "interrupt":
            column = _column(where, line, "") if line else None
            place = ":".join(str(x) for x in (where, line, column) if x)
            raise ScriptInterrupted(f"{place}: interrupted") from None
        raise ScriptError(
            where,
            line,
            f"the script ran longer than its time limit of "
            f"{self.time_limit:g} s ({TIME_LIMIT_ENV}; an endless loop?)",
            info,
        )

    def _frame(self, frame) -> tuple[str, int | None]:
        """(file, line) from a Tcl `info frame` dictionary (line None when Tcl has none, e.g.
        for a command built at run time and eval'ed)."""
        items = self.tcl.splitlist(frame)
        info = {str(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)}
        if str(info.get("type", "")) != "source":
            return str(self.path), None
        try:
            line = int(str(info["line"]))
        except (KeyError, ValueError):
            return str(self.path), None
        where = str(info.get("file", self.path))
        if Path(where) == self.path.resolve():
            where = str(self.path)  # as the user wrote it
        return where, line

    def _unknown(self, name, frame):
        import difflib

        name = str(name)
        if name.lstrip(":") in WAITING:
            message = (
                f"{name.lstrip(':')} is not available to modeling scripts: a script "
                "cannot wait for time or events (its run is limited to "
                f"{self.time_limit:g} s, {TIME_LIMIT_ENV})"
            )
            where, line = self._frame(frame)
            self._failed = (message, where, line)
            return ("error", message)
        if name.lstrip(":") in self.hidden:
            message = (
                f"{name.lstrip(':')} is not available to modeling scripts (they run in a "
                "safe Tcl interpreter, with pure Tcl and the directives only; "
                "mprof fit --unsafe-tcl runs a trusted script with full Tcl)"
            )
            where, line = self._frame(frame)
            self._failed = (message, where, line)
            return ("error", message)
        if name.startswith("::mprof::") or not name[:1].isupper():
            return ("ok", "")  # Tcl's own unknown handling (auto-loading, abbreviations)
        close = difflib.get_close_matches(name.rstrip(":"), list(self.commands), n=1)
        if not close:
            return ("ok", "")
        if close[0] == name.lstrip(":"):  # the directive itself, renamed away by the script
            message = (
                f"unknown command '{name}': the script renamed or deleted the directive "
                f"{close[0]} (rename)"
            )
        else:
            message = f"unknown command '{name}' (did you mean {close[0]}?)"
        where, line = self._frame(frame)
        self._failed = (message, where, line)
        return ("error", message)

    def _directive_line(self, message: str) -> tuple[str, int | None] | None:
        """The call of the directive a fit-time error names (`IgnoreTerm: module 'pipe' has
        no term 'Pxx'`): of that directive's calls, the last one whose arguments hold most of
        the names the message quotes."""
        name = message.split(":", 1)[0]
        if name not in self.commands or ":" not in message:
            return None
        quoted = set(_QUOTED.findall(message))
        best, found = 0, None
        for directive, args, where, line in self.calls:
            shared = len(quoted & set(args))
            if directive == name and line is not None and shared and shared >= best:
                best, found = shared, (where, line)
        return found

    def _dispatch(self, name, frame, *args):
        where, line = self._frame(frame)
        self.calls.append((name, [str(a) for a in args], where, line))
        self._failed = None
        try:
            value = self.commands[name](list(args))
            return ("ok", "" if value is None else value)
        except ScriptError as exc:  # a fit-time error located at another directive
            message = exc.message
            self._failed = (message, exc.path, exc.line)
        except MprofError as exc:
            message = str(exc)
            self._failed = (message, where, line)
        except Exception as exc:  # a bug, still reported at the script line
            message = f"internal error in {name}: {type(exc).__name__}: {exc}"
            self._failed = (message, where, line)
        return ("error", message)

    # -- commands ---------------------------------------------------------------------------

    @staticmethod
    def _arity(name, args, low, high=None, usage=""):
        if len(args) < low or (high is not None and len(args) > high):
            raise MprofError(f"usage: {name} {usage}")

    def _fit_database(self, args):
        self._arity("FitDatabase", args, 1, usage="path.db ...")
        for path in args:
            self.session.add_database(path)

    def _test_database(self, args):
        self._arity("TestDatabase", args, 1, usage="path.db ...")
        for path in args:
            self.session.add_database(path, test=True)

    def _interface(self, args):
        self._arity("Interface", args, 1, usage="path.perf|module ...")
        return [self.session.load_interface(spec) for spec in args]

    def _interface_path(self, args):
        self._arity("InterfacePath", args, 1, usage="folder ...")
        folders = [self.session.resolve(a) for a in args]
        for arg, folder in zip(args, folders):
            if not folder.is_dir():  # a mistyped folder would only show as "no interface X"
                why = "is a file, not a folder" if folder.exists() else "does not exist"
                raise MprofError(f"InterfacePath: {arg} ({folder}) {why}")
        self.session.search_path.extend(folders)

    def _import_parameter(self, args):
        self._arity("ImportParameter", args, 3, usage="Module model.json Term ...")
        self.session.import_parameters(args[0], args[1], args[2:])

    def _fix_parameter(self, args):
        self._arity("FixParameter", args, 3, 3, "Module Term value")
        self.session.fix_parameter(args[0], args[1], str(args[2]))

    def _ignore_term(self, args):
        self._arity("IgnoreTerm", args, 2, usage="Module Term ...")
        self.session.ignore_terms(args[0], args[1:])

    def _replicates(self, args):
        self._arity("Replicates", args, 1, 1, "all|median|min")
        self.session.set_replicates(str(args[0]))

    def _granularity(self, args):
        self._arity("Granularity", args, 1, 1, "pe|run")
        self.session.set_granularity(args[0])

    def _measure(self, args):
        self._arity("Measure", args, 1, 1, "cpu|elapsed")
        self.session.set_measure(str(args[0]))

    def _normalize(self, args):
        self._arity("Normalize", args, 1, 1, "on|off")
        value = str(args[0]).lower()
        if value not in ("on", "off", "1", "0", "true", "false", "yes", "no"):
            raise MprofError(f"Normalize takes on or off, got '{args[0]}'")
        self.session.normalize = value in ("on", "1", "true", "yes")

    def _cutoff(self, args):
        self._arity("Cutoff", args, 1, 1, "relative-cutoff")
        self.session.set_cutoff(args[0])

    def _select(self, args):
        from ..db.store import Condition

        items = []
        for arg in args:  # `Select {a=1 b=2}` or `Select a=1 b=2`
            items.extend(self.tcl.splitlist(arg))
        self.session.select = [Condition.parse(str(item)) for item in items]

    def _save_model(self, args):
        self._arity("SaveModel", args, 1, 1, "path.json")
        spec = str(args[0])
        if "\0" in spec:  # Path.is_dir and the file system refuse it
            raise MprofError(f"SaveModel: {ascii(spec)}: a file name cannot hold NUL")
        if spec.endswith("/") or self.session.resolve(spec).is_dir():
            raise MprofError(
                f"SaveModel: '{spec}' is a directory; name the model file, e.g. "
                f"SaveModel {Path(spec) / 'model.json'}"
            )
        folder = self.session.resolve(spec).parent
        if self.session.runs is None and not folder.is_dir():
            # a mistyped folder is an error, not a folder made where nobody looks
            raise MprofError(
                f"SaveModel: the folder {folder} does not exist (create it, or "
                "correct the path; paths are relative to the script)"
            )
        # the file is written after each later fit: a failure then is this line's
        self.session.save_model(spec, origin=self.calls[-1][2:] if self.calls else None)

    def _fit(self, args):
        self._arity("Fit", args, 0, 0, "")
        outcome = self._do_fit()
        r = outcome.result
        # Return a Tcl dict so scripts can compare fits in a loop.
        return (
            "chi_square",
            r.chi_square,
            "sample_mre",
            r.sample_mre,
            "test_mre",
            "" if r.test_mre is None else r.test_mre,
            "rank",
            r.rank,
        )

    def _do_fit(self) -> FitOutcome:
        try:
            outcome = self.session.fit()
        except SaveFailed as exc:
            if not exc.origin or exc.origin[1] is None:
                raise
            raise ScriptError(
                exc.origin[0], exc.origin[1], f"SaveModel: {exc} (after the fit)"
            ) from None
        except MprofError as exc:
            located = self._directive_line(str(exc))
            if located is None:
                raise
            raise ScriptError(located[0], located[1], f"{exc} (found when fitting)") from None
        self.fits += 1
        for text in outcome.warnings:
            self.warn(text)
        self.on_fit(outcome)
        return outcome


def fit_script_on(
    path: str | Path, runs: RunSet, warn: Callable[[str], None] | None = None, unsafe: bool = False
) -> FitOutcome | None:
    """Run a modeling script on `runs` instead of its fit databases: its interfaces, imports,
    ignores, settings and `Select` apply, its test databases and SaveModel do not.  The last
    fit counts (None: the script made none).  How the gate fits each side with the script
    under test.  The script runs in a child process (mprof.model.isolate): a script that kills
    its interpreter fails the fit instead of the gate."""
    from .isolate import run_isolated

    def fit():
        session = FitSession(runs=runs)
        return ModelingScript(path, warn=warn, session=session, unsafe=unsafe).run()

    return run_isolated(str(path), fit)
