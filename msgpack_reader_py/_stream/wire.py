"""Just enough of the MessagePack wire format to read the sizes a record declares.

msgpack's C decoder checks a str, bin or ext length only once the whole payload is buffered.
A reader that waits for that lets a five-byte header claiming 4 GiB hold the stream open (or
look like a mere truncation when it ends). ``declared_excess`` walks the headers of a record's
first bytes, skipping payloads, so such a claim is seen as soon as its header arrives.
:func:`header_at` says what a value's header is, and :func:`walk` how large a record's
headers say it is (``inspect``'s account of a broken record).
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = [
    "NEVER_USED",
    "Header",
    "Walk",
    "bytes_text",
    "declared_excess",
    "header_at",
    "tail_may_claim_too_much",
    "walk",
]

# Header byte -> (kind, width of its length field) for variable-length values.
_SIZED: dict[int, tuple[str, int]] = {
    0xC4: ("bin", 1),
    0xC5: ("bin", 2),
    0xC6: ("bin", 4),
    0xC7: ("ext", 1),
    0xC8: ("ext", 2),
    0xC9: ("ext", 4),
    0xD9: ("str", 1),
    0xDA: ("str", 2),
    0xDB: ("str", 4),
    0xDC: ("array", 2),
    0xDD: ("array", 4),
    0xDE: ("map", 2),
    0xDF: ("map", 4),
}
# Header byte -> payload bytes that follow it, for fixed-size values.
_FIXED: dict[int, int] = {
    0xC0: 0, 0xC2: 0, 0xC3: 0,
    0xCA: 4, 0xCB: 8,
    0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,
    0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8,
    0xD4: 2, 0xD5: 3, 0xD6: 5, 0xD7: 9, 0xD8: 17,
}  # fmt: skip


def declared_excess(data: bytes | bytearray | memoryview, limit: int) -> str | None:
    """Describe how the record at the start of ``data`` declares more than ``limit`` bytes.

    ``data`` is a prefix of one encoded record. Returns ``None`` when nothing read so far
    commits the record to more than ``limit`` bytes, else a phrase such as
    ``"declares a str of 4294967295 bytes"``. Every value takes at least one byte, so a count
    of values that cannot fit counts too. Stops at the end of ``data`` or at a byte that is not
    a valid header (the decoder reports that one).
    """
    view = memoryview(data).cast("B")
    size = len(view)
    pos = 0
    remaining = 1  # values still to be read; containers add their elements
    while remaining and pos < size:
        byte = view[pos]
        pos += 1
        remaining -= 1
        if byte <= 0x7F or byte >= 0xE0:
            continue
        if byte <= 0x8F:
            remaining += 2 * (byte & 0x0F)
        elif byte <= 0x9F:
            remaining += byte & 0x0F
        elif byte <= 0xBF:
            pos += byte & 0x1F
        elif byte in _FIXED:
            pos += _FIXED[byte]
        elif byte in _SIZED:
            kind, width = _SIZED[byte]
            if pos + width > size:
                break
            count = int.from_bytes(view[pos : pos + width], "big")
            pos += width
            if kind in ("array", "map"):
                values = count * (2 if kind == "map" else 1)
                if pos + remaining + values > limit:
                    return f"declares {_article(kind)} {kind} of {count} entries"
                remaining += values
                continue
            if kind == "ext":
                pos += 1  # the type byte
            if pos + count + remaining > limit:
                return f"declares {_article(kind)} {kind} of {count} bytes"
            pos += count
        else:
            break  # 0xC1, never valid: the decoder raises for it
        if pos + remaining > limit:
            break
    if pos + remaining > limit:
        return f"declares at least {pos + remaining} bytes"
    return None


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"


def tail_may_claim_too_much(
    chunk: bytes | bytearray | memoryview, read: int, consumed: int, limit: int
) -> bool:
    """Whether a decoder that stopped at stream offset ``consumed`` of the ``read`` bytes
    read so far (``chunk`` the last of them) may be waiting for the payload of a str, bin or
    ext over ``limit``.

    When a decoder stops inside a record for want of a payload, the header it read last ends
    right where it stopped; a quick look at the bytes before that spots a length over the limit
    without locating the record. Only a hint: confirm before refusing.
    """
    if consumed >= read:
        return False
    end = consumed - (read - len(chunk))
    for code, (kind, width) in _SIZED.items():
        if kind in ("array", "map"):
            continue
        start = end - 1 - width - (kind == "ext")  # an ext's type byte follows its length
        if (
            start >= 0
            and chunk[start] == code
            and int.from_bytes(chunk[start + 1 : start + 1 + width], "big") > limit
        ):
            return True
    return False


_WALK_LIMIT = 1 << 20
"""The most headers read of a failing record: a cap on the time its account takes."""
NEVER_USED = "never used"
"""The format of the one header byte MessagePack never uses (0xc1)."""


@dataclasses.dataclass(frozen=True)
class Header:
    """What a value's header says: its shape, the format the MessagePack specification names
    it by, its length (entries of an array or map, bytes of a str, bin or ext), the bytes of
    the header itself, the payload bytes after it, and the values it holds."""

    shape: str
    format: str
    length: int | None = None
    size: int = 1
    payload: int = 0
    values: int = 0
    ext_type: int | None = None

    def describe(self, fluentd: bool = False) -> str:
        """The shape as the text output shows it: ``array of 8``, ``str of 5 bytes``, ``int``."""
        if self.shape in ("array", "map"):
            return f"{self.shape} of {self.length}"
        if self.shape in ("str", "bin"):
            return f"{self.shape} of {bytes_text(self.length or 0)}"
        if self.shape == "ext":
            named = " (timestamp)" if self.ext_type == -1 else ""
            if fluentd and self.ext_type == 0:
                named = " (EventTime)"
            return f"ext {self.ext_type} of {bytes_text(self.length or 0)}{named}"
        return self.shape

    def fields(self) -> dict[str, Any]:
        """The header as the JSON output's keys."""
        fields: dict[str, Any] = {"shape": self.shape, "length": self.length}
        fields["format"] = self.format
        if self.ext_type is not None:
            fields["ext_type"] = self.ext_type
        return fields


