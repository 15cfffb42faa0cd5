"""msgpack behaviours the reader works around, pinned against msgpack itself.

Each test first shows what ``msgpack.Unpacker`` does on some bytes, then what the reader does
on the same bytes. If a msgpack release changes one of these behaviours the first half fails,
which is the signal to revisit the workaround (not necessarily a bug).
"""

from __future__ import annotations

import io

import msgpack
import pytest

from msgpack_reader_py import (
    DecodeError,
    Item,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py._base.options import OnError

ITEMS = list(get_iter(4, seed=3))
RECORDS = [item.to_list() for item in ITEMS]
WHOLE = pack_items(ITEMS)
LAST = len(pack_items(ITEMS[:3]))  # where the fourth record starts


def unpack_all(data: bytes) -> list[object]:
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    return list(unpacker)


# --------------------------------------------------------------------------------------------
# Iterating an Unpacker ends silently at a cut-off record
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", [1, 5, 20])
def test_unpacker_iteration_ends_silently_on_a_cut_off_record(missing: int) -> None:
    data = WHOLE[:-missing]
    assert unpack_all(data) == RECORDS[:3]  # no exception: the cut record just vanishes

    unpacker = msgpack.Unpacker(io.BytesIO(data))
    assert list(unpacker) == RECORDS[:3]  # the file-like mode too


@pytest.mark.parametrize("missing", [1, 5, 20])
def test_reader_reports_the_cut_off_record(missing: int) -> None:
    reader = StreamingReader(WHOLE[:-missing])
    got: list[Item] = []
    with pytest.raises(TruncatedStreamError) as info:
        got.extend(reader)
    assert got == ITEMS[:3]
    assert (info.value.index, info.value.offset) == (3, LAST)


@pytest.mark.parametrize(
    "header",
    [b"\xdd\x00\x00\x10\x00", b"\xdc\x10\x00", b"\xdb\x00\x00\x10\x00", b"\xda\x10\x00"],
    ids=["array32", "array16", "str32", "str16"],
)
def test_length_header_running_past_the_end_ends_silently(header: bytes) -> None:
    data = WHOLE + header + b"\x01\x02\x03"
    assert unpack_all(data) == RECORDS

    # The reader frames records without looking at what they hold: it accepts the header
    # (within max_record_size), then the data ends: truncated, whatever the record type,
    # with a mapper, and in skip mode alike.
    readers = [
        StreamingReader(data, mapper=Item.from_list),
        StreamingReader(data),
        StreamingReader(data, on_error="skip"),
    ]
    for reader in readers:
        got: list[Item] = []
        with pytest.raises(TruncatedStreamError) as info:
            got.extend(reader)
        assert got == ITEMS
        assert (info.value.index, info.value.offset) == (4, len(WHOLE))


# --------------------------------------------------------------------------------------------
# tell() after a failed unpack is not where the failing record starts
# --------------------------------------------------------------------------------------------


def test_tell_after_format_error_points_inside_the_record() -> None:
    data = WHOLE + b"\x98\x01\x02\xc1\x03"
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    assert [next(unpacker) for _ in RECORDS] == RECORDS
    assert unpacker.tell() == len(WHOLE)
    with pytest.raises(msgpack.FormatError):
        next(unpacker)
    assert unpacker.tell() != len(WHOLE)
    assert unpacker.tell() > len(WHOLE)

    with pytest.raises(DecodeError) as info:
        list(StreamingReader(data))
    assert info.value.offset == len(WHOLE)
    assert info.value.index == len(RECORDS)


def test_tell_after_out_of_data_points_past_the_record_start() -> None:
    data = WHOLE[:-5]
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    assert [unpacker.unpack() for _ in range(3)] == RECORDS[:3]
    assert unpacker.tell() == LAST
    with pytest.raises(msgpack.OutOfData):
        unpacker.unpack()
    assert unpacker.tell() != LAST
    assert unpacker.tell() > LAST

    with pytest.raises(TruncatedStreamError) as info:
        list(StreamingReader(data))
    assert info.value.offset == LAST
    assert info.value.index == 3


def test_tell_after_stack_error_points_inside_the_record() -> None:
    data = WHOLE + b"\x91" * 2000 + b"\xc0"
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    assert list(zip(range(4), unpacker, strict=False)) == list(enumerate(RECORDS))
    with pytest.raises(msgpack.StackError):
        next(unpacker)
    assert unpacker.tell() > len(WHOLE)

    with pytest.raises(DecodeError) as info:
        list(StreamingReader(data))
    assert (info.value.index, info.value.offset) == (4, len(WHOLE))
    assert isinstance(info.value.__cause__, msgpack.StackError)


# --------------------------------------------------------------------------------------------
# FormatError and BufferFull have empty messages
# --------------------------------------------------------------------------------------------


def test_format_error_from_the_unpacker_has_an_empty_message() -> None:
    unpacker = msgpack.Unpacker()
    unpacker.feed(b"\xc1")
    with pytest.raises(msgpack.FormatError) as info:
        next(unpacker)
    assert str(info.value) == ""

    with pytest.raises(DecodeError) as error:
        list(StreamingReader(WHOLE + b"\xc1"))
    assert isinstance(error.value.__cause__, msgpack.FormatError)
    assert error.value.reason.strip()
    assert "MessagePack" in error.value.reason
    assert "0xc1" in error.value.reason
    assert str(error.value).startswith(f"record 4 at byte {len(WHOLE)}: ")


def test_buffer_full_from_the_unpacker_has_an_empty_message() -> None:
    record = msgpack.packb([*RECORDS[0][:7], "x" * 2000])
    unpacker = msgpack.Unpacker(max_buffer_size=1000)
    with pytest.raises(msgpack.BufferFull) as info:
        unpacker.feed(record)
    assert str(info.value) == ""

    with pytest.raises(RecordTooLargeError) as error:
        list(StreamingReader(WHOLE + record, max_record_size=1000))
    assert (error.value.index, error.value.offset) == (4, len(WHOLE))
    assert error.value.reason.strip()
    assert "max_record_size=1000" in error.value.reason


def test_stack_error_from_the_unpacker_has_an_empty_message() -> None:
    unpacker = msgpack.Unpacker()
    unpacker.feed(b"\x91" * 2000 + b"\xc0")
    with pytest.raises(msgpack.StackError) as info:
        next(unpacker)
    assert str(info.value) == ""

    with pytest.raises(DecodeError) as error:
        list(StreamingReader(b"\x91" * 2000 + b"\xc0"))
    assert "nesting" in error.value.reason


# --------------------------------------------------------------------------------------------
# What msgpack would otherwise hand to the record constructor
# --------------------------------------------------------------------------------------------


def test_unpacker_decodes_an_eight_character_str_that_star_args_would_spread() -> None:
    data = msgpack.packb("ABCDEFGH")
    [value] = unpack_all(data)
    assert value == "ABCDEFGH"
    assert Item(*value).filename == "G"  # what a naive reader would build

    with pytest.raises(RecordError, match="found str 'ABCDEFGH'"):
        list(StreamingReader(data))


def test_unpacker_str_length_limit_is_checked_only_once_the_payload_is_buffered() -> None:
    unpacker = msgpack.Unpacker(max_str_len=10)
    unpacker.feed(b"\xdb\xff\xff\xff\xff" + b"x" * 100)
    assert list(unpacker) == []  # no error yet: msgpack waits for 4 GiB

    unpacker = msgpack.Unpacker(max_array_len=10)
    unpacker.feed(b"\xdd\xff\xff\xff\xff")
    with pytest.raises(ValueError, match="exceeds max_array_len"):
        next(unpacker)


def test_invalid_utf8_raises_unicode_decode_error() -> None:
    data = b"\xa2\xff\xfe"
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(data)
    with pytest.raises(UnicodeDecodeError):
        next(unpacker)

    # A whole record whose `filename` holds the bad str: the reader's framing skips values
    # without decoding them, so the failure comes from decoding, located at that record.
    record = b"\x98" + msgpack.packb(1) * 5 + msgpack.packb(1.5) + data + msgpack.packb("p")
    modes: tuple[OnError, ...] = ("raise", "skip")
    for on_error in modes:
        with pytest.raises(DecodeError, match="invalid UTF-8 in a str") as info:
            list(StreamingReader(WHOLE + record + WHOLE, on_error=on_error))
        assert isinstance(info.value.__cause__, UnicodeDecodeError)
        assert (info.value.index, info.value.offset) == (4, len(WHOLE))
