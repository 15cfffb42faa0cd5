"""One file, many partitions: msgpack_reader_py.dask splits a file into byte ranges whose
first records are proved by a chain of small tasks, on a real two-process cluster."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import distributed
import pandas as pd
import pytest
from dask.delayed import Delayed

from msgpack_reader_py import (
    DecodeError,
    Item,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py import dask as dask_module
from msgpack_reader_py._split.ranges import cut_file, read_range
from msgpack_reader_py.dask import read_bag, read_dataframe
from tests.helpers import packed, zstd_frames
from tests.user_code import TYPES, run_user_code

TIMEOUT = 60
ITEMS = list(get_iter(3000, seed=11))
FIELDS = [field.name for field in dataclasses.fields(Item)]


@dataclasses.dataclass
class Carrier:
    """A record whose payload holds a file of its own kind (importable by the workers)."""

    name: str
    payload: bytes


@pytest.fixture(scope="module")
def item_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ranges") / "items.msgpack"
    path.write_bytes(pack_items(ITEMS))
    return path


def carriers(tmp_path: Path) -> tuple[Path, list[Carrier]]:
    """A file of carriers whose payloads are files of carriers: guesses go wrong in it."""
    inner = b"".join(packed([f"inner{i}", b""]) for i in range(40))
    records = [Carrier(f"outer{i}", inner) for i in range(30)]
    path = tmp_path / "carriers.msgpack"
    path.write_bytes(b"".join(packed([r.name, r.payload]) for r in records))
    return path, records


def rows(frame: pd.DataFrame) -> list[Item]:
    return [Item(*row) for row in frame[FIELDS].itertuples(index=False)]


def test_one_file_in_many_partitions_on_a_cluster(
    client: distributed.Client, item_path: Path
) -> None:
    frame = read_dataframe(str(item_path), blocksize=4096)
    assert frame.npartitions == -(-item_path.stat().st_size // 4096)
    got = client.compute(frame).result(timeout=TIMEOUT)
    assert rows(got) == ITEMS
    bag = read_bag(str(item_path), blocksize=10_000)
    assert client.compute(bag).result(timeout=TIMEOUT) == ITEMS
    # None keeps a partition per file
    assert read_dataframe(str(item_path), blocksize=None).npartitions == 1


def test_a_zstd_file_of_frames_in_many_partitions(
    client: distributed.Client, tmp_path: Path
) -> None:
    data = pack_items(ITEMS)
    path = tmp_path / "items.msgpack.zst"
    path.write_bytes(zstd_frames(data, range(4096, len(data), 4096)))
    frame = read_dataframe(str(path), blocksize=10_000)
    assert frame.npartitions == len(cut_file(path, 10_000)) > 1
    assert rows(client.compute(frame).result(timeout=TIMEOUT)) == ITEMS
    bag = read_bag(str(path), blocksize=10_000)
    assert client.compute(bag).result(timeout=TIMEOUT) == ITEMS


def test_a_corrupt_zstd_frame_fails_with_the_sequential_error(
    client: distributed.Client, tmp_path: Path
) -> None:
    data = pack_items(ITEMS)
    framed = bytearray(zstd_frames(data, range(4096, len(data), 4096), checksum=True))
    second = len(zstd_frames(data[:4096], [], checksum=True)) + 20  # in the second frame
    framed[second] ^= 0x10
    path = tmp_path / "bad.msgpack.zst"
    path.write_bytes(framed)
    with pytest.raises(DecodeError) as sequential:
        list(StreamingReader(path))
    frame = read_dataframe(str(path), blocksize=10_000)
    assert frame.npartitions > 1
    with pytest.raises(DecodeError) as split:
        client.compute(frame).result(timeout=TIMEOUT)
    assert (split.value.index, split.value.offset) == (
        sequential.value.index,
        sequential.value.offset,
    )
    assert "corrupt zstd data" in str(split.value)


def test_payloads_of_the_same_kind_split_exactly(
    client: distributed.Client, tmp_path: Path
) -> None:
    path, records = carriers(tmp_path)
    bag = read_bag(str(path), Carrier, blocksize=97)
    assert bag.npartitions > 30
    assert client.compute(bag).result(timeout=TIMEOUT) == records


@pytest.mark.parametrize("projected", [False, True], ids=["every-column", "one-column"])
def test_a_broken_file_fails_with_the_sequential_error(
    client: distributed.Client, tmp_path: Path, projected: bool
) -> None:
    path = tmp_path / "cut.msgpack"
    path.write_bytes(pack_items(ITEMS)[:-9])
    with pytest.raises(TruncatedStreamError) as sequential:
        list(StreamingReader(path))
    frame = read_dataframe(str(path), blocksize=5000)
    with pytest.raises(TruncatedStreamError) as split:
        client.compute(frame["value"].sum() if projected else frame).result(timeout=TIMEOUT)
    assert split.value.index == sequential.value.index == len(ITEMS) - 1
    assert split.value.offset == sequential.value.offset
    assert split.value.source == str(path)


def test_the_cluster_weighs_a_range_by_its_rows(
    client: distributed.Client, item_path: Path
) -> None:
    # The scheduler keeps the task that proves a range on the worker that read it only if it
    # knows the piece is large; weighed as a bare object (a hundred bytes), a piece was copied
    # to whichever worker was free.
    from dask.sizeof import sizeof

    for collection in (
        read_dataframe(str(item_path), blocksize=20_000),
        read_bag(str(item_path), blocksize=20_000),
    ):
        graph = dict(collection.__dask_graph__())
        reads = [key for key in graph if str(key).startswith("_read-")]
        assert len(reads) == collection.npartitions > 1
        future = client.compute(Delayed(reads[1], graph))
        rows = int(sizeof(future.result(timeout=TIMEOUT).value))  # a frame's or a list's
        weighed = client.nbytes(keys=[future.key], summary=False)[future.key]
        assert 10_000 < rows <= weighed < 2 * rows + 2000


def test_a_split_file_builds_only_the_columns_a_computation_uses(
    monkeypatch: pytest.MonkeyPatch, item_path: Path
) -> None:
    built: list[tuple[str, ...] | None] = []

    def spy(*arguments: Any) -> Any:
        built.append(arguments[-1].arrow.columns)  # the range's job
        return read_range(*arguments)

    monkeypatch.setattr(dask_module, "read_range", spy)
    frame = read_dataframe(str(item_path), blocksize=20_000)
    assert frame.npartitions > 2
    assert frame["id"].sum().compute(scheduler="sync") == sum(item.id for item in ITEMS)
    assert built == [("id",)] * frame.npartitions
    built.clear()
    both = frame[["value", "path"]].compute(scheduler="sync")
    assert built == [("value", "path")] * frame.npartitions
    assert both["path"].tolist() == [item.path for item in ITEMS]
    built.clear()
    nothing = frame[[]].compute(scheduler="sync")  # no column: one is read for the rows
    assert (len(nothing), list(nothing.columns)) == (len(ITEMS), [])
    assert built == [("id",)] * frame.npartitions
    built.clear()
    assert rows(frame.compute(scheduler="sync")) == ITEMS
    assert built == [None] * frame.npartitions


def test_a_projection_of_a_split_file_is_exact_on_a_cluster(
    client: distributed.Client, tmp_path: Path
) -> None:
    # Payloads holding records of the same kind make guesses go wrong: the ranges read again
    # from their proved starts build the projected columns too.
    path, records = carriers(tmp_path)
    frame = read_dataframe(str(path), Carrier, blocksize=97)
    assert frame.npartitions > 30
    names = client.compute(frame["name"]).result(timeout=TIMEOUT)
    assert names.tolist() == [r.name for r in records]
    assert client.compute(frame.name.str.len().sum()).result(timeout=TIMEOUT) == sum(
        len(r.name) for r in records
    )


def test_blocksize_is_checked() -> None:
    with pytest.raises(ValueError, match="blocksize must be a positive int"):
        read_bag("x.msgpack", blocksize=0)


NOTEBOOK = '''
import concurrent.futures
import multiprocessing

import dask
import distributed

from msgpack_reader_py import StreamingReader
from msgpack_reader_py.dask import read_bag, read_dataframe

events = write("events.msgpack", EVENTS)
messages = write("messages.msgpack", [e.message for e in EVENTS])
records = list(StreamingReader(events, Event))  # every type used here before it is sent
kinds = list(StreamingReader(messages, Ping | Pong))


def frames():
    """Made again each time, as a notebook's cells make them: each is tokenized anew."""
    return (
        read_dataframe(str(events), Event, blocksize=None),
        read_dataframe(str(events), Event, blocksize=4 * BLOCKSIZE),
    )


