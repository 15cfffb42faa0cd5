"""StreamingReader: sources, options, ownership, mappers, record types and validation."""

from __future__ import annotations

import collections
import datetime
import gc
import io
from array import array
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgpack
import msgspec
import pytest

from msgpack_reader_py import (
    DEFAULT_MAX_RECORD_SIZE,
    ITEM_VALUES,
    Item,
    ItemTuple,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
    read_items,
)
from tests.helpers import Loose, fds_pointing_at, is_open, no_resource_warning
from tests.reference import REFERENCE_MESSAGES, REFERENCE_SIZE, REFERENCE_SUM_OF_IDS

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


class ReadOnlyStream:
    """A source with only ``read(n)``: no ``read1``, no ``name``, no ``close``."""

    def __init__(self, data: bytes) -> None:
        self._buffer = io.BytesIO(data)
        self.requested: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.requested.append(size)
        return self._buffer.read(size)


class OneBytePerRead(ReadOnlyStream):
    """A source that never returns more than one byte per read, like a slow pipe."""

    def read(self, size: int = -1) -> bytes:
        self.requested.append(size)
        return self._buffer.read(1)


def rec(*values: Any) -> bytes:
    """One record: the MessagePack array of ``values``."""
    return msgpack.packb(list(values))


ITEM = Item(1, 2, 3, 1_700_000_000_000_000_000, 40, 2.5, "FILENAME", "PATH0123456789A")


NAMES = ["id", "process_id", "thread_id", "timestamp_ns", "line", "value", "filename", "path"]


def item_values(**changes: Any) -> list[Any]:
    values = ITEM.to_list()
    for name, value in changes.items():
        values[NAMES.index(name)] = value
    return values


def item_map(**changes: Any) -> bytes:
    """One record: ``ITEM`` (with ``changes``) as a MessagePack map keyed by field name."""
    return msgpack.packb({**dict(zip(NAMES, ITEM.to_list(), strict=True)), **changes})


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture
def truncated_path(tmp_path: Path) -> Path:
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(pack_items(get_iter(50))[:-3])
    return path


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
    first, second = rec(*ITEM.to_list()), rec(*item_values(id=2))

    class TwoReads:
        def __init__(self) -> None:
            self.reads = 0

        def read(self, size: int = -1) -> bytes:
            self.reads += 1
            return {1: first, 2: second}.get(self.reads, b"")

    stream = TwoReads()
    reader = StreamingReader(stream)
    assert next(reader) == ITEM
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
# Ownership
# --------------------------------------------------------------------------------------------


def _exhaust(reader: StreamingReader[Item]) -> None:
    assert len(list(reader)) == 50


def _close_midway(reader: StreamingReader[Item]) -> None:
    next(reader)
    reader.close()


def _with_block(reader: StreamingReader[Item]) -> None:
    with reader as entered:
        assert entered is reader
        next(entered)


def _abandon(reader: StreamingReader[Item]) -> None:
    iterator = iter(reader)
    next(iterator)
    next(reader)


