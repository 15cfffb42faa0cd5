"""The error contract: exact index and offset, chained causes, messages, no resynchronisation, for
every kind of damaged stream; the error classes themselves.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import msgpack
import msgspec
import pytest

from msgpack_reader_py import (
    DecodeError,
    Item,
    ItemTuple,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
)

from .helpers import (
    FIELD_NAMES,
    LONG_PATH,
    LOOSE_ITEMS,
    LOOSE_PREFIX,
    PREFIX,
    PREFIX_ITEMS,
    START,
    Loose,
    assert_finished,
    assert_located,
    drain,
    packed,
)

# An Item whose wire form has every kind of field: uint64, float64, fixstr, str8.
BIG = Item(70000, 2**16, 2**32, 2**64 - 1, -(2**63), 0.1, "FILENAME", "P" * 40)


def field_offsets(values: list[Any]) -> list[int]:
    """Byte offset of each value in the wire form of ``values``, then the record's length."""
    whole = packed(values)
    offsets = [len(whole) - sum(len(packed(v)) for v in values)]  # after the array header
    for value in values:
        offsets.append(offsets[-1] + len(packed(value)))
    assert offsets[-1] == len(whole)
    return offsets


@dataclass
class Blob:
    data: bytes


@dataclass
class Case:
    """A damaged stream and the error the reader must raise for it."""

    data: bytes
    error: type[ReaderError]
    index: int
    offset: int
    before: list[Any]
    cause: type[BaseException] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    message: str = ""


def cut(values: list[Any], at: int) -> bytes:
    """The first ``at`` bytes of the wire form of ``values``."""
    return packed(values)[:at]


ITEM_FIELDS = field_offsets(BIG.to_list())  # [header end, after id, ..., after path]
TS, VALUE, FILENAME, PATH = ITEM_FIELDS[3], ITEM_FIELDS[5], ITEM_FIELDS[6], ITEM_FIELDS[7]


DEEP = b"\x91" * 2000 + b"\xc0"
# A valid timestamp (seconds -2**62) past datetime's years, which msgspec refuses.
WIDE = b"\xc7\x0c\xff" + bytes(4) + (-(2**62)).to_bytes(8, "big", signed=True)


BIG_MAP = dict(zip(FIELD_NAMES, BIG.to_list(), strict=True))  # BIG as a map of its fields
MISSING_ID = "field `id` is missing (a map without its key, and no default)"


def truncated(tail: bytes) -> Case:
    return Case(PREFIX + tail, TruncatedStreamError, 3, START, PREFIX_ITEMS)


def loose(
    record: bytes,
    error: type[ReaderError],
    cause: type[BaseException] | None = None,
    *,
    message: str = "",
    **options: Any,
) -> Case:
    """The stream of two good ``Loose`` records, then ``record``, which fails with ``error``."""
    options["record_type"] = Loose
    return Case(
        LOOSE_PREFIX + record, error, 2, len(LOOSE_PREFIX), LOOSE_ITEMS, cause, options, message
    )


def payload_t(value: bytes) -> bytes:
    """A ``Loose`` record of key ``t`` whose payload is ``value``, as it is on the wire."""
    return b"\x92" + packed("t") + value


