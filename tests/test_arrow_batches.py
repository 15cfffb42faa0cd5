"""How records become Arrow batches: full batches but the last, ``batch_size``, batches cut by
``MAX_BATCH_BYTES``, and ``_rebatched``, which cuts the reader's pieces into batches.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import (
    Item,
    get_iter,
    pack_items,
)
from msgpack_reader_py._arrow import reader as arrow_module
from msgpack_reader_py._arrow.reader import (
    DEFAULT_BATCH_SIZE,
    arrow_schema,
    read_batches,
    read_table,
)
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE
from tests.reference import REFERENCE_MESSAGES

from .helpers import (
    Row,
    examples,
    expected_sizes,
    rows_of,
)

# --------------------------------------------------------------------------------------------
# Batch boundaries
# --------------------------------------------------------------------------------------------


BATCH_SIZES = [1, 7, 1000, 9999, 10000, 10001, 65536]
# Every batch size with the default reads, a few with an odd read size; batches of 1 and 7 rows
# over the stream's first 1000 records, the others over all of it. Reads of a few bytes (at
# most one record finished per read) are the property test's, over short streams; every way
# of cutting pieces into batches is tested on _rebatched itself.
BATCHINGS = [
    *((batch_size, DEFAULT_READ_SIZE) for batch_size in BATCH_SIZES),
    (7, 333),
    (10001, 333),
]


@pytest.mark.parametrize(("batch_size", "read_size"), BATCHINGS)
def test_batches_are_full_except_the_last_and_hold_every_record(
    batch_size: int,
    read_size: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Every batch but the last has batch_size rows; together they are every record, in order."""
    count = 1000 if batch_size < 10 else REFERENCE_MESSAGES
    data = reference_bytes[: record_offsets[count]]
    batches = list(read_batches(data, batch_size=batch_size, read_size=read_size))
    assert [batch.num_rows for batch in batches] == expected_sizes(count, batch_size)
    assert all(isinstance(batch, pa.RecordBatch) for batch in batches)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == reference_rows[:count]


def test_default_batch_size_is_published_and_used() -> None:
    """Without batch_size, batches hold DEFAULT_BATCH_SIZE rows."""
    count = DEFAULT_BATCH_SIZE + 3
    data = pack_items(get_iter(count, seed=3))
    assert [batch.num_rows for batch in read_batches(data)] == [DEFAULT_BATCH_SIZE, 3]
    assert read_table(data).num_rows == count


