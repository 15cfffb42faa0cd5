"""Stream typed records out of concatenated MessagePack.

Bytes flow one way: source -> chunks -> ``msgpack.Unpacker`` -> record -> caller. This module
owns the sources and the public reader; ``decoder`` owns the loop. Everything that can be
decided once per stream (record constructor, checks, decoder limits) is decided in
``StreamingReader.__init__``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Generator, Iterator
from types import TracebackType
from typing import IO, Any, Generic, Literal, TypeVar, Union, overload

import msgpack

from .decoder import BatchConverter, Plan, SkipLog, records, unpacker_options
from .errors import RecordError
from .model import Item
from .schema import RecordSchema

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "DEFAULT_READ_SIZE",
    "OnError",
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

OnError = Literal["raise", "skip"]


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
        on_error: ``"raise"`` (default) or ``"skip"``. With ``"skip"``, a record that is valid
            MessagePack but not a record of the type (a ``RecordError``: wrong shape, failed
            validation, a constructor or mapper that refused it) is passed over and counted in
            ``skipped``; ``errors`` keeps the first 100, each with its index (counting every
            record of the stream, skipped ones too) and offset. Decoding errors, truncation and
            over-size records still raise: after them no record boundary can be trusted.
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
        on_error: OnError = "raise",
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
        on_error: OnError = "raise",
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
        on_error: OnError = "raise",
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
        on_error: OnError = "raise",
    ) -> None:
        if mapper is not None and not callable(mapper):
            raise TypeError(f"mapper must be callable, got {mapper!r}")
        _check_on_error(on_error)
        _check_sizes(max_record_size, read_size)
        self._start(
            source,
            RecordSchema(record_type),
            mapper=mapper,
            validate=validate,
            skip=on_error == "skip",
            max_record_size=max_record_size,
            read_size=read_size,
        )

    @classmethod
    def _converting(
        cls,
        source: Source,
        schema: RecordSchema,
        convert: BatchConverter,
        *,
        max_record_size: int,
        read_size: int,
        on_error: OnError = "raise",
    ) -> StreamingReader[Any]:
        """A reader whose items are whole batches of validated records of ``schema``, each
        converted by ``convert`` in one call (the Arrow columns of :mod:`.arrow`), with the
        same error contract: a refused record is located, the records before it converted
        first. With ``on_error="skip"``, records that fail their checks or that the converter
        refuses are passed over and logged, and the rest converted."""
        _check_sizes(max_record_size, read_size)
        _check_on_error(on_error)
        reader: StreamingReader[Any] = cls.__new__(cls)
        reader._start(
            source,
            schema,
            validate=True,
            skip=on_error == "skip",
            convert=convert,
            max_record_size=max_record_size,
            read_size=read_size,
        )
        return reader

    def _start(
        self,
        source: Source,
        schema: RecordSchema,
        *,
        mapper: Callable[[Any], Any] | None = None,
        validate: bool,
        skip: bool = False,
        convert: BatchConverter | None = None,
        max_record_size: int,
        read_size: int,
    ) -> None:
        """Everything decided once per stream: decoder limits, checks, how records are made."""
        options = unpacker_options(schema, mapper, max_record_size, read_size, skip=skip)
        sequence = list if options["use_list"] else tuple
        plan = Plan(
            schema,
            # Without validation a mapper receives any decoded value unchecked.
            sequence=sequence if mapper is None or validate else None,
            validate=validate,
            mapper=mapper,
            convert=convert,
        )
        self._source = _Chunks(source, read_size)
        self.record_type = schema.record_type
        self.max_record_size = max_record_size
        self.validate = validate
        self.mapper = mapper
        unpacker = msgpack.Unpacker(**options)
        self._skipped = SkipLog() if skip else None
        self._records: Generator[T, None, None] = records(
            self._source, unpacker, plan, max_record_size, self._skipped
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
    on_error: OnError = "raise",
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
    on_error: OnError = "raise",
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
    on_error: OnError = "raise",
) -> Iterator[T]: ...


def read_items(
    source: Source,
    record_type: type[Any] = Item,
    *,
    mapper: Callable[[Any], Any] | None = None,
    validate: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
    on_error: OnError = "raise",
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
        on_error=on_error,
    )
    return _drain(reader)


def _check_on_error(on_error: str) -> None:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")


def _check_sizes(max_record_size: int, read_size: int) -> None:
    for name, value in (("max_record_size", max_record_size), ("read_size", read_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def _drain(reader: StreamingReader[T]) -> Iterator[T]:
    with reader:
        yield from reader
