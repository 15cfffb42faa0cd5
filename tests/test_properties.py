"""Properties: round trips, every cut point, and the same outcome from every kind of source."""

from __future__ import annotations

import dataclasses
import io
import math
import struct
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import (
    Item,
    ReaderError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
    write_items,
)
from tests.reference import offsets_of

from .helpers import as_map, every_source, examples, packed

INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1

ints = st.integers(min_value=INT64_MIN, max_value=UINT64_MAX)
floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
texts = st.text(max_size=40)
items = st.builds(Item, ints, ints, ints, ints, ints, floats, texts, texts)
item_lists = st.lists(items, max_size=8)

FIELDS = [field.name for field in dataclasses.fields(Item)]

FieldKey = tuple[object, ...]


@st.composite
def mixed_streams(
    draw: st.DrawFn, min_size: int = 0, max_size: int = 8
) -> tuple[list[Item], list[bytes]]:
    """Items, and each one's bytes as an array or as a map (drawn per record)."""
    records = draw(st.lists(items, min_size=min_size, max_size=max_size))
    pieces = [packed(as_map(r)) if draw(st.booleans()) else pack_items([r]) for r in records]
    return records, pieces


def offsets_of_pieces(pieces: list[bytes]) -> list[int]:
    """Where each record starts, then the stream's length."""
    offsets = [0]
    for piece in pieces:
        offsets.append(offsets[-1] + len(piece))
    return offsets


def described(value: Any) -> Any:
    """A decoded value with its extension values as ``(code, data)``: ``msgspec.msgpack.Ext``
    has no repr of its contents, so a mapper's result is compared through this."""
    if isinstance(value, msgspec.msgpack.Ext):
        return ("ext", value.code, value.data)
    if isinstance(value, (list, tuple)):
        return type(value)(described(v) for v in value)
    if isinstance(value, dict):
        return {described(k): described(v) for k, v in value.items()}
    return value


def described_repr(value: Any) -> str:
    return repr(described(value))


def item_key(item: Item) -> FieldKey:
    """The item's fields, with floats by their bits: NaN == NaN, 0.0 != -0.0."""
    return tuple(
        (float, struct.pack(">d", v)) if isinstance(v, float) else (type(v), v)
        for v in item.to_list()
    )


