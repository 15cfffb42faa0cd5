"""Framing: a chunk source's bytes cut into *runs* of complete records, with no value
decoded, and the stream's error contract kept.

Each chunk's records are only *skipped* by a ``msgpack.Unpacker``, most of them in batches of
one call each (a batch skipped as one array behind an array header), the last few noting where
each ends (``skip``/``tell`` pairs, collected by C code). msgpack keeps the error contract: a
record cut off at the end, bytes that are not MessagePack, nesting too deep, a record over
``max_record_size`` or a header that declares more (seen as soon as the header arrives,
:mod:`.wire`). A :class:`Run` holds a chunk's complete records: their bytes behind an array
header (so that one msgspec call decodes them all), their index and where each starts.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Iterator
from typing import Any

import msgpack

from .._base.errors import DecodeError, ReaderError, RecordTooLargeError, TruncatedStreamError
from .._base.log import logger
from .._base.options import ReadOptions
from .compression import CompressedDataError
from .pending import Pending, Reopened
from .sources import ChunkSource
from .wire import declared_excess, tail_may_claim_too_much

__all__ = ["HEAD_SIZE", "Framer", "Run", "run_header", "skipping", "too_large", "unpacker_options"]

Chunk = bytes | bytearray | memoryview

HEAD_SIZE = 64 * 1024
"""How much of an unfinished record is read for the sizes it declares."""
_RUN_HEADER = b"\xdd"  # array 32: the count of a run's records, before their bytes
_RUN_HEADER_SIZE = len(_RUN_HEADER) + 4
_second = operator.itemgetter(1)
_SMALL_BATCH = 16  # fewer records than this are left to skip one at a time


def unpacker_options(limit: int, read_size: int) -> dict[str, Any]:
    """Settings of the framing decoder, whose buffer never needs more than it holds.

    The buffer holds at most one unfinished record (at most ``limit``, or the reader has
    already failed) plus one chunk (at most ``read_size``), so ``feed`` never raises
    ``BufferFull``. Skipping decodes no value, so msgpack's per-value limits would not apply:
    :class:`Framer` checks sizes itself. The buffer starts at one chunk and grows only for a
    record longer than that (msgpack would start it at a mebibyte, made anew for every run).
    """
    return {"max_buffer_size": limit + read_size, "read_size": read_size}


class Run:
    """Consecutive complete records, as framed: their bytes, and where they start and end."""

    __slots__ = ("_ends", "count", "data", "end", "index", "start")

    def __init__(self, index: int, start: int, count: int, end: int, data: bytes) -> None:
        self.index = index
        """The first record's index in the stream."""
        self.start = start
        """Where the first record starts (a stream offset)."""
        self.count = count
        """How many records the run holds."""
        self.end = end
        """Where the last record ends."""
        self.data = data
        """An array header for the records' count, then the records' bytes."""
        self._ends: list[int] | None = None

    def __len__(self) -> int:
        return self.count

    def ends(self) -> list[int]:
        """Where each record ends. Framing counts records without noting each one's end: the
        ends are found again, only for a run that needs them (one with an error in it)."""
        if self._ends is None:
            data = memoryview(self.data)[_RUN_HEADER_SIZE:]
            self._ends = _record_ends(data, self.start, self.count)
        return self._ends

    def offset(self, position: int) -> int:
        """Where the run's record at ``position`` starts."""
        return self.ends()[position - 1] if position else self.start

    def where(self, position: int) -> tuple[int, int]:
        """The index and offset of the run's record at ``position``."""
        return self.index + position, self.offset(position)

    def record(self, position: int) -> memoryview:
        """The bytes of the run's record at ``position``."""
        base = self.start - _RUN_HEADER_SIZE
        return memoryview(self.data)[self.offset(position) - base : self.ends()[position] - base]

    def after(self, position: int) -> Run:
        """A run of the records from ``position`` on."""
        start = self.offset(position)
        records = self.data[_RUN_HEADER_SIZE + start - self.start :]
        count = self.count - position
        return Run(self.index + position, start, count, self.end, run_header(count) + records)

    def first(self, count: int) -> Run:
        """A run of the first ``count`` records."""
        end = self.offset(count)
        records = self.data[_RUN_HEADER_SIZE : _RUN_HEADER_SIZE + end - self.start]
        return Run(self.index, self.start, count, end, run_header(count) + records)


