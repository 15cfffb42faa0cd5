"""decoding.RecordDecoder: both wire shapes at every level, every record kind."""

from __future__ import annotations

import dataclasses
import datetime
import io
from typing import Annotated, Any, NamedTuple

import msgpack
import msgspec
import pytest

from msgpack_reader_py import Item, StreamingReader, get_iter, pack_items
from msgpack_reader_py._base.cache import cached
from msgpack_reader_py._types.columns import Columns, columns_of
from msgpack_reader_py._types.decoding import (
    KindsDecoder,
    RecordDecoder,
    RecordFailure,
    record_decoder,
)
from msgpack_reader_py._types.record_type import record_fields


@dataclasses.dataclass
class Inner:
    name: str
    level: int


@dataclasses.dataclass
class Event:
    id: int
    inner: Inner
    tags: list[int]
    when: datetime.datetime | None = None


class Pair(NamedTuple):
    key: int
    inner: Inner


class Compact(msgspec.Struct, array_like=True):
    a: int
    b: str = "x"


class GoItem(msgspec.Struct, rename="pascal"):
    process_id: int
    line: int = 0


def run(decoder: RecordDecoder | KindsDecoder, records: list[Any]) -> list[Any]:
    decoded = decoder.decode_run(msgpack.packb(records, datetime=False))
    return decoded if decoder.build is None else decoder.build(decoded)


def one(decoder: RecordDecoder | KindsDecoder, record: Any) -> Any:
    return decoder.decode_one(msgpack.packb(record, datetime=False))


def test_nested_records_in_any_mix_of_arrays_and_maps() -> None:
    records = run(
        RecordDecoder(Event),
        [
            [1, ["a", 2], [1, 2]],
            {
                "id": 2,
                "inner": {"name": "b", "level": 3},
                "tags": [],
                "when": msgpack.Timestamp(1, 5000),
            },
            [3, {"name": "c", "level": 4}, [5], None],
        ],
    )
    utc = datetime.timezone.utc
    assert records == [
        Event(1, Inner("a", 2), [1, 2]),
        Event(2, Inner("b", 3), [], datetime.datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=utc)),
        Event(3, Inner("c", 4), [5], None),
    ]


def test_flat_item_from_arrays_and_from_maps() -> None:
    items = list(get_iter(50))
    arrays = list(msgpack.Unpacker(io.BytesIO(pack_items(items))))
    names = [field.name for field in dataclasses.fields(Item)]
    maps = [dict(zip(names, values, strict=True)) for values in arrays]
    decoder = RecordDecoder(Item)
    assert run(decoder, arrays) == items
    assert run(decoder, maps) == items
    assert run(decoder, [arrays[0], maps[1]]) == items[:2]


@pytest.mark.parametrize(
    ("record_type", "records", "expected"),
    [
        (Compact, [[1], {"a": 2, "b": "q"}], [Compact(1), Compact(2, "q")]),
        (GoItem, [{"ProcessId": 5}, [7, 8]], [GoItem(5), GoItem(7, 8)]),
        (
            Pair,
            [[1, {"name": "x", "level": 1}], {"key": 2, "inner": ["y", 2]}],
            [Pair(1, Inner("x", 1)), Pair(2, Inner("y", 2))],
        ),
        (tuple[int, Inner], [[1, ["x", 3]]], [(1, Inner("x", 3))]),
    ],
)
def test_every_record_kind(record_type: Any, records: list[Any], expected: list[Any]) -> None:
    assert run(RecordDecoder(record_type), records) == expected


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ([1, ["a", 2], [1, "x"]], "field `tags[1]` expected int, got str"),
        ({"id": 1, "inner": {"name": "a", "level": "z"}, "tags": []}, "field `inner.level`"),
        ([1, ["a", "z"], []], "field `inner.level` expected int, got str"),
        ({"id": 1, "tags": []}, "field `inner` is missing"),
        (
            [1, ["a", 2], [1, 2], None, 9],
            "expected an array or a map of 3 to 4 fields, found an array of 5 values",
        ),
    ],
)
def test_a_bad_record_names_its_field_path(record: Any, reason: str) -> None:
    with pytest.raises(RecordFailure) as caught:
        one(RecordDecoder(Event), record)
    assert reason in str(caught.value)


