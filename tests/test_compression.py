"""Compressed input, read transparently: gzip, bzip2, xz and zstd, from every kind of source."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import (
    DecodeError,
    Item,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py._arrow.reader import read_batches

from .helpers import Trickle, drain

ITEMS = list(get_iter(300))
DATA = pack_items(ITEMS)
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


@pytest.mark.parametrize("kind", COMPRESSORS)
@pytest.mark.parametrize("how", ["bytes", "path", "stream", "trickle", "read_size=1"])
def test_every_format_from_every_source(tmp_path: Path, kind: str, how: str) -> None:
    packed = COMPRESSORS[kind](DATA)
    path = tmp_path / "data.msgpack.x"
    path.write_bytes(packed)
    source: object = {
        "bytes": packed,
        "path": path,
        "stream": io.BytesIO(packed),
        "trickle": Trickle(packed, 3),
        "read_size=1": packed,
    }[how]
    reader = StreamingReader(source, read_size=1 if how == "read_size=1" else 65536)
    assert list(reader) == ITEMS
    assert reader.compression == kind
    assert reader.bytes_read == len(DATA)  # offsets count decompressed bytes
    assert reader.source_bytes_read == len(packed)


def test_multi_member_gzip_is_read_whole() -> None:
    packed = gzip.compress(DATA[:1000]) + gzip.compress(DATA[1000:])
    assert list(StreamingReader(packed)) == ITEMS


def test_several_zstd_frames_are_read_whole() -> None:
    compress = zstandard.ZstdCompressor().compress
    assert list(StreamingReader(compress(DATA[:999]) + compress(DATA[999:]))) == ITEMS


@pytest.mark.parametrize("low", [0x0, 0xF])
def test_a_zstd_stream_may_start_with_a_skippable_frame(low: int) -> None:
    """As pzstd writes it: a skippable frame (holding the next frame's size) before each."""
    compress = zstandard.ZstdCompressor().compress
    frames = [compress(DATA[:999]), compress(DATA[999:])]
    magic = (0x184D2A50 + low).to_bytes(4, "little")
    packed = b"".join(
        magic + (4).to_bytes(4, "little") + len(f).to_bytes(4, "little") + f for f in frames
    )
    reader = StreamingReader(packed, read_size=1)
    assert list(reader) == ITEMS
    assert reader.compression == "zstd"
    with pytest.raises(TruncatedStreamError, match="zstd stream ends early"):
        list(StreamingReader(packed[:-3]))


def test_decompress_false_reads_the_bytes_as_they_are() -> None:
    reader = StreamingReader(gzip.compress(DATA), decompress=False)
    items, error = drain(reader)
    assert items == []
    assert reader.compression is None
    assert error.index == 0
    assert "gzip-compressed data, not decompressed (decompress=False)" in error.reason


def test_plain_input_is_not_compressed() -> None:
    reader = StreamingReader(DATA)
    assert list(reader) == ITEMS
    assert reader.compression is None
    assert reader.source_bytes_read == reader.bytes_read == len(DATA)


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_a_cut_off_compressed_stream_is_located_after_the_good_records(kind: str) -> None:
    packed = COMPRESSORS[kind](DATA)
    items, error = drain(StreamingReader(packed[: len(packed) * 2 // 3]))
    assert isinstance(error, TruncatedStreamError)
    assert items == ITEMS[: len(items)]
    assert error.index == len(items)
    assert error.offset == len(pack_items(items))
    assert f"the {kind} stream ends early" in error.reason


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz"])
def test_corrupt_compressed_data_is_a_located_decode_error(kind: str) -> None:
    packed = bytearray(COMPRESSORS[kind](DATA))
    packed[len(packed) // 2] ^= 0xFF
    items, error = drain(StreamingReader(bytes(packed)))
    assert isinstance(error, DecodeError | TruncatedStreamError)  # what the damage became
    assert items == ITEMS[: len(items)]
    assert error.index == len(items)
    assert error.offset == len(pack_items(items))
    assert error.__cause__ is not None


def test_a_source_error_under_a_decompressor_passes_through() -> None:
    class Failing(io.RawIOBase):
        def __init__(self) -> None:
            super().__init__()
            self._data = io.BytesIO(gzip.compress(DATA)[:200])

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1, /) -> bytes:
            chunk = self._data.read(size)
            if not chunk:
                raise ConnectionResetError("reset by peer")
            return chunk

    with pytest.raises(ConnectionResetError):
        list(StreamingReader(Failing()))


def test_zstd_without_zstandard_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)
    items, error = drain(StreamingReader(COMPRESSORS["zstd"](DATA)))
    assert items == []
    assert error.index == 0
    assert "this looks like zstd-compressed data" in error.reason
    assert "with its 'zstd' extra" in error.reason


def test_a_live_source_is_not_held_back_by_sniffing() -> None:
    # One record, then the source blocks (here: fails): the record must come first.
    first = pack_items(ITEMS[:1])

    class OneThenFail(io.RawIOBase):
        sent = False

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1, /) -> bytes:
            if self.sent:
                raise TimeoutError("no more data yet")
            self.sent = True
            return first

    reader = iter(StreamingReader(OneThenFail()))
    assert next(reader) == ITEMS[0]
    with pytest.raises(TimeoutError):
        next(reader)


def test_arrow_batches_of_compressed_input() -> None:
    with read_batches(gzip.compress(DATA)) as batches:
        rows = [Item(**row) for batch in batches for row in batch.to_pylist()]
        assert batches.compression == "gzip"
        assert batches.source_bytes_read < batches.bytes_read == len(DATA)
    assert rows == ITEMS


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(min_value=1, max_value=len(gzip.compress(DATA)) - 1))
def test_any_cut_of_a_gzip_stream_gives_the_records_before_it_then_a_located_error(
    cut: int,
) -> None:
    items, error = drain(StreamingReader(gzip.compress(DATA)[:cut], read_size=4096))
    assert items == ITEMS[: len(items)]
    assert error.index == len(items)
    assert error.offset == len(pack_items(items))
