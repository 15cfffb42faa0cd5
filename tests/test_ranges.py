"""One file read in byte ranges gives exactly the sequential read: records, order, skipped
records and their errors, and the error that ends the file, located alike (msgpack_reader_py
.ranges). Guessing a range's first record may be wrong; the proof makes it right."""

from __future__ import annotations

import dataclasses
import gzip
import multiprocessing
import os
import signal
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Literal

import msgpack
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msgpack_reader_py import Item, StreamingReader
from msgpack_reader_py._base.errors import ReaderError
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._reference.generator import get_iter, pack_items
from msgpack_reader_py._split import parallel
from msgpack_reader_py._split.parallel import Splitting, read_ranges, worker_count
from msgpack_reader_py._split.ranges import (
    ByteRange,
    RangeStats,
    Records,
    cut,
    default_blocksize,
    read_range,
    splittable,
)
from msgpack_reader_py._stream.delivery import Batches, Plan
from tests.helpers import examples, item_values, packed


@dataclasses.dataclass
class Carrier:
    """A record whose bytes field may hold records of its own type: a guess inside it finds
    a chain of records that is not the file's."""

    name: str
    payload: bytes
    note: str = ""


class Click(msgspec.Struct, tag="click", array_like=True):
    x: int
    y: int


class Key(msgspec.Struct, tag="key"):
    code: str


Outcome = tuple[list[Any], int, list[str], str | None]


def sequential(path: Path, record_type: Any, **options: Any) -> Outcome:
    """What one reader makes of the whole file: records, skipped count, skipped errors and
    the error that ends it (its class and message)."""
    reader = StreamingReader(path, record_type, **options)
    records: list[Any] = []
    error = None
    try:
        records.extend(reader)
    except ReaderError as exc:
        error = f"{type(exc).__name__}: {exc}"
    return records, reader.skipped, [str(e) for e in reader.errors], error


def in_ranges(
    path: Path, record_type: Any, blocksize: int, workers: int = 1, **options: Any
) -> tuple[Outcome, RangeStats]:
    """The same, from the file's byte ranges of ``blocksize`` bytes, each proved."""
    stats = RangeStats()
    records: list[Any] = []
    skipped = 0
    errors: list[str] = []
    error = None
    for piece in read_ranges(
        path,
        record_type,
        Records(),
        options=ReadOptions(**options),
        splitting=Splitting(workers, blocksize),
        stats=stats,
    ):
        records.extend(piece.value)
        skipped += piece.skipped
        errors.extend(str(e) for e in piece.errors)
        if piece.error is not None:
            error = f"{type(piece.error).__name__}: {piece.error}"
    return (records, skipped, errors[:100], error), stats


def carrier_file(tmp_path: Path, inner: int = 12, outer: int = 6) -> tuple[Path, bytes]:
    """Carriers whose payloads are whole files of carriers, and whose notes are too."""
    nested = b"".join(packed(["inner", b"", f"n{i}"]) for i in range(inner))
    data = b"".join(packed([f"outer{i}", nested, nested.decode("latin-1")]) for i in range(outer))
    path = tmp_path / "carriers.msgpack"
    path.write_bytes(data)
    return path, data


def write(tmp_path: Path, data: bytes, name: str = "records.msgpack") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


ITEMS = list(get_iter(40, seed=3))
ITEM_BYTES = pack_items(ITEMS)


def test_plan_ranges_cover_the_file_once() -> None:
    assert cut(10, 4) == [
        ByteRange(0, 0, 4, known=True),
        ByteRange(1, 4, 8),
        ByteRange(2, 8, 10),
    ]
    assert cut(0, 4) == [ByteRange(0, 0, 0, known=True)]
    # offsets known to start records: a range ends at the last within reach, the next is known
    assert cut(20, 8, known=[3, 6, 13, 20]) == [
        ByteRange(0, 0, 6, known=True),
        ByteRange(1, 6, 13, known=True),
        ByteRange(2, 13, 20, known=True),
    ]
    assert cut(20, 4, known=[9]) == [
        ByteRange(0, 0, 4, known=True),
        ByteRange(1, 4, 8),
        ByteRange(2, 8, 9),
        ByteRange(3, 9, 13, known=True),
        ByteRange(4, 13, 17),
        ByteRange(5, 17, 20),
    ]
    with pytest.raises(ValueError, match="blocksize must be a positive int, got 0"):
        cut(10, 0)
    assert default_blocksize(10, 2) == 1 << 20  # never below a mebibyte
    assert default_blocksize(1 << 40, 2) == 64 << 20  # never above 64 MiB
    assert default_blocksize(400 << 20, 2) == 25 << 20  # eight ranges per worker


