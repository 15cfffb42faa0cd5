"""Arrow tables: a record type's schema, exact round trips of every field type, the reference
stream from every source, empty streams.

``read_batches``/``read_table`` must give exactly the records ``StreamingReader`` gives, as
Arrow columns. Expectations are computed from the generator, from the values packed here, or
from offsets measured while packing; never from the code under test.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union

import msgpack
import pyarrow as pa
import pytest

from msgpack_reader_py import (
    Item,
    ItemTuple,
    RecordError,
    StreamingReader,
)
from msgpack_reader_py._arrow.json_columns import storage_type, typed
from msgpack_reader_py._arrow.reader import (
    JSON,
    BatchReader,
    arrow_schema,
    read_batches,
    read_table,
)
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE
from tests.reference import REFERENCE_MESSAGES

from .helpers import (
    ALL_TYPES_FLOAT_FIELDS,
    ALL_TYPES_VALUES,
    FIELD_NAMES,
    AllTypes,
    Checked,
    Reading,
    Row,
    all_types_rows,
    as_rows,
    canonical,
    canonical_rows,
    drain,
    is_open,
    no_resource_warning,
    packed,
)

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


PAIR: type[tuple[int, str]] = tuple[int, str]
OPTIONAL_PAIR: type[tuple[int | None, bytes]] = tuple[int | None, bytes]


def test_dataclass_schema_has_one_column_per_field_in_order() -> None:
    """A dataclass: one column per field, named after it, in declaration order."""
    assert arrow_schema(AllTypes) == ALL_TYPES_SCHEMA
    assert arrow_schema(AllTypes).names == [f.name for f in dataclasses.fields(AllTypes)]


def test_item_schema_is_the_default() -> None:
    """Item (and ItemTuple) is the default record type and its schema is the documented one."""
    expected = pa.schema(
        [column(name, pa.int64(), nullable=False) for name in FIELD_NAMES[:5]]
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


# Annotations with no Arrow type of their own, each with values it holds and the JSON text
# each value's column cell holds (None: a null).
AS_JSON: dict[str, tuple[Any, list[Any], list[str | None]]] = {
    "list": (list, [[1, "a"], []], ['[1,"a"]', "[]"]),
    "dict": (dict, [{"a": [1]}], ['{"a":[1]}']),
    "Any": (Any, [{"k": 1.5}, "x", None], ['{"k":1.5}', '"x"', None]),
    "object": (object, [True, 7], ["true", "7"]),
    "int | str": (int | str, ["s", 3], ['"s"', "3"]),
    "int | str | None": (int | str | None, [None, 3], [None, "3"]),
    "tuple[int, int]": (tuple[int, int], [[1, 2]], ["[1,2]"]),
    "dict[float, int]": (dict[float, int], [{1.5: 2}], ['{"1.5":2}']),
}


def test_a_none_field_is_a_null_column() -> None:
    """A field annotated ``None`` holds only None: an Arrow ``null`` column."""
    record_type = dataclasses.make_dataclass("Empty", [("fine", int), ("nothing", None)])
    schema = pa.schema([column("fine", pa.int64(), nullable=False), pa.field("nothing", pa.null())])
    assert arrow_schema(record_type) == schema
    table = read_table(b"".join(msgpack.packb([key, None]) for key in (1, 2)), record_type)
    assert table.schema == schema
    assert table.to_pylist() == [{"fine": 1, "nothing": None}, {"fine": 2, "nothing": None}]


@pytest.mark.parametrize("name", list(AS_JSON))
def test_a_field_with_no_arrow_type_is_a_column_of_json_text(name: str) -> None:
    """An annotation with no Arrow type of its own is a nullable column of each value's JSON
    text (Arrow's JSON extension type): every value reaches the table, none is refused."""
    annotation, values, texts = AS_JSON[name]
    record_type = dataclasses.make_dataclass("Loose", [("fine", int), ("odd", annotation)])
    assert arrow_schema(record_type).field("odd") == pa.field("odd", JSON, nullable=True)
    data = b"".join(msgpack.packb([i, v]) for i, v in enumerate(values))
    table = read_table(data, record_type)
    assert table.schema.field("odd").type == JSON
    assert table.column("odd").to_pylist() == texts
    assert table.column("fine").to_pylist() == list(range(len(values)))


class LooseReading(NamedTuple):
    sensor: str
    tags: Any


def test_named_tuple_and_tuple_record_types_hold_json_columns_too() -> None:
    """NamedTuple and tuple record types type their fields the same way."""
    data = msgpack.packb(["s1", {"a": [1, None]}])
    assert read_table(data, LooseReading).to_pylist() == [
        {"sensor": "s1", "tags": '{"a":[1,null]}'}
    ]
    assert read_table(data, tuple[str, object]).to_pylist() == [{"0": "s1", "1": '{"a":[1,null]}'}]


@dataclass
class Nils:
    a: None
    b: None


@dataclass
class NilsBesideJSON:
    odd: Any
    nils: list[Nils | None]


def test_json_columns_beside_lists_of_structs_of_nils_make_valid_arrays() -> None:
    """A struct of JSON columns is its text wrapped, not cast: pyarrow 26 casts a list of
    structs of ``null`` fields to an array whose children are too short."""
    records = [{"odd": [None, [], i], "nils": [{"a": None, "b": None}, None]} for i in range(5)]
    data = b"".join(packed(record) for record in records)
    table = read_table(data, NilsBesideJSON, batch_size=2)
    table.validate(full=True)
    assert (
        pa.concat_arrays(table.column("nils").chunks).to_pylist()
        == [[{"a": None, "b": None}, None]] * 5
    )
    assert table.column("odd").to_pylist() == [f"[null,[],{i}]" for i in range(5)]


@pytest.mark.parametrize(
    ("arrow_type", "values"),
    [
        (pa.list_(pa.struct([("a", pa.null()), ("j", JSON)])), [[{"j": "1"}, None], None, []]),
        (
            pa.struct([("s", pa.struct([("j", JSON), ("n", pa.null())])), ("n", pa.int8())]),
            [{"s": {"j": '"x"'}, "n": 1}, None, {"s": None, "n": None}, {"s": {"j": None}}],
        ),
        (pa.map_(pa.string(), JSON), [[("k", "[1]"), ("l", None)], None, [], [("m", "{}")]]),
        (pa.list_(pa.int64()), [[1], None, [2, 3]]),
    ],
)
@pytest.mark.parametrize("start", [0, 1, 2])
def test_storage_is_typed_with_its_own_buffers(
    arrow_type: pa.DataType, values: list[Any], start: int
) -> None:
    """An array built as its type's storage is that type, valid, holding the same values,
    also when it is a slice; and back to its storage (as Spark takes it)."""
    stored: Any = pa.array(values, storage_type(arrow_type)).slice(start)
    made: Any = typed(stored, arrow_type)
    made.validate(full=True)
    assert made.type == arrow_type
    assert len(made) == len(stored)
    assert made.to_pylist() == stored.to_pylist()
    back: Any = typed(made, stored.type)
    back.validate(full=True)
    assert (back.type, back.to_pylist()) == (stored.type, stored.to_pylist())


NILS_AND = pa.list_(pa.struct([("n", pa.null()), ("t", pa.timestamp("us"))]))


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.list_(pa.struct([("n", pa.null()), ("t", pa.timestamp("us", tz="UTC"))])),
        pa.list_(pa.struct([("t", pa.timestamp("us"))])),  # fewer fields: a cast by name
        pa.large_list(NILS_AND.value_type),  # another kind of list: a cast
    ],
)
def test_only_the_leaves_that_differ_are_cast(arrow_type: pa.DataType) -> None:
    """Beside a list of structs of ``null`` fields, a leaf of another type is cast, and the
    array is valid (pyarrow casts such a list to an invalid array)."""
    when = dt.datetime(2024, 5, 1, 12, 30)
    values = [[{"n": None, "t": when}, None], None, [{"t": None}]]
    made: Any = typed(pa.array(values, NILS_AND), arrow_type)
    made.validate(full=True)
    assert made.type == arrow_type
    expected: Any = pa.array(values, NILS_AND).cast(arrow_type)
    assert made.to_pylist() == expected.to_pylist()


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------


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
    expected = [dict(zip(FIELD_NAMES, row, strict=True)) for row in arrays]
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
