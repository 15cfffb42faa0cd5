"""Stream typed records out of concatenated MessagePack.

Bytes flow one way: source -> chunks -> ``msgpack.Unpacker`` -> record -> caller. This module
owns the sources and the public reader; ``decoder`` owns the loop. Everything that can be
decided once per stream (record constructor, checks, decoder limits) is decided in
``StreamingReader.__init__``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import os
import threading
import typing
from collections.abc import Callable, Generator, Iterator
from types import TracebackType
from typing import IO, Any, Generic, Literal, TypeVar, Union, overload

from . import sniff
from .decoder import CompressedDataError, Pending, Plan, Reopened, SkipLog, records
from .engine import ExtHook
from .errors import RecordError
from .follow import Follower, check_followable
from .model import Item
from .record_type import type_label
from .sniff import Compression

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "DEFAULT_READ_SIZE",
    "OnError",
    "ReaderBase",
    "Source",
    "SourceReader",
    "StreamingReader",
    "read_items",
]

T = TypeVar("T")
_R = TypeVar("_R", bound="SourceReader[Any]")

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes], Any]
"""What a reader reads: a path, a bytes-like object, or a binary stream with ``read(n)``."""

DEFAULT_MAX_RECORD_SIZE = 100 * 1024 * 1024
"""100 MiB, the size of msgpack's own default buffer."""

DEFAULT_READ_SIZE = 64 * 1024

OnError = Literal["raise", "skip"]


class _Chunks:
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
        read_size: int,
        *,
        decompress: bool = True,
        follow: bool = False,
        blocking: bool = True,
    ) -> None:
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
        self.as_is = "a followed file is read as it is" if follow else "decompress=False"
        self.bytes_read = 0
        self.owned = False
        self.compression: Compression | None = None
        self.head = bytearray()  # the first bytes (decompressed), to name foreign input
        self.source: str | None = None  # the name errors carry, where there is one
        self._decompress = decompress
        self._view: memoryview | None = None
        self._stream: Any = None
        self._counted: _Counted | None = None
        self._read_size = read_size
        if isinstance(source, (bytes, bytearray, memoryview)):
            view = memoryview(source)
            self._view = view if view.format == "B" and view.ndim == 1 else view.cast("B")
            self.name = f"<{type(source).__name__}>"
        elif isinstance(source, (str, os.PathLike)):
            self._stream = open(source, "rb")  # noqa: SIM115 - closed by close()
            self.owned = True
            self.name = self.source = os.fsdecode(source)
        elif isinstance(source, io.TextIOBase):
            raise TypeError(
                f"{source!r} is a text stream; open it in binary mode ('rb') or pass .buffer"
            )
        elif callable(getattr(source, "read", None)):
            self._stream = source
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
            kind = sniff.compression(view) if self._decompress else None
            if kind is None or not self._can_open(kind):
                self.head += view[: sniff.HEAD_SIZE]
                yield from self._split(view)
                return
            self._counted = _Counted(_ViewReader(view).read, self.name)
            yield from self._chunks(_decompressor(kind, self._counted, size))
            return
        stream = self._stream
        read = getattr(stream, "read1", None) or stream.read
        if not self._decompress:
            yield from self._chunks(read)
            return
        # Read only what is there: a live source must not be held up waiting for bytes.
        first = _checked(read(size), self.name)
        while first and sniff.undecided(first):
            more = _checked(read(size), self.name)
            if not more:
                break
            first = bytes(first) + bytes(more)
        kind = sniff.compression(first)
        if kind is not None and self._can_open(kind):
            self._counted = _Counted(read, self.name, bytes(first))
            yield from self._chunks(_decompressor(kind, self._counted, size))
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
        ok = kind != "zstd" or sniff.zstd_module() is not None
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
            read = _failing_as_data(read, counted, self.compression)
        while True:
            chunk = read(size)
            if chunk.__class__ is Pending:  # an asynchronous source's bytes are awaited
                yield chunk
                continue
            chunk = _checked(chunk, self.name)
            if not chunk:
                return
            if len(head) < sniff.HEAD_SIZE:
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


def _checked(chunk: Any, name: str) -> bytes | bytearray | memoryview:
    """What a source's ``read`` returned, refused unless it is bytes."""
    if chunk is None:
        raise BlockingIOError(f"{name}: non-blocking sources are not supported")
    if not isinstance(chunk, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"{name}: read() returned {type(chunk).__name__}, not bytes; "
            "open the source in binary mode"
        )
    return chunk