@settings(deadline=None, max_examples=150)
@given(
    count=st.integers(min_value=0, max_value=60),
    batch_size=st.integers(min_value=1, max_value=70),
    read_size=st.integers(min_value=1, max_value=400),
)
def test_batch_boundaries_property(
    count: int,
    batch_size: int,
    read_size: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Whatever the chunking, batches are full but the last, and together are the records."""
    data = reference_bytes[: record_offsets[count]]
    with read_batches(data, batch_size=batch_size, read_size=read_size) as reader:
        batches = list(reader)
        assert reader.bytes_read == len(data)
    assert [batch.num_rows for batch in batches] == expected_sizes(count, batch_size)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == reference_rows[:count]


def test_read_table_passes_batch_size_on(reference_bytes: bytes) -> None:
    """read_table's batch_size shapes the table's chunks."""
    table = read_table(reference_bytes, batch_size=3000)
    assert [batch.num_rows for batch in table.to_batches()] == expected_sizes(
        REFERENCE_MESSAGES, 3000
    )


# --------------------------------------------------------------------------------------------
# MAX_BATCH_BYTES
# --------------------------------------------------------------------------------------------

SMALL_BATCH_BYTES = 4096


@pytest.mark.parametrize("read_size", [1, 100, DEFAULT_READ_SIZE])
def test_max_batch_bytes_cuts_batches_short_keeping_every_record(
    read_size: int,
    monkeypatch: pytest.MonkeyPatch,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """Batches reaching MAX_BATCH_BYTES are cut before batch_size; no record lost or moved."""
    count, batch_size = 2000, 1500
    data = reference_bytes[: record_offsets[count]]
    monkeypatch.setattr(arrow_module, "MAX_BATCH_BYTES", SMALL_BATCH_BYTES)
    batches = list(read_batches(data, batch_size=batch_size, read_size=read_size))
    assert len(batches) >= 2
    assert all(batch.num_rows < batch_size for batch in batches)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == reference_rows[:count]


def test_max_batch_bytes_cuts_at_the_first_record_that_reaches_it(
    monkeypatch: pytest.MonkeyPatch,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """With one record per read, a batch is cut as soon as its columns reach the limit: it is
    never over it by more than its last record, and not cut before the limit."""
    count, batch_size = 1000, 900
    monkeypatch.setattr(arrow_module, "MAX_BATCH_BYTES", SMALL_BATCH_BYTES)
    batches = list(
        read_batches(reference_bytes[: record_offsets[count]], batch_size=batch_size, read_size=1)
    )
    assert rows_of(batches) == reference_rows[:count]
    for batch in batches[:-1]:
        assert batch.num_rows < batch_size
        assert batch.slice(0, batch.num_rows - 1).nbytes < SMALL_BATCH_BYTES
        assert batch.nbytes < SMALL_BATCH_BYTES + batch.slice(batch.num_rows - 1).nbytes
    assert batches[-1].nbytes < SMALL_BATCH_BYTES + batches[-1].slice(0, 1).nbytes


def test_batches_are_not_cut_by_bytes_below_the_limit(reference_bytes: bytes) -> None:
    """The real limit is far above the reference stream: only batch_size cuts."""
    batches = list(read_batches(reference_bytes, batch_size=4000, read_size=100))
    assert [batch.num_rows for batch in batches] == [4000, 4000, 2000]


# --------------------------------------------------------------------------------------------
# Cutting the reader's pieces into batches: _rebatched itself
# --------------------------------------------------------------------------------------------

ROW_BYTES = 8  # a row of the pieces below: one int64, no nulls


def numbered_pieces(sizes: list[int]) -> list[pa.StructArray]:
    """Pieces as the reader converts them per read: ``sizes[i]`` rows each, of one int64
    column ``n`` numbering the rows 0, 1, 2, ... across all the pieces."""
    starts = [0, *itertools.accumulate(sizes)]
    return [
        pa.StructArray.from_arrays([pa.array(range(start, start + size), pa.int64())], ["n"])
        for start, size in zip(starts[:-1], sizes, strict=True)
    ]


def numbers_of(batches: list[pa.RecordBatch]) -> list[int | None]:
    assert all(batch.schema.names == ["n"] for batch in batches)
    return [n for batch in batches for n in batch.column("n").to_pylist()]


def sizes_cut_by_bytes(sizes: list[int], batch_size: int, limit: int) -> list[int]:
    """Rows per batch, counted in rows: after each piece, while the rows pending fill a batch
    or their bytes reach ``limit``, a batch of at most ``batch_size`` of them is cut; what is
    left at the end is the last batch."""
    cuts: list[int] = []
    pending = 0
    for size in sizes:
        pending += size
        while pending >= batch_size or pending * ROW_BYTES >= limit:
            cuts.append(min(pending, batch_size))
            pending -= cuts[-1]
    return cuts + ([pending] if pending else [])


PIECE_SIZES = st.lists(st.integers(min_value=1, max_value=40), max_size=25)


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(sizes=PIECE_SIZES, batch_size=st.integers(min_value=1, max_value=100))
def test_rebatched_cuts_full_batches_but_the_last_from_any_pieces(
    sizes: list[int], batch_size: int
) -> None:
    """Whatever the pieces' sizes: batches of batch_size rows, the last one shorter, every row
    once and in order; a piece is split between batches where a batch fills."""
    batches = list(arrow_module._rebatched(iter(numbered_pieces(sizes)), batch_size))
    assert all(isinstance(batch, pa.RecordBatch) for batch in batches)
    assert [batch.num_rows for batch in batches] == expected_sizes(sum(sizes), batch_size)
    assert numbers_of(batches) == list(range(sum(sizes)))


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(
    sizes=PIECE_SIZES,
    batch_size=st.integers(min_value=1, max_value=100),
    limit_rows=st.integers(min_value=1, max_value=60),
    extra=st.integers(min_value=0, max_value=ROW_BYTES - 1),
)
def test_rebatched_cuts_a_batch_once_its_bytes_reach_the_limit(
    sizes: list[int], batch_size: int, limit_rows: int, extra: int
) -> None:
    """MAX_BATCH_BYTES is checked after each piece: the rows pending are cut into a batch as
    soon as their bytes reach it (never before), batch_size still the most rows a batch holds."""
    limit = (limit_rows - 1) * ROW_BYTES + 1 + extra  # reached by limit_rows rows, not fewer
    with mock.patch.object(arrow_module, "MAX_BATCH_BYTES", limit):
        batches = list(arrow_module._rebatched(iter(numbered_pieces(sizes)), batch_size))
    assert [batch.num_rows for batch in batches] == sizes_cut_by_bytes(sizes, batch_size, limit)
    assert numbers_of(batches) == list(range(sum(sizes)))
    for batch in batches[:-1]:
        assert batch.num_rows == batch_size or batch.nbytes >= limit
        assert batch.num_rows <= batch_size


@settings(deadline=None, max_examples=examples(ci=200, local=100))
@given(sizes=PIECE_SIZES, batch_size=st.integers(min_value=1, max_value=100))
def test_rebatched_delivers_the_pending_rows_before_the_pieces_exception(
    sizes: list[int], batch_size: int
) -> None:
    """An exception that ends the pieces comes after a last batch of the rows still pending
    (none if there are none), as it is."""
    error = OSError("the source broke")

    def failing() -> Iterator[pa.StructArray]:
        yield from numbered_pieces(sizes)
        raise error

    batches: list[pa.RecordBatch] = []
    with pytest.raises(OSError, match="the source broke") as info:
        batches.extend(arrow_module._rebatched(failing(), batch_size))
    assert info.value is error
    assert [batch.num_rows for batch in batches] == expected_sizes(sum(sizes), batch_size)
    assert numbers_of(batches) == list(range(sum(sizes)))


def test_rebatched_gives_no_batch_for_no_pieces() -> None:
    assert list(arrow_module._rebatched(iter([]), 10)) == []


def test_the_limit_cuts_a_batch_at_the_piece_that_reaches_it() -> None:
    """Worked example: pieces of 3, 3 and 4 rows, batches of 8, a limit of 5 rows' bytes."""
    with mock.patch.object(arrow_module, "MAX_BATCH_BYTES", 5 * ROW_BYTES):
        batches = list(arrow_module._rebatched(iter(numbered_pieces([3, 3, 4])), 8))
    assert [batch.num_rows for batch in batches] == [6, 4]
    assert numbers_of(batches) == list(range(10))
