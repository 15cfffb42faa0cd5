"""What a stream's first bytes say it is: a compression to undo, or a format that is not
MessagePack.

The reader looks at the first bytes once per stream: to decide whether to decompress
(:func:`compression`, waiting for more bytes only while :func:`undecided`), and, when the
stream's first record fails, to say what the bytes look like instead (:func:`foreign`). A
MessagePack record is an array, whose first byte (``0x90``-``0x9f``, ``0xdc``, ``0xdd``) starts
none of the magic numbers below and is never the first byte of UTF-8 text, so a stream of
records is never taken for anything else.
"""

from __future__ import annotations

import codecs
import importlib
from typing import Literal

from ._extras import missing_extra

__all__ = ["HEAD_SIZE", "Compression", "compression", "foreign", "undecided", "zstd_module"]

Compression = Literal["gzip", "bzip2", "xz", "zstd"]

HEAD_SIZE = 512
"""How many of a stream's first bytes are kept to name what a failing stream looks like."""

_COMPRESSED: tuple[tuple[bytes, Compression], ...] = (
    (b"\x1f\x8b\x08", "gzip"),
    *((b"BZh" + bytes([level]), "bzip2") for level in b"123456789"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_LONGEST = max(len(magic) for magic, _ in _COMPRESSED)

# Formats the reader does not read, each with what to say about it.
_FOREIGN: tuple[tuple[bytes, str], ...] = (
    (b"\x04\x22\x4d\x18", "LZ4-compressed data (an LZ4 frame); decompress it first"),
    (b"PK\x03\x04", "a zip archive; extract it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive; extract it first"),
    (b"\xff\x06\x00\x00sNaPpY", "a snappy framed stream; decompress it first"),
    (b"PAR1", "a Parquet file"),
    (b"ARROW1", "an Arrow IPC file"),
)
_NOT_MSGPACK = ", not MessagePack"
_WHITESPACE = str.maketrans("", "", " \t\n\r\f\v")


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


def foreign(head: bytes | bytearray | memoryview, as_is: str = "decompress=False") -> str | None:
    """What ``head``, the first bytes of a stream whose first record failed, looks like when
    it looks like something other than MessagePack: a phrase to end the error with.
    ``as_is`` says why the stream was not decompressed, for compressed data seen raw."""
    head = bytes(head)
    if not head:
        return None
    for magic, what in _FOREIGN:
        if head.startswith(magic):
            return f"this looks like {what}{_NOT_MSGPACK}"
    kind = compression(head)
    if kind == "zstd" and zstd_module() is None:
        needed = missing_extra(
            ModuleNotFoundError(name="zstandard"), "zstd", feature="reading zstd-compressed data"
        )
        return f"this looks like zstd-compressed data; {needed}"
    if kind is not None:
        # Seen raw only when the stream is read as it is: ``as_is`` says why.
        return f"this looks like {kind}-compressed data, not decompressed ({as_is}){_NOT_MSGPACK}"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return f"this looks like UTF-16 text{_NOT_MSGPACK}"
    text = _text(head)
    if text is None:
        return None
    if text.lstrip("\ufeff \t\n\r")[:1] in ("{", "["):
        return f"this looks like JSON text{_NOT_MSGPACK}"
    return f"this looks like text{_NOT_MSGPACK}"


def _text(head: bytes) -> str | None:
    """``head`` as text if it is printable UTF-8 (possibly cut inside its last character)."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    text = text.removeprefix("\ufeff")
    visible = text.translate(_WHITESPACE)
    if not visible or not visible.isprintable():  # whitespace alone is small ints, as likely
        return None
    return text
