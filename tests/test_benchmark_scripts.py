"""The scripts behind doc/RESULTS.md: each measures what it claims, the report is made from JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgpack
import pyperf
import pytest

from benchmarks import (
    big_file,
    compression,
    engines,
    one_file,
    output,
    output_cost,
    report,
    scale_out,
    tried,
)
from msgpack_reader_py import get_iter, pack_items
from msgpack_reader_py import streaming_reader_bench as bench

from .helpers import fake_pyperf
from .reference import REFERENCE_MESSAGES


@pytest.mark.parametrize("name", list(output.workloads()))
def test_every_output_workload_does_the_whole_reference_stream(name: str) -> None:
    assert output.workloads()[name]() == REFERENCE_MESSAGES
    assert bench.reference_run_timer(output.workloads, name)(1) > 0


@pytest.mark.parametrize("name", list(tried.workloads()))
def test_every_tried_design_reads_the_whole_reference_stream(name: str) -> None:
    assert tried.workloads()[name]() == REFERENCE_MESSAGES
    assert bench.reference_run_timer(tried.workloads, name)(1) > 0


def test_a_tried_design_is_timed_in_turn_with_what_it_is_judged_against(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered = fake_pyperf(monkeypatch)
    tried.main()
    assert list(registered) == [*tried.workloads(), "paired/built_a_run_at_a_time"]
    time_func, metadata = registered["paired/built_a_run_at_a_time"]
    assert metadata["paired_with"] == "in_memory_stream_benchmark"
    assert time_func(1) > 0


def test_the_per_record_design_still_refuses_a_wrong_record() -> None:
    data = msgpack.packb("not a record")
    with pytest.raises(ValueError, match="0"):
        list(tried._per_record(data))


def _items_with_a_wrong_field(count: int, bad: int) -> bytes:
    """``count`` valid Item records, but record ``bad`` has a str where ``line`` (an int) goes."""
    records = [item.to_list() for item in get_iter(count, 1)]
    records[bad][4] = "oops"
    return b"".join(map(msgpack.packb, records))


@pytest.mark.parametrize(
    ("design", "per_record"),
    [(tried._per_record, True), (tried._chunked, False)],
    ids=["per_record", "chunked"],
)
def test_the_former_validations_refuse_a_wrong_field_type(design: Any, per_record: bool) -> None:
    """The per-record design names the bad record; the chunked one the chunk's first."""
    data = _items_with_a_wrong_field(3, 2)
    # Unvalidated, the former designs took it (what validate=False meant).
    assert [item.line for item in design(data)][2] == "oops"
    with pytest.raises(ValueError, match=f"^{2 if per_record else 0}$"):
        list(design(data, True))
    # An int where a float goes was fine, and a bool is not an int.
    records = [item.to_list() for item in get_iter(3, 1)]
    records[1][5] = 7
    assert len(list(design(b"".join(map(msgpack.packb, records)), True))) == 3
    records[1][0] = True
    with pytest.raises(ValueError, match=f"^{1 if per_record else 0}$"):
        list(design(b"".join(map(msgpack.packb, records)), True))


def test_the_chunked_design_refuses_a_wrong_shape_and_a_truncated_end() -> None:
    with pytest.raises(ValueError, match=r"^0$"):
        list(tried._chunked(msgpack.packb([1, 2, 3, 4, 5, 6.0, "a"])))
    data = pack_items(get_iter(3, 1))
    assert [item.id for item in tried._chunked(data)] == [0, 1, 2]
    with pytest.raises(ValueError, match="truncated"):
        list(tried._chunked(data[:-1]))


def test_big_file_writes_what_it_counts_and_measures_every_kind(tmp_path: Path) -> None:
    path = tmp_path / "big.msgpack"
    records, sum_of_ids = big_file.write_stream(path, 1 << 20)
    assert records % big_file.BLOCK_RECORDS == 0
    assert path.stat().st_size >= 1 << 20
    for kind in big_file.MEASUREMENTS:
        result = big_file.measure(kind, str(path))
        assert result["bytes"] == path.stat().st_size
        assert result["peak_rss_bytes"] > 0
        if kind != "io_floor":
            assert (result["records"], result["sum_of_ids"]) == (records, sum_of_ids)