CASES: dict[str, Case] = {
    # The stream ends inside a record.
    "cut after the array header": truncated(cut(BIG.to_list(), 1)),
    "cut inside an array16 header": truncated(b"\xdc\x00"),
    "cut inside an array32 header": truncated(b"\xdd\x00\x00\x00"),
    "cut inside an int": truncated(cut(BIG.to_list(), TS + 4)),
    "cut after an int's type byte": truncated(cut(BIG.to_list(), TS + 1)),
    "cut inside a float": truncated(cut(BIG.to_list(), VALUE + 3)),
    "cut inside a str8 header": truncated(cut(BIG.to_list(), PATH + 1)),
    "cut inside a str16 header": truncated(packed([1, "s" * 300])[:3]),
    "cut inside a str32 header": truncated(packed([1, "s" * 70000])[:5]),
    "cut inside a str body": truncated(cut(BIG.to_list(), FILENAME + 4)),
    "cut one byte short": truncated(cut(BIG.to_list(), ITEM_FIELDS[-1] - 1)),
    "8 fields declared, 3 present": truncated(b"\x98" + packed(1) + packed(2) + packed(3)),
    "cut inside a nested map": loose(packed(["m", {"a": 1, "b": 2}])[:-2], TruncatedStreamError),
    # Not MessagePack.
    "0xc1 starting a record": Case(
        PREFIX + b"\xc1" + PREFIX, DecodeError, 3, START, PREFIX_ITEMS, msgpack.FormatError
    ),
    "0xc1 inside a record": Case(
        PREFIX + b"\x98\x01\x02\xc1" + PREFIX,
        DecodeError,
        3,
        START,
        PREFIX_ITEMS,
        msgpack.FormatError,
    ),
    "invalid UTF-8 in a str": Case(
        PREFIX + cut(BIG.to_list(), FILENAME) + b"\xa2\xff\xfe" + packed(BIG.path) + PREFIX,
        DecodeError,
        3,
        START,
        PREFIX_ITEMS,
        UnicodeDecodeError,
        message="UTF-8",
    ),
    # msgspec stops at a timestamp past datetime's years, which is valid: what follows is not.
    "invalid UTF-8 after a timestamp past datetime's years": Case(
        PREFIX
        + b"\x98"
        + WIDE
        + cut(BIG.to_list(), FILENAME)[ITEM_FIELDS[1] :]
        + b"\xa2\xff\xfe"
        + packed(BIG.path)
        + PREFIX,
        DecodeError,
        3,
        START,
        PREFIX_ITEMS,
        UnicodeDecodeError,
        message="UTF-8",
    ),
    "invalid timestamp after one past datetime's years, Any field": loose(
        payload_t(b"\x92" + WIDE + b"\xd7\xff" + b"\xff" * 8),
        DecodeError,
        ValueError,
        message="invalid timestamp",
    ),
    "a timestamp past datetime's years, then an array as a map's key, Any field": loose(
        payload_t(b"\x92" + WIDE + b"\x81\x91\x01\x02"),
        RecordError,
        message="field `payload[0]` holds the timestamp -4611686018427387904000000000 ns since",
    ),
    "a timestamp past datetime's years, then a map as a map's key, Any field": loose(
        payload_t(b"\x92" + WIDE + b"\x81\x80\x02"),
        RecordError,
        message="field `payload[0]` timestamp is out of range",  # no dict holds it: not located
    ),
    "nesting 2000 deep, Item": Case(
        PREFIX + DEEP, DecodeError, 3, START, PREFIX_ITEMS, msgpack.StackError
    ),
    "nesting 2000 deep, mapper": Case(
        PREFIX + DEEP,
        DecodeError,
        3,
        START,
        PREFIX_ITEMS,
        msgpack.StackError,
        {"mapper": Item.from_list},
    ),
    "nesting 2000 deep, Any field": loose(
        b"\x92" + packed("deep") + DEEP, DecodeError, msgpack.StackError
    ),
    "timestamp ext of invalid length": loose(
        payload_t(b"\xc7\x03\xff\x00\x00\x00"), DecodeError, ValueError, message="invalid timestamp"
    ),
    "timestamp64 with nanoseconds over 999999999": loose(
        payload_t(b"\xd7\xff" + b"\xff" * 8), DecodeError, ValueError, message="nanoseconds"
    ),
    # Larger than max_record_size.
    "str longer than max_record_size": Case(
        PREFIX + packed(LONG_PATH.to_list()) + PREFIX,
        RecordTooLargeError,
        3,
        START,
        PREFIX_ITEMS,
        None,
        {"max_record_size": 1000},
        "max_record_size=1000",
    ),
    "bin longer than max_record_size": Case(
        packed([b"1"]) + packed([b"x" * 2000]),
        RecordTooLargeError,
        1,
        len(packed([b"1"])),
        [Blob(b"1")],
        None,
        {"max_record_size": 1000, "record_type": Blob},
        "max_record_size=1000",
    ),
    "str32 header 0xffffffff, long tail": Case(
        PREFIX + b"\x98\x01\xdb\xff\xff\xff\xff" + b"x" * 5000,
        RecordTooLargeError,
        3,
        START,
        PREFIX_ITEMS,
        None,
        {"max_record_size": 1000, "read_size": 100},
        "max_record_size=1000",
    ),
    "array32 header 0xffffffff": Case(
        PREFIX + b"\xdd\xff\xff\xff\xff" + PREFIX,
        RecordTooLargeError,
        3,
        START,
        PREFIX_ITEMS,
        None,
        message="4294967295",
    ),
    "array32 header 0xffffffff, small limit": Case(
        PREFIX + b"\xdd\xff\xff\xff\xff",
        RecordTooLargeError,
        3,
        START,
        PREFIX_ITEMS,
        None,
        {"max_record_size": 1000},
        "max_record_size=1000",
    ),
    "array32 header 0xffffffff, mapper": Case(
        PREFIX + b"\xdd\xff\xff\xff\xff",
        RecordTooLargeError,
        3,
        START,
        PREFIX_ITEMS,
        None,
        {"max_record_size": 1000, "mapper": Item.from_list},
        "max_record_size=1000",
    ),
    "array32 header 0xffffffff, Any field": loose(
        b"\xdd\xff\xff\xff\xff",
        RecordTooLargeError,
        max_record_size=1000,
        message="max_record_size=1000",
    ),
    "map32 header 0xffffffff, Any field": loose(
        b"\x92\xa1k\xdf\xff\xff\xff\xff",
        RecordTooLargeError,
        max_record_size=1000,
        message="max_record_size=1000",
    ),
    # Valid MessagePack, not a record.
    # A map is a record when it has a key per field without a default; these have not.
    "map without the fields' keys": Case(
        PREFIX + packed({"a": 1}) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message=f"record 3 at byte {START}: {MISSING_ID}",
    ),
    "map of 8 entries, none a field's name": Case(
        PREFIX + packed({str(n): n for n in range(8)}),
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message=MISSING_ID,
    ),
    "empty map": Case(PREFIX + packed({}), RecordError, 3, START, PREFIX_ITEMS, message=MISSING_ID),
    "map missing one field's key": Case(
        PREFIX + packed({k: v for k, v in BIG_MAP.items() if k != "line"}) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message="field `line` is missing (a map without its key, and no default)",
    ),
    "map without a key, Any field": loose(
        packed({"key": "k"}),
        RecordError,
        message="field `payload` is missing (a map without its key, and no default)",
    ),
    "map with a key naming no field, forbid_unknown_keys": Case(
        PREFIX + packed({**BIG_MAP, "q": 1}) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        options={"forbid_unknown_keys": True},
        message=f"record 3 at byte {START}: map has key 'q', which names no field",
    ),
    "map with a field of the wrong type": Case(
        PREFIX + packed({**BIG_MAP, "line": "12"}) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message="field `line` expected int, got str '12'",
    ),
    "str of 8 characters": Case(
        PREFIX + packed("ABCDEFGH") + PREFIX, RecordError, 3, START, PREFIX_ITEMS, message="str"
    ),
    "str of 2 characters, Any field": loose(packed("kv"), RecordError, message="str"),
    "bin of 8 bytes": Case(PREFIX + packed(b"ABCDEFGH"), RecordError, 3, START, PREFIX_ITEMS),
    "an int": Case(PREFIX + packed(42) + PREFIX, RecordError, 3, START, PREFIX_ITEMS, message="42"),
    "nil": Case(PREFIX + packed(None), RecordError, 3, START, PREFIX_ITEMS, message="None"),
    "empty array": Case(PREFIX + packed([]), RecordError, 3, START, PREFIX_ITEMS),
    "7-element array": Case(
        PREFIX + packed(BIG.to_list()[:7]) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message="8 fields",
    ),
    "9-element array": Case(
        PREFIX + packed([*BIG.to_list(), 9]) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message="8 fields",
    ),
    "7-element array, mapper": Case(
        PREFIX + packed(BIG.to_list()[:7]),
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        TypeError,
        options={"mapper": Item.from_list},
        message="cannot build a record with Item.from_list: TypeError: ",
    ),
    "3-element array, Any field": loose(packed(["k", 1, 2]), RecordError, message="2 fields"),
    "str for an int": Case(
        PREFIX + packed([*BIG.to_list()[:4], "12", *BIG.to_list()[5:]]) + PREFIX,
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message="field `line` expected int, got str '12'",
    ),
    "bool for an int": Case(
        PREFIX + packed([True, *BIG.to_list()[1:]]),
        RecordError,
        3,
        START,
        PREFIX_ITEMS,
        message="field `id` expected int, got bool",
    ),
}


