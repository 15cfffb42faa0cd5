"""A file's byte ranges read by worker processes (:mod:`.ranges` says how one range is read
and how its start is proved): the ranges handed out a few at a time, each piece proved in file
order as it comes back, a wrong guess read again in this process; and a reader's view of it.

Worker processes are forked where that is safe (Linux, one thread), started by a fork server
where threads run, and by the platform's default elsewhere. A forked worker has every class
its reader has; one started afresh receives the record type as :mod:`.shipping` sends it (by
value where it cannot import it: a type defined in a notebook or a script). Arrow columns come
back through files in memory (``/dev/shm``), mapped rather than copied through a pipe.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import signal
import sys
import threading
import warnings
from collections import deque
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._base.checks import count_of, positive
from .._base.options import ReadOptions, refuse_follow
from .._stream.delivery import SkipLog
from .._types.decoding import record_decoder
from .._types.record_type import type_label
from .ranges import (
    ByteRange,
    FileSource,
    Piece,
    Proof,
    RangeArguments,
    RangeJob,
    RangeStats,
    cut_file,
    local_path,
    read_range,
    splittable,
)

if TYPE_CHECKING:
    from .._types.shipping import Shipped

__all__ = ["RangedRead", "Splitting", "read_ranges", "worker_count"]


@dataclasses.dataclass(frozen=True)
class Splitting:
    """How a file is read in byte ranges: by ``workers`` processes (``None``: not split, read
    in this process; ``0``: one per core), in ranges of about ``blocksize`` bytes (``None``:
    eight per process, 1 to 64 MiB each). Checked when made (``ValueError``), then handed down
    whole, as :class:`~msgpack_reader_py.ReadOptions` are; every entry point that reads a file
    on many processes takes ``workers`` and ``blocksize`` and makes one."""

    workers: int | None = None
    blocksize: int | None = None

    def __post_init__(self) -> None:
        count_of("workers", self.workers, allowed=(None,))
        positive("blocksize", self.blocksize, allowed=(None,))

    @property
    def processes(self) -> int:
        """How many processes ``workers`` asks for: ``None`` one, ``0`` one per core."""
        return 1 if self.workers is None else self.workers or os.cpu_count() or 1

    def applies(self, source: Any, record_type: Any, options: ReadOptions) -> bool:
        """Whether ``source`` is read in byte ranges: more than one process is asked for and
        the source can be split (:func:`~.ranges.splittable`). Anything else is read as one
        stream, in this process."""
        return self.processes > 1 and splittable(source, record_type, options) is None


def worker_count(workers: int | None) -> int:
    """How many processes ``workers`` asks for (:attr:`Splitting.processes`)."""
    return Splitting(workers).processes


def read_ranges(
    source: FileSource,
    record_type: Any,
    job: RangeJob,
    *,
    options: ReadOptions,
    splitting: Splitting,
    stats: RangeStats | None = None,
) -> Iterator[Piece]:
    """The pieces of ``source`` in file order, each proved (see the module's docstring): read
    by ``splitting``'s processes (one: in this one, a range at a time). Each piece's indexes
    count from the file's first record; a piece with an ``error`` is the last."""
    refuse_follow(options, "a read in ranges")
    record_decoder(record_type, ext_hook=options.ext_hook)  # a bad type fails here, once
    workers = splitting.processes
    ranges = cut_file(source, splitting.blocksize, workers, decompress=options.decompress)
    stats = stats if stats is not None else RangeStats()
    stats.ranges = len(ranges)
    arguments = (record_type, options, job)
    if workers == 1 or len(ranges) == 1:
        pieces = (read_range(source, r, *arguments) for r in ranges)
        return _proved(pieces, source, arguments, stats)
    return _parallel(ranges, source, arguments, workers, stats)


def _parallel(
    ranges: list[ByteRange],
    source: FileSource,
    arguments: RangeArguments,
    workers: int,
    stats: RangeStats,
) -> Iterator[Piece]:
    """The ranges read by ``workers`` processes, at most two each in hand, proved in order.

    A job that can hand its results over in files (``spooled``: Arrow columns, text) is given
    a directory of its own, in memory where the system has one with room (:func:`_spool_room`),
    removed when the read ends: a range's columns are then mapped, and its text copied out by
    the system, not sent through a pipe.
    """
    # Imported here: a command that reads on one process does not pay for them at start-up.
    import concurrent.futures
    import shutil
    import tempfile

    record_type, options, job = arguments
    spool = None
    executor = None
    try:
        # Held: a stop here would leave a spool, or a pool's queues and locks, to no one.
        with _signals_held():
            if hasattr(job, "spooled"):
                spool = tempfile.mkdtemp(prefix="msgpack-reader-", dir=_spool_room(ranges, workers))
                arguments = (record_type, options, job.spooled(spool))
            context = _context()
            forked = context.get_start_method() == "fork"
            if forked:
                _prepared(arguments)
            # Imported here: pickling machinery that a read in one process never needs.
            from .._types.shipping import Shipped

            shipped = Shipped(arguments, type_label(record_type), by_value=not forked)
            shipped.payload  # noqa: B018 - a type that cannot be sent fails here, in one line
            reading = _Reading(context, workers)
            executor = concurrent.futures.ProcessPoolExecutor(
                workers,
                mp_context=context,
                initializer=_worker_started,
                initargs=(reading.slots, reading.lock),
            )
        todo = iter(ranges)
        with warnings.catch_warnings():
            # The first submission starts the workers. Python 3.12 warns of fork() in any
            # process with more than one thread; _context forks only where no other Python
            # thread runs, and the native threads of numpy's OpenBLAS and pyarrow's jemalloc
            # (which every process that imports them has) are made safe by their own fork
            # handlers.
            warnings.filterwarnings("ignore", _FORK_WARNING, DeprecationWarning)
            with _starting(forked):
                pending = deque(
                    executor.submit(_read_in_worker, source, r, shipped)
                    for r in itertools.islice(todo, 2 * workers)
                )

        def died() -> ChildProcessError:
            # Not the data's fault: a worker killed (by a user, or for memory). Once the pool
            # is down, what the one that died was reading is known.
            executor.shutdown(wait=True, cancel_futures=True)
            return ChildProcessError(reading.died(ranges, source))

        def refused(byte_range: ByteRange) -> BaseException | None:
            """``byte_range`` submitted; the pool's refusal where it broke meanwhile."""
            try:
                with _starting(forked):  # a submission may start a worker again
                    pending.append(executor.submit(_read_in_worker, source, byte_range, shipped))
            except concurrent.futures.process.BrokenProcessPool as exc:
                return exc
            return None

        def results() -> Iterator[Piece]:
            broken = None  # raised once the ranges before it are out, as far as they were read
            while pending:
                try:
                    piece = pending.popleft().result()
                except concurrent.futures.process.BrokenProcessPool as exc:
                    raise died() from exc
                for byte_range in itertools.islice(todo, 0 if broken else 1):
                    broken = refused(byte_range)
                yield piece
            if broken is not None:
                raise died() from broken

        yield from _proved(results(), source, arguments, stats)
    finally:
        # Waited for: no worker may still be writing into the spool when it is removed, and
        # the pool's own thread is gone, so that a later read may fork (see _context).
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


_MEMORY = "/dev/shm"


def _spool_room(ranges: list[ByteRange], workers: int) -> str | None:
    """Where the workers leave what they made of their ranges: in memory (:data:`_MEMORY`)
    where it has room for all the ranges in hand at once (two per worker, each taken as four
    times its bytes: JSON text of small numbers is about three), else the system's temporary
    directory (``None``): a container's ``/dev/shm`` is often 64 MiB."""
    if not os.path.isdir(_MEMORY):
        return None
    widest = max(byte_range.end - byte_range.start for byte_range in ranges)
    room = os.statvfs(_MEMORY)
    return _MEMORY if room.f_bavail * room.f_frsize >= 4 * widest * 2 * workers else None


_FORK_WARNING = r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks"


class _Reading:
    """Which range each worker is reading, in memory the workers share: a worker that dies
    (killed, out of memory, a crash in native code) leaves its range there, and the reader
    names it. A worker the pool ends itself, once one has died, clears its own first
    (:func:`_ended`), so that only the range of the one that died is left."""

    def __init__(self, context: Any, workers: int) -> None:
        # slots[0]: the next worker's slot; slots[1 + i]: worker i's range number + 1, or 0.
        self.slots = context.RawArray("q", workers + 1)
        self.lock = context.Lock()

    def died(self, ranges: list[ByteRange], source: FileSource) -> str:
        """What to say of a worker that ended abruptly, once the pool is down."""
        numbers = sorted(number - 1 for number in self.slots[1:] if number > 0)
        if not numbers:
            return (
                "a worker process reading it in byte ranges ended abruptly (killed, or out of "
                "memory?): read it on fewer processes"
            )
        byte_range = ranges[numbers[0]]
        name = local_path(source) or str(source.full_name)
        return (
            f"a worker process reading bytes {byte_range.start} to {byte_range.end} of {name} "
            "ended abruptly (killed, or out of memory?): read it on fewer processes"
        )


_SLOTS: Any = None
"""In a worker: :class:`_Reading`'s shared slots."""
_SLOT = 0
"""In a worker: its own slot (0: none)."""


def _read_in_worker(source: FileSource, byte_range: ByteRange, shipped: Shipped) -> Piece:
    """A range read by a worker (:func:`read_range`), noted in its slot while it reads."""
    arguments = shipped.value  # before the slot: a type that cannot be made is no death
    if _SLOT:
        _SLOTS[_SLOT] = byte_range.number + 1
    try:
        return read_range(source, byte_range, *arguments)
    finally:
        if _SLOT:
            _SLOTS[_SLOT] = 0


def _ended(signum: int, _frame: Any) -> None:
    """A TERM in a worker: its slot cleared (the pool ends every worker once one has died,
    and only that one's range is the one to name), then the worker ended by the signal."""
    if _SLOT:
        _SLOTS[_SLOT] = 0
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _worker_started(slots: Any = None, lock: Any = None) -> None:
    """A worker process's set-up.

    - Its priority is below the reader's: where the reader has work of its own with what comes
      back (a Parquet file to write), the workers that feed it do not slow it down (measured
      on convert --jobs 2 to Parquet: a little faster at nice 5 than at 0, never slower).
    - Ctrl-C and a hang-up are the reader's to handle: it stops the pool, and no worker dies
      mid-range. They were held back while the worker started (:func:`_signals_held`): one
      that came meanwhile is dropped here, a TERM ends the worker now.
    - On Linux it ends with the reader, however that ends (SIGKILL too): the kernel sends it
      SIGTERM, so that no worker outlives the reader that started it.
    - It takes a slot of :class:`_Reading` (``slots``, ``lock``), where it notes the range it
      reads.
    """
    global _SLOTS, _SLOT
    if hasattr(os, "nice"):  # not on Windows
        os.nice(5)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if slots is not None:
        with lock:
            slot = 1 + slots[0]
            slots[0] += 1
        if slot < len(slots):
            _SLOTS, _SLOT = slots, slot
    # A TERM ends a worker: a handler forked from the reader's (the command line turns TERM
    # into an exception) would be caught by the pool's worker loop, and the worker would live.
    signal.signal(signal.SIGTERM, _ended)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
    if sys.platform == "linux":
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the reader ended before the request was made
            os._exit(1)


_PR_SET_PDEATHSIG = 1
_STOPPING = {
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
}


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, TERM and HUP held back while worker processes may start, then acted upon.

    A signal that reaches a worker between its fork and :func:`_worker_started` would end it
    with a traceback (a broken pool); one acted upon in the reader inside ``fork()`` is raised
    in an at-fork hook, where Python reports it as ignored and the reader goes on as if it had
    never come. So, in the main thread, the signals' handlers only note them while the block
    runs, and the first one noted is raised again as it ends, for the handler there was; and
    in this thread they are blocked, which a worker inherits (a fork server passes the mask
    on), until its set-up has decided what they do there.
    """
    noted: list[int] = []
    handlers: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {signum: signal.getsignal(signum) for signum in _STOPPING}
        for signum in handlers:
            signal.signal(signum, lambda signum, frame: noted.append(signum))
    blocked = None
    try:
        if hasattr(signal, "pthread_sigmask"):  # not on Windows
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        yield
    finally:
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for signum, handler in handlers.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if noted:
            signal.raise_signal(noted[0])


@contextmanager
def _starting(forked: bool) -> Iterator[None]:
    """Around a submission, which may start a worker: the stopping signals held
    (:func:`_signals_held`), and, for a worker started afresh, a ``__main__`` it cannot run
    hidden from it.

    A worker started afresh runs its reader's ``__main__.__file__`` again, as a script; read
    from standard input (``python -``) that is ``"<stdin>"``, and the worker would fail to
    find it and die. It needs nothing from there: what the reader defines in ``__main__``
    travels by value (:mod:`.shipping`). So a ``__file__`` that names no file is taken away
    while a worker may start, and put back."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    named = getattr(getattr(main, "__spec__", None), "name", None)
    hidden = not forked and isinstance(path, str) and named is None and not os.path.isfile(path)
    with _signals_held():
        if hidden:
            del main.__file__  # type: ignore[union-attr]
        try:
            yield
        finally:
            if hidden:
                main.__file__ = path  # type: ignore[union-attr]


def _prepared(arguments: RangeArguments) -> None:
    """The job's conversion run once, on no records, in this process: a worker forked after
    it starts with what that first run imports and caches, instead of paying for it again in
    every worker. (The first Arrow array built imports pandas, where it is installed: about
    0.2 s of CPU, which each worker of ``convert --jobs 2 --to parquet`` spent on its own.)"""
    record_type, options, job = arguments
    convert = job.plan(record_type, options).convert
    if convert is not None:
        convert([])
    prepare = getattr(job, "prepare", None)  # a job that writes: its writer, warmed
    if prepare is not None:
        prepare()


def _context() -> Any:
    """Fork where it is safe and cheap (Linux, one Python thread: a worker starts at once,
    with everything imported); on Linux with other Python threads running, a fork server (a
    lock another thread holds at the fork would be held forever in the child); the platform's
    default elsewhere."""
    import multiprocessing

    if sys.platform == "linux":
        safe = threading.active_count() == 1
        return multiprocessing.get_context("fork" if safe else "forkserver")
    return multiprocessing.get_context()


def _proved(
    pieces: Iterable[Piece],
    source: FileSource,
    arguments: RangeArguments,
    stats: RangeStats,
) -> Iterator[Piece]:
    """Each piece proved against the chain before it (:meth:`Proof.settle`), up to the first
    with an error."""
    proof = Proof()
    for guessed in pieces:
        piece, proof = proof.settle(guessed, source, arguments, stats)
        stats.slowest_guess = max(stats.slowest_guess, guessed.guess_seconds)
        yield piece
        if piece.error is not None:
            return


class RangedRead:
    """A split read as a reader reads it (:meth:`~.streaming_reader.ReaderBase.open_ranges`):
    what each proved piece made, in file order, its skipped records counted in ``skip``, its
    error raised after them; and the progress a reader tells of its source."""

    compression = None
    following = False

    def __init__(
        self,
        source: FileSource,
        record_type: Any,
        job: RangeJob,
        options: ReadOptions,
        *,
        splitting: Splitting,
        skip: SkipLog | None = None,
    ) -> None:
        self.name = local_path(source) or str(source.full_name)  # as errors name it
        self.bytes_read = 0
        self.index = 0  # the records of the pieces so far, skipped ones included
        self.stats = RangeStats()
        self._skip = skip
        self._job = job
        self._pieces = read_ranges(
            source,
            record_type,
            job,
            options=options,
            splitting=splitting,
            stats=self.stats,
        )

    @property
    def source_bytes_read(self) -> int:
        return self.bytes_read

    def batches(self) -> Generator[Any, None, None]:
        """What each piece made, in order (one item each); the first error, after the
        pieces before it."""
        skip = self._skip
        received = getattr(self._job, "received", None)
        for piece in self._pieces:
            if skip is not None:
                skip.count += piece.skipped
                skip.errors.extend(piece.errors[: skip.keep - len(skip.errors)])
            yield piece.value if received is None else received(piece.value)
            if piece.error is not None:
                # The pool goes down before the error reaches anyone, not when the garbage
                # collector finds the pieces: that may be in the pool's own thread, which
                # cannot wait for itself.
                self.close()
                raise piece.error
            assert piece.stop is not None
            self.bytes_read = piece.stop
            self.index += piece.count

    def stop(self) -> None:
        """Nothing to stop: a split read never follows."""

    def close(self) -> None:
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()
