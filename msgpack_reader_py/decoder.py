"""The decoding loop: chunks of bytes in, typed records out, errors located exactly.

Two stages, each doing its work per chunk, not per record:

- **Framing** (:func:`runs`): each chunk's records are only *skipped* by a
  ``msgpack.Unpacker``, most of them in batches of one call each (a batch skipped as one array
  behind an array header), the last few noting where each ends (``skip``/``tell`` pairs,
  collected by C code). msgpack
  keeps the stream's error contract: a record cut off at the end, bytes that are not
  MessagePack, nesting too deep, a record over ``max_record_size`` or a header that declares
  more (seen as soon as the header arrives, :mod:`.wire`). It hands over *runs*: the bytes of
  a chunk's complete records, with where each starts.
- **Decoding** (:mod:`.engine`): each run's records are decoded, typed and validated by one
  msgspec call, then handed over with ``yield from``. Only a run that fails is decoded again
  record by record, to name the first bad record and its field path; its offset is known from
  the framing.

A plan may instead carry a :class:`BatchConverter` (the Arrow columns of :mod:`.arrow`): each
run's records, as tuples of field values, are then handed over as one converted object, and a
record the converter refuses is located like any other; or a ``mapper``, which receives each
record as decoded, with no type.
"""

from __future__ import annotations

import functools
import itertools
import logging
import operator
from collections.abc import Callable, Generator, Iterator
from typing import Any, Protocol, TypeVar

import msgpack

from . import sniff
from .engine import ExtHook, RecordFailure, record_decoder
from .errors import DecodeError, ReaderError, RecordError, RecordTooLargeError, TruncatedStreamError
from .wire import declared_excess

__all__ = [
    "FORCE",
    "KEPT_ERRORS",
    "READ_MORE",
    "BatchConverter",
    "Batches",
    "CompressedDataError",
    "Pending",
    "Plan",
    "Reopened",
    "Run",
    "RunDecoder",
    "records",
    "runs",
    "unpacker_options",
]

Chunk = bytes | bytearray | memoryview

_CONVERSION_ERRORS = (TypeError, ValueError, KeyError, IndexError)
_HEAD_SIZE = 64 * 1024  # how much of an unfinished record is read for the sizes it declares
_RUN_HEADER = b"\xdd"  # array 32: the count of a run's records, before their bytes
_RUN_HEADER_SIZE = len(_RUN_HEADER) + 4
_E = TypeVar("_E", bound=ReaderError)
_second = operator.itemgetter(1)
_SMALL_BATCH = 16  # fewer records than this are left to skip one at a time
_BUILT = 256
"""The most records built at once of a run's decoded values (``RunDecoder.build``). Python's
garbage collector scans its youngest objects each time 700 more were made than freed (its
default threshold): a run's records built at once, about 1170 on the reference data's
64 KiB reads, made it collect about 8 times per 10000 records, scanning the runs' records, at a
cost like that of decoding them. A few hundred at a time are handed over and, in a loop
that keeps none, freed before the count gets there."""

logger = logging.getLogger("msgpack_reader_py")
"""Notes that need no error: a followed file read again from its start."""


class ChunkSource(Protocol):
    """Where the loop gets its bytes: an iterable of chunks that counts what it has read.

    Besides chunks it may hand over a :class:`Pending` (nothing has arrived yet: the loop
    passes it up to the reader, which waits and goes on) or a :class:`Reopened` (a followed
    file starts again: the loop starts framing afresh).
    """

    bytes_read: int

    @property
    def stopped(self) -> bool:
        """Whether the reader was closed while following: the stream then ends where it is,
        an unfinished record with it, as the reader's user asked."""
        ...

    source: str | None
    """The name the reader's errors carry (a path, a stream's ``name``), if there is one."""
    head: bytearray
    """The stream's first bytes, to say what it looks like when its first record fails."""
    as_is: str
    """Why the stream is read without decompressing, should it look compressed."""

    def __iter__(self) -> Any: ...

    def close(self) -> None: ...


