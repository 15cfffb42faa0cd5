"""Stream typed records out of concatenated MessagePack.

Bytes flow one way: source -> chunks -> ``msgpack.Unpacker`` -> record -> caller. Everything that
can be decided once per stream (record constructor, checks, decoder limits) is decided in
``StreamingReader.__init__``; the per-record loop only decodes, checks the shape and builds.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from types import TracebackType
from typing import IO, Any, Generic, TypeVar, Union, overload

import msgpack

from .errors import DecodeError, ReaderError, RecordError, RecordTooLargeError, TruncatedStreamError
from .model import Item
from .schema import RecordSchema
from .wire import declared_excess

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "DEFAULT_READ_SIZE",
    "Source",
    "StreamingReader",
    "read_items",
]

T = TypeVar("T")

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes], Any]
"""What a reader reads: a path, a bytes-like object, or a binary stream with ``read(n)``."""

DEFAULT_MAX_RECORD_SIZE = 100 * 1024 * 1024
"""100 MiB, the size of msgpack's own default buffer."""

DEFAULT_READ_SIZE = 64 * 1024

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
# An unfinished record longer than this has its headers read for sizes it cannot be given.
_INSPECT_PENDING_OVER = 4096
_PENDING_HEAD_SIZE = 64 * 1024
_LIMIT_MESSAGE = re.compile(r"^(\d+) exceeds max_(str|bin|ext|array|map)_len\((\d+)\)$")
_KIND_NAMES = {"str": "a str", "bin": "a bin", "ext": "an ext", "array": "an array", "map": "a map"}


class _Chunks:
    """The source as an iterator of byte chunks; counts what it has read.

    Streams are read with ``read1`` where they have it, so a record is handed over as soon as
    its last byte arrives from a pipe or socket instead of waiting for a full buffer.
    """

    def __init__(self, source: Source, read_size: int) -> None:
        self.bytes_read = 0
        self.owned = False
        self._view: memoryview | None = None
        self._stream: Any = None
        self._read_size = read_size
        if isinstance(source, (bytes, bytearray, memoryview)):
            view = memoryview(source)
            self._view = view if view.format == "B" and view.ndim == 1 else view.cast("B")
            self.name = f"<{type(source).__name__}>"
        elif isinstance(source, (str, os.PathLike)):
            self._stream = open(source, "rb")  # noqa: SIM115 - closed by close()
            self.owned = True
            self.name = os.fsdecode(source)
        elif isinstance(source, io.TextIOBase):
            raise TypeError(
                f"{source!r} is a text stream; open it in binary mode ('rb') or pass .buffer"
            )
        elif callable(getattr(source, "read", None)):
            self._stream = source
            self.name = str(getattr(source, "name", f"<{type(source).__name__}>"))
        else:
            raise TypeError(
                "source must be a path, a bytes-like object or a binary stream with read(n), "
                f"got {type(source).__name__}"
            )

    def __iter__(self) -> Iterator[bytes | bytearray | memoryview]:
        size = self._read_size
        if self._view is not None:
            yield from self._split(self._view)
            return
        stream = self._stream
        read = getattr(stream, "read1", None) or stream.read
        while True:
            chunk = read(size)
            if not chunk:
                if chunk is None:
                    raise BlockingIOError(f"{self.name}: non-blocking sources are not supported")
                return
            if not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise TypeError(
                    f"{self.name}: read() returned {type(chunk).__name__}, not bytes; "
                    "open the source in binary mode"
                )
            if len(chunk) > size:
                # A source that ignores n: the decoder's buffer is sized for read_size pieces.
                yield from self._split(memoryview(chunk))
                continue
            self.bytes_read += len(chunk)
            yield chunk

    def _split(self, view: memoryview) -> Iterator[memoryview]:
        size = self._read_size
        for start in range(0, len(view), size):
            piece = view[start : start + size]
            self.bytes_read += len(piece)
            yield piece

    def close(self) -> None:
        if self.owned:
            self._stream.close()

    def __del__(self) -> None:
        # A path's file is ours: close it here rather than leave it to the file's own
        # finaliser, which warns (ResourceWarning). The record generator holds this object,
        # so a reader dropped while its records are still being iterated keeps its file open.
        if getattr(self, "owned", False):
            self.close()