# --- every damaged stream ---------------------------------------------------------------------


def make_reader(case: Case) -> StreamingReader[Any]:
    options = dict(case.options)
    record_type = options.pop("record_type", Item)
    return StreamingReader(case.data, record_type, **options)


@pytest.mark.parametrize("name", list(CASES))
def test_error_contract(name: str) -> None:
    case = CASES[name]
    reader = make_reader(case)
    got, error = drain(reader)
    assert type(error) is case.error
    assert got == case.before
    assert len(got) == case.index
    assert_located(error, case.index, case.offset)
    if case.cause is not None:
        assert isinstance(error.__cause__, case.cause)
    assert case.message in str(error)
    assert_finished(reader)


ITEM_CASES = [
    name
    for name, case in CASES.items()
    if "record_type" not in case.options and "mapper" not in case.options
]


@pytest.mark.parametrize("name", ITEM_CASES)
def test_error_contract_with_named_tuple_records(name: str) -> None:
    """ItemTuple, built without its __new__, keeps the same contract as Item."""
    case = CASES[name]
    reader = StreamingReader(case.data, ItemTuple, **case.options)
    got, error = drain(reader)
    assert type(error) is case.error
    assert [Item(*record) for record in got] == case.before
    assert all(type(record) is ItemTuple for record in got)
    assert_located(error, case.index, case.offset)
    assert case.message in str(error)
    assert_finished(reader)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("read_size", [1, 5])
