"""SQL over records in DuckDB itself: files (a glob of them) through ``read_msgpack``, and a
stream through ``BatchReader.to_pyarrow()``."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import msgpack
import pyarrow as pa
import pytest

from msgpack_reader_py import Item, generate
from msgpack_reader_py._arrow.reader import arrow_schema, read_batches, read_table
from msgpack_reader_py.duckdb import read_msgpack, record_batches

from .encoders import DATA, EVENT_FILES, Event, expected_events
from .helpers import item_values, rec


def _column(table: pa.Table, name: str) -> list[Any]:
    return list(table.column(name).to_pylist())


def _rows(relation: duckdb.DuckDBPyRelation | None) -> list[Any]:
    assert relation is not None  # a query that returns rows
    return relation.fetchall()


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"part-{n}.msgpack" for n in range(3)]
    for number, path in enumerate(paths):
        generate(path, 500 + number, seed=number)
    return paths


def test_sql_over_a_glob_of_files(parts: list[Path]) -> None:
    whole = pa.concat_tables(read_table(p) for p in parts)
    events = read_msgpack(str(parts[0].parent / "part-*.msgpack"), Item)
    [got] = _rows(
        events.query(
            "events", "SELECT count(*), sum(id), max(value), count(DISTINCT filename) FROM events"
        )
    )
    ids, values = _column(whole, "id"), _column(whole, "value")
    names = set(_column(whole, "filename"))
    assert got == (len(ids), sum(ids), max(values), len(names))


def test_rows_come_in_file_order(parts: list[Path]) -> None:
    reader = record_batches(list(reversed(parts)), Item, batch_size=128)
    assert reader.schema == arrow_schema(Item)
    table = reader.read_all()
    expected = pa.concat_tables(read_table(p) for p in reversed(parts))
    assert table.equals(expected)


def test_a_where_and_a_group_by_equal_python_s(parts: list[Path]) -> None:
    table = read_table(parts[1])
    connection = duckdb.connect()
    relation = read_msgpack(parts[1], Item, connection=connection, columns=["process_id", "value"])
    got = relation.filter("value > 500").aggregate("process_id % 7 AS k, count(*) AS n", "k")
    expected: dict[int, int] = {}
    for pid, value in zip(_column(table, "process_id"), _column(table, "value"), strict=True):
        if value > 500:
            expected[pid % 7] = expected.get(pid % 7, 0) + 1
    assert dict(got.fetchall()) == expected


def test_a_stream_through_to_pyarrow(parts: list[Path]) -> None:
    # A pipe: read once, as it comes, straight into DuckDB.
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
            str(parts[0]),
        ],
        stdout=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        with read_batches(process.stdout, Item, batch_size=100) as batches:
            stream = duckdb.connect().from_arrow(batches.to_pyarrow())
            got = _rows(stream.query("stream", "SELECT count(*), sum(id) FROM stream"))
    assert got == [(500, sum(range(500)))]


def test_untyped_records_are_inferred(tmp_path: Path) -> None:
    path = tmp_path / "logs.msgpack"
    records = [{"level": "warn", "ms": 3}, {"level": "info", "ms": 5, "user": "ann"}]
    path.write_bytes(b"".join(msgpack.packb(r) for r in records * 3))
    logs = read_msgpack(path)
    assert _rows(logs.query("logs", "SELECT level, sum(ms) FROM logs GROUP BY 1 ORDER BY 1")) == [
        ("info", 15),
        ("warn", 9),
    ]


def test_broken_data_fails_the_query_with_the_reader_s_location(tmp_path: Path) -> None:
    good = rec(*item_values(id=0))
    path = tmp_path / "bad.msgpack"
    path.write_bytes(good + rec(*item_values(id=1, filename=7)))
    relation = read_msgpack(path, Item)
    with pytest.raises(duckdb.InvalidInputException) as caught:
        relation.fetchall()
    message = str(caught.value)
    assert f"{path}: record 1 at byte {len(good)}: field `filename`" in message


def test_a_relation_over_files_answers_every_query(tmp_path: Path) -> None:
    path = tmp_path / "grows.msgpack"
    path.write_bytes(b"".join(rec(*item_values(id=i)) for i in range(3)))
    relation = read_msgpack(path, Item)
    assert relation.aggregate("count(*)").fetchall() == [(3,)]
    assert relation.aggregate("sum(id)").fetchall() == [(3,)]
    with path.open("ab") as grown:  # each query reads the file as it is then
        grown.write(rec(*item_values(id=3)))
    assert relation.filter("id > 1").aggregate("count(*)").fetchall() == [(2,)]


def test_a_stream_made_a_table_answers_many(parts: list[Path]) -> None:
    connection = duckdb.connect()
    with parts[0].open("rb") as stream, read_batches(stream, Item) as batches:  # read once
        connection.from_arrow(batches.to_pyarrow()).create("items")
    assert connection.sql("SELECT count(*) FROM items").fetchall() == [(500,)]
    assert connection.sql("SELECT max(id) FROM items").fetchall() == [(499,)]


def test_a_table_made_of_it_answers_many(parts: list[Path]) -> None:
    connection = duckdb.connect()
    read_msgpack(parts, Item, connection=connection).create("items")
    assert connection.sql("SELECT count(*) FROM items").fetchall() == [(1503,)]
    assert connection.sql("SELECT min(id) FROM items").fetchall() == [(0,)]


def test_every_encoder_s_nested_events(tmp_path: Path) -> None:
    events = read_msgpack([DATA / name for name in EVENT_FILES], Event)
    rows = _rows(events.query("events", 'SELECT id, "inner", attrs FROM events'))
    expected = expected_events() * len(EVENT_FILES)
    assert [row[0] for row in rows] == [e.id for e in expected]
    assert [row[1] for row in rows] == [dataclasses.asdict(e.inner) for e in expected]
    assert [row[2] for row in rows] == [e.attrs for e in expected]


def test_bad_arguments_are_refused_at_the_call_not_in_a_query(parts: list[Path]) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        read_msgpack(parts[0], Item, batch_size=0)
    with pytest.raises(ValueError, match="follow"):
        read_msgpack(parts[0], Item, follow=True)
    with pytest.raises(TypeError, match="not a str"):
        record_batches(parts[0], Item, columns="id")
    with pytest.raises(FileNotFoundError, match="no files match"):
        read_msgpack(str(parts[0].parent / "none-*.msgpack"), Item)
