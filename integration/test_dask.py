"""msgpack_reader_py.dask end to end: a process cluster, fsspec's memory filesystem, the extras."""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import json
import math
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import distributed
import fsspec
import msgpack
import msgspec
import pandas as pd
import pyarrow as pa
import pytest

import msgpack_reader_py
from msgpack_reader_py import (
    DecodeError,
    Item,
    ReaderError,
    ReadOptions,
    StreamingReader,
    TruncatedStreamError,
    generate,
    get_iter,
    pack_items,
)
from msgpack_reader_py import dask as dask_module
from msgpack_reader_py._analysis.inferred import files_type
from msgpack_reader_py._arrow.reader import read_batches, read_table
from msgpack_reader_py._base.ext import fluentd_event_time
from msgpack_reader_py._base.extras import MissingExtraError
from msgpack_reader_py.dask import _frame, open_files, pandas_dtypes, read_bag, read_dataframe
from tests.reference import offsets_of

TIMEOUT = 60
SIZES = (1000, 3000, 0, 2000, 1500, 2500, 1200, 1800)  # one file per size, seeded by position
FIELDS = [field.name for field in dataclasses.fields(Item)]
ITEM_DTYPE_NAMES = {
    "id": "int64",
    "process_id": "int64",
    "thread_id": "int64",
    "timestamp_ns": "int64",
    "line": "int64",
    "value": "float64",
    "filename": "string",
    "path": "string",
}
EXTRAS = (
    "pyarrow",
    "pandas",
    "dask",
    "distributed",
    "fsspec",
    "tqdm",
    "polars",
    "ray",
    "duckdb",
    "zstandard",
    "pyspark",
    "py4j",
)


class ItemRecord(NamedTuple):
    """An item's fields as a user's own NamedTuple (importable by the workers)."""

    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str


@dataclass(frozen=True)
class ItemData:
    """An item's fields as a user's own frozen dataclass (importable by the workers)."""

    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str


@dataclass
class Nullable:
    """Every nullable column type a record can have."""

    count: int | None
    ratio: float | None
    flag: bool | None
    label: str | None


@dataclass
class Blob:
    """Binary fields, one of them nullable."""

    key: int
    payload: bytes
    extra: bytes | None


Reader = Callable[[str], Any]


def frame_reader(urlpath: str) -> Any:
    """The lazy frame of ``urlpath``'s items."""
    return read_dataframe(urlpath)


def bag_reader(urlpath: str) -> Any:
    """The lazy bag of ``urlpath``'s items."""
    return read_bag(urlpath)


READERS = pytest.mark.parametrize("read", [frame_reader, bag_reader], ids=["dataframe", "bag"])


def read_all(paths: Sequence[str | Path], record_type: Any = Item) -> list[Any]:
    """The records of ``paths`` in turn, read in this process."""
    records: list[Any] = []
    for path in paths:
        with StreamingReader(path, record_type) as reader:
            records.extend(reader)
    return records


def frame_of(items: Sequence[Item]) -> pd.DataFrame:
    """``items`` as the frame a single-process read gives."""
    rows = [dataclasses.astuple(item) for item in items]
    frame: pd.DataFrame = pd.DataFrame(rows, columns=FIELDS).astype(pandas_dtypes(Item))
    return frame


def dtype_names(dtypes: pd.Series[Any]) -> dict[str, str]:
    """Each column's dtype as pandas prints it: ``int64``, ``Int64``, ``string``, ``object``."""
    return {str(name): str(dtype) for name, dtype in dtypes.items()}


# --- a process cluster ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def item_paths(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Eight generated files (one empty), in sorted order."""
    directory = tmp_path_factory.mktemp("items")
    paths = [directory / f"part-{seed}.msgpack" for seed in range(len(SIZES))]
    for seed, (path, size) in enumerate(zip(paths, SIZES, strict=True)):
        generate(path, size, seed=seed)
    assert paths == sorted(paths)
    return paths


@pytest.fixture(scope="module")
def item_items(item_paths: list[Path]) -> list[Item]:
    """The records of every file, read in this process, in file order."""
    return read_all(item_paths)


