"""``python -m msgpack_reader_py`` and the ``msgpack-reader`` command: the command line
(:func:`msgpack_reader_py.cli.main`), started so that a Ctrl-C while it imports ends it as
quietly as one later does."""

from __future__ import annotations

import signal
import threading

__all__ = ["main"]


def main() -> int:
    """Run the command line on ``sys.argv``; return its exit status.

    Importing the command line takes 0.1-0.4 s. A Ctrl-C in that time is only noted, not
    raised where it lands (inside an import, Python would print its traceback, or lose it in
    a module lock's callback and run the command all the same), and the program ends with the
    status of an interrupted command (130) once the import is done, having done nothing.
    """
    noted: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    # Ignored (started in the background: nohup, &) it stays ignored; and a handler can be
    # set only in the main thread.
    if previous is signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        from .cli import main as command
    else:
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
        try:
            from .cli import main as command
        finally:
            signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        if noted:
            from .cli._common import EXIT_INTERRUPTED

            return EXIT_INTERRUPTED
    status = command()
    # CPython keeps a flag once a KeyboardInterrupt has left code that exec() or eval() ran
    # from a string (a dataclass's methods, a namedtuple's: a Ctrl-C can land there), and a
    # program run by `python -m` then ends by SIGINT at exit, whatever status it returns. The
    # command has acted upon that Ctrl-C: running a string of nothing clears the flag.
    exec("")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