class _ViewReader:
    """``read(n)`` over a bytes-like source, for a decompressor to read from."""

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        start = self._at
        end = len(self._view) if size < 0 else start + size
        self._at = min(end, len(self._view))
        return bytes(self._view[start:end])


class _Counted(io.RawIOBase):
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
        self.frames: _ZstdFrames | None = None

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
            piece = bytes(_checked(piece, self.name))
        self.count += len(piece)
        if self.frames is not None:
            self.frames.feed(piece)
        return piece

    def readinto(self, buffer: Any) -> int:  # pragma: no cover - the decompressors use read()
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _decompressor(kind: Compression, raw: _Counted, size: int) -> Callable[[int], bytes]:
    """``read1`` of a decompressing file object over ``raw``: at most ``size`` bytes a call,
    whatever is ready, so memory stays bounded and a live source is not held up."""
    stream: Any
    if kind == "gzip":
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
    elif kind == "bzip2":
        stream = bz2.BZ2File(raw)
    elif kind == "xz":
        # Never closed itself: it holds no resource of its own, and the source is closed by
        # _Chunks.close().
        stream = lzma.LZMAFile(typing.cast("IO[bytes]", raw))  # noqa: SIM115
    else:
        raw.frames = _ZstdFrames()
        zstandard: Any = sniff.zstd_module()
        stream = zstandard.ZstdDecompressor().stream_reader(
            raw, read_size=size, read_across_frames=True, closefd=False
        )
    read1: Callable[[int], bytes] = stream.read1
    return read1


def _failing_as_data(
    read: Callable[[int], bytes], counted: _Counted, kind: Compression | None
) -> Callable[[int], bytes]:
    """``read``, with what a decompressor raises for bad compressed data turned into a
    :class:`~.decoder.CompressedDataError` that the decoder locates."""

    def reading(size: int) -> bytes:
        try:
            data = read(size)
        except Exception as exc:
            if exc is counted.failure:
                raise  # the source's own error, not the data's
            if isinstance(exc, EOFError):
                raise CompressedDataError(
                    f"the {kind} stream ends early ({exc})", truncated=True
                ) from exc
            raise CompressedDataError(f"corrupt {kind} data: {exc}", truncated=False) from exc
        frames = counted.frames
        if not data and frames is not None and not frames.complete:
            raise CompressedDataError(
                f"the {kind} stream ends early (its last frame is cut off)", truncated=True
            )
        return data

    return reading


