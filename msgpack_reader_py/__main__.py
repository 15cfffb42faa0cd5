"""``python -m msgpack_reader_py`` and the ``msgpack-reader`` command: the command line
(:func:`msgpack_reader_py.cli.program`), started so that a Ctrl-C, TERM or HUP while it imports
ends it as quietly as one later does."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["main"]

_STOPPING = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]


def main() -> int:
    """Run the command line on ``sys.argv``; return its exit status.

    Importing the command line takes 0.1-0.4 s. A Ctrl-C, TERM or HUP in that time is only
    noted, not acted upon where it lands (inside an import, Python would print a traceback,
    or lose it in a module lock's callback and run the command all the same; TERM and HUP
    would end the program by the signal), and the program ends, having done nothing, with
    the status the command gives for it (130, 143, 129) once the import is done.
    """
    noted: list[int] = []
    with _noting(noted):
        from .cli import program as command
    if noted:
        return 128 + noted[0]
    status = command()
    # CPython keeps a flag once a KeyboardInterrupt has left code that exec() or eval() ran
    # from a string (a dataclass's methods, a namedtuple's: a Ctrl-C can land there), and a
    # program run by `python -m` then ends by SIGINT at exit, whatever status it returns. The
    # command has acted upon that Ctrl-C: running a string of nothing clears the flag.
    exec("")
    return status


@contextmanager
def _noting(noted: list[int]) -> Iterator[None]:
    """The stopping signals only noted in ``noted`` while the block runs, their handlers then
    given back. One ignored (started with nohup, or in the background) stays ignored; a
    handler can be set only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in _STOPPING}
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(signum, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


if __name__ == "__main__":
    raise SystemExit(main())
