"""Output files that appear whole or not at all: written beside their final name and renamed
into place only when everything was written; a failure (an exception, ``KeyboardInterrupt``
included) leaves nothing under the final name and a file already there untouched.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, NoReturn

__all__ = ["NamedOutput", "replacing", "stop", "stopped"]

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
    """
    target = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(target))
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
            os.replace(temporary, target)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, target) from exc
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):  # stopped before it was made
                os.unlink(temporary)
        raise


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
