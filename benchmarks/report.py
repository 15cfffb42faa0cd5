"""Make doc/RESULTS.md and the plots from the committed benchmark JSON. Never edit them by hand.

    poetry run python benchmarks/report.py            # reads doc/*.result.json, writes doc/

Inputs: ``doc/benchmark.result.json`` (pyperf, from ``streaming_reader_bench.py``),
``doc/big_file.result.json`` (``big_file.py``), ``doc/tried.result.json`` (``tried.py``) and
``doc/scale_out.result.json`` (``scale_out.py``), ``doc/compression.result.json`` (pyperf, from
``compression.py``), ``doc/output_cost.result.json`` (``output_cost.py``; its section and
``doc/output_cost.png`` appear only when it exists), ``doc/engines.result.json``
(``engines.py``; its section likewise), ``doc/spark.result.json`` (``spark.py``; its section
and the Spark sentence likewise).
Outputs: ``doc/RESULTS.md``, ``doc/throughput_by_size.png``, ``doc/reference_benchmark.png``,
and the marked blocks of ``docs/performance.md`` (results, scale-out, one file against Rust,
what the commands cost, Spark).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyperf

from msgpack_reader_py._output.formats import DEFAULT_CODEC
from msgpack_reader_py.streaming_reader_bench import PAIRED

DOC = Path(__file__).resolve().parent.parent / "doc"
BASELINE = "raw_unpacker_baseline"
MAP_BASELINE = "raw_map_unpacker_baseline"
REFERENCE = (
    BASELINE,
    "in_memory_stream_benchmark",
    "file_stream_benchmark",
    "fast_stream_benchmark",
    "struct_stream_benchmark",
    "arrow_batches_benchmark",
    MAP_BASELINE,
    "map_stream_benchmark",
    "async_stream_benchmark",
    "one_kind_struct_benchmark",
    "union_stream_benchmark",
)
MAP_SHAPED = frozenset({MAP_BASELINE, "map_stream_benchmark"})
"""The benchmarks over the reference records written as maps: their floor is ``MAP_BASELINE``."""
LIMITS = {
    "in_memory_stream_benchmark": 2.0,
    "fast_stream_benchmark": 1.4,
    "struct_stream_benchmark": 1.4,
    "map_stream_benchmark": 1.0,
    "arrow_batches_benchmark": 2.5,
    "file_stream_benchmark": 1.1,
    "async_stream_benchmark": 1.2,
    "union_stream_benchmark": 1.3,
}
"""Each target: at most this ratio to the benchmark the harness pairs it with (``PAIRED``)."""
TARGETS = {name: (PAIRED[name], limit) for name, limit in LIMITS.items()}
"""benchmark -> (the benchmark it is a ratio of, at most)"""
FAST_PATHS = ("fast_stream_benchmark", "struct_stream_benchmark", "in_memory_stream_benchmark")
"""The validated reads of the array-shaped reference data; the fastest is set against Rust."""
WHAT = {
    BASELINE: "plain `msgpack.Unpacker` over `io.BytesIO`, values counted, no typing: the floor",
    "in_memory_stream_benchmark": "`StreamingReader(io.BytesIO(data))` into `Item` dataclasses, "
    "default options (validated)",
    "file_stream_benchmark": "as above from a path, `StreamingReader(path)` (warm page cache)",
    "fast_stream_benchmark": "`StreamingReader(io.BytesIO(data), ITEM_VALUES)`: validated typed "
    "tuples",
    "struct_stream_benchmark": "`StreamingReader(io.BytesIO(data), ItemStruct)`: an "
    "`array_like`, `gc=False` `msgspec.Struct`, validated",
    "arrow_batches_benchmark": "`read_batches(io.BytesIO(data))`: validated Arrow columns",
    MAP_BASELINE: "plain `msgpack.Unpacker` over the same records written as maps keyed by "
    "field name, values counted: the floor for map-shaped data",
    "map_stream_benchmark": "`StreamingReader(io.BytesIO(map_data))` into `Item` dataclasses "
    "from those maps, validated",
    "async_stream_benchmark": "`async for` over `AsyncStreamingReader(stream)`, `stream` an "
    "`asyncio.StreamReader` fed the reference data: `Item`s, validated",
    "one_kind_struct_benchmark": 'the reference records as two kinds, `["even" \\| '
    '"odd", id, ...]`, read as one `array_like` Struct whose first field is the tag',
    "union_stream_benchmark": "the same bytes read as `EvenItem \\| OddItem`, two tagged "
    "`array_like` Structs: each record its kind, validated",
}
RUST_REFERENCE: dict[str, Any] = {
    # Measured by hand on this machine; not part of the pyperf run the report is made from.
    "repository": "REASY/msgpack-py-vs-rs",
    "commit": "61d7e4f",
    "command": "cargo bench",
    "harness": "criterion",
    "benchmark": "in_memory_stream_benchmark",
    "rust_median_ms": 3.04,
    "floor_median_ms": 2.89,  # raw_unpacker_baseline, pyperf, in the same session
    "ratio": 1.05,  # rust_median_ms / floor_median_ms
    "snmalloc_ratio": (0.83, 0.86),  # the same, built with the snmalloc allocator
    "broken_input": (
        "silently drops a truncated last record",
        "accepts arrays that are too long (the extra values are ignored)",
        "panics on an array that is too short or a value of the wrong type",
        "narrows the integer fields (all but `timestamp_ns`) to i32 and the float to f32",
    ),
}


def floor_of(name: str) -> str:
    """The floor a reference benchmark is divided by: its own data's plain ``Unpacker``."""
    return MAP_BASELINE if name in MAP_SHAPED else BASELINE


def ratio(rows: dict[str, Row], name: str, of: str | None = None) -> float:
    """The median of ``name`` over the median of ``of`` (default: its floor), one run's."""
    return rows[name].median / rows[of or floor_of(name)].median


@dataclass
class Row:
    name: str
    median: float
    mad: float
    mean: float
    stdev: float
    records: int
    size: int
    paired_with: str | None = None  # a paired benchmark's other half

    @classmethod
    def of(cls, bench: Any) -> Row:
        metadata = bench.get_metadata()
        return cls(
            bench.get_name(),
            bench.median(),
            bench.median_abs_dev(),
            bench.mean(),
            bench.stdev() if bench.get_nvalue() > 1 else 0.0,
            int(metadata["records"]),
            int(metadata["stream_bytes"]),
            metadata.get("paired_with"),
        )

    @property
    def records_per_second(self) -> float:
        return self.records / self.median

    @property
    def megabytes_per_second(self) -> float:
        return self.size / self.median / 1e6


def _time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    if value >= 1e3:
        return f"{value / 1e3:.1f} k"
    return f"{value:.0f}"


def load(path: Path) -> tuple[dict[str, Row], dict[str, Any]]:
    suite = pyperf.BenchmarkSuite.load(str(path))
    rows = {bench.get_name(): Row.of(bench) for bench in suite.get_benchmarks()}
    metadata = dict(suite.get_metadata())
    starts = [bench.get_dates()[0] for bench in suite.get_benchmarks() if bench.get_dates()]
    if starts:
        metadata["date"] = min(starts).isoformat(sep=" ", timespec="minutes")
    return rows, metadata