def test_read_dataframe_on_a_cluster_matches_a_single_process_read(
    client: distributed.Client, item_paths: list[Path], item_items: list[Item]
) -> None:
    df = read_dataframe(str(item_paths[0].parent / "*.msgpack"))
    assert df.npartitions == len(item_paths)
    assert list(df.columns) == FIELDS
    assert df.dtypes.to_dict() == pandas_dtypes(Item)
    assert dtype_names(df.dtypes) == ITEM_DTYPE_NAMES
    with distributed.get_task_stream(client) as stream:
        computed = df.compute(scheduler=client)
        lengths = df.map_partitions(len).compute(scheduler=client)
    workers = {task["worker"] for task in stream.data}
    assert workers
    assert workers <= set(client.scheduler_info()["workers"])
    assert list(lengths) == list(SIZES)  # one partition per file, in sorted file order
    assert computed.dtypes.to_dict() == pandas_dtypes(Item)
    assert dtype_names(computed.dtypes) == ITEM_DTYPE_NAMES
    pd.testing.assert_frame_equal(computed.reset_index(drop=True), frame_of(item_items))


@dataclass
class Exact:
    id: int
    at: msgpack.Timestamp


def test_a_timestamp_keeps_its_nanoseconds_on_a_cluster(
    client: distributed.Client, tmp_path: Path
) -> None:
    stamps = [msgpack.Timestamp(1730374586, 108998696 + i) for i in range(3)]  # 1 ns apart
    path = tmp_path / "exact.msgpack"
    path.write_bytes(b"".join(msgpack.packb([i, t]) for i, t in enumerate(stamps)))
    computed = read_dataframe(str(path), Exact).compute(scheduler=client)
    assert str(computed.dtypes["at"]) == "datetime64[ns, UTC]"
    assert [t.value for t in computed["at"]] == [t.to_unix_nano() for t in stamps]


def test_aggregates_on_a_cluster_match_a_single_process_read(
    client: distributed.Client, item_paths: list[Path], item_items: list[Item]
) -> None:
    df = read_dataframe(str(item_paths[0].parent / "*.msgpack"))
    count = df.id.count().compute(scheduler=client)
    sum_of_ids = df.id.sum().compute(scheduler=client)
    mean_value = df.value.mean().compute(scheduler=client)
    assert count == len(item_items)
    assert sum_of_ids == sum(item.id for item in item_items)
    expected_mean = math.fsum(item.value for item in item_items) / len(item_items)
    assert mean_value == pytest.approx(expected_mean, rel=1e-12)


def test_read_dataframe_of_a_list_of_paths_keeps_the_list_order(
    client: distributed.Client, item_paths: list[Path]
) -> None:
    paths = list(reversed(item_paths))
    df = read_dataframe([str(path) for path in paths])
    assert df.npartitions == len(paths)
    computed = df.compute(scheduler=client)
    assert computed.dtypes.to_dict() == pandas_dtypes(Item)
    pd.testing.assert_frame_equal(computed.reset_index(drop=True), frame_of(read_all(paths)))


def test_read_dataframe_of_a_single_path(
    client: distributed.Client, item_paths: list[Path]
) -> None:
    path = item_paths[1]
    df = read_dataframe(str(path))
    assert df.npartitions == 1
    computed = df.compute(scheduler=client)
    assert len(computed) == SIZES[1]
    pd.testing.assert_frame_equal(computed.reset_index(drop=True), frame_of(read_all([path])))


@pytest.mark.parametrize("record_type", [Item, ItemRecord, ItemData])
def test_read_bag_on_a_cluster_matches_a_single_process_read(
    client: distributed.Client, item_paths: list[Path], record_type: type[Any]
) -> None:
    bag = read_bag(str(item_paths[0].parent / "*.msgpack"), record_type)
    assert bag.npartitions == len(item_paths)
    records = bag.compute(scheduler=client)
    assert records == read_all(item_paths, record_type)
    assert len(records) == sum(SIZES)
    assert all(type(record) is record_type for record in records)


class Click(msgspec.Struct, tag="click"):
    """One kind of event (importable by the workers)."""

    x: int
    y: int


@dataclass
class Key:
    """Another kind, told by a Literal field."""

    type: Literal["key"]
    code: str


def event(number: int) -> Any:
    """Event ``number``, a kind and a shape by its number."""
    if number % 3 == 0:
        return {"type": "key", "code": f"k{number}"} if number % 2 else ["key", f"k{number}"]
    return ["click", number, -number] if number % 2 else {"type": "click", "x": number, "y": 0}


