"""StreamingReader: every kind of source, options checked at the call, ``bytes_read``, name and
repr, and mappers.
"""

from __future__ import annotations

import datetime
import gc
import io
from array import array
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest

from msgpack_reader_py import (
    DEFAULT_MAX_RECORD_SIZE,
    Item,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    get_iter,
    pack_items,
)
from tests.reference import REFERENCE_MESSAGES, REFERENCE_SIZE, REFERENCE_SUM_OF_IDS

from .helpers import (
    FIELD_NAMES,
    SAMPLE,
    Loose,
    OneBytePerRead,
    ReadOnlyStream,
    fds_pointing_at,
    is_open,
    item_map,
    item_values,
    rec,
)

# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------

SourceFactory = Callable[[bytes, Path, ExitStack], Any]

SOURCES: dict[str, SourceFactory] = {
    "bytes": lambda data, path, stack: data,
    "bytearray": lambda data, path, stack: bytearray(data),
    "memoryview": lambda data, path, stack: memoryview(data),
    "str path": lambda data, path, stack: str(path),
    "pathlib.Path": lambda data, path, stack: path,
    "open binary file": lambda data, path, stack: stack.enter_context(
        open(path, "rb")  # noqa: SIM115 - closed by the ExitStack
    ),
    "unbuffered binary file": lambda data, path, stack: stack.enter_context(
        open(path, "rb", buffering=0)  # noqa: SIM115 - closed by the ExitStack
    ),
    "BytesIO": lambda data, path, stack: io.BytesIO(data),
    "object with only read(n)": lambda data, path, stack: ReadOnlyStream(data),
}


@pytest.mark.parametrize("kind", list(SOURCES))
def test_every_source_kind_yields_the_reference_items(
    kind: str,
    reference_items: list[Item],
    reference_bytes: bytes,
    reference_path: Path,
) -> None:
    with ExitStack() as stack:
        source = SOURCES[kind](reference_bytes, reference_path, stack)
        with StreamingReader(source) as reader:
            items = list(reader)
            assert reader.bytes_read == REFERENCE_SIZE
    assert len(items) == REFERENCE_MESSAGES
    assert items == reference_items
    assert sum(item.id for item in items) == REFERENCE_SUM_OF_IDS
    assert all(type(item) is Item for item in items)


def test_field_values_and_types_are_exactly_the_generated_ones(
    reference_items: list[Item], reference_bytes: bytes
) -> None:
    items = list(StreamingReader(reference_bytes))
    for got, want in zip(items, reference_items, strict=True):
        assert got.to_list() == want.to_list()
        assert [type(v) for v in got.to_list()] == [type(v) for v in want.to_list()]