def reference_table(rows: dict[str, Row]) -> list[str]:
    lines = [
        "| benchmark | what | median | MAD | mean | SD | records/s | MB/s | floor | / floor |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in REFERENCE:
        row = rows[name]
        lines.append(
            f"| `{name}` | {WHAT[name]} | {_time(row.median)} | {_time(row.mad)} | "
            f"{_time(row.mean)} | {_time(row.stdev)} | {_rate(row.records_per_second)} | "
            f"{row.megabytes_per_second:.1f} | `{floor_of(name)}` | {ratio(rows, name):.2f}x |"
        )
    return lines


def rust_paragraph(rows: dict[str, Row]) -> str:
    """The Rust reader of ``RUST_REFERENCE`` next to this run's fastest validated read."""
    rust = RUST_REFERENCE
    ratios = {name: judged(rows, name) for name in FAST_PATHS}
    fastest = min(ratios, key=ratios.__getitem__)
    low, high = rust["snmalloc_ratio"]
    broken = rust["broken_input"]
    return (
        f"The Rust reader, measured by hand on this machine: "
        f"[{rust['repository']}](https://github.com/{rust['repository']}) at commit "
        f"`{rust['commit']}`, `{rust['command']}` ({rust['harness']}) "
        f"`{rust['benchmark']}` over the same reference bytes (same sha256), "
        f"{rust['rust_median_ms']:.2f} ms median against {rust['floor_median_ms']:.2f} ms for "
        f"`{BASELINE}` measured in the same session: **{rust['ratio']:.2f}x** the floor "
        f"({low:.2f}-{high:.2f}x when built with the snmalloc allocator). It checks far less "
        f"than this reader: it {', '.join(broken[:-1])}, and {broken[-1]}. The fastest "
        f"validated read in this run, `{fastest}` at {ratios[fastest]:.2f}x the floor (paired), "
        "is "
        f"**{ratios[fastest] / rust['ratio']:.2f}x** the Rust figure (each as a ratio to the "
        "floor of its own session; the figures are in `RUST_REFERENCE` in "
        "`benchmarks/report.py`)."
    )


def judged(rows: dict[str, Row], name: str) -> float:
    """The ratio a target is judged on: the median of ``paired/<name>`` (the two timed in
    turn in the same workers), or for a run without it the ratio of the two medians."""
    paired = rows.get(f"paired/{name}")
    return paired.median if paired is not None else ratio(rows, name, PAIRED[name])


def target_table(rows: dict[str, Row]) -> list[str]:
    lines = [
        "| benchmark | paired ratio | ratio of medians | of | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for name, (of, limit) in TARGETS.items():
        paired = rows.get(f"paired/{name}")
        value = judged(rows, name)
        met = "yes" if value <= limit else f"no: {value / limit - 1:.1%} over"
        lines.append(
            f"| `{name}` | {'-' if paired is None else f'{paired.median:.2f}x'} | "
            f"{ratio(rows, name, of):.2f}x | `{of}` | at most {limit}x | {met} |"
        )
    return lines


def faster_sentence(rows: dict[str, Row], sizes: list[int]) -> str:
    """Which record sizes the typed reader beat the raw loop at, in this run."""
    faster = [f"{size} B" for size in sizes if _typed_over_raw(rows, size) < 1]
    if not faster:
        return "In this run the raw loop is faster at every size."
    return f"In this run the typed reader is faster than the raw loop at {', '.join(faster)}."


def _typed_over_raw(rows: dict[str, Row], size: int) -> float:
    return ratio(rows, f"message_size/{size}", f"message_size_raw/{size}")


def size_table(rows: dict[str, Row], sizes: list[int]) -> list[str]:
    lines = [
        "| record size | records | typed median | typed MB/s | typed records/s "
        "| raw median | raw MB/s | typed / raw |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        typed, raw = rows[f"message_size/{size}"], rows[f"message_size_raw/{size}"]
        lines.append(
            f"| {size} B | {typed.records} | {_time(typed.median)} | "
            f"{typed.megabytes_per_second:.0f} | {_rate(typed.records_per_second)} | "
            f"{_time(raw.median)} | {raw.megabytes_per_second:.0f} | "
            f"{_typed_over_raw(rows, size):.2f}x |"
        )
    return lines


def big_file_table(big: dict[str, Any]) -> list[str]:
    floor = big["measurements"]["io_floor"]["median_seconds"]
    names = {
        "io_floor": "I/O floor: `read(1 << 20)` loop",
        "read": "reader, default options, every record validated (as `msgpack-reader read` "
        "runs it)",
    }
    lines = [
        "| what | median | records/s | MB/s | time / I/O floor | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for kind, measured in big["measurements"].items():
        seconds = measured["median_seconds"]
        records = "" if kind == "io_floor" else _rate(big["records"] / seconds)
        lines.append(
            f"| {names[kind]} | {_time(seconds)} | {records} | "
            f"{big['file_bytes'] / seconds / 1e6:.0f} | {seconds / floor:.2f}x | "
            f"{measured['peak_rss_bytes'] / 1e6:.1f} MB |"
        )
    return lines


SCALE_OUT_TARGET = 1.6
SCALE_OUT_WAYS = {
    "single_process_reader": "one process, `StreamingReader` over each file in turn (every "
    "record validated), running sums in a Python loop",
    "single_process_dataframe": "one process, the same `read_dataframe` aggregate on Dask's "
    "synchronous scheduler (each file read as a partition is)",
    "dask_local_cluster": "`read_dataframe` on a `LocalCluster`",
}


def scale_out_table(scale: dict[str, Any]) -> list[str]:
    cluster = scale["measurements"]["dask_local_cluster"]["median_seconds"]
    lines = [
        "| way | median | records/s | MB/s | / cluster time |",
        "|---|---|---|---|---|",
    ]
    for way, what in SCALE_OUT_WAYS.items():
        measured = scale["measurements"][way]
        seconds = measured["median_seconds"]
        if way == "dask_local_cluster":
            what += f" of {scale['workers']} worker processes, 1 thread each"
        lines.append(
            f"| {what} | {_time(seconds)} | {_rate(measured['records_per_second'])} | "
            f"{scale['bytes'] / seconds / 1e6:.0f} | {seconds / cluster:.2f}x |"
        )
    return lines


def scale_out_verdict(scale: dict[str, Any]) -> str:
    speedup = scale["speedup"]
    met = "met" if speedup >= SCALE_OUT_TARGET else "not met"
    return (
        f"Speed-up of the cluster over the faster single-process way (`{scale['baseline']}`): "
        f"**{speedup:.2f}x** (target: at least {SCALE_OUT_TARGET}x on 2 cores, {met})."
    )


ONE_FILE = {  # benchmarks/one_file.py: ratio -> what it compares, its target, its direction
    "read_jobs_n": ("`read --jobs N` against `--jobs 1`, each a process of its own", 1.7),
    "read_in_process_jobs_n": ("the same two commands run in one process: the work alone", None),
    "values_in_process_jobs_n": (
        "`read --type msgpack_reader_py:ITEM_VALUES --jobs N` against `--jobs 1`, in one "
        "process (every field checked, no object built)",
        None,
    ),
    "read_table_workers_n": (
        "`read_table(workers=N)` against `read_table()`, in one process",
        None,
    ),
    "convert_jobs_n": ("`convert --to parquet --jobs N` against `--jobs 1`", 1.6),
    "read_zstd_jobs_n": (
        "`read --jobs N` against `--jobs 1`, the file as zstd frames of 4 MiB (split where "
        "frames start)",
        None,
    ),
    "count": ("`count` (framing alone) against `read --jobs 1`", 3.0),
    "tail": ("`tail -n 10` against `read --jobs 1` (how many times faster)", 2.5),
    "dask_ranges": (
        "Dask, every column: the file in `blocksize` ranges against one partition",
        1.7,
    ),
    "dask_ranges_two_columns": (
        "Dask, an aggregate of `id` and `value` (each partition builds those two columns "
        "only): ranges against one partition",
        None,
    ),
}


ELSEWHERE = {  # the ratios of benchmarks/one_file.py shown for other machines
    "read_jobs_n": "read",
    "convert_jobs_n": "convert to Parquet",
    "dask_ranges": "Dask ranges",
    "count": "count",
}


def elsewhere_table(others: list[dict[str, Any]]) -> list[str]:
    """The one-file ratios of runs on other machines (``doc/one_file.*.result.json``), a row
    each; nothing where there are none."""
    if not others:
        return []
    lines = [
        "The same benchmark run on other machines (one run each, its own repeats):",
        "",
        "| logical CPUs | records | processes | " + " | ".join(ELSEWHERE.values()) + " | note |",
        "|---|---|---|" + "---|" * len(ELSEWHERE) + "---|",
    ]
    for other in others:
        ratios = " | ".join(f"{other['ratios'][name]:.2f}x" for name in ELSEWHERE)
        lines.append(
            f"| {other['cpu_count']} | {other['records']:,} | {other['jobs']} | {ratios} "
            f"| {other.get('note', '-')} |"
        )
    return [*lines, ""]


def _faster(rust: float, ours: float) -> str:
    """How a read's time (a ratio to the floor) compares with the Rust reader's."""
    if ours < rust:
        return f"{rust / ours:.2f}x as fast as the Rust reader"
    return f"the Rust reader is {ours / rust:.2f}x as fast"


def one_file_table(one: dict[str, Any]) -> list[str]:
    lines = ["| ratio | faster by | target |", "|---|---|---|"]
    for name, (what, target) in ONE_FILE.items():
        value = one["ratios"][name]
        met = target is not None and value >= target
        verdict = "-" if target is None else f"{target}x: {'met' if met else 'not met'}"
        lines.append(f"| {what} | {value:.2f}x | {verdict} |")
    return lines


def plot_one_file(one: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [
        ("read", "read_jobs_1", "read_jobs_n"),
        ("read, zstd frames", "read_zstd_jobs_1", "read_zstd_jobs_n"),
        ("convert parquet", "convert_jobs_1", "convert_jobs_n"),
        ("Dask, every column", "dask_one_partition", "dask_ranges"),
        ("Dask, two columns", "dask_one_partition_two_columns", "dask_ranges_two_columns"),
    ]
    measured = one["measurements"]
    figure, axes = plt.subplots(figsize=(7, 4.2))
    positions = range(len(pairs))
    one_core = [measured[a]["median_seconds"] for _, a, _ in pairs]
    every_core = [measured[b]["median_seconds"] for _, _, b in pairs]
    axes.barh([p + 0.2 for p in positions], one_core, height=0.4, label="one process")
    axes.barh(
        [p - 0.2 for p in positions],
        every_core,
        height=0.4,
        label=f"{one['jobs']} processes, one file in byte ranges",
    )
    axes.set_yticks(list(positions), [label for label, _, _ in pairs])
    axes.invert_yaxis()
    axes.set_xlabel("median seconds (lower is faster)")
    axes.set_title("One file on every core of a 2-core machine")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


OUTPUT = {  # benchmarks/output.py: workload -> the command it stands for
    "read_items": "`read` (Items, checked, counted)",
    "read_untyped": "`read --type any` (every record as decoded)",
    "dump_untyped": "`dump` (untyped, JSON Lines)",
    "dump_items": "`dump --type item` (Items, checked, JSON Lines)",
    "dump_items_csv": "`dump --type item --format csv`",
    "convert_parquet_items": "`convert --type item --to parquet`",
    "convert_parquet_inferred": "`convert - --to parquet` (stdin, kept in a temporary file: "
    "columns inferred from every record)",
    "convert_parquet_inferred_whole": "`convert FILE --to parquet` (columns inferred from every "
    "record: 100, then a check of the rest)",
}
OUTPUT_BASELINE = "read_items"
OUTPUT_LIMITS = {"convert_parquet_inferred_whole": ("convert_parquet_items", 1.5)}
"""Output targets: at most this ratio to the workload named, judged on the paired ratio."""


ENGINES = {  # benchmarks/engines.py: ratio -> what it compares, target, whether it is a ceiling
    "polars_over_read_table": (
        "`scan_msgpack(path, Item).collect()` (a Polars DataFrame) over `read_table`",
        1.2,
        True,
    ),
    "duckdb_over_read_table": (
        "`SELECT count(*), sum(id), avg(value)` over `duckdb.read_msgpack` over `read_table`",
        None,
        True,
    ),
    "ray_ranges_speedup": (
        "Ray: the file in default byte ranges against one block, `read_msgpack(...).count()` "
        "(how many times faster)",
        1.5,
        False,
    ),
}


def engines_section(engines: dict[str, Any]) -> list[str]:
    lines = ["| ratio | measured | target |", "|---|---|---|"]
    for name, (what, target, ceiling) in ENGINES.items():
        value = engines["ratios"][name]
        if target is None:
            verdict = "-"
        else:
            met = value <= target if ceiling else value >= target
            bound = "at most" if ceiling else "at least"
            verdict = f"{bound} {target}x: {'met' if met else 'not met'}"
        lines.append(f"| {what} | {value:.2f}x | {verdict} |")
    measured = engines["measurements"]
    head = measured["polars_head"]["median_seconds"]
    return [
        "## Polars, DuckDB and Ray",
        "",
        f"One file of {engines['records']:,} records read by each engine's reader against "
        f"`read_table` of it in the same process; Ray: one file of {engines['ray_records']:,} "
        f"records ({engines['ray_bytes'] / 1e6:.0f} MB) on a local Ray of {engines['cpus']} "
        f"CPUs. Median of the per-run ratios of {engines['repeat']} interleaved runs; Python "
        f"{engines['python']}, {engines['cpu_count']} logical CPUs; made by "
        "`benchmarks/engines.py`, results in `doc/engines.result.json`.",
        "",
        *lines,
        "",
        f"`scan_msgpack(path, Item).head(5).collect()` took {head * 1e3:.1f} ms: the scan stops "
        f"once the rows are out (`read_table` of the whole file: "
        f"{measured['read_table']['median_seconds']:.2f} s).",
        "",
    ]


SPARK = {  # benchmarks/spark.py: way -> what it is
    "spark_msgpack_count": '`spark.read.format("msgpack")`, `count()`',
    "spark_parquet_count": "`spark.read.parquet`, `count()`",
    "read_table_count": "`read_table` in one process, its rows counted",
    "spark_msgpack_aggregate": '`spark.read.format("msgpack")`, the aggregate',
    "spark_parquet_aggregate": "`spark.read.parquet`, the aggregate",
    "read_table_aggregate": "`read_table` in one process, the aggregate by pyarrow",
}
SPARK_RATIOS = {  # benchmarks/spark.py: ratio -> what it compares
    "count_over_read_table": "`count()` through the source over `read_table` in one process",
    "aggregate_over_read_table": "the aggregate through the source over `read_table` and pyarrow",
    "count_over_parquet": "`count()` through the source over Spark's over Parquet",
    "aggregate_over_parquet": "the aggregate through the source over Spark's over Parquet",
}


def spark_section(spark: dict[str, Any]) -> list[str]:
    """RESULTS.md's section on Spark reading MessagePack (``benchmarks/spark.py``)."""
    measured = spark["measurements"]
    ways = ["| way | median | runs |", "|---|---|---|"]
    for name, what in SPARK.items():
        runs = ", ".join(f"{s:.2f}" for s in measured[name]["seconds"])
        ways.append(f"| {what} | {_time(measured[name]['median_seconds'])} | {runs} s |")
    ratios = ["| ratio | measured |", "|---|---|"]
    ratios += [f"| {what} | {spark['ratios'][name]:.2f}x |" for name, what in SPARK_RATIOS.items()]
    return [
        "## Spark",
        "",
        f"One file of {spark['records']:,} Items ({spark['bytes'] / 1e6:.0f} MB of MessagePack; "
        f"{spark['parquet_bytes'] / 1e6:.0f} MB as Parquet, written by `convert`, a row group "
        f"per 65536 records) on a local Spark of {spark['cores']} cores (pyspark "
        f"{spark['pyspark']}; started once, in {spark['session_start_seconds']:.1f} s, not "
        "timed), against `read_table` of the file in the same process. The aggregate: count, "
        "sum of `id` and mean of `value` per `process_id % 16`; every way's answers checked to "
        f"agree. Median of {spark['repeat']} interleaved runs; Python {spark['python']}, "
        f"{spark['cpu_count']} logical CPUs; made by `benchmarks/spark.py`, results in "
        "`doc/spark.result.json`.",
        "",
        *ways,
        "",
        *ratios,
        "",
        f"The source read the file in {spark['partitions']} ranges, eight per core. Planning the "
        "read proves where each starts by framing the file from its first byte, no value "
        f"decoded, in one process: {_time(spark['proof_seconds'])}, "
        f"{spark['proof_fraction_of_msgpack_count']:.0%} of the source's `count()`, before any "
        "task starts. Spark's Python data sources are told no columns to leave out, so every "
        "way through the source decodes, checks and builds every column, and each batch "
        "crosses from a Python worker to the JVM, where it is made rows; Spark's Parquet "
        "reader counts from the files' metadata and reads only the aggregate's two columns. "
        "The machine's one-minute load average was "
        f"{spark['load_average'][0]:.1f} as the timing began and {spark['load_average'][1]:.1f} "
        f"as it ended, on {spark['cpu_count']} cores: Spark's {spark['cores']} tasks at a time "
        "compete with whatever else runs there, where `read_table` needs one core.",
        "",
    ]


def spark_sentence(spark: dict[str, Any]) -> str:
    """The performance page's figures of ``benchmarks/spark.py``."""
    measured = spark["measurements"]

    def took(name: str) -> str:
        return _time(measured[name]["median_seconds"])

    return (
        f"counts one file of {spark['records']:,} records in {took('spark_msgpack_count')} "
        f"(`read_table` in one process: {took('read_table_count')}; Spark over the same "
        f"records as Parquet: {took('spark_parquet_count')}), and aggregates them in "
        f"{took('spark_msgpack_aggregate')} ({took('read_table_aggregate')}; "
        f"{took('spark_parquet_aggregate')}); proving where its {spark['partitions']} ranges "
        f"start took {_time(spark['proof_seconds'])} of that"
    )


def output_table(output: dict[str, Row]) -> list[str]:
    lines = [
        "| command | median | records/s | / `read` |",
        "|---|---|---|---|",
    ]
    for name, what in OUTPUT.items():
        if name in output:
            row = output[name]
            lines.append(
                f"| {what} | {_time(row.median)} | {_rate(row.records_per_second)} | "
                f"{ratio(output, name, OUTPUT_BASELINE):.2f}x |"
            )
    for name, (of, limit) in OUTPUT_LIMITS.items():
        paired = output.get(f"paired/{name}")
        if name in output and of in output and paired is not None:
            met = "met" if paired.median <= limit else "not met"
            lines += [
                "",
                f"Target: `{name}` at most {limit}x `{of}`: **{paired.median:.2f}x** paired "
                f"({ratio(output, name, of):.2f}x the ratio of medians), {met}.",
            ]
    return lines


OUTPUT_COST = {  # benchmarks/output_cost.py: command -> how RESULTS.md names it
    "floor": "`python -m benchmarks.floor FILE`: msgpack's `Unpacker`, ids summed (the floor)",
    "cat": "`cat FILE`: the I/O floor",
    "read": "`read --type item` (Items checked, counted, ids summed)",
    "dump_items": "`dump --type item` (JSON Lines)",
    "dump_items_csv": "`dump --type item --format csv`",
    "dump_untyped": "`dump` (untyped, JSON Lines)",
    "convert_csv_items": "`convert --type item --to csv`",
    "convert_parquet_items": "`convert --type item --to parquet`",
    "convert_arrow_items": "`convert --type item --to arrow`",
}
OUTPUT_COST_DESTINATIONS = {
    "devnull": "`> /dev/null`",
    "pipe": "`\\| cat > /dev/null`",  # a table cell: the pipe escaped
    "file": "to a file",
}
PARALLEL_OUTPUTS = {"file": "one file", "parts": "a directory of parts"}
PARALLEL_SHORT = {"file": "one file", "parts": "parts"}


def _seconds(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1e3:.0f} ms"


def output_cost_table(cost: dict[str, Any]) -> list[str]:
    """One row per command, one column per destination: median time and median ratio to the
    floor of the same round; each target judged on its /dev/null figure."""
    header = " | ".join(OUTPUT_COST_DESTINATIONS.values())
    lines = [
        f"| command | {header} | written to the file | target (on /dev/null) |",
        "|---|---|---|---|---|---|",
    ]
    for name, what in OUTPUT_COST.items():
        measured = cost["measurements"].get(name)
        if measured is None:
            continue
        cells = []
        for destination in OUTPUT_COST_DESTINATIONS:
            at = measured.get(destination)
            cells.append(
                "-"
                if at is None
                else f"{_seconds(at['median_seconds'])}, {at['ratio_to_floor']:.2f}x"
            )
        written = measured.get("file", {}).get("output_bytes")
        size = "-" if written is None else _bytes_of(written, cost["file_bytes"])
        target = cost["targets"].get(name)
        verdict = "-"
        if target is not None:
            verdict = f"at most {target['at_most']}x: {'met' if target['met'] else 'not met'}"
        lines.append(f"| {what} | {' | '.join(cells)} | {size} | {verdict} |")
    return lines


def parallel_table(cost: dict[str, Any]) -> list[str]:
    """One row per parallel conversion: its wall time, its speed against one process, and
    how busy it kept its cores, against its target."""
    lines = [
        "| command | wall time | speed-up | cores busy | target |",
        "|---|---|---|---|---|",
    ]
    for work in cost["parallel_work"]:
        lines.append(
            f"| `{work['command'].removeprefix('msgpack-reader ')}` | "
            f"{_seconds(statistics.median(work['seconds']))} | 1.00x | "
            f"CPU time {_seconds(statistics.median(work['cpu_seconds']))} | - |"
        )
        for run in cost["parallel"]:
            if run["to"] != work["to"]:
                continue
            verdict = "-"
            if "at_least" in run:
                verdict = f"at least {run['at_least']}: {'met' if run['met'] else 'not met'}"
            lines.append(
                f"| `{run['command'].removeprefix('msgpack-reader ')}` | "
                f"{_seconds(run['median_seconds'])} | {run['speedup']:.2f}x | "
                f"{run['busy']:.2f} | {verdict} |"
            )
    return lines


def _bytes_of(size: int, of: int) -> str:
    return f"{size / 1e6:,.0f} MB ({size / of:.2f}x the input)"


def output_cost_verdict(cost: dict[str, Any]) -> str:
    """The targets this run met and missed, from its figures."""
    parts = []
    for name, target in cost["targets"].items():
        verdict = "met" if target["met"] else "not met"
        parts.append(
            f"`{shown_name(name)}` {target['ratio']:.2f}x (at most {target['at_most']}x, {verdict})"
        )
    judged = [run for run in cost["parallel"] if "at_least" in run]
    for run in judged:
        verdict = "met" if run["met"] else "not met"
        parts.append(
            f"`--to {run['to']} --jobs {run['jobs']}` to {PARALLEL_OUTPUTS[run['output']]} "
            f"{run['busy']:.2f} busy (at least {run['at_least']}, {verdict})"
        )
    met = sum(target["met"] for target in cost["targets"].values())
    met += sum(run["met"] for run in judged)
    return (
        "Targets, each judged on the median of the rounds (ratios to the floor with output to "
        f"`/dev/null`; how busy the cores were): {met} of {len(cost['targets']) + len(judged)} "
        f"met: {'; '.join(parts)}."
    )


def shown_name(name: str) -> str:
    """A command of ``OUTPUT_COST`` without its note: ``dump --type item``."""
    return OUTPUT_COST[name].split("`")[1]


def _target_line(axes: Any, level: float, position: float, half: float, label: str) -> None:
    """A target drawn across the bar at ``position``: a dashed line at ``level``."""
    axes.hlines(
        level,
        position - half,
        position + half,
        colors="black",
        linestyles="dashed",
        linewidth=1.2,
        zorder=3,
        label=label,
    )


def plot_output_cost(cost: dict[str, Any], path: Path) -> None:
    """Two panels: each command's ratio to the floor per destination, with a dashed line at
    each target and the I/O floor; and how busy each parallel conversion kept its cores."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measurements = cost["measurements"]
    names = [n for n in OUTPUT_COST if n in measurements and n not in ("cat", "floor")]
    destinations = list(OUTPUT_COST_DESTINATIONS)
    width = 0.8 / len(destinations)
    figure, (axes, busy) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [3, 1]})
    for index, destination in enumerate(destinations):
        offsets = [p - 0.4 + width * (index + 0.5) for p in range(len(names))]
        shown = [
            (o, n) for o, n in zip(offsets, names, strict=True) if destination in measurements[n]
        ]
        ratios = [measurements[n][destination]["ratio_to_floor"] for _, n in shown]
        bars = axes.bar(
            [o for o, _ in shown],
            ratios,
            width,
            label=OUTPUT_COST_DESTINATIONS[destination].strip("`").replace("\\|", "|"),
        )
        axes.bar_label(bars, labels=[f"{r:.2f}" for r in ratios], fontsize=7, padding=2)
    label = "target, judged on /dev/null"
    for position, name in enumerate(names):
        target = cost["targets"].get(name)
        if target is not None:
            _target_line(axes, target["at_most"], position, 0.45, label)
            label = "_nolegend_"  # one legend entry for every target line
    axes.axhline(1.0, color="grey", linewidth=0.8, label="the floor")
    io_floor = measurements["cat"]["devnull"]["ratio_to_floor"]
    axes.axhline(io_floor, color="grey", linewidth=0.8, linestyle="dotted", label="cat (I/O)")
    labels = [shown_name(n).replace(" --", "\n--") for n in names]
    axes.set_xticks(list(range(len(names))), labels, fontsize=7)
    axes.set_ylabel("median time / the floor's, same round\n(1.0 = the floor; lower is faster)")
    axes.set_title(f"What the commands cost: {cost['records']:,} Items")
    tallest = max(measurements[n][d]["ratio_to_floor"] for n in names for d in measurements[n])
    axes.set_ylim(0, tallest * 1.35)  # the legend above the bars, in two columns
    axes.legend(fontsize=8, ncol=2, loc="upper left")
    runs = cost["parallel"]
    positions = list(range(len(runs)))
    bars = busy.bar(positions, [run["busy"] for run in runs], 0.6, color="tab:green")
    busy.bar_label(bars, labels=[f"{run['busy']:.2f}" for run in runs], fontsize=7, padding=2)
    for position, run in zip(positions, runs, strict=True):
        if "at_least" in run:
            _target_line(busy, run["at_least"], position, 0.35, "_nolegend_")
    busy.set_xticks(
        positions,
        [f"{run['to']}\n-j {run['jobs']}\n{PARALLEL_SHORT[run['output']]}" for run in runs],
        fontsize=7,
    )
    busy.set_ylim(0, 1.1)
    busy.set_ylabel("CPU time of --jobs 1 / (N x wall time)")
    busy.set_title("convert --jobs: cores busy")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


COMPRESSION_BASELINE = "snappy"
"""The codec the others are compared with: pyarrow's default, and what convert wrote before."""


def load_compression(path: Path) -> tuple[dict[str, Row], dict[str, int]]:
    """The runs of ``benchmarks/compression.py``, and each codec's Parquet size in bytes."""
    suite = pyperf.BenchmarkSuite.load(str(path))
    sizes = {}
    for bench in suite.get_benchmarks():
        metadata = bench.get_metadata()
        if "codec" in metadata:
            sizes[str(metadata["codec"])] = int(metadata["output_bytes"])
    return {bench.get_name(): Row.of(bench) for bench in suite.get_benchmarks()}, sizes


def compression_table(rows: dict[str, Row], sizes: dict[str, int]) -> list[str]:
    base = COMPRESSION_BASELINE
    msgpack_bytes = rows["read/msgpack"].size
    lines = [
        "| codec | Parquet bytes | / MessagePack | convert: median (MAD) | / snappy | "
        "read back: median (MAD) | / snappy |",
        "|---|---|---|---|---|---|---|",
    ]
    for codec, size in sizes.items():
        convert, read = rows[f"convert/{codec}"], rows[f"read/{codec}"]
        lines.append(
            f"| `{codec}` | {size:,} | {size / msgpack_bytes:.2f}x | {_time(convert.median)} "
            f"({_time(convert.mad)}) | {ratio(rows, f'convert/{codec}', f'convert/{base}'):.2f}x "
            f"| {_time(read.median)} ({_time(read.mad)}) | "
            f"{ratio(rows, f'read/{codec}', f'read/{base}'):.2f}x |"
        )
    reading = rows["read/msgpack"]
    lines.append(
        f"| the MessagePack itself, `read_table` | {msgpack_bytes:,} | 1.00x | - | - | "
        f"{_time(reading.median)} ({_time(reading.mad)}) | "
        f"{ratio(rows, 'read/msgpack', f'read/{base}'):.2f}x |"
    )
    return lines


def compression_verdict(rows: dict[str, Row], sizes: dict[str, int]) -> str:
    """What the run says of the default codec, from its figures only."""
    chosen, base = DEFAULT_CODEC["parquet"], COMPRESSION_BASELINE
    msgpack_bytes = rows["read/msgpack"].size
    smallest = min(sizes, key=sizes.__getitem__)

    def converts(codec: str) -> str:
        return f"{ratio(rows, f'convert/{codec}', f'convert/{base}'):.2f}x the time of {base}"

    if smallest == chosen:
        rank = "the smallest file of the codecs"
    else:
        rank = (
            f"against {sizes[smallest] / msgpack_bytes:.2f}x for `{smallest}`, the smallest, "
            f"which converts in {converts(smallest)}"
        )
    share = rows["read/msgpack"].median / rows[f"convert/{chosen}"].median
    return (
        f"`convert`'s default for Parquet is `{chosen}`: {sizes[chosen] / msgpack_bytes:.2f}x "
        f"the size of the MessagePack and {sizes[chosen] / sizes[base]:.2f}x that of `{base}` "
        f"(pyarrow's default, which `convert` wrote before), {rank}; it converts in "
        f"{converts(chosen)} and reads back in "
        f"{ratio(rows, f'read/{chosen}', f'read/{base}'):.2f}x. Reading the MessagePack into "
        f"Arrow columns is {share:.0%} of a conversion's time; the rest is Parquet's encoding "
        "and compression. Arrow IPC stays uncompressed unless asked (zstd or lz4): a file a "
        "reader can map into memory and use without a copy."
    )


READER_NAMES = {"in_memory_stream_benchmark": "the reader"}


def tried_table(tried: dict[str, Row], notes: dict[str, tuple[str, str]]) -> list[str]:
    lines = ["| approach | / floor | kept? |", "|---|---|---|"]
    for name, (what, verdict) in notes.items():
        if name in tried:
            paired = tried.get(f"paired/{name}")
            if paired is not None:
                of = READER_NAMES.get(paired.paired_with or "", f"`{paired.paired_with}`")
                verdict += f" ({paired.median:.2f}x the time of {of}, the two timed in turn)"
            lines.append(f"| {what} | {ratio(tried, name, BASELINE):.2f}x | {verdict} |")
    return lines


def plot_sizes(rows: dict[str, Row], sizes: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.2))
    for prefix, label in (("message_size_raw", "raw msgpack.Unpacker"), ("message_size", "typed")):
        axes.plot(
            sizes,
            [rows[f"{prefix}/{size}"].megabytes_per_second for size in sizes],
            marker="o",
            label=label,
        )
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("record size (bytes)")
    axes.set_ylabel("throughput (MB/s, median)")
    axes.set_title("Throughput by record size, from memory")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_reference(rows: dict[str, Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = [ratio(rows, name) for name in REFERENCE]
    figure, axes = plt.subplots(figsize=(7, 4.6))
    bars = axes.barh(
        [name.replace("_benchmark", "").replace("_", " ") for name in REFERENCE],
        ratios,
        color=[
            "#777777",
            "#1f77b4",
            "#ff7f0e",
            "#2ca02c",
            "#d62728",
            "#9467bd",
            "#aaaaaa",
            "#8c564b",
            "#e377c2",
            "#17becf",
        ],
    )
    axes.bar_label(bars, labels=[f"{r:.2f}x" for r in ratios], padding=3)
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.invert_yaxis()
    axes.set_xlabel(
        "median time / its floor's median (lower is faster);\n"
        "map-shaped data: the raw Unpacker over the maps; two kinds hold a tag more a record"
    )
    axes.set_title("Reference data, 10000 records: ratio to its floor")
    axes.set_xlim(0, max(ratios) * 1.2)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


TRIED = {
    "per_record_loop": (
        "first design: a Python generator loop per record (class check, `tell()`, "
        "`record_type(*values)`, `yield`)",
        "dropped: a Python-level loop step per record, and no field type checked",
    ),
    "chunk_at_a_time": (
        "second design: a chunk at a time, `list.extend(unpacker)`, C-level batch checks, "
        "`starmap(record_type)`, `yield from`; offsets found by replay only on errors; field "
        "types checked only with the former `validate=True`",
        "replaced: it left field types unchecked by default",
    ),
    "per_record_validation": (
        "the former `validate=True`, first design: per record `tuple(map(type, values)) in "
        "accepted`",
        "dropped",
    ),
    "chunk_validation": (
        "the former `validate=True`, second design: one flat `tuple(map(type, chain(batch)))` "
        "compared with the expected pattern per chunk",
        "replaced: msgspec checks every field, nested ones too, as it decodes",
    ),
    "in_memory_stream_benchmark": (
        "the reader now, `Item` records: each chunk framed by skipping most of its records "
        "as arrays of them (one `Unpacker.skip()` per batch), decoded and validated by one "
        "msgspec call, built by `starmap(Item)` 256 at a time as the loop takes them, handed "
        "over a list at a time by `chain.from_iterable`",
        "kept",
    ),
    "built_a_run_at_a_time": (
        "the same, each run's records (a 64 KiB read's, about 1170 here) built at once: the "
        "garbage collector, which scans its youngest objects each time 700 more were made "
        "than freed, collected about 8 times per 10000 records, scanning them",
        "replaced: 256 at a time, and a loop that keeps no record frees each before the "
        "collector's count gets there",
    ),
    "named_tuple_records": (
        "`ItemTuple` records: a NamedTuple, which msgspec builds from each array in C",
        "kept: named, immutable fields",
    ),
    "fast_stream_benchmark": (
        "`ITEM_VALUES` records: the tuples msgspec decodes, validated and typed "
        "`tuple[int, int, int, int, int, float, str, str]`, no other object built per record",
        "kept as the fast path",
    ),
    "msgspec_structs": (
        "msgspec `Struct(array_like=True, gc=False)` records: `Unpacker.skip()` and `tell()` "
        "for every record, one msgspec decode per chunk, `yield from` (the first sketch of "
        "the design now)",
        "kept and refined: the reader skips most records in batches, and hands records over "
        "without a generator step each",
    ),
    "framing_record_at_a_time": (
        "framing alone, the former way: each chunk's records skipped one `Unpacker.skip()` "
        "call each, most in `islice(iter(skip, 1), n)` batches with one `tell()` per batch",
        "replaced: one call per batch is cheaper by up to a third timed in turn with the "
        "floor in one process; timed alone in a loop, as here, the two are within this "
        "host's noise of each other, either way round",
    ),
    "framing_in_arrays": (
        "framing alone, the reader's way (`decoder.runs`): a batch of records, three quarters "
        "of what the average size says is left, skipped as one array behind an array header, "
        "in one `Unpacker.skip()` call",
        "kept",
    ),
}


def write(
    rows: dict[str, Row],
    metadata: dict[str, Any],
    big: dict[str, Any] | None,
    tried: dict[str, Row] | None,
    out: Path,
    scale: dict[str, Any] | None = None,
    output: dict[str, Row] | None = None,
    one: dict[str, Any] | None = None,
    compression: tuple[dict[str, Row], dict[str, int]] | None = None,
    output_cost: dict[str, Any] | None = None,
    engines: dict[str, Any] | None = None,
    others: list[dict[str, Any]] | None = None,
    spark: dict[str, Any] | None = None,
) -> None:
    """RESULTS.md and its plots in ``out``; ``others``: ``one``'s benchmark run on other
    machines."""
    others = others or []
    sizes = sorted(int(name.split("/")[1]) for name in rows if name.startswith("message_size/"))
    plot_sizes(rows, sizes, out / "throughput_by_size.png")
    plot_reference(rows, out / "reference_benchmark.png")
    base, maps = rows[BASELINE], rows[MAP_BASELINE]
    lines = [
        "# Benchmark results",
        "",
        "_Generated by `benchmarks/report.py` from `doc/benchmark.result.json`, "
        "`doc/big_file.result.json`, `doc/tried.result.json`, `doc/scale_out.result.json`, "
        "`doc/output.result.json`, `doc/one_file.result.json`, `doc/compression.result.json` and, "
        "where they exist, `doc/output_cost.result.json`, `doc/engines.result.json` and "
        "`doc/spark.result.json`. "
        "Do not edit by hand._",
        "",
        "Caveats first. These machines have 2 cores and are shared: absolute times move by 20% "
        "or more from run to run, so every claim below is a **ratio measured in the same "
        "run**. A target is judged on its **paired ratio**: pyperf's benchmark "
        "`paired/<name>` times whole passes of the benchmark and of the one it is a ratio of "
        "in turn, in the same worker processes, and each of its values is the ratio of their "
        "times; the median of those values is shown. The ratio of the two benchmarks' own "
        "medians, each measured in its own worker processes minutes apart, is shown beside it "
        "and in the tables: a neighbour's load moves it by 20% or more. The floor is "
        "`raw_unpacker_baseline`: msgpack's C decoder iterating the same bytes into plain "
        "lists, untyped, checking nothing; for records "
        f"written as maps it is `{MAP_BASELINE}`, the same loop over those bytes. Published "
        "figures for the reference data (Ryzen 9 3950X) put the Rust implementation (rmpv "
        "`read_value` + struct) at 2.73 ms and the original Python one (pure-Python "
        "`msgpack-python` fallback) at 76.2 ms.",
        "",
        rust_paragraph(rows),
        "",
        "## Machine and versions",
        "",
        f"- CPU: {metadata.get('cpu_model_name', 'unknown')} "
        f"({metadata.get('cpu_count', '?')} logical CPUs)",
        f"- platform: {metadata.get('platform', 'unknown')}",
        f"- Python: {metadata.get('python_implementation', '')} "
        f"{metadata.get('python_version', '')}",
        f"- msgpack: {metadata.get('msgpack_version', '?')}; msgpack_reader_py "
        f"{metadata.get('msgpack_reader_py_version', '?')}; pyperf "
        f"{metadata.get('perf_version', '?')}",
        f"- run: {metadata.get('date', '?')}, pyperf defaults (not `--fast`)",
        "",
        f"## Reference data: {base.records} records, {base.size:,} bytes, "
        f"{base.size / base.records:.2f} bytes/record ({maps.size:,} bytes as maps)",
        "",
        "![Reference benchmarks as ratios to the floor](reference_benchmark.png)",
        "",
        *reference_table(rows),
        "",
        "### Targets",
        "",
        *target_table(rows),
        "",
        "Every read is validated: msgspec checks each field against its annotation as it "
        "decodes (a bool is not an int, an int is read as a float), whatever the record type, "
        "and there is no option to turn that off. A record may be an array of its fields by "
        "position or a map keyed by field name, in any mix; the map-shaped benchmarks are "
        f"ratios to their own floor, `{MAP_BASELINE}`, a plain `Unpacker` over the same "
        "records written as maps. The fast paths are `ITEM_VALUES`, where each record is the "
        "tuple msgspec decoded, typed `ItemValues = tuple[int, int, int, int, int, float, str, "
        "str]` (arrays only: a tuple has no field names), and an `array_like` "
        "`msgspec.Struct` such as the harness's `ItemStruct`, which msgspec builds in C with "
        "named fields (`gc=False`: a record of scalars is never part of a reference cycle, so "
        "the garbage collector need not track it); both keep the error contract of `Item`. "
        "Choose them for many small records; `ItemTuple` (a NamedTuple) when you want named, "
        "immutable fields, `Item` for a mutable dataclass.",
        "",
        "## Record size sweep (`message_size/<N>`)",
        "",
        "Records `[id, payload]` of about N bytes, at least 4 MiB of stream per size, decoded "
        "from memory into a two-field dataclass (`typed`) and by a plain `msgpack.Unpacker` "
        "(`raw`). Small records measure per-record cost: the reader makes a tuple and then a "
        "dataclass per record where the raw loop makes one list. Large ones measure bytes: a "
        "plain `Unpacker(file)` reads a mebibyte at a time (the compiled `Unpacker`'s default "
        "`read_size`; msgpack's documentation says 16 KiB), each into a fresh `bytes` and then "
        "into its own buffer, where the reader reads 64 KiB chunks; but the reader copies a "
        "run's bytes once more (behind an array header, for msgspec's one call), which shows "
        "most for records larger than a chunk. " + faster_sentence(rows, sizes),
        "",
        "![Throughput by record size](throughput_by_size.png)",
        "",
        *size_table(rows, sizes),
        "",
    ]
    if big is not None:
        lines += [
            "## Big file",
            "",
            f"{big['file_bytes'] / (1 << 30):.2f} GiB, {big['records']:,} records, read from a "
            f"file in the page cache; median of {big['repeat']} runs each, every run in a fresh "
            f"process (peak RSS is the process's `VmHWM`). Python {big['python']}, msgpack "
            f"{big['msgpack']}. Made by `benchmarks/big_file.py`.",
            "",
            *big_file_table(big),
            "",
        ]
    lines += [
        "## Columnar output",
        "",
        "`arrow_batches_benchmark` reads the reference data into Arrow `RecordBatch`es: "
        "each chunk is decoded and validated by msgspec as every read is, then its records go "
        "to pyarrow in one call, with no record object built. It runs at "
        f"{ratio(rows, 'arrow_batches_benchmark'):.2f}x the floor "
        f"({_rate(rows['arrow_batches_benchmark'].records_per_second)} records/s), against "
        f"{ratio(rows, 'in_memory_stream_benchmark'):.2f}x for "
        "`Item`s (`in_memory_stream_benchmark`, just as validated), and the columns are ready "
        "for pandas, Parquet, DuckDB or Polars without another pass over the records.",
        "",
    ]
    if scale is not None:
        lines += [
            "## Beyond one file: a 2-worker Dask cluster",
            "",
            f"An aggregate (count, sum of `id`, mean of `value`) over {scale['files']} files of "
            f"{scale['records_per_file']:,} records ({scale['bytes'] / 1e6:.0f} MB in all, page "
            f"cache warm), median of {scale['repeat']} interleaved runs; the cluster is started "
            f"once before timing, as a real one is ({scale['cluster_startup_seconds']:.1f} s "
            f"here). Dask projects the aggregate onto `id` and `value`, so each partition "
            "builds only those columns (every field is still decoded and validated). Python "
            f"{scale['python']}, {scale['cpu_count']} logical CPUs; made by "
            "`benchmarks/scale_out.py`, results in `doc/scale_out.result.json`.",
            "",
            *scale_out_table(scale),
            "",
            scale_out_verdict(scale),
            "",
        ]
    if one is not None:
        plot_one_file(one, out / "one_file.png")
        floor = RUST_REFERENCE["ratio"]
        over = one["read_in_process_jobs_n_over_floor"]
        values = one["values_in_process_jobs_n_over_floor"]
        values_one = one["values_in_process_jobs_1_over_floor"]
        guesses = one["guesses"]
        lines += [
            "## One file on every core",
            "",
            f"One file of {one['records']:,} records ({one['bytes'] / 1e6:.0f} MB, page cache "
            f"warm) read in byte ranges by {one['jobs']} processes, against one process, median "
            f"of the per-run ratios of {one['repeat']} interleaved runs; each command in a "
            "process of its own, as a user runs it, with bytecode cached (Python's start-up "
            "and imports, about 0.1 s, included). Dask: one file of "
            f"{one['dask_records']:,} records "
            f"({one['dask_bytes'] / 1e6:.0f} MB) on a `LocalCluster` of {one['workers']} "
            f"worker processes, `blocksize={one['blocksize']}`. Python {one['python']}, "
            f"{one['cpu_count']} logical CPUs; made by `benchmarks/one_file.py`, results in "
            "`doc/one_file.result.json`.",
            "",
            *one_file_table(one),
            "",
            "![one file on every core](one_file.png)",
            "",
            "A conversion to Parquet is bounded by two things `--jobs` cannot split. "
            "pyarrow's Parquet encoder runs on one thread, in the one process that writes the "
            "file. `--jobs 1` already runs it on the second core while the first decodes, so "
            "on two cores `--jobs 2` can only move the decoding to other processes (the "
            "workers run a step below the writer's priority, so that they do not slow it). "
            "And the command's start is paid in both counts: Python, this package, pyarrow "
            "and its Parquet module (not pandas, which pyarrow imports with the first array "
            "it builds wherever pandas is installed: the command line starts pyarrow as if it "
            "were not, 0.3-0.4 s less). On a machine with more cores (below, where measured) "
            "the encoder is the bound.",
            "",
            *elsewhere_table(others),
            f"Guessing a range's first record took at most {guesses['slowest_seconds'] * 1e3:.2f} "
            f"ms over the {guesses['ranges']} ranges of 8 MiB of the file (target: under 1 ms), "
            f"and {guesses['rereads']} range(s) had to be read again from the proved offset.",
            "",
            f"Against the Rust reader, which takes {floor:.2f}x the floor on one core measured "
            "on this machine (see above; the floor: msgpack's C decoder iterating the same "
            "bytes into plain lists on one core, measured in the same run as each figure "
            f"here): `read --type msgpack_reader_py:ITEM_VALUES --jobs {one['jobs']}` run in "
            f"one process takes **{values:.2f}x** the floor: every field of every record "
            "checked as an `Item`'s, each record kept as the typed tuple msgspec decodes, "
            "as the Rust reader keeps its structs; "
            f"{_faster(floor, values)} per file. On one core the same command takes "
            f"{values_one:.2f}x the floor ({_faster(floor, values_one)}). `read --jobs "
            f"{one['jobs']}`, which builds every record as an `Item` object too, takes "
            f"{over:.2f}x ({_faster(floor, over)}).",
            "",
        ]
    if engines is not None:
        lines += engines_section(engines)
    if spark is not None:
        lines += spark_section(spark)
    if output is not None:
        lines += [
            "## Output: dump and convert",
            "",
            "What the commands cost on the reference stream, in memory, written to `/dev/null`, "
            "as records per second and as a ratio to `read` in the same pyperf run "
            "(`benchmarks/output.py`, results in `doc/output.result.json`). Writing can cost "
            "as much as reading, or more: JSON and Parquet encoding are work of their own.",
            "",
            *output_table(output),
            "",
        ]
    if output_cost is not None:
        plot_output_cost(output_cost, out / "output_cost.png")
        cost = output_cost
        lines += [
            "## What the commands cost",
            "",
            f"A file of {cost['records']:,} Items ({cost['file_bytes'] / 1e6:,.0f} MB, page "
            "cache warm), each command run as a user runs it, in a process of its own "
            "(start-up included), against the floor: `benchmarks/floor.py`, msgpack's own "
            "`Unpacker` framing every record and summing the ids, checking nothing, in a "
            "process of its own too. Writing commands go to three destinations: `/dev/null` "
            "(the writing alone), a pipe into `cat` (a consumer: each write waits for room in "
            f"the pipe) and a file on disk ({cost['output_filesystem']}; `convert -o OUT`, the "
            "atomic path, for convert). Every command and destination ran once a round, the "
            f"floor first, {cost['repeat']} rounds; each cell is the median time and the "
            "median of the per-round ratios to that round's floor. Every exit status was "
            "checked, and each file written was counted back to the records of the input. "
            f"Python {cost['python']}, {cost['cpu_count']} logical CPUs; made by "
            "`benchmarks/output_cost.py`, results in `doc/output_cost.result.json`. The "
            "in-memory figures above (`benchmarks/output.py`) are the work alone; these are "
            "the whole command.",
            "",
            *output_cost_table(cost),
            "",
            "The conversions to Parquet and to CSV on many processes, to one file and to a "
            "directory of parts (each part encoded and written by the worker that read it), "
            "judged on how busy they keep their cores: the CPU time of `--jobs 1` to the same "
            "format (the work) over N times the run's wall time, the median of the rounds. To "
            "one Parquet file the workers decode and one process encodes; to one CSV file the "
            "workers write the text and one process has the system copy it out, in file order.",
            "",
            *parallel_table(cost),
            "",
            output_cost_verdict(cost),
            "",
            "![What the commands cost](output_cost.png)",
            "",
        ]
    if compression is not None:
        codec_rows, codec_sizes = compression
        reference = codec_rows["read/msgpack"]
        lines += [
            "## Parquet compression",
            "",
            f"`convert --type item --to parquet` of {reference.records:,} generated Items (the "
            f"reference data's shape, {reference.size / 1e6:.0f} MB of MessagePack) with each "
            "codec, to a file in the page cache, and `pyarrow.parquet.read_table` of each file; "
            "pyperf, a value per whole pass, ratios of medians from the same run "
            "(`benchmarks/compression.py`, results in `doc/compression.result.json`). Each "
            "file was checked to read back as the table the MessagePack holds.",
            "",
            *compression_table(codec_rows, codec_sizes),
            "",
            compression_verdict(codec_rows, codec_sizes),
            "",
        ]
    if tried is not None:
        lines += [
            "## What we tried",
            "",
            "Each approach on the reference data, as a ratio to the floor measured in the same "
            "pyperf run (`benchmarks/tried.py`, results in `doc/tried.result.json`).",
            "",
            *tried_table(tried, TRIED),
            "",
            "The former designs (`per_record_*`, `chunk_*`) are re-implemented in "
            "`benchmarks/tried.py`, small and faithful, so that their rows stay measurable. "
            "Where time goes now, per record: framing by `Unpacker.skip()`/`tell()` (`skip` "
            "parses every value but builds none), msgspec's decode and validation, and for a "
            "dataclass such as `Item` its `__init__`; the Python-level loop per record has "
            "been gone since the chunk-at-a-time design.",
            "",
            "Other choices, measured when they were made (not re-run by `benchmarks/tried.py`):",
            "",
            *(f"- {note}" for note in DECISIONS),
            "",
        ]
    lines += [
        "## Reproduce and compare",
        "",
        "```sh",
        "poetry run python msgpack_reader_py/streaming_reader_bench.py --stats "
        "-o benchmark.result.json",
        "poetry run python benchmarks/big_file.py --size-gib 1 -o big_file.result.json",
        "poetry install --with bench && poetry run python benchmarks/tried.py -o tried.result.json",
        "poetry run python benchmarks/scale_out.py -o scale_out.result.json",
        "poetry run python benchmarks/output.py -o output.result.json",
        "poetry run python -m benchmarks.one_file -o one_file.result.json",
        "poetry run python benchmarks/compression.py -o compression.result.json",
        "poetry run python -m benchmarks.output_cost -o output_cost.result.json",
        "poetry run python -m benchmarks.engines -o engines.result.json",
        "poetry run python -m benchmarks.spark -o spark.result.json",
        "python -m pyperf compare_to doc/benchmark.result.json benchmark.result.json --table",
        "```",
        "",
        "Copy the new JSON files into `doc/` and run `poetry run python benchmarks/report.py` "
        "to regenerate this page and the plots.",
        "",
    ]
    (out / "RESULTS.md").write_text("\n".join(lines))


DECISIONS = (
    "**A run's decoded values let go as soon as the run is handed over**, before the next run "
    "is decoded, so that one run's objects are alive at a time, not two (a tracemalloc test "
    "checks it). Timed in alternating processes, one workload each, Arrow batches were 2-5% "
    "faster and the other reads no slower; a comparison alternating the workloads in one "
    "process had shown 4-7% for every read, an effect of the alternation on the heap.",
    "**Runs bounded at the framing** (at most 256 records each), to keep the garbage collector "
    "off whole runs: `ITEM_VALUES`, Struct and map-shaped reads 5-10% slower, Arrow batches "
    "slower still, in an interleaved comparison: more calls and copies than the collector "
    "saved. Dropped for building records 256 at a time as the loop takes them.",
    "**The garbage collector disabled** around msgspec's decode of a run, as some parsers do: "
    "nothing measurable once records are built in slices, and it would touch global state. "
    "Dropped.",
    "**Maps decoded into a generated `gc=False` Struct** for Arrow and the text formats, not "
    "into the dataclass: about 10% faster; the Struct counts those it makes, so a run of "
    "arrays goes to pyarrow as msgspec made it (a look at each row's type had cost a twelfth "
    "of a raw decode). Kept.",
    "**`read_size` passed to the framing's `Unpacker`s**: one made with a large "
    "`max_buffer_size` and none starts its buffer at a mebibyte; allocating it each read cost "
    "`ITEM_VALUES` 5-6% and `read_batches` 4-12% in interleaved runs. Kept.",
    "**Compiled decoders shared** per record type and options: compiling a type costs about a "
    "millisecond, more than reading a small stream, and a many-file read (Dask, `convert`) "
    "paid it per file. The cache keys every parameter's value, defaults filled in: "
    "`lru_cache` keyed the call as written, and compiled the same decoder twice. Kept.",
    "**CSV written from msgspec's JSON**: the csv module's `writerows`, which converts and "
    "quotes each cell in C at about 2 µs a row of Items, made `dump --type item --format csv` "
    "5.41x `read` on the 1 GiB file; pyarrow's C CSV writer over the same batches took 1.96x on "
    "3M Items, but quotes every string and writes `1.0` as `1`. msgspec writing each batch as "
    "JSON arrays, made CSV by a few byte replacements (a value whose JSON is not its cell, text "
    "to quote or NaN, marked first and put back after), 1.77x, the text of RFC 4180 cell by "
    "cell. Kept.",
)
"""Decisions measured when they were made, kept in RESULTS.md's "What we tried" beside the
table of designs that ``benchmarks/tried.py`` measures again."""


# The page of the documentation site whose marked blocks this report fills.
README = DOC.parent / "docs" / "performance.md"
README_START = "<!-- results:start (made by benchmarks/report.py) -->"
README_END = "<!-- results:end -->"


SCALE_START = "<!-- scale:start -->"
SCALE_END = "<!-- scale:end -->"
RUST_START = "<!-- rust:start -->"
RUST_END = "<!-- rust:end -->"
COST_START = "<!-- cost:start (made by benchmarks/report.py) -->"
COST_END = "<!-- cost:end -->"


def cost_block(cost: dict[str, Any]) -> list[str]:
    """The performance page's figures of ``benchmarks/output_cost.py``: each target, its figure."""
    lines = [
        f"{cost['records']:,} Items, each command in a process of its own, medians of "
        f"{cost['repeat']} rounds on {cost['cpu_count']} logical CPUs, against the floor of the "
        "same round ([the results page](results.md#what-the-commands-cost) has every "
        "destination):",
        "",
        "| command | figure | target | met |",
        "|---|---|---|---|",
    ]
    for name, target in cost["targets"].items():
        lines.append(
            f"| `{shown_name(name)}` to `/dev/null` | {target['ratio']:.2f}x the floor | at most "
            f"{target['at_most']}x | {'yes' if target['met'] else 'no'} |"
        )
    lines.extend(
        f"| `convert --to {run['to']} --jobs {run['jobs']}` to "
        f"{PARALLEL_OUTPUTS[run['output']]} | cores {run['busy']:.2f} busy "
        f"({run['speedup']:.2f}x as fast as one process) | at least {run['at_least']} | "
        f"{'yes' if run['met'] else 'no'} |"
        for run in cost["parallel"]
        if "at_least" in run
    )
    return ["", *lines, "", "![What the commands cost](output_cost.png)", ""]


SPARK_START = "<!-- spark:start -->"
SPARK_END = "<!-- spark:end -->"


def _span(text: str, start: str, end: str, sentence: str) -> str:
    """``text`` with what stands between the markers ``start`` and ``end`` replaced."""
    if start not in text:
        return text
    head, rest = text.split(start, 1)
    return head + start + sentence + end + rest.split(end, 1)[1]


def update_readme(
    rows: dict[str, Row],
    metadata: dict[str, Any],
    readme: Path,
    scale: dict[str, Any] | None = None,
    one: dict[str, Any] | None = None,
    cost: dict[str, Any] | None = None,
    spark: dict[str, Any] | None = None,
) -> None:
    """Replace the page's results block with the target table of this run, its scale-out
    sentence with the figures of ``scale``, its one file on both cores against the Rust
    reader with those of ``one``, its commands' cost with those of ``cost``, and its Spark
    sentence with those of ``spark``."""
    text = readme.read_text()
    if cost is not None:
        text = _span(text, COST_START, COST_END, "\n".join(cost_block(cost)))
    if spark is not None:
        text = _span(text, SPARK_START, SPARK_END, spark_sentence(spark))
    if scale is not None:
        measurements = scale["measurements"]
        sentence = (
            f"in {_time(measurements['dask_local_cluster']['median_seconds'])}, against "
            f"{_time(measurements[scale['baseline']]['median_seconds'])} for the faster "
            f"single-process way (`{scale['baseline']}`): **{scale['speedup']:.2f}x** faster"
        )
        text = _span(text, SCALE_START, SCALE_END, sentence)
    if one is not None:
        values = one["values_in_process_jobs_n_over_floor"]
        sentence = (
            f"**{values:.2f}x** the floor on {one['jobs']} cores: "
            f"{_faster(RUST_REFERENCE['ratio'], values)}"
        )
        text = _span(text, RUST_START, RUST_END, sentence)
    start, end = text.index(README_START), text.index(README_END)
    block = [
        README_START,
        "",
        f"Reference data, {metadata.get('cpu_model_name', 'unknown CPU')}, Python "
        f"{metadata.get('python_version', '?')}, pyperf, one run, targets judged on paired "
        "ratios "
        "([the results page](results.md) has the rest):",
        "",
        *target_table(rows),
        "",
    ]
    readme.write_text(text[:start] + "\n".join(block) + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc", type=Path, default=DOC, help="where the JSON is and output goes")
    parser.add_argument(
        "--readme", type=Path, default=README, help="page whose results block to refresh"
    )
    args = parser.parse_args(argv)
    rows, metadata = load(args.doc / "benchmark.result.json")
    big_path = args.doc / "big_file.result.json"
    big = json.loads(big_path.read_text()) if big_path.exists() else None
    tried_path = args.doc / "tried.result.json"
    tried = load(tried_path)[0] if tried_path.exists() else None
    scale_path = args.doc / "scale_out.result.json"
    scale = json.loads(scale_path.read_text()) if scale_path.exists() else None
    output_path = args.doc / "output.result.json"
    output = load(output_path)[0] if output_path.exists() else None
    one_path = args.doc / "one_file.result.json"
    one = json.loads(one_path.read_text()) if one_path.exists() else None
    compression_path = args.doc / "compression.result.json"
    compression = load_compression(compression_path) if compression_path.exists() else None
    cost_path = args.doc / "output_cost.result.json"
    cost = json.loads(cost_path.read_text()) if cost_path.exists() else None
    engines_path = args.doc / "engines.result.json"
    engines = json.loads(engines_path.read_text()) if engines_path.exists() else None
    spark_path = args.doc / "spark.result.json"
    spark = json.loads(spark_path.read_text()) if spark_path.exists() else None
    others = sorted(
        (json.loads(path.read_text()) for path in args.doc.glob("one_file.*.result.json")),
        key=lambda other: (other["cpu_count"], other["jobs"], other["records"]),
    )
    write(
        rows,
        metadata,
        big,
        tried,
        args.doc,
        scale,
        output,
        one,
        compression,
        cost,
        engines,
        others,
        spark,
    )
    if args.readme is not None:
        update_readme(rows, metadata, args.readme, scale, one, cost, spark)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
