"""Writing files safely: every file mprof writes goes through `write_file`.

A regular file is written to a temporary file in the same folder, flushed to disk, and renamed
over the target, so that a full disk, a quota or an interruption leaves the old file (or none)
and never a cut-off one.  A target that exists and is not a regular file (a terminal, a pipe,
/dev/null, /dev/full) is written in place: renaming over a device would replace it.

Every failure is an MprofError naming the file ("cannot write F: No space left on device"),
and the temporary file is removed.

A command's output must not be one of its inputs: the files it reads (`read_bytes`, the
databases it opens) are noted with `note_input`, and `write_file` refuses to replace one, so
that `--html run.json` or `-o profiles.db` given by mistake loses nothing.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import sys
import tempfile
from pathlib import Path

from .errors import MprofError


# (device, inode) -> the path the command read it by: this process's input files
_inputs: dict[tuple[int, int], str] = {}


def note_input(path: str | Path) -> None:
    """Remember that this command reads the regular file `path` (write_file will not replace
    it); anything else (a missing file, a device, a pipe) is not an input to protect."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        _inputs.setdefault((st.st_dev, st.st_ino), str(path))


def forget_inputs() -> None:
    """A new command begins (mprof.cli.main): the last one's inputs are not this one's."""
    _inputs.clear()


def _refuse_input(st: os.stat_result, path: Path, label: str) -> None:
    source = _inputs.get((st.st_dev, st.st_ino))
    if source is not None:
        named = "" if source == str(path) else f", read as {source}"
        raise MprofError(
            f"cannot write {label}: it is an input of this command{named}; "
            "nothing was written (name another output file)"
        )


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_file(
    path: str | Path, data: str | bytes, *, what: str = "", make_parents: bool = True
) -> Path:
    """Write `data` (text is UTF-8) to `path` atomically; returns the path.  `what` names the
    file in error messages ("model", "report", ...)."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if "\0" in str(path):  # no file name holds one (os calls raise ValueError for it)
        raise MprofError(f"cannot write {ascii(str(path))}: a file name cannot hold NUL")
    path, st = _target(path, label)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(path, payload, label)
        return path
    folder = path.parent
    try:
        if make_parents:
            folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name[:64]}.", suffix=".tmp")
    except OSError as exc:
        raise MprofError(f"cannot write {label}: {_reason(exc)}") from None
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:  # a full disk, or Ctrl-C: no temporary file is left behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise MprofError(f"cannot write {label}: {_reason(exc)}") from None
        raise
    return path


def _target(path: Path, label: str) -> tuple[Path, os.stat_result | None]:
    """The file a write to `path` replaces (a link's target) and its state (None: new), or an
    MprofError when it must not be written: a folder, or an input of this command."""
    try:
        if path.is_symlink():  # the file it points to is replaced, not the link
            path = Path(os.path.realpath(path))
        st = os.stat(path)
    except FileNotFoundError:
        return path, None
    except OSError as exc:
        raise MprofError(f"cannot write {label}: {_reason(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise MprofError(f"cannot write {label}: is a directory")
    if stat.S_ISREG(st.st_mode):
        _refuse_input(st, path, label)
    return path, st


def write_files(files: list[tuple[str | Path, str | bytes]], *, what: str = "") -> None:
    """Several outputs of one command (generated sources, one file per table): every target is
    checked before any is written, so that one refused (an input of the command, a folder)
    leaves the others unwritten too; then each is written as write_file writes one."""
    for path, _ in files:
        _target(Path(path), f"{what} {path}" if what else str(path))
    for path, data in files:
        write_file(path, data, what=what)


def _write_in_place(path: Path, payload: bytes, label: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise MprofError(f"cannot write {label}: {_reason(exc)}") from None
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise MprofError(f"cannot write {label}: {_reason(exc)}") from None
    finally:
        os.close(fd)


def make_folder(path: str | Path, *, what: str = "") -> Path:
    """The folder `path`, made with its parents where missing; an MprofError naming it (and
    the file in the way, where one is) when it cannot be."""
    path = Path(path)
    label = f"the {what} {path}" if what else f"the folder {path}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise MprofError(
            f"cannot create {label}: a file of that name is in the way (name a folder)"
        ) from None
    except NotADirectoryError:
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        raise MprofError(
            f"cannot create {label}: {blocker or 'a part of the path'} is a file, not a folder"
        ) from None
    except OSError as exc:
        raise MprofError(f"cannot create {label}: {_reason(exc)}") from None
    return path


# Errors that writing standard output can meet; anything else is a bug and keeps its traceback.
WRITE_ERRNOS = {
    errno.ENOSPC,
    errno.EIO,
    errno.EDQUOT,
    errno.EFBIG,
    errno.EROFS,
    errno.EBADF,
    errno.EINVAL,
    errno.EACCES,
    errno.EPERM,
    errno.ENXIO,
}


def stdout_error(exc: OSError) -> str | None:
    """The message for an error writing standard output, or None when `exc` is not one."""
    if isinstance(exc, BrokenPipeError) or exc.errno not in WRITE_ERRNOS:
        return None
    if exc.filename is not None:
        return None
    return f"cannot write standard output: {_reason(exc)}"


class ClosedOutput(io.TextIOBase):
    """Standard output when the process was started without one (`mprof ... >&-`, where
    Python sets sys.stdout to None): writing fails as writing to a closed descriptor does, so
    a command whose output is its purpose says so (exit 2), and one that prints nothing
    runs."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass


def discard_stdout() -> None:
    """Point stdout at /dev/null so that Python's final flush has nothing left to fail on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        pass


# -- reading ------------------------------------------------------------------------------

DEFAULT_MAX_INPUT_MB = 512


def max_input_bytes() -> int:
    """The largest input file mprof reads: MPROF_MAX_INPUT_MB (default 512) mebibytes."""
    from .numbers import env_number

    mb = env_number("MPROF_MAX_INPUT_MB", DEFAULT_MAX_INPUT_MB, low=0, open_low=True, high=2**30)
    return int(mb * 2**20)


def read_bytes(path: str | Path, what: str = "file") -> bytes:
    """A file's bytes, at most max_input_bytes() of them: a larger file (or an endless one,
    /dev/zero) is an MprofError rather than a read until memory runs out."""
    limit = max_input_bytes()
    note_input(path)
    try:
        with open(path, "rb") as f:
            chunks, size = [], 0
            while size <= limit:
                chunk = f.read(min(1 << 24, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except OSError as exc:
        raise MprofError(f"{path}: cannot read {what}: {_reason(exc)}") from None
    if size > limit:
        raise MprofError(
            f"{path}: {what} is larger than {limit / 2**20:g} MiB "
            "(set MPROF_MAX_INPUT_MB to read larger files)"
        )
    return b"".join(chunks)