def test_error_contract_with_small_reads(name: str, read_size: int) -> None:
    """The same error, at the same place, whatever the chunking (causes may differ)."""
    case = CASES[name]
    options = {**case.options, "read_size": read_size}
    reader = make_reader(
        Case(case.data, case.error, case.index, case.offset, case.before, None, options)
    )
    got, error = drain(reader)
    assert type(error) is case.error
    assert got == case.before
    assert_located(error, case.index, case.offset)
    assert_finished(reader)


def test_maps_and_arrays_mix_and_are_counted_alike() -> None:
    """A map with a key per field is a record like an array; the error after it counts both."""
    bad = packed({**BIG_MAP, "line": "12"})
    at = START + len(packed(BIG_MAP)) + len(packed(BIG.to_list()))
    data = PREFIX + packed(BIG_MAP) + packed(BIG.to_list()) + bad + packed({**BIG_MAP, "q": 1})
    reader = StreamingReader(data)
    got, error = drain(reader)
    assert type(error) is RecordError
    assert got == [*PREFIX_ITEMS, BIG, BIG]
    assert_located(error, 5, at)
    assert error.reason == "field `line` expected int, got str '12'"
    assert_finished(reader)

    skipping = StreamingReader(data, on_error="skip")
    assert list(skipping) == [*PREFIX_ITEMS, BIG, BIG, BIG]  # the unknown key `q` is ignored
    assert [(e.index, e.offset, e.reason) for e in skipping.errors] == [(5, at, error.reason)]