def test_a_bool_is_not_an_int_and_an_int_is_a_float() -> None:
    @dataclasses.dataclass
    class Numbers:
        count: int
        ratio: float

    decoder = RecordDecoder(Numbers)
    assert run(decoder, [[1, 2]]) == [Numbers(1, 2.0)]
    with pytest.raises(RecordFailure, match="field `count` expected int, got bool"):
        one(decoder, [True, 1.0])


def test_missing_trailing_fields_take_their_defaults_and_factories() -> None:
    @dataclasses.dataclass
    class WithDefaults:
        id: int
        inner: Inner
        note: str = "none"
        tags: list[int] = dataclasses.field(default_factory=list)

    decoder = RecordDecoder(WithDefaults)
    first, second = run(decoder, [[1, ["a", 1]], {"id": 2, "inner": ["b", 2], "tags": [3]}])
    assert first == WithDefaults(1, Inner("a", 1))
    assert second == WithDefaults(2, Inner("b", 2), "none", [3])
    assert first.tags is not run(decoder, [[1, ["a", 1]]])[0].tags  # a new list each time


def test_a_map_key_of_the_wrong_type_is_named_where_it_is() -> None:
    @dataclasses.dataclass
    class Keyed:
        a: dict[str, int]

    decoder = RecordDecoder(Keyed)
    for record, reason in [
        ({"a": {3: 4}}, "field `a`: a map key expected str, got int"),
        ([{3: 4}], "field `a`: a map key expected str, got int"),
        ({3: 4, "a": {}}, "a map key expected str, got int"),
    ]:
        with pytest.raises(RecordFailure) as caught:
            one(decoder, record)
        assert str(caught.value) == reason


@dataclasses.dataclass
class Containers:
    maybe: Inner | None
    by_name: dict[str, Inner]
    many: tuple[Inner, ...]
    when: datetime.datetime | None = None


def test_records_inside_unions_maps_and_tuples_in_either_shape() -> None:
    decoder = RecordDecoder(Containers, ext_hook=lambda code, data: datetime.datetime(2000, 1, 1))
    as_arrays = [["a", 1], {"k": ["b", 2]}, [["c", 3]], msgpack.ExtType(9, b"")]
    as_maps = {
        "maybe": {"name": "a", "level": 1},
        "by_name": {"k": {"name": "b", "level": 2}},
        "many": [{"name": "c", "level": 3}],
        "when": msgpack.ExtType(9, b""),
    }
    expected = Containers(
        Inner("a", 1), {"k": Inner("b", 2)}, (Inner("c", 3),), datetime.datetime(2000, 1, 1)
    )
    assert run(decoder, [as_arrays, as_maps]) == [expected, expected]
    assert run(decoder, [[None, {}, []]]) == [Containers(None, {}, ())]


def test_an_array_like_struct_reads_maps_too() -> None:
    assert run(RecordDecoder(Compact), [{"a": 1}, {"a": 2, "b": "y"}, [3, "z"]]) == [
        Compact(1),
        Compact(2, "y"),
        Compact(3, "z"),
    ]


def test_values_of_records_as_tuples() -> None:
    @dataclasses.dataclass
    class One:
        inner: Inner

    assert run(RecordDecoder(One, values=True), [[["a", 1]], {"inner": ["b", 2]}]) == [
        (Inner("a", 1),),
        (Inner("b", 2),),
    ]
    flat = RecordDecoder(Inner, values=True)
    assert run(flat, [["a", 1], {"name": "b", "level": 2}]) == [("a", 1), ("b", 2)]


def test_a_compiled_decoder_is_shared_per_record_type_and_options() -> None:
    shared = record_decoder(Compact)
    assert record_decoder(Compact) is shared
    assert record_decoder(Compact, forbid_unknown_keys=True) is not shared
    assert record_decoder(Compact, values=True) is not shared
    assert run(record_decoder(Compact), [[1], {"a": 2}]) == [Compact(1), Compact(2)]


