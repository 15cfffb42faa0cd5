"""Output files that appear whole or not at all: written beside their final name and renamed
into place only when everything was written; a failure (an exception, ``KeyboardInterrupt``
included) leaves nothing under the final name and a file already there untouched.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, NoReturn

__all__ = [
    "PART_PREFIX",
    "NamedOutput",
    "is_directory",
    "replacing",
    "replacing_parts",
    "stop",
    "stopped",
]

_STOPS: list[BaseException] = []


def stop(exc: BaseException) -> NoReturn:
    """Raise ``exc``, a stop a signal asked for (``KeyboardInterrupt``, the command line's
    SIGTERM), and keep it (:func:`stopped`): until it is forgotten, no :func:`replacing` block
    puts its file in place. A signal's handler runs wherever the program is, a finaliser
    included (a ``__del__``, a weakref callback); Python reports an exception raised there as
    ignored and goes on, and the program would finish and keep its output."""
    _STOPS.append(exc)
    raise exc


def stopped(*, forget: bool = False) -> BaseException | None:
    """The first stop :func:`stop` kept, whether it was raised or lost; ``None`` if none.
    ``forget``: none is kept afterwards (a program that has acted upon it)."""
    first = _STOPS[0] if _STOPS else None
    if forget:
        _STOPS.clear()
    return first


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[NamedOutput]:
    """A new binary file that replaces ``path`` when the block succeeds, and vanishes if it
    fails (an exception, ``KeyboardInterrupt`` included, leaves ``path`` as it was).

    It is written beside ``path`` under a temporary name and renamed into place at the end. An
    ``OSError`` from it names ``path``, never the temporary file the user has not heard of.
    A symbolic link is followed: the file it points to is replaced, the link kept. A ``path``
    that is no regular file (``/dev/null``, a named pipe, a terminal) is written as it is: a
    stream has nothing to put in place, and renaming a file onto it would replace the device.
    """
    target = os.fspath(path)
    real = os.path.realpath(target)
    if _is_stream(real):
        try:
            out = open(real, "wb")  # noqa: SIM115 - closed below, its failure named
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, target) from exc
        with out:
            yield NamedOutput(out, target)
        return
    directory, name = os.path.split(real)
    temporary = None
    try:  # from the file's creation on: a stop (SIGTERM) right after it must remove it too
        while True:
            # Named before it is made: a handler that raises right after the system call
            # (Python runs it there, before open's result is kept) leaves a name to remove.
            temporary = os.path.join(directory, f".{name}.{os.urandom(4).hex()}.part")
            try:
                handle = os.open(temporary, _FLAGS, 0o666)
                break
            except FileExistsError:  # pragma: no cover - 2**32 names: a collision is a fluke
                temporary = None  # another's file, never ours to remove
            except OSError as exc:
                temporary = None
                raise OSError(exc.errno, exc.strerror, target) from exc
        with os.fdopen(handle, "wb") as out:
            yield NamedOutput(out, target)
        kept = stopped()
        if kept is not None:
            raise kept  # raised in a finaliser, and lost there (see stop)
        try:
            os.replace(temporary, real)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, target) from exc
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):  # stopped before it was made
                os.unlink(temporary)
        raise


def _is_stream(path: str) -> bool:
    """Whether ``path`` is there and is no regular file (nor a directory): a device, a pipe,
    a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


PART_PREFIX = "part-"
"""How the files of a directory of parts begin: ``part-00000.parquet``, ``part-00001...``."""


def is_directory(destination: Any) -> bool:
    """Whether ``destination`` names a directory of parts: a path that ends with a separator,
    or an existing directory."""
    if not isinstance(destination, (str, os.PathLike)):
        return False
    path = os.fspath(destination)
    return path.endswith(("/", os.sep)) or os.path.isdir(path)