def test_an_ext_of_a_reserved_negative_type_is_a_value_where_any_is_accepted() -> None:
    """Negative extension types other than the timestamp (-1) are not refused: an Any field
    gets them as ``msgspec.msgpack.Ext``, or what ``ext_hook`` makes of them."""
    data = LOOSE_PREFIX + b"\x92" + packed("t") + b"\xd4\x80\x00"
    got = list(StreamingReader(data, Loose))
    assert got == [*LOOSE_ITEMS, Loose("t", msgspec.msgpack.Ext(-128, b"\x00"))]

    seen: list[tuple[int, bytes]] = []

    def hook(code: int, payload: bytes) -> str:
        assert type(payload) is bytes  # as msgpack's own ext_hook is given
        seen.append((code, payload))
        return "hooked"

    assert list(StreamingReader(data, Loose, ext_hook=hook)) == [*LOOSE_ITEMS, Loose("t", "hooked")]
    assert seen == [(-128, b"\x00")]


def test_cut_fixture_parts_are_where_expected() -> None:
    """The cut points above really fall inside the parts they name."""
    wire = packed(BIG.to_list())
    assert wire[TS] == 0xCF  # uint64
    assert wire[VALUE] == 0xCB  # float64
    assert wire[PATH] == 0xD9  # str8
    assert wire[FILENAME] == 0xA8  # fixstr of 8
    assert packed([1, "s" * 300])[2] == 0xDA  # str16
    assert packed([1, "s" * 70000])[2] == 0xDB  # str32


# --------------------------------------------------------------------------------------------
# TruncatedStreamError on the reference stream
# --------------------------------------------------------------------------------------------


