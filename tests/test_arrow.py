"""Arrow batches: schema derivation, exact round trips, batch boundaries and the error contract.

``read_batches``/``read_table`` must give exactly the records ``StreamingReader`` gives, as
Arrow columns, and keep the reader's error contract: on broken data every good record before
the failing one is delivered (as a last, partial batch), then a ``ReaderError`` names the
failing record's index and byte offset. Expectations are computed from the generator, from the
values packed here, or from offsets measured while packing; never from the code under test.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import itertools
import struct
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union
from unittest import mock

import msgpack
import msgspec
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import (
    DecodeError,
    Item,
    ItemTuple,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py import arrow as arrow_module
from msgpack_reader_py.arrow import (
    DEFAULT_BATCH_SIZE,
    BatchReader,
    arrow_schema,
    read_batches,
    read_table,
)
from msgpack_reader_py.options import DEFAULT_READ_SIZE
from tests.helpers import (
    Checked,
    as_rows,
    assert_located,
    drain,
    examples,
    is_open,
    no_resource_warning,
)
from tests.reference import REFERENCE_MESSAGES, REFERENCE_SIZE

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

Row = dict[str, Any]
ITEM_FIELDS = [f.name for f in dataclasses.fields(Item)]


def packed(value: Any) -> bytes:
    return msgpack.packb(value)


def rows_of(batches: list[pa.RecordBatch]) -> list[Row]:
    """Every row of ``batches``, in order, as dicts."""
    return pa.Table.from_batches(batches).to_pylist() if batches else []


def expected_sizes(count: int, batch_size: int) -> list[int]:
    """Rows per batch for ``count`` records: full batches, then what is left, if anything."""
    rest = [count % batch_size] if count % batch_size else []
    return [batch_size] * (count // batch_size) + rest


def assert_finished(batches: BatchReader) -> None:
    """After an error the reader yields nothing more: no resynchronisation."""
    with pytest.raises(StopIteration):
        next(batches)
    with pytest.raises(StopIteration):
        next(batches)


def canonical(value: object) -> tuple[object, ...]:
    """A value with its exact type, floats by their bits (NaN == NaN, 0.0 != -0.0)."""
    if isinstance(value, float):
        return (float, struct.pack(">d", value))
    return (type(value), value)


def canonical_rows(rows: list[Row]) -> list[dict[str, tuple[object, ...]]]:
    return [{name: canonical(value) for name, value in row.items()} for row in rows]


class UnreadableSource:
    """A stream that must not be read: construction-time refusals happen before any read."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        raise AssertionError("the source was read")


class FailingSource:
    """A connection: ``read1`` hands over ``data`` (at most ``n`` bytes a call), then raises."""

    def __init__(self, data: bytes, error: OSError) -> None:
        self._data = data
        self._error = error

    def read1(self, size: int = -1) -> bytes:
        if not self._data:
            raise self._error
        chunk, self._data = self._data[:size], self._data[size:]
        return chunk

    read = read1


@pytest.fixture(scope="module")
def reference_rows(reference_items: list[Item]) -> list[Row]:
    """The reference items as the rows an Arrow table of them must hold."""
    return as_rows(reference_items)


# --------------------------------------------------------------------------------------------
# Schema derivation
# --------------------------------------------------------------------------------------------

SCALARS: list[tuple[Any, pa.DataType]] = [
    (int, pa.int64()),
    (float, pa.float64()),
    (str, pa.string()),
    (bytes, pa.binary()),
    (bool, pa.bool_()),
]
SCALAR_IDS = ["int", "float", "str", "bytes", "bool"]


def column(name: str, arrow_type: pa.DataType, *, nullable: bool) -> pa.Field[Any]:
    return pa.field(name, arrow_type, nullable=nullable)


def one_field(annotation: Any, name: str = "x") -> type[Any]:
    """A dataclass ``One`` with a single field ``name: annotation``."""
    return dataclasses.make_dataclass("One", [(name, annotation)])


@pytest.mark.parametrize(("annotation", "arrow_type"), SCALARS, ids=SCALAR_IDS)
def test_plain_scalar_field_becomes_its_arrow_type_not_nullable(
    annotation: Any, arrow_type: pa.DataType
) -> None:
    """Each supported scalar maps to its Arrow type; a plain field is not nullable."""
    schema = arrow_schema(one_field(annotation))
    assert schema == pa.schema([column("x", arrow_type, nullable=False)])
    assert schema.field("x").type == arrow_type
    assert schema.field("x").nullable is False


NULLABLE_SPELLINGS: dict[str, Callable[[Any], Any]] = {
    "X | None": lambda tp: tp | None,
    "None | X": lambda tp: None | tp,
    "Optional[X]": lambda tp: Optional[tp],  # noqa: UP045 - the spelling under test
    "Union[X, None]": lambda tp: Union[tp, None],  # noqa: UP007 - the spelling under test
}


@pytest.mark.parametrize("spelling", list(NULLABLE_SPELLINGS))
@pytest.mark.parametrize(("annotation", "arrow_type"), SCALARS, ids=SCALAR_IDS)
def test_optional_field_is_the_same_type_nullable(
    annotation: Any, arrow_type: pa.DataType, spelling: str
) -> None:
    """Every spelling of ``X | None`` is X's Arrow type, nullable."""
    schema = arrow_schema(one_field(NULLABLE_SPELLINGS[spelling](annotation)))
    assert schema == pa.schema([column("x", arrow_type, nullable=True)])
    assert schema.field("x").nullable is True


@dataclass
class AllTypes:
    """Every supported field type, plain and nullable."""

    i: int
    f: float
    s: str
    b: bytes
    t: bool
    oi: int | None
    of: float | None
    os: str | None
    ob: bytes | None
    ot: Optional[bool]  # noqa: UP045 - both spellings of nullable in one record type


ALL_TYPES_SCHEMA = pa.schema(
    [
        column("i", pa.int64(), nullable=False),
        column("f", pa.float64(), nullable=False),
        column("s", pa.string(), nullable=False),
        column("b", pa.binary(), nullable=False),
        column("t", pa.bool_(), nullable=False),
        column("oi", pa.int64(), nullable=True),
        column("of", pa.float64(), nullable=True),
        column("os", pa.string(), nullable=True),
        column("ob", pa.binary(), nullable=True),
        column("ot", pa.bool_(), nullable=True),
    ]
)


class Reading(NamedTuple):
    sensor: str
    value: float | None
    ok: bool


PAIR: type[tuple[int, str]] = tuple[int, str]
OPTIONAL_PAIR: type[tuple[int | None, bytes]] = tuple[int | None, bytes]


def test_dataclass_schema_has_one_column_per_field_in_order() -> None:
    """A dataclass: one column per field, named after it, in declaration order."""
    assert arrow_schema(AllTypes) == ALL_TYPES_SCHEMA
    assert arrow_schema(AllTypes).names == [f.name for f in dataclasses.fields(AllTypes)]


def test_item_schema_is_the_default() -> None:
    """Item (and ItemTuple) is the default record type and its schema is the documented one."""
    expected = pa.schema(
        [column(name, pa.int64(), nullable=False) for name in ITEM_FIELDS[:5]]
        + [
            column("value", pa.float64(), nullable=False),
            column("filename", pa.string(), nullable=False),
            column("path", pa.string(), nullable=False),
        ]
    )
    assert arrow_schema(Item) == expected
    assert arrow_schema() == expected
    assert arrow_schema(ItemTuple) == expected
    assert read_batches(b"").schema == expected


def test_named_tuple_schema() -> None:
    """A NamedTuple's fields become columns like a dataclass's."""
    assert arrow_schema(Reading) == pa.schema(
        [
            column("sensor", pa.string(), nullable=False),
            column("value", pa.float64(), nullable=True),
            column("ok", pa.bool_(), nullable=False),
        ]
    )


