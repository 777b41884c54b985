"""Modeling scripts: Tcl, run by the embedded interpreter of the standard library (tkinter.Tcl).

The paper's directives are Tcl commands implemented in Python.  Python exceptions cannot cross
Tcl with their message intact (tkinter turns them into an empty TclError), so each command is a
small Tcl proc around one dispatcher that returns {ok value} or {error message}; the proc raises
a real Tcl error, and Tcl's errorInfo then carries the script file and line.  The script is run
with `source` so that errorInfo names the file.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import MprofError
from .session import FitOutcome, FitSession

_FILE_LINE = re.compile(r'\(file "(?P<file>[^"]+)" line (?P<line>\d+)\)')


class ScriptError(MprofError):
    def __init__(self, path: str, line: int | None, message: str, trace: str = ""):
        self.path, self.line, self.message, self.trace = path, line, message, trace
        where = f"{path}:{line}" if line else path
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
        self.tcl = tkinter.Tcl()
        self.tcl.createcommand("::mprof::dispatch", self._dispatch)
        self.commands = {
            "FitDatabase": self._fit_database,
            "TestDatabase": self._test_database,
            "Interface": self._interface,
            "InterfacePath": self._interface_path,
            "ImportParameter": self._import_parameter,
            "IgnoreTerm": self._ignore_term,
            "Granularity": self._granularity,
            "Measure": self._measure,
            "Normalize": self._normalize,
            "Cutoff": self._cutoff,
            "Select": self._select,
            "SaveModel": self._save_model,
            "Fit": self._fit,
        }
        for name in self.commands:
            body = (
                "lassign [::mprof::dispatch %s {*}$args] status value\n"
                "if {$status ne \"ok\"} {return -code error $value}\n"
                "return $value" % name
            )
            # The paper writes directives with a trailing colon (`FitDatabase: "x.db"`).
            for spelling in (name, name + ":"):
                self.tcl.call("proc", spelling, "args", body)

    # -- running ----------------------------------------------------------------------------

    def run(self) -> FitOutcome | None:
        import tkinter

        try:
            self.tcl.call("source", str(self.path))
        except tkinter.TclError as exc:
            info = str(self.tcl.eval("set ::errorInfo"))
            match = _FILE_LINE.search(info)
            line = int(match.group("line")) if match else None
            where = match.group("file") if match else str(self.path)
            if where == str(self.path):
                where = str(self.path)
            raise ScriptError(where, line, str(exc) or "error", info) from None
        if self.fits == 0:  # no explicit Fit: fit once at the end
            try:
                self._do_fit()
            except MprofError as exc:
                raise ScriptError(str(self.path), None, f"at end of script: {exc}") from None
            except Exception as exc:  # a bug: still no traceback for the user
                raise ScriptError(str(self.path), None, f"at end of script: internal error: "
                                  f"{type(exc).__name__}: {exc}") from None
        return self.session.last

    def _dispatch(self, name, *args):
        try:
            value = self.commands[name](list(args))
            return ("ok", "" if value is None else value)
        except MprofError as exc:
            return ("error", str(exc))
        except Exception as exc:  # a bug, still reported at the script line
            return ("error", f"internal error in {name}: {type(exc).__name__}: {exc}")

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

    def _ignore_term(self, args):
        self._arity("IgnoreTerm", args, 2, usage="Module Term ...")
        self.session.ignore_terms(args[0], args[1:])

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
        self.session.save_model(args[0])

    def _fit(self, args):
        self._arity("Fit", args, 0, 0, "")
        outcome = self._do_fit()
        r = outcome.result
        # Return a Tcl dict so scripts can compare fits in a loop.
        return ("chi_square", r.chi_square, "sample_mre", r.sample_mre,
                "test_mre", "" if r.test_mre is None else r.test_mre, "rank", r.rank)

    def _do_fit(self) -> FitOutcome:
        outcome = self.session.fit()
        self.fits += 1
        for text in outcome.warnings:
            self.warn(text)
        self.on_fit(outcome)
        return outcome
