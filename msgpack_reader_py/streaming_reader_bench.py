"""pyperf benchmarks of the reader, with the raw ``msgpack.Unpacker`` floor measured alongside.

Run (any pyperf option works: ``--fast``, ``--rigorous``, ``--append``, ``--quiet``, ...)::

    poetry run python msgpack_reader_py/streaming_reader_bench.py --stats -o benchmark.result.json

Every benchmark decodes a whole stream per loop and counts what it gets. Speed claims are
ratios to ``raw_unpacker_baseline`` from the same run: absolute times on shared machines move
by 20% or more from run to run. Each benchmark's metadata holds the records and bytes one loop
reads, so a report can turn times into records/s and MB/s (``benchmarks/report.py``).
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import msgspec

from msgpack_reader_py import ITEM_VALUES, Item, StreamingReader, get_iter, pack_items

__all__ = [
    "MESSAGE_SIZES",
    "PAIRED",
    "PAIRED_TURNS",
    "REFERENCE_BENCHMARKS",
    "EvenItem",
    "ItemStruct",
    "KindedItem",
    "OddItem",
    "SizedRecord",
    "Workload",
    "count_raw",
    "counter",
    "main",
    "message_size_workload",
    "paired_timer",
    "reference_run_timer",
    "reference_runs",
    "reference_union_data",
    "reference_workloads",
    "write_result",
]

REFERENCE_MESSAGES = 10000
REFERENCE_SEED = 42
MESSAGE_SIZES = (32, 128, 512, 2048, 8192, 32768, 131072, 524288)
MESSAGE_SIZE_STREAM = 4 * 1024 * 1024  # at least this much stream per message size
REFERENCE_BENCHMARKS = (
    "raw_unpacker_baseline",
    "in_memory_stream_benchmark",
    "file_stream_benchmark",
    "fast_stream_benchmark",
    "struct_stream_benchmark",
    "arrow_batches_benchmark",
    "raw_map_unpacker_baseline",
    "map_stream_benchmark",
    "async_stream_benchmark",
    "one_kind_struct_benchmark",
    "union_stream_benchmark",
)


class _Fields(msgspec.Struct, array_like=True, gc=False):
    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str


class ItemStruct(_Fields):
    """:class:`~msgpack_reader_py.Item` as an ``array_like`` ``msgspec.Struct``: msgspec builds
    it from the array in C, so it is the cheapest record with named fields.

    ``gc=False``, as msgspec advises for a Struct that can never be part of a reference cycle:
    a record of scalars cannot, and the garbage collector then neither tracks nor scans the
    records a stream makes (here, a quarter to a third of the floor's time).
    """


class EvenItem(_Fields, tag="even"):
    """An item of even id, as one kind of a stream of two: ``["even", id, ...]``."""


class OddItem(_Fields, tag="odd"):
    """An item of odd id, the other kind: ``["odd", id, ...]``."""


class KindedItem(msgspec.Struct, array_like=True, gc=False):
    """The same records read as one kind: the tag is a field like any other."""

    kind: str
    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str


PAIRED = {
    "in_memory_stream_benchmark": "raw_unpacker_baseline",
    "fast_stream_benchmark": "raw_unpacker_baseline",
    "struct_stream_benchmark": "raw_unpacker_baseline",
    "arrow_batches_benchmark": "raw_unpacker_baseline",
    "map_stream_benchmark": "raw_map_unpacker_baseline",
    "file_stream_benchmark": "in_memory_stream_benchmark",
    "async_stream_benchmark": "in_memory_stream_benchmark",
    "union_stream_benchmark": "one_kind_struct_benchmark",
}
"""The benchmarks a speed target is set for, each with the one it is a ratio of.

Each also runs as ``paired/<name>``: whole passes of the two in turn, in the same worker, and
its values are the ratio of their times (unit ``integer``: a plain number, not seconds). The
machines here are shared; a neighbour's load that lasts seconds to minutes moves benchmarks
run one after the other by 20% or more against each other, but moves both of a pair alike.
"""
PAIRED_TURNS = 8
"""Passes of each of a pair per value of ``paired/<name>``."""


@dataclass(slots=True)
class SizedRecord:
    """A record of the message-size sweep: an id and a payload that sets its size."""

    id: int
    payload: bytes


@dataclass(frozen=True)
class Workload:
    """One benchmark: what one loop does, and how much it reads."""

    name: str
    run: Callable[[], int]  # reads the whole stream once; returns the records it counted
    records: int
    size: int  # bytes per loop

    def time(self, loops: int) -> float:
        """pyperf's time function: ``loops`` whole reads, each checked, in seconds."""
        run = self.run
        start = time.perf_counter()
        for _ in range(loops):
            count = run()
        elapsed = time.perf_counter() - start
        if loops and count != self.records:
            raise AssertionError(f"{self.name}: counted {count} records, expected {self.records}")
        return elapsed


def count_raw(data: bytes) -> int:
    """The floor: a plain ``msgpack.Unpacker`` over ``data``, values counted."""
    count = 0
    for _values in msgpack.Unpacker(io.BytesIO(data)):
        count += 1
    return count


def counter(records: Callable[[], Iterable[Any]]) -> Callable[[], int]:
    """A workload's run: iterate what ``records()`` returns, counting, as a user's loop does."""

    def run() -> int:
        count = 0
        for _record in records():
            count += 1
        return count

    return run


def write_result(result: dict[str, Any], output: str) -> None:
    """Write a benchmark script's result as indented JSON to ``output`` (``-``: stdout)."""
    text = json.dumps(result, indent=2) + "\n"
    if output == "-":
        sys.stdout.write(text)
    else:
        Path(output).write_text(text)


def _count(source: Callable[[], Any], **options: Any) -> Callable[[], int]:
    return counter(lambda: StreamingReader(source(), **options))


def _count_rows(source: Callable[[], Any]) -> Callable[[], int]:
    """A run of Arrow batches (the ``arrow`` extra), rows counted per batch."""

    def run() -> int:
        from msgpack_reader_py._arrow.reader import read_batches

        return sum(batch.num_rows for batch in read_batches(source()))

    return run


def _count_async(data: bytes) -> Callable[[], int]:
    """A run of ``AsyncStreamingReader`` over an ``asyncio.StreamReader`` fed ``data``, in an
    event loop made once (a loop per run would be timed too)."""
    import asyncio

    from msgpack_reader_py._readers.aio import AsyncStreamingReader

    loop = asyncio.new_event_loop()
    atexit.register(loop.close)

    async def count() -> int:
        stream = asyncio.StreamReader()
        stream.feed_data(data)
        stream.feed_eof()
        records = 0
        async for _record in AsyncStreamingReader(stream):
            records += 1
        return records

    return lambda: loop.run_until_complete(count())


@functools.cache
def reference_data() -> bytes:
    """The 10000-record reference stream (seed 42), built once per process."""
    return pack_items(get_iter(REFERENCE_MESSAGES, REFERENCE_SEED))


@functools.cache
def reference_map_data() -> bytes:
    """The reference records as most encoders write a struct: each a map keyed by field name."""
    names = [field.name for field in dataclasses.fields(Item)]
    pack = msgpack.Packer().pack
    unpacker = msgpack.Unpacker(io.BytesIO(reference_data()))
    return b"".join(pack(dict(zip(names, values, strict=True))) for values in unpacker)


@functools.cache
def reference_union_data() -> bytes:
    """The reference records as two kinds, tag first: ``["even" | "odd", id, ...]``."""
    pack = msgpack.Packer().pack
    unpacker = msgpack.Unpacker(io.BytesIO(reference_data()))
    return b"".join(pack(["odd" if v[0] % 2 else "even", *v]) for v in unpacker)


@functools.cache
def _reference_file() -> str:
    handle, path = tempfile.mkstemp(prefix="msgpack-reader-bench-", suffix=".msgpack")
    with os.fdopen(handle, "wb") as stream:
        stream.write(reference_data())
    atexit.register(os.unlink, path)
    return path


@functools.cache
def reference_workloads() -> dict[str, Workload]:
    """The benchmarks on the reference stream, by name."""
    data = reference_data()

    def in_memory() -> io.BytesIO:
        return io.BytesIO(data)

    maps = reference_map_data()
    kinds = reference_union_data()
    runs: dict[str, tuple[Callable[[], int], int]] = {
        "raw_unpacker_baseline": (functools.partial(count_raw, data), len(data)),
        "in_memory_stream_benchmark": (_count(in_memory), len(data)),
        "file_stream_benchmark": (_count(_reference_file), len(data)),
        "fast_stream_benchmark": (_count(in_memory, record_type=ITEM_VALUES), len(data)),
        "struct_stream_benchmark": (_count(in_memory, record_type=ItemStruct), len(data)),
        "arrow_batches_benchmark": (_count_rows(in_memory), len(data)),
        "raw_map_unpacker_baseline": (functools.partial(count_raw, maps), len(maps)),
        "map_stream_benchmark": (_count(functools.partial(io.BytesIO, maps)), len(maps)),
        "async_stream_benchmark": (_count_async(data), len(data)),
        "one_kind_struct_benchmark": (
            _count(functools.partial(io.BytesIO, kinds), record_type=KindedItem),
            len(kinds),
        ),
        "union_stream_benchmark": (
            _count(functools.partial(io.BytesIO, kinds), record_type=EvenItem | OddItem),
            len(kinds),
        ),
    }
    return {
        name: Workload(name, run, REFERENCE_MESSAGES, size) for name, (run, size) in runs.items()
    }


def _sized_layout(size: int) -> tuple[int, bytes]:
    """How many records of at most ``size`` bytes make ``MESSAGE_SIZE_STREAM``; their payload."""
    largest_id = 2**32 - 1  # ids are small; sizing for the largest keeps every record <= size
    payload = b"x" * max(size - len(msgpack.packb([largest_id, b""])), 0)
    while payload and len(msgpack.packb([largest_id, payload])) > size:
        payload = payload[:-1]  # a longer bin header
    smallest = len(msgpack.packb([0, payload]))
    return -(-MESSAGE_SIZE_STREAM // smallest), payload


@functools.cache
def _sized_stream(size: int) -> bytes:
    count, payload = _sized_layout(size)
    pack = msgpack.Packer().pack
    return b"".join(pack([index, payload]) for index in range(count))


@functools.cache
def message_size_workload(size: int, *, raw: bool = False) -> Workload:
    """``message_size/<size>``: typed records of about ``size`` bytes, from memory.

    With ``raw``, ``message_size_raw/<size>``: the same stream through a plain Unpacker, the
    floor for that size.
    """
    data = _sized_stream(size)
    count = _sized_layout(size)[0]
    if raw:
        return Workload(
            f"message_size_raw/{size}", functools.partial(count_raw, data), count, len(data)
        )
    run = _count(functools.partial(io.BytesIO, data), record_type=SizedRecord)
    return Workload(f"message_size/{size}", run, count, len(data))


def _message_size_bytes(size: int) -> int:
    """The stream length of ``message_size/<size>``, without building the stream."""
    count, payload = _sized_layout(size)
    header = len(msgpack.packb(payload)) - len(payload)
    ids = sum(len(msgpack.packb(index)) for index in range(count))
    return count * (1 + header + len(payload)) + ids


def main() -> None:
    """Run every benchmark under one ``pyperf.Runner`` (command-line options are pyperf's)."""
    import platform

    import pyperf

    from msgpack_reader_py import __version__

    runner = pyperf.Runner()
    runner.metadata["msgpack_reader_py_version"] = __version__
    runner.metadata["msgpack_version"] = ".".join(map(str, msgpack.version))
    runner.metadata["machine"] = platform.machine()
    # Registering is cheap: a worker process builds only the data of the benchmark it runs.
    for name in REFERENCE_BENCHMARKS:
        runner.bench_time_func(
            name,
            _timed(functools.partial(_reference_workload, name)),
            metadata={"records": REFERENCE_MESSAGES, "stream_bytes": _stream_bytes(name)},
        )
    for name, of in PAIRED.items():
        runner.bench_time_func(
            f"paired/{name}",
            paired_timer(name, of),
            metadata={
                "unit": "integer",
                "paired_with": of,
                "records": REFERENCE_MESSAGES,
                "stream_bytes": _stream_bytes(name),
            },
        )
    for size in MESSAGE_SIZES:
        metadata = {"records": _sized_layout(size)[0], "stream_bytes": _message_size_bytes(size)}
        for raw in (True, False):
            name = f"message_size{'_raw' if raw else ''}/{size}"
            make = functools.partial(message_size_workload, size, raw=raw)
            runner.bench_time_func(name, _timed(make), metadata=metadata)


def _stream_bytes(name: str) -> int:
    """The length of the stream a reference benchmark reads."""
    if "map" in name:
        return len(reference_map_data())
    if name in ("one_kind_struct_benchmark", "union_stream_benchmark"):
        return len(reference_union_data())
    return len(reference_data())


def reference_runs(
    runs: Callable[[], dict[str, Callable[[], int]]], paired: dict[str, str] | None = None
) -> None:
    """pyperf's main for a script of runs over the reference stream (``runs()``: each a whole
    pass, by name, returning the records it did), each a benchmark of its own; and for each
    ``name: of`` of ``paired``, ``paired/<name>``: the two timed in turn (:func:`paired_timer`)."""
    import pyperf

    runner = pyperf.Runner()
    metadata = {"records": REFERENCE_MESSAGES, "stream_bytes": len(reference_data())}
    for name in runs():
        runner.bench_time_func(name, reference_run_timer(runs, name), metadata=metadata)
    for name, of in (paired or {}).items():
        runner.bench_time_func(
            f"paired/{name}",
            paired_timer(name, of, functools.partial(reference_run_workloads, runs)),
            metadata={**metadata, "unit": "integer", "paired_with": of},
        )


def reference_run_workloads(
    runs: Callable[[], dict[str, Callable[[], int]]],
) -> dict[str, Workload]:
    """The runs of ``runs()`` over the reference stream, as workloads."""
    size = len(reference_data())
    return {name: Workload(name, run, REFERENCE_MESSAGES, size) for name, run in runs().items()}


def reference_run_timer(
    runs: Callable[[], dict[str, Callable[[], int]]], name: str
) -> Callable[[int], float]:
    """pyperf's time function of the run ``name`` of ``runs()``, made in the worker."""

    def time_func(loops: int) -> float:
        return reference_run_workloads(runs)[name].time(loops)

    return time_func


def paired_timer(
    name: str, of: str, workloads: Callable[[], dict[str, Workload]] = reference_workloads
) -> Callable[[int], float]:
    """pyperf's time function of ``paired/<name>``: ``loops`` times ``PAIRED_TURNS`` whole
    passes of ``name`` and of ``of`` (of ``workloads()``), in turn (which goes first
    alternates), in one worker. Returns their time ratio times ``loops``, as pyperf divides
    what it gets by ``loops``."""

    def time_func(loops: int) -> float:
        made = workloads()
        pair = (made[name], made[of])
        spent = [0.0, 0.0]
        for turn in range(loops * PAIRED_TURNS):
            for which in (turn % 2, 1 - turn % 2):
                spent[which] += pair[which].time(1)
        return loops * spent[0] / spent[1]

    return time_func


def _reference_workload(name: str) -> Workload:
    return reference_workloads()[name]


def _timed(make: Callable[[], Workload]) -> Callable[[int], float]:
    def time_func(loops: int) -> float:
        return make().time(loops)

    return time_func


if __name__ == "__main__":
    main()