def test_tuple_type_columns_are_named_by_position() -> None:
    """A ``tuple[...]`` type's columns are named "0", "1", ..."""
    assert arrow_schema(PAIR) == pa.schema(
        [column("0", pa.int64(), nullable=False), column("1", pa.string(), nullable=False)]
    )
    assert arrow_schema(OPTIONAL_PAIR) == pa.schema(
        [column("0", pa.int64(), nullable=True), column("1", pa.binary(), nullable=False)]
    )


def test_a_type_whose_annotations_cannot_be_hashed_is_read_as_columns() -> None:
    """``Annotated`` metadata may be any object; a dict makes the annotation unhashable."""
    in_ms: Any = tuple[typing.Annotated[int, {"unit": "ms"}], str]
    data = msgpack.packb([1, "a"]) + msgpack.packb([2, "b"])
    table = read_table(data, in_ms)
    assert table.schema == arrow_schema(PAIR)
    assert table.to_pylist() == [{"0": 1, "1": "a"}, {"0": 2, "1": "b"}]
    # Inside a container too: no annotation is looked up by its hash.
    listed: Any = tuple[list[typing.Annotated[int, {"unit": "ms"}]], str]
    table = read_table(msgpack.packb([[1, 2], "a"]), listed)
    assert table.schema.field("0").type == pa.list_(pa.field("item", pa.int64(), nullable=False))
    assert table.to_pylist() == [{"0": [1, 2], "1": "a"}]


def test_a_record_types_arrow_schema_is_worked_out_once() -> None:
    assert (
        arrow_schema(Item) is arrow_schema(Item) is arrow_schema() is arrow_schema(record_type=Item)
    )


# Lists, maps and nested records have Arrow types now (tests/test_arrow_nested.py).
UNSUPPORTED: dict[str, Any] = {
    "list": list,
    "dict": dict,
    "Any": Any,
    "object": object,
    "int | str": int | str,
    "int | str | None": int | str | None,
    "tuple[int, int]": tuple[int, int],
    "dict[float, int]": dict[float, int],
}


def test_a_none_field_is_a_null_column() -> None:
    """A field annotated ``None`` holds only None: an Arrow ``null`` column."""
    record_type = dataclasses.make_dataclass("Empty", [("fine", int), ("nothing", None)])
    schema = pa.schema([column("fine", pa.int64(), nullable=False), pa.field("nothing", pa.null())])
    assert arrow_schema(record_type) == schema
    table = read_table(b"".join(msgpack.packb([key, None]) for key in (1, 2)), record_type)
    assert table.schema == schema
    assert table.to_pylist() == [{"fine": 1, "nothing": None}, {"fine": 2, "nothing": None}]


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_annotation_is_refused_naming_the_field(name: str) -> None:
    """An annotation with no Arrow column type is a TypeError naming the field."""
    record_type = dataclasses.make_dataclass("Bad", [("fine", int), ("odd", UNSUPPORTED[name])])
    with pytest.raises(TypeError, match="field `odd`"):
        arrow_schema(record_type)


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_annotation_fails_at_the_call_before_reading(name: str) -> None:
    """The refusal comes from the call itself, before the source is read."""
    record_type = dataclasses.make_dataclass("Bad", [("fine", int), ("odd", UNSUPPORTED[name])])
    source = UnreadableSource()
    with pytest.raises(TypeError, match="field `odd`"):
        read_batches(source, record_type)
    with pytest.raises(TypeError, match="field `odd`"):
        read_table(source, record_type)
    assert source.reads == 0


def test_unsupported_annotation_does_not_open_the_path(small_path: Path) -> None:
    """A refused record type leaves no file open."""
    with pytest.raises(TypeError, match="field `odd`"):
        read_batches(small_path, one_field(Any, "odd"))
    assert not is_open(small_path)


class BadReading(NamedTuple):
    sensor: str
    tags: Any


def test_unsupported_named_tuple_and_tuple_fields_are_refused() -> None:
    """NamedTuple and tuple record types are checked the same way."""
    with pytest.raises(TypeError, match="field `tags`"):
        read_batches(UnreadableSource(), BadReading)
    with pytest.raises(TypeError, match="annotated object"):
        read_batches(UnreadableSource(), tuple[int, object])


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------

# One record per line, in AllTypes' field order: i, f, s, b, t, oi, of, os, ob, ot.
ALL_TYPES_VALUES: list[list[Any]] = [
    [0, 0.0, "", b"", False, None, None, None, None, None],
    [-(2**63), 1.5, "héllo wörld ✓", b"\x00\xff", True, 2**63 - 1, -0.0, "", b"", False],
    [2**63 - 1, 3, "日本語 🎉", b"x" * 300, False, -(2**63), 7, "ünï", b"\x80", True],
    [1, -(2**53), "s" * 70_000, b"b" * 70_000, True, 0, 2**53, "\x00nul", b"\x00", None],
    [-1, float("inf"), "a", b"a", False, None, float("-inf"), "Ωmega", None, True],
    [-2, float("nan"), "nan", b"n", True, None, float("nan"), None, b"", None],
    [2**32, 1e-308, "é", b"\xc1", True, -(2**31), None, None, b"z", None],
    [127, -0.0, "emoji 🙂", b"\xff" * 3, False, 128, 0, "", b"", False],
]
ALL_TYPES_FLOAT_FIELDS = {"f", "of"}


def all_types_rows(values: list[list[Any]]) -> list[Row]:
    """The rows a table of these records must hold: ints written to float fields as floats."""
    names = [f.name for f in dataclasses.fields(AllTypes)]
    rows = []
    for record in values:
        row = dict(zip(names, record, strict=True))
        for name in ALL_TYPES_FLOAT_FIELDS:
            if type(row[name]) is int:
                row[name] = float(row[name])
        rows.append(row)
    return rows


ALL_TYPES_DATA = b"".join(packed(record) for record in ALL_TYPES_VALUES)


@pytest.mark.parametrize("read_size", [1, 7, DEFAULT_READ_SIZE])
def test_every_field_type_round_trips_exactly(read_size: int) -> None:
    """Every value of every field type comes back exactly (type, bits, nulls), any reads."""
    table = read_table(ALL_TYPES_DATA, AllTypes, read_size=read_size)
    assert table.schema == ALL_TYPES_SCHEMA
    assert canonical_rows(table.to_pylist()) == canonical_rows(all_types_rows(ALL_TYPES_VALUES))


def test_ints_in_float_fields_become_floats() -> None:
    """An int written to a float field is accepted and becomes a float."""
    table = read_table(ALL_TYPES_DATA, AllTypes)
    for name in ALL_TYPES_FLOAT_FIELDS:
        position = ALL_TYPES_SCHEMA.names.index(name)
        written = [record[position] for record in ALL_TYPES_VALUES]
        assert any(type(v) is int for v in written)
        got = table.column(name).to_pylist()
        assert [canonical(v) for v in got] == [
            canonical(None if v is None else float(v)) for v in written
        ]
        assert all(type(v) is float for v in got if v is not None)


def test_nulls_land_only_in_nullable_columns() -> None:
    """None becomes null, only where it was written, only in nullable columns."""
    table = read_table(ALL_TYPES_DATA, AllTypes)
    expected = all_types_rows(ALL_TYPES_VALUES)
    for field in ALL_TYPES_SCHEMA:
        nones = sum(row[field.name] is None for row in expected)
        assert table.column(field.name).null_count == nones
        assert field.nullable or nones == 0


def test_named_tuple_records_round_trip() -> None:
    """NamedTuple records become rows with the field names."""
    written: list[list[Any]] = [["a", 1.25, True], ["ß", None, False], ["", 2, True]]
    table = read_table(b"".join(packed(v) for v in written), Reading)
    assert table.to_pylist() == [
        {"sensor": s, "value": None if v is None else float(v), "ok": ok} for s, v, ok in written
    ]


