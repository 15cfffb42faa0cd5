"""Records of many kinds as one table: a column for the tag and the union of the kinds' fields,
nullable where a kind lacks one, in Arrow, Parquet, CSV and JSON Lines; a field two kinds type
differently refused up front; an annotation Arrow cannot hold named at its innermost path."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import json
from pathlib import Path
from typing import Any, Literal, TypedDict

import msgpack
import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from msgpack_reader_py import RecordError
from msgpack_reader_py._arrow.reader import arrow_schema, read_batches, read_table
from msgpack_reader_py._output.convert import convert

from .helpers import drain

UTC = datetime.timezone.utc


class Click(msgspec.Struct, tag="click"):
    x: int
    y: int


class Key(msgspec.Struct, tag="key"):
    code: str
    at: datetime.datetime | None = None
    x: int | None = None  # shared with Click: one nullable column


@dataclasses.dataclass
class Scroll:
    type: Literal["scroll"]
    dy: float


EVENTS = Click | Key | Scroll
RECORDS = [
    {"type": "click", "x": 1, "y": 2},
    ["key", "a", msgpack.Timestamp(1, 0)],
    {"type": "scroll", "dy": -1.5},
    ["click", 3, 4],
    {"type": "key", "code": "b", "x": 9},
]
DATA = b"".join(msgpack.packb(r) for r in RECORDS)
ROWS: list[dict[str, Any]] = [
    {"type": "click", "x": 1, "y": 2, "code": None, "at": None, "dy": None},
    {
        "type": "key",
        "x": None,
        "y": None,
        "code": "a",
        "at": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        "dy": None,
    },
    {"type": "scroll", "x": None, "y": None, "code": None, "at": None, "dy": -1.5},
    {"type": "click", "x": 3, "y": 4, "code": None, "at": None, "dy": None},
    {"type": "key", "x": 9, "y": None, "code": "b", "at": None, "dy": None},
]


def test_the_schema_of_kinds_is_the_tag_then_every_kinds_fields() -> None:
    schema = arrow_schema(EVENTS)
    assert schema.names == ["type", "x", "y", "code", "at", "dy"]
    assert [schema.field(n).nullable for n in schema.names] == [False, *[True] * 5]
    assert schema.field("type").type == pa.string()
    assert schema.field("x").type == pa.int64()
    assert schema.field("at").type == pa.timestamp("us", tz="UTC")


def test_a_table_of_kinds_in_both_shapes() -> None:
    table = read_table(DATA, EVENTS)
    assert [_utc(row) for row in table.to_pylist()] == ROWS


def _utc(row: dict[str, Any]) -> dict[str, Any]:
    """pyarrow gives its own UTC tzinfo: compare instants."""
    return {k: v.astimezone(UTC) if isinstance(v, datetime.datetime) else v for k, v in row.items()}


def test_batches_of_kinds_with_a_projection_and_skip_mode() -> None:
    bad = msgpack.packb({"type": "tap"})
    with read_batches(
        DATA + bad + DATA, EVENTS, columns=["type", "dy"], on_error="skip"
    ) as batches:
        rows = [row for batch in batches for row in batch.to_pylist()]
        assert batches.skipped == 1
        assert batches.errors[0].index == len(RECORDS)
    want = [{"type": r["type"], "dy": r["dy"]} for r in ROWS]
    assert rows == want + want


def test_a_record_of_no_kind_stops_a_table_after_the_rows_before_it() -> None:
    bad = msgpack.packb(["tap", 1])
    got, error = drain(read_batches(DATA + bad, EVENTS))
    assert sum(batch.num_rows for batch in got) == len(RECORDS)
    assert isinstance(error, RecordError)
    assert error.index == len(RECORDS)
    assert "the tag at position 0 is 'tap', which names no kind" in error.reason


@pytest.mark.parametrize("to", ["parquet", "arrow"])
def test_kinds_to_parquet_and_arrow(tmp_path: Path, to: str) -> None:
    out = tmp_path / f"events.{to}"
    assert convert(DATA, out, to, record_type=EVENTS).records == len(RECORDS)  # type: ignore[arg-type]
    table = pq.read_table(out) if to == "parquet" else pa.ipc.open_file(str(out)).read_all()
    assert [_utc(row) for row in table.to_pylist()] == ROWS


def test_kinds_to_csv_one_column_each() -> None:
    out = io.BytesIO()
    convert(DATA, out, "csv", record_type=EVENTS)
    rows = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert [r["type"] for r in rows] == ["click", "key", "scroll", "click", "key"]
    assert rows[1] == {
        "type": "key",
        "x": "",
        "y": "",
        "code": "a",
        "at": "1970-01-01T00:00:01Z",
        "dy": "",
    }


def test_kinds_to_json_lines_each_with_its_own_fields() -> None:
    out = io.BytesIO()
    convert(DATA, out, "jsonl", record_type=EVENTS)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"type": "click", "x": 1, "y": 2},
        {"type": "key", "code": "a", "at": "1970-01-01T00:00:01Z", "x": None},
        {"type": "scroll", "dy": -1.5},
        {"type": "click", "x": 3, "y": 4},
        {"type": "key", "code": "b", "at": None, "x": 9},
    ]


def test_a_field_two_kinds_type_differently_is_refused_naming_it_and_the_kinds() -> None:
    @dataclasses.dataclass
    class Count:
        type: Literal["count"]
        value: int

    @dataclasses.dataclass
    class Label:
        type: Literal["label"]
        value: str

    with pytest.raises(TypeError, match=r"field `value` is int in Count and str in Label"):
        read_table(b"", Count | Label)


def test_a_union_of_kinds_inside_a_record_is_a_struct_column() -> None:
    @dataclasses.dataclass
    class Envelope:
        id: int
        event: Click | Key | None

    data = b"".join(
        msgpack.packb(r)
        for r in ([1, ["click", 1, 2]], [2, None], {"id": 3, "event": ["key", "k"]})
    )
    table = read_table(data, Envelope)
    assert table.schema.field("event").type.names == ["type", "x", "y", "code", "at"]
    assert table.column("event").to_pylist() == [
        {"type": "click", "x": 1, "y": 2, "code": None, "at": None},
        None,
        {"type": "key", "x": None, "y": None, "code": "k", "at": None},
    ]


class Span(TypedDict, total=False):
    name: str
    ms: float


def test_typed_dict_columns_are_nullable_where_a_key_may_be_missing() -> None:
    data = msgpack.packb({"name": "a"}) + msgpack.packb(["b", 2.0])
    table = read_table(data, Span)
    assert table.schema.field("ms").nullable
    assert table.to_pylist() == [{"name": "a", "ms": None}, {"name": "b", "ms": 2.0}]


@dataclasses.dataclass
class Inner:
    attrs: dict[str, Any]


@dataclasses.dataclass
class Outer:
    name: str
    inner: list[Inner]


def test_values_of_no_one_type_deep_inside_are_json_text_there() -> None:
    """A JSON column may sit at any depth: a map's values in a record in a list."""
    data = msgpack.packb(["a", [[{"x": [1, "y"], "z": None}]]])
    schema = arrow_schema(Outer)
    assert str(schema.field("inner").type) == (
        "list<item: struct<attrs: map<string, extension<arrow.json>> not null> not null>"
    )
    assert read_table(data, Outer).to_pylist() == [
        {"name": "a", "inner": [{"attrs": [("x", '[1,"y"]'), ("z", None)]}]}
    ]


def test_dict_records_have_no_columns() -> None:
    with pytest.raises(TypeError, match=r"no fixed fields to make columns of"):
        read_table(b"", dict[str, int])