def assert_same_items(got: list[Item], want: list[Item]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert type(a) is Item
        assert item_key(a) == item_key(b)


Outcome = tuple[list[str], tuple[type[ReaderError], int, int] | None]


def outcome(reader: StreamingReader[Any]) -> Outcome:
    """What a reader yields and how it ends, comparable across readers (NaN-safe via repr)."""
    records: list[str] = []
    try:
        records.extend(repr(record) for record in reader)
    except ReaderError as error:
        return records, (type(error), error.index, error.offset)
    return records, None


def outcomes_from_every_source(data: bytes, **options: Any) -> Iterator[tuple[str, Outcome]]:
    with every_source(data) as ways:
        for name, source, read_size in ways:
            sized = options if read_size is None else {**options, "read_size": read_size}
            yield name, outcome(StreamingReader(source, **sized))


def expected_after_cut(records: list[Item], offsets: list[int], cut: int) -> Outcome:
    """What the reader must do with the first ``cut`` bytes of a valid stream."""
    complete = sum(1 for end in offsets[1:] if end <= cut)
    ending = None
    if cut != offsets[complete]:
        ending = (TruncatedStreamError, complete, offsets[complete])
    return [repr(r) for r in records[:complete]], ending


# --------------------------------------------------------------------------------------------
# (a) Round trip
# --------------------------------------------------------------------------------------------


@settings(deadline=None, max_examples=examples(ci=200, local=100))
@given(item_lists)
def test_any_items_round_trip(records: list[Item]) -> None:
    stream = io.BytesIO()
    written = write_items(stream, records)
    data = stream.getvalue()
    assert written == len(data)
    reader = StreamingReader(data)
    got = list(reader)
    assert_same_items(got, records)
    assert reader.bytes_read == len(data)
    assert pack_items(got) == data


@settings(deadline=None, max_examples=100)
@given(item_lists)
def test_any_items_round_trip_with_a_mapper(records: list[Item]) -> None:
    data = pack_items(records)
    assert_same_items(list(StreamingReader(data, mapper=Item.from_list)), records)


@settings(deadline=None, max_examples=examples(ci=200, local=100))
@given(mixed_streams())
def test_any_items_as_arrays_and_maps_in_any_mix_round_trip(
    stream: tuple[list[Item], list[bytes]],
) -> None:
    records, pieces = stream
    data = b"".join(pieces)
    reader = StreamingReader(data)
    got = list(reader)
    assert_same_items(got, records)
    assert reader.bytes_read == len(data)
    # The mapper gets each record untyped: a list for an array, a dict for a map.
    untyped = list(StreamingReader(data, mapper=repr))
    assert untyped == [repr(msgpack.unpackb(piece)) for piece in pieces]  # repr: NaN == NaN


def test_extreme_values_round_trip() -> None:
    records = [
        Item(INT64_MIN, UINT64_MAX, 0, -1, 2**63, math.nan, "", "\U0010ffff" * 30),
        Item(-(2**31), 2**32, 2**31, 127, -32, math.inf, "é", "x" * 70000),
        Item(0, 0, 0, 0, 0, -0.0, "\x00", "-"),
        Item(1, 1, 1, 1, 1, -math.inf, "\u2028", "a" * 255),
    ]
    got = list(StreamingReader(pack_items(records)))
    assert_same_items(got, records)
    assert math.copysign(1.0, got[2].value) == -1.0


# --------------------------------------------------------------------------------------------
# (b) Every cut point
# --------------------------------------------------------------------------------------------

CUT_RECORDS = [
    *get_iter(3, seed=11),
    Item(UINT64_MAX, INT64_MIN, -1, 2**32, 128, math.nan, "", "p" * 40),
    Item(0, -33, 255, 65536, -129, -0.0, "ü" * 4, "q" * 300),
]
CUT_DATA = pack_items(CUT_RECORDS)
CUT_OFFSETS = offsets_of(CUT_RECORDS)


@pytest.mark.parametrize("read_size", [1, 3, 64 * 1024])
def test_every_cut_point_of_a_small_stream(read_size: int) -> None:
    assert CUT_OFFSETS[-1] == len(CUT_DATA)
    boundaries = 0
    for cut in range(len(CUT_DATA) + 1):
        reader = StreamingReader(CUT_DATA[:cut], read_size=read_size)
        expected = expected_after_cut(CUT_RECORDS, CUT_OFFSETS, cut)
        assert outcome(reader) == expected, cut
        boundaries += expected[1] is None
    assert boundaries == len(CUT_RECORDS) + 1


def test_every_cut_point_from_a_stream_source() -> None:
    for cut in range(len(CUT_DATA) + 1):
        reader = StreamingReader(io.BytesIO(CUT_DATA[:cut]), read_size=5)
        assert outcome(reader) == expected_after_cut(CUT_RECORDS, CUT_OFFSETS, cut), cut


@settings(deadline=None, max_examples=200)
@given(mixed_streams(min_size=1, max_size=6), st.data())
def test_any_cut_point_of_any_stream(
    stream: tuple[list[Item], list[bytes]], data: st.DataObject
) -> None:
    records, pieces = stream
    whole = b"".join(pieces)
    offsets = offsets_of_pieces(pieces)
    cut = data.draw(st.integers(min_value=0, max_value=len(whole)), label="cut")
    read_size = data.draw(st.sampled_from([1, 2, 7, 64 * 1024]), label="read_size")
    reader = StreamingReader(whole[:cut], read_size=read_size)
    got: list[Item] = []
    complete = sum(1 for end in offsets[1:] if end <= cut)
    if cut == offsets[complete]:
        got.extend(reader)
    else:
        with pytest.raises(TruncatedStreamError) as info:
            got.extend(reader)
        assert info.value.index == complete
        assert info.value.offset == offsets[complete]
        with pytest.raises(StopIteration):
            next(reader)
    assert_same_items(got, records[:complete])
    assert reader.bytes_read == cut


# --------------------------------------------------------------------------------------------
# (c) Same bytes, same outcome, from every source
# --------------------------------------------------------------------------------------------


@st.composite
def damaged_streams(draw: st.DrawFn) -> bytes:
    """A valid stream (records as arrays or maps), possibly overwritten, cut, or extended with
    arbitrary bytes."""
    _, pieces = draw(mixed_streams(max_size=5))
    data = bytearray(b"".join(pieces))
    for _ in range(draw(st.integers(0, 3))):
        if data:
            at = draw(st.integers(0, len(data) - 1))
            data[at] = draw(st.integers(0, 255))
    if data and draw(st.booleans()):
        del data[draw(st.integers(0, len(data))) :]
    if draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(max_size=12))
    return bytes(data)


