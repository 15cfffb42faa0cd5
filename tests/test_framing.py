"""Framing: records of any mix of sizes, split into reads anywhere, are counted and located
exactly, whether the framing skips them in batches or one at a time."""

from __future__ import annotations

import io
import itertools
import random
import tracemalloc
from dataclasses import dataclass
from typing import Any, ClassVar

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import DecodeError, Item, RecordError, StreamingReader, TruncatedStreamError
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE, OnError
from msgpack_reader_py._stream.framing import _batches

from .helpers import Checked, examples


@dataclass
class Sized:
    id: int
    payload: bytes


@dataclass
class Stream:
    """Records ``[id, payload]`` as written, and how the reader is to read them."""

    payloads: list[bytes]
    data: bytes
    starts: list[int]  # where each record starts, then where the last one ends
    read_size: int

    def records(self, count: int | None = None) -> list[Sized]:
        return [Sized(i, p) for i, p in enumerate(self.payloads[:count])]


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    """Many small records, a large one now and then, read in chunks that hold dozens to
    hundreds of records: framing skips them in batches sized by the records' average, and a
    large record makes a batch run past the chunk's end, to be counted again."""
    # Sizes from a seeded generator: thousands of hypothesis draws per stream would be slow.
    rng = random.Random(draw(st.integers(0, 2**32), label="seed"))
    count = draw(st.integers(1, 3000), label="records")
    every = draw(st.integers(5, 400), label="one large record in")
    payloads = [
        b"x" * rng.randint(200, 3000) if rng.randrange(every) == 0 else b"s" * rng.randint(0, 8)
        for _ in range(count)
    ]
    records = [msgpack.packb([i, p]) for i, p in enumerate(payloads)]
    starts = [0]
    for record in records:
        starts.append(starts[-1] + len(record))
    read_size = draw(st.integers(256, 8192), label="read_size")
    return Stream(payloads, b"".join(records), starts, read_size)


def _read(data: bytes, stream: Stream, got: list[Sized]) -> None:
    got.extend(StreamingReader(io.BytesIO(data), Sized, read_size=stream.read_size))


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(streams())
def test_every_record_is_read_however_sizes_vary(stream: Stream) -> None:
    got: list[Sized] = []
    _read(stream.data, stream, got)
    assert got == stream.records()


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(streams(), st.data())
def test_a_bad_byte_is_located_however_sizes_vary(stream: Stream, data: st.DataObject) -> None:
    bad = data.draw(st.integers(0, len(stream.payloads)), label="bad record")
    at = stream.starts[bad]
    got: list[Sized] = []
    with pytest.raises(DecodeError) as info:
        _read(stream.data[:at] + b"\xc1" + stream.data[at:], stream, got)
    assert (info.value.index, info.value.offset) == (bad, at)
    assert got == stream.records(bad)


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(streams(), st.data())
def test_a_cut_record_is_located_however_sizes_vary(stream: Stream, data: st.DataObject) -> None:
    last = len(stream.payloads) - 1
    start, end = stream.starts[last], stream.starts[last + 1]
    cut = data.draw(st.integers(start + 1, end - 1), label="cut at")
    got: list[Sized] = []
    with pytest.raises(TruncatedStreamError) as info:
        _read(stream.data[:cut], stream, got)
    assert (info.value.index, info.value.offset) == (last, start)
    assert got == stream.records(last)


def test_a_bad_record_in_a_long_run_of_small_ones_is_named() -> None:
    values = [[i, b""] for i in range(3000)]
    values[2500] = [2500, "not bytes"]
    data = b"".join(map(msgpack.packb, values))
    got: list[Sized] = []
    with pytest.raises(RecordError) as info:
        got.extend(StreamingReader(data, Sized))
    assert info.value.index == 2500
    assert info.value.offset == len(b"".join(map(msgpack.packb, values[:2500])))
    assert len(got) == 2500


def test_a_type_error_from_the_record_types_own_init_is_a_record_error() -> None:
    data = b"".join(msgpack.packb(v) for v in ([1, "a"], {"id": 2, "name": "b"}, [-3, "c"]))
    got: list[Checked] = []
    with pytest.raises(RecordError, match="id must not be negative") as info:
        got.extend(StreamingReader(data, Checked))
    assert info.value.index == 2
    assert got == [Checked(1, "a"), Checked(2, "b")]


def test_arrays_and_maps_mixed_in_any_order_make_the_same_records() -> None:
    item = Item(1, 2, 3, 4, 5, 6.0, "f", "p")
    as_map: dict[str, Any] = {
        "id": 1,
        "process_id": 2,
        "thread_id": 3,
        "timestamp_ns": 4,
        "line": 5,
        "value": 6.0,
        "filename": "f",
        "path": "p",
    }
    shapes = [item.to_list(), as_map, as_map, item.to_list(), as_map, item.to_list()]
    assert list(StreamingReader(b"".join(map(msgpack.packb, shapes)))) == [item] * len(shapes)


def test_a_mapper_that_fails_on_the_first_record_raises_its_own_error() -> None:
    def mapper(_: Any) -> Any:
        raise RuntimeError("a bug in the mapper")

    with pytest.raises(RuntimeError, match="a bug in the mapper"):
        list(StreamingReader(msgpack.packb([1]) * 3, mapper=mapper))


def test_a_mapper_that_refuses_every_record_leaves_nothing_in_skip_mode() -> None:
    reader = StreamingReader(msgpack.packb([1]) * 3, mapper=lambda v: v["no"], on_error="skip")
    assert list(reader) == []
    assert reader.skipped == 3


