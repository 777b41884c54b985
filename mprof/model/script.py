"""Modeling scripts: Tcl, run by the embedded interpreter of the standard library (tkinter.Tcl).

The paper's directives are Tcl commands implemented in Python.  Python exceptions cannot cross
Tcl with their message intact (tkinter turns them into an empty TclError), so each command is a
small Tcl proc around one dispatcher that returns {ok value} or {error message}; the proc raises
a real Tcl error.  The script is run with `source` so that Tcl knows each command's file and
line, also inside loop bodies and procs (`info frame`, TIP 280).

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

import re
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import MprofError
from .session import FitOutcome, FitSession

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


class ScriptError(MprofError):
    """An error at a place of a modeling script, reported as `file:line:column: message`."""

    def __init__(self, path: str, line: int | None, message: str, trace: str = ""):
        self.path, self.line, self.message, self.trace = path, line, message, trace
        self.column = _column(path, line, message) if line else None
        where = f"{path}:{line}" if line else path
        if self.column:
            where += f":{self.column}"
        super().__init__(f"{where}: {message}")


class ModelingScript:
    def __init__(self, path: str | Path, on_fit: Callable[[FitOutcome], None] | None = None,
                 warn: Callable[[str], None] | None = None, session: FitSession | None = None):
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
        self.tcl.createcommand("::mprof::dispatch", self._dispatch)
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
                "if {$status ne \"ok\"} {return -code error $value}\n"
                "return $value" % name
            )
            # The paper writes directives with a trailing colon (`FitDatabase: "x.db"`).
            for spelling in (name, name + ":"):
                self.tcl.call("proc", spelling, "args", body)
        # A misspelled directive: name the line and the closest directive.
        self.tcl.createcommand("::mprof::unknown", self._unknown)
        self.tcl.eval("rename unknown ::mprof::tcl_unknown")
        self.tcl.eval("proc unknown {name args} {\n"
                      "  lassign [::mprof::unknown $name [info frame -1]] status value\n"
                      "  if {$status ne \"ok\"} {return -code error $value}\n"
                      "  uplevel 1 [list ::mprof::tcl_unknown $name {*}$args]\n"
                      "}")

    # -- running ----------------------------------------------------------------------------

    def run(self) -> FitOutcome | None:
        import tkinter

        try:
            self.tcl.call("source", str(self.path))
        except tkinter.TclError as exc:
            info = str(self.tcl.eval("set ::errorInfo"))
            message = str(exc) or "error"
            if self._failed is not None and self._failed[0] == message:
                _, where, line = self._failed  # a directive (or a misspelled one) failed
            else:
                where, line = _locate(info, str(self.path))
            raise ScriptError(where, line, message, info) from None
        if self.fits == 0:  # no explicit Fit: fit once at the end
            try:
                self._do_fit()
            except ScriptError:
                raise
            except MprofError as exc:
                raise ScriptError(str(self.path), None, f"at end of script: {exc}") from None
            except Exception as exc:  # a bug: still no traceback for the user
                raise ScriptError(str(self.path), None, f"at end of script: internal error: "
                                  f"{type(exc).__name__}: {exc}") from None
        return self.session.last

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
        if name.startswith("::mprof::") or not name[:1].isupper():
            return ("ok", "")  # Tcl's own unknown handling (auto-loading, abbreviations)
        close = difflib.get_close_matches(name.rstrip(":"), list(self.commands), n=1)
        if not close:
            return ("ok", "")
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
        self.session.search_path.extend(self.session.resolve(a) for a in args)

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
        if spec.endswith("/") or self.session.resolve(spec).is_dir():
            raise MprofError(f"SaveModel: '{spec}' is a directory; name the model file, e.g. "
                             f"SaveModel {Path(spec) / 'model.json'}")
        folder = self.session.resolve(spec).parent
        if self.session.data_override is None and not folder.is_dir():
            # a mistyped folder is an error, not a folder made where nobody looks
            raise MprofError(f"SaveModel: the folder {folder} does not exist (create it, or "
                             "correct the path; paths are relative to the script)")
        self.session.save_model(spec)

    def _fit(self, args):
        self._arity("Fit", args, 0, 0, "")
        outcome = self._do_fit()
        r = outcome.result
        # Return a Tcl dict so scripts can compare fits in a loop.
        return ("chi_square", r.chi_square, "sample_mre", r.sample_mre,
                "test_mre", "" if r.test_mre is None else r.test_mre, "rank", r.rank)

    def _do_fit(self) -> FitOutcome:
        try:
            outcome = self.session.fit()
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
