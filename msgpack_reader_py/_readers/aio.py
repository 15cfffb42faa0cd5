"""``async for`` over MessagePack records: :class:`AsyncStreamingReader`.

The asynchronous reader is the synchronous one with another way of getting chunks. The
reading loop (:func:`~msgpack_reader_py._stream.delivery.records`) is a plain generator; when its
source has no bytes yet it hands up a :class:`~msgpack_reader_py._stream.sources.Pending` instead of
a batch of records, and the reader awaits the source (or sleeps, for a followed file), then
steps the loop again. Framing, typing, errors, limits and skip mode are the loop's, the same
code as :class:`~msgpack_reader_py.StreamingReader`'s; only the awaiting is here.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .._base.options import ReadKeywords, ReadOptions
from .._reference.model import Item
from .._stream.pending import READ_MORE, Pending
from .._stream.sources import Source
from .streaming_reader import ReaderBase, describe_reader, typed_plan

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AsyncStreamingReader"]

T = TypeVar("T")
_A = TypeVar("_A", bound="AsyncStreamingReader[Any]")


class _Awaited:
    """An asynchronous source as the decoding loop reads it: ``read1`` hands over the chunk
    :meth:`fill` awaited, or :data:`~.pending.READ_MORE` when there is none yet, so that the
    reader awaits one more chunk only when the loop asks for it: with a slow consumer, no
    more than one chunk is read ahead."""

    def __init__(self, source: Any) -> None:
        self.wrapped = source
        read = getattr(source, "read", None)
        self._read: Callable[[int], Any] | None = read if callable(read) else None
        self._chunks: AsyncIterator[Any] | None = None
        if self._read is None:
            self._chunks = aiter(source)
        self._chunk: Any = None
        self._ended = False
        self._size = 0  # what the loop asked for last
        self.name = getattr(source, "name", None)

    def read1(self, size: int) -> Any:
        chunk = self._chunk
        if chunk is None:
            self._size = size
            return b"" if self._ended else READ_MORE
        self._chunk = None
        return chunk

    read = read1

    async def fill(self) -> None:
        """Await the source's next chunk (of a stream, at most what the loop asked for)."""
        if self._read is not None:
            chunk = self._read(self._size)
            if inspect.isawaitable(chunk):
                chunk = await chunk
            self._ended = not chunk
            self._chunk = chunk or None
            return
        assert self._chunks is not None
        while True:  # an empty chunk of an async iterable is not its end
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                self._ended = True
                return
            if not isinstance(chunk, (bytes, bytearray, memoryview)) or chunk:
                self._chunk = chunk  # anything but bytes is refused by the loop, named
                return


def _is_async(source: Any) -> bool:
    """Whether ``source`` is read by awaiting: a stream with ``async def read`` (an
    ``asyncio.StreamReader``), a ``read`` that returns awaitables, or an async iterable. A
    path, bytes or a blocking stream (an ``io`` object) is read as the synchronous reader
    reads it."""
    if isinstance(source, (str, bytes, bytearray, memoryview, io.IOBase)):
        return False
    if hasattr(source, "__fspath__"):
        return False
    return callable(getattr(source, "read", None)) or hasattr(source, "__aiter__")


