"""Arrow columns and Dask dtypes for records as real producers write them: nested records,
lists, maps, timestamps, enums and literals, from arrays or maps."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgpack
import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from msgpack_reader_py import RecordError, StreamingReader
from msgpack_reader_py._arrow import schema
from msgpack_reader_py._arrow.reader import JSON, arrow_schema, read_batches, read_table
from msgpack_reader_py._output.convert import convert

from .encoders import DATA, EVENT_FILES, Event, expected_events

UTC = dt.timezone.utc


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Rank(enum.IntEnum):
    ONE = 1
    TWO = 2


@dataclasses.dataclass
class Leaf:
    name: str
    scores: list[float]


@dataclasses.dataclass
class Node:
    id: int
    when: dt.datetime | None
    level: Level
    rank: Rank
    kind: Literal["a", "b"]
    tags: tuple[str, ...]
    attrs: dict[str, int | None]
    leaf: Leaf
    leaves: list[Leaf]


VALUE: Any = pa.field("value", pa.int64())  # a Field as item type: pyarrow takes it, stubs don't
NODE_FIELDS: list[pa.Field[Any]] = [
    pa.field("id", pa.int64(), nullable=False),
    pa.field("when", pa.timestamp("us", tz="UTC")),
    pa.field("level", pa.string(), nullable=False),
    pa.field("rank", pa.int64(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("tags", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False),
    pa.field("attrs", pa.map_(pa.string(), VALUE), nullable=False),
    pa.field(
        "leaf",
        pa.struct(
            [
                pa.field("name", pa.string(), nullable=False),
                pa.field(
                    "scores",
                    pa.list_(pa.field("item", pa.float64(), nullable=False)),
                    nullable=False,
                ),
            ]
        ),
        nullable=False,
    ),
]
NODE = pa.schema(NODE_FIELDS)


def node(i: int) -> Node:
    return Node(
        i,
        None if i % 2 else dt.datetime(2024, 1, 1, 0, 0, i, tzinfo=UTC),
        Level.HIGH if i % 3 else Level.LOW,
        Rank.TWO,
        "a",
        ("x",) * (i % 3),
        {"k": i, "n": None},
        Leaf(f"leaf{i}", [i / 2]),
        [Leaf("l", [])] * (i % 2),
    )


def as_wire(value: Any, maps: bool) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: as_wire(getattr(value, f.name), maps) for f in dataclasses.fields(value)}
        return fields if maps else list(fields.values())
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dt.datetime):
        return msgpack.Timestamp.from_datetime(value)
    if isinstance(value, (list, tuple)):
        return [as_wire(v, maps) for v in value]
    if isinstance(value, dict):
        return {k: as_wire(v, maps) for k, v in value.items()}
    return value


def stream(nodes: list[Node], maps: bool) -> bytes:
    return b"".join(msgpack.packb(as_wire(n, maps)) for n in nodes)


def test_the_schema_of_nested_types() -> None:
    schema = arrow_schema(Node)
    assert schema.remove(schema.get_field_index("leaves")) == NODE
    leaves = schema.field("leaves").type
    assert pa.types.is_list(leaves)
    assert leaves.value_type == NODE.field("leaf").type


@pytest.mark.parametrize("maps", [False, True], ids=["arrays", "maps"])
def test_nested_records_become_columns_from_either_shape(maps: bool) -> None:
    nodes = [node(i) for i in range(7)]
    table = read_table(stream(nodes, maps), Node)
    assert table.schema == arrow_schema(Node)
    rows = table.to_pylist()
    assert [row["id"] for row in rows] == list(range(7))
    assert rows[0]["when"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert rows[1]["when"] is None
    assert [row["level"] for row in rows[:3]] == ["low", "high", "high"]
    assert rows[2]["tags"] == ["x", "x"]
    assert rows[3]["attrs"] == [("k", 3), ("n", None)]
    assert rows[4]["leaf"] == {"name": "leaf4", "scores": [2.0]}
    assert rows[5]["leaves"] == [{"name": "l", "scores": []}]


def test_a_mixed_stream_converts_like_one_shape(tmp_path: Path) -> None:
    nodes = [node(i) for i in range(6)]
    mixed = b"".join(stream([n], maps=bool(i % 2)) for i, n in enumerate(nodes))
    table = read_table(mixed, Node)
    assert table.equals(read_table(stream(nodes, maps=False), Node))
    pq.write_table(table, tmp_path / "nodes.parquet")
    assert pq.read_table(tmp_path / "nodes.parquet").equals(table)


def test_a_bad_nested_field_is_located_after_the_good_rows() -> None:
    good = stream([node(0), node(1)], maps=True)
    bad = as_wire(node(2), maps=True)
    bad["leaves"] = [{"name": "l", "scores": ["x"]}]
    batches = read_batches(good + msgpack.packb(bad), Node)
    assert next(batches).num_rows == 2
    with pytest.raises(RecordError) as caught:
        next(batches)
    assert (caught.value.index, caught.value.offset) == (2, len(good))
    assert caught.value.reason == "field `leaves[0].scores[0]` expected float, got str 'x'"


@pytest.mark.parametrize("name", EVENT_FILES)
def test_every_encoder_s_events_convert_to_the_same_table(name: str) -> None:
    table = read_table(DATA / name, Event)
    events = list(StreamingReader(DATA / name, Event))
    assert events == expected_events()
    assert table.column("timestamp").to_pylist() == [e.timestamp for e in events]
    assert table.column("inner").to_pylist() == [dataclasses.asdict(e.inner) for e in events]
    assert table.column("attrs").to_pylist() == [list(e.attrs.items()) for e in events]


@dataclasses.dataclass
class AnyField:
    value: Any


@dataclasses.dataclass
class Pair:
    pair: tuple[int, str]


@dataclasses.dataclass
class Mixed:
    value: int | str


@pytest.mark.parametrize(
    ("record_type", "written", "text"),
    [
        (AnyField, {"a": [1, None]}, '{"a":[1,null]}'),
        (Pair, [1, "x"], '[1,"x"]'),
        (Mixed, "s", '"s"'),
    ],
)
def test_a_field_arrow_cannot_type_is_a_column_of_its_json(
    record_type: type[Any], written: Any, text: str
) -> None:
    name = dataclasses.fields(record_type)[0].name
    table = read_table(msgpack.packb([written]), record_type)
    assert str(table.schema.field(name).type) == str(JSON)
    assert table.column(name).to_pylist() == [text]


def test_nan_and_the_infinities_keep_their_values_in_a_json_column(tmp_path: Path) -> None:
    """Strict JSON has no word for them (JSON Lines writes null): a column of JSON text
    writes them as Python's json does, and Parquet, DuckDB and the text written from the
    column read them back as the values they were."""
    nan, inf = float("nan"), float("inf")
    values = [inf, -inf, nan, [1, nan, None], {"x": -inf}, None, "null", 2.5]
    data = b"".join(msgpack.packb([value]) for value in values)
    table = read_table(data, AnyField)
    texts = ["Infinity", "-Infinity", "NaN", "[1,NaN,null]", '{"x":-Infinity}', None]
    assert table.column("value").to_pylist() == [*texts, '"null"', "2.5"]
    pq.write_table(table, tmp_path / "values.parquet")
    assert pq.read_table(tmp_path / "values.parquet").equals(table)
    import duckdb

    read = duckdb.connect()
    read.register("values_table", table)
    doubles = read.sql("SELECT value::DOUBLE FROM values_table LIMIT 3").fetchall()
    assert [str(row[0]) for row in doubles] == ["inf", "-inf", "nan"]
    # A value MessagePack cannot tell about (msgpack's own Timestamp) is written the slow,
    # careful way: the same text.
    stamp = msgpack.Timestamp(1, 0)
    assert schema._json_cell([stamp, None]) == '["1970-01-01T00:00:01.000000000Z",null]'
    out = tmp_path / "values.csv"
    convert(data, out, "csv", record_type=AnyField, where="true")
    cells = out.read_text().splitlines()[1:]
    assert cells[:3] == ["inf", "-inf", "nan"]


@dataclasses.dataclass
class Header:
    time: dt.datetime
    meta: dict[str, Any]


@dataclasses.dataclass
class Entry:
    header: Header | dt.datetime
    record: dict[str, Any]


def test_a_union_of_a_record_and_a_scalar_is_a_json_column(tmp_path: Path) -> None:
    """Fluent Bit 2.1 writes ``[[time, metadata], record]`` where older versions wrote
    ``[time, record]``: ``Header | datetime`` reaches Arrow and Parquet as JSON text."""
    when = dt.datetime(2024, 10, 31, 11, 36, 26, 108999, tzinfo=dt.timezone.utc)
    stamp = msgpack.Timestamp.from_datetime(when)
    data = msgpack.packb([[stamp, {"host": "a"}], {"m": 1}], datetime=False) + msgpack.packb(
        [stamp, {"m": 2}]
    )
    table = read_table(data, Entry)
    assert table.column("header").to_pylist() == [
        '{"time":"2024-10-31T11:36:26.108999Z","meta":{"host":"a"}}',
        '"2024-10-31T11:36:26.108999Z"',
    ]
    pq.write_table(table, tmp_path / "entries.parquet")
    assert pq.read_table(tmp_path / "entries.parquet").equals(table)


def test_dask_dtypes_follow_the_arrow_types(tmp_path: Path) -> None:
    import pandas as pd

    from msgpack_reader_py.dask import pandas_dtypes, read_dataframe

    for part in range(2):
        nodes = [node(i) for i in range(part * 3, part * 3 + 3)]
        (tmp_path / f"{part}.msgpack").write_bytes(stream(nodes, maps=bool(part)))
    dtypes = pandas_dtypes(Node)
    assert dtypes["when"] == pd.DatetimeTZDtype("us", "UTC")
    assert dtypes["level"] == pd.StringDtype("pyarrow")
    assert dtypes["leaf"] == pd.ArrowDtype(arrow_schema(Node).field("leaf").type)
    frame = read_dataframe(str(tmp_path / "*.msgpack"), Node)
    assert dict(frame.dtypes) == dtypes
    computed = frame.compute(scheduler="sync")
    assert dict(computed.dtypes) == dtypes
    assert list(computed["id"]) == list(range(6))
    assert computed["leaf"].iloc[4] == {"name": "leaf4", "scores": [2.0]}


class PointArray(msgspec.Struct, array_like=True):
    x: int
    y: str


class PointTuple(NamedTuple):
    x: int
    y: str


@dataclasses.dataclass
class HoldsPositional:
    struct: PointArray
    pair: PointTuple
    many: list[PointArray]


def test_nested_records_by_position_are_struct_columns_by_field() -> None:
    """An array_like Struct and a NamedTuple nested in a record fill struct columns: they
    were refused, msgspec making them lists where a struct column takes a map."""
    data = msgpack.packb([[1, "a"], [2, "b"], [[3, "c"], [4, "d"]]])
    assert read_table(data, HoldsPositional).to_pylist() == [
        {
            "struct": {"x": 1, "y": "a"},
            "pair": {"x": 2, "y": "b"},
            "many": [{"x": 3, "y": "c"}, {"x": 4, "y": "d"}],
        }
    ]