def test_tuple_records_round_trip() -> None:
    """Tuple records become rows with columns by position, int64 extremes included."""
    written: list[list[Any]] = [[1, "one"], [-(2**63), ""], [2**63 - 1, "ü"]]
    table = read_table(b"".join(packed(v) for v in written), PAIR)
    assert table.to_pylist() == [{"0": n, "1": s} for n, s in written]


def test_item_tuple_records_give_the_same_table_as_items(reference_bytes: bytes) -> None:
    """The record type's kind does not change the table."""
    assert read_table(reference_bytes, ItemTuple).equals(read_table(reference_bytes, Item))


@dataclass
class Tally:
    n: int


@pytest.mark.parametrize("read_size", [64, DEFAULT_READ_SIZE])
def test_flat_records_give_the_same_table_from_arrays_maps_or_a_mix(
    reference_items: list[Item], read_size: int
) -> None:
    """A run of maps only, of arrays only, and runs of both make the same rows."""
    items = reference_items[:300]
    arrays = [dataclasses.astuple(item) for item in items]
    maps = [dataclasses.asdict(item) for item in items]
    expected = [dict(zip(ITEM_FIELDS, row, strict=True)) for row in arrays]
    mix = [m if i % 7 else a for i, (a, m) in enumerate(zip(arrays, maps, strict=True))]
    for shapes in (arrays, maps, mix):
        data = b"".join(msgpack.packb(record) for record in shapes)
        assert read_table(data, Item, read_size=read_size).to_pylist() == expected
    mixed = b"".join(msgpack.packb([n] if n % 2 else {"n": n}) for n in range(50))
    assert read_table(mixed, Tally).to_pylist() == [{"n": n} for n in range(50)]


@pytest.mark.parametrize("maps", [False, True], ids=["arrays", "maps"])
def test_a_record_its_own_post_init_refuses_is_refused_as_the_reader_refuses_it(
    maps: bool,
) -> None:
    """Columns are not records, but a record the type's ``__post_init__`` refuses is refused
    by a batch reader too, at the same record, from either shape."""
    written: list[tuple[int, str]] = [(1, "a"), (-2, "b"), (3, "c")]
    packed_records = [
        msgpack.packb({"id": i, "name": name} if maps else [i, name]) for i, name in written
    ]
    data = b"".join(packed_records)
    records, expected = drain(StreamingReader(data, Checked))
    batches, error = drain(BatchReader(data, Checked))
    assert [row for batch in batches for row in batch.to_pylist()] == as_rows(records)
    assert as_rows(records) == [{"id": 1, "name": "a"}]
    assert isinstance(error, RecordError)
    assert (error.index, error.offset) == (expected.index, expected.offset)
    assert (error.index, error.offset) == (1, len(packed_records[0]))
    assert "id must not be negative" in error.reason
    reader = BatchReader(data, Checked, on_error="skip")
    assert [row for batch in reader for row in batch.to_pylist()] == [
        {"id": 1, "name": "a"},
        {"id": 3, "name": "c"},
    ]
    assert reader.skipped == 1


# --------------------------------------------------------------------------------------------
# The reference stream
# --------------------------------------------------------------------------------------------


def test_reference_table_is_the_reference_items(
    reference_bytes: bytes, reference_rows: list[Row]
) -> None:
    """The reference stream's table holds exactly the generated items."""
    table = read_table(reference_bytes)
    assert table.num_rows == REFERENCE_MESSAGES
    assert table.schema == arrow_schema(Item)
    assert table.to_pylist() == reference_rows


SOURCES: dict[str, Callable[[bytes, Path], Any]] = {
    "bytes": lambda data, path: data,
    "bytearray": lambda data, path: bytearray(data),
    "memoryview": lambda data, path: memoryview(data),
    "str path": lambda data, path: str(path),
    "pathlib.Path": lambda data, path: path,
    "BytesIO": lambda data, path: io.BytesIO(data),
}


@pytest.mark.parametrize("kind", list(SOURCES))
def test_reference_table_from_every_source(
    kind: str, reference_bytes: bytes, reference_path: Path, reference_rows: list[Row]
) -> None:
    """Bytes-like objects, paths and streams give the same table; a path is closed after."""
    with no_resource_warning():
        table = read_table(SOURCES[kind](reference_bytes, reference_path))
    assert table.to_pylist() == reference_rows
    assert not is_open(reference_path)


def test_reference_table_from_the_reference_path_fixture(
    reference_path: Path, reference_rows: list[Row]
) -> None:
    """The shared reference file reads as the reference items."""
    assert read_table(reference_path).to_pylist() == reference_rows


@pytest.mark.parametrize("buffering", [-1, 0], ids=["buffered", "unbuffered"])
def test_reference_table_from_an_open_binary_file(
    buffering: int, reference_path: Path, reference_rows: list[Row]
) -> None:
    """A caller's open binary file is read fully and left open."""
    with open(reference_path, "rb", buffering=buffering) as stream:
        table = read_table(stream)
        assert not stream.closed
    assert table.to_pylist() == reference_rows


# Reads of 1, 2 and 7 bytes over the stream's first 500 records (how pieces become batches is
# tested on _rebatched itself, below); larger reads over all of it.
READ_SIZES = [
    *((read_size, 500) for read_size in (1, 2, 7)),
    *((read_size, REFERENCE_MESSAGES) for read_size in (100, 4093, 65537, DEFAULT_READ_SIZE)),
]