class AsyncStreamingReader(ReaderBase[T]):
    """Read concatenated MessagePack records from an asynchronous ``source`` with
    ``async for``, as :class:`~msgpack_reader_py.StreamingReader` reads a synchronous one::

        async with AsyncStreamingReader(stream_reader, Event) as events:
            async for event in events:
                ...

    ``source`` is an ``asyncio.StreamReader`` (``asyncio.open_connection``, a subprocess's
    stdout), anything with a ``read(n)`` that returns an awaitable of bytes, or an async
    iterable of byte chunks (an HTTP client's chunk iterator). A path, a bytes-like object or a
    blocking binary stream is read as :class:`~msgpack_reader_py.StreamingReader` reads it,
    without awaiting (a regular file's reads do not block for long); with ``follow=True`` a
    path is followed as the file grows, and the pauses between looks are ``asyncio.sleep``.

    The records, record types, options, error contract (index, offset, source), size limits
    and skip mode are :class:`~msgpack_reader_py.StreamingReader`'s, from the same code. Each
    record is yielded as soon as its last byte has arrived. The source is awaited for one
    chunk (at most ``read_size`` bytes) only when every record of the chunks before has been
    yielded, so a slow consumer holds at most one chunk and one unfinished record
    (``max_record_size``) in memory. An exception from the source (a reset connection's
    ``ConnectionResetError``) is raised after every complete record before it was yielded.
    Cancelling the task that iterates closes the reader; records already yielded are the
    consumer's. A path, bytes or a blocking stream that is compressed is decompressed as the
    synchronous reader does it; an awaited source is read as it is (decompressing pulls bytes,
    and an awaited source can only hand them over as they come), so a compressed one fails at
    its first record with an error that names its compression, as a followed file does.

    The reader closes only what it opened (a path's file), as the synchronous one does:
    ``close()`` or ``await aclose()``, leaving the ``async with`` block, the end of the stream
    and a failure all close it, and ``close()`` may be called from another thread to end
    following.

    Args:
        source: what to read (see above).
        record_type: the type each record becomes. Default :class:`Item`.
        mapper: a callable that builds each record from its decoded value, unchecked,
            instead of ``record_type``, as :class:`~msgpack_reader_py.StreamingReader`'s.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options, as :class:`~msgpack_reader_py.StreamingReader`
            takes them; ``follow`` follows a path, and ``decompress`` applies to what is not
            awaited.
    """

    _blocking = False

    @overload
    def __init__(
        self: AsyncStreamingReader[Item],
        source: Source,
        record_type: type[Item] = ...,
        *,
        mapper: None = None,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncStreamingReader[T],
        source: Source,
        record_type: type[T],
        *,
        mapper: None = None,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncStreamingReader[Any],
        source: Source,
        record_type: object,
        *,
        mapper: None = None,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    @overload
    def __init__(
        self: AsyncStreamingReader[T],
        source: Source,
        record_type: object = ...,
        *,
        mapper: Callable[[Any], T],
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None: ...

    def __init__(
        self,
        source: Source,
        record_type: Any = Item,
        *,
        mapper: Callable[[Any], Any] | None = None,
        options: ReadOptions | None = None,
        **keywords: Any,
    ) -> None:
        self.mapper = mapper
        read = ReadOptions.of(options, keywords, "AsyncStreamingReader()")
        self._awaited = _Awaited(source) if not read.follow and _is_async(source) else None
        self.open_batches(
            source if self._awaited is None else self._awaited,
            record_type,
            typed_plan(record_type, mapper, read),
            read,
            # Decompression pulls bytes from a stream: an awaited source can only push them.
            as_is=None if self._awaited is None else "an awaited source is read as it is",
        )
        self._records = self._stepped()

    async def _stepped(self) -> AsyncGenerator[T, None]:
        awaited = self._awaited
        try:
            for batch in self._batches:
                if isinstance(batch, Pending):
                    if batch.delay is None:
                        assert awaited is not None  # only an awaited source has nothing yet
                        await awaited.fill()
                    else:
                        await asyncio.sleep(batch.delay)
                    continue
                for record in batch:
                    yield record
        finally:
            self.close()

    def __aiter__(self) -> AsyncGenerator[T, None]:
        # The async generator itself, not ``self``: ``async for`` then steps it directly
        # instead of through a Python-level ``__anext__`` per record.
        if self._closed:
            raise ValueError(f"I/O operation on a closed {type(self).__name__}")
        self._iterating = threading.get_ident()
        return self._records

    async def __anext__(self) -> T:
        if self._closed:
            raise ValueError(f"I/O operation on a closed {type(self).__name__}")
        self._iterating = threading.get_ident()
        return await anext(self._records)

    async def __aenter__(self: _A) -> _A:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the reader (:meth:`close`) and finish its record iterator. From another task
        than the one iterating, the iterating task ends when it next gets past its wait:
        within a pause (a quarter of a second at most) for a followed file, or when the source
        gives bytes or ends (to stop a task waiting on a quiet connection, cancel it)."""
        self.close()
        # Being iterated by a task waiting inside it, it cannot be finished here: that task
        # ends it.
        with contextlib.suppress(RuntimeError):
            await self._records.aclose()

    def __repr__(self) -> str:
        return describe_reader(self, self.mapper)