def test_a_record_type_that_cannot_be_hashed_is_read_without_sharing() -> None:
    # Annotated metadata may be any object: a dict makes the generic alias unhashable.
    unhashable: Any = tuple[Annotated[int, {"unit": "ms"}], str]
    assert [f.annotation for f in record_fields(unhashable)] == [
        Annotated[int, {"unit": "ms"}],
        str,
    ]
    assert record_decoder(unhashable) is not record_decoder(unhashable)
    assert run(record_decoder(unhashable), [[1, "a"], [2, "b"]]) == [(1, "a"), (2, "b")]
    with pytest.raises(RecordFailure, match="expected int, got str"):
        one(record_decoder(unhashable), ["x", "a"])


def test_what_a_record_type_says_is_worked_out_once_and_shared() -> None:
    assert record_fields(Item) is record_fields(Item)
    assert columns_of(Item) is columns_of(Item)
    # A schema takes the shared fields (one cached earlier may hold fields since evicted).
    assert Columns(Item).fields is record_fields(Item)
    unhashable: Any = tuple[Annotated[int, {"unit": "ms"}], str]
    assert columns_of(unhashable) is not columns_of(unhashable)
    assert columns_of(unhashable).names == ("[0]", "[1]")


def test_a_failure_to_work_out_a_type_is_not_kept() -> None:
    calls: list[Any] = []

    @cached(maxsize=4)
    def fields_of(tp: Any) -> int:
        calls.append(tp)
        if tp is str:
            raise TypeError("not a record type")
        return len(calls)

    assert fields_of(int) == fields_of(int) == 1
    for _ in range(2):
        with pytest.raises(TypeError, match="not a record type"):
            fields_of(str)
    assert calls == [int, str, str]
    # An argument that cannot be hashed: worked out each time.
    assert [fields_of([int]), fields_of([int])] == [4, 5]


def test_calls_that_say_the_same_thing_share_one_result() -> None:
    calls: list[tuple[Any, Any, bool]] = []

    @cached(maxsize=4)
    def made(tp: Any, *, hook: Any = None, flag: bool = False) -> int:
        calls.append((tp, hook, flag))
        return len(calls)

    assert made(int) == made(int, flag=False) == made(tp=int, flag=False, hook=None) == 1
    assert made(int, flag=True) == made(flag=True, tp=int) == 2
    assert calls == [(int, None, False), (int, None, True)]
    # A call the function refuses is refused as the function itself refuses it.
    for wrong in ((), (int, str)):
        with pytest.raises(TypeError, match="positional argument"):
            made(*wrong)
    with pytest.raises(TypeError, match="colour"):
        made(int, colour=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="must have a name"):
        cached(maxsize=4)(lambda *args: len(args))
    # The decoder a reader asks for is the one the command line checked a type with.
    spelled_out = record_decoder(Item, ext_hook=None, forbid_unknown_keys=False, values=False)
    assert record_decoder(Item) is spelled_out


@dataclasses.dataclass
class _Inner:
    x: int


@dataclasses.dataclass
class _KeywordOnly:
    a: int
    inner: _Inner
    b: int = dataclasses.field(default=0, kw_only=True)


@dataclasses.dataclass
class _Hidden:
    a: int
    inner: _Inner
    hidden: int = dataclasses.field(default=7, init=False)


class _StructKeywords(msgspec.Struct, kw_only=True):
    inner: _Inner
    a: int = 3


@pytest.mark.parametrize(
    ("record_type", "wire", "expected"),
    [
        (_KeywordOnly, {"a": 1, "inner": [2], "b": 3}, _KeywordOnly(1, _Inner(2), b=3)),
        (_KeywordOnly, [1, [2], 3], _KeywordOnly(1, _Inner(2), b=3)),
        (_Hidden, {"a": 1, "inner": {"x": 2}}, _Hidden(1, _Inner(2))),
        (_StructKeywords, [[5], 4], _StructKeywords(inner=_Inner(5), a=4)),
        (_StructKeywords, {"inner": [5]}, _StructKeywords(inner=_Inner(5))),
    ],
)
def test_a_converted_record_is_made_whatever_its_class_takes_by_keyword(
    record_type: Any, wire: Any, expected: Any
) -> None:
    """A record whose nested record came in the other shape is made from a generated form:
    by position where the class takes its fields so, in order, else by keyword."""
    assert list(StreamingReader(msgpack.packb(wire), record_type)) == [expected]
