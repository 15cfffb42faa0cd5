"""The sidecar index (``_split.index``): written beside a file, used to seek and to split
without guessing, ignored with a note when it no longer fits its file, extended as a file grows."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import DecodeError, Item, StreamingReader
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._reference.generator import get_iter, pack_items
from msgpack_reader_py._split.index import index_path, load_index, write_index
from msgpack_reader_py._split.parallel import Splitting, read_ranges
from msgpack_reader_py._split.ranges import RangeStats, Records
from msgpack_reader_py._split.seek import count_records
from msgpack_reader_py.cli import main

ITEMS = list(get_iter(500, seed=2))
DATA = pack_items(ITEMS)


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    write_index(path, every=7)
    return path


def tamper(path: Path, **changes: object) -> None:
    """Rewrite the index of ``path`` with some of its fields changed."""
    where = Path(index_path(path))
    fields = msgpack.unpackb(where.read_bytes())
    fields.update(changes)
    where.write_bytes(msgpack.packb(fields))


def test_the_index_holds_every_kth_record(indexed: Path) -> None:
    index = load_index(indexed)
    assert index is not None
    assert index.count == 500
    assert index.end == len(DATA)
    assert index.offsets == [len(pack_items(ITEMS[:k])) for k in range(0, 500, 7)]
    assert index.origin(0) == (0, 0)
    assert index.origin(15) == (14, index.offsets[2])
    assert index.origin(900) == (500, len(DATA))


def test_count_takes_the_count_from_a_valid_index(indexed: Path) -> None:
    assert count_records(indexed) == 500
    tamper(indexed, count=499)  # trusted: the count is the index's
    assert count_records(indexed) == 499


@settings(deadline=None, max_examples=40)
@given(start=st.integers(0, 520))
def test_a_reader_seeks_through_the_index(
    tmp_path_factory: pytest.TempPathFactory, start: int
) -> None:
    path = tmp_path_factory.mktemp("seek") / "items.msgpack"
    path.write_bytes(DATA)
    write_index(path, every=13)
    assert list(StreamingReader(path, start=start)) == ITEMS[start:]


def in_ranges(path: Path) -> tuple[list[Any], RangeStats]:
    """The records of ``path`` read in ranges of 900 bytes, and what the split read did."""
    stats = RangeStats()
    options = ReadOptions()
    pieces = read_ranges(
        path, Item, Records(), options=options, splitting=Splitting(1, 900), stats=stats
    )
    return [record for piece in pieces for record in piece.value], stats


def test_ranges_start_where_the_index_says_with_no_guess(indexed: Path) -> None:
    records, stats = in_ranges(indexed)
    assert records == ITEMS
    assert stats.slowest_guess == 0.0  # every range started at an indexed record
    assert stats.rereads == 0


def test_a_wrong_index_is_caught_by_the_proof(indexed: Path) -> None:
    index = load_index(indexed)
    assert index is not None
    tamper(indexed, offsets=[offset + 3 for offset in index.offsets])
    records, stats = in_ranges(indexed)
    assert records == ITEMS
    assert stats.rereads > 0


def test_a_seek_through_the_index_frames_nothing_before_it(tmp_path: Path) -> None:
    # A byte no MessagePack holds, past the 64 KiB the index hashes and before record 2000:
    # framed from the file's start, it fails; seeking through the index, it is never read.
    items = list(get_iter(3000, seed=4))
    data = pack_items(items)
    path = tmp_path / "items.msgpack"
    path.write_bytes(data)
    write_index(path, every=100)
    at = len(pack_items(items[:1500])) + 1
    assert at > 64 * 1024
    path.write_bytes(data[:at] + b"\xc1" + data[at + 1 :])
    assert list(StreamingReader(path, start=2000)) == items[2000:]
    Path(index_path(path)).unlink()
    with pytest.raises(DecodeError) as info:
        list(StreamingReader(path, start=2000))
    assert info.value.index == 1500


def test_a_stale_index_is_ignored_with_a_note(
    indexed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    indexed.write_bytes(DATA[:-100])
    with caplog.at_level(logging.WARNING, logger="msgpack_reader_py"):
        assert load_index(indexed) is None
    assert "ignored: the file is smaller than when it was indexed" in caplog.text
    indexed.write_bytes(b"\x90" + DATA[1:])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="msgpack_reader_py"):
        assert load_index(indexed) is None
    assert "the file's first bytes changed since it was indexed" in caplog.text
    Path(index_path(indexed)).write_bytes(b"not an index")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="msgpack_reader_py"):
        assert load_index(indexed) is None
    assert "it is not an index this version reads" in caplog.text


def test_a_grown_file_keeps_its_index_and_extends_it(indexed: Path) -> None:
    more = list(get_iter(30, seed=8))
    with indexed.open("ab") as stream:
        stream.write(pack_items(more))
    grown = load_index(indexed)
    assert grown is not None  # valid for what it indexed
    assert grown.count == 500
    assert count_records(indexed) == 530  # the index, and the new records framed
    assert list(StreamingReader(indexed, start=520)) == more[20:]
    extended = write_index(indexed, every=7)
    assert extended.count == 530
    assert extended.offsets[: len(grown.offsets)] == grown.offsets
    assert write_index(indexed, every=7) == extended  # nothing new: the same index


def test_what_cannot_be_indexed(tmp_path: Path) -> None:
    squeezed = tmp_path / "items.msgpack.gz"
    squeezed.write_bytes(gzip.compress(DATA))
    with pytest.raises(ValueError, match="gzip-compressed: its records cannot be found"):
        write_index(squeezed)
    with pytest.raises(ValueError, match="every must be a positive int"):
        write_index(squeezed, every=0)


def test_the_index_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    assert main(["index", "--every", "100", str(path)]) == 0
    assert capsys.readouterr() == (
        f"Indexed 500 records of {path} ({len(DATA):,} bytes), an entry every 100, in "
        f"{path}.index\n",
        "",
    )
    assert main(["tail", "-n", "1", "--type", "item", str(path)]) == 0
    assert '"id":499' in capsys.readouterr().out
    assert main(["index", "-"]) == 2
    assert "stdin has no place beside it for an index" in capsys.readouterr().err
    path.write_bytes(DATA[:-1])
    assert main(["index", str(path)]) == 1
    _out, err = capsys.readouterr()
    assert "record 499 at byte" in err
