"""``scan_msgpack`` on Polars itself: the LazyFrame gives the rows ``read_table`` reads, with
the columns, filter and row limit Polars pushes into the scan, and the reader's errors."""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
from pathlib import Path
from typing import Any

import msgpack
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from msgpack_reader_py import (
    DecodeError,
    Item,
    RecordError,
    TruncatedStreamError,
    generate,
)
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py.polars import _Scan, polars_schema, read_msgpack, scan_msgpack

from .encoders import DATA, EVENT_FILES, Event, expected_events
from .helpers import examples, item_values, rec

UTC = dt.timezone.utc
RECORDS = 3000


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("polars") / "items.msgpack"
    generate(path, RECORDS)
    return path


@pytest.fixture(scope="module")
def table(items: Path) -> pl.DataFrame:
    frame = pl.from_arrow(read_table(items))
    assert isinstance(frame, pl.DataFrame)
    return frame


def test_a_scan_collects_what_read_table_reads(items: Path, table: pl.DataFrame) -> None:
    frame = scan_msgpack(items, Item).collect()
    assert_frame_equal(frame, table)
    assert frame.schema == polars_schema(Item)
    assert frame["id"].to_list() == list(range(RECORDS))


def test_the_schema_is_known_before_anything_is_read(tmp_path: Path) -> None:
    path = tmp_path / "broken.msgpack"
    path.write_bytes(b"\xc1" * 10)
    lazy = scan_msgpack(path, Item)  # nothing read yet: the error waits for collect()
    assert lazy.collect_schema().names() == [f.name for f in dataclasses.fields(Item)]
    with pytest.raises(DecodeError):
        lazy.collect()


def test_read_msgpack_is_the_collected_scan(items: Path, table: pl.DataFrame) -> None:
    assert_frame_equal(read_msgpack(items, Item), table)


def test_only_the_selected_columns_are_built(tmp_path: Path) -> None:
    # Arrow cannot hold 2**64 - 1 in an int64 column: only a scan that builds `line` fails.
    path = tmp_path / "wide.msgpack"
    path.write_bytes(rec(*item_values(id=0)) + rec(*item_values(id=1, line=2**64 - 1)))
    lazy = scan_msgpack(path, Item)
    assert lazy.select("id", "value").collect()["id"].to_list() == [0, 1]
    assert lazy.select(pl.len()).collect().item() == 2
    with pytest.raises(RecordError, match=r"record 1 at byte \d+: .*line"):
        lazy.collect()


def test_a_filter_in_the_scan_is_exact(items: Path, table: pl.DataFrame) -> None:
    lazy = scan_msgpack(items, Item)
    wanted = (pl.col("value") > 500.0) & (pl.col("filename").str.starts_with("A").not_())
    got = lazy.filter(wanted).select("id", "path").collect()
    assert_frame_equal(got, table.filter(wanted).select("id", "path"))
    assert 0 < got.height < RECORDS


def test_head_stops_reading(tmp_path: Path) -> None:
    # A break after the 10th record: a head of 5 never reaches it, one of 20 does.
    path = tmp_path / "cut.msgpack"
    path.write_bytes(b"".join(rec(*item_values(id=i)) for i in range(10)) + b"\xc1")
    lazy = scan_msgpack(path, Item)
    assert lazy.head(5).collect()["id"].to_list() == [0, 1, 2, 3, 4]
    assert lazy.select("id").head(5).collect()["id"].to_list() == [0, 1, 2, 3, 4]
    with pytest.raises(DecodeError) as caught:
        lazy.head(20).collect()
    assert (caught.value.index, caught.value.source) == (10, str(path))


def test_batch_size_is_honoured(items: Path) -> None:
    frame = scan_msgpack(items, Item, batch_size=700).collect()
    assert frame.height == RECORDS
    assert frame["id"].n_chunks() == 5  # 4 x 700 + 200


def test_a_glob_and_a_list_read_each_file_in_order(tmp_path: Path) -> None:
    for number in range(3):
        generate(tmp_path / f"part-{number}.msgpack", 10 + number, seed=number)
    expected = pl.concat(
        [read_msgpack(tmp_path / f"part-{n}.msgpack", Item) for n in range(3)], rechunk=True
    )
    assert_frame_equal(read_msgpack(str(tmp_path / "part-*.msgpack"), Item), expected)
    listed = [tmp_path / f"part-{n}.msgpack" for n in (2, 0)]
    assert read_msgpack(listed, Item).height == 12 + 10
    with pytest.raises(FileNotFoundError, match="no files match"):
        scan_msgpack(str(tmp_path / "nothing-*.msgpack"), Item)


def test_a_file_s_error_names_its_record_offset_field_and_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    first.write_bytes(rec(*item_values(id=0)))
    good = rec(*item_values(id=1))
    second.write_bytes(good + rec(*item_values(id=2, filename=3)))
    with pytest.raises(RecordError) as caught:
        read_msgpack([first, second], Item)
    error = caught.value
    assert (error.index, error.offset, error.source) == (1, len(good), str(second))
    assert "`filename`" in str(error)
    assert str(error).startswith(f"{second}: record 1 at byte {len(good)}: ")


