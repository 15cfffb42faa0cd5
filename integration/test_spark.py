"""msgpack_reader_py.spark on a real local Spark (``local[2]``, one session for the module):
files read in byte ranges proved where Spark plans the read give exactly the rows, order and
errors of ``read_table`` reading each file in turn. The reader's planning and partitions are
also run in this process, where many cuts are cheap to try (hypothesis)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import itertools
import json
import logging
import math
import pickle
import sys
import textwrap
import typing
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pyarrow as pa
import pyarrow.compute
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle
from pyspark.errors import AnalysisException, PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import CaseInsensitiveDict

from benchmarks import report
from benchmarks import spark as spark_benchmark
from integration.test_docs import ROOT, blocks, make_inputs, needs_spark
from msgpack_reader_py import (
    Item,
    ReaderError,
    ReadOptions,
    RecordError,
    UInt64,
    generate,
    get_iter,
    pack_items,
    read_table,
    write_index,
)
from msgpack_reader_py._analysis.inferred import files_type
from msgpack_reader_py._arrow.json_columns import storage_type
from msgpack_reader_py._base.options import OnError
from msgpack_reader_py._split.ranges import cut_file
from msgpack_reader_py._types.names import record_type_named
from msgpack_reader_py._types.shipping import Shipped
from msgpack_reader_py.spark import (
    OPTIONS,
    MsgpackDataSource,
    _name,
    _Part,
    _Reader,
    register,
    spark_schema,
)
from tests.encoders import DATA as ENCODED
from tests.encoders import EVENT_FILES, EXPECTED, Event, Inner
from tests.helpers import zstd_frames

ITEMS = list(get_iter(3000, seed=7))
DATA = pack_items(ITEMS)
_names = itertools.count()


@dataclasses.dataclass
class Carrier:
    """A record whose payload holds records of its own kind: a guess that lands in a payload
    finds a chain of them (the ranges here are proved, never guessed)."""

    name: str
    payload: bytes


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """One local Spark of two cores for the module (starting one takes seconds), its Python
    workers this interpreter, the msgpack source registered."""
    session = (
        SparkSession.builder.master("local[2]")
        .appName("msgpack-reader-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.sql.pyspark.worker.logging.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("OFF")  # a failing task's stack trace, expected here
    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


def write(directory: Path, data: bytes, suffix: str = ".msgpack") -> Path:
    path = directory / f"file{next(_names)}{suffix}"
    path.write_bytes(data)
    return path


def load(spark: SparkSession, paths: Any, **options: Any) -> DataFrame:
    reader = spark.read.format("msgpack")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(paths if isinstance(paths, str | list) else str(paths))


def rows(frame: DataFrame) -> list[dict[str, Any]]:
    """The frame's rows, as Arrow's ``to_pylist`` gives them (structs as dicts, maps as
    pairs, timestamps aware)."""
    table: pa.Table = frame.toArrow()
    return table.to_pylist()


def expected(table: pa.Table) -> list[dict[str, Any]]:
    """A table's rows as Spark holds them: a column of JSON text as its text."""
    stored = pa.schema([f.with_type(storage_type(f.type)) for f in table.schema])
    return table.cast(stored).to_pylist()


def sequential_error(path: Path, record_type: Any = Item, **keywords: Any) -> ReaderError:
    """The error ``read_table`` raises for ``path``, naming it, as a reader of many files does."""
    with pytest.raises(ReaderError) as raised:
        read_table(path, record_type, **keywords)
    return raised.value.in_source(str(path))


def assert_fails_with(failure: BaseException, error: ReaderError) -> None:
    """The job failed with the reader's own message: file, record index, byte offset, field."""
    assert isinstance(failure, PythonException)
    assert f"{type(error).__module__}.{type(error).__name__}: {error}" in str(failure)


def local_reader(paths: Any, **options: Any) -> _Reader:
    """The reader Spark would plan with, made here, sent as Spark sends it (cloudpickle)."""
    # As Spark hands them over: one path as "path", a list as "paths", in JSON.
    given = {"paths": json.dumps(paths)} if isinstance(paths, list) else {"path": paths}
    source = MsgpackDataSource(CaseInsensitiveDict({**given, **options}))
    reader = source.reader(source.schema())
    assert isinstance(reader, _Reader)
    dumps: Callable[[Any], bytes] = cloudpickle.dumps  # untyped in pyspark
    again = pickle.loads(dumps(reader))
    assert isinstance(again, _Reader)
    return again


