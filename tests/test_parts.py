"""``convert -o DIR/``: a directory of parts, each written by the process that read its byte
range, named in file order, read as one table by pyarrow.dataset, Polars, DuckDB and Dask, and
exactly the single-file conversion; broken data and refusals leave no part behind."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import msgpack
import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msgpack_reader_py import TruncatedStreamError, convert, get_iter, pack_items
from msgpack_reader_py.cli import main

from .helpers import assert_directory_holds, error_line, examples

ITEMS = list(get_iter(3000, seed=8))
DATA = pack_items(ITEMS)
FORMATS = ["parquet", "arrow", "csv", "jsonl"]


@pytest.fixture
def items_path(tmp_path: Path) -> Path:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    return path


def table_of_parts(directory: Path, to: str) -> pa.Table:
    """The parts, in name order, as one table."""
    names = sorted(p.name for p in directory.iterdir())
    assert names == [f"part-{n:05d}.{to}" for n in range(len(names))]
    if to == "jsonl":
        rows = [
            json.loads(line)
            for name in names
            for line in (directory / name).read_text().splitlines()
        ]
        return pa.Table.from_pylist(rows)
    if to == "csv":
        return pa.concat_tables([pa_csv.read_csv(directory / name) for name in names])
    table: pa.Table = ds.dataset(
        str(directory), format="ipc" if to == "arrow" else "parquet"
    ).to_table()
    return table


def table_of_file(path: Path, to: str) -> pa.Table:
    if to == "jsonl":
        return pa.Table.from_pylist([json.loads(line) for line in path.read_text().splitlines()])
    if to == "csv":
        return pa_csv.read_csv(path)
    if to == "arrow":
        return pa.ipc.open_file(str(path)).read_all()
    return pq.read_table(path)


@pytest.mark.parametrize("to", FORMATS)
def test_the_parts_in_name_order_are_the_single_file(
    tmp_path: Path, items_path: Path, to: Any
) -> None:
    single = tmp_path / f"one.{to}"
    convert(items_path, single, to)
    parts = tmp_path / "parts"
    done = convert(items_path, f"{parts}/", to, workers=2, blocksize=20_000)
    assert done.records == len(ITEMS)
    assert len(list(parts.iterdir())) > 2  # a part per byte range
    assert table_of_parts(parts, to).equals(table_of_file(single, to))
    assert_directory_holds(tmp_path, {"items.msgpack", single.name, "parts"})


# Dask's own Parquet reader calls a pandas method pandas 3.1 deprecates; nothing of ours.
@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_every_engine_reads_the_directory_as_one_table(tmp_path: Path, items_path: Path) -> None:
    parts = tmp_path / "parts"
    convert(items_path, f"{parts}/", "parquet", workers=2, blocksize=20_000)
    ids = [item.id for item in ITEMS]
    assert ds.dataset(parts).to_table().column("id").to_pylist() == ids
    assert pl.scan_parquet(parts / "*.parquet").collect()["id"].to_list() == ids
    relation = duckdb.sql(
        f"select id from read_parquet('{parts}/*.parquet', filename = 'part', "
        "file_row_number = true) order by part, file_row_number"
    )
    assert relation is not None
    assert [row[0] for row in relation.fetchall()] == ids
    import dask.dataframe as dd

    assert dd.read_parquet(str(parts)).compute(scheduler="sync")["id"].tolist() == ids


@settings(
    max_examples=examples(ci=25, local=8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    blocksize=st.integers(200, 60_000),
    workers=st.sampled_from([1, 2]),
    to=st.sampled_from(FORMATS),
    count=st.integers(0, 1500),
)
def test_any_cut_writes_the_single_files_records(
    tmp_path: Path, blocksize: int, workers: int, to: Any, count: int
) -> None:
    folder = tmp_path / f"{blocksize}-{workers}-{to}-{count}"
    folder.mkdir()
    source = folder / "items.msgpack"
    source.write_bytes(pack_items(ITEMS[:count]))
    single = folder / f"one.{to}"
    convert(source, single, to)
    parts = folder / "parts"
    convert(source, f"{parts}/", to, workers=workers, blocksize=blocksize)
    if count == 0:  # no record: one empty part (its schema, where the format has one)
        assert [p.name for p in parts.iterdir()] == [f"part-00000.{to}"]
        return
    assert table_of_parts(parts, to).equals(table_of_file(single, to))


def test_broken_data_fails_as_the_sequential_read_and_leaves_no_part(tmp_path: Path) -> None:
    cut = tmp_path / "cut.msgpack"
    cut.write_bytes(DATA[:-3])
    with pytest.raises(TruncatedStreamError) as sequential:
        convert(cut, tmp_path / "one.parquet", "parquet")
    with pytest.raises(TruncatedStreamError) as in_parts:
        convert(cut, f"{tmp_path}/parts/", "parquet", workers=2, blocksize=20_000)
    assert (in_parts.value.index, in_parts.value.offset) == (
        sequential.value.index,
        sequential.value.offset,
    )
    assert_directory_holds(tmp_path, {"cut.msgpack"})  # nor a hidden directory of parts


def test_a_directory_with_parts_is_refused_unless_they_are_replaced(
    tmp_path: Path, items_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "notes.txt").write_text("kept")
    assert main(["convert", str(items_path), "--to", "jsonl", "-o", str(parts), "-j", "2"]) == 0
    first = sorted(p.name for p in parts.iterdir())
    assert "notes.txt" in first
    assert "part-00000.jsonl" in first
    capsys.readouterr()
    status = main(["convert", str(items_path), "--to", "csv", "-o", f"{parts}/"])
    assert status == 1
    assert error_line(capsys.readouterr().err) == (
        f"error: {parts}: the directory holds parts already (replace them, or choose another)"
    )
    assert sorted(p.name for p in parts.iterdir()) == first
    argv = ["convert", str(items_path), "--type", "item", "--to", "csv", "-o", f"{parts}/"]
    status = main([*argv, "--replace"])
    assert status == 0
    assert capsys.readouterr().out == f"Wrote {len(ITEMS)} records to {parts}/ (csv)\n"
    assert sorted(p.name for p in parts.iterdir()) == ["notes.txt", "part-00000.csv"]
    rows = list(csv.DictReader(io.StringIO((parts / "part-00000.csv").read_text())))
    assert [int(r["id"]) for r in rows] == [item.id for item in ITEMS]


def test_what_a_directory_of_parts_does_not_take_is_refused(
    tmp_path: Path, items_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = f"{tmp_path}/parts/"
    status = main(["convert", str(items_path), "--to", "csv", "-o", out, "--where", "id > 1"])
    assert status == 2
    assert error_line(capsys.readouterr().err).startswith(
        "error: --where applies to one output file, not to -o DIR/"
    )
    one = str(tmp_path / "one.csv")
    assert main(["convert", str(items_path), "--to", "csv", "-o", one, "--replace"]) == 2
    assert error_line(capsys.readouterr().err).startswith("error: --replace applies to -o DIR/")
    with pytest.raises(ValueError, match="a directory of parts holds every record"):
        convert(items_path, out, "csv", limit=3)
    assert_directory_holds(tmp_path, {"items.msgpack"})


def test_a_stream_and_untyped_records_are_one_part(tmp_path: Path) -> None:
    values: list[Any] = [{"a": i} for i in range(5)]
    stream = io.BytesIO(b"".join(msgpack.packb(v) for v in values))
    convert(stream, f"{tmp_path}/parts/", "jsonl", record_type=None, workers=2)
    lines = (tmp_path / "parts" / "part-00000.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == values
    assert os.listdir(tmp_path / "parts") == ["part-00000.jsonl"]
