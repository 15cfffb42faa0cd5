"""The readers: the lifecycle every reader of one source shares, and the public
:class:`StreamingReader` of typed records.

Bytes flow one way: source (:mod:`.sources`) -> framing (:mod:`.framing`) -> decoding
(:mod:`.decoding`) -> delivery (:mod:`.delivery`) -> caller. Everything that can be decided once
per stream (the options, the record type's decoder, the limits) is decided when a reader is
made. A reader opens its source as one stream (from its start, or from a record found by
:mod:`.seek`) or, split, as the byte ranges of :mod:`.parallel`. Over 500 lines: the typed
overloads of ``StreamingReader`` and ``read_items``, which a type checker needs, are a fifth
of it.
"""

from __future__ import annotations

import itertools
import threading
import typing
from collections.abc import Callable, Generator, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from .._base.checks import count_of
from .._base.errors import RecordError
from .._base.options import ReadKeywords, ReadOptions
from .._reference.model import Item
from .._split.parallel import RangedRead, Splitting
from .._split.ranges import RangeJob
from .._split.seek import origin_for
from .._stream.compression import Compression
from .._stream.delivery import Batches, Plan, SkipLog, reading
from .._stream.framing import Framer
from .._stream.pending import Pending
from .._stream.sources import Chunks, Source
from .._types.record_type import type_label

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "PieceReader",
    "ReaderBase",
    "RowBatches",
    "SourceReader",
    "StreamingReader",
    "chained",
    "check_start",
    "describe_reader",
    "read_items",
    "rows_plan",
    "typed_plan",
]

T = TypeVar("T")
_R = TypeVar("_R", bound="SourceReader[Any]")


class ReaderBase(Generic[T]):
    """The lifecycle every reader of one source shares, synchronous or not: opening the
    source, the decoding loop, closing, and what the reader tells of its progress.

    A reader closes only what it opened: a path's file is closed by ``close()``, when the
    stream is exhausted or fails, and when the reader is garbage-collected; a stream you passed
    stays open. ``close()`` may be called more than once. A reader belongs to one thread,
    except that ``close()`` may come from another to end a reader that follows a file.
    """

    record_type: Any
    """The record type the reader checks records against."""
    options: ReadOptions
    """The options it reads with."""
    _source: Chunks | RangedRead
    _skipped: SkipLog | None
    _framer: Framer | RangedRead
    _batches: Generator[Any, None, None]
    _closed: bool
    _iterating: int | None = None  # the thread that iterates, once one has
    _blocking = True  # a follower sleeps in the reading thread; else it hands its pauses up

    def open_batches(
        self,
        source: Source,
        record_type: Any,
        plan: Plan,
        options: ReadOptions,
        *,
        as_is: str | None = None,
        start: int = 0,
        origin: tuple[int, int] = (0, 0),
    ) -> Generator[list[Any] | Pending, None, None]:
        """Open ``source`` and return the batches of what ``plan`` makes of its records: the
        hook each of the package's readers calls as it is made, then iterates as it will.
        ``as_is`` says why the source is read without decompressing, where the reader cannot
        decompress it. The records before the one with index ``start`` are framed, not
        decoded; ``origin`` is the index and offset of a record of the source known to start
        there, where reading begins (:mod:`.seek`).

        Everything decided once per stream is decided here: the source opened, the loop and its
        limits made (the options were checked when made).
        """
        self._closed = True  # until the source is open: close() then has nothing to do
        if origin == (0, 0):
            # A sidecar index, or a count of the file: a seek, not a framing of all before.
            origin = origin_for(source, start, options, refuse_foreign=plan.refuse_foreign)
        read = reading(
            source, plan, options, start=start, origin=origin, as_is=as_is, blocking=self._blocking
        )
        self._source = read.chunks
        self.record_type = record_type
        self.options = options
        self._skipped = read.skip
        self._closed = False
        self._framer = read.framer
        self._batches = read.batches
        return self._batches

    def open_ranges(
        self,
        source: Source,
        record_type: Any,
        job: RangeJob,
        options: ReadOptions,
        splitting: Splitting,
    ) -> Generator[Any, None, None]:
        """As :meth:`open_batches`, for a file split into byte ranges read by ``workers``
        processes (:mod:`.ranges`): each item is what ``job`` made of a range's records."""
        self._closed = True
        self.record_type = record_type
        self.options = options
        self._skipped = SkipLog.of(options)
        self._framer = ranged = RangedRead(
            source,
            record_type,
            job,
            options,
            splitting=splitting,
            skip=self._skipped,
        )
        self._source = ranged
        self._closed = False
        self._batches = ranged.batches()
        return self._batches

    @property
    def records_framed(self) -> int:
        """How many records of the source were framed so far, those passed over included."""
        return self._framer.index

    @property
    def max_record_size(self) -> int:
        """The largest encoded record the reader accepts, in bytes."""
        return self.options.max_record_size

    def close(self) -> None:
        """Stop reading and close the source if the reader opened it. Safe to call twice, and
        from another thread to end following (the reading thread's loop then ends)."""
        if self._closed:
            return
        self._closed = True
        self._source.stop()
        if self._source.following and self._iterating not in (None, threading.get_ident()):
            # The thread that iterates ends at its next read or look at the file, and closes
            # the file itself: stepping its generator from here would race with it.
            return
        self._batches.close()
        self._source.close()

    @property
    def skipped(self) -> int:
        """How many records ``on_error="skip"`` has passed over so far (0 in raise mode)."""
        return 0 if self._skipped is None else self._skipped.count

    @property
    def errors(self) -> list[RecordError]:
        """The first 100 record errors that ``on_error="skip"`` passed over, in order."""
        return [] if self._skipped is None else list(self._skipped.errors)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has been called."""
        return self._closed

    @property
    def bytes_read(self) -> int:
        """Bytes read from the source so far; the stream's length once it is exhausted.
        Following a file, the bytes read of the file being followed."""
        return self._source.bytes_read

    @property
    def source_bytes_read(self) -> int:
        """Bytes taken from the source itself so far: the compressed bytes when the source is
        compressed, else the same as :attr:`bytes_read`. Against a file's size, the progress
        made through it."""
        return self._source.source_bytes_read

    @property
    def compression(self) -> Compression | None:
        """``"gzip"``, ``"bzip2"``, ``"xz"`` or ``"zstd"`` when the source is being
        decompressed, else ``None``; known once the first bytes have been read."""
        return self._source.compression

    @property
    def name(self) -> str:
        """The source's name: its path, its ``name`` attribute, or its type."""
        return self._source.name