class _ZstdFrames:
    """Follows the frame and block headers of a zstd stream as it passes, to tell a stream
    cut off inside a frame from a whole one: zstandard's reader ends quietly on either.

    Only headers are parsed; block contents are skipped by count, so the work is per block
    (up to 128 KiB), not per byte.
    """

    def __init__(self) -> None:
        self._pending = bytearray()
        self._skip = 0
        self._in_frame = False
        self._checksum = 0
        self._lost = False  # not zstd framing: the decompressor reports that itself

    @property
    def complete(self) -> bool:
        """Whether the bytes so far end after a whole frame (or are not zstd framing)."""
        return self._lost or (not self._in_frame and not self._skip and not self._pending)

    def feed(self, data: bytes) -> None:
        if self._lost:
            return
        if not self._pending and self._skip >= len(data):
            self._skip -= len(data)
            return
        buf = self._pending
        buf += data
        at = 0
        while True:
            if self._skip:
                step = min(self._skip, len(buf) - at)
                at += step
                self._skip -= step
                if self._skip:
                    break
            have = len(buf) - at
            if not self._in_frame:
                if have < 5:
                    break
                magic = int.from_bytes(buf[at : at + 4], "little")
                if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame: magic, size, data
                    if have < 8:
                        break
                    self._skip = int.from_bytes(buf[at + 4 : at + 8], "little")
                    at += 8
                    continue
                if magic != 0xFD2FB528:
                    self._lost = True
                    break
                descriptor = buf[at + 4]
                single = descriptor >> 5 & 1
                self._checksum = 4 * (descriptor >> 2 & 1)
                self._skip = (
                    (1 - single)  # window descriptor
                    + (0, 1, 2, 4)[descriptor & 3]  # dictionary id
                    + (single, 2, 4, 8)[descriptor >> 6]  # frame content size
                )
                at += 5
                self._in_frame = True
                continue
            if have < 3:
                break
            header = int.from_bytes(buf[at : at + 3], "little")
            at += 3
            self._skip = 1 if header >> 1 & 3 == 1 else header >> 3  # an RLE block holds 1 byte
            if header & 1:  # the last block, then the checksum if there is one
                self._skip += self._checksum
                self._in_frame = False
        del buf[:at]


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
    max_record_size: int
    _source: _Chunks
    _skipped: SkipLog | None
    _batches: Generator[list[Any] | Pending, None, None]
    _closed: bool
    _iterating: int | None = None  # the thread that iterates, once one has
    _blocking = True  # a follower sleeps in the reading thread; else it hands its pauses up

    def _open(
        self,
        source: Source,
        record_type: Any,
        plan: Plan,
        *,
        on_error: OnError,
        max_record_size: int,
        read_size: int,
        decompress: bool,
        follow: bool = False,
    ) -> Generator[list[Any] | Pending, None, None]:
        """Open ``source`` and return the batches of what ``plan`` makes of its records.

        Everything decided once per stream is decided here: the options are checked, the
        source opened, the decoder and its limits made.
        """
        check_on_error(on_error)
        _check_sizes(max_record_size, read_size)
        self._closed = True  # until the source is open: close() then has nothing to do
        self._source = _Chunks(
            source, read_size, decompress=decompress, follow=follow, blocking=self._blocking
        )
        self.record_type = record_type
        self.max_record_size = max_record_size
        self._skipped = SkipLog() if on_error == "skip" else None
        self._closed = False
        self._batches = records(self._source, plan, max_record_size, read_size, self._skipped)
        return self._batches

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
    :class:`~msgpack_reader_py.arrow.BatchReader` are both one.

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

    Each record becomes a ``record_type`` (:class:`~msgpack_reader_py.model.Item` by
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
    :class:`~msgpack_reader_py.aio.AsyncStreamingReader` is the same reader for ``async for``.

    Broken data raises a :class:`~msgpack_reader_py.errors.ReaderError` naming the failing
    record's ``index`` and byte ``offset``, after every good record before it was yielded;
    the reader is then finished. I/O errors from the source (``OSError``) pass through as they
    are. Offsets count from where the reader started reading the source. Errors carry the
    source's name in ``.source`` where there is one (a path, a stream's ``name``).

    Args:
        source: what to read (see above).
        record_type: the type each record becomes (see above). Default :class:`Item`.
        mapper: a callable applied to each record as decoded (lists for arrays, dicts for
            maps, ``datetime`` for the timestamp extension, ``msgspec.msgpack.Ext`` for other
            extensions), instead of building a ``record_type``; a ``TypeError``,
            ``ValueError``, ``KeyError`` or ``IndexError`` it raises becomes a ``RecordError``.
            It is called on a whole chunk's records before the first of them is handed over.
        ext_hook: ``ext_hook(code, data) -> value`` turns extension types other than the
            timestamp (-1) into values, as in msgpack and msgspec; it is called where a field
            accepts ``Any`` or ``datetime``, so that a field annotated ``datetime`` can take
            the value it returns (see :func:`~msgpack_reader_py.ext.fluentd_event_time`). An
            exception it raises becomes a ``RecordError``.
        forbid_unknown_keys: refuse a map-shaped record (or nested record) with a key that
            names no field, as a ``RecordError``. Default ``False``: such keys are ignored.
        max_record_size: the largest encoded record accepted, in bytes. Default 100 MiB.
        read_size: the most bytes asked of the source in one read. Default 64 KiB.
        on_error: ``"raise"`` (default) or ``"skip"``. With ``"skip"``, a record that is valid
            MessagePack but not a record of the type (a ``RecordError``: wrong shape, failed
            a field that fails its check, a mapper that refused it) is passed over and counted in
            ``skipped``; ``errors`` keeps the first 100, each with its index (counting every
            record of the stream, skipped ones too) and offset. Decoding errors, truncation and
            over-size records still raise: after them no record boundary can be trusted.
        decompress: read a source whose first bytes are gzip, bzip2, xz or (with the ``zstd``
            extra) zstd through a decompressor, a read at a time; offsets, ``bytes_read`` and
            record sizes then count decompressed bytes. Default ``True``.
        follow: keep reading a file (``source`` a path) as it grows, like ``tail -F``: at its
            end the reader waits for more (polling, with pauses that grow to a quarter of a
            second while nothing arrives) instead of ending, and a record cut off at the end
            waits for the rest of its bytes. Iteration ends when ``close()`` is called, from
            any thread; ``KeyboardInterrupt`` ends it as usual. A file truncated or replaced
            (log rotation) is read again from its start, with a warning on the
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
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
        on_error: OnError = "raise",
        decompress: bool = True,
        follow: bool = False,
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[T],
        source: Source,
        record_type: type[T],
        *,
        mapper: None = None,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
        on_error: OnError = "raise",
        decompress: bool = True,
        follow: bool = False,
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[Any],
        source: Source,
        record_type: object,
        *,
        mapper: None = None,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
        on_error: OnError = "raise",
        decompress: bool = True,
        follow: bool = False,
    ) -> None: ...

    @overload
    def __init__(
        self: StreamingReader[T],
        source: Source,
        record_type: type[Any] = ...,
        *,
        mapper: Callable[[Any], T],
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
        on_error: OnError = "raise",
        decompress: bool = True,
        follow: bool = False,
    ) -> None: ...

    def __init__(
        self,
        source: Source,
        record_type: Any = Item,
        *,
        mapper: Callable[[Any], Any] | None = None,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
        on_error: OnError = "raise",
        decompress: bool = True,
        follow: bool = False,
    ) -> None:
        self.mapper = mapper
        self._records = chained(
            self._open(
                source,
                record_type,
                typed_plan(record_type, mapper, ext_hook, forbid_unknown_keys),
                on_error=on_error,
                max_record_size=max_record_size,
                read_size=read_size,
                decompress=decompress,
                follow=follow,
            )
        )

    def __repr__(self) -> str:
        return describe_reader(self, self.mapper)