@pytest.mark.parametrize("bad", [None, 2100, 3999])
def test_records_that_grow_mid_stream_are_framed_and_located(bad: int | None) -> None:
    # A batch sized by the small records before it runs past the chunk's end once records
    # grow tenfold: it is halved until it fits, and every record and offset stays exact.
    payloads = [b"s" * 4 if i < 2000 else b"x" * 60 for i in range(4000)]
    records = [msgpack.packb([i, p]) for i, p in enumerate(payloads)]
    starts = [sum(map(len, records[:i])) for i in range(len(records) + 1)]
    data = b"".join(records)
    expected = [Sized(i, p) for i, p in enumerate(payloads)]
    if bad is None:
        assert list(StreamingReader(io.BytesIO(data), Sized)) == expected
        return
    at = starts[bad]
    got: list[Sized] = []
    with pytest.raises(DecodeError) as info:
        got.extend(StreamingReader(io.BytesIO(data[:at] + b"\xc1" + data[at:]), Sized))
    assert (info.value.index, info.value.offset) == (bad, at)
    assert got == expected[:bad]


def test_batches_pass_over_most_records_and_halve_when_records_grew() -> None:
    # The batch path itself: a broken batching that fell back to one skip per record would
    # still frame correctly, so the tests above would not see it.
    small = [msgpack.packb([i, b"s"]) for i in range(200)]
    grown = [msgpack.packb([i, b"x" * 60]) for i in range(200, 400)]
    records = small + grown
    data = b"".join(records)
    ends = list(itertools.accumulate(map(len, records)))
    average = len(small[0])  # what the stream's earlier runs said: far too small now
    count, end, rest = _batches([data], 0, len(data), average)
    assert count >= len(records) // 2
    assert end == ends[count - 1]
    assert bytes(rest) == data[end:]
    # With no average yet, the first few records give one.
    count, end, rest = _batches([b"".join(small)], 0, len(b"".join(small)), 0)
    assert count >= len(small) // 2
    assert end == ends[count - 1]
    # Too few bytes for a batch, or broken data at once: nothing passed over.
    assert _batches([b"".join(small[:10])], 0, len(b"".join(small[:10])), average) == (0, 0, None)
    assert _batches([b"\xc1" + data], 0, len(data) + 1, average) == (0, 0, None)


@dataclass
class Counted:
    """A flat record that counts how many of it are alive."""

    id: int
    alive: ClassVar[int] = 0
    most: ClassVar[int] = 0

    def __post_init__(self) -> None:
        Counted.alive += 1
        Counted.most = max(Counted.most, Counted.alive)

    def __del__(self) -> None:
        Counted.alive -= 1


def test_records_are_built_a_few_hundred_at_a_time_as_the_loop_takes_them() -> None:
    # A 64 KiB read of 3-byte records is a run of 20000. Built at once, they all stayed alive
    # until the loop had taken the last: the garbage collector, which scans its youngest
    # objects each time 700 more were made than freed, collected again and again over them.
    data = b"".join(msgpack.packb([i]) for i in range(50000))
    Counted.most = 0
    count = 0
    for record in StreamingReader(data, Counted):
        assert record.id == count
        count += 1
    assert count == 50000
    assert 0 < Counted.most <= 256 + 1  # and the one the loop holds


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_record_its_init_refuses_deep_in_a_long_run_is_located(on_error: OnError) -> None:
    values: list[Any] = [[i, "x"] for i in range(3000)]
    values[700] = [-700, "x"]  # in the run's third slice of records built
    data = b"".join(map(msgpack.packb, values))
    reader = StreamingReader(data, Checked, on_error=on_error)
    got: list[Checked] = []
    if on_error == "raise":
        with pytest.raises(RecordError, match="id must not be negative") as info:
            got.extend(reader)
        offset = len(b"".join(map(msgpack.packb, values[:700])))
        assert (info.value.index, info.value.offset) == (700, offset)
        assert got == [Checked(i, "x") for i in range(700)]
    else:
        got.extend(reader)
        assert [r.id for r in got] == [*range(700), *range(701, 3000)]
        assert [e.index for e in reader.errors] == [700]


def test_the_framing_buffer_starts_at_one_chunk_not_a_mebibyte() -> None:
    """msgpack starts an ``Unpacker``'s buffer at a mebibyte unless told otherwise; the
    framing makes one per read, so small reads of small records must stay far below it."""
    data = b"".join(msgpack.packb([n, "x" * 40]) for n in range(2000))
    stream = io.BytesIO(data)
    record: Any = tuple[int, str]
    list(StreamingReader(io.BytesIO(data), record))  # the decoder is compiled once, first
    tracemalloc.start()
    try:
        assert sum(1 for _ in StreamingReader(stream, record, read_size=16 * 1024)) == 2000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 768 * 1024, f"{peak} bytes at most, reading 16 KiB at a time"


def test_a_runs_records_are_freed_before_the_next_run_is_decoded() -> None:
    """Records the loop does not keep are freed before the next run is decoded, whose records
    are then made in the memory they leave, still in cache: one run's records are alive at a
    time, not two."""
    values = [[n + 1000, n + 2000, n + 3000, n + 4000] for n in range(60000)]  # no cached ints
    data = b"".join(map(msgpack.packb, values))
    record: Any = tuple[int, int, int, int]
    one_read = values[: DEFAULT_READ_SIZE // len(msgpack.packb(values[0]))]
    decode = msgspec.msgpack.Decoder(list[record]).decode
    run = msgpack.packb(one_read)
    list(StreamingReader(data, record))  # the decoders are compiled once, first
    tracemalloc.start()
    try:
        decoded = decode(run)
        one_run = tracemalloc.get_traced_memory()[1]
        del decoded
        tracemalloc.reset_peak()
        assert sum(1 for _ in StreamingReader(data, record)) == len(values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * one_run, f"{peak} bytes at most, where one run's records take {one_run}"