class Pending:
    """What a chunk source hands over when it has no chunk yet, and a reader's batches then
    hand up: an asynchronous reader waits (``delay`` seconds, or, for ``None``, for its source
    to give more bytes) and asks again. Synchronous sources never hand one over."""

    __slots__ = ("delay",)

    def __init__(self, delay: float | None) -> None:
        self.delay = delay


READ_MORE = Pending(None)
"""Nothing read yet: wait for the source."""


class Reopened:
    """A followed file was truncated or replaced and is read again from its start: ``why``."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


class CompressedDataError(Exception):
    """Raised by a chunk source for bad compressed data; the loop locates it as a
    ``TruncatedStreamError`` (``truncated``) or a ``DecodeError``."""

    def __init__(self, reason: str, *, truncated: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.truncated = truncated


class BatchConverter(Protocol):
    """Turns a whole batch of records (tuples of field values) into one object, in C."""

    refusals: tuple[type[Exception], ...]
    """What converting a batch raises when a record in it cannot be converted."""

    def __call__(self, values: list[Any], /) -> Any: ...

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:
        """The position of the first record it refuses and why; ``None`` if it takes each."""
        ...


def unpacker_options(limit: int, read_size: int) -> dict[str, Any]:
    """Settings of the framing decoder, whose buffer never needs more than it holds.

    The buffer holds at most one unfinished record (at most ``limit``, or the reader has
    already failed) plus one chunk (at most ``read_size``), so ``feed`` never raises
    ``BufferFull``. Skipping decodes no value, so msgpack's per-value limits would not apply:
    :func:`runs` checks sizes itself. The buffer starts at one chunk and grows only for a
    record longer than that (msgpack would start it at a mebibyte, made anew for every run).
    """
    return {"max_buffer_size": limit + read_size, "read_size": read_size}


class RunDecoder(Protocol):
    """Decodes runs of records in one call; a record at a time only to locate a failure."""

    build: Callable[[list[Any]], list[Any]] | None
    """Makes records of what ``decode_run`` returns, if that is not records yet."""

    def decode_run(self, data: Any, /) -> list[Any]: ...

    def decode_one(self, data: Any, /) -> Any: ...


class Plan:
    """How each run of records is decoded, and what is made of the decoded records.

    ``decoder`` replaces the record type's own (:func:`~.engine.record_decoder`): the
    untyped values of :mod:`.values`. With ``refuse_foreign``, a stream whose first bytes
    look like something other than MessagePack (JSON, text, Parquet, ...: :func:`.sniff.foreign`)
    is refused before its first record: read untyped, such bytes would pass for values."""

    def __init__(
        self,
        record_type: Any,
        *,
        mapper: Callable[[Any], Any] | None = None,
        convert: BatchConverter | None = None,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        decoder: RunDecoder | None = None,
        refuse_foreign: bool = False,
    ) -> None:
        self.mapper = mapper
        self.convert = convert
        self.refuse_foreign = refuse_foreign
        if decoder is not None:
            self.decoder: RunDecoder = decoder
            return
        self.decoder = record_decoder(
            Any if mapper is not None else record_type,
            ext_hook=ext_hook,
            forbid_unknown_keys=forbid_unknown_keys,
            values=convert is not None,
        )


class Batches:
    """A batch converter that converts nothing: each run's records handed over as one list,
    for consumers that take records a batch at a time (the text formats)."""

    refusals: tuple[type[Exception], ...] = ()

    def __call__(self, values: list[Any], /) -> list[Any]:
        return values

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:  # pragma: no cover
        return None  # refuses nothing: never asked


KEPT_ERRORS = 100
"""How many skipped records' errors are kept, in order."""


