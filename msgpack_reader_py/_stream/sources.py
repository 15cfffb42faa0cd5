"""Where records come from: a path, a bytes-like object or a binary stream, as an iterator
of byte chunks that counts what it has read, decompressing what is compressed.

:class:`Chunks` is what the reading loop reads: it opens a path (and closes what it opened),
slices bytes without copying, reads a stream with ``read1`` where it has one (a pipe or a
socket hands over what has come), follows a growing file, and, where a stream's first bytes
are a compression's magic number, reads it through a decompressor (:mod:`.compression`).
Besides chunks it may hand over a :class:`Pending` (nothing yet: an asynchronous reader
awaits) or a :class:`Reopened` (a followed file starts again).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from typing import IO, Any, Protocol, Union

from .._base.options import DEFAULT_READ_SIZE, ReadOptions
from . import sniff
from .compression import (
    Compression,
    ZstdFrames,
    compression,
    decompressor,
    failing_as_data,
    undecided,
    zstd_module,
)
from .follow import Follower, check_followable
from .pending import Pending, Reopened

__all__ = [
    "ChunkSource",
    "Chunks",
    "Counted",
    "Source",
    "Spooled",
    "ViewReader",
    "checked_chunk",
]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes], Any]
"""What a reader reads: a path, a bytes-like object, or a binary stream with ``read(n)``."""

_DEFAULTS = ReadOptions()


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


class Chunks:
    """The source as an iterator of byte chunks; counts what it has read.

    Streams are read with ``read1`` where they have it, so a record is handed over as soon as
    its last byte arrives from a pipe or socket instead of waiting for a full buffer. With
    ``decompress``, a source that starts with a compression's magic number is decompressed as
    it is read (see :mod:`.sniff`); ``bytes_read`` then counts decompressed bytes and
    ``source_bytes_read`` the compressed bytes taken from the source.

    With ``follow`` (a path only), the end of the file is not the end of the stream: the
    follower waits for more, and a file truncated or replaced is read again from its start
    (:mod:`.follow`); ``bytes_read`` then counts the bytes of the file being read.
    """

    def __init__(
        self,
        source: Source,
        options: ReadOptions = _DEFAULTS,
        *,
        blocking: bool = True,
        as_is: str | None = None,
        offset: int = 0,
    ) -> None:
        read_size, decompress, follow = options.read_size, options.decompress, options.follow
        if offset:
            # The source read from one of its records on (a byte range, a record found by
            # its offset): offsets and ``bytes_read`` still count from the source's start.
            # Its bytes there are not its first: nothing to sniff, nothing to decompress.
            if follow:
                raise ValueError("a followed file is read from its start")
            as_is = as_is or "a source read from the middle is read as it is"
        self._follow: Follower | None = None
        if follow:
            if not isinstance(source, (str, os.PathLike)):
                raise TypeError(
                    f"follow=True follows a file by its path; got {type(source).__name__} (a "
                    "pipe or socket needs no following: the reader waits for its bytes anyway)"
                )
            path = os.fsdecode(source)
            try:
                check_followable(path)
            except ValueError as exc:
                raise ValueError(f"follow=True: {exc}") from None
            self._follow = Follower(path, blocking=blocking)
            # Read as it is: a compressed stream cannot be read up to where its writer has
            # got, so it fails at its first record, naming its compression.
            decompress = False
        if as_is is not None:  # the reader's own reason to read the source as it is
            decompress = False
        elif follow:
            as_is = "a followed file is read as it is"
        self.as_is = as_is or "decompress=False"
        self.bytes_read = offset
        self._sniffing = not offset
        self.owned = False
        self.compression: Compression | None = None
        self.head = bytearray()  # the first bytes (decompressed), to name foreign input
        self.source: str | None = None  # the name errors carry, where there is one
        self._decompress = decompress
        self._view: memoryview | None = None
        self._stream: Any = None
        self._counted: Counted | None = None
        self._read_size = read_size
        if isinstance(source, (bytes, bytearray, memoryview)):
            view = memoryview(source)
            view = view if view.format == "B" and view.ndim == 1 else view.cast("B")
            self._view = view[offset:]
            self.name = f"<{type(source).__name__}>"
        elif isinstance(source, (str, os.PathLike)):
            self._stream = open(source, "rb")  # noqa: SIM115 - closed by close()
            self._stream.seek(offset)
            self.owned = True
            self.name = self.source = os.fsdecode(source)
        elif isinstance(source, io.TextIOBase):
            raise TypeError(
                f"{source!r} is a text stream; open it in binary mode ('rb') or pass .buffer"
            )
        elif callable(getattr(source, "read", None)):
            self._stream = source
            if offset:
                source.seek(offset)
            name = getattr(source, "name", None)
            # An int name is a file descriptor (open(fd), socket.makefile): no name to show.
            self.source = name if isinstance(name, str) else None
            kind = type(getattr(source, "wrapped", source)).__name__  # an awaited source's
            self.name = f"<{kind}>" if name is None else str(name)
        else:
            raise TypeError(
                "source must be a path, a bytes-like object or a binary stream with read(n), "
                f"got {type(source).__name__}"
            )

    @property
    def source_bytes_read(self) -> int:
        """Bytes taken from the source itself: compressed bytes when it is compressed."""
        return self.bytes_read if self._counted is None else self._counted.count

    @property
    def following(self) -> bool:
        """Whether the source is a followed file."""
        return self._follow is not None

    @property
    def stopped(self) -> bool:
        """Whether following was stopped (by the reader's ``close()``)."""
        return self._follow is not None and self._follow.stopped

    def stop(self) -> None:
        """End following: a follower waiting in another thread wakes and ends the stream."""
        if self._follow is not None:
            self._follow.stop()

    def __iter__(self) -> Iterator[bytes | bytearray | memoryview | Pending | Reopened]:
        size = self._read_size
        if self._follow is not None:
            yield from self._followed(self._follow)
            return
        if self._view is not None:
            view = self._view
            kind = compression(view) if self._decompress else None
            if kind is None or not self._can_open(kind):
                if self._sniffing:
                    self.head += view[: sniff.HEAD_SIZE]
                yield from self._split(view)
                return
            self._counted = Counted(ViewReader(view).read, self.name)
            yield from self._chunks(decompressor(kind, self._counted, size))
            return
        stream = self._stream
        read = getattr(stream, "read1", None) or stream.read
        if not self._decompress:
            yield from self._chunks(read)
            return
        # Read only what is there: a live source must not be held up waiting for bytes.
        first = checked_chunk(read(size), self.name)
        while first and undecided(first):
            more = checked_chunk(read(size), self.name)
            if not more:
                break
            first = bytes(first) + bytes(more)
        kind = compression(first)
        if kind is not None and self._can_open(kind):
            self._counted = Counted(read, self.name, bytes(first))
            yield from self._chunks(decompressor(kind, self._counted, size))
            return
        if first:
            self.head += first[: sniff.HEAD_SIZE]
            yield from self._split(memoryview(first))
            yield from self._chunks(read)

    def _followed(
        self, follow: Follower
    ) -> Iterator[bytes | bytearray | memoryview | Pending | Reopened]:
        while not follow.stopped:
            stream = self._stream
            before = self.bytes_read
            for chunk in self._chunks(stream.read1):
                if follow.stopped:  # closed from another thread: no more reads
                    return
                yield chunk
            if self.bytes_read != before:
                follow.arrived()
            why = follow.changed(stream)
            if why is None:
                yield from follow.pause()
                continue
            self._stream = follow.reopen(stream)
            self.bytes_read = 0
            self.head.clear()
            yield Reopened(why)

    def _can_open(self, kind: Compression) -> bool:
        # Without zstandard, zstd data is read as it is: its first record fails, and the
        # error names the extra to install (sniff.foreign).
        ok = kind != "zstd" or zstd_module() is not None
        if ok:
            self.compression = kind
        return ok

    def _chunks(
        self, read: Callable[[int], Any]
    ) -> Iterator[bytes | bytearray | memoryview | Pending]:
        size = self._read_size
        head = self.head
        counted = self._counted
        if counted is not None:
            read = failing_as_data(read, counted, self.compression)
        while True:
            chunk = read(size)
            if chunk.__class__ is Pending:  # an asynchronous source's bytes are awaited
                yield chunk
                continue
            chunk = checked_chunk(chunk, self.name)
            if not chunk:
                return
            if len(head) < sniff.HEAD_SIZE and self._sniffing:
                head += chunk[: sniff.HEAD_SIZE - len(head)]
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


def checked_chunk(chunk: Any, name: str) -> bytes | bytearray | memoryview:
    """What a source's ``read`` returned, refused unless it is bytes."""
    if chunk is None:
        raise BlockingIOError(f"{name}: non-blocking sources are not supported")
    if not isinstance(chunk, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"{name}: read() returned {type(chunk).__name__}, not bytes; "
            "open the source in binary mode"
        )
    return chunk


class ViewReader:
    """``read(n)`` over a bytes-like source, for a decompressor to read from."""

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        start = self._at
        end = len(self._view) if size < 0 else start + size
        self._at = min(end, len(self._view))
        return bytes(self._view[start:end])


class Counted(io.RawIOBase):
    """The compressed source as a decompressor reads it: the bytes read while sniffing first,
    then the source's own ``read1`` (or ``read``), counted. Remembers the source's own
    exception, so that it passes through as it is rather than as corrupt data."""

    def __init__(self, read: Callable[[int], Any], name: str, first: bytes = b"") -> None:
        super().__init__()
        self._read = read
        self._first = bytes(first)
        self.count = 0
        self.name = name
        self.failure: BaseException | None = None
        self.frames: ZstdFrames | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._first:
            piece = self._first if size < 0 else self._first[:size]
            self._first = self._first[len(piece) :]
        else:
            try:
                piece = self._read(size if size >= 0 else DEFAULT_READ_SIZE)
            except BaseException as exc:
                self.failure = exc
                raise
            piece = bytes(checked_chunk(piece, self.name))
        self.count += len(piece)
        if self.frames is not None:
            self.frames.feed(piece)
        return piece

    def readinto(self, buffer: Any) -> int:  # pragma: no cover - the decompressors use read()
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class Spooled:
    """A stream (a pipe, stdin, a socket) kept as it is read, to be read again from its start:
    in memory up to :data:`IN_MEMORY` bytes, in a temporary file beyond, up to ``limit``
    bytes (``None``: all of it).

    :meth:`head` reads what was kept; :meth:`whole` what was kept, then the rest of the stream
    (where ``complete`` is false), so that the stream is read once and its offsets are the
    stream's. Either is named as the stream is. The kept bytes are dropped by :meth:`close`,
    or when the object is.
    """

    IN_MEMORY = 8 * 1024 * 1024

    def __init__(self, stream: Any, *, limit: int | None = None) -> None:
        import tempfile  # only where a stream is kept

        self._stream = stream
        self.name = getattr(stream, "name", None)
        # Kept open as long as this object: closed by close() or when it is dropped.
        self._file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=self.IN_MEMORY)  # noqa: SIM115
        read = getattr(stream, "read1", None) or stream.read
        self.size = 0
        self.complete = False
        """Whether the stream ended within ``limit``: everything is kept."""
        # One byte past the limit tells a stream that ends there from one that goes on.
        while limit is None or self.size <= limit:
            wanted = _SPOOL_CHUNK if limit is None else min(_SPOOL_CHUNK, limit + 1 - self.size)
            data = checked_chunk(read(wanted), str(self.name))
            if not data:
                self.complete = True
                break
            self._file.write(data)
            self.size += len(data)

    def head(self) -> _SpoolReader:
        """A reader of the bytes kept, from the first."""
        return _SpoolReader(self, None)

    def whole(self) -> _SpoolReader:
        """A reader of the bytes kept, then of the rest of the stream (once)."""
        return _SpoolReader(self, None if self.complete else self._stream)

    def read_at(self, position: int, size: int) -> bytes:
        self._file.seek(position)
        return self._file.read(size)

    def close(self) -> None:
        self._file.close()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()


_SPOOL_CHUNK = 1024 * 1024


class _SpoolReader:
    """``read(n)`` over a :class:`Spooled` stream's kept bytes, then over ``rest``."""

    def __init__(self, spooled: Spooled, rest: Any) -> None:
        self.spooled = spooled  # kept alive while it is read
        self.name = spooled.name
        self._at = 0
        self._rest = None if rest is None else getattr(rest, "read1", None) or rest.read

    def read(self, size: int = -1) -> bytes:
        if self._at < self.spooled.size:
            wanted = self.spooled.size - self._at if size < 0 else size
            data = self.spooled.read_at(self._at, min(wanted, self.spooled.size - self._at))
            self._at += len(data)
            return data
        if self._rest is None:
            return b""
        return bytes(self._rest(size if size >= 0 else _SPOOL_CHUNK))