@pytest.mark.parametrize(("read_size", "count"), READ_SIZES)
def test_reference_table_whatever_the_read_size(
    read_size: int,
    count: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Chunking (records split across reads) never changes the table."""
    table = read_table(reference_bytes[: record_offsets[count]], read_size=read_size)
    assert table.to_pylist() == reference_rows[:count]


@pytest.mark.parametrize(("read_size", "count"), [(7, 500), (333, REFERENCE_MESSAGES)])
def test_reference_table_from_a_file_with_small_reads(
    read_size: int,
    count: int,
    tmp_path: Path,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Small reads from a real file give the same table."""
    path = tmp_path / "reference.msgpack"
    path.write_bytes(reference_bytes[: record_offsets[count]])
    with open(path, "rb") as stream:
        assert read_table(stream, read_size=read_size).to_pylist() == reference_rows[:count]


# --------------------------------------------------------------------------------------------
# Empty streams
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("record_type", [Item, AllTypes, Reading, PAIR], ids=str)
def test_empty_stream_gives_an_empty_table_with_the_schema(record_type: type[Any]) -> None:
    """An empty stream is an empty table that still has the record type's schema."""
    table = read_table(b"", record_type)
    assert table.num_rows == 0
    assert table.schema == arrow_schema(record_type)


def test_empty_stream_gives_no_batches() -> None:
    """An empty stream yields no batch at all (not an empty one)."""
    assert list(read_batches(b"")) == []
    assert list(read_batches(io.BytesIO())) == []


def test_empty_file_gives_an_empty_table(tmp_path: Path) -> None:
    """An empty file is an empty table, and is closed."""
    path = tmp_path / "empty.msgpack"
    path.write_bytes(b"")
    with no_resource_warning():
        table = read_table(path)
    assert table.num_rows == 0
    assert table.schema == arrow_schema(Item)
    assert not is_open(path)


# --------------------------------------------------------------------------------------------
# Batch boundaries
# --------------------------------------------------------------------------------------------


BATCH_SIZES = [1, 7, 1000, 9999, 10000, 10001, 65536]
# Every batch size with the default reads, a few with an odd read size; batches of 1 and 7 rows
# over the stream's first 1000 records, the others over all of it. Reads of a few bytes (at
# most one record finished per read) are the property test's, over short streams; every way
# of cutting pieces into batches is tested on _rebatched itself.
BATCHINGS = [
    *((batch_size, DEFAULT_READ_SIZE) for batch_size in BATCH_SIZES),
    (7, 333),
    (10001, 333),
]


@pytest.mark.parametrize(("batch_size", "read_size"), BATCHINGS)
def test_batches_are_full_except_the_last_and_hold_every_record(
    batch_size: int,
    read_size: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Every batch but the last has batch_size rows; together they are every record, in order."""
    count = 1000 if batch_size < 10 else REFERENCE_MESSAGES
    data = reference_bytes[: record_offsets[count]]
    batches = list(read_batches(data, batch_size=batch_size, read_size=read_size))
    assert [batch.num_rows for batch in batches] == expected_sizes(count, batch_size)
    assert all(isinstance(batch, pa.RecordBatch) for batch in batches)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == reference_rows[:count]


def test_default_batch_size_is_published_and_used() -> None:
    """Without batch_size, batches hold DEFAULT_BATCH_SIZE rows."""
    count = DEFAULT_BATCH_SIZE + 3
    data = pack_items(get_iter(count, seed=3))
    assert [batch.num_rows for batch in read_batches(data)] == [DEFAULT_BATCH_SIZE, 3]
    assert read_table(data).num_rows == count


@settings(deadline=None, max_examples=150)
@given(
    count=st.integers(min_value=0, max_value=60),
    batch_size=st.integers(min_value=1, max_value=70),
    read_size=st.integers(min_value=1, max_value=400),
)
def test_batch_boundaries_property(
    count: int,
    batch_size: int,
    read_size: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Whatever the chunking, batches are full but the last, and together are the records."""
    data = reference_bytes[: record_offsets[count]]
    with read_batches(data, batch_size=batch_size, read_size=read_size) as reader:
        batches = list(reader)
        assert reader.bytes_read == len(data)
    assert [batch.num_rows for batch in batches] == expected_sizes(count, batch_size)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == reference_rows[:count]


def test_read_table_passes_batch_size_on(reference_bytes: bytes) -> None:
    """read_table's batch_size shapes the table's chunks."""
    table = read_table(reference_bytes, batch_size=3000)
    assert [batch.num_rows for batch in table.to_batches()] == expected_sizes(
        REFERENCE_MESSAGES, 3000
    )


# --------------------------------------------------------------------------------------------
# MAX_BATCH_BYTES
# --------------------------------------------------------------------------------------------

SMALL_BATCH_BYTES = 4096


@pytest.mark.parametrize("read_size", [1, 100, DEFAULT_READ_SIZE])
def test_max_batch_bytes_cuts_batches_short_keeping_every_record(
    read_size: int,
    monkeypatch: pytest.MonkeyPatch,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Batches reaching MAX_BATCH_BYTES are cut before batch_size; no record lost or moved."""
    count, batch_size = 2000, 1500
    data = reference_bytes[: record_offsets[count]]
    monkeypatch.setattr(arrow_module, "MAX_BATCH_BYTES", SMALL_BATCH_BYTES)
    batches = list(read_batches(data, batch_size=batch_size, read_size=read_size))
    assert len(batches) >= 2
    assert all(batch.num_rows < batch_size for batch in batches)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == reference_rows[:count]


def test_max_batch_bytes_cuts_at_the_first_record_that_reaches_it(
    monkeypatch: pytest.MonkeyPatch,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """With one record per read, a batch is cut as soon as its columns reach the limit: it is
    never over it by more than its last record, and not cut before the limit."""
    count, batch_size = 1000, 900
    monkeypatch.setattr(arrow_module, "MAX_BATCH_BYTES", SMALL_BATCH_BYTES)
    batches = list(
        read_batches(reference_bytes[: record_offsets[count]], batch_size=batch_size, read_size=1)
    )
    assert rows_of(batches) == reference_rows[:count]
    for batch in batches[:-1]:
        assert batch.num_rows < batch_size
        assert batch.slice(0, batch.num_rows - 1).nbytes < SMALL_BATCH_BYTES
        assert batch.nbytes < SMALL_BATCH_BYTES + batch.slice(batch.num_rows - 1).nbytes
    assert batches[-1].nbytes < SMALL_BATCH_BYTES + batches[-1].slice(0, 1).nbytes


def test_batches_are_not_cut_by_bytes_below_the_limit(reference_bytes: bytes) -> None:
    """The real limit is far above the reference stream: only batch_size cuts."""
    batches = list(read_batches(reference_bytes, batch_size=4000, read_size=100))
    assert [batch.num_rows for batch in batches] == [4000, 4000, 2000]


# --------------------------------------------------------------------------------------------
# Cutting the reader's pieces into batches: _rebatched itself
# --------------------------------------------------------------------------------------------

ROW_BYTES = 8  # a row of the pieces below: one int64, no nulls


def numbered_pieces(sizes: list[int]) -> list[pa.StructArray]:
    """Pieces as the reader converts them per read: ``sizes[i]`` rows each, of one int64
    column ``n`` numbering the rows 0, 1, 2, ... across all the pieces."""
    starts = [0, *itertools.accumulate(sizes)]
    return [
        pa.StructArray.from_arrays([pa.array(range(start, start + size), pa.int64())], ["n"])
        for start, size in zip(starts[:-1], sizes, strict=True)
    ]


def numbers_of(batches: list[pa.RecordBatch]) -> list[int | None]:
    assert all(batch.schema.names == ["n"] for batch in batches)
    return [n for batch in batches for n in batch.column("n").to_pylist()]


def sizes_cut_by_bytes(sizes: list[int], batch_size: int, limit: int) -> list[int]:
    """Rows per batch, counted in rows: after each piece, while the rows pending fill a batch
    or their bytes reach ``limit``, a batch of at most ``batch_size`` of them is cut; what is
    left at the end is the last batch."""
    cuts: list[int] = []
    pending = 0
    for size in sizes:
        pending += size
        while pending >= batch_size or pending * ROW_BYTES >= limit:
            cuts.append(min(pending, batch_size))
            pending -= cuts[-1]
    return cuts + ([pending] if pending else [])


PIECE_SIZES = st.lists(st.integers(min_value=1, max_value=40), max_size=25)


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(sizes=PIECE_SIZES, batch_size=st.integers(min_value=1, max_value=100))
def test_rebatched_cuts_full_batches_but_the_last_from_any_pieces(
    sizes: list[int], batch_size: int
) -> None:
    """Whatever the pieces' sizes: batches of batch_size rows, the last one shorter, every row
    once and in order; a piece is split between batches where a batch fills."""
    batches = list(arrow_module._rebatched(iter(numbered_pieces(sizes)), batch_size))
    assert all(isinstance(batch, pa.RecordBatch) for batch in batches)
    assert [batch.num_rows for batch in batches] == expected_sizes(sum(sizes), batch_size)
    assert numbers_of(batches) == list(range(sum(sizes)))


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(
    sizes=PIECE_SIZES,
    batch_size=st.integers(min_value=1, max_value=100),
    limit_rows=st.integers(min_value=1, max_value=60),
    extra=st.integers(min_value=0, max_value=ROW_BYTES - 1),
)
def test_rebatched_cuts_a_batch_once_its_bytes_reach_the_limit(
    sizes: list[int], batch_size: int, limit_rows: int, extra: int
) -> None:
    """MAX_BATCH_BYTES is checked after each piece: the rows pending are cut into a batch as
    soon as their bytes reach it (never before), batch_size still the most rows a batch holds."""
    limit = (limit_rows - 1) * ROW_BYTES + 1 + extra  # reached by limit_rows rows, not fewer
    with mock.patch.object(arrow_module, "MAX_BATCH_BYTES", limit):
        batches = list(arrow_module._rebatched(iter(numbered_pieces(sizes)), batch_size))
    assert [batch.num_rows for batch in batches] == sizes_cut_by_bytes(sizes, batch_size, limit)
    assert numbers_of(batches) == list(range(sum(sizes)))
    for batch in batches[:-1]:
        assert batch.num_rows == batch_size or batch.nbytes >= limit
        assert batch.num_rows <= batch_size


@settings(deadline=None, max_examples=examples(ci=200, local=100))
@given(sizes=PIECE_SIZES, batch_size=st.integers(min_value=1, max_value=100))
def test_rebatched_delivers_the_pending_rows_before_the_pieces_exception(
    sizes: list[int], batch_size: int
) -> None:
    """An exception that ends the pieces comes after a last batch of the rows still pending
    (none if there are none), as it is."""
    error = OSError("the source broke")

    def failing() -> Iterator[pa.StructArray]:
        yield from numbered_pieces(sizes)
        raise error

    batches: list[pa.RecordBatch] = []
    with pytest.raises(OSError, match="the source broke") as info:
        batches.extend(arrow_module._rebatched(failing(), batch_size))
    assert info.value is error
    assert [batch.num_rows for batch in batches] == expected_sizes(sum(sizes), batch_size)
    assert numbers_of(batches) == list(range(sum(sizes)))


def test_rebatched_gives_no_batch_for_no_pieces() -> None:
    assert list(arrow_module._rebatched(iter([]), 10)) == []


def test_the_limit_cuts_a_batch_at_the_piece_that_reaches_it() -> None:
    """Worked example: pieces of 3, 3 and 4 rows, batches of 8, a limit of 5 rows' bytes."""
    with mock.patch.object(arrow_module, "MAX_BATCH_BYTES", 5 * ROW_BYTES):
        batches = list(arrow_module._rebatched(iter(numbered_pieces([3, 3, 4])), 8))
    assert [batch.num_rows for batch in batches] == [6, 4]
    assert numbers_of(batches) == list(range(10))


# --------------------------------------------------------------------------------------------
# The error contract
# --------------------------------------------------------------------------------------------

BATCH = 100
POSITIONS = {
    "first record": 0,
    "inside a batch": 137,
    "on a batch boundary": 2 * BATCH,
    "last record": -1,  # of a stream of SHORT records: the reference stream's first ones
}
SHORT = 1000
ARROW_CAUSES: tuple[type[BaseException], ...] = (pa.ArrowException, OverflowError)

Damager = Callable[[bytes, list[int], list[Item], int], bytes]


def cut_inside(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
    """The stream ends halfway through record ``index``."""
    start, end = offsets[index], offsets[index + 1]
    return data[: start + (end - start) // 2]


def corrupt_start(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
    """Record ``index`` starts with 0xc1, never valid MessagePack."""
    return data[: offsets[index]] + b"\xc1" + data[offsets[index] + 1 :]


def invalid_utf8(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
    """Record ``index``'s filename is the str ``ff fe``, not UTF-8."""
    values = items[index].to_list()
    values[ITEM_FIELDS.index("filename")] = "@@"  # not in the generator's alphabet
    record = packed(values).replace(b"\xa2@@", b"\xa2\xff\xfe")
    assert record != packed(values)
    return data[: offsets[index]] + record + data[offsets[index + 1] :]


def replaced_by(make: Callable[[list[Any]], Any]) -> Damager:
    """Record ``index`` is replaced by ``make(its values)``; the records after it stay."""

    def damage(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
        return (
            data[: offsets[index]]
            + packed(make(items[index].to_list()))
            + data[offsets[index + 1] :]
        )

    return damage


def with_field(name: str, value: Any) -> Damager:
    def change(values: list[Any]) -> list[Any]:
        values[ITEM_FIELDS.index(name)] = value
        return values

    return replaced_by(change)


@dataclass(frozen=True)
class Damage:
    """A way to break record ``index`` and what the reader must raise for it."""

    make: Damager
    error: type[ReaderError]
    field: str | None = None  # the field the message must name
    cause: tuple[type[BaseException], ...] | None = None
    value: Any = None  # the refused value the message must show


DAMAGES: dict[str, Damage] = {
    "stream cut inside the record": Damage(cut_inside, TruncatedStreamError),
    "0xc1 at the record's start": Damage(corrupt_start, DecodeError, cause=(msgpack.FormatError,)),
    "invalid UTF-8 in a str": Damage(invalid_utf8, DecodeError, cause=(UnicodeDecodeError,)),
    "str in an int field": Damage(with_field("line", "12"), RecordError, field="line"),
    "None in a non-nullable field": Damage(
        with_field("filename", None), RecordError, field="filename"
    ),
    "bool in an int field": Damage(with_field("id", True), RecordError, field="id"),
    "7 values for 8 fields": Damage(replaced_by(lambda values: values[:7]), RecordError),
    "a map without `line`": Damage(
        replaced_by(
            lambda values: {k: v for k, v in zip(ITEM_FIELDS, values, strict=True) if k != "line"}
        ),
        RecordError,
        field="line",
    ),
    "2**63 in an int64 field (Arrow)": Damage(
        with_field("id", 2**63), RecordError, "id", ARROW_CAUSES, 2**63
    ),
    "uint64 max in an int64 field (Arrow)": Damage(
        with_field("timestamp_ns", 2**64 - 1), RecordError, "timestamp_ns", ARROW_CAUSES, 2**64 - 1
    ),
}
ARROW_REFUSALS = [name for name in DAMAGES if name.endswith("(Arrow)")]


def check_contract(
    damage: Damage,
    index: int,
    batch_size: int,
    read_size: int,
    items: list[Item],
    data: bytes,
    offsets: list[int],
    rows: list[Row],
) -> None:
    broken = damage.make(data, offsets, items, index)
    reader = read_batches(broken, batch_size=batch_size, read_size=read_size)
    batches, error = drain(reader)
    assert [batch.num_rows for batch in batches] == expected_sizes(index, batch_size)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == rows[:index]
    assert type(error) is damage.error
    assert_located(error, index, offsets[index])
    if damage.field is not None:
        assert f"field `{damage.field}`" in error.reason
    if damage.cause is not None:
        assert isinstance(error.__cause__, damage.cause)
    if damage.value is not None:
        assert str(damage.value) in error.reason
    assert_finished(reader)


# Each position with each read size, except 1-byte reads up to the last record (seconds each
# time): small reads are the three other positions'.
CHUNKINGS = [
    (position, read_size)
    for position in POSITIONS
    for read_size in ((1,) if position != "last record" else ()) + (100, DEFAULT_READ_SIZE)
]


@pytest.mark.parametrize(("position", "read_size"), CHUNKINGS)
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_error_contract(
    damage: str,
    position: str,
    read_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """The good records before the failing one arrive first (a partial batch last), then the
    right error, naming the record's index and true offset, and the reader is finished."""
    index = POSITIONS[position]
    items, data, offsets, rows = reference_items, reference_bytes, record_offsets, reference_rows
    if index < 0:
        index = SHORT - 1
        items, data = items[:SHORT], data[: offsets[SHORT]]
        offsets, rows = offsets[: SHORT + 1], rows[:SHORT]
    check_contract(DAMAGES[damage], index, BATCH, read_size, items, data, offsets, rows)


@pytest.mark.parametrize("batch_size", [1, 7, 250, 9999, 10000, DEFAULT_BATCH_SIZE])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_error_contract_with_other_batch_sizes(
    damage: str,
    batch_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """The contract holds for batch sizes around and beyond the failing record."""
    check_contract(
        DAMAGES[damage],
        500,
        batch_size,
        DEFAULT_READ_SIZE,
        reference_items,
        reference_bytes,
        record_offsets,
        reference_rows,
    )


@pytest.mark.parametrize("damage", ARROW_REFUSALS)
def test_arrow_refusal_reason_names_the_field_and_the_arrow_type(
    damage: str,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    """An Arrow refusal says which field, which Arrow type, and Arrow's own reason."""
    case = DAMAGES[damage]
    broken = case.make(reference_bytes, record_offsets, reference_items, 3)
    _, error = drain(read_batches(broken))
    assert case.field is not None
    arrow_type = arrow_schema(Item).field(case.field).type
    assert error.reason.startswith(f"field `{case.field}`: ")
    assert str(arrow_type) in error.reason
    assert error.__cause__ is not None
    assert str(error.__cause__) in error.reason


def test_refusal_is_located_in_a_batch_read_at_once(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """The whole stream in one read: one conversion fails, the records before it still come."""
    broken = with_field("id", 2**63)(reference_bytes, record_offsets, reference_items, 4321)
    reader = read_batches(broken, read_size=len(broken))
    batches, error = drain(reader)
    assert sum(batch.num_rows for batch in batches) == 4321
    assert [row["id"] for row in rows_of(batches)] == list(range(4321))
    assert_located(error, 4321, record_offsets[4321])


def test_a_refused_record_before_an_invalid_one_is_reported_first(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """Arrow's refusal of record 10 comes before the validation error of record 11."""
    broken = with_field("line", "x")(reference_bytes, record_offsets, reference_items, 11)
    broken = with_field("id", 2**63)(broken, record_offsets, reference_items, 10)
    batches, error = drain(read_batches(broken))
    assert sum(batch.num_rows for batch in batches) == 10
    assert type(error) is RecordError
    assert_located(error, 10, record_offsets[10])
    assert "field `id`" in error.reason


def test_an_invalid_record_before_a_refused_one_is_reported_first(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """A validation error in record 10 comes before Arrow's refusal of record 11."""
    broken = with_field("id", 2**63)(reference_bytes, record_offsets, reference_items, 11)
    broken = with_field("line", "x")(broken, record_offsets, reference_items, 10)
    batches, error = drain(read_batches(broken))
    assert sum(batch.num_rows for batch in batches) == 10
    assert_located(error, 10, record_offsets[10])
    assert "field `line`" in error.reason


def packed_records(records: list[list[Any]]) -> tuple[bytes, list[int]]:
    """The stream of ``records`` and each record's offset, measured while packing."""
    offsets, parts = [], []
    size = 0
    for record in records:
        offsets.append(size)
        parts.append(packed(record))
        size += len(parts[-1])
    return b"".join(parts), offsets


@pytest.mark.parametrize("read_size", [1, DEFAULT_READ_SIZE])
@pytest.mark.parametrize(
    ("record_type", "column"),
    [(AllTypes, "oi")],
    ids=["int | None"],
)
def test_arrow_refusal_in_a_nullable_field(
    record_type: type[Any], column: str, read_size: int
) -> None:
    """A value Arrow refuses in a nullable column is located like any other."""
    values = [list(record) for record in ALL_TYPES_VALUES]
    bad = list(values[1])
    position = list(ALL_TYPES_SCHEMA.names).index(column)
    bad[position] = 2**63
    records = [*values, bad, *values]
    data, offsets = packed_records(records)
    reader = read_batches(data, record_type, batch_size=3, read_size=read_size)
    batches, error = drain(reader)
    assert canonical_rows(rows_of(batches)) == canonical_rows(all_types_rows(values))
    assert type(error) is RecordError
    assert_located(error, len(values), offsets[len(values)])
    assert f"field `{column}`" in error.reason
    assert isinstance(error.__cause__, ARROW_CAUSES)


class Count(NamedTuple):
    sensor: str
    total: int | None
    ok: bool


@pytest.mark.parametrize("record_type", [Count, tuple[str, int | None, bool]], ids=str)
def test_arrow_refusal_is_located_for_named_tuple_and_tuple_records(
    record_type: type[Any],
) -> None:
    """Arrow refusals are located for NamedTuple and tuple records too."""
    good: list[list[Any]] = [["a", 1, True], ["b", None, False]] * 4
    records = [*good, ["c", 2**63, True], *good]
    data, offsets = packed_records(records)
    batches, error = drain(read_batches(data, record_type, batch_size=3))
    assert [row for batch in batches for row in batch.to_pylist()] == [
        dict(zip(arrow_schema(record_type).names, record, strict=True)) for record in good
    ]
    assert type(error) is RecordError
    assert_located(error, len(good), offsets[len(good)])
    assert isinstance(error.__cause__, ARROW_CAUSES)


# --------------------------------------------------------------------------------------------
# read_table on broken data
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_size", [1, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_read_table_raises_the_same_error(
    damage: str,
    read_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    """read_table raises the error read_batches raises: same class, index, offset, cause."""
    case = DAMAGES[damage]
    broken = case.make(reference_bytes, record_offsets, reference_items, 137)
    with pytest.raises(ReaderError) as info:
        read_table(broken, batch_size=BATCH, read_size=read_size)
    assert type(info.value) is case.error
    assert_located(info.value, 137, record_offsets[137])
    if case.cause is not None:
        assert isinstance(info.value.__cause__, case.cause)


def test_read_table_closes_its_file_on_error(
    tmp_path: Path, reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """read_table closes the file it opened when the data is broken."""
    path = tmp_path / "broken.msgpack"
    path.write_bytes(with_field("id", 2**63)(reference_bytes, record_offsets, reference_items, 9))
    with no_resource_warning(), pytest.raises(RecordError) as info:
        read_table(path)
    assert_located(info.value, 9, record_offsets[9])
    assert not is_open(path)


def test_to_pyarrow_raises_the_same_error_after_the_good_batches(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """Through a RecordBatchReader: the good batches, then the same located error."""
    broken = cut_inside(reference_bytes, record_offsets, reference_items, 250)
    batches = read_batches(broken, batch_size=BATCH).to_pyarrow()
    expected = expected_sizes(250, BATCH)
    got = [batches.read_next_batch().num_rows for _ in expected]
    assert got == expected
    with pytest.raises(TruncatedStreamError) as info:
        batches.read_next_batch()
    assert_located(info.value, 250, record_offsets[250])


# --------------------------------------------------------------------------------------------
# RecordTooLargeError
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_size", [1, 100, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("index", [0, 137, 2000])
def test_record_over_max_record_size_is_located(
    index: int,
    read_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """A record over max_record_size is RecordTooLargeError, after the records before it."""
    limit = 1000
    assert max(b - a for a, b in itertools.pairwise(record_offsets)) < limit
    broken = with_field("path", "p" * 2 * limit)(
        reference_bytes, record_offsets, reference_items, index
    )
    reader = read_batches(broken, batch_size=BATCH, max_record_size=limit, read_size=read_size)
    batches, error = drain(reader)
    assert type(error) is RecordTooLargeError
    assert rows_of(batches) == reference_rows[:index]
    assert_located(error, index, record_offsets[index])
    assert f"max_record_size={limit}" in str(error)


# --------------------------------------------------------------------------------------------
# Exceptions from the source
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_size", [1, 100, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("extra", [0, 5], ids=["on a record boundary", "inside a record"])
def test_os_error_passes_through_after_the_records_before_it(
    extra: int,
    read_size: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """A source's OSError is not data: the records before it arrive, then it passes unchanged."""
    index = 137
    data = reference_bytes[: record_offsets[index] + extra]
    error = ConnectionResetError(104, "Connection reset by peer")
    reader = read_batches(FailingSource(data, error), batch_size=BATCH, read_size=read_size)
    batches: list[pa.RecordBatch] = []
    with pytest.raises(ConnectionResetError) as info:
        batches.extend(reader)
    assert info.value is error
    assert not isinstance(info.value, ReaderError)
    assert info.value.__cause__ is None
    assert info.value.__context__ is None
    assert [batch.num_rows for batch in batches] == expected_sizes(index, BATCH)
    assert rows_of(batches) == reference_rows[:index]
    assert reader.bytes_read == len(data)
    assert_finished(reader)


class TextAfter:
    """A source whose first read is ``data`` and whose next read returns text, not bytes."""

    def __init__(self, data: bytes) -> None:
        self._reads = [data]

    def read(self, size: int = -1) -> Any:
        return self._reads.pop() if self._reads else "text"


def truncated_gzip(data: bytes) -> Callable[[], Any]:
    """A gzip stream of ``data`` missing its last bytes: its read() ends in ``EOFError``."""
    compressed = gzip.compress(data)[:-20]
    return lambda: gzip.GzipFile(fileobj=io.BytesIO(compressed))


SOURCE_FAILURES: dict[str, tuple[Callable[[bytes], Callable[[], Any]], type[Exception]]] = {
    "truncated gzip file (EOFError)": (truncated_gzip, EOFError),
    "read() returns text (TypeError)": (lambda data: lambda: TextAfter(data), TypeError),
}


@pytest.mark.parametrize("batch_size", [BATCH, DEFAULT_BATCH_SIZE])
@pytest.mark.parametrize("failure", list(SOURCE_FAILURES))
def test_any_source_exception_comes_after_the_records_before_it(
    failure: str, batch_size: int, reference_bytes: bytes, reference_rows: list[Row]
) -> None:
    """BatchReader's error contract is "as the reader's": whatever the source raises,
    StreamingReader has handed over every record before it; the batches must hold them too."""
    make_source, exception = SOURCE_FAILURES[failure]
    new_source = make_source(reference_bytes[: len(reference_bytes) // 2])
    records: list[Item] = []
    with pytest.raises(exception):
        records.extend(StreamingReader(new_source()))
    assert len(records) > BATCH
    batches: list[pa.RecordBatch] = []
    with pytest.raises(exception):
        batches.extend(read_batches(new_source(), batch_size=batch_size))
    assert rows_of(batches) == as_rows(records)
    assert rows_of(batches) == reference_rows[: len(records)]


# --------------------------------------------------------------------------------------------
# BatchReader: context manager, ownership, properties
# --------------------------------------------------------------------------------------------


def test_with_block_closes_the_file_it_opened(small_path: Path) -> None:
    """Leaving the with block closes a path's file, with no ResourceWarning."""
    with no_resource_warning():
        with read_batches(small_path, batch_size=7) as reader:
            assert is_open(small_path)
            next(reader)
            assert not reader.closed
        assert reader.closed
        assert not is_open(small_path)


@pytest.mark.parametrize("as_str", [False, True])
def test_exhausting_the_reader_closes_the_file_it_opened(small_path: Path, as_str: bool) -> None:
    """A path's file is closed as soon as the last batch is read."""
    with no_resource_warning():
        reader = read_batches(str(small_path) if as_str else small_path)
        assert sum(batch.num_rows for batch in reader) == 50
        assert not is_open(small_path)
        reader.close()


def test_close_before_reading_closes_the_file(small_path: Path) -> None:
    """close() before the first batch closes the file; nothing is read after."""
    with no_resource_warning():
        reader = read_batches(small_path)
        assert is_open(small_path)
        reader.close()
        assert not is_open(small_path)
        with pytest.raises(ValueError, match="I/O operation on a closed BatchReader"):
            next(reader)


def test_caller_stream_stays_open(small_path: Path) -> None:
    """A stream the caller passed is never closed by the reader."""
    with open(small_path, "rb") as stream:
        with read_batches(stream, batch_size=7) as reader:
            next(reader)
        assert reader.closed
        assert not stream.closed
        assert stream.read(0) == b""
    buffer = io.BytesIO(pack_items(get_iter(5)))
    with read_batches(buffer) as reader:
        list(reader)
    assert not buffer.closed


def test_caller_stream_stays_open_after_an_error(small_path: Path) -> None:
    """Nor when the data in it is broken."""
    buffer = io.BytesIO(small_path.read_bytes()[:-3])
    with pytest.raises(TruncatedStreamError), read_batches(buffer) as reader:
        list(reader)
    assert not buffer.closed


def test_iterating_to_an_error_closes_the_file_it_opened(
    tmp_path: Path, reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """A path's file is closed when the reader fails, before close() is called."""
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(reference_bytes[: record_offsets[300] + 3])
    with no_resource_warning():
        reader = read_batches(path, batch_size=BATCH)
        batches, error = drain(reader)
        assert sum(batch.num_rows for batch in batches) == 300
        assert_located(error, 300, record_offsets[300])
        assert not is_open(path)
        reader.close()


@pytest.mark.parametrize("started", [False, True], ids=["unstarted", "started"])
def test_dropped_reader_closes_its_file_at_once(small_path: Path, started: bool) -> None:
    """A reader dropped without close() closes its file as soon as it is dropped, without a
    warning: no reference cycle keeps it (and its file) alive until the collector runs."""
    with no_resource_warning():
        reader = read_batches(small_path, batch_size=7)
        if started:
            next(reader)
        assert is_open(small_path)
        del reader
        assert not is_open(small_path)


def test_close_after_the_partial_batch_does_not_raise(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """A caller that stops at the partial batch, before the error, closes cleanly."""
    broken = cut_inside(reference_bytes, record_offsets, reference_items, 30)
    reader = read_batches(broken, batch_size=BATCH)
    assert next(reader).num_rows == 30
    reader.close()
    assert reader.closed
    with pytest.raises(ValueError, match="closed BatchReader"):
        list(reader)


def test_close_twice_is_safe(small_path: Path) -> None:
    """close() may be called twice; closed says it was called."""
    reader = read_batches(small_path)
    assert not reader.closed
    reader.close()
    reader.close()
    assert reader.closed
    assert not is_open(small_path)


def test_close_in_the_middle_stops_reading(reference_bytes: bytes) -> None:
    """After close(), iteration is refused, as a closed file's is."""
    reader = read_batches(reference_bytes, batch_size=10, read_size=100)
    next(reader)
    reader.close()
    with pytest.raises(ValueError, match="closed BatchReader"):
        iter(reader)


@pytest.mark.parametrize(
    ("read_size", "count"),
    [(7, 500), (1000, REFERENCE_MESSAGES), (DEFAULT_READ_SIZE, REFERENCE_MESSAGES)],
)
def test_bytes_read_is_the_stream_length_once_exhausted(
    read_size: int, count: int, reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """bytes_read ends at the stream's length, for bytes and streams."""
    data = reference_bytes[: record_offsets[count]]
    for source in (data, io.BytesIO(data)):
        reader = read_batches(source, batch_size=3000, read_size=read_size)
        assert reader.bytes_read == 0
        list(reader)
        assert reader.bytes_read == len(data)
    assert count < REFERENCE_MESSAGES or len(data) == REFERENCE_SIZE


def test_bytes_read_grows_with_what_was_read(reference_bytes: bytes) -> None:
    """bytes_read counts what was read so far, not the whole source."""
    reader = read_batches(reference_bytes, batch_size=10, read_size=4096)
    next(reader)
    assert 0 < reader.bytes_read <= 4096


def test_name_and_repr_name_the_source(small_path: Path) -> None:
    """name and repr name the source and the record type; repr shows closed."""
    with read_batches(small_path) as reader:
        assert reader.name == str(small_path)
        assert str(small_path) in repr(reader)
        assert "Item" in repr(reader)
        assert "closed" not in repr(reader)
    assert "closed" in repr(reader)
    with open(small_path, "rb") as stream:
        assert read_batches(stream).name == str(small_path)
    assert "BytesIO" in read_batches(io.BytesIO()).name
    assert "bytes" in read_batches(b"").name
    assert "Reading" in repr(read_batches(b"", Reading))


def test_to_pyarrow_gives_a_record_batch_reader_of_the_same_table(
    reference_bytes: bytes,
) -> None:
    """to_pyarrow() is a pyarrow.RecordBatchReader of the same batches."""
    with read_batches(reference_bytes, batch_size=999) as reader:
        batches = reader.to_pyarrow()
        assert isinstance(batches, pa.RecordBatchReader)
        assert batches.schema == arrow_schema(Item)
        table = batches.read_all()
    assert table.equals(read_table(reference_bytes))
    assert [batch.num_rows for batch in table.to_batches()] == expected_sizes(
        REFERENCE_MESSAGES, 999
    )


def test_schema_is_known_before_reading() -> None:
    """schema is available before any byte is read."""
    source = UnreadableSource()
    reader = read_batches(source, AllTypes)
    assert reader.schema == ALL_TYPES_SCHEMA
    assert source.reads == 0


def test_iterating_twice_continues_where_it_stopped(reference_bytes: bytes) -> None:
    """The reader is an iterator: a second loop continues, it does not restart."""
    reader = read_batches(reference_bytes, batch_size=4000)
    first = next(reader)
    rest = list(reader)
    assert [first.num_rows, *(batch.num_rows for batch in rest)] == [4000, 4000, 2000]
    assert list(reader) == []


BAD_SIZES: list[Any] = [0, -1, True, False, 1.5, "10", None]


@pytest.mark.parametrize("value", BAD_SIZES, ids=repr)
def test_invalid_batch_size_fails_at_construction(value: Any, small_path: Path) -> None:
    """A batch_size that is not a positive int (bools included) is refused before opening."""
    with pytest.raises(ValueError, match="batch_size"):
        read_batches(small_path, batch_size=value)
    with pytest.raises(ValueError, match="batch_size"):
        read_table(small_path, batch_size=value)
    with pytest.raises(ValueError, match="batch_size"):
        BatchReader(small_path, batch_size=value)
    assert not is_open(small_path)


@pytest.mark.parametrize("option", ["max_record_size", "read_size"])
@pytest.mark.parametrize("value", BAD_SIZES, ids=repr)
def test_invalid_sizes_fail_at_construction(option: str, value: Any, small_path: Path) -> None:
    """Bad max_record_size/read_size are refused before opening the path."""
    with pytest.raises(ValueError, match=option):
        read_batches(small_path, **{option: value})
    with pytest.raises(ValueError, match=option):
        read_table(small_path, **{option: value})
    assert not is_open(small_path)


def test_missing_path_fails_at_construction(tmp_path: Path) -> None:
    """A missing file fails at the call, not at the first batch."""
    with pytest.raises(FileNotFoundError):
        read_batches(tmp_path / "missing.msgpack")


def test_text_stream_is_refused() -> None:
    """A text stream is refused at the call."""
    with pytest.raises(TypeError, match="binary"):
        read_batches(io.StringIO("[]"))


def test_dataclass_string_annotations_are_resolved() -> None:
    """This module uses ``from __future__ import annotations``: AllTypes' hints are strings."""
    assert isinstance(AllTypes.__annotations__["oi"], str)
    assert typing.get_type_hints(AllTypes)["oi"] == int | None
    assert arrow_schema(AllTypes).field("oi") == column("oi", pa.int64(), nullable=True)


# --- column projection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "columns",
    [["value"], ["id", "value"], ["path", "id"], ITEM_FIELDS[::-1], ITEM_FIELDS],
    ids=["one", "two", "reordered", "all reversed", "all"],
)
@pytest.mark.parametrize(
    ("read_size", "count"), [(7, 500), (DEFAULT_READ_SIZE, REFERENCE_MESSAGES)]
)
def test_projection_builds_the_named_columns_in_the_order_asked(
    reference_bytes: bytes,
    record_offsets: list[int],
    columns: list[str],
    read_size: int,
    count: int,
) -> None:
    """``columns=`` gives exactly those columns, in that order, with the full table's values."""
    data = reference_bytes[: record_offsets[count]]
    full = read_table(data)
    projected = read_table(data, columns=columns, read_size=read_size)
    assert projected.schema == pa.schema([arrow_schema(Item).field(name) for name in columns])
    assert projected.equals(full.select(columns))


def test_projection_batches_have_the_projected_schema(reference_bytes: bytes) -> None:
    with read_batches(reference_bytes, batch_size=3000, columns=["line"]) as batches:
        assert batches.schema.names == ["line"]
        sizes = [batch.num_rows for batch in batches if batch.schema == batches.schema]
    assert sizes == expected_sizes(REFERENCE_MESSAGES, 3000)


@pytest.mark.parametrize(
    ("columns", "error", "message"),
    [
        ("id", TypeError, "not a str"),
        ([], ValueError, "got none"),
        (["id", "nope"], ValueError, r"got unknown \['nope'\]"),
        (["id", "id"], ValueError, "got a repeated name"),
    ],
)
def test_bad_projection_is_refused_at_the_call(
    small_path: Path, columns: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        read_batches(small_path, columns=columns)
    assert not is_open(small_path)


def test_projection_changes_no_validation_error(
    reference_items: list[Item], record_offsets: list[int]
) -> None:
    """A field left out of the projection is still validated: the same error, located."""
    values = [item.to_list() for item in reference_items[:50]]
    values[20][ITEM_FIELDS.index("path")] = 7  # not a str, and not a projected column
    data = b"".join(packed(v) for v in values)
    offsets = record_offsets[:21]  # the first 20 records are unchanged
    batches, error = drain(read_batches(data, columns=["id"], batch_size=8))
    assert rows_of(batches) == [{"id": item.id} for item in reference_items[:20]]
    assert isinstance(error, RecordError)
    assert_located(error, 20, offsets[20])
    assert "field `path` expected str, got int 7" in str(error)


@pytest.mark.parametrize("columns", [["id"], ["value", "id"]])
def test_arrow_refusal_in_a_projected_column_is_located(
    reference_items: list[Item], record_offsets: list[int], columns: list[str]
) -> None:
    values = [item.to_list() for item in reference_items[:50]]
    values[33][0] = 2**63
    data = b"".join(packed(v) for v in values)
    offset = len(b"".join(packed(v) for v in values[:33]))
    batches, error = drain(read_batches(data, columns=columns))
    assert len(rows_of(batches)) == 33
    assert isinstance(error, RecordError)
    assert_located(error, 33, offset)
    assert "field `id`: int 9223372036854775808 does not fit Arrow int64" in str(error)


def test_arrow_refusal_applies_only_to_the_columns_built(reference_items: list[Item]) -> None:
    """An int over int64 in a column left out is valid for the record type and never built."""
    values = [item.to_list() for item in reference_items[:10]]
    values[4][0] = 2**63
    data = b"".join(packed(v) for v in values)
    table = read_table(data, columns=["value"])
    assert table.column("value").to_pylist() == [item.value for item in reference_items[:10]]


def test_tuple_record_refusal_names_the_field_as_validation_does() -> None:
    data = packed([1, "a"]) + packed([2**63, "b"])
    batches, error = drain(read_batches(data, tuple[int, str]))
    assert rows_of(batches) == [{"0": 1, "1": "a"}]
    assert isinstance(error, RecordError)
    assert "field `[0]`: int 9223372036854775808 does not fit Arrow int64" in str(error)


class ArrayLike(msgspec.Struct, array_like=True):
    """A Struct decoded from arrays as itself: its rows must still be taken apart."""

    a: int
    b: str = "x"


def test_array_like_struct_records_become_rows() -> None:
    data = msgpack.packb([1, "p"]) + msgpack.packb([2])
    assert read_table(data, ArrayLike).to_pylist() == [{"a": 1, "b": "p"}, {"a": 2, "b": "x"}]