def read_locally(reader: _Reader) -> tuple[list[_Part], pa.Table]:
    """Each partition read in turn, in this process: what Spark's tasks hand it."""
    parts = [part for part in reader.partitions() if isinstance(part, _Part)]
    batches = [batch for part in parts for batch in reader.read(pickle.loads(pickle.dumps(part)))]
    return parts, pa.Table.from_batches(batches, schema=reader.target)


def corrupt(items: list[Item], *at: int) -> bytes:
    """``items`` packed, the records at ``at`` valid MessagePack but not Items."""
    records = [msgpack.packb(item.to_list()) for item in items]
    for index in at:
        wrong = items[index].to_list()
        wrong[4] = "not a line"
        records[index] = msgpack.packb(wrong)
    return b"".join(records)


# --- on Spark -------------------------------------------------------------------------------


def test_a_big_file_in_several_partitions_is_read_table(
    spark: SparkSession, directory: Path
) -> None:
    path = directory / "big.msgpack"
    generate(path, 40_000, seed=3)
    frame = load(spark, path, type="item", blocksize=200_000)
    assert frame.schema == spark_schema(Item)
    assert frame.rdd.getNumPartitions() == -(-path.stat().st_size // 200_000) > 10
    table = read_table(path)
    assert rows(frame) == expected(table)
    aggregate = frame.groupBy().agg({"id": "sum", "value": "max", "*": "count"}).first()
    assert aggregate is not None
    assert aggregate["count(1)"] == 40_000
    assert aggregate["sum(id)"] == pa.compute.sum(table.column("id")).as_py()
    assert aggregate["max(value)"] == pa.compute.max(table.column("value")).as_py()


def test_payloads_of_records_of_the_same_kind_are_read_exactly(
    spark: SparkSession, directory: Path
) -> None:
    inner = b"".join(msgpack.packb([f"inner{i}", b""]) for i in range(40))
    records = [Carrier(f"outer{i}", inner) for i in range(30)]
    path = write(directory, b"".join(msgpack.packb([r.name, r.payload]) for r in records))
    register(spark, Carrier, name="msgpack_carriers")
    frame = spark.read.format("msgpack_carriers").option("type", "Carrier")
    got = frame.option("blocksize", 97).load(str(path))
    assert got.rdd.getNumPartitions() == len(records)  # one record starts in each range
    assert rows(got) == [dataclasses.asdict(record) for record in records]


@dataclasses.dataclass
class Exact:
    id: int
    at: msgpack.Timestamp


def test_a_timestamp_to_the_nanosecond_is_refused_by_name(
    spark: SparkSession, directory: Path
) -> None:
    """Spark's timestamps hold microseconds: a ``msgpack.Timestamp`` field would lose its
    nanoseconds there, so the read fails before a row is made, naming the field."""
    path = write(directory, msgpack.packb([1, msgpack.Timestamp(1, 1)]))
    register(spark, Exact, name="msgpack_exact")
    with pytest.raises(Exception, match=r"field `at`: a msgpack\.Timestamp field holds nanos"):
        spark.read.format("msgpack_exact").option("type", "Exact").load(str(path)).collect()


def test_an_inferred_timestamp_is_read_to_the_microsecond_or_refused_by_name(
    spark: SparkSession, directory: Path
) -> None:
    """Without a type, timestamps of whole microseconds are a timestamp column, every value
    exact; one with nanoseconds makes its field a msgpack.Timestamp, refused by name, never
    rounded."""
    stamps = [msgpack.Timestamp(1_700_000_000 + i, 1000 * i) for i in range(3)]
    path = write(
        directory, b"".join(msgpack.packb({"id": i, "at": s}) for i, s in enumerate(stamps))
    )
    got = rows(load(spark, path))
    assert [row["at"] for row in got] == [s.to_datetime() for s in stamps]
    late = write(directory, msgpack.packb({"id": 3, "at": msgpack.Timestamp(1, 1)}))
    with pytest.raises(Exception, match=r"field `at`: a msgpack\.Timestamp field holds nanos"):
        load(spark, [str(path), str(late)]).collect()


def test_a_users_types_from_a_module(spark: SparkSession, directory: Path) -> None:
    events = [event(i) for i in range(2000)]
    encoder = msgspec.msgpack.Encoder()
    path = write(directory, b"".join(encoder.encode(event) for event in events))
    frame = load(spark, path, type="tests.encoders:Event", blocksize=20_000)
    assert frame.rdd.getNumPartitions() > 5
    schema = frame.schema
    assert schema["inner"].dataType.simpleString() == "struct<name:string,level:bigint>"
    assert schema["tags"].dataType.simpleString() == "array<string>"
    assert schema["attrs"].dataType.simpleString() == "map<string,bigint>"
    assert schema["timestamp"].dataType.simpleString() == "timestamp"
    assert (schema["note"].nullable, schema["inner"].nullable) == (True, False)
    assert rows(frame) == expected(read_table(path, Event))
    # A .py file's path, as --type takes it: loaded in each process that reads.
    module = directory / f"records_{uuid.uuid4().hex}.py"
    module.write_text(
        textwrap.dedent(
            """
            import msgspec

            class Leaf(msgspec.Struct):
                name: str
                level: int | None = None

            class Record(msgspec.Struct, array_like=True):
                id: int
                leaf: Leaf
                tags: list[str]
            """
        )
    )
    values = [
        [i, {"name": f"l{i}", "level": i if i % 3 else None}, ["t"] * (i % 2)] for i in range(900)
    ]
    records = write(directory, b"".join(msgpack.packb(value) for value in values))
    named = f"{module}:Record"
    by_path = load(spark, records, type=named, blocksize=3000)
    assert by_path.rdd.getNumPartitions() > 3
    assert rows(by_path) == expected(read_table(records, record_type_named(named)))
    # What Go, Node, Java and Rust wrote, as arrays and as maps, through a glob.
    encoded = load(spark, str(ENCODED / "*_events_*.msgpack"), type="tests.encoders:Event")
    tables = [read_table(ENCODED / name, Event) for name in EVENT_FILES]
    assert rows(encoded) == expected(pa.concat_tables(tables))


def event(i: int) -> Event:
    """An event with something in every kind of field: nested, list, map, optional."""
    at = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    return Event(
        id=i,
        process_id=7,
        thread_id=8,
        timestamp=at + datetime.timedelta(seconds=i, microseconds=i),
        line=i,
        value=0.5 * i,
        filename="f",
        path="p",
        tags=["a"] * (i % 3),
        attrs={"k": i},
        inner=Inner(f"n{i}", i % 4),
        note=None if i % 2 else f"note{i}",
    )


def test_a_glob_a_list_a_directory_and_a_url(spark: SparkSession, directory: Path) -> None:
    folder = directory / "many"
    folder.mkdir()
    counts = {"b.msgpack": 900, "a.msgpack": 400, "c.msgpack": 0, "d.msgpack": 700}
    for seed, (name, count) in enumerate(counts.items()):
        generate(folder / name, count, seed=seed)
    write_index(folder / "b.msgpack", every=100)  # a sidecar index: never read as data
    (folder / "_SUCCESS").write_text("")  # hidden from a directory, as Spark's sources hide it
    ordered = sorted(counts)
    every = expected(pa.concat_tables([read_table(folder / name) for name in ordered]))
    for paths in (str(folder / "*.msgpack"), str(folder), f"file://{folder}"):
        assert rows(load(spark, paths, type="item", blocksize=10_000)) == every
    listed = [str(folder / "d.msgpack"), str(folder / "[ab].msgpack")]
    names = ["d.msgpack", "a.msgpack", "b.msgpack"]
    want = expected(pa.concat_tables([read_table(folder / n) for n in names]))
    assert rows(load(spark, listed, type="item", blocksize=10_000)) == want
    with pytest.raises(AnalysisException, match="no files match"):
        load(spark, str(folder / "absent-*.msgpack"), type="item")


def test_a_broken_file_fails_the_job_with_the_readers_error(
    spark: SparkSession, directory: Path
) -> None:
    at = len(ITEMS) * 3 // 4
    path = write(directory, corrupt(ITEMS, at))
    error = sequential_error(path)
    assert isinstance(error, RecordError)
    assert (error.index, error.offset) == (at, len(pack_items(ITEMS[:at])))
    assert "field `line`" in str(error)
    with pytest.raises(PythonException) as raised:
        load(spark, path, type="item", blocksize=len(DATA) // 6 + 1).collect()
    assert_fails_with(raised.value, error)
    truncated = write(directory, DATA[:-9])
    with pytest.raises(PythonException) as cut:
        load(spark, truncated, type="item", blocksize=len(DATA) // 6 + 1).count()
    assert_fails_with(cut.value, sequential_error(truncated))


def test_skip_mode_reads_what_a_skip_read_does_and_logs_the_count(
    spark: SparkSession, directory: Path
) -> None:
    bad = (100, 1700, 1701, 2900)
    path = write(directory, corrupt(ITEMS, *bad))
    table = read_table(path, on_error="skip")
    assert table.num_rows == len(ITEMS) - len(bad)
    marker = f"skipped-{uuid.uuid4().hex}"
    named = directory / f"{marker}.msgpack"
    path.rename(named)
    frame = load(spark, named, type="item", on_error="skip", blocksize=len(DATA) // 6 + 1)
    assert rows(frame) == expected(table)
    logs = spark.tvf.python_worker_logs().where(f"msg like '%{marker}%'").collect()
    counts = [int(str(row["msg"]).split(": skipped ")[1].split()[0]) for row in logs]
    assert sum(counts) == len(bad)
    assert {row["logger"] for row in logs} == {"msgpack_reader_py"}


def test_an_untyped_map_stream_gets_the_inferred_columns(
    spark: SparkSession, directory: Path
) -> None:
    records = [
        {
            "id": i,
            "user": {"name": f"u{i}", "tags": ["x"] * (i % 3)},
            "score": 1.5 * i if i % 2 else i,
            "extra": "text" if i % 5 else 42,
            **({"note": "n"} if i % 7 == 0 else {}),
        }
        for i in range(3000)
    ]
    path = write(directory, b"".join(msgpack.packb(record) for record in records))
    frame = load(spark, path, blocksize=10_000)
    record_type = files_type([str(path)], None, ReadOptions())
    assert frame.schema == spark_schema(record_type)
    assert frame.schema["extra"].dataType.simpleString() == "string"  # JSON text of str or int
    assert frame.rdd.getNumPartitions() > 5
    got = rows(frame)
    assert got == expected(read_table(path, record_type))
    assert [row["extra"] for row in got[:6]] == ["42", '"text"', '"text"', '"text"', '"text"', "42"]
    assert {row["note"] for row in got} == {None, "n"}  # never dropped


def test_a_record_type_from_a_notebooks_main(spark: SparkSession, directory: Path) -> None:
    # As a notebook defines them: in __main__, which Spark's workers cannot import.
    notebook: dict[str, Any] = {"__name__": "__main__"}
    source = """
        import dataclasses, msgspec, threading

        @dataclasses.dataclass
        class Leaf:
            name: str
            level: int | None

        @dataclasses.dataclass
        class Record:
            id: int
            leaf: Leaf
            tags: list[str]

        class Tag(msgspec.Struct, frozen=True):
            label: str
            weight: float = 1.0

        class Packed(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
            id: int
            tag: Tag
            notes: list[str] = msgspec.field(default_factory=list)

        @dataclasses.dataclass
        class Locked:
            id: int
            guard = threading.Lock()  # a class attribute no pickler sends
    """
    # Compiled without this module's `from __future__ import annotations`, as a notebook's cell.
    exec(compile(textwrap.dedent(source), "<notebook>", "exec", dont_inherit=True), notebook)
    record, leaf, packed = notebook["Record"], notebook["Leaf"], notebook["Packed"]
    assert record.__module__ == packed.__module__ == "__main__"
    values = [[i, [f"leaf{i}", None if i % 2 else i], ["t"] * (i % 2)] for i in range(500)]
    path = write(directory, b"".join(msgpack.packb(value) for value in values))
    tagged = [[i, {"label": f"t{i}", "weight": i / 2}, ["n"] * (i % 3)] for i in range(500)]
    packed_path = write(directory, b"".join(msgpack.packb(value) for value in tagged))
    # Read here first: msgspec has cached what it worked out on each class before it travels.
    wanted = expected(read_table(path, record))
    wanted_packed = expected(read_table(packed_path, packed))
    register(spark, record, packed, name="msgpack_notebook")
    frame = spark.read.format("msgpack_notebook").option("blocksize", 2000)
    got = frame.option("type", "Record").load(str(path))
    assert got.rdd.getNumPartitions() > 1
    assert rows(got) == wanted
    # A msgspec.Struct travels too, made again in each worker with its fields and options.
    got = frame.option("type", "Packed").load(str(packed_path))
    assert got.rdd.getNumPartitions() > 1
    assert rows(got) == wanted_packed
    assert leaf.__module__ == "__main__"
    with pytest.raises(TypeError) as refused:
        register(spark, notebook["Locked"], name="msgpack_never")
    message = str(refused.value)
    assert message.startswith("register(): Locked: the record type Locked cannot be sent")
    assert "define what it needs in a module" in message
    assert "\n" not in message
    with pytest.raises(AnalysisException) as named:
        load(spark, path, type="__main__:Record")
    assert "Spark's Python workers do not run your __main__" in str(named.value)


def test_a_bad_option_fails_the_load(spark: SparkSession, directory: Path) -> None:
    path = write(directory, DATA)
    with pytest.raises(AnalysisException, match="unknown option 'on_eror'; the options are type,"):
        load(spark, path, on_eror="skip", type="item")
    # Every refusal, in this process: test_options_are_checked_before_anything_is_read.


def test_the_benchmark_times_every_way_and_reports_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = tmp_path / "spark.json"
    assert spark_benchmark.main(["--records", "3000", "--repeat", "2", "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["ratios"]) == set(spark_benchmark.RATIOS) == set(report.SPARK_RATIOS)
    assert set(result["measurements"]) == set(report.SPARK)
    seconds = result["measurements"]
    for name, (first, second) in spark_benchmark.RATIOS.items():
        pairs = zip(seconds[first]["seconds"], seconds[second]["seconds"], strict=True)
        assert result["ratios"][name] == pytest.approx(sum(b / a for a, b in pairs) / 2)
    assert result["aggregate"][0] == 3000
    assert result["partitions"] >= 1
    assert len(result["load_average"]) == 2
    section = report.spark_section(result)
    assert section[0] == "## Spark"
    rows_of_tables = sum(line.startswith(("| `", "| the ")) for line in section)
    assert rows_of_tables == len(report.SPARK) + len(report.SPARK_RATIOS)
    assert "counts one file of 3,000 records in " in report.spark_sentence(result)
    spark_session_left_running = SparkSession.getActiveSession()
    assert spark_session_left_running is spark  # the benchmark stops only a Spark it started
    with pytest.raises(SystemExit, match="counted other than 3 records"):
        spark_benchmark.agree({"a_count": 3, "b_count": 2}, 3)
    differ = {
        "a_count": 3,
        "a_aggregate": (3, [(0, 3, 3, 1.0)]),
        "b_aggregate": (3, [(0, 3, 3, 1.5)]),
    }
    with pytest.raises(SystemExit, match="aggregates disagree"):
        spark_benchmark.agree(differ, 3)


SPARK_PAGE = ROOT / "docs" / "engines" / "spark.md"


def test_the_spark_pages_examples_run(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Run here, as a script's __main__, in a directory of their own: the session they ask for
    # is this module's (a Spark of their own would take seconds to start), and their relative
    # paths are taken from that directory, where register() is called.
    assert needs_spark(SPARK_PAGE)
    examples = [body for lang, body in blocks(SPARK_PAGE) if lang == "python"]
    assert examples
    monkeypatch.chdir(tmp_path)
    make_inputs(SPARK_PAGE, tmp_path)
    for block in examples:
        exec(compile(block, "example.py", "exec", dont_inherit=True), {"__name__": "__main__"})
        assert capsys.readouterr().out.strip()
    register(spark)  # as the module's other tests have it


def test_the_spark_page_names_every_option() -> None:
    section = SPARK_PAGE.read_text(encoding="utf-8")
    for name in OPTIONS:
        assert f"`{name}`" in section


# --- in this process: the reader's planning and partitions ---------------------------------


def test_every_range_starts_where_the_sequential_read_has_a_record(tmp_path: Path) -> None:
    path = write(tmp_path, DATA)
    blocksize = len(DATA) // 7
    reader = local_reader(str(path), type="item", blocksize=str(blocksize))
    parts, table = read_locally(reader)
    starts = [part.proof.offset for part in parts]
    offsets = [len(pack_items(ITEMS[:i])) for i in range(len(ITEMS))]
    # A partition per range that a record starts in (the last, a few bytes, holds none).
    ranges = cut_file(path, blocksize)
    holding = [r for r in ranges if any(r.start <= offset < r.end for offset in offsets)]
    assert [part.byte_range for part in parts] == holding
    assert len(holding) == 7
    assert all(start in offsets for start in starts)
    assert [part.proof.before for part in parts] == [offsets.index(start) for start in starts]
    assert table.equals(read_table(path).cast(reader.target))


def test_a_later_task_raises_the_files_first_error(tmp_path: Path) -> None:
    path = write(tmp_path, corrupt(ITEMS, 500, 2500))
    error = sequential_error(path)
    assert error.index == 500
    reader = local_reader(str(path), type="item", blocksize=str(len(DATA) // 6 + 1))
    parts = [part for part in reader.partitions() if isinstance(part, _Part)]
    last = parts[-1]
    assert last.byte_range is not None
    assert last.proof.offset > len(pack_items(ITEMS[:2500]))  # past the second one
    second = parts[-2]
    with pytest.raises(RecordError) as raised:
        list(reader.read(second))  # meets record 2500, but record 500 comes first
    assert (raised.value.index, raised.value.offset, str(raised.value)) == (
        error.index,
        error.offset,
        str(error),
    )
    assert list(reader.read(last))  # a range after both errors holds records of its own


def test_compressed_files_are_read_whole_and_zstd_frames_split(tmp_path: Path) -> None:
    import gzip

    gz = write(tmp_path, gzip.compress(DATA), ".msgpack.gz")
    parts, table = read_locally(local_reader(str(gz), type="item", blocksize="100"))
    assert [part.byte_range for part in parts] == [None]
    assert table.equals(read_table(gz).cast(table.schema))
    framed = write(tmp_path, zstd_frames(DATA, range(9000, len(DATA), 9000)), ".msgpack.zst")
    parts, table = read_locally(local_reader(str(framed), type="item", blocksize="20000"))
    assert len(parts) > 3
    assert table.equals(read_table(framed).cast(table.schema))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    count=st.integers(0, 60),
    seed=st.integers(0, 1 << 16),
    blocksize=st.integers(1, 4000),
    on_error=st.sampled_from(typing.get_args(OnError)),
    bad=st.sets(st.integers(0, 59), max_size=3),
    cut=st.integers(0, 12),
)
def test_ranges_cut_anywhere_read_as_read_table(
    tmp_path: Path,
    count: int,
    seed: int,
    blocksize: int,
    on_error: OnError,
    bad: set[int],
    cut: int,
) -> None:
    items = list(get_iter(count, seed=seed))
    data = corrupt(items, *sorted(i for i in bad if i < count))
    data = data[: len(data) - cut] if cut < len(data) else data
    path = write(tmp_path, data)
    try:
        want: pa.Table | ReaderError = read_table(path, on_error=on_error)
    except ReaderError as exc:
        want = exc.in_source(str(path))
    reader = local_reader(str(path), type="item", blocksize=str(blocksize), on_error=on_error)
    try:
        got: pa.Table | ReaderError = read_locally(reader)[1]
    except ReaderError as exc:
        got = exc
    if isinstance(want, ReaderError):
        assert isinstance(got, ReaderError)
        assert (type(got), got.index, got.offset, str(got)) == (
            type(want),
            want.index,
            want.offset,
            str(want),
        )
    else:
        assert isinstance(got, pa.Table)
        assert got.equals(want.cast(got.schema))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_eror": "skip"}, "unknown option 'on_eror'"),
        ({"blocksize": "1MB"}, "option blocksize must be a positive number of bytes, got '1MB'"),
        ({"blocksize": "0"}, "option blocksize must be a positive number of bytes"),
        ({"max_record_size": "-1"}, "option max_record_size must be a positive number"),
        ({"on_error": "never"}, "option on_error must be 'raise' or 'skip'"),
        ({"fluentd": "yes"}, "option fluentd must be true or false, got 'yes'"),
        ({"infer_from": "0"}, "option infer_from must be a positive number of records or all"),
        ({"infer_from": "100"}, "option infer_from applies where a type is inferred"),
        ({"type": "any"}, "Spark's columns need a record type"),
        ({"type": "__main__:Record"}, "Spark's Python workers do not run your __main__"),
        ({"type": "tests.encoders:Nope"}, "option type 'tests.encoders:Nope': .* has no Nope"),
        ({"type": "no_such_module_here:Record"}, "no module named 'no_such_module_here'"),
        ({"path": "absent.msgpack"}, "no such file or directory: .*absent.msgpack"),
        ({"path": "absent-*.msgpack"}, "no files match .*absent-"),
        ({"path": "file:///nowhere/absent.msgpack"}, "no such file or directory: 'file:///"),
        ({"path": "file:///nowhere/absent-*.msgpack"}, "no files match 'file:///"),
        ({"path": None}, 'no path: spark.read.format\\("msgpack"\\).load\\(PATH\\)'),
    ],
)
def test_options_are_checked_before_anything_is_read(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    # What schema() raises, Spark raises from load(): test_a_bad_option_fails_the_load.
    given = {"path": str(write(tmp_path, DATA)), "type": "item", **options}
    source = MsgpackDataSource(CaseInsensitiveDict({k: v for k, v in given.items() if v}))
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        source.schema()


def test_files_by_glob_directory_list_and_url_in_order(tmp_path: Path) -> None:
    names = ["b.msgpack", "a.msgpack", "c.msgpack"]
    for seed, name in enumerate(names):
        generate(tmp_path / name, 50 + seed, seed=seed)
    write_index(tmp_path / "a.msgpack", every=10)
    (tmp_path / ".hidden").write_text("")
    ordered = [str(tmp_path / name) for name in sorted(names)]
    for paths in (str(tmp_path / "*"), str(tmp_path), f"file://{tmp_path}", f"file://{tmp_path}/*"):
        reader = local_reader(paths, type="item")
        assert [_name(file) for file in reader.files] in (ordered, [f"file://{p}" for p in ordered])
        table = read_locally(reader)[1]
        assert table.num_rows == 50 + 51 + 52
    listed = local_reader([ordered[2], str(tmp_path / "[ab].msgpack")], type="item")
    assert list(listed.files) == [ordered[2], *ordered[:2]]
    # A file off the local disk (through fsspec): read whole when it fits in a range, else split.
    url = f"file://{ordered[0]}"
    for blocksize, parts in (
        (1 << 20, 1),
        (500, -(-(tmp_path / "a.msgpack").stat().st_size // 500)),
    ):
        found, table = read_locally(local_reader(url, type="item", blocksize=str(blocksize)))
        assert len(found) == parts
        assert table.equals(read_table(ordered[0]).cast(table.schema))


def test_inference_reads_local_files_and_names_a_remote_one(tmp_path: Path) -> None:
    path = write(tmp_path, b"".join(msgpack.packb({"id": i, "tag": f"t{i}"}) for i in range(99)))
    reader = local_reader(str(path), blocksize="300")
    parts, table = read_locally(reader)
    assert len(parts) > 3
    assert table.to_pylist() == [{"id": i, "tag": f"t{i}"} for i in range(99)]
    with pytest.raises(ValueError, match="a record type is inferred from local files only"):
        local_reader(f"file://{path}")


def test_json_text_beside_lists_of_structs_of_nils_in_ranges_and_whole(tmp_path: Path) -> None:
    """Spark's batches are valid where a JSON column sits beside a list of structs of
    ``null`` fields (pyarrow 26 casts such a list to an invalid array)."""
    records = [{"id": i, "odd": [None, [], i], "nils": [{"a": None}, None]} for i in range(60)]
    path = write(tmp_path, b"".join(map(msgpack.packb, records)))
    for blocksize in ("200", str(1 << 20)):
        parts, table = read_locally(local_reader(str(path), blocksize=blocksize))
        table.validate(full=True)
        # A list of values of no one type: each value's JSON text.
        assert table.to_pylist() == [{**r, "odd": [None, "[]", str(r["id"])]} for r in records]
        assert (len(parts) > 1) == (blocksize == "200")


def test_inference_from_the_first_records_refuses_a_later_key(tmp_path: Path) -> None:
    records = [{"id": i, "tag": f"t{i}", **({"late": i} if i == 60 else {})} for i in range(99)]
    path = write(tmp_path, b"".join(map(msgpack.packb, records)))
    # By default (and with "all") every record: the late key is a column, nothing dropped.
    for every in ({}, {"infer_from": "ALL"}):
        table = read_locally(local_reader(str(path), blocksize="300", **every))[1]
        assert table.to_pylist() == [{"late": None, **record} for record in records]
    # From the first 50: the type never saw the key, and the task reading record 60 fails.
    reader = local_reader(str(path), blocksize="300", infer_from="50")
    assert reader.target.names == ["id", "tag"]
    with pytest.raises(RecordError, match="late") as raised:
        read_locally(reader)
    assert raised.value.index == 60


def test_unsigned_ids_are_exact_decimals(spark: SparkSession, tmp_path: Path) -> None:
    """Spark has no unsigned type: a uint64 column (inferred from Go's spans, or declared
    ``UInt64``) is a ``decimal(20,0)`` one, every id exact, 2**64 - 1 among them."""
    path = write(tmp_path, (ENCODED / "go_spans.msgpack").read_bytes())
    spans = EXPECTED["spans"]
    frame = load(spark, str(path))
    assert dict(frame.dtypes)["trace_id"] == "decimal(20,0)"
    assert dict(frame.dtypes)["start"] == "bigint"
    got = [{k: r[k] for k in ("trace_id", "span_id", "parent_id")} for r in rows(frame)]
    assert got == [
        {k: decimal.Decimal(s[k]) for k in ("trace_id", "span_id", "parent_id")} for s in spans
    ]
    schema = spark_schema(Ids)
    assert [f.dataType.simpleString() for f in schema] == ["decimal(20,0)", "array<decimal(20,0)>"]
    # In ranges, as Spark's tasks read them: the same ids.
    parts, table = read_locally(local_reader(str(path), blocksize="200"))
    assert len(parts) > 1
    assert table.column("trace_id").to_pylist() == [decimal.Decimal(s["trace_id"]) for s in spans]


@dataclasses.dataclass
class Ids:
    span_id: UInt64
    children: list[UInt64]


def test_nan_the_infinities_and_negative_zero_reach_spark_as_they_are(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A float column, a nullable one, a list of floats and a column of JSON text (a field of
    no one type), each with NaN, the infinities and -0.0 beside nil: every value as it was."""
    specials = [math.nan, math.inf, -math.inf, -0.0, 1.5]
    records = [
        {
            "plain": specials[i % 5],
            "maybe": None if i % 6 == 5 else specials[i % 5],
            "floats": [specials[(i + 1) % 5], -0.0],
            "mixed": [specials[i % 5], "x"] if i % 2 else specials[i % 5],
        }
        for i in range(30)
    ]
    path = write(tmp_path, b"".join(msgpack.packb(r) for r in records))

    def text(values: list[dict[str, Any]]) -> list[str]:  # NaN and -0.0 shown as they are
        return [json.dumps(v, allow_nan=True) for v in values]

    got = rows(load(spark, str(path), blocksize=200))
    assert text(got) == text(
        [{**r, "mixed": json.dumps(r["mixed"], separators=(",", ":"))} for r in records]
    )


def test_a_map_naming_a_key_twice_is_refused_when_asked(tmp_path: Path) -> None:
    path = write(tmp_path, msgpack.packb({"id": 1}) + b"\x82\xa2id\x02\xa2id\x03")
    # By default, as every decoder reads it: the last value.
    table = read_locally(local_reader(str(path), blocksize="200"))[1]
    assert table.to_pylist() == [{"id": 1}, {"id": 3}]
    with pytest.raises(RecordError, match="record 1 at byte 5: map has key 'id' twice"):
        read_locally(local_reader(str(path), blocksize="200", forbid_repeated_keys="true"))


def test_a_registered_type_and_the_flags_in_process(tmp_path: Path) -> None:
    records = [Carrier(f"c{i}", bytes(i)) for i in range(40)]
    path = write(
        tmp_path,
        b"".join(msgpack.packb({"name": r.name, "payload": r.payload, "x": 1}) for r in records),
    )
    # As register() ships it: a class of a test module goes by reference.
    shipped = {"Carrier": Shipped(Carrier, "Carrier")}
    registered = type("Registered", (MsgpackDataSource,), {"types": shipped})
    options = {"path": str(path), "type": "Carrier", "blocksize": "200", "decompress": "false"}
    for forbid, rows_read in (("false", 40), ("true", 0)):
        source = registered(CaseInsensitiveDict({**options, "forbid_unknown_keys": forbid}))
        reader = source.reader(source.schema())
        assert isinstance(reader, _Reader)
        assert reader.options.forbid_unknown_keys is (forbid == "true")
        if rows_read:
            assert read_locally(reader)[1].to_pylist() == [dataclasses.asdict(r) for r in records]
        else:
            with pytest.raises(RecordError, match="record 0 at byte 0"):
                read_locally(reader)


def test_register_refuses_what_cannot_be_named_or_read(spark: SparkSession) -> None:
    with pytest.raises(TypeError, match=r"register\(\) takes record classes by position"):
        register(spark, Event | Inner)
    with pytest.raises(TypeError, match="a record type's name must be a non-empty str"):
        register(spark, types={"": Event})
    with pytest.raises(TypeError, match=r"^register\(\): Bad: "):
        register(spark, types={"Bad": int})


def test_a_schema_given_to_spark_must_be_the_record_types(tmp_path: Path) -> None:
    path = write(tmp_path, DATA)
    source = MsgpackDataSource(CaseInsensitiveDict({"path": str(path), "type": "item"}))
    with pytest.raises(ValueError, match="must be the record type's"):
        source.reader(spark_schema(Event))


def test_the_skipped_count_is_said_per_range(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, corrupt(ITEMS, 10, 20))
    reader = local_reader(str(path), type="item", on_error="skip", blocksize=str(len(DATA) // 3))
    with caplog.at_level(logging.WARNING, "msgpack_reader_py"):
        read_locally(reader)
    assert f"{path} (bytes 0 to {len(DATA) // 3}): skipped 2 records" in caplog.text
