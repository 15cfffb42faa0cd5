"""Record types that are unions of kinds (``Click | Key``): told apart by a Struct tag or a
``Literal`` field, in maps by its key and in arrays by its position, at the top and inside a
record; and what cannot be told apart, refused when the reader is made."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import typing
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import attrs
import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import AsyncStreamingReader, RecordError, StreamingReader
from msgpack_reader_py._base.ext import fluentd_event_time
from msgpack_reader_py._types.decoding import KindsDecoder, record_decoder
from msgpack_reader_py._types.record_type import record_kinds, union_fields

from .helpers import assert_located, drain, examples

UTC = datetime.timezone.utc


# Tagged Structs, map-shaped and array-shaped.
class Click(msgspec.Struct, tag="click"):
    x: int
    y: int


class Key(msgspec.Struct, tag="key"):
    code: str
    repeat: bool = False


class ArrayClick(msgspec.Struct, tag="click", array_like=True):
    x: int
    y: int


class ArrayKey(msgspec.Struct, tag="key", array_like=True):
    code: str
    repeat: bool = False


class Ping(msgspec.Struct, tag="ping"):
    """A kind whose tag is all it says."""


# Kinds told apart by a Literal field, first.
@dataclasses.dataclass
class DataClick:
    type: Literal["click", "dblclick"]
    x: int
    y: int


class TupleKey(NamedTuple):
    type: Literal["key"]
    code: str
    repeat: bool = False


class TupleClick(NamedTuple):
    type: Literal["click"]
    n: int


@attrs.define
class AttrsScroll:
    type: Literal["scroll"]
    dy: float


# Kinds told apart by a Literal field that is last (its default makes it so).
@dataclasses.dataclass
class LateClick:
    x: int
    y: int
    type: Literal["click"] = "click"


@dataclasses.dataclass
class LateKey:
    code: str
    repeat: bool
    type: Literal["key"] = "key"


def stream(*records: Any) -> bytes:
    return b"".join(msgpack.packb(r, datetime=True) for r in records)


def read(data: bytes, record_type: Any, **options: Any) -> list[Any]:
    return list(StreamingReader(data, record_type, **options))


@pytest.mark.parametrize("union", [Click | Key, typing.Union[Click, Key]])  # noqa: UP007
def test_tagged_structs_in_both_shapes_and_both_spellings(union: Any) -> None:
    data = stream(
        {"type": "click", "x": 1, "y": 2},
        {"type": "key", "code": "a"},
        ["click", 3, 4],
        ["key", "b", True],
        {"code": "c", "type": "key", "repeat": True},
    )
    assert read(data, union) == [
        Click(1, 2),
        Key("a"),
        Click(3, 4),
        Key("b", True),
        Key("c", True),
    ]


def test_array_like_tagged_structs_read_maps_too() -> None:
    data = stream(["click", 1, 2], {"type": "key", "code": "k"}, ["key", "j", True])
    assert read(data, ArrayClick | ArrayKey) == [
        ArrayClick(1, 2),
        ArrayKey("k"),
        ArrayKey("j", True),
    ]


def test_a_kind_of_a_tag_alone() -> None:
    data = stream({"type": "ping"}, ["ping"], {"type": "click", "x": 1, "y": 1})
    assert read(data, Ping | Click) == [Ping(), Ping(), Click(1, 1)]


def test_classes_told_apart_by_a_literal_field_first() -> None:
    union = DataClick | TupleKey | AttrsScroll
    data = stream(
        {"type": "click", "x": 1, "y": 2},
        ["dblclick", 3, 4],
        {"type": "key", "code": "a"},
        ["key", "b", True],
        {"dy": -3.0, "type": "scroll"},
        ["scroll", 2],
    )
    assert read(data, union) == [
        DataClick("click", 1, 2),
        DataClick("dblclick", 3, 4),
        TupleKey("key", "a"),
        TupleKey("key", "b", True),
        AttrsScroll("scroll", -3.0),
        AttrsScroll("scroll", 2.0),
    ]


def test_classes_told_apart_by_a_literal_field_anywhere_in_arrays() -> None:
    data = stream(
        [1, 2, "click"], ["a", True, "key"], {"type": "key", "code": "b", "repeat": False}
    )
    assert read(data, LateClick | LateKey) == [
        LateClick(1, 2),
        LateKey("a", True),
        LateKey("b", False),
    ]


def test_the_kind_of_each_record_is_checked_like_any_record() -> None:
    data = stream(["click", 1, 2], ["click", "x", 2])
    got, error = drain(StreamingReader(data, Click | Key))
    assert got == [Click(1, 2)]
    assert_located(error, 1, len(stream(["click", 1, 2])))
    assert isinstance(error, RecordError)
    assert error.reason == "field `x` expected int, got str 'x' (in a Click record)"


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (
            {"type": "scroll", "dy": 1},
            "the tag `type` is 'scroll', which names no kind of Click | Key "
            "('click' (Click) or 'key' (Key))",
        ),
        (
            ["scroll", 1],
            "the tag at position 0 is 'scroll', which names no kind of Click | Key "
            "('click' (Click) or 'key' (Key))",
        ),
        (
            {"x": 1, "y": 2},
            "the tag `type` is missing: a record of Click | Key names its kind there "
            "('click' (Click) or 'key' (Key))",
        ),
        ([], "the tag at position 0 is missing"),
        ({"type": 7}, "the tag `type` is 7, which names no kind"),
        (5, "expected a record of Click | Key (an array or a map, with its tag), found int 5"),
        (
            ["click", 1],
            "expected an array of 3 values (its tag and fields), found an array of 2 values "
            "(in a Click record)",
        ),
        (
            ["key", "a", True, 9],
            "expected an array of 2 to 3 values (its tag and fields), found an array of 4 values "
            "(in a Key record)",
        ),
        ({"type": "key"}, "field `code` is missing"),
    ],
)
def test_a_record_of_no_kind_is_a_located_record_error(record: Any, reason: str) -> None:
    good = stream({"type": "click", "x": 1, "y": 2})
    got, error = drain(StreamingReader(good + stream(record), Click | Key))
    assert got == [Click(1, 2)]
    assert isinstance(error, RecordError)
    assert_located(error, 1, len(good))
    assert error.reason.startswith(reason)


def test_a_tag_not_first_names_its_position() -> None:
    data = stream([1, 2, "click"], ["a", True, "tap"])
    _, error = drain(StreamingReader(data, LateClick | LateKey))
    assert error.reason == (
        "the tag at position 2 is 'tap', which names no kind of LateClick | LateKey "
        "('click' (LateClick) or 'key' (LateKey))"
    )


def test_skip_mode_passes_over_records_of_no_kind_and_counts_them() -> None:
    data = stream(
        {"type": "click", "x": 1, "y": 2},
        {"type": "scroll"},
        ["key", "a"],
        ["click", "bad", 0],
        {"type": "key", "code": "b"},
    )
    reader = StreamingReader(data, Click | Key, on_error="skip")
    assert list(reader) == [Click(1, 2), Key("a"), Key("b")]
    assert reader.skipped == 2
    assert [e.index for e in reader.errors] == [1, 3]


def test_a_stream_mixing_shapes_in_one_read_is_read_whole() -> None:
    records = [{"type": "click", "x": i, "y": i} if i % 2 else ["key", str(i)] for i in range(500)]
    expected = [Click(i, i) if i % 2 else Key(str(i)) for i in range(500)]
    assert read(stream(*records), Click | Key) == expected


@pytest.mark.parametrize(
    ("union", "says"),
    [
        pytest.param(
            DataClick | TupleClick,
            "DataClick and TupleClick both take the tag `type` = 'click'",
            id="a tag in two kinds",
        ),
        pytest.param(
            DataClick | LateKey,
            "the tag `type` is at position 0 in DataClick, 2 in LateKey",
            id="tags at two positions",
        ),
    ],
)
def test_kinds_that_cannot_be_told_apart_are_refused_when_the_reader_is_made(
    union: Any, says: str
) -> None:
    with pytest.raises(TypeError, match="cannot tell") as caught:
        StreamingReader(b"", union)
    assert says in str(caught.value)


def test_kinds_with_no_tag_are_refused_saying_what_a_tag_is() -> None:
    @dataclasses.dataclass
    class A:
        a: int

    @dataclasses.dataclass
    class B:
        b: int

    with pytest.raises(TypeError) as caught:
        StreamingReader(b"", A | B)
    assert str(caught.value).startswith("A | B: cannot tell A and B apart: ")
    assert "Literal[...]" in str(caught.value)


def test_tags_of_two_types_and_members_that_are_no_records_are_refused() -> None:
    @dataclasses.dataclass
    class Numbered:
        type: Literal[1]

    with pytest.raises(TypeError, match="a str in some kinds and an int in others"):
        StreamingReader(b"", Numbered | DataClick)
    with pytest.raises(TypeError, match="must be a record class"):
        StreamingReader(b"", Click | int)
    with pytest.raises(TypeError, match="must be a record class"):
        StreamingReader(b"", Click | None)


def test_a_union_of_kinds_inside_a_record_in_both_shapes() -> None:
    @dataclasses.dataclass
    class Envelope:
        id: int
        event: Click | Key
        previous: Click | Key | None = None

    data = stream(
        [1, {"type": "click", "x": 1, "y": 2}],
        {"id": 2, "event": ["key", "a"], "previous": ["click", 0, 0]},
        [3, ["key", "b"], None],
    )
    assert read(data, Envelope) == [
        Envelope(1, Click(1, 2)),
        Envelope(2, Key("a"), Click(0, 0)),
        Envelope(3, Key("b")),
    ]
    bad = stream([4, ["key", 5]], [5, {"type": "tap"}])
    _, error = drain(StreamingReader(data + bad, Envelope))
    assert error.index == 3
    assert error.reason == "field `event.code` expected str, got int 5 (in a Key record)"
    reader = StreamingReader(data + bad, Envelope, on_error="skip")
    assert len(list(reader)) == 3
    assert reader.errors[1].reason.startswith(
        "field `event` is no Click | Key record: the tag `type` is 'tap'"
    )


class Header(NamedTuple):
    time: datetime.datetime
    metadata: dict[str, Any]


class Entry(NamedTuple):
    """Fluent Bit 2.1's ``[[time, {metadata}], {record}]`` and Fluentd's ``[time, {record}]``."""

    header: Header | datetime.datetime
    record: dict[str, Any]


def event_time(seconds: int, nanoseconds: int) -> msgpack.ExtType:
    return msgpack.ExtType(0, seconds.to_bytes(4, "big") + nanoseconds.to_bytes(4, "big"))


def test_a_record_or_a_datetime_with_an_ext_hook() -> None:
    data = stream(
        [[event_time(1, 500), {"tag": "app"}], {"m": "a"}],
        [event_time(2, 0), {"m": "b"}],
        [msgpack.Timestamp(3, 0), {"m": "c"}],
    )
    when = [datetime.datetime.fromtimestamp(s, UTC) for s in (1, 2, 3)]
    assert read(data, Entry, ext_hook=fluentd_event_time) == [
        Entry(Header(when[0].replace(microsecond=1), {"tag": "app"}), {"m": "a"}),
        Entry(when[1], {"m": "b"}),
        Entry(when[2], {"m": "c"}),
    ]


def test_a_record_or_a_datetime_without_a_hook() -> None:
    data = stream([[msgpack.Timestamp(1, 0), {}], {}], [msgpack.Timestamp(2, 0), {}])
    when = [datetime.datetime.fromtimestamp(s, UTC) for s in (1, 2)]
    assert read(data, Entry) == [Entry(Header(when[0], {}), {}), Entry(when[1], {})]


@pytest.mark.parametrize("hook", [None, fluentd_event_time])
def test_a_record_or_a_datetime_refuses_anything_else_naming_both(hook: Any) -> None:
    _, error = drain(StreamingReader(stream([7, {}]), Entry, ext_hook=hook))
    assert error.reason == "field `header` expected Header | datetime, got int 7"


def test_a_hooks_refusal_inside_the_record_is_located() -> None:
    data = stream([[msgpack.ExtType(0, b"12"), {}], {}])
    _, error = drain(StreamingReader(data, Entry, ext_hook=fluentd_event_time))
    assert error.reason == (
        "field `header.time` fluentd_event_time refused extension type 0: ValueError: a "
        "Fluentd EventTime is 8 bytes, got 2"
    )


def test_the_async_reader_reads_kinds_too() -> None:
    data = stream({"type": "click", "x": 1, "y": 2}, ["key", "a"])

    async def main() -> list[Any]:
        async with AsyncStreamingReader(data, Click | Key) as reader:
            return [record async for record in reader]

    assert asyncio.run(main()) == [Click(1, 2), Key("a")]


def test_kinds_and_their_tag_are_worked_out_once() -> None:
    kinds = record_kinds(DataClick | TupleKey)
    assert kinds is record_kinds(DataClick | TupleKey)
    assert (kinds.key, kinds.position, kinds.name) == ("type", 0, "type")
    assert [k.tags for k in kinds.kinds] == [("click", "dblclick"), ("key",)]
    assert isinstance(record_decoder(Click | Key), KindsDecoder)


def test_a_tagged_structs_tag_is_its_tag_field() -> None:
    class Renamed(msgspec.Struct, tag_field="kind", tag="r"):
        a: int

    class Other(msgspec.Struct, tag_field="kind", tag="o"):
        b: int

    kinds = record_kinds(Renamed | Other)
    assert (kinds.key, kinds.name) == ("kind", "kind")
    assert read(stream({"kind": "o", "b": 1}, ["r", 2]), Renamed | Other) == [Other(1), Renamed(2)]


def test_the_columns_of_kinds() -> None:
    fields = union_fields(DataClick | TupleKey | AttrsScroll)
    assert [(f.name, f.annotation) for f in fields] == [
        ("type", Literal["click", "dblclick", "key", "scroll"]),
        ("x", int | None),
        ("y", int | None),
        ("code", str | None),
        ("repeat", bool | None),
        ("dy", float | None),
    ]


def test_a_field_two_kinds_type_differently_has_no_column() -> None:
    @dataclasses.dataclass
    class A:
        type: Literal["a"]
        value: int

    @dataclasses.dataclass
    class B:
        type: Literal["b"]
        value: str

    with pytest.raises(TypeError, match=r"field `value` is int in A and str in B"):
        union_fields(A | B)


def test_rows_of_kinds() -> None:
    decoder = record_decoder(Click | Key, values=True)
    data = msgpack.packb([{"type": "click", "x": 1, "y": 2}, {"type": "key", "code": "a"}])
    assert decoder.decode_run(data) == [
        ("click", 1, 2, None, None),
        ("key", None, None, "a", False),
    ]


# A property: any mix of kinds, in either shape, read as each record's kind.


def click_values() -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-1000, 1000))


def key_values() -> st.SearchStrategy[tuple[str, bool]]:
    return st.tuples(st.text(max_size=8), st.booleans())


@dataclasses.dataclass(frozen=True)
class Style:
    """How one union's kinds are written and built: (tag, fields) -> wire value, and object."""

    union: Any
    write: Callable[[str, tuple[Any, ...], bool], Any]
    build: Callable[[str, tuple[Any, ...]], Any]