def test_last_record_cut_at_every_byte(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    start, end = record_offsets[9999], record_offsets[10000]
    assert end == len(reference_bytes)
    for cut_at in range(start + 1, end):
        reader = StreamingReader(reference_bytes[:cut_at])
        got, error = drain(reader)
        assert type(error) is TruncatedStreamError
        assert_located(error, 9999, start)
        assert got == reference_items[:9999]
        assert_finished(reader)


def test_truncated_message_says_how_much_is_there(
    reference_bytes: bytes, record_offsets: list[int]
) -> None:
    start = record_offsets[9999]
    _, error = drain(StreamingReader(reference_bytes[: start + 17]))
    assert str(error).startswith(f"record 9999 at byte {start}: ")
    assert "17 bytes" in str(error)


@pytest.mark.parametrize("index", [0, 1, 5000, 9998])
def test_cut_in_the_middle_of_the_reference_stream(
    index: int, reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    start = record_offsets[index]
    got, error = drain(StreamingReader(reference_bytes[: start + 10]))
    assert type(error) is TruncatedStreamError
    assert_located(error, index, start)
    assert got == reference_items[:index]


@pytest.mark.parametrize("index", [0, 1, 5000, 9999, 10000])
def test_cut_on_a_record_boundary_is_a_clean_end(
    index: int, reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    reader = StreamingReader(reference_bytes[: record_offsets[index]])
    assert list(reader) == reference_items[:index]
    assert reader.bytes_read == record_offsets[index]


def test_empty_stream_gives_no_records_and_no_error() -> None:
    reader = StreamingReader(b"")
    assert list(reader) == []
    assert list(reader) == []


# --------------------------------------------------------------------------------------------
# RecordError
# --------------------------------------------------------------------------------------------


def test_str_of_eight_characters_never_becomes_an_item() -> None:
    reader = StreamingReader(packed("ABCDEFGH"))
    got, error = drain(reader)
    assert got == []
    assert type(error) is RecordError
    assert error.reason == "expected an array or a map of 8 fields, found str 'ABCDEFGH'"


def test_mapper_conversion_error_is_a_record_error_with_its_cause() -> None:
    def strict(values: list[Any]) -> Item:
        if values[4] == 0:
            raise ValueError("line 0 is not allowed")
        return Item.from_list(values)

    bad = packed([*BIG.to_list()[:4], 0, *BIG.to_list()[5:]])
    reader = StreamingReader(PREFIX + bad + PREFIX, mapper=strict)
    got, error = drain(reader)
    assert type(error) is RecordError
    assert got == PREFIX_ITEMS
    assert_located(error, 3, START)
    assert isinstance(error.__cause__, ValueError)
    assert "line 0 is not allowed" in str(error)
    assert_finished(reader)


@pytest.mark.parametrize("exception", [RuntimeError, AttributeError, ZeroDivisionError])
def test_mapper_bug_is_not_reported_as_corrupt_data(exception: type[Exception]) -> None:
    """An exception the mapper raises on valid MessagePack is not a DecodeError.

    DecodeError means "the bytes are not valid MessagePack"; here they are. The mapper's own
    exception must surface, either as it is or as a RecordError chaining it.
    """

    def buggy(values: list[Any]) -> Item:
        if values[0] == BIG.id:
            raise exception("bug in the mapper")
        return Item.from_list(values)

    reader = StreamingReader(PREFIX + packed(BIG.to_list()), mapper=buggy)
    got: list[Item] = []
    with pytest.raises(Exception) as info:  # noqa: PT011 - checked below
        got.extend(reader)
    assert got == PREFIX_ITEMS
    raised = info.value
    assert not isinstance(raised, DecodeError), str(raised)
    if isinstance(raised, RecordError):
        assert isinstance(raised.__cause__, exception)
        assert_located(raised, 3, START)
    else:
        assert type(raised) is exception


# --------------------------------------------------------------------------------------------
# The classes
# --------------------------------------------------------------------------------------------

ERROR_CLASSES: list[type[ReaderError]] = [
    ReaderError,
    TruncatedStreamError,
    DecodeError,
    RecordTooLargeError,
    RecordError,
]


@pytest.mark.parametrize("cls", ERROR_CLASSES)
def test_every_error_is_a_reader_error_and_a_value_error(cls: type[ReaderError]) -> None:
    assert issubclass(cls, ReaderError)
    assert issubclass(cls, ValueError)
    error = cls("what is wrong", index=12, offset=345)
    assert (error.index, error.offset, error.reason) == (12, 345, "what is wrong")
    assert str(error) == "record 12 at byte 345: what is wrong"
    with pytest.raises(ValueError, match="what is wrong"):
        raise error


def test_subclasses_are_distinct() -> None:
    subclasses = ERROR_CLASSES[1:]
    for cls in subclasses:
        for other in subclasses:
            assert issubclass(cls, other) == (cls is other)


@pytest.mark.parametrize("cls", ERROR_CLASSES)
def test_errors_pickle_with_index_offset_and_message(cls: type[ReaderError]) -> None:
    error = cls("something broke", index=7, offset=99)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        clone = pickle.loads(pickle.dumps(error, protocol))
        assert type(clone) is cls
        assert (clone.index, clone.offset, clone.reason) == (7, 99, "something broke")
        assert str(clone) == str(error)
        assert clone.args == error.args


@pytest.mark.parametrize("name", ["0xc1 inside a record", "cut inside a float", "9-element array"])
def test_raised_errors_pickle(name: str) -> None:
    case = CASES[name]
    _, error = drain(make_reader(case))
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error)
    assert (clone.index, clone.offset) == (case.index, case.offset)
    assert str(clone) == str(error)


def test_errors_can_be_caught_as_value_error() -> None:
    caught: list[ValueError] = []

    def catch(data: bytes) -> None:
        try:
            list(StreamingReader(data))
        except ValueError as exc:
            caught.append(exc)

    for case in (CASES["cut inside an int"], CASES["0xc1 inside a record"], CASES["an int"]):
        catch(case.data)
    assert [type(e) for e in caught] == [TruncatedStreamError, DecodeError, RecordError]


def test_values_in_messages_are_shortened() -> None:
    huge = "x" * 100_000
    data = PREFIX + packed([*BIG.to_list()[:4], huge, *BIG.to_list()[5:]])
    _, error = drain(StreamingReader(data))
    assert type(error) is RecordError
    assert_located(error, 3, START)
    assert "field `line` expected int, got str 'xxx" in str(error)
    assert "..." in str(error)
    assert len(str(error)) < 300

    _, error = drain(StreamingReader(PREFIX + packed(huge)))
    assert type(error) is RecordError
    assert len(str(error)) < 300