def test_a_truncated_file_raises_after_nothing_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "cut.msgpack"
    data = rec(*item_values(id=0)) + rec(*item_values(id=1))
    path.write_bytes(data[:-3])
    with pytest.raises(TruncatedStreamError) as caught:
        read_msgpack(path, Item)
    assert (caught.value.index, caught.value.source) == (1, str(path))
    # Polars keeps no partial result: the rows before the break come from a head of them.
    assert scan_msgpack(path, Item).head(1).collect()["id"].to_list() == [0]


def test_skip_mode_keeps_the_sequential_rows(tmp_path: Path, caplog: Any) -> None:
    path = tmp_path / "mixed.msgpack"
    path.write_bytes(
        rec(*item_values(id=0)) + rec(*item_values(id=1, value="x")) + rec(*item_values(id=2))
    )
    frame = read_msgpack(path, Item, on_error="skip")
    assert frame["id"].to_list() == [0, 2]
    assert "skipped 1 record" in caplog.text


@pytest.mark.parametrize("name", EVENT_FILES)
def test_every_encoder_s_nested_events(name: str) -> None:
    frame = read_msgpack(DATA / name, Event)
    events = expected_events()
    assert frame["id"].to_list() == [e.id for e in events]
    assert frame["timestamp"].to_list() == [e.timestamp for e in events]
    assert frame.schema["inner"] == pl.Struct
    assert frame["inner"].to_list() == [dataclasses.asdict(e.inner) for e in events]
    assert frame.schema["attrs"] == pl.Map(pl.String, pl.Int64)
    assert frame["attrs"].to_list() == [e.attrs for e in events]


def test_untyped_records_get_the_columns_convert_gives_parquet(tmp_path: Path) -> None:
    path = tmp_path / "maps.msgpack"
    records: list[dict[str, Any]] = [
        {"host": "a", "n": 1, "tags": ["x"], "at": {"lat": 1.5}},
        {"host": "b", "n": None, "tags": [], "at": {"lat": 2.5}, "late": True},
    ]
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    convert(path, tmp_path / "maps.parquet", "parquet", record_type=None)
    frame = read_msgpack(path)
    assert_frame_equal(frame, pl.read_parquet(tmp_path / "maps.parquet"))
    assert frame["late"].to_list() == [None, True]


def test_untyped_values_that_do_not_mix_are_a_json_column_polars_queries(tmp_path: Path) -> None:
    path = tmp_path / "mixed.msgpack"
    path.write_bytes(msgpack.packb({"v": 1, "n": 1}) + msgpack.packb({"v": {"k": "one"}, "n": 2}))
    scan = scan_msgpack(path)
    assert scan.collect_schema()["v"] == pl.Extension("arrow.json", pl.String(), "")
    text = pl.col("v").ext.storage()
    assert scan.select(text).collect()["v"].to_list() == ["1", '{"k":"one"}']
    found = scan.filter(text.str.json_path_match("$.k") == "one").select("n").collect()
    assert found["n"].to_list() == [2]


def test_infer_from_the_first_records_then_refuse_a_misfit(tmp_path: Path) -> None:
    path = tmp_path / "later.msgpack"
    path.write_bytes(msgpack.packb({"v": 1}) + msgpack.packb({"v": 2, "w": 3}))
    assert read_msgpack(path)["w"].to_list() == [None, 3]
    with pytest.raises(RecordError, match="record 1"):
        read_msgpack(path, infer_from=1)


def test_compressed_files_are_read(tmp_path: Path, items: Path, table: pl.DataFrame) -> None:
    path = tmp_path / "items.msgpack.gz"
    path.write_bytes(gzip.compress(items.read_bytes()))
    assert_frame_equal(read_msgpack(path, Item, workers=2), table)


def test_workers_read_ranges_with_the_sequential_result(
    splits: list[int], items: Path, table: pl.DataFrame
) -> None:
    frame = read_msgpack(items, Item, workers=2, blocksize=10_000)
    assert_frame_equal(frame, table)
    assert len(splits) == 1  # really read by worker processes, in ranges
    assert splits[0] > 2
    splits.clear()
    assert scan_msgpack(items, Item, workers=2, blocksize=10_000).head(3).collect().height == 3
    assert splits == []  # a head stops early in this process instead


def test_bad_arguments_are_refused_at_the_call(items: Path) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        scan_msgpack(items, Item, batch_size=0)
    with pytest.raises(ValueError, match="follow"):
        scan_msgpack(items, Item, follow=True)
    with pytest.raises(ValueError, match="no paths"):
        scan_msgpack([], Item)


@dataclasses.dataclass
class Reading:
    at: dt.datetime
    values: list[int]
    note: str | None


