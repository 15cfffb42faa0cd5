"""Records found without decoding those before them: counting by framing alone, and readers
that begin at record N (msgpack_reader_py._split.seek, the readers' ``start``)."""

from __future__ import annotations

import gc
import gzip
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import DecodeError, Item, StreamingReader, TruncatedStreamError
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._readers.values import ValueReader
from msgpack_reader_py._reference.generator import get_iter, pack_items
from msgpack_reader_py._split.parallel import RangedRead, Splitting
from msgpack_reader_py._split.seek import Counting, count_records, origin_for
from tests.helpers import drain, item_values, packed

ITEMS = list(get_iter(300, seed=9))
DATA = pack_items(ITEMS)


def test_count_counts_by_framing_alone(tmp_path: Path) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA + packed(item_values(id="not an int")) + packed([1, 2]))
    assert count_records(path) == 302  # no record checked against a type
    assert count_records(path.read_bytes(), read_size=7) == 302
    assert count_records(gzip.compress(path.read_bytes())) == 302
    assert count_records(b"") == 0


def test_count_in_ranges_is_the_same(tmp_path: Path) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    for blocksize in (50, 999, 4096):
        assert count_records(path, Item, workers=2, blocksize=blocksize) == len(ITEMS)


def test_count_fails_where_framing_breaks(tmp_path: Path) -> None:
    path = tmp_path / "cut.msgpack"
    path.write_bytes(DATA[:-4])
    with pytest.raises(TruncatedStreamError) as info:
        count_records(path)
    assert info.value.index == len(ITEMS) - 1
    assert info.value.source == str(path)
    with pytest.raises(TruncatedStreamError) as split:
        count_records(path, Item, workers=2, blocksize=1000)
    assert (split.value.index, split.value.offset) == (info.value.index, info.value.offset)
    with pytest.raises(ValueError, match="follow=True would never end it"):
        count_records(path, follow=True)


@settings(deadline=None, max_examples=60)
@given(start=st.integers(0, len(ITEMS) + 5), read_size=st.integers(1, 3000))
def test_a_reader_begins_at_any_record(start: int, read_size: int) -> None:
    got = list(StreamingReader(DATA, start=start, read_size=read_size))
    assert got == ITEMS[start:]


def test_every_reader_takes_start(tmp_path: Path) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    assert read_table(path, start=290).column("id").to_pylist() == list(range(290, 300))
    values = list(ValueReader(path, start=298))
    assert [value[0] for value in values] == [298, 299]
    for bad in (-1, True, "3"):
        with pytest.raises(ValueError, match="start must be a non-negative int"):
            StreamingReader(path, start=bad)  # type: ignore[arg-type]


def test_records_before_start_are_not_decoded_but_their_framing_is_checked() -> None:
    unchecked = packed(item_values(id="bad")) + DATA
    assert list(StreamingReader(unchecked, start=1)) == ITEMS
    records, error = drain(StreamingReader(unchecked, start=0))
    assert records == []
    assert error.index == 0
    cut: Any = DATA[:-4]
    records, error = drain(StreamingReader(cut, start=5))
    assert records == ITEMS[5:-1]
    assert isinstance(error, TruncatedStreamError)
    assert error.index == len(ITEMS) - 1


def test_a_count_lets_a_later_read_of_the_same_file_begin_near_its_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    options = ReadOptions(read_size=1000)
    assert origin_for(path, 250, options) == (0, 0)  # nothing known yet
    assert count_records(path, options=options) == len(ITEMS)
    index, offset = origin_for(path, 250, options)
    assert 0 < index <= 250
    assert offset == len(pack_items(ITEMS[:index]))
    assert list(StreamingReader(path, start=250)) == ITEMS[250:]
    more = list(get_iter(5, seed=1))
    with path.open("ab") as stream:  # the file changed: what the count knew is not used
        stream.write(pack_items(more))
    assert origin_for(path, 250, options) == (0, 0)
    assert list(StreamingReader(path, start=299)) == [ITEMS[-1], *more]
    assert origin_for(DATA, 250, options) == (0, 0)  # bytes: nothing to know


FOREIGN = b"".join(b'{"id": %d, "name": "record %d"}\n' % (i, i) for i in range(5000))  # JSON Lines


def test_count_refuses_what_looks_like_another_format(tmp_path: Path) -> None:
    # Framed, JSON text is a stream of small integers: a count of them, with status 0, would
    # be a number about nothing. Refused as an untyped read refuses it; force counts anyway.
    path = tmp_path / "records.jsonl"
    path.write_bytes(FOREIGN)
    for workers in (None, 2):
        with pytest.raises(DecodeError, match="this looks like JSON text") as info:
            count_records(path, Item, workers=workers, blocksize=10_000)
        assert (info.value.index, info.value.offset) == (0, 0)
    assert count_records(path, force=True) == len(FOREIGN)  # one fixint per byte


def test_a_split_count_that_fails_leaves_no_worker_behind(tmp_path: Path) -> None:
    # The pool is shut down before the error reaches the caller, not when the garbage collector
    # finds it: that may be in the pool's own thread, which cannot wait for itself.
    path = tmp_path / "records.jsonl"
    path.write_bytes(FOREIGN)
    others = set(multiprocessing.active_children())  # another test's, if any
    gc.disable()
    try:
        with pytest.raises(DecodeError, match="this looks like JSON text"):
            count_records(path, Item, workers=2, blocksize=10_000)
        assert set(multiprocessing.active_children()) <= others
        # A reader its user never closes: the error closes what read its ranges.
        ranged = RangedRead(path, Item, Counting(), ReadOptions(), splitting=Splitting(2, 10_000))
        with pytest.raises(DecodeError, match="this looks like JSON text"):
            list(ranged.batches())
        assert set(multiprocessing.active_children()) <= others
    finally:
        gc.enable()


def test_an_untyped_read_from_a_counted_file_still_refuses_another_format(
    tmp_path: Path,
) -> None:
    # A count keeps where each run of the file starts; a reader beginning near the end seeks
    # there. An untyped one must still see the file's first bytes, which say what it is.
    path = tmp_path / "records.jsonl"
    path.write_bytes(FOREIGN)
    assert count_records(path, force=True) == len(FOREIGN)
    assert origin_for(path, len(FOREIGN) - 2, ReadOptions()) != (0, 0)
    records, error = drain(ValueReader(path, start=len(FOREIGN) - 2))
    assert records == []
    assert isinstance(error, DecodeError)
    assert "this looks like JSON text" in error.reason
    assert list(ValueReader(path, start=len(FOREIGN) - 2, force=True)) == list(FOREIGN[-2:])
