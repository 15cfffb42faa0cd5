"""Framing: records of any mix of sizes, split into reads anywhere, are counted and located
exactly, whether the framing skips them in batches or one at a time."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import DecodeError, Item, RecordError, StreamingReader, TruncatedStreamError
from tests.helpers import examples


@dataclass
class Sized:
    id: int
    payload: bytes


# Mostly small records, now and then a large one: a batch sized by the average record then
# runs into the middle of a record and must be counted again.
payloads = st.lists(
    st.one_of(
        st.binary(max_size=8),
        st.binary(max_size=8),
        st.binary(max_size=8),
        st.integers(200, 3000).map(lambda n: b"x" * n),
    ),
    min_size=1,
    max_size=400,
)


def _stream(sizes: list[bytes]) -> tuple[bytes, list[int]]:
    """The records' bytes and where each starts."""
    records = [msgpack.packb([i, p]) for i, p in enumerate(sizes)]
    starts = [0]
    for record in records:
        starts.append(starts[-1] + len(record))
    return b"".join(records), starts


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(payloads, st.integers(1, 5000))
def test_every_record_is_read_however_sizes_vary(sizes: list[bytes], read_size: int) -> None:
    data, _ = _stream(sizes)
    got = list(StreamingReader(io.BytesIO(data), Sized, read_size=read_size))
    assert got == [Sized(i, p) for i, p in enumerate(sizes)]


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(payloads, st.integers(1, 5000), st.data())
def test_a_bad_byte_is_located_however_sizes_vary(
    sizes: list[bytes], read_size: int, data: st.DataObject
) -> None:
    stream, starts = _stream(sizes)
    bad = data.draw(st.integers(0, len(sizes)), label="bad record")
    broken = stream[: starts[bad]] + b"\xc1" + stream[starts[bad] :]
    got: list[Sized] = []
    with pytest.raises(DecodeError) as info:
        got.extend(StreamingReader(io.BytesIO(broken), Sized, read_size=read_size))
    assert (info.value.index, info.value.offset) == (bad, starts[bad])
    assert got == [Sized(i, p) for i, p in enumerate(sizes[:bad])]


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(payloads, st.integers(1, 5000), st.data())
def test_a_cut_record_is_located_however_sizes_vary(
    sizes: list[bytes], read_size: int, data: st.DataObject
) -> None:
    stream, starts = _stream(sizes)
    last = len(sizes) - 1
    cut = data.draw(st.integers(starts[last] + 1, starts[last + 1] - 1), label="cut at")
    with pytest.raises(TruncatedStreamError) as info:
        list(StreamingReader(io.BytesIO(stream[:cut]), Sized, read_size=read_size))
    assert (info.value.index, info.value.offset) == (last, starts[last])


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


@dataclass
class Checked:
    id: int
    name: str

    def __post_init__(self) -> None:
        if self.id < 0:
            raise TypeError("id must not be negative")


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
