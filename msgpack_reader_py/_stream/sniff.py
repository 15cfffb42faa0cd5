"""What a stream's first bytes say it is, when its first record fails or it is read untyped:
a format that is not MessagePack, or compressed data read as it is.

The reader keeps a stream's first bytes (:data:`HEAD_SIZE`) and, when the stream's first
record fails, says what they look like (:func:`foreign`); which compression to undo is
:mod:`.compression`'s. A
MessagePack record is an array, whose first byte (``0x90``-``0x9f``, ``0xdc``, ``0xdd``) starts
none of the magic numbers below and is never the first byte of UTF-8 text, so a stream of
records is never taken for anything else. Untyped, almost any bytes are values, so a stream
is named for something else only on evidence (:data:`EVIDENCE`).
"""

from __future__ import annotations

import codecs

from .._base.extras import missing_extra
from .compression import compression, zstd_module

__all__ = ["EVIDENCE", "HEAD_SIZE", "foreign"]

HEAD_SIZE = 512
"""How many of a stream's first bytes are kept to name what a failing stream looks like."""

EVIDENCE = 8
"""The fewest bytes, and the fewest characters of text, that say a stream is something other
than MessagePack. Every byte is a value or starts one, so a short stream is as likely to be
MessagePack as anything: ``cc 80`` is the number 128 and, in UTF-8, a combining grave
accent; ``d0 80`` is -128 and a Cyrillic letter; ``PK\\x03\\x04`` is four small numbers. No
file of the formats named here is that short, and text is taken for text only from this many
characters on (or after a byte order mark): a stream of as many small integers that all read
as printable characters is not what a writer of MessagePack makes."""

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


def foreign(head: bytes | bytearray | memoryview, as_is: str = "decompress=False") -> str | None:
    """What ``head``, the first bytes of a stream whose first record failed, looks like when
    it looks like something other than MessagePack: a phrase to end the error with.
    ``as_is`` says why the stream was not decompressed, for compressed data seen raw."""
    head = bytes(head)
    if len(head) < EVIDENCE:
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
    """``head`` as text if it is printable UTF-8 (possibly cut inside its last character) of
    :data:`EVIDENCE` visible characters or more, or any after a byte order mark."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    marked = text.startswith("\ufeff")
    text = text.removeprefix("\ufeff")
    visible = text.translate(_WHITESPACE)  # whitespace alone is small ints, as likely
    if len(visible) < (1 if marked else EVIDENCE) or not visible.isprintable():
        return None
    return text
