"""Compressed input: what a stream's first bytes say it is compressed with, and the
decompressors that read it a read at a time, their failures told as data errors.

gzip, bzip2 and xz need only the standard library; zstd the ``zstandard`` module (the ``zstd``
extra), imported only when zstd data is seen. zstandard's reader ends quietly at the end of
its input whether or not a frame was finished: :class:`ZstdFrames` follows the frame headers
to tell a cut-off stream from a whole one.

A zstd file of several frames can be entered at any frame, each frame being compressed apart
from the others: :func:`zstd_layout` tells from the frame and block headers alone (no byte
decompressed) where each frame starts, in the file and in its decompressed bytes, where every
frame declares its size; :class:`ZstdFrom` reads the decompressed bytes from one of them on.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import typing
from collections.abc import Callable
from typing import IO, Any, Literal

__all__ = [
    "CompressedDataError",
    "Compression",
    "ZstdFrame",
    "ZstdFrames",
    "ZstdFrom",
    "ZstdLayout",
    "compression",
    "decompressor",
    "failing_as_data",
    "undecided",
    "zstd_frame",
    "zstd_layout",
    "zstd_module",
]

Compression = Literal["gzip", "bzip2", "xz", "zstd"]

_COMPRESSED: tuple[tuple[bytes, Compression], ...] = (
    (b"\x1f\x8b\x08", "gzip"),
    *((b"BZh" + bytes([level]), "bzip2") for level in b"123456789"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    # A zstd stream may start with a skippable frame: pzstd starts each frame with one.
    *(((0x184D2A50 + low).to_bytes(4, "little"), "zstd") for low in range(16)),
)
_LONGEST = max(len(magic) for magic, _ in _COMPRESSED)
_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC = 0x184D2A50  # the low four bits are free


class CompressedDataError(Exception):
    """Raised by a chunk source for bad compressed data; the loop locates it as a
    ``TruncatedStreamError`` (``truncated``) or a ``DecodeError``."""

    def __init__(self, reason: str, *, truncated: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.truncated = truncated


def undecided(head: bytes | bytearray | memoryview) -> bool:
    """Whether ``head`` is a proper prefix of a compression's magic number: only then is it
    worth waiting for more bytes before deciding."""
    size = len(head)
    return size < _LONGEST and any(
        len(magic) > size and magic.startswith(head) for magic, _ in _COMPRESSED
    )


def compression(head: bytes | bytearray | memoryview) -> Compression | None:
    """The compression whose magic number ``head`` starts with, or ``None``."""
    head = bytes(head[:_LONGEST])
    for magic, name in _COMPRESSED:
        if head.startswith(magic):
            return name
    return None


def zstd_module() -> object | None:
    """The ``zstandard`` module, imported only when zstd data is seen; ``None`` if missing."""
    try:
        return importlib.import_module("zstandard")
    except ModuleNotFoundError:
        return None


def decompressor(kind: Compression, raw: Any, size: int) -> Callable[[int], bytes]:
    """``read1`` of a decompressing file object over ``raw`` (a :class:`~.sources.Counted`): at
    most ``size`` bytes a call, whatever is ready, so memory stays bounded and a live source
    is not held up."""
    stream: Any
    # Each decompressor's module is imported with its first stream: the many reads of data
    # that is not compressed do not pay for them at start-up.
    if kind == "gzip":
        import gzip

        stream = gzip.GzipFile(fileobj=raw, mode="rb")
    elif kind == "bzip2":
        import bz2

        stream = bz2.BZ2File(raw)
    elif kind == "xz":
        import lzma

        # Never closed itself: it holds no resource of its own, and the source is closed by
        # the source's reader (:class:`~.sources.Chunks`).
        stream = lzma.LZMAFile(typing.cast("IO[bytes]", raw))  # noqa: SIM115
    else:
        raw.frames = ZstdFrames()
        zstandard: Any = zstd_module()
        stream = zstandard.ZstdDecompressor().stream_reader(
            raw, read_size=size, read_across_frames=True, closefd=False
        )
    read1: Callable[[int], bytes] = stream.read1
    return read1


def failing_as_data(
    read: Callable[[int], bytes], counted: Any, kind: Compression | None
) -> Callable[[int], bytes]:
    """``read``, with what a decompressor raises for bad compressed data turned into a
    :class:`CompressedDataError` that the decoder locates."""

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


class ZstdFrames:
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
                if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:  # a skippable frame: magic, size, data
                    if have < 8:
                        break
                    self._skip = int.from_bytes(buf[at + 4 : at + 8], "little")
                    at += 8
                    continue
                if magic != _ZSTD_MAGIC:
                    self._lost = True
                    break
                window, dictionary, content, self._checksum = _header_fields(buf[at + 4])
                self._skip = window + dictionary + content
                at += 5
                self._in_frame = True
                continue
            if have < 3:
                break
            last, size, _valid = _block(buf[at : at + 3])  # the decompressor tells invalid
            at += 3
            self._skip = size
            if last:  # then the checksum, if there is one
                self._skip += self._checksum
                self._in_frame = False
        del buf[:at]


def _header_fields(descriptor: int) -> tuple[int, int, int, int]:
    """The sizes of what follows a zstd frame header's descriptor byte (its window
    descriptor, dictionary id and content size), and of the frame's closing checksum."""
    single = descriptor >> 5 & 1
    return (
        1 - single,
        (0, 1, 2, 4)[descriptor & 3],
        (single, 2, 4, 8)[descriptor >> 6],
        4 * (descriptor >> 2 & 1),
    )