class Framer:
    """Frames the records of a chunk source into runs (see the module's docstring).

    Its state is where framing stands in the stream: what is kept between chunks, all of it
    reset together when a followed file is read again from its start (:meth:`reset`).
    """

    def __init__(
        self,
        chunks: ChunkSource,
        options: ReadOptions,
        *,
        origin: tuple[int, int] = (0, 0),
        until: int | None = None,
    ) -> None:
        self.chunks = chunks
        """The chunks framed."""
        self._limit = options.max_record_size
        # A stream read from the middle of a source (``Chunks(offset=...)``) starts at a known
        # record: ``origin`` is its index and offset, and the chunks count bytes from there.
        self._origin = origin
        # With ``until``, framing ends with the last record that starts before that offset (a
        # byte range's records): ``start`` is then where the chain of records crossed it, and
        # an error past it belongs to the next range.
        self._until = until
        self._options = unpacker_options(options.max_record_size, options.read_size)
        self.reset()

    def reset(self) -> None:
        """Frame afresh, from the origin (a followed file read again: offset 0)."""
        self._unpacker = msgpack.Unpacker(**self._options)
        self.index, self.start = self._origin  # the next record's index, and where it starts
        self._base = self.start  # the stream offset of the unpacker's first byte
        self._carry: list[Chunk] = []  # the bytes read from ``start`` on
        self._inspected = 0  # how many of the unfinished record's first bytes were read for sizes
        self._average = 0  # bytes per record of the latest run

    def runs(self) -> Iterator[Run | Pending]:
        """The complete records of the chunks, a run per chunk that completes any; a located
        ``ReaderError`` for a stream that breaks, after the run of every record before it. A
        :class:`~.sources.Pending` from the chunks is yielded as it is."""
        chunks = self.chunks
        chunk_iterator = iter(chunks)
        while True:
            try:
                chunk = next(chunk_iterator)
            except StopIteration:
                break
            except CompressedDataError as exc:
                # The source's bytes end or break between chunks: every record read so far was
                # framed; the one in progress, if any, starts where the last one ended.
                kind = TruncatedStreamError if exc.truncated else DecodeError
                raise kind(exc.reason, index=self.index, offset=self.start) from exc.__cause__
            if chunk.__class__ is Pending:
                yield chunk
                continue
            if chunk.__class__ is Reopened:
                _note_reopened(chunks, chunk.why, self._carry, self.index, self.start)
                self.reset()
                continue
            run, error = self._feed(chunk)
            if run is not None:
                until = self._until
                if until is not None and run.end >= until:
                    yield self._cut(run, until)
                    return
                yield run
            if error is not None:
                raise error
        if self.start != chunks.bytes_read and not chunks.stopped:
            self._check_declared()
            reason = (
                f"stream ends inside a record ({chunks.bytes_read - self.start} bytes of it, "
                "need more bytes)"
            )
            raise TruncatedStreamError(reason, index=self.index, offset=self.start)

    def _feed(self, chunk: Chunk) -> tuple[Run | None, ReaderError | None]:
        """The run of the records ``chunk`` completes, if it completes any, and the error that
        follows it, if the stream breaks there. A plain call, not a generator: this runs once a
        chunk, and framing state is updated before the run is handed on."""
        limit = self._limit
        read = self.chunks.bytes_read
        start = self.start
        # Most of the chunk's records are passed over in a few calls (_batches); the last few
        # one at a time, noting where each ends: the unpacker's position is a record's end only
        # after a skip that succeeds. The unpacker then starts afresh where the batches end.
        count, end, rest = 0, start, None
        if read - start <= 2 * len(chunk):  # not inside one large record
            count, end, rest = _batches([*self._carry, chunk], start, read, self._average)
        if rest is None:
            self._unpacker.feed(chunk)
        else:
            self._unpacker = msgpack.Unpacker(**self._options)
            self._unpacker.feed(rest)
            self._base = end
        unpacker = self._unpacker
        failure: Exception | None = None
        ends: list[int] = []
        try:
            ends.extend(skipping(unpacker.skip, unpacker.tell))
        except msgpack.OutOfData:
            pass
        except (msgpack.UnpackException, ValueError) as exc:
            failure = exc
        if ends:
            count += len(ends)
            end = self._base + ends[-1]
        if not count:
            self._carry.append(chunk)
            if failure is None:
                # No record finished in this chunk: a large record, or a hostile header. Its
                # headers are read each time its known beginning has doubled, up to HEAD_SIZE.
                have = min(read - start, HEAD_SIZE)
                if have > self._inspected and have >= min(2 * self._inspected, HEAD_SIZE):
                    self._check_declared()
                    self._inspected = have
                if read - start > limit:
                    # What its headers declare, as a read in other pieces finds it first.
                    self._check_declared()
                    raise too_large(
                        f"over max_record_size={limit} ({read - start} bytes read and the "
                        "record is not finished)",
                        self.index,
                        start,
                    )
                return None, None
            run = None
        else:
            cut = end - (read - len(chunk))
            data = b"".join([run_header(count), *self._carry, memoryview(chunk)[:cut]])
            run = Run(self.index, start, count, end, data)
            if end - start > limit:
                # Only then can a record of this run be over the limit.
                run_ends = run.ends()
                sizes = list(map(operator.sub, run_ends, [start, *run_ends[:-1]]))
                over = next((p for p, size in enumerate(sizes) if size > limit), None)
                if over is not None:
                    # Said as its headers declare it, as a read in smaller pieces refuses it
                    # before it ends: the same words however the bytes came.
                    head = bytes(run.record(over)[:HEAD_SIZE])
                    excess = declared_excess(head, limit) or f"{sizes[over]} bytes"
                    refused = too_large(
                        f"{excess}, over max_record_size={limit}",
                        self.index + over,
                        run.offset(over),
                    )
                    return (run.first(over) if over else None), refused
            self._average = (end - start) // count  # of the latest records: sizes may drift
            self.index += count
            self.start = end
            self._carry = [memoryview(chunk)[cut:]] if cut < len(chunk) else []
            self._inspected = 0
        if failure is not None:
            # A header before the failure that declares too much is the first thing wrong,
            # however the bytes were split into reads; headers after it are never looked at.
            claim = self._declared_too_much(self._base + unpacker.tell() - self.start)
            if claim is not None:
                return run, claim
            broken = _decode_error(failure, self.index, self.start)
            broken.__cause__ = failure
            return run, broken
        if tail_may_claim_too_much(chunk, read, self._base + unpacker.tell(), limit):
            # Confirmed the slow way, so that a lookalike inside a value costs a look at the
            # headers, never a false refusal; a true claim fails now, not after more reads.
            return run, self._declared_too_much()
        return run, None

    def _cut(self, run: Run, until: int) -> Run:
        """``run`` without its records that start at or after ``until``; framing then stands
        where the first of them starts (or where the run ends)."""
        starts = [run.start, *run.ends()[:-1]]
        keep = bisect.bisect_left(starts, until)
        self.index = run.index + keep
        self.start = starts[keep] if keep < run.count else run.end
        return run if keep == run.count else run.first(keep)

    def _check_declared(self) -> None:
        """Refuse the unfinished record at ``start`` if its first bytes' headers declare more
        than ``max_record_size``."""
        error = self._declared_too_much()
        if error is not None:
            raise error

    def _declared_too_much(self, size: int = HEAD_SIZE) -> RecordTooLargeError | None:
        """The refusal of the unfinished record at ``start`` if the headers in its first
        ``size`` bytes declare more than ``max_record_size``."""
        excess = declared_excess(_head(self._carry, min(size, HEAD_SIZE)), self._limit)
        if excess is None:
            return None
        return too_large(f"{excess}, over max_record_size={self._limit}", self.index, self.start)


