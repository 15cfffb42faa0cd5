"""The decoding loop: chunks of bytes in, checked records out, errors located exactly.

Per chunk, not per record, is where Python-level work happens. A chunk is fed to one
``msgpack.Unpacker``; every record it completes is decoded into a list by C code
(``list.extend``), checked as a batch (``set(map(type, values))``), built by C code
(``itertools.starmap(record_type, ...)``) and handed over with ``yield from``. Nothing in that
path costs a Python bytecode per record.

What the batch path does not track is where each record starts: that is needed only when
something is wrong. So the loop keeps an *anchor*, a record boundary it knows (the end of the
first record completed in the latest chunk, from one ``tell()``), and the bytes read since
then. To name the offset of a failing record it replays those bytes through a fresh decoder,
skipping records, which costs at most about one chunk, and only on the error path. The end of
the stream is checked by feeding one ``nil`` byte: the decoder returns it as a value of its own
only if no record was left unfinished.

A plan may instead carry a :class:`BatchConverter` (the Arrow columns of :mod:`.arrow`): each
checked batch is then handed over as one converted object, and a record the converter refuses
is located like any other.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, Protocol, TypeVar

import msgpack

from . import sniff
from .errors import DecodeError, ReaderError, RecordError, RecordTooLargeError, TruncatedStreamError
from .schema import RecordSchema
from .wire import declared_excess

__all__ = [
    "KEPT_ERRORS",
    "BatchConverter",
    "CompressedDataError",
    "Plan",
    "records",
    "unpacker_options",
]

Chunk = bytes | bytearray | memoryview

_CONVERSION_ERRORS = (TypeError, ValueError, KeyError, IndexError)
# What feeding and unpacking can raise; anything else (a mapper's own bug) passes through as is.
_DECODER_ERRORS = (
    ValueError,
    TypeError,
    MemoryError,
    RecursionError,
    SystemError,
    OverflowError,
    msgpack.UnpackException,
)
_HEAD_SIZE = 64 * 1024  # how much of an unfinished record is read for the sizes it declares
_LIMIT_MESSAGE = re.compile(r"^(\d+) exceeds max_(str|bin|ext|array|map)_len\((\d+)\)$")
_KIND_NAMES = {"str": "a str", "bin": "a bin", "ext": "an ext", "array": "an array", "map": "a map"}
_NIL = b"\xc0"
_MISSING: Any = object()
_E = TypeVar("_E", bound=ReaderError)


class ChunkSource(Protocol):
    """Where the loop gets its bytes: an iterable of chunks that counts what it has read."""

    bytes_read: int
    source: str | None
    """The name the reader's errors carry (a path, a stream's ``name``), if there is one."""
    head: bytearray
    """The stream's first bytes, to say what it looks like when its first record fails."""

    def __iter__(self) -> Any: ...

    def close(self) -> None: ...