def bags():
    return (
        read_bag(str(messages), Ping | Pong, blocksize=None),
        read_bag(str(events), Event, blocksize=4 * BLOCKSIZE),
    )


assert frames()[1].npartitions > 5 and bags()[1].npartitions > 5
expected = None
# One worker process, started as Dask starts them (spawn): every task's input goes through
# this process, and the records with it.
spawned = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
with distributed.Client(sys.argv[2]) as client, spawned:
    for scheduler in ("sync", "threads", "processes", client):
        for _ in range(2):  # the same types again
            with dask.config.set(pool=spawned if scheduler == "processes" else None):
                whole, split = dask.compute(*frames(), scheduler=scheduler)
                union, bag = dask.compute(*bags(), scheduler=scheduler)
            expected = whole if expected is None else expected
            assert whole.equals(expected) and split.reset_index(drop=True).equals(expected)
            assert whole["id"].tolist() == [r.id for r in records]
            assert union == kinds and bag == records
            assert {type(r) for r in union} == {Ping, Pong}  # this process's own classes
            assert {type(r) for r in bag} == {Event}
        print(scheduler if isinstance(scheduler, str) else "cluster")
'''


def test_types_from_a_notebook_on_every_scheduler_and_a_cluster(
    client: distributed.Client, tmp_path: Path
) -> None:
    # No file to run again, a thread running: as a notebook's kernel, connected to the
    # module's two-process cluster.
    address = str(client.scheduler_info()["address"])
    out = run_user_code(TYPES + NOTEBOOK, "-c", tmp_path, address)
    assert out.split() == ["sync", "threads", "processes", "cluster"]
