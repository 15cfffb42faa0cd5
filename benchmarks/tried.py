"""The designs we measured on the way, re-run side by side with the floor (pyperf).

    poetry install --with bench
    poetry run python benchmarks/tried.py -o doc/tried.result.json

Each workload reads the 10000-record reference stream from memory and counts records. The
dropped and replaced designs (including the two of the former ``validate=True``: every read
is validated now) are re-implemented here, small and faithful, so the ratios in RESULTS.md's
"What we tried" stay reproducible.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import typing
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import msgspec

from msgpack_reader_py import ITEM_VALUES, Item, ItemTuple, StreamingReader
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE, ReadOptions
from msgpack_reader_py._stream.framing import Framer, Run
from msgpack_reader_py._stream.sources import Chunks
from msgpack_reader_py._types.decoding import record_decoder
from msgpack_reader_py.streaming_reader_bench import (
    ItemStruct,
    count_raw,
    counter,
    reference_data,
    reference_runs,
)

_MISSING: Any = object()
_USUAL = (int, int, int, int, int, float, str, str)
"""The value types of a valid ``Item`` record, as the former ``validate=True`` expected them."""
_ACCEPTED = frozenset({_USUAL, (int, int, int, int, int, int, str, str)})
"""Every tuple of value types a valid ``Item`` could have (an int is taken for a float)."""


def _per_record(data: bytes, validate: bool = False) -> Iterator[Item]:
    """The first design: one Python loop iteration per record; with ``validate``, the first
    design of the former ``validate=True``: one ``tuple(map(type, values))`` and one set
    lookup per record."""
    unpacker = msgpack.Unpacker(use_list=False, max_map_len=0, max_array_len=8)
    tell = unpacker.tell
    source = io.BytesIO(data)
    index = offset = 0
    while chunk := source.read1(65536):
        unpacker.feed(chunk)
        for values in unpacker:
            end = tell()
            if end - offset > 104857600 or values.__class__ is not tuple:
                raise ValueError(index)
            if validate and tuple(map(type, values)) not in _ACCEPTED:
                raise ValueError(index)
            yield Item(*values)
            index += 1
            offset = end


def _chunked(data: bytes, validate: bool = False) -> Iterator[Item]:
    """The second design: a chunk at a time, every per-record step in C. With ``validate``,
    the second design of the former ``validate=True``: one flat comparison of value types per
    chunk. Offsets were found by replaying the bytes only on errors, so here a bad chunk just
    raises; the end was checked by feeding one nil byte."""
    unpacker = msgpack.Unpacker(use_list=False, max_map_len=0, max_array_len=8)
    tell = unpacker.tell
    source = io.BytesIO(data)
    shapes = {tuple}
    sizes = {len(_USUAL)}
    index = anchor = 0
    while chunk := source.read1(65536):
        unpacker.feed(chunk)
        first = next(unpacker, _MISSING)
        if first is _MISSING:
            continue  # a record longer than the chunk
        anchor = tell()  # a record boundary, where a replay would start
        values = [first]
        values.extend(unpacker)
        if set(map(type, values)) != shapes or set(map(len, values)) != sizes:
            raise ValueError(index)
        if validate and not _batch_valid(values):
            raise ValueError(index)
        yield from itertools.starmap(Item, values)
        index += len(values)
    unpacker.feed(b"\xc0")
    try:
        probe = next(unpacker, _MISSING)
    except ValueError:  # the nil byte ended an unfinished str as invalid UTF-8
        probe = _MISSING
    if probe is not None:
        raise ValueError(f"truncated after the record at {anchor}")


def _batch_valid(values: list[tuple[Any, ...]]) -> bool:
    """The former batch check: one flat comparison of types, and when that fails (an int for
    a float), the set of each record's types against every accepted combination."""
    if tuple(map(type, itertools.chain.from_iterable(values))) == _USUAL * len(values):
        return True
    return set(map(tuple, map(map, itertools.repeat(type), values))) <= _ACCEPTED


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


