"""msgpack_reader_py.ray on a real local Ray: files read in byte ranges by Ray tasks, each
range's start proved by a chain of tasks, give exactly the rows, order and errors of
``read_table`` reading each file in turn."""

from __future__ import annotations

import dataclasses
import gzip
import itertools
import typing
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pyarrow as pa
import pytest
import ray
import ray.data
from hypothesis import given, settings
from hypothesis import strategies as st
from ray.exceptions import RayTaskError

from msgpack_reader_py import (
    Item,
    ReaderError,
    RecordError,
    TruncatedStreamError,
    generate,
    get_iter,
    pack_items,
)
from msgpack_reader_py._arrow.reader import ArrowJob, arrow_schema, read_table
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._split.ranges import Proof, cut, cut_file
from msgpack_reader_py.ray import _read, _settle, _whole, _whole_task, read_msgpack
from tests.encoders import DATA as DATA_DIR
from tests.encoders import EVENT_FILES, Event, expected_events
from tests.helpers import zstd_frames
from tests.user_code import TYPES, run_user_code

ITEMS = list(get_iter(600, seed=11))
DATA = pack_items(ITEMS)
BLOCKSIZE = len(DATA) // 6 + 1  # six ranges
_names = itertools.count()


@dataclasses.dataclass
class Carrier:
    """A record whose payload holds records of its own kind: a guess that lands in a payload
    finds a chain of them, and only the proof tells it is wrong."""

    name: str
    payload: bytes


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local two-CPU Ray for the module, quiet and without a dashboard."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(
            address="local",  # a cluster of its own, never one RAY_ADDRESS names
            num_cpus=2,
            object_store_memory=128 << 20,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ray")


def write(directory: Path, data: bytes, suffix: str = ".msgpack") -> Path:
    path = directory / f"file{next(_names)}{suffix}"
    path.write_bytes(data)
    return path


def table_of(dataset: ray.data.Dataset) -> pa.Table:
    """The dataset's blocks, in order, as one table."""
    refs = typing.cast("list[ray.ObjectRef[pa.Table]]", dataset.to_arrow_refs())
    return pa.concat_tables(ray.get(refs))


