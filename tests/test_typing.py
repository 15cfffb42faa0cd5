"""Static types of the public API, checked by ``mypy --strict`` (see pyproject's mypy files).

The ``assert_type`` calls run only under the type checker: a wrong overload makes mypy fail.
The runtime test below checks that the same calls produce objects of those types.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from msgpack_reader_py import (
    ITEM_VALUES,
    AsyncStreamingReader,
    Item,
    ItemTuple,
    ItemValues,
    StreamingReader,
    pack_items,
    read_items,
)


@dataclass
class MyRecord:
    name: str
    count: int


def to_name(values: Sequence[Any]) -> str:
    return str(values[6])


def to_pair(values: Sequence[Any]) -> tuple[int, float]:
    return int(values[0]), float(values[5])


if TYPE_CHECKING:
    from typing_extensions import assert_type

    def _static_checks(src: bytes) -> None:
        assert_type(StreamingReader(src), StreamingReader[Item])
        assert_type(StreamingReader(src, Item), StreamingReader[Item])
        assert_type(StreamingReader(src, read_size=10), StreamingReader[Item])
        assert_type(StreamingReader(src, MyRecord), StreamingReader[MyRecord])
        assert_type(StreamingReader(src, ItemTuple), StreamingReader[ItemTuple])
        assert_type(
            StreamingReader(src, ITEM_VALUES),
            StreamingReader[ItemValues],
        )
        assert_type(next(StreamingReader(src, ITEM_VALUES))[5], float)
        assert_type(next(StreamingReader(src, ItemTuple)).value, float)
        assert_type(StreamingReader(src, MyRecord), StreamingReader[MyRecord])
        assert_type(StreamingReader(src, mapper=to_name), StreamingReader[str])
        assert_type(StreamingReader(src, mapper=to_pair), StreamingReader[tuple[int, float]])
        assert_type(StreamingReader(src, mapper=Item.from_list), StreamingReader[Item])
        assert_type(StreamingReader(src, MyRecord, mapper=to_name), StreamingReader[str])

        assert_type(read_items(src), Iterator[Item])
        assert_type(read_items(src, MyRecord), Iterator[MyRecord])
        assert_type(read_items(src, mapper=to_name), Iterator[str])
        assert_type(read_items(src, mapper=to_pair), Iterator[tuple[int, float]])

        for item in StreamingReader(src):
            assert_type(item, Item)
        for record in StreamingReader(src, MyRecord):
            assert_type(record, MyRecord)
        for name in StreamingReader(src, mapper=to_name):
            assert_type(name, str)
        for pair in read_items(src, mapper=to_pair):
            assert_type(pair, tuple[int, float])
        assert_type(next(StreamingReader(src)), Item)
        assert_type(iter(StreamingReader(src, MyRecord)), Iterator[MyRecord])
        with StreamingReader(src, MyRecord) as reader:
            assert_type(reader, StreamingReader[MyRecord])
        assert_type(StreamingReader(src).bytes_read, int)
        assert_type(StreamingReader(src).closed, bool)
        assert_type(StreamingReader(src).name, str)

    async def _async_checks(src: bytes) -> None:
        assert_type(AsyncStreamingReader(src), AsyncStreamingReader[Item])
        assert_type(AsyncStreamingReader(src, MyRecord), AsyncStreamingReader[MyRecord])
        assert_type(AsyncStreamingReader(src, mapper=to_name), AsyncStreamingReader[str])
        async with AsyncStreamingReader(src, MyRecord) as reader:
            assert_type(reader, AsyncStreamingReader[MyRecord])
            async for record in reader:
                assert_type(record, MyRecord)
        assert_type(await anext(AsyncStreamingReader(src, ItemTuple)), ItemTuple)
        assert_type(AsyncStreamingReader(src).skipped, int)


def test_runtime_types_match_the_static_ones() -> None:
    items = [Item(1, 2, 3, 4, 5, 6.5, "F", "P"), Item(7, 8, 9, 10, 11, 12.5, "G", "Q")]
    data = pack_items(items)

    default: StreamingReader[Item] = StreamingReader(data)
    assert all(type(item) is Item for item in default)

    names: StreamingReader[str] = StreamingReader(data, mapper=to_name)
    assert list(names) == ["F", "G"]

    pairs: Iterator[tuple[int, float]] = read_items(data, mapper=to_pair)
    assert list(pairs) == [(1, 6.5), (7, 12.5)]

    records: Iterator[MyRecord] = read_items(pack_items([]), MyRecord)
    assert list(records) == []

    with StreamingReader(data, Item) as reader:
        assert isinstance(reader, StreamingReader)
        assert next(reader) == items[0]