@contextmanager
def replacing_parts(path: str | os.PathLike[str], *, replace: bool = False) -> Iterator[str]:
    """A directory to write the parts of ``path`` in (a directory of ``part-*`` files): a new
    one beside it, hidden, whose ``part-*`` files are put in ``path`` when the block succeeds
    (``path`` made if it is not there), and which vanishes with everything in it if the block
    fails (an exception, ``KeyboardInterrupt``, a stop). A ``path`` that holds parts already
    is refused (``FileExistsError``) before anything is written, unless ``replace``: its parts
    are then removed as the new ones are put in place."""
    target = os.path.realpath(os.fspath(path))  # a link to a directory: the directory
    old = _parts_in(target) if os.path.isdir(target) else []
    if old and not replace:
        raise FileExistsError(
            errno.EEXIST,
            "the directory holds parts already (replace them, or choose another)",
            target,
        )
    if os.path.exists(target) and not os.path.isdir(target):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", target)
    parent, name = os.path.split(target)
    staging = os.path.join(parent, f".{name}.{os.urandom(4).hex()}.parts")
    made = False
    try:
        try:
            os.mkdir(staging)
            made = True
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, target) from exc
        yield staging
        kept = stopped()
        if kept is not None:
            raise kept  # raised in a finaliser, and lost there (see stop)
        if not os.path.isdir(target):
            os.rename(staging, target)  # the whole directory at once
            made = False
            return
        for stale in old:
            os.unlink(os.path.join(target, stale))
        for part in _parts_in(staging):
            os.replace(os.path.join(staging, part), os.path.join(target, part))
    except OSError as exc:
        if exc.filename is None or exc.filename == staging:
            exc.filename = target
        raise
    finally:
        if made:
            import shutil  # only where parts are written

            shutil.rmtree(staging, ignore_errors=True)


def _parts_in(directory: str) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith(PART_PREFIX))


# Mode 0666 so that the process's umask decides the new file's permissions, as for any new file
# (``tempfile.mkstemp`` would make it 0600); O_EXCL and a random name make it ours alone.
_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


class NamedOutput(io.RawIOBase):
    """A binary output whose ``OSError``s name it: a full disk is blamed on the output, not on
    the source being read."""

    def __init__(self, out: IO[bytes] | io.RawIOBase, name: str) -> None:
        super().__init__()
        self._out = out
        self._closing = False
        self.name = name

    def writable(self) -> bool:
        return True

    def write(self, data: Any, /) -> int:
        try:
            written = self._out.write(data)
        except OSError as exc:
            self._name(exc)
            raise
        return len(data) if written is None else written

    def write_from(self, file: IO[bytes]) -> None:
        """Write what ``file`` (an open file) holds from where it stands on: copied by the
        system (``sendfile``), never read into this process, where it can copy between the
        two (Linux: to a file, a pipe or a socket); else a mebibyte at a time."""
        try:
            self.flush()  # what was written before goes first
            at = file.tell()
            target = _descriptor(self._out)
            if target is not None and hasattr(os, "sendfile"):
                source, start = file.fileno(), at
                try:
                    while sent := os.sendfile(target, source, at, _COPIED):
                        at += sent
                    return
                except OSError as exc:
                    if exc.errno not in _NO_SENDFILE or at != start:
                        raise
            file.seek(at)
            while data := file.read(_COPIED):
                self._out.write(data)
        except OSError as exc:
            self._name(exc)
            raise

    def flush(self) -> None:
        if self._closing:
            return  # the wrapped stream is its owner's to flush and close
        try:
            self._out.flush()
        except OSError as exc:
            self._name(exc)
            raise

    def close(self) -> None:
        self._closing = True
        super().close()

    def _name(self, exc: OSError) -> None:
        if exc.filename is None:
            exc.filename = self.name


_COPIED = 1 << 20
# sendfile's refusals of a pair of files it does not copy between (macOS: a target that is no
# socket), before anything was copied: then read and written instead.
_NO_SENDFILE = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOTSOCK}


def _descriptor(out: Any) -> int | None:
    """The file descriptor under ``out``, or ``None``: an in-memory stream, a wrapper."""
    try:
        descriptor = out.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None
    return descriptor if isinstance(descriptor, int) else None
