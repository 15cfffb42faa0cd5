"""Compressed input: what a stream's first bytes say it is compressed with, and the
decompressors that read it a read at a time, their failures told as data errors.

gzip, bzip2 and xz need only the standard library; zstd the ``zstandard`` module (the ``zstd``
extra), imported only when zstd data is seen. zstandard's reader ends quietly at the end of
its input whether or not a frame was finished: :class:`ZstdFrames` follows the frame headers
to tell a cut-off stream from a whole one.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable
from typing import IO, Any, Literal

__all__ = [
    "CompressedDataError",
    "Compression",
    "ZstdFrames",
    "compression",
    "decompressor",
    "failing_as_data",
    "undecided",
    "zstd_module",
]

Compression = Literal["gzip", "bzip2", "xz", "zstd"]

_COMPRESSED: tuple[tuple[bytes, Compression], ...] = (
    (b"\x1f\x8b\x08", "gzip"),
    *((b"BZh" + bytes([level]), "bzip2") for level in b"123456789"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_LONGEST = max(len(magic) for magic, _ in _COMPRESSED)


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