class SkipLog:
    """What ``on_error="skip"`` passed over: a count, and the first ``keep`` errors."""

    def __init__(self, keep: int = KEPT_ERRORS) -> None:
        self.count = 0
        self.errors: list[RecordError] = []
        self.keep = keep
        self.chunks: ChunkSource | None = None  # set by records(): errors kept name the source

    def add(self, error: RecordError) -> None:
        self.count += 1
        if len(self.errors) < self.keep:
            self.errors.append(error if self.chunks is None else _named(error, self.chunks))


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

    def first(self, count: int) -> Run:
        """A run of the first ``count`` records."""
        end = self.offset(count)
        records = self.data[_RUN_HEADER_SIZE : _RUN_HEADER_SIZE + end - self.start]
        return Run(self.index, self.start, count, end, _run_header(count) + records)


def _record_ends(data: Chunk, start: int, count: int) -> list[int]:
    """Where each of the first ``count`` records of ``data`` ends; ``data`` starts at stream
    offset ``start`` with a record, and holds at least ``count`` complete ones."""
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    ends = _skipping(unpacker.skip, unpacker.tell)
    return [start + end for end in itertools.islice(ends, count)]


def _skipping(skip: Callable[[], None], tell: Callable[[], int]) -> Iterator[int]:
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
        unpacker.feed(_run_header(batch))
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


def _run_header(count: int) -> bytes:
    """The array header a run's records are decoded behind, in one msgspec call."""
    return _RUN_HEADER + count.to_bytes(4, "big")


def records(
    chunks: ChunkSource,
    plan: Plan,
    limit: int,
    read_size: int,
    skip: SkipLog | None = None,
) -> Generator[list[Any] | Pending, None, None]:
    """Yield the records of ``chunks`` in lists, one or more per run (or the converter's
    objects, a list of one each); raise a located ``ReaderError`` for broken data, after the
    records before it. ``itertools.chain.from_iterable`` makes them one stream of records:
    then a record costs no generator step.

    With ``skip``, records that are valid MessagePack but not records of the type
    (``RecordError``) are passed over and logged there instead of raised. A :class:`Pending`
    from the chunks is yielded as it is.
    """
    decode_run = plan.decoder.decode_run
    build = plan.decoder.build
    refuse_foreign = plan.refuse_foreign
    if skip is not None:
        skip.chunks = chunks
    try:
        for run in runs(chunks, limit, read_size):
            if not isinstance(run, Run):
                yield run
                continue
            if refuse_foreign and run.index == 0:
                _refuse_foreign(chunks)
            try:
                values = decode_run(run.data)
            except RecordFailure:
                yield from _one_by_one(run, plan, skip, limit)
                continue
            if build is not None:
                yield from _built(build, values, run, plan, skip, limit)
            elif plan.convert is None and plan.mapper is None:
                yield values
            else:
                yield from _delivered(plan, values, functools.partial(_shifted, run, 0), skip)
            # Freed now, not when the next run's are assigned: one run's objects are alive at a
            # time, not two, and the next run's are made in the memory these free.
            del values
    except ReaderError as exc:
        # Where errors get the source's name (as above), and the first record's error a word
        # on what the stream looks like: nothing is paid for it per record.
        named = _named(exc, chunks)
        if named is exc:
            raise
        raise named.with_traceback(exc.__traceback__) from exc.__cause__
    finally:
        chunks.close()