def test_big_file_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "big.json"
    assert big_file.main(["--size-gib", "0.002", "--repeat", "1", "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["measurements"]) == set(big_file.MEASUREMENTS) == {"io_floor", "read"}
    assert result["file_bytes"] >= 0.002 * (1 << 30)


def test_scale_out_end_to_end_agrees_and_reports_each_way(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    arguments = ["--files", "2", "--records", "3000", "--repeat", "1", "--workers", "1"]
    arguments += ["--dir", str(tmp_path)]
    assert scale_out.main([*arguments, "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["measurements"]) == set(scale_out.WAYS)
    assert result["records"] == 6000
    assert result["aggregate"]["count"] == 6000
    assert result["aggregate"]["sum_of_ids"] == 2 * sum(range(3000))
    baseline = result["measurements"][result["baseline"]]["median_seconds"]
    cluster = result["measurements"]["dask_local_cluster"]["median_seconds"]
    assert result["speedup"] == baseline / cluster


def test_one_file_end_to_end_times_every_pair(tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    arguments = ["--records", "3000", "--dask-records", "6000", "--blocksize", "50000"]
    assert one_file.main([*arguments, "--repeat", "1", "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["ratios"]) == set(one_file.PAIRS) == set(report.ONE_FILE)
    for name, (first, second) in one_file.PAIRS.items():
        seconds = result["measurements"]
        assert result["ratios"][name] == (
            seconds[first]["seconds"][0] / seconds[second]["seconds"][0]
        )
    assert result["guesses"]["ranges"] == 1
    assert result["tail_fraction_of_read"] == 1 / result["ratios"]["tail"]


def test_output_cost_commands_are_what_a_user_types() -> None:
    def line(name: str, destination: str) -> str:
        return output_cost.command_line(name, destination, program="m", source="F", out="O")

    assert line("floor", "devnull").endswith(" -m benchmarks.floor F > /dev/null")
    assert line("cat", "devnull") == "cat F > /dev/null"
    assert line("read", "devnull") == "m read --type item F > /dev/null"
    assert line("dump_items", "devnull") == "m dump --type item --format jsonl F > /dev/null"
    assert line("dump_untyped", "pipe") == "m dump --format jsonl F | cat > /dev/null"
    assert line("dump_items_csv", "file") == "m dump --type item --format csv F > O"
    assert line("convert_csv_items", "devnull") == (
        "m convert --type item --to csv -o - F > /dev/null"
    )
    assert line("convert_arrow_items", "pipe") == (
        "m convert --type item --to arrow -o - F | cat > /dev/null"
    )
    assert line("convert_arrow_items", "file") == "m convert --type item --to arrow -o O F"
    assert output_cost.runs()[0] == ("floor", "devnull")  # each round's ratios are to its floor
    assert len(output_cost.runs()) == 2 + 1 + 3 * (len(output_cost.WORKLOADS) - 1)
    parts = output_cost.parallel_line("parquet", 2, "parts", program="m", source="F", out="D")
    assert parts == f"m convert --type item --to parquet --jobs 2 -o D{os.sep} F"
    runs = output_cost.parallel_runs([2, 4])
    assert runs[0] == ("parquet", 1, "file")  # each format's work first
    assert runs[5] == ("csv", 1, "file")
    assert output_cost.shown_parallel("csv", 2, "parts").endswith(f"--jobs 2 -o DIR{os.sep} FILE")
    assert output_cost.shown_parallel("csv", 2, "file").endswith("--jobs 2 -o OUT.csv FILE")


def test_output_cost_fails_loudly_on_a_failed_command() -> None:
    assert output_cost.run("echo hi")[2] == "hi\n"
    with pytest.raises(SystemExit, match="exit status 3 from: echo oops >&2; exit 3\noops"):
        output_cost.run("echo oops >&2; exit 3")
    with pytest.raises(SystemExit, match="exit status 1"):  # a pipe's failure too
        output_cost.run("false | cat > /dev/null")


def test_output_cost_counts_a_csv_file_without_its_header(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("id,name\n1,a\n2,b\n")
    assert output_cost.records_in(out) == 2
    lines = tmp_path / "out.jsonl"
    lines.write_text("{}\n{}\n{}\n")
    assert output_cost.records_in(lines) == 3
    parts = tmp_path / "parts"
    parts.mkdir()
    for number in range(2):
        (parts / f"part-0000{number}.csv").write_text("id\n1\n2\n3\n")
    assert output_cost.records_in(parts) == 6


def test_engines_end_to_end_and_its_report(tmp_path: Path) -> None:
    out = tmp_path / "engines.json"
    arguments = ["--records", "2000", "--ray-records", "4000", "--repeat", "2"]
    assert engines.main([*arguments, "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["ratios"]) == set(engines.RATIOS) == set(report.ENGINES)
    seconds = result["measurements"]
    for name, (first, second) in engines.RATIOS.items():
        pairs = zip(seconds[first]["seconds"], seconds[second]["seconds"], strict=True)
        per_run = [b / a for a, b in pairs]
        assert result["ratios"][name] == pytest.approx(sum(per_run) / 2)
    assert result["ray_bytes"] > 0
    section = report.engines_section(result)
    assert section[0] == "## Polars, DuckDB and Ray"
    assert sum(line.startswith(("| `", "| Ray")) for line in section) == 3


def test_output_cost_end_to_end_and_its_report(tmp_path: Path) -> None:
    out = tmp_path / "doc" / "output_cost.result.json"
    out.parent.mkdir()
    arguments = ["--records", "3000", "--repeat", "1", "--dir", str(tmp_path)]
    assert output_cost.main([*arguments, "-o", str(out)]) == 0
    text = out.read_text()
    assert str(tmp_path) not in text  # commands as a user types them, no machine paths
    result = json.loads(text)
    assert result["records"] == 3000
    assert result["sum_of_ids"] == sum(range(3000))
    assert result["cpu_count"] >= 1
    assert {"python", "machine", "msgpack", "output_filesystem"} <= set(result)
    measurements = result["measurements"]
    assert set(measurements) == {"floor", "cat", *output_cost.WORKLOADS} == set(report.OUTPUT_COST)
    assert set(measurements["cat"]) == set(measurements["read"]) == {"devnull"}
    floor = measurements["floor"]["devnull"]
    assert floor["ratio_to_floor"] == 1.0
    for name in set(output_cost.WORKLOADS) - {"read"}:
        assert set(measurements[name]) == set(output_cost.DESTINATIONS)
        assert set(measurements[name]) == set(report.OUTPUT_COST_DESTINATIONS)
        for measured in measurements[name].values():
            assert measured["ratio_to_floor"] == measured["seconds"][0] / floor["seconds"][0]
            assert measured["command"].startswith("msgpack-reader ")
            assert measured["cpu_seconds"][0] > 0
        assert measurements[name]["file"]["output_bytes"] > 0
    assert set(result["targets"]) == set(output_cost.TARGETS)
    for name, target in result["targets"].items():
        assert target["ratio"] == measurements[name]["devnull"]["ratio_to_floor"]
        assert target["met"] == (target["ratio"] <= target["at_most"])
    work = {w["to"]: w["cpu_seconds"][0] for w in result["parallel_work"]}
    assert [(run["to"], run["jobs"], run["output"]) for run in result["parallel"]] == [
        (to, 2, output) for to in ("parquet", "csv") for output in ("file", "parts")
    ]
    for run in result["parallel"]:
        assert run["busy"] == work[run["to"]] / (2 * run["seconds"][0])
        if run["to"] == "parquet":
            assert run["met"] == (run["busy"] >= run["at_least"])
        else:
            assert "at_least" not in run
    assert not list(tmp_path.glob("msgpack-reader-output-*"))  # scratch files gone

    table = report.output_cost_table(result)
    assert len(table) == 2 + len(report.OUTPUT_COST)
    assert table[0].startswith("| command | `> /dev/null` | `\\| cat > /dev/null` | to a file |")
    assert table[2].startswith("| `python -m benchmarks.floor FILE`: msgpack's `Unpacker`")
    assert table[2].endswith(", 1.00x | - | - | - | - |")
    assert table[4].startswith("| `read --type item` (Items checked, counted, ids summed) | ")
    assert table[4].endswith(
        f"at most 1.2x: {'met' if result['targets']['read']['met'] else 'not met'} |"
    )
    parallel = report.parallel_table(result)
    assert len(parallel) == 2 + 2 * (1 + 2)
    assert parallel[2].startswith(
        "| `convert --type item --to parquet --jobs 1 -o OUT.parquet FILE`"
    )
    assert parallel[5].startswith("| `convert --type item --to csv --jobs 1 -o OUT.csv FILE`")
    assert report.output_cost_verdict(result).startswith("Targets, each judged on the median ")
    block = report.cost_block(result)
    rows = [line for line in block if line.startswith("| `")]
    assert len(rows) == len(output_cost.TARGETS) + len(output_cost.BUSY_TARGETS)
    assert "![What the commands cost](output_cost.png)" in block  # beside the page, as built
    report.plot_output_cost(result, tmp_path / "output_cost.png")
    assert (tmp_path / "output_cost.png").read_bytes().startswith(b"\x89PNG")


def test_compression_end_to_end_measures_every_codec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pyperf.Runner, "_created", set())  # one Runner a process, and this is it
    out = tmp_path / "compression.json"
    arguments = ["--records", "3000", "--processes", "1", "--values", "1", "--warmups", "0"]
    assert compression.main([*arguments, "--quiet", "-o", str(out)]) == 0
    rows, sizes = report.load_compression(out)
    assert set(sizes) == set(compression.CODECS)
    ways = {f"{way}/{codec}" for way in ("convert", "read") for codec in compression.CODECS}
    assert set(rows) == {"read/msgpack", *ways}
    assert {row.records for row in rows.values()} == {3000}
    assert {row.size for row in rows.values()} == {len(pack_items(get_iter(3000)))}
    assert sizes["none"] > sizes["zstd"]
    table = report.compression_table(rows, sizes)
    assert len(table) == 2 + len(compression.CODECS) + 1
    assert table[2].startswith(f"| `zstd` | {sizes['zstd']:,} | ")
    assert report.compression_verdict(rows, sizes).startswith("`convert`'s default for Parquet ")


def _codec_suite(path: Path, sizes: dict[str, int], convert: dict[str, float]) -> None:
    """A suite as benchmarks/compression.py writes it: reads at 0.1 s, converts as given."""
    benchmarks = []
    for name, seconds in {
        "read/msgpack": 0.5,
        **{f"convert/{codec}": value for codec, value in convert.items()},
        **{f"read/{codec}": 0.1 for codec in convert},
    }.items():
        metadata: dict[str, Any] = {"name": name, "loops": 1, "records": 1000}
        metadata["stream_bytes"] = 1000
        codec = name.split("/")[1]
        if codec in sizes:
            metadata.update(codec=codec, output_bytes=sizes[codec])
        run = pyperf.Run([seconds] * 3, metadata=metadata, collect_metadata=False)
        benchmarks.append(pyperf.Benchmark([run]))
    pyperf.BenchmarkSuite(benchmarks).dump(str(path), replace=True)


def test_the_compression_verdict_says_what_the_figures_say(tmp_path: Path) -> None:
    path = tmp_path / "compression.result.json"
    _codec_suite(
        path, {"zstd": 900, "snappy": 1300, "gzip": 950}, {"zstd": 1.1, "snappy": 1.0, "gzip": 1.5}
    )
    rows, sizes = report.load_compression(path)
    assert report.compression_table(rows, sizes) == [
        "| codec | Parquet bytes | / MessagePack | convert: median (MAD) | / snappy | "
        "read back: median (MAD) | / snappy |",
        "|---|---|---|---|---|---|---|",
        "| `zstd` | 900 | 0.90x | 1.100 s (0.0 us) | 1.10x | 100.000 ms (0.0 us) | 1.00x |",
        "| `snappy` | 1,300 | 1.30x | 1.000 s (0.0 us) | 1.00x | 100.000 ms (0.0 us) | 1.00x |",
        "| `gzip` | 950 | 0.95x | 1.500 s (0.0 us) | 1.50x | 100.000 ms (0.0 us) | 1.00x |",
        "| the MessagePack itself, `read_table` | 1,000 | 1.00x | - | - | 500.000 ms (0.0 us) "
        "| 5.00x |",
    ]
    verdict = report.compression_verdict(rows, sizes)
    assert verdict.startswith(
        "`convert`'s default for Parquet is `zstd`: 0.90x the size of the MessagePack and 0.69x "
        "that of `snappy` (pyarrow's default, which `convert` wrote before), the smallest file "
        "of the codecs; it converts in 1.10x the time of snappy and reads back in 1.00x. "
        "Reading the MessagePack into Arrow columns is 45% of a conversion's time"
    )
    _codec_suite(
        path, {"zstd": 900, "snappy": 1300, "gzip": 800}, {"zstd": 1.1, "snappy": 1.0, "gzip": 1.5}
    )
    rows, sizes = report.load_compression(path)
    assert (
        "against 0.80x for `gzip`, the smallest, which converts in 1.50x the time of snappy;"
        in (report.compression_verdict(rows, sizes))
    )


def test_scale_out_ways_compute_the_same_aggregate(tmp_path: Path) -> None:
    scale_out.write_files(tmp_path, 3, 500)
    pattern = str(tmp_path / "part-*.msgpack")
    expected = scale_out.single_process_reader(pattern)
    assert expected[:2] == (1500, 3 * sum(range(500)))
    count, ids, mean = scale_out.single_process_dataframe(pattern)
    assert (count, ids) == expected[:2]
    assert mean == pytest.approx(expected[2], rel=1e-12)


def test_scale_out_refuses_ways_that_disagree() -> None:
    with pytest.raises(SystemExit, match="disagree"):
        scale_out._agree({"a": (3, 6, 1.0), "b": (3, 7, 1.0)})


def fake_suite(
    path: Path,
    times: dict[str, float],
    records: int,
    size: int,
    sizes: dict[str, int] | None = None,
    paired_with: str = "raw_unpacker_baseline",
) -> None:
    """A pyperf suite of ``times``; each stream is ``size`` bytes unless ``sizes`` says, and
    each ``paired/`` benchmark is paired with ``paired_with``."""
    benchmarks = []
    for name, seconds in times.items():
        stream_bytes = (sizes or {}).get(name, size)
        metadata = {"name": name, "loops": 1, "records": records, "stream_bytes": stream_bytes}
        if name.startswith("paired/"):
            metadata["paired_with"] = paired_with
        run = pyperf.Run(
            [seconds, seconds * 1.02, seconds * 0.98], metadata=metadata, collect_metadata=False
        )
        benchmarks.append(pyperf.Benchmark([run]))
    pyperf.BenchmarkSuite(benchmarks).dump(str(path))


def test_the_report_knows_every_reference_benchmark_of_the_harness() -> None:
    assert set(report.REFERENCE) == set(bench.REFERENCE_BENCHMARKS)
    assert set(report.WHAT) == set(report.REFERENCE)
    # The harness sizes a benchmark's stream as map-shaped by its name; so does the report.
    assert {name for name in bench.REFERENCE_BENCHMARKS if "map" in name} == report.MAP_SHAPED
    for name, (of, _limit) in report.TARGETS.items():
        assert name in report.REFERENCE
        assert of in report.REFERENCE
        assert (name in report.MAP_SHAPED) == (of in report.MAP_SHAPED)


def test_the_rust_reference_ratio_is_its_two_times() -> None:
    rust = report.RUST_REFERENCE
    assert round(rust["rust_median_ms"] / rust["floor_median_ms"], 2) == rust["ratio"] == 1.05


def test_report_tables_come_from_the_json(tmp_path: Path) -> None:
    project_readme = report.README.read_bytes()  # each run below is given a README of its own
    times = dict.fromkeys(report.REFERENCE, 0.002)
    times["raw_unpacker_baseline"] = 0.001
    times["fast_stream_benchmark"] = 0.0016
    times["struct_stream_benchmark"] = 0.0015
    times["arrow_batches_benchmark"] = 0.0025
    times["raw_map_unpacker_baseline"] = 0.004
    times["map_stream_benchmark"] = 0.003
    times["paired/fast_stream_benchmark"] = 1.3  # a ratio, as the harness's paired runs give
    for size in (32, 512):
        times[f"message_size/{size}"] = 0.004
        times[f"message_size_raw/{size}"] = 0.002
    map_sizes = dict.fromkeys(report.MAP_SHAPED, 1_000_000)
    fake_suite(tmp_path / "benchmark.result.json", times, 10000, 559439, map_sizes)
    fake_suite(
        tmp_path / "tried.result.json",
        {
            "raw_unpacker_baseline": 0.001,
            "per_record_loop": 0.0021,
            "msgspec_structs": 0.0015,
            "built_a_run_at_a_time": 0.0019,
            "paired/built_a_run_at_a_time": 1.15,
        },
        10000,
        559439,
        paired_with="in_memory_stream_benchmark",
    )
    big = {
        "file_bytes": 1 << 30,
        "records": 19_000_000,
        "repeat": 3,
        "python": "3.11",
        "msgpack": "1.2.4",
        "measurements": {
            "io_floor": {"median_seconds": 0.5, "peak_rss_bytes": 12_000_000},
            "read": {"median_seconds": 10.0, "peak_rss_bytes": 30_000_000},
        },
    }
    (tmp_path / "big_file.result.json").write_text(json.dumps(big))
    scale = {
        "files": 8,
        "records_per_file": 1_000_000,
        "bytes": 460_000_000,
        "workers": 2,
        "repeat": 5,
        "cluster_startup_seconds": 1.5,
        "python": "3.11",
        "cpu_count": 2,
        "baseline": "single_process_reader",
        "speedup": 1.8,
        "measurements": {
            "single_process_reader": {"median_seconds": 4.5, "records_per_second": 1.78e6},
            "single_process_dataframe": {"median_seconds": 5.0, "records_per_second": 1.6e6},
            "dask_local_cluster": {"median_seconds": 2.5, "records_per_second": 3.2e6},
        },
    }
    (tmp_path / "scale_out.result.json").write_text(json.dumps(scale))
    seconds = {"median_seconds": 1.0, "seconds": [1.0]}
    one = {
        "records": 2_000_000,
        "bytes": 115_833_256,
        "dask_records": 8_000_000,
        "dask_bytes": 463_727_334,
        "jobs": 2,
        "workers": 2,
        "blocksize": 64 << 20,
        "repeat": 5,
        "ratios": dict.fromkeys(report.ONE_FILE, 1.75),
        "read_in_process_jobs_n_over_floor": 0.98,
        "values_in_process_jobs_1_over_floor": 1.3,
        "values_in_process_jobs_n_over_floor": 0.7,
        "guesses": {"ranges": 14, "rereads": 0, "slowest_seconds": 0.00013},
        "measurements": {way: seconds for pair in one_file.PAIRS.values() for way in pair},
        "python": "3.11.7",
        "cpu_count": 2,
    }
    (tmp_path / "one_file.result.json").write_text(json.dumps(one))
    readme = tmp_path / "README.md"
    readme.write_text(
        f"intro\n{report.README_START}\nold figures\n{report.README_END}\nrest\n"
        f"records {report.SCALE_START}(old){report.SCALE_END} (see)\n"
        f"takes {report.RUST_START}(old){report.RUST_END}.\n"
    )
    assert report.main(["--doc", str(tmp_path), "--readme", str(readme)]) == 0
    updated = readme.read_text()
    assert updated.startswith(f"intro\n{report.README_START}\n")
    assert updated.endswith(
        f"{report.README_END}\nrest\nrecords {report.SCALE_START}in 2.500 s, against 4.500 s "
        "for the faster single-process way (`single_process_reader`): **1.80x** faster"
        f"{report.SCALE_END} (see)\ntakes {report.RUST_START}**0.70x** the floor on 2 cores: "
        f"{report.RUST_REFERENCE['ratio'] / 0.7:.2f}x as fast as the Rust reader"
        f"{report.RUST_END}.\n"
    )
    assert "old figures" not in updated
    assert (
        "| `struct_stream_benchmark` | - | 1.50x | `raw_unpacker_baseline` | at most 1.4x "
        "| no: 7.1% over |" in updated
    )
    text = (tmp_path / "RESULTS.md").read_text()
    assert (
        "| `read --jobs N` against `--jobs 1`, each a process of its own | 1.75x | 1.7x: met |"
        in text
    )
    assert "| `convert --to parquet --jobs N` against `--jobs 1` | 1.75x | 1.6x: met |" in text
    assert "| `count` (framing alone) against `read --jobs 1` | 1.75x | 3.0x: not met |" in text
    assert "took at most 0.13 ms over the 14 ranges" in text
    rust = report.RUST_REFERENCE["ratio"]
    assert (
        "`read --type msgpack_reader_py:ITEM_VALUES --jobs 2` run in one process takes **0.70x** "
        "the floor" in text
    )
    assert f"{rust / 0.7:.2f}x as fast as the Rust reader per file" in text
    assert f"the Rust reader is {1.3 / rust:.2f}x as fast" in text
    assert f"takes 0.98x ({rust / 0.98:.2f}x as fast as the Rust reader)" in text
    assert (tmp_path / "one_file.png").exists()
    assert "on other machines" not in text
    ratios = {**dict.fromkeys(report.ONE_FILE, 1.75), "read_jobs_n": 7.5, "dask_ranges": 4.25}
    elsewhere = {**one, "cpu_count": 16, "jobs": 16, "note": "a note", "ratios": ratios}
    (tmp_path / "one_file.cores16.result.json").write_text(json.dumps(elsewhere))
    assert report.main(["--doc", str(tmp_path), "--readme", str(readme)]) == 0
    assert (
        "| 16 | 2,000,000 | 16 | 7.50x | 1.75x | 4.25x | 1.75x | a note |"
        in (tmp_path / "RESULTS.md").read_text()
    )
    assert report.README.read_bytes() == project_readme
    (tmp_path / "one_file.cores16.result.json").unlink()
    # Without doc/output_cost.result.json, no section of it and no plot.
    assert "## What the commands cost" not in text
    assert not (tmp_path / "output_cost.png").exists()
    assert "python -m benchmarks.output_cost -o output_cost.result.json" in text
    (tmp_path / "output_cost.result.json").write_text(json.dumps(_output_cost_result()))
    readme.write_text(readme.read_text() + f"{report.COST_START}old{report.COST_END}\n")
    assert report.main(["--doc", str(tmp_path), "--readme", str(readme)]) == 0
    with_cost = (tmp_path / "RESULTS.md").read_text()
    section = with_cost.split("## What the commands cost\n")[1].split("\n## ")[0]
    assert "A file of 2,000,000 Items (116 MB, page cache warm)" in section
    assert (
        "| `dump --type item` (JSON Lines) | 1.2 s, 1.20x | 1.3 s, 1.30x | "
        "1.2 s, 1.25x | 250 MB (2.16x the input) | at most 1.6x: met |" in section
    )
    assert "| `cat FILE`: the I/O floor | 30 ms, 0.03x | - | - | - | - |" in section
    assert "| `read --type item` (Items checked, counted, ids summed) | 1.1 s, 1.10x |" in section
    assert "4 of 6 met" in section
    assert "`convert --type item --to csv` 1.90x (at most 1.8x, not met)" in section
    assert "`--to parquet --jobs 2` to one file 0.75 busy (at least 0.8, not met)" in section
    assert (
        f"| `convert --type item --to parquet --jobs 2 -o DIR{os.sep} FILE` | 1.1 s | 1.82x | "
        "0.90 | at least 0.85: met |" in section
    )
    cost_block = readme.read_text().split(report.COST_START)[1].split(report.COST_END)[0]
    assert "| `dump --type item` to `/dev/null` | 1.20x the floor | at most 1.6x | yes |" in (
        cost_block
    )
    assert (tmp_path / "output_cost.png").read_bytes().startswith(b"\x89PNG")
    assert "validated_stream_benchmark" not in text
    assert "validate=True" not in text.split("## What we tried")[0]
    # A tried row's verdict cites its paired ratio where the run has one.
    assert "before the collector's count gets there (1.15x the time of the reader, the two " in text
    assert "| 2.10x | dropped: a Python-level loop step per record, and no field " in text
    assert (
        "| `in_memory_stream_benchmark` | - | 2.00x | `raw_unpacker_baseline` | at most 2.0x "
        "| yes |" in text
    )
    assert (
        # Judged on the paired ratio where the run has one, not on the ratio of medians.
        "| `fast_stream_benchmark` | 1.30x | 1.60x | `raw_unpacker_baseline` | at most 1.4x "
        "| yes |" in text
    )
    assert (
        "| `arrow_batches_benchmark` | - | 2.50x | `raw_unpacker_baseline` | at most 2.5x "
        "| yes |" in text
    )
    # Map-shaped data is a ratio to its own floor, in the targets and the reference table.
    assert (
        "| `map_stream_benchmark` | - | 0.75x | `raw_map_unpacker_baseline` | at most 1.0x "
        "| yes |" in text
    )
    assert "| 333.3 | `raw_map_unpacker_baseline` | 0.75x |" in text
    assert "| 250.0 | `raw_map_unpacker_baseline` | 1.00x |" in text
    assert "| 349.6 | `raw_unpacker_baseline` | 1.60x |" in text
    assert "## Reference data: 10000 records, 559,439 bytes, 55.94 bytes/record " in text
    assert "(1,000,000 bytes as maps)" in text
    # The Rust figures, and the fastest validated read of this run (fast, paired: 1.30x).
    assert "3.04 ms median against 2.89 ms for `raw_unpacker_baseline`" in text
    assert "**1.05x** the floor (0.83-0.86x when built with the snmalloc allocator)" in text
    assert "silently drops a truncated last record" in text
    assert "`fast_stream_benchmark` at 1.30x the floor (paired), is **1.24x** the Rust" in text
    assert "1.7x this floor" not in text
    assert (
        "| `file_stream_benchmark` | - | 1.00x | `in_memory_stream_benchmark` | at most 1.1x "
        "| yes |" in text
    )
    assert "| 32 B | 10000 | 4.000 ms | 140 | 2.50 M | 2.000 ms | 280 | 2.00x |" in text
    read = "| reader, default options, every record validated (as `msgpack-reader read` runs it) |"
    assert f"{read} 10.000 s | 1.90 M | 107 | 20.00x | 30.0 MB |" in text
    assert "| I/O floor: `read(1 << 20)` loop | 500.000 ms |  | 2147 | 1.00x | 12.0 MB |" in text
    assert (
        "| 2.10x | dropped: a Python-level loop step per record, and no field type checked |"
        in text
    )
    assert "| 1.50x | kept and refined: the reader skips most records" in text
    assert (
        "on a `LocalCluster` of 2 worker processes, 1 thread each "
        "| 2.500 s | 3.20 M | 184 | 1.00x |" in text
    )
    assert "| 4.500 s | 1.78 M | 102 | 1.80x |" in text
    assert "(`single_process_reader`): **1.80x** (target: at least 1.6x on 2 cores, met)" in text
    assert "It runs at 2.50x the floor (4.00 M records/s), against 2.00x for `Item`s" in text
    for picture in ("throughput_by_size.png", "reference_benchmark.png"):
        assert (tmp_path / picture).read_bytes().startswith(b"\x89PNG")


def _output_cost_result() -> dict[str, Any]:
    """A result as benchmarks/output_cost.py writes it: the floor at 1 s, dump_items at 1.2x."""

    def measured(seconds: float, ratio: float) -> dict[str, Any]:
        return {"median_seconds": seconds, "ratio_to_floor": ratio, "output_bytes": 250_000_000}

    ratios = {
        "dump_items": (1.2, 1.3, 1.25),
        "dump_items_csv": (2.4, 2.5, 2.45),
        "dump_untyped": (1.1, 1.15, 1.1),
        "convert_csv_items": (1.9, 2.0, 1.95),
        "convert_parquet_items": (1.6, 1.7, 1.6),
        "convert_arrow_items": (1.0, 1.1, 1.0),
    }
    measurements = {
        "floor": {"devnull": measured(1.0, 1.0)},
        "cat": {"devnull": measured(0.03, 0.03)},
        "read": {"devnull": measured(1.1, 1.1)},
        **{
            name: {
                destination: measured(value, value)
                for destination, value in zip(output_cost.DESTINATIONS, values, strict=True)
            }
            for name, values in ratios.items()
        },
    }
    targets = {
        name: {
            "at_most": limit,
            "ratio": measurements[name]["devnull"]["ratio_to_floor"],
            "met": measurements[name]["devnull"]["ratio_to_floor"] <= limit,
        }
        for name, limit in output_cost.TARGETS.items()
    }
    parallel = [
        {
            "to": "parquet",
            "jobs": 2,
            "output": output,
            "command": output_cost.shown_parallel("parquet", 2, output),
            "median_seconds": seconds,
            "speedup": 2.0 / seconds,
            "busy": busy,
            "at_least": output_cost.BUSY_TARGETS[("parquet", output, 2)],
            "met": busy >= output_cost.BUSY_TARGETS[("parquet", output, 2)],
        }
        for output, seconds, busy in (("file", 1.6, 0.75), ("parts", 1.1, 0.9))
    ]
    return {
        "file_bytes": 116_000_000,
        "records": 2_000_000,
        "repeat": 3,
        "output_filesystem": "ext4",
        "python": "3.11.7",
        "cpu_count": 2,
        "measurements": measurements,
        "targets": targets,
        "parallel": parallel,
        "parallel_work": [
            {
                "to": "parquet",
                "command": output_cost.shown_parallel("parquet", 1, "file"),
                "seconds": [2.0, 2.1, 1.9],
                "cpu_seconds": [2.7, 2.8, 2.6],
            }
        ],
    }