def test_kinds_on_a_cluster_one_table_and_a_bag_of_each_kind(
    client: distributed.Client, tmp_path: Path
) -> None:
    numbers = [range(50), range(50, 51), range(51, 120)]
    for part, numbered in enumerate(numbers):
        (tmp_path / f"{part}.msgpack").write_bytes(
            b"".join(msgpack.packb(event(n)) for n in numbered)
        )
    pattern = str(tmp_path / "*.msgpack")
    df = read_dataframe(pattern, Click | Key)
    assert list(df.columns) == ["type", "x", "y", "code"]
    assert dtype_names(df.dtypes) == {
        "type": "string",
        "x": "Int64",
        "y": "Int64",
        "code": "string",
    }
    computed = df.compute(scheduler=client).reset_index(drop=True)
    expected = pd.concat(
        [read_table(tmp_path / f"{part}.msgpack", Click | Key).to_pandas() for part in range(3)]
    ).reset_index(drop=True)
    assert computed["type"].tolist() == expected["type"].tolist()
    assert computed["code"].dropna().tolist() == [f"k{n}" for n in range(120) if n % 3 == 0]
    assert int(computed["x"].sum()) == sum(n for n in range(120) if n % 3)
    records = read_bag(pattern, Click | Key).compute(scheduler=client)
    assert records == read_all(sorted(tmp_path.glob("*.msgpack")), Click | Key)
    assert {type(r) for r in records} == {Click, Key}


@dataclass
class LogLine:
    """A Fluentd entry's record (importable by the workers)."""

    message: str
    level: str
    count: int


class FluentdEntry(NamedTuple):
    """``[EventTime, {record}]``, EventTime read by the ``fluentd_event_time`` hook."""

    time: datetime.datetime
    record: LogLine


FLUENTD = Path(__file__).resolve().parents[1] / "tests" / "encoders" / "data" / "go_fluentd.msgpack"


def test_a_fluentd_log_reads_on_a_cluster_with_its_ext_hook(
    client: distributed.Client, tmp_path: Path
) -> None:
    for part in range(2):
        (tmp_path / f"{part}.msgpack").write_bytes(FLUENTD.read_bytes())
    pattern = str(tmp_path / "*.msgpack")
    single = list(StreamingReader(FLUENTD, FluentdEntry, ext_hook=fluentd_event_time))
    bag = read_bag(pattern, FluentdEntry, ext_hook=fluentd_event_time)
    assert bag.compute(scheduler=client) == single * 2
    frame = read_dataframe(pattern, FluentdEntry, ext_hook=fluentd_event_time)
    computed = frame.compute(scheduler=client)
    assert list(computed["time"]) == [entry.time for entry in single] * 2
    with pytest.raises(ReaderError, match="expected datetime, got extension type 0"):
        read_bag(pattern, FluentdEntry).compute(scheduler=client)