def header_at(view: memoryview, at: int) -> Header | None:
    """The header of the value at ``view[at]``; ``None`` where the bytes end inside it."""
    byte = view[at]
    if byte <= 0x7F:
        return Header("int", "positive fixint")
    if byte >= 0xE0:
        return Header("int", "negative fixint")
    if byte <= 0x8F:
        return Header("map", "fixmap", byte & 0x0F, values=2 * (byte & 0x0F))
    if byte <= 0x9F:
        return Header("array", "fixarray", byte & 0x0F, values=byte & 0x0F)
    if byte <= 0xBF:
        return Header("str", "fixstr", byte & 0x1F, payload=byte & 0x1F)
    if byte in _SIZED:
        kind, width = _SIZED[byte]
        size = 1 + width + (kind == "ext")  # an ext's type byte follows its length
        if at + size > len(view):
            return None
        length = int.from_bytes(view[at + 1 : at + 1 + width], "big")
        ext_type = _signed(view[at + size - 1]) if kind == "ext" else None
        if kind in ("array", "map"):
            values = length * (2 if kind == "map" else 1)
            return Header(kind, f"{kind} {8 * width}", length, size, values=values)
        return Header(kind, f"{kind} {8 * width}", length, size, length, ext_type=ext_type)
    if byte in _FIXED:
        payload = _FIXED[byte]
        if byte >= 0xD4:  # fixext: a type byte, then 1 to 16 bytes
            if at + 2 > len(view):
                return None
            data = payload - 1
            return Header("ext", f"fixext {data}", data, 2, data, ext_type=_signed(view[at + 1]))
        if byte == 0xC0:
            return Header("nil", "nil")
        if byte <= 0xC3:
            return Header("bool", "true" if byte & 1 else "false")
        if byte <= 0xCB:
            return Header("float", f"float {8 * payload}", payload=payload)
        # 0xcc to 0xcf are unsigned, 0xd0 to 0xd3 signed
        signed = "int" if byte >= 0xD0 else "uint"
        return Header("int", f"{signed} {8 * payload}", payload=payload)
    return Header("invalid", NEVER_USED)


def _signed(byte: int) -> int:
    return byte - 256 if byte >= 128 else byte


def bytes_text(count: int) -> str:
    """``1 byte``, ``5 bytes``."""
    return f"{count} byte{'' if count == 1 else 's'}"


@dataclasses.dataclass(frozen=True)
class Walk:
    """What the headers of a record's first bytes say: the least size it can have
    (``needs``), whether that is its size (``exact``), and where a byte that MessagePack
    never uses is (``bad``, counted from the record's start)."""

    needs: int
    exact: bool
    bad: int | None = None


def walk(view: memoryview) -> Walk:
    """Read the headers of the record at the start of ``view`` (payloads skipped), as far as
    its bytes go. Every value takes at least a byte, so the values a container declares and
    that are not there yet count a byte each."""
    size = len(view)
    pos = 0
    remaining = 1  # values still to be read; containers add their elements
    for _ in range(_WALK_LIMIT):
        if not remaining or pos >= size:
            break
        header = header_at(view, pos)
        if header is None:  # the bytes end inside a header: at least a byte more
            return Walk(max(size + 1, pos + remaining), exact=False)
        if header.format == NEVER_USED:
            return Walk(pos + remaining, exact=False, bad=pos)
        remaining += header.values - 1
        pos += header.size + header.payload
    else:
        return Walk(max(size + 1, pos + remaining), exact=False)
    return Walk(pos + remaining, exact=not remaining)