def tag_first(tag: str, values: tuple[Any, ...], as_map: bool, names: dict[str, list[str]]) -> Any:
    if as_map:
        return {"type": tag, **dict(zip(names[tag], values, strict=True))}
    return [tag, *values]


NAMES = {"click": ["x", "y"], "key": ["code", "repeat"]}
STYLES = {
    "tagged maps": Style(
        Click | Key,
        lambda tag, values, as_map: tag_first(tag, values, as_map, NAMES),
        lambda tag, values: Click(*values) if tag == "click" else Key(*values),
    ),
    "tagged arrays": Style(
        ArrayClick | ArrayKey,
        lambda tag, values, as_map: tag_first(tag, values, as_map, NAMES),
        lambda tag, values: ArrayClick(*values) if tag == "click" else ArrayKey(*values),
    ),
    "literal last": Style(
        LateClick | LateKey,
        lambda tag, values, as_map: (
            {"type": tag, **dict(zip(NAMES[tag], values, strict=True))}
            if as_map
            else [*values, tag]
        ),
        lambda tag, values: LateClick(*values) if tag == "click" else LateKey(*values),
    ),
}


@st.composite
def mixes(draw: st.DrawFn) -> tuple[list[Any], list[Any], list[int]]:
    """Records of two kinds in either shape, some of no kind; what a reader must give; and
    the indexes it must skip."""
    style = STYLES[draw(st.sampled_from(sorted(STYLES)))]
    wire: list[Any] = []
    expected: list[Any] = []
    bad: list[int] = []
    for index in range(draw(st.integers(0, 40))):
        choice = draw(st.sampled_from(["click", "key", "none"]))
        as_map = draw(st.booleans())
        if choice == "none":
            wire.append({"type": "tap"} if as_map else ["tap", 1, 2, "tap"])
            bad.append(index)
            continue
        values = draw(click_values() if choice == "click" else key_values())
        wire.append(style.write(choice, values, as_map))
        expected.append(style.build(choice, values))
    return [style.union, *wire], expected, bad


@given(mixes(), st.integers(1, 64))
@settings(deadline=None, max_examples=examples(ci=300, local=60))
def test_any_mix_of_kinds_reads_as_a_reference_decode(
    mix: tuple[list[Any], list[Any], list[int]], read_size: int
) -> None:
    (union, *wire), expected, bad = mix
    data = stream(*wire)
    reader = StreamingReader(data, union, on_error="skip", read_size=read_size)
    assert list(reader) == expected
    assert reader.skipped == len(bad)
    assert [e.index for e in reader.errors] == bad
    # In raise mode, every record before the first of no kind, then its error.
    got, error = (read(data, union), None) if not bad else drain(StreamingReader(data, union))
    assert got == expected[: bad[0] if bad else len(expected)]
    if error is not None:
        assert isinstance(error, RecordError)
        assert error.index == bad[0]