def test_skip_mode_on_a_cluster_passes_over_what_is_not_a_record(
    client: distributed.Client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    items = list(get_iter(30))
    data = pack_items(items[:10]) + msgpack.packb("not an item") + pack_items(items[10:])
    (tmp_path / "a.msgpack").write_bytes(data)
    pattern = str(tmp_path / "*.msgpack")
    with pytest.raises(ReaderError, match="record 10 at byte"):
        read_dataframe(pattern).compute(scheduler=client)
    frame = read_dataframe(pattern, on_error="skip").compute(scheduler=client)
    assert list(frame["id"]) == [item.id for item in items]
    assert read_bag(pattern, on_error="skip").compute(scheduler=client) == items
    # In this process, where a partition is read too, what was skipped is said.
    with caplog.at_level("WARNING", logger="msgpack_reader_py"):
        read_bag(pattern, on_error="skip").compute(scheduler="sync")
    assert (
        "a.msgpack: skipped 1 record that is not a record of the type; the first: " in caplog.text
    )


# --- a corrupt file among good ones, on the cluster ----------------------------------------------


class Damage(NamedTuple):
    pattern: str
    path: Path
    failing_index: int
    offset: int


def damaged_directory(tmp_path: Path, damage: Callable[[bytearray, list[int]], int]) -> Damage:
    """Three good files and, second in sorted order, one that ``damage`` breaks.

    ``damage(data, offsets)`` changes the bad file's bytes in place and returns the index of
    the record it broke; ``offsets`` are its records' offsets and then its length.
    """
    for seed, name in enumerate(["a.msgpack", "c.msgpack", "d.msgpack"]):
        generate(tmp_path / name, 1000 + 100 * seed, seed=seed)
    items = list(get_iter(1500, seed=99))
    offsets = offsets_of(items)
    data = bytearray(pack_items(items))
    index = damage(data, offsets)
    bad = tmp_path / "b.msgpack"
    bad.write_bytes(data)
    return Damage(str(tmp_path / "*.msgpack"), bad, index, offsets[index])


def truncate_last_record(data: bytearray, offsets: list[int]) -> int:
    last = len(offsets) - 2
    del data[offsets[last] + (offsets[last + 1] - offsets[last]) // 2 :]
    return last


def reserved_byte_at_record_700(data: bytearray, offsets: list[int]) -> int:
    data[offsets[700]] = 0xC1
    return 700


def assert_names_the_file(error: ReaderError, source: str, index: int, offset: int) -> None:
    assert error.source == source
    assert (error.index, error.offset) == (index, offset)
    assert str(error).startswith(f"{source}: record {index} at byte {offset}: ")


@READERS
@pytest.mark.parametrize(
    ("damage_of", "error_class", "reason"),
    [
        (truncate_last_record, TruncatedStreamError, "stream ends inside a record"),
        (reserved_byte_at_record_700, DecodeError, "0xc1"),
    ],
    ids=["truncated", "invalid byte"],
)
def test_a_damaged_file_among_good_ones_fails_naming_it(
    client: distributed.Client,
    tmp_path: Path,
    read: Reader,
    damage_of: Callable[[bytearray, list[int]], int],
    error_class: type[ReaderError],
    reason: str,
) -> None:
    damage = damaged_directory(tmp_path, damage_of)
    collection = read(damage.pattern)
    assert collection.npartitions == 4
    with pytest.raises(error_class) as info:
        collection.compute(scheduler=client)
    assert type(info.value) is error_class  # the class itself crossed the process boundary
    assert_names_the_file(info.value, str(damage.path), damage.failing_index, damage.offset)
    assert reason in info.value.reason


# --- fsspec's memory filesystem, on the threaded scheduler ---------------------------------------


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh ``memory://`` directory, removed afterwards."""
    fs = fsspec.filesystem("memory")
    root = f"memory://msgpack-reader-py-test-{uuid.uuid4().hex}"
    yield root
    if fs.exists(root):
        fs.rm(root, recursive=True)
    assert not fs.exists(root)


def write_url(url: str, data: bytes) -> None:
    with fsspec.open(url, "wb") as out:
        out.write(data)


def test_memory_filesystem_dataframe_and_bag(memory_root: str) -> None:
    sizes = [300, 0, 500]
    expected: list[Item] = []
    for seed, size in enumerate(sizes):
        items = list(get_iter(size, seed=seed))
        write_url(f"{memory_root}/part-{seed}.msgpack", pack_items(items))
        expected.extend(items)
    pattern = f"{memory_root}/*.msgpack"

    df = read_dataframe(pattern)
    assert df.npartitions == len(sizes)
    assert df.dtypes.to_dict() == pandas_dtypes(Item)
    computed = df.compute(scheduler="threads")
    assert computed.dtypes.to_dict() == pandas_dtypes(Item)
    pd.testing.assert_frame_equal(computed.reset_index(drop=True), frame_of(expected))

    bag = read_bag(pattern)
    assert bag.npartitions == len(sizes)
    assert bag.compute(scheduler="threads") == expected


@READERS
def test_memory_filesystem_error_names_the_url(memory_root: str, read: Reader) -> None:
    good = pack_items(get_iter(200, seed=1))
    items = list(get_iter(300, seed=2))
    offsets = offsets_of(items)
    bad = bytearray(pack_items(items))
    bad[offsets[123]] = 0xC1
    write_url(f"{memory_root}/a.msgpack", good)
    write_url(f"{memory_root}/b.msgpack", bytes(bad))
    with pytest.raises(DecodeError) as info:
        read(f"{memory_root}/*.msgpack").compute(scheduler="threads")
    source = info.value.source
    assert source is not None
    assert source.startswith("memory://")
    assert source.endswith("/b.msgpack")
    with fsspec.open(source, "rb") as stream:  # the name is a URL that opens that file
        assert stream.read() == bytes(bad)
    assert_names_the_file(info.value, source, 123, offsets[123])


# --- listing files --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call", [open_files, read_bag, read_dataframe], ids=["open_files", "read_bag", "read_dataframe"]
)
def test_a_glob_matching_nothing_raises_file_not_found(
    tmp_path: Path, call: Callable[[str], object]
) -> None:
    generate(tmp_path / "a.msgpack", 10)
    pattern = str(tmp_path / "*.nothing")
    with pytest.raises(FileNotFoundError) as info:
        call(pattern)
    assert pattern in str(info.value)


def test_a_glob_in_a_list_matching_nothing_raises_file_not_found(tmp_path: Path) -> None:
    # A misspelt glob among good ones must not silently drop its files from the job.
    generate(tmp_path / "a.msgpack", 10)
    missing = str(tmp_path / "typo" / "*.msgpack")
    with pytest.raises(FileNotFoundError) as info:
        open_files([str(tmp_path / "*.msgpack"), missing])
    assert missing in str(info.value)


def test_a_glob_lists_only_files(tmp_path: Path) -> None:
    # A directory whose name matches the glob is not a file to read.
    paths = [tmp_path / "a.msgpack", tmp_path / "c.msgpack"]
    for seed, path in enumerate(paths):
        generate(path, 10 + seed, seed=seed)
    (tmp_path / "b.msgpack").mkdir()
    generate(tmp_path / "b.msgpack" / "inner.msgpack", 5)
    pattern = str(tmp_path / "*.msgpack")
    assert [file.path for file in open_files(pattern)] == [str(path) for path in paths]
    assert read_bag(pattern).compute(scheduler="threads") == read_all(paths)


def test_a_list_of_a_glob_and_a_path_keeps_its_order(tmp_path: Path) -> None:
    for seed, name in enumerate(["z.msgpack", "b.msgpack", "a.msgpack"]):
        generate(tmp_path / name, 50 + seed, seed=seed)
    single = tmp_path / "single.bin"
    generate(single, 20, seed=7)
    urlpath = [str(single), str(tmp_path / "*.msgpack")]
    expected_paths = [
        single,
        tmp_path / "a.msgpack",
        tmp_path / "b.msgpack",
        tmp_path / "z.msgpack",
    ]
    assert [file.path for file in open_files(urlpath)] == [str(p) for p in expected_paths]
    bag = read_bag(urlpath)
    assert bag.npartitions == len(expected_paths)
    assert bag.compute(scheduler="threads") == read_all(expected_paths)


@pytest.mark.parametrize("pattern", ["part-?.msgpack", "part-[13].msgpack", "part-*.msgpack"])
def test_every_glob_form_is_expanded(tmp_path: Path, pattern: str) -> None:
    """``?`` and ``[...]`` are globs too, not literal file names."""
    paths = [tmp_path / f"part-{seed}.msgpack" for seed in range(4)]
    for seed, path in enumerate(paths):
        generate(path, 10 + seed, seed=seed)
    wanted = [paths[1], paths[3]] if "[" in pattern else paths
    assert [file.path for file in open_files(str(tmp_path / pattern))] == [str(p) for p in wanted]
    assert len(read_dataframe(str(tmp_path / pattern))) == len(read_all(wanted))


def test_a_missing_plain_path_fails_when_read_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.msgpack"
    frame = read_dataframe([str(missing)])
    with pytest.raises(FileNotFoundError) as info:
        frame.compute(scheduler="threads")
    assert str(missing) in str(info.value)


# --- what a partition builds ---------------------------------------------------------------------


def test_a_partition_builds_only_the_projected_columns(tmp_path: Path) -> None:
    """Dask hands the partition function the columns a computation uses."""
    path = tmp_path / "a.msgpack"
    generate(path, 300, seed=3)
    (file,) = open_files(str(path))
    items = read_all([path])
    frame = _frame(file, Item, ReadOptions(max_record_size=1 << 20), columns=["value", "id"])
    assert list(frame.columns) == ["value", "id"]
    assert dtype_names(frame.dtypes) == {"value": "float64", "id": "int64"}
    assert frame["id"].tolist() == [item.id for item in items]
    everything = _frame(file, Item, ReadOptions(max_record_size=1 << 20))
    assert list(everything.columns) == FIELDS


def test_a_partition_with_no_columns_still_counts_its_rows(tmp_path: Path) -> None:
    """``len(df)`` projects onto no column; the partition keeps its length all the same."""
    path = tmp_path / "a.msgpack"
    generate(path, 321, seed=4)
    (file,) = open_files(str(path))
    frame = _frame(file, Item, ReadOptions(max_record_size=1 << 20), columns=[])
    assert list(frame.columns) == []
    assert len(frame) == 321
    assert len(read_dataframe(str(path))) == 321


def test_dask_pushes_a_computation_s_columns_into_the_reader(
    monkeypatch: pytest.MonkeyPatch, item_paths: list[Path]
) -> None:
    """An aggregate of one column makes each partition build that column and no other."""
    asked: list[list[str] | None] = []

    def spy(*args: Any, columns: list[str] | None = None, **options: Any) -> Any:
        asked.append(columns)
        return read_batches(*args, columns=columns, **options)

    monkeypatch.setattr(dask_module, "read_batches", spy)
    frame = read_dataframe([str(p) for p in item_paths])
    total = frame["id"].sum().compute(scheduler="sync")
    assert total == sum(item.id for item in read_all(item_paths))
    assert asked == [["id"]] * len(item_paths)


def test_a_projected_computation_gives_the_full_frames_answer(item_paths: list[Path]) -> None:
    frame = read_dataframe([str(p) for p in item_paths])
    both = frame[["id", "value"]].compute(scheduler="threads")
    full = frame.compute(scheduler="threads")
    pd.testing.assert_frame_equal(both, full[["id", "value"]])


# --- nullable and binary columns ------------------------------------------------------------------

NULLABLE_ROWS: list[list[Any]] = [
    [1, 1.5, True, "one"],
    [None, None, None, None],
    [-7, -0.25, False, ""],
    [2**62, 3, None, "ünïcode"],
]


def test_nullable_fields_give_nullable_dtypes_and_missing_values(tmp_path: Path) -> None:
    (tmp_path / "a.msgpack").write_bytes(b"".join(msgpack.packb(r) for r in NULLABLE_ROWS[:2]))
    (tmp_path / "b.msgpack").write_bytes(b"".join(msgpack.packb(r) for r in NULLABLE_ROWS[2:]))
    pattern = str(tmp_path / "*.msgpack")
    names = {"count": "Int64", "ratio": "Float64", "flag": "boolean", "label": "string"}
    assert {name: str(dtype) for name, dtype in pandas_dtypes(Nullable).items()} == names

    df = read_dataframe(pattern, Nullable)
    assert df.dtypes.to_dict() == pandas_dtypes(Nullable)
    frame = df.compute(scheduler="threads")
    assert dtype_names(frame.dtypes) == names
    columns = {name: frame[name].tolist() for name in names}
    assert columns == {
        "count": [1, pd.NA, -7, 2**62],
        "ratio": [1.5, pd.NA, -0.25, 3.0],
        "flag": [True, pd.NA, False, pd.NA],
        "label": ["one", pd.NA, "", "ünïcode"],
    }
    assert frame.isna().sum().to_dict() == {"count": 1, "ratio": 1, "flag": 2, "label": 1}

    records = read_bag(pattern, Nullable).compute(scheduler="threads")
    assert records == [Nullable(*row) for row in NULLABLE_ROWS]


BLOB_ROWS: list[list[Any]] = [
    [0, b"\xff\x00\xfe", None],  # not UTF-8
    [1, b"text", b"more"],  # valid UTF-8, but bytes all the same
    [2, b"", b"\x80"],
]


def test_bytes_fields_stay_bytes(tmp_path: Path) -> None:
    (tmp_path / "a.msgpack").write_bytes(b"".join(msgpack.packb(r) for r in BLOB_ROWS))
    pattern = str(tmp_path / "*.msgpack")
    names = {"key": "int64", "payload": "object", "extra": "object"}
    assert {
        name: str(pd.api.types.pandas_dtype(d)) for name, d in pandas_dtypes(Blob).items()
    } == names

    df = read_dataframe(pattern, Blob)
    assert dtype_names(df.dtypes) == names
    frame = df.compute(scheduler="threads")
    assert dtype_names(frame.dtypes) == names
    assert frame["payload"].tolist() == [row[1] for row in BLOB_ROWS]
    assert frame["extra"].tolist() == [row[2] for row in BLOB_ROWS]
    assert read_bag(pattern, Blob).compute(scheduler="threads") == [Blob(*r) for r in BLOB_ROWS]


def test_nested_columns_hold_valid_arrays_lists_of_structs_of_nils_too(tmp_path: Path) -> None:
    """A nested column is its Arrow array as it was read: pandas 2's ArrowDtype casts a column
    to its own type, and pyarrow casts a list of structs of null fields to an invalid array."""
    records = [{"id": i, "odd": [None, [], i], "nils": [{"a": None}, None]} for i in range(5)]
    path = tmp_path / "nils.msgpack"
    path.write_bytes(b"".join(map(msgpack.packb, records)))
    record_type = files_type([str(path)], None, ReadOptions())
    frame = read_dataframe(str(path), record_type).compute(scheduler="sync")
    for name in ("odd", "nils"):
        assert isinstance(frame[name].dtype, pd.ArrowDtype)
        arrays: Any = frame[name].array
        pa.chunked_array(arrays).validate(full=True)
    assert frame["nils"].tolist() == [[{"a": None}, None]] * 5
    assert frame["odd"].tolist() == [[None, "[]", str(i)] for i in range(5)]


# --- the extras -----------------------------------------------------------------------------------


def run_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=cwd,
    )


