"""The command line: ``python -m msgpack_reader_py`` and ``msgpack-reader``.

Each command is a module of its own, its options beside its handler (``_read``, ``_count``,
``_convert`` with ``dump``, ``head`` and ``tail``, ``_index``, ``_inspect``, ``_schema``,
``_stats``, ``_generate``); what they share is in ``_common``.

A thin shell over the library: it parses arguments, runs one command, and turns every failure
into one ``error: ...`` line on stderr with a non-zero status (1 for data and I/O errors, 2 for
usage errors, 130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP). A closed stdout (``| head``) ends
the program quietly (141).
Messages name command-line flags, never the library's keywords.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from .._base.atomic import stop, stopped
from .._base.log import logger
from .._base.options import ReadOptions
from .._reference.generator import DEFAULT_SEED, get_iter, pack_items
from .._stream.follow import check_followable
from . import _convert as convert
from . import _count as count
from . import _generate as generate
from . import _index as index
from . import _inspect as inspect
from . import _read as read
from . import _schema as schema
from . import _stats as stats
from ._common import (
    DEFAULT_MESSAGES,
    EXIT_BROKEN_PIPE,
    EXIT_DATA_ERROR,
    EXIT_INTERRUPTED,
    EXIT_STATUSES,
    PROCESS,
    STDIO,
    Failure,
    Parser,
    paragraph,
    reading,
)
from ._read import summarise

__all__ = ["build_parser", "main", "program"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = Parser(
        prog="msgpack-reader",
        description=paragraph(
            "Stream typed records out of concatenated MessagePack: files, pipes and sockets "
            "full of records become checked Items, JSON Lines, CSV, Parquet or Arrow. With no "
            f"command, read the built-in {DEFAULT_MESSAGES}-record reference stream and print "
            "a summary (the main job)."
        ),
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .._base.version import VERSION as __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.set_defaults(run=_run_default)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)
    for module in (read, count, convert, index, inspect, schema, stats, generate):
        module.add(commands)
    return parser


def program() -> int:
    """Run the command line as the program does (``msgpack-reader``, ``python -m
    msgpack_reader_py``): on ``sys.argv``, in a process that is the command's alone and ends
    when it returns. Only then does it start pyarrow without numpy and pandas, which it
    never hands an array (60-100 ms of numpy's import, 0.3-0.4 s of pandas'), after which
    pyarrow's ``to_numpy()`` and ``to_pandas()`` must not be called in the process (the
    first refuses; the second crashes it). Call :func:`main` from a program of your own."""
    PROCESS.is_command = True
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    with _notes(), _terminable():
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            sources = getattr(args, "sources", [])
            if sources.count(STDIO) > 1:
                parser.error("stdin (-) can be read only once")
            if getattr(args, "follow", False):
                _check_followed(parser, sources)
            run: Callable[[argparse.Namespace], int] = args.run
            try:
                status = run(args)
            except (Failure, BrokenPipeError):
                if stopped() is None:
                    raise
                # What failed after a stop (a writer's clean-up the Ctrl-C cut short) is its
                # consequence: the stop is what the user hears of.
            lost = stopped()
            if lost is not None:
                raise lost  # lost in a finaliser, or followed by a failure: the command stops
            return status
        except Failure as exc:
            return _fail(str(exc), exc.status)
        except BrokenPipeError:
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        except KeyboardInterrupt:
            return _interrupted()
        except Terminated as exc:
            _interrupted()
            return 128 + exc.signum


def _check_followed(parser: argparse.ArgumentParser, sources: Sequence[str]) -> None:
    if len(sources) != 1 or STDIO in sources:
        parser.error(
            "--follow follows one file: give one SOURCE, a path (stdin needs no --follow: it "
            "is read until it ends)"
        )
    try:
        check_followable(sources[0])
    except ValueError as exc:
        parser.error(f"--follow: {exc}")


def _interrupted() -> int:
    """Ctrl-C: what was written is flushed, and the exit is quiet."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        _silence_stdout()  # a closed or broken stdout: the user asked to stop, quietly
    return EXIT_INTERRUPTED


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised where the program is, so that it unwinds as for Ctrl-C: an
    output file not finished is removed, worker processes are stopped. A ``BaseException``,
    as ``KeyboardInterrupt`` is: no ``except Exception`` stops it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        """The signal's number: the exit status is 128 plus it, as a shell reports it."""


@contextmanager
def _terminable() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` while a command runs, and Ctrl-C
    ``KeyboardInterrupt`` as always, each kept (:func:`~..atomic.stop`): one whose exception
    Python lost in a finaliser still stops the command before it puts an output file in place
    (:func:`main` raises it again). Only in the main thread, where a signal's handler can be
    set; a signal ignored when the command starts (``nohup``) stays ignored. A service
    manager, ``timeout`` or a stopped container sends TERM; a closed terminal or ssh session
    sends HUP: either way the command stops as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        stop(Terminated(signum))

    def interrupt(signum: int, frame: object) -> None:
        stop(KeyboardInterrupt())

    handlers = {signal.SIGINT: interrupt, signal.SIGTERM: terminate}
    if hasattr(signal, "SIGHUP"):
        handlers[signal.SIGHUP] = terminate
    previous = {
        signum: signal.signal(signum, handler)
        for signum, handler in handlers.items()
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    report = sys.unraisablehook

    def unraisable(lost: sys.UnraisableHookArgs) -> None:
        # A stop lost in a finaliser (an import's module lock, a __del__) is kept and acted
        # upon: Python's "Exception ignored" and its traceback would only alarm the user.
        if not (isinstance(lost.exc_value, (KeyboardInterrupt, Terminated)) and stopped()):
            report(lost)

    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = report
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        stopped(forget=True)


@contextmanager
def _notes() -> Iterator[None]:
    """The library's notes (a followed file read again from its start) as ``note: ...`` lines
    on stderr, while a command runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("note: %(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _fail(message: str, status: int = EXIT_DATA_ERROR) -> int:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    print(f"error: {message}", file=sys.stderr)
    return status


def _silence_stdout() -> None:
    # Python flushes stdout again at exit; point it at devnull so that flush cannot fail loudly.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _run_default(args: argparse.Namespace) -> int:
    data = pack_items(get_iter(DEFAULT_MESSAGES, DEFAULT_SEED))
    with reading("<built-in reference stream>", data, ReadOptions()) as reader:
        print(summarise(reader).line())
    return 0