def test_worker_count() -> None:
    assert worker_count(None) == 1
    assert worker_count(3) == 3
    assert worker_count(0) >= 1
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="workers must be a non-negative int or None"):
            worker_count(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("blocksize", [*range(1, 120), 333, 1000, len(ITEM_BYTES)])
def test_every_range_boundary_of_a_small_file(tmp_path: Path, blocksize: int) -> None:
    path = write(tmp_path, ITEM_BYTES)
    got, _ = in_ranges(path, Item, blocksize)
    assert got == sequential(path, Item)
    assert got[0] == ITEMS


def test_payloads_holding_records_of_the_same_type_are_read_exactly(tmp_path: Path) -> None:
    path, data = carrier_file(tmp_path)
    expected = sequential(path, Carrier)
    assert len(expected[0]) == 6
    assert expected[3] is None
    rereads = 0
    for blocksize in range(1, len(data) + 1, 7):
        got, stats = in_ranges(path, Carrier, blocksize)
        assert got == expected, blocksize
        rereads += stats.rereads
    assert rereads  # a guess landed inside a payload, and the proof corrected it


def test_records_larger_than_a_range(tmp_path: Path) -> None:
    big = [Item(i, 1, 2, 3, 4, 5.0, "f" * 3000, "p") for i in range(5)]
    path = write(tmp_path, pack_items(big))
    for blocksize in (100, 1000, 2999, 3001, 7000):
        got, _ = in_ranges(path, Item, blocksize)
        assert got == sequential(path, Item)
        assert got[0] == big


@pytest.mark.parametrize(
    "broken",
    ["truncated", "corrupt byte", "wrong field type", "too large", "not msgpack at the end"],
)
def test_broken_files_fail_as_the_sequential_read_fails(tmp_path: Path, broken: str) -> None:
    good = ITEM_BYTES
    middle = len(pack_items(ITEMS[:25]))
    options: dict[str, Any] = {}
    if broken == "truncated":
        data = good[:-5]
    elif broken == "corrupt byte":
        data = good[:middle] + b"\xc1" + good[middle:]
    elif broken == "wrong field type":
        data = good[:middle] + packed(item_values(id="seven")) + good[middle:]
    elif broken == "too large":
        data = good[:middle] + pack_items([Item(1, 2, 3, 4, 5, 6.0, "x" * 500, "p")]) + good
        options = {"max_record_size": 300}
    else:
        data = good + b"\xc1\xc1\xc1"
    path = write(tmp_path, data)
    expected = sequential(path, Item, **options)
    assert expected[3] is not None
    for blocksize in (1, 7, 50, 300, 1000, len(data)):
        got, _ = in_ranges(path, Item, blocksize, **options)
        assert got == expected, blocksize


def test_skip_mode_counts_and_keeps_the_same_errors(tmp_path: Path) -> None:
    bad = [packed(item_values(id="x")), packed([1, 2]), packed({"id": 5})]
    pieces = [pack_items([item]) for item in ITEMS]
    for position, record in zip((3, 17, 30), bad, strict=True):
        pieces.insert(position, record)
    path = write(tmp_path, b"".join(pieces))
    expected = sequential(path, Item, on_error="skip")
    assert expected[1] == 3
    assert len(expected[2]) == 3
    for blocksize in (5, 60, 200, 999):
        got, _ = in_ranges(path, Item, blocksize, on_error="skip")
        assert got == expected, blocksize


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_repeated_keys_refused_in_ranges_as_in_one_read(tmp_path: Path, on_error: str) -> None:
    """A map naming ``id`` twice, as its own record, among Items read from maps: the ranges
    refuse it where the sequential read does, or skip it as it does."""
    maps = [packed(dataclasses.asdict(item)) for item in ITEMS]
    for position in (9, 26):
        maps[position] = b"\x89\xa2id\x00" + maps[position][1:]  # one key more: id again
    path = write(tmp_path, b"".join(maps))
    options: dict[str, Any] = {"forbid_repeated_keys": True, "on_error": on_error}
    expected = sequential(path, Item, **options)
    if on_error == "raise":
        where = f"record 9 at byte {sum(map(len, maps[:9]))}: map has key 'id' twice"
        assert expected[3] is not None
        assert where in expected[3]
    else:
        assert expected[1] == 2
    for blocksize in (3, 40, 128, 500):
        got, _ = in_ranges(path, Item, blocksize, **options)
        assert got == expected, blocksize


def test_array_and_map_shaped_records_mixed(tmp_path: Path) -> None:
    data = b"".join(
        pack_items([item])
        if item.id % 3
        else packed({f.name: getattr(item, f.name) for f in dataclasses.fields(Item)})
        for item in ITEMS
    )
    path = write(tmp_path, data)
    for blocksize in (3, 40, 128, 500):
        got, _ = in_ranges(path, Item, blocksize)
        assert got == sequential(path, Item)
        assert got[0] == ITEMS


def test_union_record_types(tmp_path: Path) -> None:
    records: list[Click | Key] = [Click(i, i * 2) if i % 2 else Key(f"k{i}") for i in range(30)]
    data = b"".join(msgspec.msgpack.encode(record) for record in records)
    path = write(tmp_path, data)
    for blocksize in (2, 11, 64, 300):
        got, _ = in_ranges(path, Click | Key, blocksize)
        assert got == sequential(path, Click | Key)
        assert got[0] == records


def test_a_file_in_processes_is_the_same_with_its_error(tmp_path: Path) -> None:
    middle = len(pack_items(ITEMS[:31]))
    data = ITEM_BYTES[:middle] + packed(item_values(value="high")) + ITEM_BYTES[middle:]
    path = write(tmp_path, data)
    got, stats = in_ranges(path, Item, 200, workers=2)
    expected = sequential(path, Item)
    assert got == expected
    assert expected[3] is not None
    assert "record 31 at byte" in expected[3]
    assert stats.ranges == -(-len(data) // 200)


_READ_RANGE = read_range


def _killed_in_range_3(source: Any, byte_range: ByteRange, *arguments: Any) -> Any:
    """A worker that dies, as one the system kills for memory does, reading range 3."""
    if byte_range.number == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return _READ_RANGE(source, byte_range, *arguments)


def test_a_worker_killed_is_one_error_naming_its_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, ITEM_BYTES)
    monkeypatch.setattr(parallel, "read_range", _killed_in_range_3)
    # Only a forked worker has the patch; a thread an earlier test left running in this
    # process would have the reader start its workers from a fork server instead.
    monkeypatch.setattr(parallel, "_context", lambda: multiprocessing.get_context("fork"))
    with pytest.raises(ChildProcessError) as info:
        list(read_ranges(path, Item, Records(), options=ReadOptions(), splitting=Splitting(2, 64)))
    assert str(info.value) == (
        f"a worker process reading bytes 192 to 256 of {path} ended abruptly (killed, or out "
        "of memory?): read it on fewer processes"
    )
    assert isinstance(info.value.__cause__, BrokenProcessPool)


def test_what_cannot_be_split_says_why(tmp_path: Path) -> None:
    path = write(tmp_path, ITEM_BYTES)
    options = ReadOptions()
    assert splittable(path, Item, options) is None
    assert "untyped" in str(splittable(path, None, options))
    assert "followed" in str(splittable(path, Item, ReadOptions(follow=True)))
    assert "only a file" in str(splittable(ITEM_BYTES, Item, options))
    squeezed = write(tmp_path, gzip.compress(ITEM_BYTES), "records.msgpack.gz")
    assert splittable(squeezed, Item, options) == "a gzip file cannot be entered in the middle"
    assert splittable(squeezed, Item, ReadOptions(decompress=False)) is None


def test_an_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, b"")
    got, stats = in_ranges(path, Item, 10)
    assert got == ([], 0, [], None) == sequential(path, Item)
    assert stats.ranges == 1


