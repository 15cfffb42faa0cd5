"""Errors of a live source pass through the reader unchanged, after the records that arrived.

An ``OSError`` from the source is about the source, not the data: the reader must hand over
every record that arrived before it, then let the very same exception out, not wrap it in a
``ReaderError`` and not mistake a connection lost mid-record for a truncated stream. (The same
over a real TCP connection reset by its peer is in ``integration/test_sources.py``.)
"""

from __future__ import annotations

import errno
from typing import Any

import pytest

from msgpack_reader_py import Item, ReaderError, StreamingReader, get_iter, pack_items

RECORDS = list(get_iter(3, seed=9))
THREE = pack_items(RECORDS)
FOURTH = pack_items(get_iter(4, seed=9))[len(THREE) :]


class LiveSource:
    """A connection: ``read1`` hands over ``data`` (at most ``n`` bytes per call, or all of it
    at once with ``whole``), then raises ``error``, as a socket does when its peer resets."""

    def __init__(self, data: bytes, error: OSError, *, whole: bool = False) -> None:
        self._data = data
        self._error = error
        self._whole = whole
        self.calls = 0

    def read1(self, size: int = -1) -> bytes:
        self.calls += 1
        if not self._data:
            raise self._error
        take = len(self._data) if self._whole else size
        chunk, self._data = self._data[:take], self._data[take:]
        return chunk

    def read(self, size: int = -1) -> bytes:
        raise AssertionError("a stream with read1 is read with read1")


def reset() -> OSError:
    return ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")


OPTIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "skip": {"on_error": "skip"},
    "mapper": {"mapper": Item.from_list},
    "small limit": {"max_record_size": 100},
}


@pytest.mark.parametrize("options", list(OPTIONS))
@pytest.mark.parametrize("read_size", [1, 7, 65536])
def test_connection_reset_after_three_records_passes_through_unchanged(
    read_size: int, options: str
) -> None:
    error = reset()
    source = LiveSource(THREE, error, whole=True)
    reader = StreamingReader(source, read_size=read_size, **OPTIONS[options])
    got: list[Item] = []
    with pytest.raises(ConnectionResetError) as info:
        got.extend(reader)
    assert got == RECORDS
    assert info.value is error  # the very exception the source raised
    assert type(info.value) is ConnectionResetError
    assert not isinstance(info.value, ReaderError)
    assert info.value.errno == errno.ECONNRESET
    assert info.value.args == (errno.ECONNRESET, "Connection reset by peer")
    assert info.value.__cause__ is None
    assert info.value.__context__ is None
    assert reader.skipped == 0
    with pytest.raises(StopIteration):  # the reader is finished
        next(reader)


def test_records_are_handed_over_before_the_failing_read() -> None:
    """The three records come out of the first read; only asking for a fourth reads again."""
    source = LiveSource(THREE, reset(), whole=True)
    reader = StreamingReader(source)
    assert [next(reader) for _ in range(3)] == RECORDS
    assert source.calls == 1
    with pytest.raises(ConnectionResetError):
        next(reader)
    assert source.calls == 2


@pytest.mark.parametrize("read_size", [1, 7, 65536])
@pytest.mark.parametrize("cut", [1, 5, len(FOURTH) - 1])
def test_connection_reset_inside_a_record_is_not_a_truncated_stream(
    read_size: int, cut: int
) -> None:
    error = reset()
    source = LiveSource(THREE + FOURTH[:cut], error)
    reader = StreamingReader(source, read_size=read_size)
    got: list[Item] = []
    with pytest.raises(ConnectionResetError) as info:
        got.extend(reader)
    assert got == RECORDS
    assert info.value is error
    assert info.value.__context__ is None
    assert reader.bytes_read == len(THREE) + cut


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError("timed out"),
        BrokenPipeError(errno.EPIPE, "Broken pipe"),
        OSError(errno.EIO, "Input/output error"),
    ],
    ids=["timeout", "broken pipe", "EIO"],
)
def test_other_source_errors_pass_through_unchanged(error: OSError) -> None:
    reader = StreamingReader(LiveSource(THREE + FOURTH[:4], error, whole=True))
    got: list[Item] = []
    with pytest.raises(type(error)) as info:
        got.extend(reader)
    assert got == RECORDS
    assert info.value is error
    assert not isinstance(info.value, ReaderError)
