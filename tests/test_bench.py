"""The benchmark harness measures what it says: every workload reads its whole stream."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest

from msgpack_reader_py import StreamingReader
from msgpack_reader_py import streaming_reader_bench as bench

from .helpers import fake_pyperf
from .reference import REFERENCE_MESSAGES, REFERENCE_SIZE


@pytest.mark.parametrize("name", bench.REFERENCE_BENCHMARKS)
def test_reference_workloads_read_every_record(name: str) -> None:
    workload = bench.reference_workloads()[name]
    size = len(bench.reference_map_data()) if "map" in name else REFERENCE_SIZE
    if name in ("one_kind_struct_benchmark", "union_stream_benchmark"):
        size = REFERENCE_SIZE + sum(4 if i % 2 else 5 for i in range(REFERENCE_MESSAGES))
    assert (workload.records, workload.size) == (REFERENCE_MESSAGES, size)
    assert workload.run() == REFERENCE_MESSAGES
    assert workload.time(2) > 0


@pytest.mark.parametrize("size", bench.MESSAGE_SIZES)
def test_message_size_streams(size: int) -> None:
    typed = bench.message_size_workload(size)
    raw = bench.message_size_workload(size, raw=True)
    assert typed.size == raw.size == bench._message_size_bytes(size)
    assert typed.size >= bench.MESSAGE_SIZE_STREAM
    assert typed.run() == raw.run() == typed.records
    # Records are about the size they are named for, never over it.
    assert 0.75 * size <= typed.size / typed.records <= size


def test_a_workload_that_miscounts_fails() -> None:
    workload = bench.reference_workloads()["raw_unpacker_baseline"]
    wrong = bench.Workload("wrong", workload.run, workload.records + 1, workload.size)
    with pytest.raises(AssertionError, match="counted 10000 records, expected 10001"):
        wrong.time(1)


def test_the_map_shaped_reference_holds_the_same_items(reference_items: list[Any]) -> None:
    maps = bench.reference_map_data()
    unpacker = msgpack.Unpacker()
    unpacker.feed(maps)
    assert all(isinstance(value, dict) for value in unpacker)
    assert list(StreamingReader(maps)) == reference_items


def test_item_struct_records_are_the_reference_items(reference_items: list[Any]) -> None:
    structs = list(StreamingReader(bench.reference_data(), bench.ItemStruct))
    assert [msgspec.structs.astuple(s) for s in structs] == [
        tuple(item.to_list()) for item in reference_items
    ]
    # gc=False: the records a stream makes are neither tracked nor scanned by the collector.
    assert not any(map(gc.is_tracked, structs))


def test_sized_records_decode_as_sized_record() -> None:
    data = msgpack.packb([7, b"abc"])
    assert list(StreamingReader(data, bench.SizedRecord)) == [bench.SizedRecord(7, b"abc")]


def test_main_registers_every_benchmark_with_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    registered = fake_pyperf(monkeypatch)
    bench.main()
    expected = [*bench.REFERENCE_BENCHMARKS, *(f"paired/{name}" for name in bench.PAIRED)]
    for size in bench.MESSAGE_SIZES:
        expected += [f"message_size_raw/{size}", f"message_size/{size}"]
    assert list(registered) == expected
    time_func, metadata = registered["in_memory_stream_benchmark"]
    assert metadata == {"records": REFERENCE_MESSAGES, "stream_bytes": REFERENCE_SIZE}
    assert time_func(1) > 0
    time_func, metadata = registered["paired/map_stream_benchmark"]
    assert metadata == {
        "unit": "integer",
        "paired_with": "raw_map_unpacker_baseline",
        "records": REFERENCE_MESSAGES,
        "stream_bytes": len(bench.reference_map_data()),
    }
    assert time_func(1) > 0
    time_func, metadata = registered["message_size/512"]
    assert metadata["stream_bytes"] == bench.message_size_workload(512).size
    assert time_func(1) > 0


@pytest.mark.parametrize("to_stdout", [True, False], ids=["stdout", "file"])
def test_write_result_writes_indented_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], to_stdout: bool
) -> None:
    result = {"records": 3, "measurements": {"a": [1.5, 2.0]}}
    path = tmp_path / "result.json"
    bench.write_result(result, "-" if to_stdout else str(path))
    text = capsys.readouterr().out if to_stdout else path.read_text()
    assert text == json.dumps(result, indent=2) + "\n"


def test_a_paired_value_is_the_ratio_of_the_two_timed_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timed: list[str] = []
    seconds = {"fast_stream_benchmark": 3.0, "raw_unpacker_baseline": 2.0}

    def fake_time(self: bench.Workload, loops: int) -> float:
        assert loops == 1  # whole passes, one at a time
        timed.append(self.name)
        return seconds[self.name]

    monkeypatch.setattr(bench.Workload, "time", fake_time)
    # pyperf divides what the time function returns by its loops: a value is the ratio itself.
    assert bench.paired_timer("fast_stream_benchmark", "raw_unpacker_baseline")(2) == 3.0
    turns = 2 * bench.PAIRED_TURNS
    assert len(timed) == 2 * turns
    # Which of the two goes first alternates, so neither always runs on the other's warm cache.
    firsts = timed[::2]
    assert firsts == ["fast_stream_benchmark", "raw_unpacker_baseline"] * (turns // 2)
    assert all(a != b for a, b in zip(timed[::2], timed[1::2], strict=True))


def test_the_two_kinds_stream_is_the_reference_records_tagged() -> None:
    kinds = list(StreamingReader(bench.reference_union_data(), bench.EvenItem | bench.OddItem))
    items = list(StreamingReader(bench.reference_data()))
    assert [type(k).__name__ for k in kinds[:2]] == ["EvenItem", "OddItem"]
    assert [k.id for k in kinds] == [i.id for i in items]
    one = list(StreamingReader(bench.reference_union_data(), bench.KindedItem))
    assert [o.kind for o in one[:3]] == ["even", "odd", "even"]