def runs(chunks: ChunkSource, limit: int, read_size: int) -> Iterator[Run | Pending]:
    """The complete records of ``chunks``, a run per chunk that completes any; a located
    ``ReaderError`` for a stream that breaks, after the run of every record before it.
    A :class:`Pending` from the chunks is yielded as it is."""
    options = unpacker_options(limit, read_size)
    unpacker = msgpack.Unpacker(**options)
    base = 0  # the stream offset of the unpacker's first byte
    index = 0  # records framed so far
    start = 0  # where the next record starts
    carry: list[Chunk] = []  # the bytes read from ``start`` on
    inspected = 0  # how many of the unfinished record's first bytes were read for sizes
    average = 0  # bytes per record of the latest run
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
            raise kind(exc.reason, index=index, offset=start) from exc.__cause__
        if chunk.__class__ is Pending:
            yield chunk
            continue
        if chunk.__class__ is Reopened:
            _note_reopened(chunks, chunk.why, carry, index, start)
            unpacker = msgpack.Unpacker(**options)
            base = index = start = inspected = average = 0
            carry = []
            continue
        read = chunks.bytes_read
        # Most of the chunk's records are passed over in a few calls (_batches); the last few
        # one at a time, noting where each ends: the unpacker's position is a record's end only
        # after a skip that succeeds. The unpacker then starts afresh where the batches end.
        count, end, rest = 0, start, None
        if read - start <= 2 * len(chunk):  # not inside one large record
            count, end, rest = _batches([*carry, chunk], start, read, average)
        if rest is None:
            unpacker.feed(chunk)
        else:
            unpacker = msgpack.Unpacker(**options)
            unpacker.feed(rest)
            base = end
        failure: Exception | None = None
        ends: list[int] = []
        try:
            ends.extend(_skipping(unpacker.skip, unpacker.tell))
        except msgpack.OutOfData:
            pass
        except (msgpack.UnpackException, ValueError) as exc:
            failure = exc
        if ends:
            count += len(ends)
            end = base + ends[-1]
        if not count:
            carry.append(chunk)
            if failure is None:
                # No record finished in this chunk: a large record, or a hostile header. Its
                # headers are read each time its known beginning has doubled, up to _HEAD_SIZE.
                have = min(read - start, _HEAD_SIZE)
                if have > inspected and have >= min(2 * inspected, _HEAD_SIZE):
                    _check_declared(carry, start, limit, index)
                    inspected = have
                if read - start > limit:
                    raise _too_large(
                        f"over max_record_size={limit} ({read - start} bytes read and the "
                        "record is not finished)",
                        index,
                        start,
                    )
                continue
        else:
            cut = end - (read - len(chunk))
            data = b"".join([_run_header(count), *carry, memoryview(chunk)[:cut]])
            run = Run(index, start, count, end, data)
            if end - start > limit:
                # Only then can a record of this run be over the limit.
                ends = run.ends()
                sizes = list(map(operator.sub, ends, [start, *ends[:-1]]))
                over = next((p for p, size in enumerate(sizes) if size > limit), None)
                if over is not None:
                    if over:
                        yield run.first(over)
                    raise _too_large(
                        f"{sizes[over]} bytes, over max_record_size={limit}",
                        index + over,
                        run.offset(over),
                    )
            yield run
            average = (end - start) // count  # of the latest records: sizes may drift
            index += count
            start = end
            carry = [memoryview(chunk)[cut:]] if cut < len(chunk) else []
            inspected = 0
        if failure is not None:
            # A header before the failure that declares too much is the first thing wrong,
            # however the bytes were split into reads; headers after it are never looked at.
            _check_declared(carry, start, limit, index, base + unpacker.tell() - start)
            raise _decode_error(failure, index, start) from failure
        if _tail_may_claim_too_much(chunk, read, base + unpacker.tell(), limit):
            # Confirmed the slow way, so that a lookalike inside a value costs a look at the
            # headers, never a false refusal; a true claim fails now, not after more reads.
            _check_declared(carry, start, limit, index)
    if start != chunks.bytes_read and not chunks.stopped:
        _check_declared(carry, start, limit, index)
        reason = (
            f"stream ends inside a record ({chunks.bytes_read - start} bytes of it, need more "
            "bytes)"
        )
        raise TruncatedStreamError(reason, index=index, offset=start)


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


def _shifted(run: Run, first: int, position: int) -> tuple[int, int]:
    return run.where(first + position)