def _block(header: bytes | bytearray) -> tuple[bool, int, bool]:
    """Whether a zstd block is its frame's last, how many bytes follow its 3-byte header (an
    RLE block holds one byte, repeated), and whether its type is not the reserved one."""
    value = int.from_bytes(header, "little")
    kind = value >> 1 & 3
    return bool(value & 1), 1 if kind == 1 else value >> 3, kind != 3


@dataclasses.dataclass(frozen=True)
class ZstdFrame:
    """One frame of a zstd file, as its headers describe it."""

    start: int
    end: int
    """Where it starts and ends in the file (its checksum included)."""
    size: int | None
    """How many bytes it declares it decompresses to; ``None`` where it does not say."""
    dictionary: bool = False
    """Whether it needs a dictionary to be decompressed."""
    skippable: bool = False
    """Whether it is a skippable frame: data that is not the file's (a seek table)."""


def zstd_frame(stream: IO[bytes], at: int) -> ZstdFrame | str | None:
    """The frame of a zstd file that starts at byte ``at``, told from its frame and block
    headers alone (block contents are passed over, a seek each); ``None`` at the end of the
    file; or why there is no whole frame there (a phrase). ``stream`` must be seekable."""
    stream.seek(at)
    head = stream.read(18)  # the longest frame header
    if not head:
        return None
    if len(head) < 8:
        return "a frame is cut off"
    magic = int.from_bytes(head[:4], "little")
    if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
        return ZstdFrame(at, at + 8 + int.from_bytes(head[4:8], "little"), 0, skippable=True)
    if magic != _ZSTD_MAGIC:
        return f"byte {at} starts no zstd frame"
    window, dictionary, content, checksum = _header_fields(head[4])
    size = None
    if content:
        field = head[5 + window + dictionary : 5 + window + dictionary + content]
        size = int.from_bytes(field, "little") + (256 if content == 2 else 0)
    needs = any(head[5 + window : 5 + window + dictionary])
    block = at + 5 + window + dictionary + content
    while True:
        stream.seek(block)
        header = stream.read(3)
        if len(header) < 3:
            return "a frame is cut off"
        last, length, valid = _block(header)
        if not valid:
            return f"the block at byte {block} is of the reserved type"
        block += 3 + length
        if last:
            return ZstdFrame(at, block + checksum, size, needs)


@dataclasses.dataclass(frozen=True)
class ZstdLayout:
    """Where a zstd file's frames start, from its headers (:func:`zstd_layout`)."""

    size: int
    """The file's size decompressed, as its frames declare it."""
    entries: tuple[tuple[int, int], ...]
    """Each frame but the skippable ones: where its bytes start in the decompressed file, and
    where the frame starts in the file."""


def zstd_layout(stream: IO[bytes], size: int) -> ZstdLayout | str:
    """The layout of a zstd file of ``size`` bytes whose frames all declare their size and
    need no dictionary, read from its headers alone; or why it has none (a phrase)."""
    at = out = 0
    entries: list[tuple[int, int]] = []
    while at < size:
        frame = zstd_frame(stream, at)
        if isinstance(frame, str):
            return frame
        if frame is None or frame.end > size:  # None: the file was cut since it was sized
            return "a frame is cut off"
        if frame.dictionary:
            return "a frame needs a dictionary"
        if frame.size is None:
            return "a frame does not declare its size"
        if not frame.skippable:
            entries.append((out, at))
        out += frame.size
        at = frame.end
    return ZstdLayout(out, tuple(entries))