def test_one_byte_per_read_stream(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    count = 300
    stream = OneBytePerRead(reference_bytes[: record_offsets[count]])
    reader = StreamingReader(stream)
    assert list(reader) == reference_items[:count]
    assert reader.bytes_read == record_offsets[count]
    assert len(stream.requested) >= record_offsets[count]


def test_read_only_object_is_asked_for_at_most_read_size(reference_bytes: bytes) -> None:
    stream = ReadOnlyStream(reference_bytes)
    assert not hasattr(stream, "read1")
    items = list(StreamingReader(stream, read_size=1000))
    assert len(items) == REFERENCE_MESSAGES
    assert stream.requested
    assert all(0 < size <= 1000 for size in stream.requested)


def test_records_arrive_before_the_source_is_exhausted() -> None:
    """A record is yielded as soon as its bytes are in, without waiting for more reads."""
    first, second = rec(*SAMPLE.to_list()), rec(*item_values(id=2))

    class TwoReads:
        def __init__(self) -> None:
            self.reads = 0

        def read(self, size: int = -1) -> bytes:
            self.reads += 1
            return {1: first, 2: second}.get(self.reads, b"")

    stream = TwoReads()
    reader = StreamingReader(stream)
    assert next(reader) == SAMPLE
    assert stream.reads == 1
    assert next(reader).id == 2
    assert stream.reads == 2
    assert list(reader) == []


def test_memoryview_with_non_byte_format(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    count = next(n for n in range(100, REFERENCE_MESSAGES) if record_offsets[n] % 4 == 0)
    data = reference_bytes[: record_offsets[count]]
    words = array("I")
    words.frombytes(data)
    view = memoryview(words)
    assert view.format == "I"
    assert view.itemsize == 4
    reader = StreamingReader(view, read_size=333)
    assert list(reader) == reference_items[:count]
    assert reader.bytes_read == len(data)


def test_multidimensional_memoryview(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    count = next(n for n in range(100, REFERENCE_MESSAGES) if record_offsets[n] % 8 == 0)
    data = reference_bytes[: record_offsets[count]]
    view = memoryview(data).cast("B", shape=[len(data) // 8, 8])
    assert view.ndim == 2
    reader = StreamingReader(view)
    assert list(reader) == reference_items[:count]
    assert reader.bytes_read == len(data)


def test_caller_stream_is_read_from_its_current_position(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    stream = io.BytesIO(reference_bytes)
    stream.seek(record_offsets[9990])
    reader = StreamingReader(stream)
    assert list(reader) == reference_items[9990:]
    assert reader.bytes_read == REFERENCE_SIZE - record_offsets[9990]


def test_empty_sources_give_no_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.msgpack"
    path.write_bytes(b"")
    for source in (b"", bytearray(), memoryview(b""), io.BytesIO(), path, str(path)):
        reader = StreamingReader(source)
        assert list(reader) == []
        assert reader.bytes_read == 0
    assert not is_open(path)


def test_text_stringio_is_refused() -> None:
    with pytest.raises(TypeError, match="binary mode"):
        StreamingReader(io.StringIO("abc"))


def test_text_mode_file_is_refused(small_path: Path) -> None:
    with (
        open(small_path, encoding="latin-1") as text,
        pytest.raises(TypeError, match="binary mode"),
    ):
        StreamingReader(text)


@pytest.mark.parametrize("source", [42, 4.5, None, object(), ["a"]])
def test_unsupported_source_types_are_refused(source: object) -> None:
    with pytest.raises(TypeError, match="source must be"):
        StreamingReader(source)


class GreedyStream:
    """A stream whose ``read(n)`` ignores ``n`` and returns everything that is left."""

    def __init__(self, data: bytes) -> None:
        self._buffer = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._buffer.read()


def test_stream_returning_more_than_asked_still_yields_every_record(
    reference_items: list[Item], reference_bytes: bytes
) -> None:
    """Records are small; a source handing over more than read_size at once is no reason to fail."""
    reader = StreamingReader(GreedyStream(reference_bytes), max_record_size=1000)
    assert list(reader) == reference_items


def test_stream_returning_more_than_asked_yields_the_records_before_a_large_one() -> None:
    good = pack_items(get_iter(3))
    big = rec(*item_values(path="x" * 70_000))
    reader = StreamingReader(GreedyStream(good + big), max_record_size=1000)
    got: list[Item] = []
    with pytest.raises(RecordTooLargeError) as info:
        got.extend(reader)
    assert got == list(get_iter(3))
    assert (info.value.index, info.value.offset) == (3, len(good))


def test_stream_returning_text_fails_when_read() -> None:
    class TextLike:
        def read(self, size: int = -1) -> str:
            return "abc"

    reader = StreamingReader(TextLike())
    with pytest.raises(TypeError, match="binary mode"):
        next(reader)


def test_non_blocking_stream_without_data_is_refused() -> None:
    class NonBlocking:
        def read(self, size: int = -1) -> bytes | None:
            return None

    with pytest.raises(BlockingIOError):
        list(StreamingReader(NonBlocking()))


def test_os_error_from_the_source_passes_through_after_the_records_before_it() -> None:
    records = list(get_iter(3))

    class Failing:
        def __init__(self) -> None:
            self.calls = 0

        def read(self, size: int = -1) -> bytes:
            self.calls += 1
            if self.calls == 1:
                return pack_items(records)
            raise ConnectionResetError(104, "Connection reset by peer")

    reader = StreamingReader(Failing())
    got: list[Item] = []
    with pytest.raises(ConnectionResetError) as info:
        got.extend(reader)
    assert got == records
    assert info.value.errno == 104
    assert not isinstance(info.value, ReaderError)


def test_missing_path_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        StreamingReader(tmp_path / "missing.msgpack")


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1])
def test_max_record_size_must_be_positive(value: int) -> None:
    with pytest.raises(ValueError, match="max_record_size"):
        StreamingReader(b"", max_record_size=value)


@pytest.mark.parametrize("value", [True, False, "x", 1.5, None])
def test_max_record_size_must_be_an_int(value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="max_record_size"):
        StreamingReader(b"", max_record_size=value)


@pytest.mark.parametrize("value", [0, -5, True, "1", 2.0])
def test_read_size_must_be_a_positive_int(value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="read_size"):
        StreamingReader(b"", read_size=value)


@pytest.mark.parametrize("mapper", [42, "Item.from_list", Item.from_list([1] * 8)])
def test_mapper_must_be_callable(mapper: Any) -> None:
    with pytest.raises(TypeError, match="mapper"):
        StreamingReader(b"", mapper=mapper)


@dataclass
class NotADataclassBase:
    x: int


class PlainClass:
    x: int


@pytest.mark.parametrize("record_type", [PlainClass, dict, tuple, NotADataclassBase(1), 42])
def test_record_type_must_be_a_dataclass_type(record_type: Any) -> None:
    with pytest.raises(TypeError, match="dataclass"):
        StreamingReader(b"", record_type)


def test_bad_options_do_not_open_the_path(small_path: Path) -> None:
    before = fds_pointing_at(small_path)
    with pytest.raises(ValueError, match="read_size"):
        StreamingReader(small_path, read_size=0)
    with pytest.raises(TypeError, match="dataclass"):
        StreamingReader(small_path, PlainClass)
    gc.collect()
    assert fds_pointing_at(small_path) == before


def test_default_max_record_size_is_published() -> None:
    assert DEFAULT_MAX_RECORD_SIZE == 100 * 1024 * 1024
    assert StreamingReader(b"").max_record_size == DEFAULT_MAX_RECORD_SIZE


def test_small_read_size_and_max_record_size_still_read_everything(
    reference_items: list[Item], reference_bytes: bytes
) -> None:
    largest = max(len(pack_items([item])) for item in reference_items)
    reader = StreamingReader(reference_bytes, max_record_size=largest, read_size=7)
    assert list(reader) == reference_items


# --------------------------------------------------------------------------------------------
# bytes_read, name, repr
# --------------------------------------------------------------------------------------------


def test_bytes_read_counts_what_was_read(reference_bytes: bytes) -> None:
    reader = StreamingReader(reference_bytes, read_size=4096)
    assert reader.bytes_read == 0
    next(reader)
    assert 0 < reader.bytes_read <= 4096
    for _ in reader:
        pass
    assert reader.bytes_read == REFERENCE_SIZE


def test_bytes_read_of_a_stream(reference_bytes: bytes) -> None:
    reader = StreamingReader(io.BytesIO(reference_bytes), read_size=1000)
    next(reader)
    assert 0 < reader.bytes_read <= 1000
    list(reader)
    assert reader.bytes_read == REFERENCE_SIZE


def test_name_and_repr_name_the_source(small_path: Path) -> None:
    with StreamingReader(small_path) as reader:
        assert reader.name == str(small_path)
        assert str(small_path) in repr(reader)
        assert "Item" in repr(reader)
        assert "closed" not in repr(reader)
    assert "closed" in repr(reader)
    with open(small_path, "rb") as stream:
        assert str(small_path) in repr(StreamingReader(stream))
    assert "BytesIO" in repr(StreamingReader(io.BytesIO()))
    assert "bytes" in repr(StreamingReader(b""))
    assert "ReadOnlyStream" in repr(StreamingReader(ReadOnlyStream(b"")))
    assert "from_list" in repr(StreamingReader(b"", mapper=Item.from_list))
    assert "Loose" in repr(StreamingReader(b"", Loose))


# --------------------------------------------------------------------------------------------
# Mappers
# --------------------------------------------------------------------------------------------


def test_mapper_from_list_gives_equal_items(
    reference_items: list[Item], reference_bytes: bytes
) -> None:
    assert list(StreamingReader(reference_bytes, mapper=Item.from_list)) == reference_items


def test_mapper_receives_lists(reference_bytes: bytes, record_offsets: list[int]) -> None:
    seen: list[Any] = []

    def keep(values: Any) -> int:
        seen.append(values)
        return len(values)

    data = reference_bytes[: record_offsets[20]]
    assert list(StreamingReader(data, mapper=keep)) == [8] * 20
    assert all(type(values) is list for values in seen)
    assert [values[0] for values in seen] == list(range(20))


def test_mapper_receives_any_value_unchecked() -> None:
    data = msgpack.packb({"a": 1}) + msgpack.packb("ABCDEFGH") + msgpack.packb(7)
    assert list(StreamingReader(data, mapper=repr)) == ["{'a': 1}", "'ABCDEFGH'", "7"]


def test_mapper_receives_records_as_decoded_without_a_type() -> None:
    """Lists for arrays, dicts for maps, ``datetime`` for the timestamp extension,
    ``msgspec.msgpack.Ext`` for other extensions; the record type checks nothing."""
    when = msgpack.Timestamp(1_700_000_000, 5_000)
    data = (
        rec(*item_values(line=True))
        + item_map(line="x")
        + rec(when, msgpack.ExtType(7, b"ab"), [1, {"k": [2]}])
    )
    seen: list[Any] = []
    assert list(StreamingReader(data, mapper=seen.append)) == [None, None, None]
    assert seen[0] == item_values(line=True)
    assert seen[1] == {**dict(zip(FIELD_NAMES, SAMPLE.to_list(), strict=True)), "line": "x"}
    stamp, ext, nested = seen[2]
    assert stamp == datetime.datetime(2023, 11, 14, 22, 13, 20, 5, datetime.timezone.utc)
    assert (type(ext), ext.code, ext.data) == (msgspec.msgpack.Ext, 7, b"ab")
    assert nested == [1, {"k": [2]}]
    assert type(seen[0]) is list
    assert type(seen[1]) is dict


def test_mapper_gets_what_the_record_type_would_refuse() -> None:
    good, bad = rec(*SAMPLE.to_list()), rec(*item_values(line=True))
    got = list(StreamingReader(good + bad, mapper=Item.from_list))
    assert got == [SAMPLE, Item(*item_values(line=True))]
    assert got[1].line is True


@pytest.mark.parametrize("exception", [TypeError, ValueError, KeyError, IndexError])
def test_mapper_conversion_errors_become_record_errors(
    exception: type[Exception], reference_items: list[Item], record_offsets: list[int]
) -> None:
    data = pack_items(reference_items[:10])

    def mapper(values: list[Any]) -> Item:
        if values[0] == 6:
            raise exception("no good")
        return Item.from_list(values)

    reader = StreamingReader(data, mapper=mapper)
    got: list[Item] = []
    with pytest.raises(RecordError) as info:
        got.extend(reader)
    assert got == reference_items[:6]
    assert info.value.index == 6
    assert info.value.offset == record_offsets[6]
    assert type(info.value.__cause__) is exception
    assert "record 6" in str(info.value)
    assert f"byte {record_offsets[6]}" in str(info.value)
    assert "no good" in str(info.value)
    with pytest.raises(StopIteration):
        next(reader)