def blocks(size: int, blocksize: int) -> int:
    """How many blocks a file of ``size`` bytes is read in: one per range, one if it fits."""
    return max(1, -(-size // blocksize))


def sequential_error(path: Path, **keywords: typing.Any) -> ReaderError:
    """The error ``read_table`` raises for ``path``, naming it, as a reader of many files does."""
    with pytest.raises(ReaderError) as raised:
        read_table(path, **keywords)
    return raised.value.in_source(str(path))


def assert_same_error(got: BaseException, expected: ReaderError) -> None:
    assert type(got) is type(expected)
    assert isinstance(got, ReaderError)
    assert (got.index, got.offset, got.source) == (expected.index, expected.offset, expected.source)
    assert str(got) == str(expected)
    # Raised by the caller, from what the range's task found: no RayTaskError around it.
    assert not isinstance(got, RayTaskError)
    assert type(got.__cause__) is type(expected)


def test_many_ranges_of_one_file_equal_read_table(cluster: None, directory: Path) -> None:
    path = write(directory, DATA)
    dataset = read_msgpack(str(path), blocksize=BLOCKSIZE)
    assert dataset.num_blocks() == 6
    expected = read_table(path)
    assert expected.num_rows == len(ITEMS)
    assert table_of(dataset).equals(expected)
    assert dataset.take_all() == expected.to_pylist()
    assert dataset.count() == len(ITEMS)
    # The default blocksize (at least 1 MiB) reads a small file whole.
    whole = read_msgpack(path)
    assert whole.num_blocks() == 1
    assert table_of(whole).equals(expected)


def test_a_glob_or_a_list_gives_every_file_in_order(cluster: None, directory: Path) -> None:
    folder = directory / "glob"
    folder.mkdir()
    sizes = {"b.msgpack": 200, "a.msgpack": 120, "c.msgpack": 0, "d.msgpack": 90}
    for seed, (name, count) in enumerate(sizes.items()):
        generate(folder / name, count, seed=seed)
    (folder / "notes.txt").write_text("not matched")
    dataset = read_msgpack(str(folder / "*.msgpack"), blocksize=1500)
    ordered = sorted(sizes)
    expected = pa.concat_tables([read_table(folder / name) for name in ordered])
    assert expected.num_rows == sum(sizes.values())
    assert table_of(dataset).equals(expected)
    sizes_on_disk = [(folder / name).stat().st_size for name in ordered]
    assert dataset.num_blocks() == sum(blocks(size, 1500) for size in sizes_on_disk)
    # A list keeps its own order, globs and paths mixed.
    listed = read_msgpack([folder / "d.msgpack", str(folder / "[ab].msgpack")], blocksize=1500)
    names = ["d.msgpack", "a.msgpack", "b.msgpack"]
    assert table_of(listed).equals(pa.concat_tables([read_table(folder / n) for n in names]))


def test_projection_builds_only_the_columns_asked_for(cluster: None, directory: Path) -> None:
    path = write(directory, DATA)
    for columns in (["id", "value"], ["value", "id"]):
        dataset = read_msgpack(path, blocksize=BLOCKSIZE, columns=columns)
        got = table_of(dataset)
        assert got.schema.names == columns
        assert got.equals(read_table(path, columns=columns))
        assert got.column("id").to_pylist() == [item.id for item in ITEMS]
        assert got.column("value").to_pylist() == [item.value for item in ITEMS]
    # Whole-file reads project too.
    whole = table_of(read_msgpack(path, columns=["filename"]))
    assert whole.schema.names == ["filename"]
    assert whole.column(0).to_pylist() == [item.filename for item in ITEMS]
    with pytest.raises(ValueError, match="unknown"):
        read_msgpack(path, columns=["id", "nope"])
    with pytest.raises(ValueError, match="none"):
        read_msgpack(path, columns=[])
    with pytest.raises(TypeError, match="not a str"):
        read_msgpack(path, columns="id")


def test_ranges_of_a_few_bytes_start_inside_records(cluster: None, directory: Path) -> None:
    items = ITEMS[:12]
    path = write(directory, pack_items(items))
    size = path.stat().st_size
    dataset = read_msgpack(path, blocksize=5)
    assert dataset.num_blocks() == blocks(size, 5)
    got = table_of(dataset)
    assert got.equals(read_table(path))
    assert got.column("id").to_pylist() == [item.id for item in items]


def test_guesses_inside_payloads_of_the_same_kind_are_proved_wrong(
    cluster: None, directory: Path
) -> None:
    inner = b"".join(msgpack.packb([f"inner{i}", b""]) for i in range(20))
    records = [Carrier(f"outer{i}", inner) for i in range(12)]
    path = write(directory, b"".join(msgpack.packb([r.name, r.payload]) for r in records))
    dataset = read_msgpack(path, Carrier, blocksize=97)
    assert dataset.num_blocks() > len(records)
    got = table_of(dataset)
    assert got.equals(read_table(path, Carrier))
    assert got.to_pylist() == [dataclasses.asdict(record) for record in records]


def test_a_truncated_file_fails_with_the_sequential_error(cluster: None, directory: Path) -> None:
    path = write(directory, DATA[:-9])
    expected = sequential_error(path)
    assert isinstance(expected, TruncatedStreamError)
    assert expected.index == len(ITEMS) - 1
    with pytest.raises(TruncatedStreamError) as raised:
        read_msgpack(path, blocksize=BLOCKSIZE)
    assert_same_error(raised.value, expected)
    with pytest.raises(TruncatedStreamError) as whole:
        read_msgpack(path)  # read whole, by one task
    assert_same_error(whole.value, expected)


def corrupt(directory: Path, at: int) -> Path:
    """A file of ITEMS whose record ``at`` is valid MessagePack, but not an Item."""
    wrong = ITEMS[at].to_list()
    wrong[0] = "not an id"
    records = [msgpack.packb(item.to_list()) for item in ITEMS]
    records[at] = msgpack.packb(wrong)
    return write(directory, b"".join(records))


def test_a_corrupt_record_in_a_later_range_fails_as_read_table(
    cluster: None, directory: Path
) -> None:
    at = len(ITEMS) * 3 // 4
    path = corrupt(directory, at)
    expected = sequential_error(path)
    assert isinstance(expected, RecordError)
    assert expected.index == at
    assert expected.offset == len(pack_items(ITEMS[:at]))
    assert 4 * BLOCKSIZE < expected.offset < 5 * BLOCKSIZE  # in the fifth of six ranges
    with pytest.raises(RecordError) as raised:
        read_msgpack(path, blocksize=BLOCKSIZE)
    assert_same_error(raised.value, expected)
    # With a good file before it, the broken one's error is still the one raised, its own.
    good = write(directory, DATA)
    with pytest.raises(RecordError) as second:
        read_msgpack([good, path], blocksize=BLOCKSIZE)
    assert_same_error(second.value, expected)


def test_skip_mode_gives_the_rows_of_the_sequential_skip_read(
    cluster: None, directory: Path, caplog: pytest.LogCaptureFixture
) -> None:
    at = len(ITEMS) // 2
    path = corrupt(directory, at)
    expected = read_table(path, on_error="skip")
    assert expected.num_rows == len(ITEMS) - 1
    for blocksize in (BLOCKSIZE, None):
        caplog.clear()
        dataset = read_msgpack(path, blocksize=blocksize, on_error="skip")
        assert table_of(dataset).equals(expected)
        # Said in the caller's log, whichever worker read the range.
        assert f"{path}: skipped 1 record that is not a record of the type" in caplog.text
    ids = table_of(read_msgpack(path, blocksize=BLOCKSIZE, on_error="skip")).column("id")
    assert at not in ids.to_pylist()


def test_a_compressed_file_is_read_whole(cluster: None, directory: Path) -> None:
    path = write(directory, gzip.compress(DATA), suffix=".msgpack.gz")
    dataset = read_msgpack(path, blocksize=100)
    assert dataset.num_blocks() == 1
    got = table_of(dataset)
    assert got.num_rows == len(ITEMS)
    assert got.equals(read_table(path))


def test_a_zstd_file_of_frames_is_split_where_frames_start(cluster: None, directory: Path) -> None:
    path = write(directory, zstd_frames(DATA, range(5000, len(DATA), 5000)), ".msgpack.zst")
    dataset = read_msgpack(path, blocksize=BLOCKSIZE)
    assert dataset.num_blocks() == len(cut_file(path, BLOCKSIZE)) > 1
    assert table_of(dataset).equals(read_table(path))


def test_an_empty_file_gives_no_rows_with_the_schema(cluster: None, directory: Path) -> None:
    path = write(directory, b"")
    for blocksize in (1, None):
        dataset = read_msgpack(path, blocksize=blocksize)
        assert dataset.count() == 0
        got = table_of(dataset)
        assert got.num_rows == 0
        assert got.schema.equals(arrow_schema(Item))
    projected = table_of(read_msgpack(path, columns=["path", "id"]))
    assert projected.schema.names == ["path", "id"]


def test_missing_files(cluster: None, directory: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no files match"):
        read_msgpack(str(directory / "absent-*.msgpack"))
    missing = directory / "absent.msgpack"
    with pytest.raises(FileNotFoundError) as sequential:
        read_table(missing)
    with pytest.raises(FileNotFoundError) as raised:
        read_msgpack(missing, blocksize=10)  # read in a task, which fails naming the file
    assert raised.value.filename == sequential.value.filename == str(missing)


def test_a_file_that_cannot_be_read_fails_no_task(cluster: None, directory: Path) -> None:
    # A failed task fails both its results; the table, never fetched, would be printed by Ray
    # as an "Unhandled error" traceback when dropped. The failure comes back as a value.
    missing = directory / "absent.msgpack"
    job = ArrowJob.of(None)
    # num_returns=2: a ref per returned value, which Ray's annotations cannot say.
    refs = typing.cast(
        "list[typing.Any]", _whole_task.remote(str(missing), (Item, ReadOptions(), job))
    )
    table, outcome = ray.get(refs)
    assert table.num_rows == 0
    assert table.schema.equals(arrow_schema(Item))
    assert isinstance(outcome.failure, FileNotFoundError)
    assert outcome.failure.filename == str(missing)


@pytest.mark.parametrize("blocksize", [0, -1, True, 1.5, "1MB"])
def test_a_bad_blocksize_is_refused(blocksize: typing.Any) -> None:
    with pytest.raises(ValueError, match="blocksize must be a positive int or None"):
        read_msgpack("never-read.msgpack", blocksize=blocksize)


def test_bad_arguments_are_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="follow=True"):
        read_msgpack("never-read.msgpack", follow=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        read_msgpack("never-read.msgpack", nope=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="no paths"):
        read_msgpack([])


# Blocksizes from a 32nd of the file up: at most 33 ranges, each a few Ray tasks, keep an
# example quick; the tiny ranges of a larger file are test_ranges_of_a_few_bytes_...'s.
@settings(max_examples=15, deadline=None)
@given(count=st.integers(0, 40), seed=st.integers(0, 1 << 16), data=st.data())
def test_the_dataset_is_read_table(
    cluster: None, directory: Path, count: int, seed: int, data: st.DataObject
) -> None:
    path = directory / "property.msgpack"
    size = generate(path, count, seed=seed)
    blocksize = data.draw(st.integers(max(1, size // 32), size + 1), label="blocksize")
    dataset = read_msgpack(path, blocksize=blocksize)
    assert dataset.num_blocks() == blocks(size, blocksize)
    got = table_of(dataset)
    assert got.num_rows == count
    assert got.equals(read_table(path))


def test_the_tasks_in_this_process_settle_a_wrong_guess(directory: Path) -> None:
    # What Ray's workers run, run here in order: the proof re-reads a range whose guess
    # landed in a payload, and hands its rows back beside the next proof.
    inner = b"".join(msgpack.packb([f"inner{i}", b""]) for i in range(20))
    records = [Carrier(f"outer{i}", inner) for i in range(12)]
    path = str(write(directory, b"".join(msgpack.packb([r.name, r.payload]) for r in records)))
    job = ArrowJob.of(None)
    schema = job.schema(Carrier)
    arguments = (Carrier, ReadOptions(), job)
    proof, tables, rereads = Proof(), [], 0
    for byte_range in cut(Path(path).stat().st_size, 97):
        table, spot = _read(path, byte_range, arguments, schema)
        assert spot.value is None  # the proof's chain carries no rows
        outcome, proof = _settle(spot, proof, path, arguments, schema)
        assert outcome.error is None
        rereads += outcome.table is not None
        tables.append(table if outcome.table is None else outcome.table)
    assert rereads > 0
    assert pa.concat_tables(tables).equals(read_table(path, Carrier))


def test_the_whole_file_task_keeps_the_rows_before_its_error(directory: Path) -> None:
    path = str(corrupt(directory, 5))
    table, outcome = _whole(path, (Item, ReadOptions(), ArrowJob.of(["id"])))
    assert table.column("id").to_pylist() == [item.id for item in ITEMS[:5]]
    assert isinstance(outcome.error, RecordError)
    assert (outcome.error.index, outcome.table) == (5, None)


def test_every_encoder_s_nested_events_in_ranges(cluster: None) -> None:
    # Go, Java, Node and Rust encoders' records, arrays and maps, nested: each file in ranges
    # of about 500 bytes, all of them one dataset, in order.
    paths = [str(DATA_DIR / name) for name in EVENT_FILES]
    got = table_of(read_msgpack(paths, Event, blocksize=500))
    assert got.equals(pa.concat_tables(read_table(path, Event) for path in paths))
    assert got.column("id").to_pylist() == [e.id for e in expected_events()] * len(paths)


NOTEBOOK = """
import pyarrow as pa
import ray
import ray.data

from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py.ray import read_msgpack

events = write("events.msgpack", EVENTS)
messages = write("messages.msgpack", [e.message for e in EVENTS])
broken = write("broken.msgpack", BROKEN)
expected = read_table(events, Event)  # every type used here before it is sent
union = read_table(messages, Ping | Pong)
refused = error_of(lambda: read_table(broken, Event))
ray.init(address=sys.argv[2], log_to_driver=False, configure_logging=False)
ray.data.DataContext.get_current().enable_progress_bars = False
for _ in range(2):  # the same types again
    for path, record_type, table in ((events, Event, expected), (messages, Ping | Pong, union)):
        dataset = read_msgpack(str(path), record_type, blocksize=4 * BLOCKSIZE)
        got = pa.concat_tables(ray.get(dataset.to_arrow_refs()))
        assert dataset.num_blocks() > 1 and got.equals(table)
    assert error_of(lambda: read_msgpack(str(broken), Event, blocksize=4 * BLOCKSIZE)) == refused
print("ray")
"""


def test_types_from_a_notebook(cluster: None, tmp_path: Path) -> None:
    # No file to run again, a thread running: as a notebook's kernel, a second driver of the
    # module's Ray.
    address = ray.get_runtime_context().gcs_address
    assert run_user_code(TYPES + NOTEBOOK, "-c", tmp_path, address).split() == ["ray"]