def _framed_by_skips(data: bytes) -> int:
    """The former framing alone: each chunk's records skipped a call each, most of them in
    batches (``islice(iter(skip, 1), n)``, ``n`` half of what the average size says is left)
    with one ``tell()`` per batch, the last few noting each end; then the chunk's run, its
    records' bytes behind an array header, as ``decoder.runs`` makes it. Returns the records
    framed."""
    unpacker = msgpack.Unpacker()
    source = io.BytesIO(data)
    index = start = read = 0
    carry: list[bytes] = []
    skipped: list[None] = []
    while chunk := source.read1(DEFAULT_READ_SIZE):
        unpacker.feed(chunk)
        read += len(chunk)
        average = start // index if index else 0
        end = start
        count = 0
        ends: list[int] = []
        with contextlib.suppress(msgpack.OutOfData):
            while average and (batch := (read - end) // (2 * average)) >= 16:
                skipped.clear()
                skipped.extend(itertools.islice(iter(unpacker.skip, 1), batch))
                count += batch
                end = unpacker.tell()
            skips = zip(iter(unpacker.skip, 1), iter(unpacker.tell, -1), strict=False)
            ends.extend(tell for _, tell in skips)
        count += len(ends)
        if not count:
            carry.append(chunk)
            continue
        end = ends[-1] if ends else end
        cut = end - (read - len(chunk))
        b"".join([b"\xdd" + count.to_bytes(4, "big"), *carry, chunk[:cut]])  # the run's bytes
        carry = [chunk[cut:]]
        index += count
        start = end
    return index


def _reads(data: bytes) -> Chunks:
    """The chunks ``decoder.runs`` frames: ``data`` read as the reader reads a stream."""
    return Chunks(io.BytesIO(data), ReadOptions(decompress=False))


def _framed_in_arrays(data: bytes) -> int:
    """The reader's framing alone (``decoder.runs``): most records skipped as arrays of them,
    one call per batch. Returns the records framed."""
    framed = Framer(_reads(data), ReadOptions()).runs()
    return sum(run.count for run in framed if isinstance(run, Run))


def _built_a_run_at_a_time(data: bytes) -> Iterator[Item]:
    """The reader before it built records a few hundred at a time: each run's ``Item``s
    built at once, by one ``starmap(Item)``, and handed over as the run's list."""
    decoder = record_decoder(Item)
    build = typing.cast(Callable[[list[Any]], list[Any]], decoder.build)  # Item has one
    framed = Framer(_reads(data), ReadOptions()).runs()
    built = (build(decoder.decode_run(run.data)) for run in framed if isinstance(run, Run))
    return itertools.chain.from_iterable(built)


def workloads() -> dict[str, Callable[[], int]]:
    data = reference_data()

    def reader(**options: Any) -> Callable[[], Iterator[Any]]:
        return lambda: iter(StreamingReader(io.BytesIO(data), **options))

    return {
        "raw_unpacker_baseline": functools.partial(count_raw, data),
        "per_record_loop": counter(functools.partial(_per_record, data)),
        "chunk_at_a_time": counter(functools.partial(_chunked, data)),
        "per_record_validation": counter(functools.partial(_per_record, data, True)),
        "chunk_validation": counter(functools.partial(_chunked, data, True)),
        "in_memory_stream_benchmark": counter(reader()),
        "built_a_run_at_a_time": counter(functools.partial(_built_a_run_at_a_time, data)),
        "named_tuple_records": counter(reader(record_type=ItemTuple)),
        "fast_stream_benchmark": counter(reader(record_type=ITEM_VALUES)),
        "msgspec_structs": counter(functools.partial(_msgspec_structs, data)),
        "framing_record_at_a_time": functools.partial(_framed_by_skips, data),
        "framing_in_arrays": functools.partial(_framed_in_arrays, data),
    }


PAIRED = {"built_a_run_at_a_time": "in_memory_stream_benchmark"}
"""Rows whose verdict rests on a few percent: timed in turn with the reader as well, in one
worker, as the targets are (sequential runs here move by more than that)."""


def main() -> None:
    reference_runs(workloads, PAIRED)


if __name__ == "__main__":
    main()