Kind = Literal["item", "carrier"]


@st.composite
def files(draw: st.DrawFn) -> tuple[Kind, bytes]:
    """Files of Items or of Carriers (payloads that are files of Carriers), sometimes broken:
    cut short, a byte changed, or a record of the wrong shape put in."""
    kind: Kind = draw(st.sampled_from(["item", "carrier"]))
    count = draw(st.integers(0, 25))
    if kind == "item":
        data = pack_items(get_iter(count, seed=draw(st.integers(0, 3))))
    else:
        inner = b"".join(
            packed([draw(st.text(max_size=3)), b"", ""]) for _ in range(draw(st.integers(0, 9)))
        )
        data = b"".join(
            packed([f"c{i}", inner if draw(st.booleans()) else b"", ""]) for i in range(count)
        )
    damage = draw(st.sampled_from(["none", "none", "cut", "byte", "record"]))
    if data and damage == "cut":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif data and damage == "byte":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    elif damage == "record":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + msgpack.packb(draw(st.sampled_from([[1, 2], 7, {"a": 1}]))) + data[at:]
    return kind, data


@settings(
    deadline=None,
    max_examples=examples(ci=300, local=120),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    file=files(),
    blocksize=st.integers(1, 400),
    on_error=st.sampled_from(["raise", "skip"]),
)
def test_any_file_in_any_ranges_reads_as_the_whole_file(
    tmp_path: Path, file: tuple[Kind, bytes], blocksize: int, on_error: str
) -> None:
    kind, data = file
    record_type = Item if kind == "item" else Carrier
    path = write(tmp_path, data)
    got, _ = in_ranges(path, record_type, blocksize, on_error=on_error)
    assert got == sequential(path, record_type, on_error=on_error)


