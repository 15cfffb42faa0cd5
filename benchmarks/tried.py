"""The designs we measured on the way, re-run side by side with the floor (pyperf).

    poetry install --with bench
    poetry run python benchmarks/tried.py -o doc/tried.result.json

Each workload reads the 10000-record reference stream from memory and counts records. The
dropped designs are re-implemented here, small and faithful, so the ratios in RESULTS.md's
"What we tried" stay reproducible.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import msgspec

from msgpack_reader_py import ITEM_VALUES, Item, ItemTuple, StreamingReader
from msgpack_reader_py.schema import RecordSchema
from msgpack_reader_py.streaming_reader_bench import (
    REFERENCE_MESSAGES,
    Workload,
    count_raw,
    counter,
    reference_data,
)

_MISSING: Any = object()


class ItemStruct(msgspec.Struct, array_like=True, gc=False):
    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str


def _per_record(data: bytes, validate: bool) -> Iterator[Item]:
    """The first design: one Python loop iteration per record."""
    unpacker = msgpack.Unpacker(use_list=False, max_map_len=0, max_array_len=8)
    check = RecordSchema(Item).build_checker() if validate else None
    tell = unpacker.tell
    source = io.BytesIO(data)
    index = offset = 0
    while chunk := source.read1(65536):
        unpacker.feed(chunk)
        for values in unpacker:
            end = tell()
            if end - offset > 104857600 or values.__class__ is not tuple:
                raise ValueError(index)
            if check is not None and check(values) is not None:
                raise ValueError(index)
            yield Item(*values)
            index += 1
            offset = end


def _msgspec_structs(data: bytes) -> Iterator[ItemStruct]:
    decode = msgspec.msgpack.Decoder(list[ItemStruct]).decode
    unpacker = msgpack.Unpacker()
    source = io.BytesIO(data)
    carry = b""
    total = 0
    while chunk := source.read1(65536):
        unpacker.feed(chunk)
        total += len(chunk)
        marks: list[tuple[None, int]] = []
        with contextlib.suppress(msgpack.OutOfData):
            marks.extend(zip(iter(unpacker.skip, 1), iter(unpacker.tell, -1), strict=False))
        if not marks:
            carry += chunk
            continue
        cut = marks[-1][1] - (total - len(chunk))
        batch, carry = carry + chunk[:cut], chunk[cut:]
        yield from decode(b"\xdd" + len(marks).to_bytes(4, "big") + batch)


def workloads() -> dict[str, Callable[[], int]]:
    data = reference_data()

    def reader(**options: Any) -> Callable[[], Iterator[Any]]:
        return lambda: iter(StreamingReader(io.BytesIO(data), **options))

    return {
        "raw_unpacker_baseline": functools.partial(count_raw, data),
        "per_record_loop": counter(functools.partial(_per_record, data, False)),
        "in_memory_stream_benchmark": counter(reader()),
        "per_record_validation": counter(functools.partial(_per_record, data, True)),
        "validated_stream_benchmark": counter(reader(validate=True)),
        "named_tuple_records": counter(reader(record_type=ItemTuple)),
        "fast_stream_benchmark": counter(reader(record_type=ITEM_VALUES)),
        "msgspec_structs": counter(functools.partial(_msgspec_structs, data)),
    }


def _timed(name: str) -> Callable[[int], float]:
    def time_func(loops: int) -> float:
        workload = Workload(name, workloads()[name], REFERENCE_MESSAGES, len(reference_data()))
        return workload.time(loops)

    return time_func


def main() -> None:
    import pyperf

    runner = pyperf.Runner()
    size = len(reference_data())
    for name in workloads():
        metadata = {"records": REFERENCE_MESSAGES, "stream_bytes": size}
        runner.bench_time_func(name, _timed(name), metadata=metadata)


if __name__ == "__main__":
    main()