def test_timestamps_lists_and_nulls(tmp_path: Path) -> None:
    path = tmp_path / "readings.msgpack"
    when = dt.datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    path.write_bytes(
        msgpack.packb([when.isoformat(), [1, 2], None]) + msgpack.packb([when.isoformat(), [], "x"])
    )
    frame = read_msgpack(path, Reading)
    assert frame.schema["at"] == pl.Datetime("us", "UTC")
    assert frame["values"].to_list() == [[1, 2], []]
    assert frame["note"].to_list() == [None, "x"]


@settings(max_examples=examples(ci=40, local=15), deadline=None)
@given(
    columns=st.lists(st.sampled_from(["id", "line", "value", "path"]), unique=True, max_size=3),
    below=st.floats(0.0, 1000.0),
    limit=st.none() | st.integers(0, RECORDS + 5),
    batch_size=st.integers(1, 5000),
)
def test_any_query_equals_it_on_the_whole_table(
    items: Path,
    table: pl.DataFrame,
    columns: list[str],
    below: float,
    limit: int | None,
    batch_size: int,
) -> None:
    def query(frame: pl.LazyFrame) -> pl.LazyFrame:
        return frame.filter(pl.col("value") < below).select(columns or ["id"])

    lazy = query(scan_msgpack(items, Item, batch_size=batch_size))
    expected = query(table.lazy())
    if limit is not None:
        lazy, expected = lazy.head(limit), expected.head(limit)
    assert_frame_equal(lazy.collect(), expected.collect())


def test_a_scan_can_be_collected_twice(items: Path) -> None:
    lazy = scan_msgpack(items, Item).select(pl.col("id").sum())
    assert lazy.collect().item() == lazy.collect().item() == sum(range(RECORDS))


@dataclasses.dataclass
class Tagged:
    tags: dict[str, int]


def test_maps_become_map_columns(tmp_path: Path) -> None:
    path = tmp_path / "tags.msgpack"
    path.write_bytes(msgpack.packb([{"a": 1, "b": 2}]) + msgpack.packb([{}]))
    frame = read_msgpack(path, Tagged)
    assert frame.schema == polars_schema(Tagged)
    assert frame.schema["tags"] == pl.Map(pl.String, pl.Int64)
    assert frame["tags"].to_list() == [{"a": 1, "b": 2}, {}]


def test_the_scan_takes_what_polars_hands_it(items: Path, table: pl.DataFrame) -> None:
    # Called as Polars calls it (columns, filter, row limit, batch size), in this process.
    scan = _Scan((str(items),), Item, tuple(table.columns), ReadOptions(), None, None, None)
    assert_frame_equal(pl.concat(scan(None, None, None, None)), table)
    [*counted] = scan([], None, None, 1000)  # no column: one, for the rows
    assert sum(frame.height for frame in counted) == RECORDS
    assert {tuple(frame.columns) for frame in counted} == {("id",)}
    wanted = pl.col("value") > 500
    got = pl.concat(scan(["id"], wanted, 7, 10))
    assert_frame_equal(got, table.filter(wanted).select("id").head(7))
    assert list(scan(None, None, 0, None)) == []


def test_the_streaming_engine_and_a_sink(tmp_path: Path, items: Path, table: pl.DataFrame) -> None:
    # Polars' streaming engine pulls the scan's batches as it goes: a file to Parquet in
    # bounded memory, and a head that stops early there too.
    lazy = scan_msgpack(items, Item, batch_size=500)
    lazy.filter(pl.col("line") % 3 == 0).sink_parquet(tmp_path / "out.parquet")
    expected = table.filter(pl.col("line") % 3 == 0)
    assert_frame_equal(pl.read_parquet(tmp_path / "out.parquet"), expected)
    streamed = lazy.select("id").head(4).collect(engine="streaming")
    assert streamed["id"].to_list() == [0, 1, 2, 3]


def test_include_file_paths_names_each_row_s_file(tmp_path: Path) -> None:
    for number in range(3):
        generate(tmp_path / f"part-{number}.msgpack", 5 + number, seed=number)
    lazy = scan_msgpack(str(tmp_path / "part-*.msgpack"), Item, include_file_paths="file")
    assert lazy.collect_schema()["file"] == pl.String
    frame = lazy.collect()
    assert frame.columns[-1] == "file"
    names = [str(tmp_path / f"part-{n}.msgpack") for n in range(3)]
    assert frame["file"].to_list() == [names[0]] * 5 + [names[1]] * 6 + [names[2]] * 7
    # The column in a filter, alone, and not at all.
    picked = lazy.filter(pl.col("file").str.ends_with("-1.msgpack")).select("id").collect()
    assert picked["id"].to_list() == read_msgpack(names[1], Item)["id"].to_list()
    assert lazy.select("file").unique(maintain_order=True).collect()["file"].to_list() == names
    assert lazy.select(pl.len()).collect().item() == 18
    assert lazy.select("id").collect().columns == ["id"]
    assert read_msgpack(names[0], Item, include_file_paths="f").height == 5
    with pytest.raises(ValueError, match="names a field"):
        scan_msgpack(names[0], Item, include_file_paths="id")