class ZstdFrom:
    """The decompressed bytes of a zstd file from the frame at byte ``entry`` on, whose bytes
    start at ``base`` in the decompressed file: a readable, seekable stream (``seek`` takes
    offsets in the decompressed file, from ``base`` on).

    Frames are decompressed one at a time, each checked to hold exactly the bytes it declares
    as its bytes pass, so that the offsets counted from ``base`` are the file's: no byte past
    what a frame declares is handed over, and a frame's end is checked before the next
    frame's bytes are. A bad frame raises :class:`CompressedDataError`, and ``failed`` is set.
    """

    def __init__(self, raw: IO[bytes], entry: int, base: int) -> None:
        self._raw = raw
        self._entry = entry
        self._base = base
        self.name = raw.name
        self.failed = False
        zstandard: Any = zstd_module()
        self._dctx = zstandard.ZstdDecompressor()
        self._corrupt: type[Exception] = zstandard.ZstdError
        self._restart()

    def _restart(self) -> None:
        self._next = self._entry  # where the next frame starts in the file
        self._position = self._base
        self._frame: Any = None  # the current frame's decompressing reader
        self._left = 0  # the bytes the current frame still declares

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int) -> int:
        """Go to byte ``offset`` of the decompressed file (at least ``base``), decompressing
        from the entry frame again to go back."""
        if offset < self._position:
            self._restart()
        while self._position < offset and self.read1(min(offset - self._position, 1 << 20)):
            pass
        return self._position

    def read(self, size: int = -1) -> bytes:
        """At most ``size`` bytes (``-1``: 1 MiB); ``b""`` at the end of the file."""
        return self.read1(size)

    def read1(self, size: int = -1) -> bytes:
        size = 1 << 20 if size < 0 else size
        data = self._from_frame(size)
        if len(data) == size or not data:
            return data
        # Frames of a few records each (a writer that compresses each batch whole): the
        # reader is handed as much as it asks for, not a frame's bytes at a time.
        pieces = [data]
        got = len(data)
        while got < size and (data := self._from_frame(size - got)):
            pieces.append(data)
            got += len(data)
        return b"".join(pieces)

    def _from_frame(self, size: int) -> bytes:
        """At most ``size`` bytes, all of them from one frame; ``b""`` at the end."""
        while True:
            if self._frame is None and not self._enter():
                return b""
            data = self._decompressed(min(size, self._left)) if self._left else b""
            if data:
                self._left -= len(data)
                self._position += len(data)
                return data
            if self._left:  # pragma: no cover - zstd itself refuses such a frame, at its end
                self._fail("a zstd frame holds fewer bytes than it declares")
            if self._decompressed(1):  # every byte it declares read: it must end here
                self._fail("a zstd frame holds more bytes than it declares")
            self._frame = None

    def look_ahead(self, size: int) -> None:
        """Decompress the next ``size`` bytes (fewer at the end of the file) and drop them, so
        that a bad frame there fails here."""
        end = self._position + size
        while self._position < end and self.read1(end - self._position):
            pass

    def _enter(self) -> bool:
        """Start decompressing the next frame, skippable frames passed over; ``False`` at the
        end of the file."""
        while True:
            frame = zstd_frame(self._raw, self._next)
            if frame is None:
                return False
            if isinstance(frame, str) or frame.size is None:
                self._fail(frame if isinstance(frame, str) else "a frame's size is not declared")
            self._next = frame.end
            if frame.skippable:
                continue
            self._raw.seek(frame.start)
            self._left = frame.size
            if frame.size > _WHOLE:
                bounded = _Bounded(self._raw, frame.end - frame.start)
                self._frame = self._dctx.stream_reader(bounded, read_across_frames=False)
                return True
            # A small frame at once: a reader of its own costs more than its bytes. Not by
            # decompress(), which gives a frame that declares no bytes as empty without
            # decoding it, where the file's sequential reader finds it corrupt.
            data = self._raw.read(frame.end - frame.start)
            whole = self._dctx.decompressobj().decompress
            self._frame = io.BytesIO(self._checked(whole, data))
            return True

    def _decompressed(self, size: int) -> bytes:
        data: bytes = self._checked(self._frame.read, size)
        return data

    def _checked(self, decompress: Callable[[Any], bytes], argument: Any) -> bytes:
        """What ``decompress(argument)`` gives; zstandard's error for bad data raised as a
        :class:`CompressedDataError`."""
        try:
            return decompress(argument)
        except self._corrupt as exc:
            self.failed = True
            raise CompressedDataError(f"corrupt zstd data: {exc}", truncated=False) from exc

    def _fail(self, reason: str) -> typing.NoReturn:
        self.failed = True
        raise CompressedDataError(reason, truncated=False)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> ZstdFrom:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_WHOLE = 1 << 20
"""The largest frame decompressed at once, in bytes: a larger one is read a piece at a time."""


class _Bounded:
    """``read(n)`` of the next ``length`` bytes of ``raw``: one frame's compressed bytes."""

    def __init__(self, raw: IO[bytes], length: int) -> None:
        self._raw = raw
        self._left = length

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        data = self._raw.read(size)
        self._left -= len(data)
        return data