def chained(batches: Iterator[list[Any] | Pending]) -> Iterator[Any]:
    """The records of a synchronous reader's batches, one stream: ``chain`` steps through each
    batch in C, so a record costs no generator step. (A synchronous source never hands over a
    :class:`~.decoder.Pending`.)"""
    return itertools.chain.from_iterable(typing.cast(Iterator[list[Any]], batches))


def typed_plan(
    record_type: Any,
    mapper: Callable[[Any], Any] | None,
    ext_hook: ExtHook | None,
    forbid_unknown_keys: bool,
) -> Plan:
    """The plan of a reader of typed records (or of a ``mapper``'s), its options checked."""
    if mapper is not None and not callable(mapper):
        raise TypeError(f"mapper must be callable, got {mapper!r}")
    return Plan(
        record_type, mapper=mapper, ext_hook=ext_hook, forbid_unknown_keys=forbid_unknown_keys
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
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
    on_error: OnError = "raise",
    decompress: bool = True,
    follow: bool = False,
) -> Iterator[Item]: ...


@overload
def read_items(
    source: Source,
    record_type: type[T],
    *,
    mapper: None = None,
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
    on_error: OnError = "raise",
    decompress: bool = True,
    follow: bool = False,
) -> Iterator[T]: ...


@overload
def read_items(
    source: Source,
    record_type: object,
    *,
    mapper: None = None,
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
    on_error: OnError = "raise",
    decompress: bool = True,
    follow: bool = False,
) -> Iterator[Any]: ...


@overload
def read_items(
    source: Source,
    record_type: type[Any] = ...,
    *,
    mapper: Callable[[Any], T],
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
    on_error: OnError = "raise",
    decompress: bool = True,
    follow: bool = False,
) -> Iterator[T]: ...


def read_items(
    source: Source,
    record_type: Any = Item,
    *,
    mapper: Callable[[Any], Any] | None = None,
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    read_size: int = DEFAULT_READ_SIZE,
    on_error: OnError = "raise",
    decompress: bool = True,
    follow: bool = False,
) -> Iterator[Any]:
    """Yield the records of ``source``; the options are :class:`StreamingReader`'s.

    The reader is created at once, so a bad argument or a missing file fails at the call, and
    it is closed when the generator is exhausted, fails or is closed.
    """
    reader = StreamingReader(
        source,
        record_type,
        mapper=mapper,
        ext_hook=ext_hook,
        forbid_unknown_keys=forbid_unknown_keys,
        max_record_size=max_record_size,
        read_size=read_size,
        on_error=on_error,
        decompress=decompress,
        follow=follow,
    )
    return _drain(reader)


def check_on_error(on_error: object) -> None:
    """Refuse an ``on_error`` other than ``"raise"`` or ``"skip"`` (``ValueError``)."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")


def _check_sizes(max_record_size: int, read_size: int) -> None:
    for name, value in (("max_record_size", max_record_size), ("read_size", read_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def _drain(reader: StreamingReader[T]) -> Iterator[T]:
    with reader:
        yield from reader