def test_arrow_in_processes_is_the_same_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from msgpack_reader_py._arrow.reader import read_batches, read_table
    from msgpack_reader_py._split import parallel

    spools = tmp_path / "memory"
    spools.mkdir()
    monkeypatch.setattr(parallel, "_MEMORY", str(spools))
    middle = len(pack_items(ITEMS[:33]))
    path = write(tmp_path, ITEM_BYTES[:middle] + packed(item_values(id=-0.5)) + ITEM_BYTES[middle:])
    good = write(tmp_path, ITEM_BYTES, "good.msgpack")
    assert read_table(good, workers=2, blocksize=300).equals(read_table(good))
    outcomes = []
    for workers in (None, 2):
        with read_batches(path, batch_size=10, workers=workers, blocksize=250) as batches:
            got: list[list[dict[str, Any]]] = []
            with pytest.raises(ReaderError) as info:
                got.extend(batch.to_pylist() for batch in batches)
        outcomes.append((got, str(info.value)))
    assert outcomes[0] == outcomes[1]
    assert "record 33 at byte" in outcomes[0][1]
    assert list(spools.iterdir()) == []  # every range's file removed with its directory


_RUNS_ON_NOTHING: list[int] = []  # in this process, and in each worker forked from it


class _Noting(Batches):
    def __call__(self, values: list[Any], /) -> list[Any]:
        if not values:
            _RUNS_ON_NOTHING.append(os.getpid())
        return values


class _Inherits(Records):
    """A job that tells which process first ran its conversion on no records, as its worker
    found it: the process it was forked from, if that ran it before the fork."""

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return Plan(record_type, convert=_Noting())

    def collect(self, batches: Any) -> list[Any]:
        first = _RUNS_ON_NOTHING[:1]
        for _ in batches:
            pass
        return first


def test_forked_workers_start_with_the_jobs_first_run_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a conversion's first run imports (pyarrow imports pandas with its first array)
    # is paid once, before the fork, not by every worker.
    import multiprocessing

    path = write(tmp_path, ITEM_BYTES)
    monkeypatch.setattr(parallel, "_context", lambda: multiprocessing.get_context("fork"))
    _RUNS_ON_NOTHING.clear()
    job = _Inherits()
    pieces = list(read_ranges(path, Item, job, options=ReadOptions(), splitting=Splitting(2, 300)))
    assert len(pieces) > 2
    assert [piece.value for piece in pieces] == [[os.getpid()]] * len(pieces)


def test_a_worker_that_died_reading_nothing_is_still_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, ITEM_BYTES)
    ranges = cut(len(ITEM_BYTES), 64)
    reading = parallel._Reading(multiprocessing.get_context("fork"), 2)
    assert reading.died(ranges, path) == (
        "a worker process reading it in byte ranges ended abruptly (killed, or out of "
        "memory?): read it on fewer processes"
    )
    reading.slots[2] = 5 + 1  # the second worker's slot: range 5
    assert reading.died(ranges, path) == (
        f"a worker process reading bytes 320 to 384 of {path} ended abruptly (killed, or out "
        "of memory?): read it on fewer processes"
    )


def test_a_main_file_a_worker_cannot_run_is_hidden_while_workers_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    main = sys.modules["__main__"]
    for path, hidden in (("<stdin>", True), (__file__, False)):
        monkeypatch.setattr(main, "__file__", path, raising=False)
        monkeypatch.setattr(main, "__spec__", None, raising=False)
        with parallel._starting(forked=False):
            assert hasattr(main, "__file__") is not hidden
        with parallel._starting(forked=True):  # a forked worker runs nothing again
            assert main.__file__ == path
        assert main.__file__ == path
