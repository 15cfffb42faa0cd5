"""``max_record_size``: a record over it is a located ``RecordTooLargeError`` whatever the read
size, one of exactly that size is read, and a header that claims more than the limit is refused
at once, without waiting for (or reading) the bytes it claims.
"""

from __future__ import annotations

import msgpack
import pytest

from msgpack_reader_py import (
    Item,
    RecordTooLargeError,
    StreamingReader,
)
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE

from .helpers import (
    LONG_PATH,
    LOOSE_ITEMS,
    LOOSE_PREFIX,
    PREFIX,
    PREFIX_ITEMS,
    START,
    Loose,
    assert_located,
    drain,
    packed,
)

# --------------------------------------------------------------------------------------------
# RecordTooLargeError
# --------------------------------------------------------------------------------------------


def test_too_large_message_names_the_limit_and_how_to_raise_it() -> None:
    _, error = drain(StreamingReader(packed(LONG_PATH.to_list()), max_record_size=1000))
    assert type(error) is RecordTooLargeError
    assert "max_record_size=1000" in str(error)
    assert "pass a larger max_record_size" in str(error)


def test_hostile_str_header_is_refused_without_reading_the_whole_stream() -> None:
    limit, read_size = 1000, 100
    data = PREFIX + b"\x98\x01\xdb\xff\xff\xff\xff" + b"x" * 100_000
    reader = StreamingReader(data, max_record_size=limit, read_size=read_size)
    got, error = drain(reader)
    assert type(error) is RecordTooLargeError
    assert got == PREFIX_ITEMS
    assert_located(error, 3, START)
    assert reader.bytes_read <= START + limit + read_size
    assert "pass a larger max_record_size" in str(error)


@pytest.mark.parametrize(
    "header",
    [
        b"\xdb\xff\xff\xff\xff",
        b"\xc6\xff\xff\xff\xff",
        b"\xdd\xff\xff\xff\xff",
        b"\xdf\xff\xff\xff\xff",
    ],
    ids=["str32", "bin32", "array32", "map32"],
)
def test_declared_length_over_the_limit_is_too_large_even_when_the_stream_ends(
    header: bytes,
) -> None:
    """A record that declares a value larger than max_record_size is RecordTooLargeError.

    msgpack checks str/bin lengths only once the payload is buffered, so a short stream after
    a hostile str32/bin32 header must not turn the error into TruncatedStreamError: the
    array32/map32 headers in the same place are reported as too large.
    """
    data = PREFIX + b"\x98\x01" + header + b"x" * 10
    got, error = drain(StreamingReader(data, max_record_size=1000))
    assert got == PREFIX_ITEMS
    assert type(error) is RecordTooLargeError
    assert_located(error, 3, START)
    assert "max_record_size=1000" in str(error)


@pytest.mark.parametrize("read_size", [1, 7, 50, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("excess", [1, 10])
def test_record_larger_than_max_record_size_is_refused_whatever_the_read_size(
    read_size: int, excess: int
) -> None:
    """max_record_size is "the largest encoded record accepted", not only the largest value."""
    record = packed(Item(1, 2, 3, 4, 5, 1.5, "a" * 200, "b" * 200).to_list())
    limit = len(record) - excess
    assert all(len(packed(value)) < limit for value in msgpack.unpackb(record))
    assert len(PREFIX) < limit  # the records around it are well within the limit
    data = PREFIX + record + PREFIX
    reader = StreamingReader(data, max_record_size=limit, read_size=read_size)
    got, error = drain(reader)
    assert type(error) is RecordTooLargeError
    assert got == PREFIX_ITEMS
    assert_located(error, 3, START)
    assert f"max_record_size={limit}" in str(error)


@pytest.mark.parametrize("read_size", [1, 7, 50, DEFAULT_READ_SIZE])
def test_record_of_exactly_max_record_size_is_accepted(read_size: int) -> None:
    item = Item(1, 2, 3, 4, 5, 1.5, "a" * 20, "b" * 20)
    record = packed(item.to_list())
    reader = StreamingReader(
        PREFIX + record + PREFIX, max_record_size=len(record), read_size=read_size
    )
    assert list(reader) == [*PREFIX_ITEMS, item, *PREFIX_ITEMS]


def test_record_far_larger_than_a_read_is_accepted_within_the_limit() -> None:
    # 300 KiB of record arriving 4 KiB at a time: the unfinished record is inspected on the way
    # (its first 64 KiB are kept for that) and must not be refused.
    item = Item(1, 2, 3, 4, 5, 1.5, "f", "p" * 300_000)
    record = packed(item.to_list())
    reader = StreamingReader(PREFIX + record + PREFIX, max_record_size=len(record), read_size=4096)
    assert list(reader) == [*PREFIX_ITEMS, item, *PREFIX_ITEMS]


# --- hostile headers ---------------------------------------------------------------------------


class TwoReads:
    """A live source: ``first`` now, then ``rest`` (or a failure: on a socket, a hang)."""

    def __init__(self, first: bytes, rest: bytes | None) -> None:
        self.parts = [first, rest]

    def read1(self, size: int = -1) -> bytes:
        part = self.parts.pop(0) if self.parts else b""
        if part is None:
            raise AssertionError("asked for more data: on a socket this would block")
        return part

    read = read1


@pytest.mark.parametrize(
    ("header", "kind"),
    [
        (b"\xdb\xff\xff\xff\xff", "a str"),
        (b"\xc6\xff\xff\xff\xff", "a bin"),
        (b"\xc9\xff\xff\xff\xff\x05", "an ext"),
        (b"\xda\xff\xff", "a str"),
    ],
)
def test_hostile_header_after_records_in_the_same_read_is_refused_at_once(
    header: bytes, kind: str
) -> None:
    source = TwoReads(PREFIX + b"\x98\x01" + header + b"x" * 10, None)
    got, error = drain(StreamingReader(source, max_record_size=1000))
    assert type(error) is RecordTooLargeError
    assert got == PREFIX_ITEMS
    assert_located(error, 3, START)
    assert f"declares {kind} of" in str(error)


def test_a_lookalike_header_inside_a_value_is_not_refused() -> None:
    # The uint64 ends in the bytes of a str32 header claiming 0xffffffff; the decoder stops
    # right after it (the next str16's length is cut), which looks like a hostile claim.
    record = packed(["k", [0xDBFFFFFFFF, "s" * 300]])
    stop = record.index(b"\xda")
    assert record[stop - 5 : stop] == b"\xdb\xff\xff\xff\xff"
    cut = stop + 2
    source = TwoReads(LOOSE_PREFIX + record[:cut], record[cut:])
    reader = StreamingReader(source, Loose, max_record_size=1000)
    assert list(reader) == [*LOOSE_ITEMS, Loose("k", [0xDBFFFFFFFF, "s" * 300])]