def _built(
    build: Callable[[list[Any]], list[Any]],
    values: list[Any],
    run: Run,
    plan: Plan,
    skip: SkipLog | None,
    limit: int,
) -> Generator[list[Any], None, None]:
    """The records built of a run's decoded ``values``, at most ``_BUILT`` at a time; from a
    slice the record type refuses, the run's records one by one."""
    for at in range(0, len(values), _BUILT):
        try:
            # Not kept in a local: the records handed over before are freed as they are taken.
            yield build(values[at : at + _BUILT])
        except RecordFailure:  # noqa: PERF203 - one try per 256 records
            yield from _one_by_one(run, plan, skip, limit, at)
            return


def _one_by_one(
    run: Run, plan: Plan, skip: SkipLog | None, limit: int, first: int = 0
) -> Generator[list[Any], None, None]:
    """A run with a bad record: decoded record by record from position ``first`` on, so that
    the first bad one is named with its field path, after the records before it were handed
    over (or, with ``skip``, logged and passed over, the rest handed over)."""
    decode_one = plan.decoder.decode_one
    good: list[Any] = []
    # ``first`` is the position of good[0] in the run from here on
    for position in range(first, len(run)):
        try:
            good.append(decode_one(run.record(position)))
            continue
        except RecordFailure as failure:
            index, offset = run.where(position)
            error: ReaderError = (RecordError if failure.decodable else DecodeError)(
                failure.reason, index=index, offset=offset
            )
            if not failure.decodable:
                # msgpack's skip takes a length it overflows (ext32 0xffffffff) for a whole
                # value: what the record declares says what is really wrong.
                excess = declared_excess(run.record(position)[:_HEAD_SIZE], limit)
                if excess is not None:
                    error = _too_large(f"{excess}, over max_record_size={limit}", index, offset)
            cause = failure.__cause__
        yield from _delivered(plan, good, functools.partial(_shifted, run, first), skip)
        if skip is None or not isinstance(error, RecordError):
            raise error from cause
        skip.add(error)
        good = []
        first = position + 1
    yield from _delivered(plan, good, functools.partial(_shifted, run, first), skip)