class SourceReader(ReaderBase[T]):
    """What every synchronous reader of one source shares: :class:`StreamingReader` and
    :class:`~msgpack_reader_py.BatchReader` are both one.

    An iterator and a context manager (leaving the ``with`` block closes it); its lifecycle
    is :class:`ReaderBase`'s.
    """

    _records: Iterator[T]
    """What iterating the reader yields: ``chained(self._open(...))``, or that wrapped."""

    def __iter__(self) -> Iterator[T]:
        # The iterator itself, not ``self``: a ``for`` loop then steps it directly instead
        # of paying for a Python-level ``__next__`` call per record.
        if self._closed:
            raise ValueError(f"I/O operation on a closed {type(self).__name__}")
        self._iterating = threading.get_ident()
        return self._records

    def __next__(self) -> T:
        if self._closed:
            raise ValueError(f"I/O operation on a closed {type(self).__name__}")
        self._iterating = threading.get_ident()
        return next(self._records)

    def __enter__(self: _R) -> _R:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class StreamingReader(SourceReader[T]):
    """Read concatenated MessagePack records from ``source`` as typed objects.

    ``source`` is a path (``str`` or ``os.PathLike``), a bytes-like object (``bytes``,
    ``bytearray``, ``memoryview``) or a readable binary stream: anything with ``read(n)``, such
    as an open file, ``io.BytesIO``, ``sys.stdin.buffer``, ``socket.makefile("rb")`` or
    ``gzip.open(...)``. A text stream is refused with ``TypeError``.

    Each record becomes a ``record_type`` (:class:`~msgpack_reader_py.Item` by
    default): a dataclass, a ``typing.NamedTuple``, a ``msgspec.Struct`` or a ``tuple[...]``
    type, whose fields may themselves be such record types, to any depth. A record, and every
    record nested in it, may be a MessagePack array of its fields in order (trailing fields
    with defaults may be missing) or a map of its fields by name (keys it does not know are
    ignored), in any mix. Every field is checked as its annotation says, every element of
    every container included: a ``bool`` is not an ``int``; an ``int`` is accepted for a
    ``float``; the timestamp extension becomes an aware UTC ``datetime``. Pass ``mapper``
    instead to build each record yourself from the decoded value, unchecked.

    The reader is an iterator and a context manager. It closes only what it opened: a path's
    file is closed by ``close()``, on leaving the ``with`` block, when the stream is exhausted
    or fails, and when the reader is garbage-collected; a stream you passed stays open.
    ``close()`` may be called more than once. A reader belongs to one thread, except that
    ``close()`` may come from another to end a reader that follows a file.
    :class:`~msgpack_reader_py.AsyncStreamingReader` is the same reader for ``async for``.

    Broken data raises a :class:`~msgpack_reader_py.ReaderError` naming the failing
    record's ``index`` and byte ``offset``, after every good record before it was yielded;
    the reader is then finished. I/O errors from the source (``OSError``) pass through as they
    are. Offsets count from where the reader started reading the source. Errors carry the
    source's name in ``.source`` where there is one (a path, a stream's ``name``).

    Example:
        >>> with StreamingReader("items.msgpack") as reader:  # doctest: +SKIP
        ...     for item in reader:
        ...         print(item.id, item.value)

    Raises:
        ReaderError: broken data, while iterating, after every good record before it
            (``TruncatedStreamError``, ``DecodeError``, ``RecordTooLargeError`` or
            ``RecordError``: the error contract).
        TypeError: a ``record_type`` the reader cannot read (a class with no fields, a
            union it cannot tell apart), a text stream, or an unknown keyword, when made.
        ValueError: a bad option value (``max_record_size=0``, ``on_error="ignore"``), when
            made.
        OSError: a path that cannot be opened, when made; the source's own errors as they
            come, after every record before them.

    Args:
        source: what to read (see above).
        record_type: the type each record becomes (see above). Default :class:`Item`.
        mapper: a callable applied to each record as decoded (lists for arrays, dicts for
            maps, ``datetime`` for the timestamp extension, ``msgspec.msgpack.Ext`` for other
            extensions), instead of building a ``record_type``; a ``TypeError``,
            ``ValueError``, ``KeyError`` or ``IndexError`` it raises becomes a ``RecordError``.
            It is called on a whole chunk's records before the first of them is handed over.
        start: the index of the first record to yield: the records before it are framed
            (their sizes read, the stream's framing checked) but not decoded, so no record is
            built or checked before it, and a stream broken before it still fails there.
            Offsets and indexes still count from the stream's start. Default 0.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options (:class:`~msgpack_reader_py.ReadOptions`):

            - ``ext_hook``: ``ext_hook(code, data) -> value`` turns extension types other than
              the timestamp (-1) into values, as in msgpack and msgspec; it is called where a
              field accepts ``Any`` or ``datetime``, so that a field annotated ``datetime`` can
              take the value it returns (see :func:`~msgpack_reader_py.fluentd_event_time`).
              An exception it raises becomes a ``RecordError``.
            - ``forbid_unknown_keys``: refuse a map-shaped record (or nested record) with a key
              that names no field, as a ``RecordError``. Default ``False``: such keys are
              ignored.
            - ``max_record_size``: the largest encoded record accepted, in bytes. Default
              100 MiB.
            - ``read_size``: the most bytes asked of the source in one read. Default 64 KiB.
            - ``on_error``: ``"raise"`` (default) or ``"skip"``. With ``"skip"``, a record that
              is valid MessagePack but not a record of the type (a ``RecordError``: wrong
              shape, a field that fails its check, a mapper that refused it) is passed over and
              counted in ``skipped``; ``errors`` keeps the first 100, each with its index
              (counting every record of the stream, skipped ones too) and offset. Decoding
              errors, truncation and over-size records still raise: after them no record
              boundary can be trusted.
            - ``decompress``: read a source whose first bytes are gzip, bzip2, xz or (with the
              ``zstd`` extra) zstd through a decompressor, a read at a time; offsets,
              ``bytes_read`` and record sizes then count decompressed bytes. Default ``True``.
            - ``follow``: keep reading a file (``source`` a path) as it grows, like ``tail -F``:
              at its end the reader waits for more (polling, with pauses that grow to a quarter
              of a second while nothing arrives) instead of ending, and a record cut off at the
              end waits for the rest of its bytes. Iteration ends when ``close()`` is called,
              from any thread; ``KeyboardInterrupt`` ends it as usual. A file truncated or
              replaced (log rotation) is read again from its start, with a warning on the
              ``msgpack_reader_py`` logger; indexes and offsets then count from the new start.
              The file is read as it is (``decompress`` does not apply). Default ``False``.
    """

    @overload
    def __init__(
        self: StreamingReader[Item],
        source: Source,
        record_type: type[Item] = ...,
        *,
        mapper: None = None,
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[T],
        source: Source,
        record_type: type[T],
        *,
        mapper: None = None,
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[Any],
        source: Source,
        record_type: object,
        *,
        mapper: None = None,
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[T],
        source: Source,
        record_type: object = ...,
        *,
        mapper: Callable[[Any], T],
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    def __init__(
        self,
        source: Source,
        record_type: Any = Item,
        *,
        mapper: Callable[[Any], Any] | None = None,
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Any,
    ) -> None:
        self.mapper = mapper
        read = ReadOptions.of(options, keywords, "StreamingReader()")
        plan = typed_plan(record_type, mapper, read)
        check_start(start)
        self._records = chained(self.open_batches(source, record_type, plan, read, start=start))

    def __repr__(self) -> str:
        return describe_reader(self, self.mapper)


class PieceReader(SourceReader[Any]):
    """A file read in byte ranges as ``splitting`` says (:mod:`.ranges`): its items are
    those of the lists ``job`` made of each range's records, in file order, each range's first
    record proved; its error, the sequential read's own, after the ranges before it. Its
    lifecycle is :class:`SourceReader`'s."""

    def __init__(
        self,
        source: Source,
        record_type: Any,
        job: RangeJob,
        *,
        splitting: Splitting,
        options: ReadOptions,
    ) -> None:
        self._records = chained(self.open_ranges(source, record_type, job, options, splitting))


def check_start(start: int) -> None:
    """Refuse a ``start`` that is no record's index."""
    count_of("start", start)


def chained(batches: Iterator[list[Any] | Pending]) -> Iterator[Any]:
    """The records of a synchronous reader's batches, one stream: ``chain`` steps through each
    batch in C, so a record costs no generator step. (A synchronous source never hands over a
    :class:`~.pending.Pending`.)"""
    return itertools.chain.from_iterable(typing.cast(Iterator[list[Any]], batches))


def rows_plan(record_type: Any, options: ReadOptions) -> Plan:
    """The plan of checked rows: each run's records as one list of tuples of their field
    values. Every field is checked as a record's is, and what the record type runs of its own
    (``__post_init__``) runs; a flat record type's records are never built at all."""
    return Plan(record_type, options, convert=Batches())


class RowBatches(SourceReader[list[Any]]):
    """Read ``source`` as batches of checked rows (:func:`rows_plan`), each a run's records:
    what the text formats write and what ``read`` counts, with
    :class:`StreamingReader`'s lifecycle, checks and error contract."""

    def __init__(
        self, source: Source, record_type: Any, options: ReadOptions, start: int = 0
    ) -> None:
        plan = rows_plan(record_type, options)
        self._records = chained(self.open_batches(source, record_type, plan, options, start=start))


def typed_plan(record_type: Any, mapper: Callable[[Any], Any] | None, options: ReadOptions) -> Plan:
    """The plan of a reader of typed records (or of a ``mapper``'s), the mapper checked."""
    if mapper is not None and not callable(mapper):
        raise TypeError(f"mapper must be callable, got {mapper!r}")
    return Plan(
        record_type,
        options,
        mapper=mapper,
    )


def describe_reader(reader: ReaderBase[Any], mapper: Callable[[Any], Any] | None) -> str:
    """A typed reader's ``repr``: its class, source, record type or mapper, and state."""
    kind = "mapper=" + getattr(mapper, "__qualname__", repr(mapper))
    if mapper is None:
        kind = "record_type=" + type_label(reader.record_type)
    state = " closed" if reader.closed else ""
    return f"<{type(reader).__name__} {reader.name!r} {kind}{state}>"


@overload
def read_items(
    source: Source,
    record_type: type[Item] = ...,
    *,
    mapper: None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> Iterator[Item]: ...


@overload
def read_items(
    source: Source,
    record_type: type[T],
    *,
    mapper: None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> Iterator[T]: ...


@overload
def read_items(
    source: Source,
    record_type: object,
    *,
    mapper: None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> Iterator[Any]: ...


@overload
def read_items(
    source: Source,
    record_type: object = ...,
    *,
    mapper: Callable[[Any], T],
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> Iterator[T]: ...


def read_items(
    source: Source,
    record_type: Any = Item,
    *,
    mapper: Callable[[Any], Any] | None = None,
    options: ReadOptions | None = None,
    **keywords: Any,
) -> Iterator[Any]:
    """Yield the records of ``source``; the arguments are :class:`StreamingReader`'s.

    The reader is created at once, so a bad argument or a missing file fails at the call, and
    it is closed when the generator is exhausted, fails or is closed.

    Args:
        source: a path, a bytes-like object or a binary stream.
        record_type: the type each record becomes, every field checked. Default ``Item``.
        mapper: a callable that builds each record from its decoded value, unchecked,
            instead of ``record_type``.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`).

    Raises:
        ReaderError: broken data, after every good record before it was yielded.
        TypeError: a record type the reader cannot read, or an unknown keyword, at the call.
        ValueError: a bad option value, at the call.
        OSError: a missing file at the call; the source's own errors as they come.

    Example:
        >>> for item in read_items("items.msgpack", max_record_size=1 << 20):  # doctest: +SKIP
        ...     print(item.id)
    """
    read = ReadOptions.of(options, keywords, "read_items()")
    return _drain(StreamingReader(source, record_type, mapper=mapper, options=read))


def _drain(reader: StreamingReader[T]) -> Iterator[T]:
    with reader:
        yield from reader
