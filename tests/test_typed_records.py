"""Records typed by their record type: dataclasses (string annotations, defaults, fields without
init, containers, unions, literals), NamedTuples and typed tuples; every field is checked,
and a field that does not fit is a located ``RecordError``.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import msgpack
import pytest

from msgpack_reader_py import (
    ITEM_VALUES,
    Item,
    ItemTuple,
    ReaderError,
    RecordError,
    StreamingReader,
    get_iter,
    pack_items,
)

from .helpers import (
    SAMPLE,
    Loose,
    item_map,
    item_values,
    rec,
)

# --------------------------------------------------------------------------------------------
# Custom record types
# --------------------------------------------------------------------------------------------


@dataclass
class Point:
    x: int
    y: int
    label: str


@dataclass(frozen=True, slots=True)
class Mixed:
    blob: bytes
    flag: bool
    maybe: int | None
    numbers: list[int]


@dataclass
class WithDefaults:
    a: int
    b: str = "b"
    hidden: int = field(default=0, init=False)


@dataclass
class Choice:
    kind: Literal["a", "b"]


@dataclass
class Unsupported:
    kind: list[int] | tuple[int, ...]


class Opaque:
    """A plain class: nothing in MessagePack decodes to one."""


@dataclass
class HoldsOpaque:
    thing: Opaque


def test_user_dataclass_with_three_fields() -> None:
    data = rec(1, 2, "a") + rec(-3, 2**63, "ü")
    assert list(StreamingReader(data, Point)) == [Point(1, 2, "a"), Point(-3, 2**63, "ü")]
    with pytest.raises(RecordError) as info:
        list(StreamingReader(data + rec(*SAMPLE.to_list()), Point))
    assert info.value.reason == "expected an array or a map of 3 fields, found an array of 8 values"
    assert (info.value.index, info.value.offset) == (2, len(data))


def test_string_annotations_are_resolved() -> None:
    # This module uses ``from __future__ import annotations``: every annotation is a string.
    assert Point.__annotations__["x"] == "int"
    assert Mixed.__annotations__["maybe"] == "int | None"
    data = rec(1, 2, "a")
    assert list(StreamingReader(data, Point)) == [Point(1, 2, "a")]
    with pytest.raises(RecordError, match="field `y` expected int, got str"):
        list(StreamingReader(rec(1, "2", "a"), Point))


def test_bytes_bool_optional_and_list_fields() -> None:
    data = rec(b"\x00\xff", True, None, [1, 2, 3]) + rec(b"", False, 7, [])
    records = list(StreamingReader(data, Mixed))
    assert records == [Mixed(b"\x00\xff", True, None, [1, 2, 3]), Mixed(b"", False, 7, [])]
    first = records[0]
    assert type(first.blob) is bytes
    assert type(first.flag) is bool
    assert type(first.numbers) is list
    assert type(records[1].maybe) is int


def test_record_type_with_any_field() -> None:
    payloads: list[Any] = [1, "s", None, {"k": "v", "n": None}, b"b", 1.5, [1, [2]]]
    data = b"".join(rec(str(n), payload) for n, payload in enumerate(payloads))
    records = list(StreamingReader(data, Loose))
    assert records == [Loose(str(n), p) for n, p in enumerate(payloads)]
    assert type(records[6].payload[1]) is list  # arrays in an Any field are lists
    with pytest.raises(RecordError, match="field `key` expected str, got int"):
        list(StreamingReader(rec(1, 2), Loose))


def test_fields_without_init_are_not_on_the_wire() -> None:
    assert list(StreamingReader(rec(1, "x"), WithDefaults)) == [WithDefaults(1, "x")]
    with pytest.raises(RecordError) as info:
        list(StreamingReader(rec(1, "x", 0), WithDefaults))
    assert info.value.reason == (
        "expected an array or a map of 1 to 2 fields, found an array of 3 values"
    )
    # In a map, its key names no field: ignored, or refused with forbid_unknown_keys.
    keyed = msgpack.packb({"a": 1, "b": "x", "hidden": 5})
    [record] = StreamingReader(keyed, WithDefaults)
    assert record == WithDefaults(1, "x")
    assert record.hidden == 0
    with pytest.raises(RecordError, match="map has key 'hidden', which names no field"):
        list(StreamingReader(keyed, WithDefaults, forbid_unknown_keys=True))


def test_trailing_fields_with_defaults_may_be_missing() -> None:
    short, whole = rec(1), rec(2, "x")
    keyed = msgpack.packb({"a": 3})
    got = list(StreamingReader(short + whole + keyed, WithDefaults))
    assert got == [WithDefaults(1), WithDefaults(2, "x"), WithDefaults(3)]
    assert got[0].b == "b"


def test_array_without_the_required_fields_is_a_record_error() -> None:
    good = rec(1, "x")
    reader = StreamingReader(good + rec() + good, WithDefaults)
    assert next(reader) == WithDefaults(1, "x")
    with pytest.raises(RecordError) as info:
        next(reader)
    assert info.value.reason == (
        "expected an array or a map of 1 to 2 fields, found an array of 0 values"
    )
    assert (info.value.index, info.value.offset) == (1, len(good))
    with pytest.raises(RecordError, match=r"field `a` is missing \(a map without its key"):
        list(StreamingReader(msgpack.packb({"b": "x"}), WithDefaults))


@dataclass
class Containers:
    anything: list  # type: ignore[type-arg]
    mapping: dict[str, int]
    bare_mapping: dict  # type: ignore[type-arg]
    sequence: Sequence[int]
    pair: tuple[int, ...]
    nothing: None
    whatever: object
    either: int | Any


def test_container_and_open_annotations() -> None:
    values: list[Any] = [[1, "a"], {"k": 1}, {}, [1, 2], [3], None, {"x": [1]}, "s"]
    [record] = StreamingReader(rec(*values), Containers)
    assert record.anything == [1, "a"]
    assert type(record.anything) is list
    assert record.mapping == {"k": 1}
    assert list(record.sequence) == [1, 2]
    assert list(record.pair) == [3]
    assert record.nothing is None
    assert record.whatever == {"x": [1]}
    assert record.either == "s"
    # The expected type is named in msgspec's words (array, object, null), the value found as
    # the reader describes it.
    bad = [
        (0, 1, "field `anything` expected array, got int 1"),
        (1, [1], "field `mapping` expected map, got an array of 1 value"),
        (1, {"k": "v"}, "field `mapping[...]` expected int, got str"),
        (1, {1: 1}, "field `mapping`: a map key expected str, got int"),
        (2, 5, "field `bare_mapping` expected map, got int 5"),
        (3, ["x"], "field `sequence[0]` expected int, got str 'x'"),
        (5, 0, "field `nothing` expected None, got int 0"),
        (4, "3", "field `pair` expected array, got str '3'"),
    ]
    for position, value, message in bad:
        wrong = list(values)
        wrong[position] = value
        with pytest.raises(RecordError) as info:
            list(StreamingReader(rec(*wrong), Containers))
        assert info.value.reason == message


@dataclass
class ThirteenUnions:
    f0: int | str
    f1: int | str
    f2: int | str
    f3: int | str
    f4: int | str
    f5: int | str
    f6: int | str
    f7: int | str
    f8: int | str
    f9: int | str
    f10: int | str
    f11: int | str
    f12: int | str


def test_a_union_of_many_types_is_checked() -> None:
    values: list[Any] = [n if n % 2 else str(n) for n in range(13)]
    [record] = StreamingReader(rec(*values), ThirteenUnions)
    assert record.f12 == "12"
    assert record.f11 == 11
    values[9] = b"bytes"
    with pytest.raises(RecordError, match="field `f9` expected int \\| str, got bytes"):
        list(StreamingReader(rec(*values), ThirteenUnions))


def test_literal_fields_are_checked() -> None:
    good = rec("a") + msgpack.packb({"kind": "b"})
    assert list(StreamingReader(good, Choice)) == [Choice("a"), Choice("b")]
    with pytest.raises(RecordError) as info:
        list(StreamingReader(good + rec("c"), Choice))
    assert info.value.reason == "field `kind` invalid enum value 'c'"
    assert (info.value.index, info.value.offset) == (2, len(good))


def test_an_annotation_that_cannot_be_checked_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match=r"list\[int\] \| tuple\[int, \.\.\.\]"):
        StreamingReader(rec([1]), Unsupported)
    # No MessagePack value is an Opaque: no record could ever be read, so the reader must
    # say so at once rather than refuse (or, skipping, silently drop) every record.
    with pytest.raises(TypeError, match="Opaque"):
        StreamingReader(rec(1), HoldsOpaque)


# --------------------------------------------------------------------------------------------
# Every field checked
# --------------------------------------------------------------------------------------------


def test_the_reference_stream_passes_every_check(
    reference_items: list[Item], reference_bytes: bytes
) -> None:
    assert list(StreamingReader(reference_bytes)) == reference_items


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"line": True}, "field `line` expected int, got bool True"),
        ({"id": False}, "field `id` expected int, got bool False"),
        ({"line": "12"}, "field `line` expected int, got str '12'"),
        ({"line": 1.0}, "field `line` expected int, got float 1.0"),
        ({"line": None}, "field `line` expected int, got None"),
        ({"value": None}, "field `value` expected float, got None"),
        ({"value": "1.5"}, "field `value` expected float, got str '1.5'"),
        ({"value": True}, "field `value` expected float, got bool True"),
        ({"filename": b"FILENAME"}, "field `filename` expected str, got bytes b'FILENAME'"),
        ({"path": 7}, "field `path` expected str, got int 7"),
        ({"path": [1, 2]}, "field `path` expected str, got an array of 2 values"),
    ],
)
@pytest.mark.parametrize("shape", ["array", "map"])
def test_a_field_of_the_wrong_type_is_a_record_error(
    changes: dict[str, Any], message: str, shape: str
) -> None:
    good = rec(*SAMPLE.to_list())
    bad = rec(*item_values(**changes)) if shape == "array" else item_map(**changes)
    data = good + item_map() + bad + good
    reader = StreamingReader(data)
    assert [next(reader), next(reader)] == [SAMPLE, SAMPLE]
    with pytest.raises(RecordError) as info:
        next(reader)
    assert info.value.reason == message
    assert info.value.index == 2
    assert info.value.offset == len(good) + len(item_map())
    with pytest.raises(StopIteration):
        next(reader)


def test_an_int_is_taken_for_a_float() -> None:
    [item, keyed] = StreamingReader(rec(*item_values(value=3)) + item_map(value=-4))
    assert item.value == 3.0
    assert type(item.value) is float
    assert keyed.value == -4.0
    assert type(keyed.value) is float


def test_none_is_taken_only_by_optional_fields() -> None:
    ok = rec(b"", True, None, [])
    assert next(StreamingReader(ok, Mixed)).maybe is None
    with pytest.raises(RecordError, match="field `flag` expected bool, got None"):
        list(StreamingReader(rec(b"", None, None, []), Mixed))
    with pytest.raises(RecordError, match="field `maybe` expected int \\| None, got bool True"):
        list(StreamingReader(rec(b"", True, True, []), Mixed))
    with pytest.raises(RecordError, match="field `flag` expected bool, got int"):
        list(StreamingReader(rec(b"", 1, None, []), Mixed))


def test_str_and_bytes_are_told_apart() -> None:
    with pytest.raises(RecordError, match="field `blob` expected bytes, got str"):
        list(StreamingReader(rec("text", True, None, []), Mixed))
    with pytest.raises(RecordError, match="field `numbers` expected array, got str '1,2'"):
        list(StreamingReader(rec(b"", True, None, "1,2"), Mixed))


def test_a_field_error_is_a_located_reader_error() -> None:
    good = rec(*SAMPLE.to_list())
    with pytest.raises(ReaderError) as info:
        list(StreamingReader(good + rec(*item_values(line="x"))))
    assert isinstance(info.value, RecordError)
    assert str(info.value).startswith(f"record 1 at byte {len(good)}: ")


# --- NamedTuple records ----------------------------------------------------------------------


class Pair(NamedTuple):
    key: str
    hits: int = 0


def test_item_tuple_records_equal_items(
    reference_bytes: bytes, reference_items: list[Item]
) -> None:
    got = list(StreamingReader(reference_bytes, ItemTuple))
    assert all(type(record) is ItemTuple for record in got)
    assert [Item(*record) for record in got] == reference_items
    assert got[0].path == reference_items[0].path


def test_item_tuple_records_are_checked(reference_bytes: bytes, record_offsets: list[int]) -> None:
    assert len(list(StreamingReader(reference_bytes, ItemTuple))) == 10000
    bad = msgpack.packb([1, 2, 3, 4, 5, 6.0, "f", b"not a str"])
    data = reference_bytes[: record_offsets[5]] + bad
    with pytest.raises(RecordError, match="field `path` expected str, got bytes") as info:
        list(StreamingReader(data, ItemTuple))
    assert (info.value.index, info.value.offset) == (5, record_offsets[5])


@pytest.mark.parametrize(("values", "found"), [(["k", 1, 2], 3), ([], 0)])
def test_named_tuple_count_is_checked_despite_defaults(values: list[Any], found: int) -> None:
    # tuple.__new__ would build a Pair of any length; the batch check must refuse it.
    data = msgpack.packb(["a", 1]) + msgpack.packb(values)
    reader = StreamingReader(data, Pair)
    assert next(reader) == Pair("a", 1)
    with pytest.raises(RecordError) as info:
        next(reader)
    assert info.value.reason == (
        f"expected an array or a map of 1 to 2 fields, found an array of {found} values"
    )
    assert (info.value.index, info.value.offset) == (1, len(msgpack.packb(["a", 1])))


def test_named_tuple_default_fills_a_missing_trailing_field() -> None:
    data = (
        msgpack.packb(["k"]) + msgpack.packb({"key": "m"}) + msgpack.packb({"key": "n", "hits": 2})
    )
    got = list(StreamingReader(data, Pair))
    assert got == [Pair("k", 0), Pair("m", 0), Pair("n", 2)]
    assert all(type(record) is Pair for record in got)


def test_untyped_namedtuple_takes_any_values() -> None:
    Point = collections.namedtuple("Point", ["x", "y"])
    data = msgpack.packb([1, "two"]) + msgpack.packb([[3], None]) + msgpack.packb({"x": 4, "y": 5})
    got = list(StreamingReader(data, Point))
    assert got == [Point(1, "two"), Point([3], None), Point(4, 5)]
    assert type(got[1].x) is list  # an untyped field is Any: arrays are lists


# --- typed tuple records -----------------------------------------------------------------------


def test_item_values_are_the_decoded_tuples(
    reference_bytes: bytes, reference_items: list[Item]
) -> None:
    got = list(StreamingReader(reference_bytes, ITEM_VALUES))
    assert all(type(values) is tuple for values in got)
    assert [Item(*values) for values in got] == reference_items
    assert len(list(StreamingReader(reference_bytes, ITEM_VALUES))) == 10000


@pytest.mark.parametrize("values", [[1, 2], [1, 2, 3, 4, 5, 6.0, "f", "p", 9], "eight ch"])
def test_item_values_shape_is_checked(values: Any, record_offsets: list[int]) -> None:
    data = pack_items(get_iter(2)) + msgpack.packb(values)
    reader = StreamingReader(data, ITEM_VALUES)
    assert len([next(reader), next(reader)]) == 2
    with pytest.raises(RecordError, match="expected an array of 8 fields") as info:
        next(reader)
    assert (info.value.index, info.value.offset) == (2, record_offsets[2])


def test_item_values_validation_names_the_position() -> None:
    data = msgpack.packb([1, 2, 3, 4, True, 6.0, "f", "p"])
    with pytest.raises(RecordError, match=r"field `\[4\]` expected int, got bool True"):
        list(StreamingReader(data, ITEM_VALUES))


@pytest.mark.parametrize("record_type", [tuple, tuple[int, ...], tuple[()], list[int], int])
def test_only_fixed_length_tuple_types_are_record_types(record_type: Any) -> None:
    with pytest.raises(TypeError, match="record_type must be"):
        StreamingReader(b"", record_type)