def _delivered(
    plan: Plan,
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[list[Any], None, None]:
    """What the plan makes of decoded records, in lists: the records themselves, the
    converter's batches, or the mapper's results. A record the converter or mapper refuses is
    located (``where(position)`` is its index and offset) and raised, or, with ``skip``,
    logged."""
    if not values:
        return
    if plan.convert is not None:
        yield from _converted(plan.convert, values, where, skip)
    elif plan.mapper is not None:
        yield from _mapped(plan.mapper, values, where, skip)
    else:
        yield values


def _mapped(
    mapper: Callable[[Any], Any],
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[list[Any], None, None]:
    mapped: list[Any] = []
    pending = iter(values)
    failure: Exception | None = None
    while failure is None:
        try:
            mapped.extend(map(mapper, pending))
            break
        except _CONVERSION_ERRORS as exc:
            position = len(values) - operator.length_hint(pending) - 1
            name = getattr(mapper, "__qualname__", "the mapper")
            reason = f"cannot build a record with {name}: {type(exc).__name__}: {exc}"
            index, offset = where(position)
            error = RecordError(reason, index=index, offset=offset)
            error.__cause__ = exc
            if skip is None:
                failure = error
            else:
                skip.add(error)  # and go on with the rest of the batch
        except Exception as exc:  # noqa: BLE001 - raised below, after the records before it
            failure = exc  # a bug of the mapper's own, not bad data: raised as it is
    # The records mapped before a failure are handed over before it is raised.
    if mapped:
        yield mapped
    if failure is not None:
        raise failure


FORCE = "force=True"
"""How a refusal of foreign-looking input names the option that reads it anyway."""


def _refuse_foreign(chunks: ChunkSource) -> None:
    """Refuse a stream whose first bytes look like something other than MessagePack."""
    hint = sniff.foreign(chunks.head, chunks.as_is)
    if hint is not None:
        reason = (
            f"{hint}; read untyped, its bytes would pass for small integers and other values, "
            f"so it is refused ({FORCE} reads it anyway)"
        )
        raise DecodeError(reason, index=0, offset=0)


def _named(error: _E, chunks: ChunkSource) -> _E:
    """``error`` naming the source, and, for the stream's first record, what the stream looks
    like when that is not MessagePack; ``error`` itself when there is nothing to add."""
    hint = sniff.foreign(chunks.head, chunks.as_is) if error.index == 0 else None
    if hint is not None and error.reason.startswith(hint):
        hint = None  # the refusal of foreign input, which says it already
    if hint is None and (chunks.source is None or error.source is not None):
        return error
    reason = error.reason if hint is None else f"{error.reason}; {hint}"
    source = error.source or chunks.source
    return type(error)(reason, index=error.index, offset=error.offset, source=source)


def _converted(
    convert: BatchConverter,
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[list[Any], None, None]:
    """``values`` converted in as few calls as the converter allows. A record it refuses is
    located (``where(position)`` is its index and offset) and raised after the records before
    it were converted, or, with ``skip``, logged and passed over."""
    start = 0
    while start < len(values):
        rest = values if start == 0 else values[start:]
        try:
            converted = convert(rest)
        except convert.refusals as exc:
            found = convert.first_refused(rest)
            if found is None:  # pragma: no cover - a converter that refuses a batch of records
                raise  # it takes one by one has a bug of its own: let its exception show it
            position, reason = found
            cause: Exception = exc
        else:
            yield [converted]
            return
        if position:
            yield [convert(rest[:position])]
        record_index, offset = where(start + position)
        error = RecordError(reason, index=record_index, offset=offset)
        if skip is None:
            raise error from cause
        skip.add(error)
        start += position + 1


# Length-prefixed headers, as (type byte, width of the length field, bytes after the length).
_LENGTH_HEADERS = (
    (0xD9, 1, 0), (0xDA, 2, 0), (0xDB, 4, 0),  # str8/16/32
    (0xC4, 1, 0), (0xC5, 2, 0), (0xC6, 4, 0),  # bin8/16/32
    (0xC7, 1, 1), (0xC8, 2, 1), (0xC9, 4, 1),  # ext8/16/32 (then a type byte)
)  # fmt: skip


def _tail_may_claim_too_much(chunk: Chunk, read: int, consumed: int, limit: int) -> bool:
    """Whether the decoder may be waiting for the payload of a str/bin/ext over ``limit``.

    When the decoder stops inside a record for want of a payload, the header it read last ends
    right where it stopped (``consumed``); a quick look at the bytes before that spots a
    length over the limit without locating the record. Only a hint: confirm before refusing.
    """
    if consumed >= read:
        return False
    end = consumed - (read - len(chunk))
    for code, width, extra in _LENGTH_HEADERS:
        start = end - 1 - width - extra
        if (
            start >= 0
            and chunk[start] == code
            and int.from_bytes(chunk[start + 1 : start + 1 + width], "big") > limit
        ):
            return True
    return False


def _check_declared(
    pieces: list[Chunk], start: int, limit: int, index: int, size: int = _HEAD_SIZE
) -> None:
    """Refuse the unfinished record at ``start`` (``pieces`` are the bytes from it on) if the
    headers in its first ``size`` bytes declare more than ``limit``."""
    excess = declared_excess(_head(pieces, min(size, _HEAD_SIZE)), limit)
    if excess is not None:
        raise _too_large(f"{excess}, over max_record_size={limit}", index, start)


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


def _too_large(what: str, index: int, offset: int) -> RecordTooLargeError:
    reason = f"{what}; pass a larger max_record_size to read it"
    return RecordTooLargeError(reason, index=index, offset=offset)
