"""StreamingReader owns what it opens and only that: a path's file is closed when the reader is
exhausted, closed, dropped or fails; a caller's stream stays open; ``read_items`` likewise.
"""

from __future__ import annotations

import gc
import io
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import msgpack
import pytest

from msgpack_reader_py import (
    Item,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
    read_items,
)
from tests.reference import REFERENCE_MESSAGES

from .helpers import (
    SAMPLE,
    Loose,
    is_open,
    item_map,
    item_values,
    no_resource_warning,
    rec,
)


@pytest.fixture
def truncated_path(tmp_path: Path) -> Path:
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(pack_items(get_iter(50))[:-3])
    return path


# --------------------------------------------------------------------------------------------
# Ownership
# --------------------------------------------------------------------------------------------


def _exhaust(reader: StreamingReader[Item]) -> None:
    assert len(list(reader)) == 50


def _close_midway(reader: StreamingReader[Item]) -> None:
    next(reader)
    reader.close()


def _with_block(reader: StreamingReader[Item]) -> None:
    with reader as entered:
        assert entered is reader
        next(entered)


def _abandon(reader: StreamingReader[Item]) -> None:
    iterator = iter(reader)
    next(iterator)
    next(reader)


ENDINGS: dict[str, Callable[[StreamingReader[Item]], None]] = {
    "exhausted": _exhaust,
    "close()": _close_midway,
    "with exit": _with_block,
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_path_file_is_closed(ending: str, small_path: Path) -> None:
    reader = StreamingReader(small_path)
    assert is_open(small_path)
    ENDINGS[ending](reader)
    assert not is_open(small_path)
    del reader


@pytest.mark.parametrize("as_str", [False, True])
def test_path_file_is_closed_when_abandoned_reader_is_dropped(
    small_path: Path, as_str: bool
) -> None:
    with no_resource_warning():
        reader = StreamingReader(str(small_path) if as_str else small_path)
        _abandon(reader)
        assert is_open(small_path)
        del reader
    assert not is_open(small_path)  # no_resource_warning collected the garbage


def test_path_file_is_closed_when_unstarted_reader_is_dropped(small_path: Path) -> None:
    with no_resource_warning():
        reader = StreamingReader(small_path)
        assert is_open(small_path)
        del reader
    assert not is_open(small_path)  # no_resource_warning collected the garbage


def test_path_file_is_closed_when_an_abandoned_for_loop_drops_the_reader(
    small_path: Path,
) -> None:
    with no_resource_warning():
        for item in StreamingReader(small_path):
            if item.id == 3:
                break
    assert not is_open(small_path)  # no_resource_warning collected the garbage


def test_path_file_is_closed_when_an_error_is_raised(truncated_path: Path) -> None:
    reader = StreamingReader(truncated_path)
    with pytest.raises(TruncatedStreamError):
        list(reader)
    assert not is_open(truncated_path)


STREAM_ENDINGS: dict[str, Callable[[StreamingReader[Item]], None]] = {
    **ENDINGS,
    "abandoned": _abandon,
}


@pytest.mark.parametrize("ending", list(STREAM_ENDINGS))
def test_caller_stream_stays_open(ending: str, small_path: Path) -> None:
    with open(small_path, "rb") as stream:
        reader = StreamingReader(stream)
        STREAM_ENDINGS[ending](reader)
        del reader
        gc.collect()
        assert not stream.closed
        assert stream.read(0) == b""


def test_caller_stream_stays_open_after_an_error(truncated_path: Path) -> None:
    with open(truncated_path, "rb") as stream:
        reader = StreamingReader(stream)
        with pytest.raises(TruncatedStreamError):
            list(reader)
        reader.close()
        assert not stream.closed
    bytes_io = io.BytesIO(truncated_path.read_bytes())
    with pytest.raises(TruncatedStreamError), StreamingReader(bytes_io) as reader:
        list(reader)
    assert not bytes_io.closed


def test_close_twice_is_fine(small_path: Path) -> None:
    reader = StreamingReader(small_path)
    assert not reader.closed
    reader.close()
    reader.close()
    assert reader.closed
    assert not is_open(small_path)


USES_AFTER_CLOSE: dict[str, Callable[[StreamingReader[Item]], object]] = {
    "next": next,
    "iter": iter,
    "list": list,
    "for": lambda reader: sum(1 for _ in reader),
}


@pytest.mark.parametrize("use", list(USES_AFTER_CLOSE))
def test_iterating_after_close_raises_value_error(use: str) -> None:
    reader = StreamingReader(pack_items(get_iter(5)))
    next(reader)
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        USES_AFTER_CLOSE[use](reader)


def test_close_before_iterating_raises_on_next() -> None:
    reader = StreamingReader(pack_items(get_iter(5)))
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        next(reader)


def test_temporary_reader_in_for_loop_yields_everything(
    tmp_path: Path, reference_bytes: bytes
) -> None:
    """The reader object is dropped at once; iteration must not end with it.

    Two temporary readers, a file's and a bytes object's, both read in 4 KiB pieces; garbage
    is collected once, halfway, with each of them between two reads and records still to come.
    """
    path = tmp_path / "reference.msgpack"
    path.write_bytes(reference_bytes)
    ids = []
    count = 0
    for item, _ in zip(
        StreamingReader(path, read_size=4096),
        StreamingReader(reference_bytes, read_size=4096),
        strict=True,
    ):
        if count == REFERENCE_MESSAGES // 2:
            gc.collect()
        ids.append(item.id)
        count += 1
    assert ids == list(range(REFERENCE_MESSAGES))
    assert count == REFERENCE_MESSAGES
    assert not is_open(path)


def test_iterator_from_a_dropped_reader_keeps_going(reference_items: list[Item]) -> None:
    data = pack_items(reference_items[:100])
    iterator: Iterator[Item] = iter(StreamingReader(io.BytesIO(data), read_size=64))
    gc.collect()
    assert list(iterator) == reference_items[:100]


def test_read_items_yields_the_same_records_and_closes_its_file(
    reference_items: list[Item], reference_path: Path
) -> None:
    records = read_items(reference_path)
    first = next(records)
    assert is_open(reference_path)
    assert [first, *records] == reference_items
    assert not is_open(reference_path)


def test_read_items_closes_its_file_when_closed_early(reference_path: Path) -> None:
    records = read_items(str(reference_path))
    next(records)
    assert is_open(reference_path)
    assert isinstance(records, Generator)
    records.close()
    assert not is_open(reference_path)


def test_read_items_closes_its_file_on_error(truncated_path: Path) -> None:
    records = read_items(truncated_path)
    with pytest.raises(TruncatedStreamError):
        list(records)
    assert not is_open(truncated_path)


def test_read_items_checks_arguments_at_the_call(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_items(tmp_path / "missing.msgpack")
    with pytest.raises(ValueError, match="max_record_size"):
        read_items(b"", max_record_size=0)


def test_read_items_passes_options_on() -> None:
    data = rec(*item_values(line="oops"))
    with pytest.raises(RecordError, match="field `line` expected int, got str 'oops'"):
        list(read_items(data))
    assert list(read_items(data + rec(*SAMPLE.to_list()), on_error="skip")) == [SAMPLE]
    assert list(read_items(data, mapper=len)) == [8]
    keyed = item_map(q=1)
    assert list(read_items(keyed)) == [SAMPLE]
    with pytest.raises(RecordError, match="map has key 'q', which names no field"):
        list(read_items(keyed, forbid_unknown_keys=True))
    hooked = rec("k", msgpack.ExtType(5, b"x"))
    got = list(read_items(hooked, Loose, ext_hook=lambda code, data: (code, bytes(data))))
    assert got == [Loose("k", (5, b"x"))]
    with pytest.raises(RecordTooLargeError):
        list(read_items(data, max_record_size=10))
