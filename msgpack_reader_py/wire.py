"""Just enough of the MessagePack wire format to read the sizes a record declares.

msgpack's C decoder checks a str, bin or ext length only once the whole payload is buffered.
A reader that waits for that lets a five-byte header claiming 4 GiB hold the stream open (or
look like a mere truncation when it ends). ``declared_excess`` walks the headers of a record's
first bytes, skipping payloads, so such a claim is seen as soon as its header arrives.
"""

from __future__ import annotations

__all__ = ["declared_excess", "tail_may_claim_too_much"]

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