def assert_same_outcome_everywhere(data: bytes, **options: Any) -> None:
    results = dict(outcomes_from_every_source(data, **options))
    reference = results["bytes/65536"]
    for name, result in results.items():
        assert result == reference, name


@settings(deadline=None, max_examples=examples(ci=150, local=75))
@given(damaged_streams())
def test_same_outcome_from_every_source(data: bytes) -> None:
    assert_same_outcome_everywhere(data)


@settings(deadline=None, max_examples=60)
@given(damaged_streams())
def test_same_outcome_from_every_source_with_a_mapper_and_with_skip(data: bytes) -> None:
    assert_same_outcome_everywhere(data, mapper=described_repr)
    assert_same_outcome_everywhere(data, on_error="skip")


@settings(deadline=None, max_examples=examples(ci=100, local=50))
@given(item_lists)
def test_valid_streams_give_their_items_from_every_source(records: list[Item]) -> None:
    data = pack_items(records)
    expected: Outcome = ([repr(r) for r in records], None)
    for name, result in outcomes_from_every_source(data):
        assert result == expected, name


@settings(deadline=None, max_examples=examples(ci=100, local=50))
@given(damaged_streams(), st.integers(min_value=20, max_value=200))
def test_outcome_with_a_small_max_record_size_does_not_depend_on_chunking(
    data: bytes, limit: int
) -> None:
    """max_record_size bounds every record, whether it arrives in one chunk or many.

    The records yielded and where the stream fails do not depend on chunking. The error class
    may: a record that is both over the limit and, say, invalid UTF-8 near its end is found
    too large before its end arrives when read in small chunks.
    """
    results = dict(outcomes_from_every_source(data, max_record_size=limit))
    records, ending = results["bytes/65536"]
    for name, (other_records, other_ending) in results.items():
        assert other_records == records, name
        assert (other_ending is None) == (ending is None), name
        if ending is not None and other_ending is not None:
            assert other_ending[1:] == ending[1:], name
            if RecordTooLargeError not in (ending[0], other_ending[0]):
                assert other_ending[0] is ending[0], name


def test_known_damage_gives_the_same_outcome_everywhere() -> None:
    whole = pack_items(CUT_RECORDS)
    damaged: list[bytes] = [
        whole[:-1],
        whole + b"\xc1",
        whole[:40] + b"\xc1" + whole[41:],
        whole + b"\xdb\xff\xff\xff\xff" + b"x" * 20,
        whole + b"\xdd\xff\xff\xff\xff",
        whole + b"\x91" * 2000,
        whole + b"\xa2\xff\xfe",
        b"\x98" + whole,
    ]
    check: Callable[[bytes], None] = assert_same_outcome_everywhere
    for data in damaged:
        check(data)
        _, ending = outcome(StreamingReader(data))
        assert ending is not None