class StreamingReader(Generic[T]):
    """Read concatenated MessagePack records from ``source`` as typed objects.

    ``source`` is a path (``str`` or ``os.PathLike``), a bytes-like object (``bytes``,
    ``bytearray``, ``memoryview``) or a readable binary stream: anything with ``read(n)``, such
    as an open file, ``io.BytesIO``, ``sys.stdin.buffer``, ``socket.makefile("rb")`` or
    ``gzip.open(...)``. A text stream is refused with ``TypeError``.

    Each record is a MessagePack array whose values map positionally onto the fields of
    ``record_type`` (a dataclass, :class:`~msgpack_reader_py.model.Item` by default). Pass
    ``mapper`` instead to build each record yourself from the decoded value
    (``StreamingReader(src, mapper=Item.from_list)``).

    The reader is an iterator and a context manager. It closes only what it opened: a path's
    file is closed by ``close()``, on leaving the ``with`` block, when the stream is exhausted
    or fails, and when the reader is garbage-collected; a stream you passed stays open.
    ``close()`` may be called more than once. A reader belongs to one thread.

    Broken data raises a :class:`~msgpack_reader_py.errors.ReaderError` naming the failing
    record's ``index`` and byte ``offset``, after every good record before it was yielded;
    the reader is then finished. I/O errors from the source (``OSError``) pass through as they
    are. Offsets count from where the reader started reading the source.

    Args:
        source: what to read (see above).
        record_type: the dataclass each record becomes. Default :class:`Item`.
        mapper: a callable applied to each decoded value instead of ``record_type(*values)``;
            a ``TypeError``, ``ValueError``, ``KeyError`` or ``IndexError`` it raises becomes a
            ``RecordError``. Without ``validate`` it receives any decoded value unchecked.
        validate: check every record against ``record_type``'s field annotations (exact types:
            a ``bool`` is not an ``int``; an ``int`` is accepted for ``float``; ``X | None``).
            Default ``False``: only the record's shape (an array of the right length) is checked.
        max_record_size: the largest encoded record accepted, in bytes. Default 100 MiB.
        read_size: the most bytes asked of the source in one read. Default 64 KiB.
    """

    @overload
    def __init__(
        self: StreamingReader[Item],
        source: Source,
        record_type: type[Item] = ...,
        *,
        mapper: None = None,
        validate: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[T],
        source: Source,
        record_type: type[T],
        *,
        mapper: None = None,
        validate: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[T],
        source: Source,
        record_type: type[Any] = ...,
        *,
        mapper: Callable[[Any], T],
        validate: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
    ) -> None: ...

    def __init__(
        self,
        source: Source,
        record_type: type[Any] = Item,
        *,
        mapper: Callable[[Any], Any] | None = None,
        validate: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
    ) -> None:
        if mapper is not None and not callable(mapper):
            raise TypeError(f"mapper must be callable, got {mapper!r}")
        for name, value in (("max_record_size", max_record_size), ("read_size", read_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        schema = RecordSchema(record_type)
        check = schema.build_checker() if validate else None
        if check is None and mapper is None and schema.has_defaults:
            # record_type(*values) would quietly fill a short array from the defaults.
            check = schema.build_length_checker()
        self._schema = schema
        self._source = _Chunks(source, read_size)
        self.record_type = record_type
        self.max_record_size = max_record_size
        self.validate = validate
        self.mapper = mapper
        options = _unpacker_options(schema, mapper, max_record_size, read_size)
        unpacker = msgpack.Unpacker(**options)
        sequence = list if options["use_list"] else tuple
        self._records: Generator[T, None, None] = _records(
            self._source,
            unpacker,
            schema,
            max_record_size,
            sequence=sequence if mapper is None or check is not None else None,
            check=check,
            mapper=mapper,
        )
        self._closed = False

    def __iter__(self) -> Iterator[T]:
        # The generator itself, not ``self``: a ``for`` loop then resumes it directly instead
        # of paying for a Python-level ``__next__`` call per record.
        if self._closed:
            raise ValueError("I/O operation on a closed StreamingReader")
        return self._records

    def __next__(self) -> T:
        if self._closed:
            raise ValueError("I/O operation on a closed StreamingReader")
        return next(self._records)

    def __enter__(self) -> StreamingReader[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading and close the source if the reader opened it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._records.close()
        self._source.close()

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has been called."""
        return self._closed

    @property
    def bytes_read(self) -> int:
        """Bytes read from the source so far; the stream's length once it is exhausted."""
        return self._source.bytes_read

    @property
    def name(self) -> str:
        """The source's name: its path, its ``name`` attribute, or its type."""
        return self._source.name

    def __repr__(self) -> str:
        kind = "mapper=" + getattr(self.mapper, "__qualname__", repr(self.mapper))
        if self.mapper is None:
            kind = "record_type=" + self.record_type.__qualname__
        state = " closed" if self._closed else ""
        return f"<StreamingReader {self.name!r} {kind}{state}>"


@overload
def read_items(
    source: Source,
    record_type: type[Item] = ...,
    *,
    mapper: None = None,
    validate: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
) -> Iterator[Item]: ...


@overload
def read_items(
    source: Source,
    record_type: type[T],
    *,
    mapper: None = None,
    validate: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
) -> Iterator[T]: ...


@overload
def read_items(
    source: Source,
    record_type: type[Any] = ...,
    *,
    mapper: Callable[[Any], T],
    validate: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
) -> Iterator[T]: ...


def read_items(
    source: Source,
    record_type: type[Any] = Item,
    *,
    mapper: Callable[[Any], Any] | None = None,
    validate: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
) -> Iterator[Any]:
    """Yield the records of ``source``; the options are :class:`StreamingReader`'s.

    The reader is created at once, so a bad argument or a missing file fails at the call, and
    it is closed when the generator is exhausted, fails or is closed.
    """
    reader = StreamingReader(
        source,
        record_type,
        mapper=mapper,
        validate=validate,
        max_record_size=max_record_size,
        read_size=read_size,
    )
    return _drain(reader)


def _drain(reader: StreamingReader[T]) -> Iterator[T]:
    with reader:
        yield from reader


def _unpacker_options(
    schema: RecordSchema,
    mapper: Callable[[Any], Any] | None,
    max_record_size: int,
    read_size: int,
) -> dict[str, Any]:
    """Decoder settings that let no record grow past ``max_record_size``.

    msgpack checks str/bin/ext lengths only once their bytes are buffered, but array and map
    counts as soon as the header is read: a flat record type allows no maps and no array longer
    than a record, so a hostile count fails at its header. The buffer holds at most one
    unfinished record (at most ``max_record_size``, or the reader has already failed) plus one
    chunk (at most ``read_size``), so ``feed`` never raises ``BufferFull``.
    """
    flat = schema.flat and mapper is None
    return {
        "use_list": mapper is not None or schema.uses_lists,
        "raw": False,
        "strict_map_key": False,
        "max_buffer_size": max_record_size + read_size,
        "max_str_len": max_record_size,
        "max_bin_len": max_record_size,
        "max_ext_len": max_record_size,
        "max_array_len": len(schema) if flat else max_record_size,
        "max_map_len": 0 if flat else max_record_size // 2,
    }


def _records(
    chunks: _Chunks,
    unpacker: msgpack.Unpacker,
    schema: RecordSchema,
    limit: int,
    *,
    sequence: type | None,
    check: Callable[[Sequence[Any]], str | None] | None,
    mapper: Callable[[Any], Any] | None,
) -> Generator[Any, None, None]:
    """Decode, check and build records: the per-record hot loop.

    ``sequence`` is the array type a record must decode to (``None``: any value, for a mapper
    without validation); ``check`` validates field types; ``mapper`` replaces
    ``record_type(*values)``. Index and offset are kept in locals: the offset of a record is
    ``tell()`` after the one before it, because after a failed unpack ``tell()`` has moved on.
    The size of every record is checked before it is built: a record that fits in one chunk
    is measured as exactly as one that spans several.
    """
    build = schema.record_type
    feed = unpacker.feed
    tell = unpacker.tell
    index = 0
    offset = 0
    head: bytes = b""  # the first bytes of the unfinished record at the end of the last chunk
    inspected = -1  # offset of the last unfinished record whose head was inspected
    try:
        for chunk in chunks:
            try:
                feed(chunk)
                for values in unpacker:
                    end = tell()
                    if end - offset > limit:
                        raise _too_large(
                            f"{end - offset} bytes, over max_record_size={limit}", index, offset
                        )
                    if sequence is not None and values.__class__ is not sequence:
                        raise RecordError(schema.shape_error(values), index=index, offset=offset)
                    if check is not None and (reason := check(values)) is not None:
                        raise RecordError(reason, index=index, offset=offset)
                    try:
                        record = build(*values) if mapper is None else mapper(values)
                    except _CONVERSION_ERRORS as exc:
                        raise _record_error(schema, values, exc, index, offset) from exc
                    yield record
                    index += 1
                    offset = end
            except ReaderError:
                raise
            except _DECODER_ERRORS as exc:
                raise _decode_error(exc, schema, limit, index, offset) from exc
            pending = chunks.bytes_read - offset
            if pending:
                head = _pending_head(head, chunk, chunks.bytes_read, offset)
                if pending > limit:
                    raise _too_large(
                        f"over max_record_size={limit} ({pending} bytes read and the record "
                        "is not finished)",
                        index,
                        offset,
                    )
                if pending > _INSPECT_PENDING_OVER and inspected != offset:
                    inspected = offset
                    _check_declared(head, limit, index, offset)
        if chunks.bytes_read != offset:
            # Iterating an Unpacker stops quietly on a cut-off last record; the count does not.
            _check_declared(head, limit, index, offset)
            reason = (
                f"stream ends inside a record ({chunks.bytes_read - offset} bytes of it, "
                "need more bytes)"
            )
            raise TruncatedStreamError(reason, index=index, offset=offset)
    finally:
        chunks.close()


def _pending_head(
    head: bytes, chunk: bytes | bytearray | memoryview, read: int, offset: int
) -> bytes:
    """The first bytes (at most ``_PENDING_HEAD_SIZE``) of the record that starts at ``offset``.

    ``chunk`` is the chunk just fed and ``read`` the byte count at its end; ``head`` is the
    value this returned for the previous chunk.
    """
    start = read - len(chunk)
    if offset >= start:
        return bytes(chunk[offset - start : offset - start + _PENDING_HEAD_SIZE])
    if len(head) < _PENDING_HEAD_SIZE:
        return head + bytes(chunk[: _PENDING_HEAD_SIZE - len(head)])
    return head


def _check_declared(head: bytes, limit: int, index: int, offset: int) -> None:
    excess = declared_excess(head, limit)
    if excess is not None:
        raise _too_large(f"{excess}, over max_record_size={limit}", index, offset)


def _record_error(
    schema: RecordSchema, values: Any, exc: Exception, index: int, offset: int
) -> RecordError:
    if isinstance(values, (list, tuple)) and len(values) != len(schema):
        reason = schema.shape_error(values)
    else:
        reason = f"cannot build {schema.record_type.__qualname__}: {type(exc).__name__}: {exc}"
    return RecordError(reason, index=index, offset=offset)


def _decode_error(
    exc: Exception, schema: RecordSchema, limit: int, index: int, offset: int
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
    match = _LIMIT_MESSAGE.match(str(exc)) if type(exc) is ValueError else None
    if match is not None:
        count, kind = int(match.group(1)), match.group(2)
        if kind in ("array", "map") and schema.flat and count <= limit:
            reason = (
                f"found {_KIND_NAMES[kind]} of {count} entries where a record is a flat "
                f"array of {len(schema)} fields"
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