ENDINGS: dict[str, Callable[[StreamingReader[Item]], None]] = {
    "exhausted": _exhaust,
    "close()": _close_midway,
    "with exit": _with_block,
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_path_file_is_closed(ending: str, small_path: Path) -> None:
    reader = StreamingReader(small_path)
    assert is_open(small_path)
    ENDINGS[ending](reader)
    assert not is_open(small_path)
    del reader


@pytest.mark.parametrize("as_str", [False, True])
def test_path_file_is_closed_when_abandoned_reader_is_dropped(
    small_path: Path, as_str: bool
) -> None:
    with no_resource_warning():
        reader = StreamingReader(str(small_path) if as_str else small_path)
        _abandon(reader)
        assert is_open(small_path)
        del reader
    assert not is_open(small_path)  # no_resource_warning collected the garbage


def test_path_file_is_closed_when_unstarted_reader_is_dropped(small_path: Path) -> None:
    with no_resource_warning():
        reader = StreamingReader(small_path)
        assert is_open(small_path)
        del reader
    assert not is_open(small_path)  # no_resource_warning collected the garbage


def test_path_file_is_closed_when_an_abandoned_for_loop_drops_the_reader(
    small_path: Path,
) -> None:
    with no_resource_warning():
        for item in StreamingReader(small_path):
            if item.id == 3:
                break
    assert not is_open(small_path)  # no_resource_warning collected the garbage


def test_path_file_is_closed_when_an_error_is_raised(truncated_path: Path) -> None:
    reader = StreamingReader(truncated_path)
    with pytest.raises(TruncatedStreamError):
        list(reader)
    assert not is_open(truncated_path)


STREAM_ENDINGS: dict[str, Callable[[StreamingReader[Item]], None]] = {
    **ENDINGS,
    "abandoned": _abandon,
}


@pytest.mark.parametrize("ending", list(STREAM_ENDINGS))
def test_caller_stream_stays_open(ending: str, small_path: Path) -> None:
    with open(small_path, "rb") as stream:
        reader = StreamingReader(stream)
        STREAM_ENDINGS[ending](reader)
        del reader
        gc.collect()
        assert not stream.closed
        assert stream.read(0) == b""


def test_caller_stream_stays_open_after_an_error(truncated_path: Path) -> None:
    with open(truncated_path, "rb") as stream:
        reader = StreamingReader(stream)
        with pytest.raises(TruncatedStreamError):
            list(reader)
        reader.close()
        assert not stream.closed
    bytes_io = io.BytesIO(truncated_path.read_bytes())
    with pytest.raises(TruncatedStreamError), StreamingReader(bytes_io) as reader:
        list(reader)
    assert not bytes_io.closed


def test_close_twice_is_fine(small_path: Path) -> None:
    reader = StreamingReader(small_path)
    assert not reader.closed
    reader.close()
    reader.close()
    assert reader.closed
    assert not is_open(small_path)


USES_AFTER_CLOSE: dict[str, Callable[[StreamingReader[Item]], object]] = {
    "next": next,
    "iter": iter,
    "list": list,
    "for": lambda reader: sum(1 for _ in reader),
}


@pytest.mark.parametrize("use", list(USES_AFTER_CLOSE))
def test_iterating_after_close_raises_value_error(use: str) -> None:
    reader = StreamingReader(pack_items(get_iter(5)))
    next(reader)
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        USES_AFTER_CLOSE[use](reader)


def test_close_before_iterating_raises_on_next() -> None:
    reader = StreamingReader(pack_items(get_iter(5)))
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        next(reader)


def test_temporary_reader_in_for_loop_yields_everything(
    tmp_path: Path, reference_bytes: bytes
) -> None:
    """The reader object is dropped at once; iteration must not end with it.

    Two temporary readers, a file's and a bytes object's, both read in 4 KiB pieces; garbage
    is collected once, halfway, with each of them between two reads and records still to come.
    """
    path = tmp_path / "reference.msgpack"
    path.write_bytes(reference_bytes)
    ids = []
    count = 0
    for item, _ in zip(
        StreamingReader(path, read_size=4096),
        StreamingReader(reference_bytes, read_size=4096),
        strict=True,
    ):
        if count == REFERENCE_MESSAGES // 2:
            gc.collect()
        ids.append(item.id)
        count += 1
    assert ids == list(range(REFERENCE_MESSAGES))
    assert count == REFERENCE_MESSAGES
    assert not is_open(path)


def test_iterator_from_a_dropped_reader_keeps_going(reference_items: list[Item]) -> None:
    data = pack_items(reference_items[:100])
    iterator: Iterator[Item] = iter(StreamingReader(io.BytesIO(data), read_size=64))
    gc.collect()
    assert list(iterator) == reference_items[:100]


def test_read_items_yields_the_same_records_and_closes_its_file(
    reference_items: list[Item], reference_path: Path
) -> None:
    records = read_items(reference_path)
    first = next(records)
    assert is_open(reference_path)
    assert [first, *records] == reference_items
    assert not is_open(reference_path)


def test_read_items_closes_its_file_when_closed_early(reference_path: Path) -> None:
    records = read_items(str(reference_path))
    next(records)
    assert is_open(reference_path)
    assert isinstance(records, Generator)
    records.close()
    assert not is_open(reference_path)


def test_read_items_closes_its_file_on_error(truncated_path: Path) -> None:
    records = read_items(truncated_path)
    with pytest.raises(TruncatedStreamError):
        list(records)
    assert not is_open(truncated_path)


def test_read_items_checks_arguments_at_the_call(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_items(tmp_path / "missing.msgpack")
    with pytest.raises(ValueError, match="max_record_size"):
        read_items(b"", max_record_size=0)


def test_read_items_passes_options_on() -> None:
    data = rec(*item_values(line="oops"))
    with pytest.raises(RecordError, match="field `line` expected int, got str 'oops'"):
        list(read_items(data))
    assert list(read_items(data + rec(*ITEM.to_list()), on_error="skip")) == [ITEM]
    assert list(read_items(data, mapper=len)) == [8]
    keyed = item_map(q=1)
    assert list(read_items(keyed)) == [ITEM]
    with pytest.raises(RecordError, match="map has key 'q', which names no field"):
        list(read_items(keyed, forbid_unknown_keys=True))
    hooked = rec("k", msgpack.ExtType(5, b"x"))
    got = list(read_items(hooked, Loose, ext_hook=lambda code, data: (code, bytes(data))))
    assert got == [Loose("k", (5, b"x"))]
    with pytest.raises(RecordTooLargeError):
        list(read_items(data, max_record_size=10))


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
    assert "Point" in repr(StreamingReader(b"", Point))


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
    assert seen[1] == {**dict(zip(NAMES, ITEM.to_list(), strict=True)), "line": "x"}
    stamp, ext, nested = seen[2]
    assert stamp == datetime.datetime(2023, 11, 14, 22, 13, 20, 5, datetime.timezone.utc)
    assert (type(ext), ext.code, ext.data) == (msgspec.msgpack.Ext, 7, b"ab")
    assert nested == [1, {"k": [2]}]
    assert type(seen[0]) is list
    assert type(seen[1]) is dict


def test_mapper_gets_what_the_record_type_would_refuse() -> None:
    good, bad = rec(*ITEM.to_list()), rec(*item_values(line=True))
    got = list(StreamingReader(good + bad, mapper=Item.from_list))
    assert got == [ITEM, Item(*item_values(line=True))]
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
        list(StreamingReader(data + rec(*ITEM.to_list()), Point))
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


def test_validate_with_many_alternative_types() -> None:
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
# Validation (always on)
# --------------------------------------------------------------------------------------------


def test_validate_accepts_the_reference_stream(
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
def test_validate_rejects_wrong_field_types(
    changes: dict[str, Any], message: str, shape: str
) -> None:
    good = rec(*ITEM.to_list())
    bad = rec(*item_values(**changes)) if shape == "array" else item_map(**changes)
    data = good + item_map() + bad + good
    reader = StreamingReader(data)
    assert [next(reader), next(reader)] == [ITEM, ITEM]
    with pytest.raises(RecordError) as info:
        next(reader)
    assert info.value.reason == message
    assert info.value.index == 2
    assert info.value.offset == len(good) + len(item_map())
    with pytest.raises(StopIteration):
        next(reader)


def test_validate_accepts_an_int_for_a_float() -> None:
    [item, keyed] = StreamingReader(rec(*item_values(value=3)) + item_map(value=-4))
    assert item.value == 3.0
    assert type(item.value) is float
    assert keyed.value == -4.0
    assert type(keyed.value) is float


def test_validate_accepts_none_only_for_optional() -> None:
    ok = rec(b"", True, None, [])
    assert next(StreamingReader(ok, Mixed)).maybe is None
    with pytest.raises(RecordError, match="field `flag` expected bool, got None"):
        list(StreamingReader(rec(b"", None, None, []), Mixed))
    with pytest.raises(RecordError, match="field `maybe` expected int \\| None, got bool True"):
        list(StreamingReader(rec(b"", True, True, []), Mixed))
    with pytest.raises(RecordError, match="field `flag` expected bool, got int"):
        list(StreamingReader(rec(b"", 1, None, []), Mixed))


def test_validate_tells_str_from_bytes() -> None:
    with pytest.raises(RecordError, match="field `blob` expected bytes, got str"):
        list(StreamingReader(rec("text", True, None, []), Mixed))
    with pytest.raises(RecordError, match="field `numbers` expected array, got str '1,2'"):
        list(StreamingReader(rec(b"", True, None, "1,2"), Mixed))


def test_validate_error_is_a_reader_error_with_location() -> None:
    good = rec(*ITEM.to_list())
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


def test_item_tuple_records_validated(reference_bytes: bytes, record_offsets: list[int]) -> None:
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
