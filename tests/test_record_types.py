"""Record types besides dataclasses, NamedTuples and Structs: TypedDicts (every key checked),
``dict[str, T]`` records, attrs classes; and types no record can be read as, refused when the
reader is made instead of yielding empty records."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, TypedDict

import attrs
import msgpack
import msgspec
import pytest
import typing_extensions

from msgpack_reader_py import RecordError, StreamingReader

from .helpers import drain


class Span(TypedDict):
    name: str
    duration_ms: float
    tags: list[str]


class Loose(TypedDict, total=False):
    name: str
    count: int


def stream(*records: Any) -> bytes:
    return b"".join(msgpack.packb(r) for r in records)


def test_a_typed_dict_from_maps_and_arrays_every_key_checked() -> None:
    data = stream(
        {"name": "a", "duration_ms": 1, "tags": []},
        ["b", 2.5, ["x"]],
        {"name": "c", "duration_ms": 3.0, "tags": ["y"], "other": 1},
    )
    assert list(StreamingReader(data, Span)) == [
        {"name": "a", "duration_ms": 1.0, "tags": []},
        {"name": "b", "duration_ms": 2.5, "tags": ["x"]},
        {"name": "c", "duration_ms": 3.0, "tags": ["y"]},
    ]
    _, error = drain(
        StreamingReader(data + stream({"name": "d", "duration_ms": 1, "tags": [1]}), Span)
    )
    assert isinstance(error, RecordError)
    assert error.reason == "field `tags[0]` expected str, got int 1"
    _, error = drain(StreamingReader(stream({"name": "d", "tags": []}), Span))
    assert error.reason == "field `duration_ms` is missing (a map without its key, and no default)"


def test_a_typed_dicts_keys_that_may_be_missing_are_left_out() -> None:
    data = stream({"count": 1}, ["a"], ["b", 2], {})
    assert list(StreamingReader(data, Loose)) == [
        {"count": 1},
        {"name": "a"},
        {"name": "b", "count": 2},
        {},
    ]


class Partial(typing_extensions.TypedDict):  # typing's own knows NotRequired from 3.11 on
    name: str
    count: typing_extensions.NotRequired[int]


def test_a_typed_dict_with_not_required_keys() -> None:
    assert list(StreamingReader(stream({"name": "a"}, ["b", 2]), Partial)) == [
        {"name": "a"},
        {"name": "b", "count": 2},
    ]


def test_a_typed_dict_inside_a_record_in_both_shapes() -> None:
    @dataclasses.dataclass
    class Trace:
        id: int
        span: Span

    data = stream(
        [1, ["a", 1.0, []]], {"id": 2, "span": {"name": "b", "duration_ms": 2, "tags": []}}
    )
    assert list(StreamingReader(data, Trace)) == [
        Trace(1, {"name": "a", "duration_ms": 1.0, "tags": []}),
        Trace(2, {"name": "b", "duration_ms": 2.0, "tags": []}),
    ]


def test_dict_records_take_any_keys_and_check_every_value() -> None:
    data = stream({"a": 1, "b": 2}, {})
    assert list(StreamingReader(data, dict[str, int])) == [{"a": 1, "b": 2}, {}]
    got, error = drain(StreamingReader(data + stream({"c": "x"}), dict[str, int]))
    assert len(got) == 2
    assert (error.index, error.reason) == (2, "field `[...]` expected int, got str")
    _, error = drain(StreamingReader(stream([1, 2]), dict[str, int]))
    assert error.reason == "expected a map (dict[str, int]), found an array of 2 values"


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_dict_records_of_records() -> None:
    data = stream({"a": [1, 2], "b": {"x": 3, "y": 4}})
    assert list(StreamingReader(data, dict[str, Point])) == [{"a": Point(1, 2), "b": Point(3, 4)}]


@attrs.define
class Reading:
    sensor: str
    _raw: int = 0
    tags: list[str] = attrs.Factory(list)


def test_attrs_classes_from_maps_and_arrays() -> None:
    data = stream({"sensor": "a", "_raw": 1}, ["b"], ["c", 2, ["t"]])
    assert list(StreamingReader(data, Reading)) == [
        Reading("a", 1),
        Reading("b"),
        Reading("c", 2, ["t"]),
    ]
    _, error = drain(StreamingReader(stream(["d", "x"]), Reading))
    assert error.reason == "field `_raw` expected int, got str 'x'"


def test_the_struct_base_class_is_refused() -> None:
    with pytest.raises(TypeError, match=r"msgspec\.Struct is the base class of Structs"):
        StreamingReader(b"", msgspec.Struct)


@dataclasses.dataclass
class Empty:
    pass


class EmptyStruct(msgspec.Struct):
    pass


class EmptyTuple(NamedTuple):
    pass


class EmptyDict(TypedDict):
    pass


@pytest.mark.parametrize("empty", [Empty, EmptyStruct, EmptyTuple, EmptyDict])
def test_a_class_with_no_fields_is_refused_not_read_as_empty_records(empty: Any) -> None:
    with pytest.raises(TypeError, match=r"has no fields: every record would be read as an empty"):
        StreamingReader(msgpack.packb({"a": 1}), empty)


@dataclasses.dataclass
class Outer:
    inner: Empty


def test_a_record_with_an_empty_record_inside_is_refused() -> None:
    with pytest.raises(TypeError, match="Empty has no fields"):
        StreamingReader(b"", Outer)


@dataclasses.dataclass
class FromMaps:
    __wire_form__ = "map"
    id: int
    name: str


class FromArrays(NamedTuple):
    id: int
    name: str


# A NamedTuple's body holds fields only (for a type checker): the attribute is set after.
setattr(FromArrays, "__wire_form__", "array")  # noqa: B010


class StructFromArrays(msgspec.Struct, gc=False):
    __wire_form__ = "array"
    id: int
    name: str


@dataclasses.dataclass
class HoldsFromMaps:
    inner: list[FromMaps]


@pytest.mark.parametrize(
    ("record_type", "shape", "other"),
    [
        (FromMaps, {"id": 1, "name": "a"}, [1, "a"]),
        (FromArrays, [1, "a"], {"id": 1, "name": "a"}),
        (StructFromArrays, [1, "a"], {"id": 1, "name": "a"}),
    ],
)
@pytest.mark.parametrize("rows", [False, True])
def test_a_type_read_from_one_shape_refuses_the_other(
    record_type: Any, shape: Any, other: Any, rows: bool
) -> None:
    """``__wire_form__`` keeps a record type to one shape: the other is an error naming the
    record, for the records themselves and for the checked rows that text and tables take."""
    from msgpack_reader_py._base.options import ReadOptions
    from msgpack_reader_py._readers.streaming_reader import RowBatches

    data = stream(shape, shape, other, shape)
    reader: Any = (
        RowBatches(data, record_type, ReadOptions()) if rows else StreamingReader(data, record_type)
    )
    kept, error = drain(reader)
    read = [r for batch in kept for r in batch] if rows else kept
    assert [tuple(r) if rows else (r.id, r.name) for r in read] == [(1, "a"), (1, "a")]
    assert (error.index, error.offset) == (2, 2 * len(msgpack.packb(shape)))
    wanted, only = ("a map", "maps") if isinstance(shape, dict) else ("an array", "arrays")
    assert error.reason.startswith(
        f"expected {wanted} of 2 fields ({record_type.__name__} is read from {only} only), found "
    )


def test_a_nested_type_read_from_one_shape_refuses_the_other() -> None:
    data = stream({"inner": [{"id": 1, "name": "a"}]}, {"inner": [[2, "b"]]})
    kept, error = drain(StreamingReader(data, HoldsFromMaps))
    assert kept == [HoldsFromMaps([FromMaps(1, "a")])]
    reason = "field `inner[0]` expected a map (FromMaps is read from maps only), got an array "
    assert (error.index, error.reason) == (1, reason + "of 2 values")


@dataclasses.dataclass
class HoldsByName:
    by_name: dict[str, FromMaps]


@dataclasses.dataclass
class Either:
    id: int
    name: str


@dataclasses.dataclass
class HoldsEither:
    by_name: dict[str, Either]


@pytest.mark.parametrize(
    ("record_type", "value", "reason"),
    [
        (
            HoldsByName,
            {"x": [2, "b"]},
            "field `by_name[...]` expected a map (FromMaps is read from maps only), got array",
        ),
        (
            HoldsByName,
            {"x": 5},
            "field `by_name[...]` expected a map (FromMaps is read from maps only), got int",
        ),
        (HoldsByName, [5], "field `by_name` expected map, got an array of 1 value"),
        (HoldsEither, {"x": 5}, "field `by_name[...]` expected Either, got int"),
    ],
)
def test_a_record_type_held_by_a_field_is_named_when_a_value_is_not_one(
    record_type: Any, value: Any, reason: str
) -> None:
    """msgspec names wire forms (``map | array``) where a record type is expected: the reason
    names the type, and the one shape it is read from, and what was found as far as msgspec
    says (not which key of a map held it)."""
    data = stream({"by_name": {"x": {"id": 1, "name": "a"}}}, {"by_name": value})
    kept, error = drain(StreamingReader(data, record_type))
    assert len(kept) == 1
    assert (error.index, error.reason) == (1, reason)


def test_a_wire_form_that_names_no_shape_is_refused_when_the_reader_is_made() -> None:
    @dataclasses.dataclass
    class Misspelt:
        __wire_form__ = "maps"
        id: int

    refusal = r"""Misspelt: __wire_form__ is 'maps'; it may be "map" or "array"$"""
    with pytest.raises(TypeError, match=refusal):
        StreamingReader(b"", Misspelt)


class Clicked(msgspec.Struct, tag_field="type", tag="click"):
    __wire_form__ = "map"
    x: int


class Pressed(msgspec.Struct, tag_field="type", tag="key"):
    code: str


def test_a_kind_read_from_one_shape_refuses_the_other_beside_kinds_read_from_both() -> None:
    data = stream(["key", "a"], {"type": "click", "x": 1}, ["click", 2])
    kept, error = drain(StreamingReader(data, Clicked | Pressed))
    assert kept == [Pressed("a"), Clicked(1)]
    assert (error.index, error.reason) == (
        2,
        "expected a map (Clicked is read from maps only), found an array of 2 values",
    )