def test_core_import_loads_no_extra() -> None:
    code = (
        "import json, sys\n"
        "import msgpack_reader_py, msgpack_reader_py.cli\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    result = run_python(code)
    assert (result.returncode, result.stderr) == (0, "")
    loaded = set(json.loads(result.stdout))
    assert "msgpack_reader_py" in loaded
    assert loaded.isdisjoint(EXTRAS), sorted(loaded.intersection(EXTRAS))


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("msgpack_reader_py:read_table", "pyarrow", "arrow"),
        ("msgpack_reader_py.dask", "dask", "dask"),
        ("msgpack_reader_py.dask", "pandas", "dask"),
        ("msgpack_reader_py.dask", "fsspec", "dask"),
        ("msgpack_reader_py.dask", "pyarrow", "dask"),
        ("msgpack_reader_py.polars", "polars", "polars"),
        ("msgpack_reader_py.ray", "ray", "ray"),
        ("msgpack_reader_py.spark", "pyspark", "spark"),
        ("msgpack_reader_py.spark", "pyarrow", "spark"),
    ],
)
def test_a_missing_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, module: str, blocked: str, extra: str
) -> None:
    # A module set to None in sys.modules cannot be imported: as if it were not installed.
    for name in [name for name in sys.modules if name.partition(".")[0] == blocked]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, blocked, None)
    path, _, attribute = module.partition(":")
    arrow = [f"msgpack_reader_py._arrow{name}" for name in ("", ".reader", ".schema")]
    for name in [path, *arrow]:  # imported again: the package's guard (_arrow) runs again
        if name != "msgpack_reader_py":
            monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.delitem(msgpack_reader_py.__dict__, attribute or "-", raising=False)
    with pytest.raises(MissingExtraError) as caught:
        getattr(importlib.import_module(path), attribute) if attribute else importlib.import_module(
            path
        )
    assert isinstance(caught.value, ModuleNotFoundError)
    assert caught.value.name == blocked
    message = str(caught.value)
    assert "\n" not in message
    # What to run, whether the package came from a clone or a wheel: pip install the package.
    assert message.endswith(
        f": pip install {blocked} (or install msgpack-reader-py with its '{extra}' extra)"
    )
    what = "the Arrow readers (read_table, read_batches, BatchReader, arrow_schema)"
    assert message.startswith(f"{what if attribute else path} needs {blocked}, which is not")


def test_cli_convert_to_parquet_without_pyarrow_fails_in_one_line(tmp_path: Path) -> None:
    source = tmp_path / "in.msgpack"
    generate(source, 100)
    out = tmp_path / "out.parquet"
    argv = ["convert", str(source), "--to", "parquet", "-o", str(out)]
    code = (
        "import sys\n"
        "sys.modules['pyarrow'] = None\n"
        "from msgpack_reader_py.cli import main\n"
        f"raise SystemExit(main({argv!r}))\n"
    )
    result = run_python(code)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "with its 'arrow' extra" in lines[0]
    assert not out.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.msgpack"]