class CompressedDataError(Exception):
    """Raised by a chunk source for bad compressed data; the loop locates it as a
    ``TruncatedStreamError`` (``truncated``) or a ``DecodeError``."""

    def __init__(self, reason: str, *, truncated: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.truncated = truncated


class BatchConverter(Protocol):
    """Turns a whole batch of checked records (decoded tuples) into one object, in C."""

    refusals: tuple[type[Exception], ...]
    """What converting a batch raises when a record in it cannot be converted."""

    def __call__(self, values: list[Any], /) -> Any: ...

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:
        """The position of the first record it refuses and why; ``None`` if it takes each."""
        ...


def unpacker_options(
    schema: RecordSchema,
    mapper: Callable[[Any], Any] | None,
    limit: int,
    read_size: int,
    *,
    skip: bool = False,
) -> dict[str, Any]:
    """Decoder settings that let no record grow past ``limit`` bytes.

    msgpack checks str/bin/ext lengths only once their bytes are buffered, but array and map
    counts as soon as the header is read: a flat record type allows no maps and no array longer
    than a record, so a hostile count fails at its header. The buffer holds at most one
    unfinished record (at most ``limit``, or the reader has already failed) plus one chunk (at
    most ``read_size``), so ``feed`` never raises ``BufferFull``. In skip mode a map or a long
    array must decode (to be skipped as a wrong shape) rather than stop the decoder.
    """
    flat = schema.flat and mapper is None and not skip
    return {
        "use_list": mapper is not None or schema.uses_lists,
        "raw": False,
        "strict_map_key": False,
        "max_buffer_size": limit + read_size,
        "max_str_len": limit,
        "max_bin_len": limit,
        "max_ext_len": limit,
        "max_array_len": len(schema) if flat else limit,
        "max_map_len": 0 if flat else limit // 2,
    }


class Plan:
    """What happens to each batch of decoded values: which checks, which constructor."""

    def __init__(
        self,
        schema: RecordSchema,
        *,
        sequence: type | None,
        validate: bool,
        mapper: Callable[[Any], Any] | None,
        convert: BatchConverter | None = None,
    ) -> None:
        self.schema = schema
        self.mapper = mapper
        self.convert = convert
        self.first_invalid = schema.build_batch_checker(sequence, validate=validate)
        self.check_one = schema.build_record_checker(sequence, validate=validate)
        record_type = schema.record_type
        self.build: Callable[[Iterable[Any]], Iterable[Any]]
        """The records for a batch of decoded values, built lazily by C code."""
        if mapper is not None:
            self.build = functools.partial(map, mapper)
        elif schema.kind == "tuple":
            # The decoded tuples are the records: nothing to build.
            self.build = iter
        elif schema.kind == "namedtuple":
            # tuple.__new__ fills a NamedTuple straight from the decoded tuple, in C; the
            # class's own __new__ is a Python function. The count was checked in the batch.
            self.build = functools.partial(map, tuple.__new__, itertools.repeat(record_type))
        else:
            self.build = functools.partial(itertools.starmap, record_type)


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


def records(
    chunks: ChunkSource,
    unpacker: msgpack.Unpacker,
    plan: Plan,
    limit: int,
    skip: SkipLog | None = None,
) -> Generator[Any, None, None]:
    """Yield the records of ``chunks``; raise a located ``ReaderError`` for broken data.

    With ``skip``, records that are valid MessagePack but not records of the type
    (``RecordError``) are passed over and logged there instead of raised.
    """
    feed = unpacker.feed
    tell = unpacker.tell
    index = 0  # records handed over before the current batch
    anchor = 0  # a record boundary: where record ``index - since_anchor`` starts
    since_anchor = 0  # complete records after the anchor, all handed over
    retained: list[Chunk] = []  # the bytes from the anchor to the end of what was read
    unfinished_at = -1  # where the unfinished record starts, once located
    inspected = 0  # how many of its first bytes have been read for declared sizes
    if skip is not None:
        skip.chunks = chunks
    try:
        for chunk in chunks:
            retained.append(chunk)
            try:
                feed(chunk)
            except msgpack.BufferFull as exc:  # pragma: no cover - see below
                # The buffer holds limit + read_size bytes: only a payload over the limit would
                # leave no room for one more chunk, and its header is refused before that (the
                # tail check after a batch, or the head check of a chunk that finishes nothing).
                # Kept so that msgpack's exception can never escape if that reasoning fails.
                start = _boundary(anchor, retained, since_anchor)
                held = chunks.bytes_read - len(chunk) - start
                raise _too_large(
                    f"over max_record_size={limit} ({held} bytes read and the record is not "
                    "finished)",
                    index,
                    start,
                ) from exc
            try:
                first = next(unpacker, _MISSING)
            except _DECODER_ERRORS as exc:
                start = _boundary(anchor, retained, since_anchor)
                raise _decode_error(exc, plan.schema, limit, index, start) from exc
            read = chunks.bytes_read
            if first is _MISSING:
                # No record finished in this chunk: a large record, or a hostile header. Its
                # headers are read each time its known beginning has doubled, up to _HEAD_SIZE.
                if unfinished_at < 0:
                    unfinished_at = _boundary(anchor, retained, since_anchor)
                    inspected = 0
                have = min(read - unfinished_at, _HEAD_SIZE)
                if have > inspected and have >= min(2 * inspected, _HEAD_SIZE):
                    _check_declared(retained, anchor, unfinished_at, limit, index)
                    inspected = have
                if read - unfinished_at > limit:
                    raise _too_large(
                        f"over max_record_size={limit} ({read - unfinished_at} bytes read and "
                        "the record is not finished)",
                        index,
                        unfinished_at,
                    )
                continue
            previous = (anchor, retained, since_anchor)
            anchor = tell()
            retained = [memoryview(chunk)[anchor - (read - len(chunk)) :]]
            unfinished_at = -1
            values = [first]
            failure: Exception | None = None
            try:
                values.extend(unpacker)
            except _DECODER_ERRORS as exc:
                failure = exc
            since_anchor = len(values) - 1
            current = (anchor, retained)
            bad: tuple[int, ReaderError] | None = None
            if read - previous[0] > limit:
                # Only then can a record finished in this chunk be over the limit.
                bad = _first_too_large(previous, len(values), limit, index)
            if plan.first_invalid is not None:
                invalid = plan.first_invalid(values)
                if invalid is not None and (bad is None or invalid[0] < bad[0]):
                    position, reason = invalid
                    error: ReaderError = RecordError(reason, index=index + position, offset=0)
                    bad = (position, error)
            if skip is not None and bad is not None:
                yield from _skipping(values, index, previous, plan, limit, skip)
            elif plan.convert is not None:
                if bad is not None:
                    del values[bad[0] :]
                yield from _converted(
                    plan.convert,
                    values,
                    functools.partial(_in_batch, index, previous, current),
                    skip,
                )
                if bad is not None:
                    position, error = bad
                    raise _located(error, _locate(position, previous, current)) from None
            else:
                if bad is not None:
                    del values[bad[0] :]
                pending = iter(values)
                while True:
                    try:
                        yield from plan.build(pending)
                    except _CONVERSION_ERRORS as exc:
                        position = len(values) - operator.length_hint(pending) - 1
                        error = _record_error(plan, values[position], exc, index + position, 0)
                        error = _located(error, _locate(position, previous, current))
                        if skip is None:
                            raise error from exc
                        skip.add(error)  # and go on with the rest of the batch
                        continue
                    break
                if bad is not None:
                    position, error = bad
                    raise _located(error, _locate(position, previous, current)) from None
            index += len(values)
            if failure is not None:
                start = _locate(len(values), previous, current)
                raise _decode_error(failure, plan.schema, limit, index, start) from failure
            if _tail_may_claim_too_much(chunk, read, tell(), limit):
                # Confirmed the slow way, so that a lookalike inside a value costs a replay,
                # never a false refusal; a true claim fails now instead of after more reads.
                start = _boundary(anchor, retained, since_anchor)
                _check_declared(retained, anchor, start, limit, index)
        _check_end(unpacker, chunks.bytes_read, anchor, retained, since_anchor, limit, index)
    except CompressedDataError as exc:
        # The source's bytes end or break between chunks: every record read so far was handed
        # over; the one in progress, if any, starts at the boundary.
        start = _boundary(anchor, retained, since_anchor)
        kind = TruncatedStreamError if exc.truncated else DecodeError
        error = kind(exc.reason, index=index, offset=start)
        raise _named(error, chunks) from exc.__cause__
    except ReaderError as exc:
        # Where errors get the source's name (as above), and the first record's error a word
        # on what the stream looks like: nothing is paid for it per record.
        named = _named(exc, chunks)
        if named is exc:
            raise
        raise named.with_traceback(exc.__traceback__) from exc.__cause__
    finally:
        chunks.close()


def _named(error: _E, chunks: ChunkSource) -> _E:
    """``error`` naming the source, and, for the stream's first record, what the stream looks
    like when that is not MessagePack; ``error`` itself when there is nothing to add."""
    hint = sniff.foreign(chunks.head) if error.index == 0 else None
    if hint is None and (chunks.source is None or error.source is not None):
        return error
    reason = error.reason if hint is None else f"{error.reason}; {hint}"
    source = error.source or chunks.source
    return type(error)(reason, index=error.index, offset=error.offset, source=source)


def _skipping(
    values: list[Any],
    index: int,
    previous: tuple[int, list[Chunk], int],
    plan: Plan,
    limit: int,
    skip: SkipLog,
) -> Generator[Any, None, None]:
    """A batch with a bad record, in skip mode: record by record, logging what is skipped.

    With a converter, the records that pass their checks are converted together afterwards."""
    anchor, pieces, since = previous
    starts = _starts(anchor, pieces, since, len(values) + 1)
    # With a converter, refusals are found after the checks: log the batch's errors apart, to
    # hand them over in the order of the records.
    log = skip if plan.convert is None else SkipLog(keep=len(values))
    passed: list[int] = []  # positions of the records left for the converter
    for position, value in enumerate(values):
        offset = starts[position]
        size = starts[position + 1] - offset
        if size > limit:
            raise _too_large(
                f"{size} bytes, over max_record_size={limit}", index + position, offset
            )
        reason = plan.check_one(value)
        if reason is not None:
            log.add(RecordError(reason, index=index + position, offset=offset))
        elif plan.convert is not None:
            passed.append(position)
        else:
            try:
                (record,) = plan.build((value,))
            except _CONVERSION_ERRORS as exc:
                skip.add(_record_error(plan, value, exc, index + position, offset))
                continue
            yield record
    if plan.convert is not None:
        if passed:
            yield from _converted(
                plan.convert,
                [values[position] for position in passed],
                lambda at: (index + passed[at], starts[passed[at]]),
                log,
            )
        for error in sorted(log.errors, key=operator.attrgetter("index")):
            skip.add(error)


def _in_batch(
    index: int,
    previous: tuple[int, list[Chunk], int],
    current: tuple[int, list[Chunk]],
    position: int,
) -> tuple[int, int]:
    """The index and offset of the batch's record at ``position`` (see :func:`_locate`)."""
    return index + position, _locate(position, previous, current)


def _converted(
    convert: BatchConverter,
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[Any, None, None]:
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
            yield converted
            return
        if position:
            yield convert(rest[:position])
        record_index, offset = where(start + position)
        error = RecordError(reason, index=record_index, offset=offset)
        if skip is None:
            raise error from cause
        skip.add(error)
        start += position + 1


def _starts(start: int, pieces: Sequence[Chunk], skip: int, count: int) -> list[int]:
    """Where each of ``count`` consecutive records starts, after ``skip`` records past ``start``.

    The last of them may be unfinished or broken: its start is known all the same.
    """
    replay = _replay(pieces)
    for _ in range(skip):
        replay.skip()
    starts = [start + replay.tell()]
    for _ in range(count - 1):
        replay.skip()
        starts.append(start + replay.tell())
    return starts


def _locate(
    position: int, previous: tuple[int, list[Chunk], int], current: tuple[int, list[Chunk]]
) -> int:
    """Where the batch's record at ``position`` starts.

    ``previous`` is the anchor, bytes and record count before the batch; ``current`` the anchor
    (the end of the batch's first record) and the bytes from it.
    """
    if position == 0:
        return _boundary(*previous)
    anchor, retained = current
    return _boundary(anchor, retained, position - 1)


def _boundary(start: int, pieces: Sequence[Chunk], count: int) -> int:
    """The offset at which record ``count`` after the boundary ``start`` starts.

    ``pieces`` are the bytes from ``start`` on; the ``count`` records after ``start`` were all
    decoded once already, so skipping them cannot fail.
    """
    if count == 0:
        return start
    replay = _replay(pieces)
    for _ in range(count):
        replay.skip()
    return start + replay.tell()


def _replay(pieces: Sequence[Chunk]) -> msgpack.Unpacker:
    """A fresh decoder holding ``pieces``: the error path re-reads bytes to find boundaries."""
    replay = msgpack.Unpacker(max_buffer_size=sum(map(len, pieces)) + 1)
    for piece in pieces:
        replay.feed(piece)
    return replay


def _first_too_large(
    previous: tuple[int, list[Chunk], int], count: int, limit: int, index: int
) -> tuple[int, ReaderError] | None:
    anchor, pieces, since = previous
    starts = _starts(anchor, pieces, since, count + 1)
    for position in range(count):
        size = starts[position + 1] - starts[position]
        if size > limit:
            error = _too_large(f"{size} bytes, over max_record_size={limit}", index + position, 0)
            return position, error
    return None


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


def _head(pieces: Sequence[Chunk], skip: int) -> bytes:
    """Up to ``_HEAD_SIZE`` bytes of ``pieces`` after the first ``skip`` bytes."""
    head = bytearray()
    for piece in pieces:
        if skip >= len(piece):
            skip -= len(piece)
            continue
        head += piece[skip : skip + _HEAD_SIZE - len(head)]
        skip = 0
        if len(head) >= _HEAD_SIZE:
            break
    return bytes(head)


def _check_declared(
    pieces: Sequence[Chunk], anchor: int, start: int, limit: int, index: int
) -> None:
    """Refuse the unfinished record at ``start`` if its headers declare more than ``limit``."""
    excess = declared_excess(_head(pieces, start - anchor), limit)
    if excess is not None:
        raise _too_large(f"{excess}, over max_record_size={limit}", index, start)


def _check_end(
    unpacker: msgpack.Unpacker,
    total: int,
    anchor: int,
    retained: list[Chunk],
    since_anchor: int,
    limit: int,
    index: int,
) -> None:
    # Iterating an Unpacker stops quietly on a cut-off last record. A nil byte fed after the
    # end comes back as a value of its own only if no record was left unfinished.
    unpacker.feed(_NIL)
    try:
        probe = next(unpacker, _MISSING)
    except _DECODER_ERRORS:
        probe = _MISSING
    if probe is None and unpacker.tell() == total + len(_NIL):
        return
    start = _boundary(anchor, retained, since_anchor)
    _check_declared(retained, anchor, start, limit, index)
    reason = f"stream ends inside a record ({total - start} bytes of it, need more bytes)"
    raise TruncatedStreamError(reason, index=index, offset=start)


def _located(error: _E, offset: int) -> _E:
    """``error`` again, now with the offset that was worked out after it was made."""
    return type(error)(error.reason, index=error.index, offset=offset)


def _record_error(plan: Plan, values: Any, exc: Exception, index: int, offset: int) -> RecordError:
    """The error for a record its constructor or mapper refused, naming why."""
    schema = plan.schema
    if plan.mapper is None and isinstance(values, (list, tuple)) and len(values) != len(schema):
        reason = schema.shape_error(values)
    else:
        builder = getattr(plan.mapper, "__qualname__", "the mapper") if plan.mapper else None
        what = builder or schema.record_type.__qualname__
        reason = f"cannot build a record with {what}: {type(exc).__name__}: {exc}"
    return RecordError(reason, index=index, offset=offset)


def _decode_error(
    exc: BaseException, schema: RecordSchema, limit: int, index: int, offset: int
) -> ReaderError:
    """Map what msgpack raised to the documented error, with a message a user can act on."""
    if isinstance(exc, (msgpack.StackError, RecursionError)):
        return DecodeError("nesting deeper than the decoder allows", index=index, offset=offset)
    if isinstance(exc, UnicodeDecodeError):
        reason = f"invalid UTF-8 in a str ({exc.reason} at position {exc.start})"
        return DecodeError(reason, index=index, offset=offset)
    if isinstance(exc, msgpack.FormatError):
        reason = "not valid MessagePack (a reserved byte such as 0xc1, never valid)"
        return DecodeError(reason, index=index, offset=offset)
    if type(exc) is ValueError and str(exc) == "code must be 0~127":
        reason = (
            "an extension type with a negative code other than -1 (reserved by the "
            "MessagePack specification)"
        )
        return DecodeError(reason, index=index, offset=offset)
    match = _LIMIT_MESSAGE.match(str(exc)) if type(exc) is ValueError else None
    if match is not None:
        count, kind = int(match.group(1)), match.group(2)
        if kind in ("array", "map") and schema.flat and count <= limit:
            unit = "values" if kind == "array" else "entries"
            reason = (
                f"expected an array of {len(schema)} fields, found {_KIND_NAMES[kind]} of "
                f"{count} {unit} (a record of this type nests no map or longer array)"
            )
            return RecordError(reason, index=index, offset=offset)
        unit = "bytes" if kind in ("str", "bin", "ext") else "entries"
        return _too_large(
            f"declares {_KIND_NAMES[kind]} of {count} {unit}, over max_record_size={limit}",
            index,
            offset,
        )
    return DecodeError(
        f"not valid MessagePack ({type(exc).__name__}: {exc})", index=index, offset=offset
    )


def _too_large(what: str, index: int, offset: int) -> RecordTooLargeError:
    reason = f"{what}; pass a larger max_record_size to read it"
    return RecordTooLargeError(reason, index=index, offset=offset)