def _record_ends(data: Chunk, start: int, count: int) -> list[int]:
    """Where each of the first ``count`` records of ``data`` ends; ``data`` starts at stream
    offset ``start`` with a record, and holds at least ``count`` complete ones."""
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    ends = skipping(unpacker.skip, unpacker.tell)
    return [start + end for end in itertools.islice(ends, count)]


def skipping(skip: Callable[[], None], tell: Callable[[], int]) -> Iterator[int]:
    """Where each record ends, as ``skip`` passes over it and ``tell`` says where it stopped:
    C code calls them in turn until ``skip`` raises (zip reuses its pair when the getter
    drops it, so a record costs one int object)."""
    return map(_second, zip(iter(skip, 1), iter(tell, -1), strict=False))


def _batches(pieces: list[Chunk], start: int, read: int, average: int) -> tuple[int, int, Any]:
    """Pass over most complete records of ``pieces`` (the bytes from the record at ``start``
    to ``read``) in a few C calls: each batch, as many records as three quarters of what is
    left holds at ``average`` bytes each (0: what the first few say), is skipped as one array
    of them, behind an array header: one call per batch, not one per record.

    Returns the records passed over, where the last ends, and the bytes from there on (``None``
    when no batch was passed over). A batch that does not end inside the bytes (records
    longer than the average) is halved; broken data stops the batches: the caller's skips, a
    record at a time, locate whatever is there.
    """
    if average and (read - start) * 3 // (4 * average) < _SMALL_BATCH:
        return 0, start, None  # a short read (a pipe's, a socket's): nothing worth a batch
    data = memoryview(pieces[0] if len(pieces) == 1 else b"".join(pieces))  # no copy of one
    if not average:  # the stream's first records: their size is what a few of them say
        probe = msgpack.Unpacker(max_buffer_size=len(data))
        probe.feed(data)
        try:
            for _ in range(_SMALL_BATCH):
                probe.skip()
        except (msgpack.UnpackException, ValueError):
            return 0, start, None
        average = max(probe.tell() // _SMALL_BATCH, 1)
    count = 0
    end = start
    batch = (read - end) * 3 // (4 * average)
    while batch >= _SMALL_BATCH:
        rest = data[end - start :]
        unpacker = msgpack.Unpacker(max_buffer_size=_RUN_HEADER_SIZE + len(rest))
        unpacker.feed(run_header(batch))
        unpacker.feed(rest)
        try:
            unpacker.skip()
        except msgpack.OutOfData:
            batch //= 2
            continue
        except (msgpack.UnpackException, ValueError):
            break
        count += batch
        end += unpacker.tell() - _RUN_HEADER_SIZE
        batch = (read - end) * 3 // (4 * average)
    return count, end, data[end - start :] if count else None


def run_header(count: int) -> bytes:
    """The array header a run's records are decoded behind, in one msgspec call."""
    return _RUN_HEADER + count.to_bytes(4, "big")


def _note_reopened(
    chunks: ChunkSource, why: str, carry: list[Chunk], index: int, start: int
) -> None:
    """Say that a followed file is read again from its start, and what of it is dropped."""
    dropped = sum(map(len, carry))
    lost = (
        f"; the unfinished record {index} at byte {start} ({dropped} bytes of it) is dropped"
        if dropped
        else ""
    )
    name = chunks.source or "the followed file"
    logger.warning("%s %s: reading it again from its start%s", name, why, lost)


def _head(pieces: list[Chunk], size: int) -> bytes:
    """Up to ``size`` bytes from the start of ``pieces``."""
    head = bytearray()
    for piece in pieces:
        head += piece[: size - len(head)]
        if len(head) >= size:
            break
    return bytes(head)


def _decode_error(exc: BaseException, index: int, offset: int) -> ReaderError:
    """Map what msgpack's framing raised to the documented error."""
    if isinstance(exc, msgpack.StackError):
        return DecodeError("nesting deeper than the decoder allows", index=index, offset=offset)
    if isinstance(exc, msgpack.FormatError):
        reason = "not valid MessagePack (a reserved byte such as 0xc1, never valid)"
        return DecodeError(reason, index=index, offset=offset)
    return DecodeError(
        f"not valid MessagePack ({type(exc).__name__}: {exc})", index=index, offset=offset
    )


def too_large(what: str, index: int, offset: int) -> RecordTooLargeError:
    reason = f"{what}; pass a larger max_record_size to read it"
    return RecordTooLargeError(reason, index=index, offset=offset)
