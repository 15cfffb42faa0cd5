"""Spark reading MessagePack through this package's data source, against ``read_table`` in one
process and against Spark reading the same records as Parquet.

    poetry run python -m benchmarks.spark -o doc/spark.result.json

Writes one file of ``--records`` generated Items and the same records as Parquet, written by
``convert`` (a row group per 65536 records), starts a local Spark of ``--cores`` cores (its
start-up reported apart, as a cluster is started once), then times, interleaved ``--repeat``
times so that drift on a shared machine hits each alike:

- ``spark_msgpack_count`` / ``spark_msgpack_aggregate``: ``spark.read.format("msgpack")`` of
  the file (``type=item``, the default blocksize: eight ranges per core), ``count()``, and an
  aggregate (count, sum of ``id``, mean of ``value`` per ``process_id % 16``);
- ``spark_parquet_count`` / ``spark_parquet_aggregate``: the same over ``spark.read.parquet``;
- ``read_table_count`` / ``read_table_aggregate``: ``read_table`` of the file in this process
  (one core), its rows counted, and the same aggregate by pyarrow's ``group_by``.

Each ratio is the median of the per-repeat ratios of two ways. Every way's answers must agree,
or the script fails. Also measured: how long the planning takes (``partitions()``, which frames
the file to prove where each range starts), in this process, and the machine's load average
as the timing began and ended. Needs the ``spark`` extra (and Java 17).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import __version__ as pyspark_version
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as f
from pyspark.sql.datasource import CaseInsensitiveDict

from msgpack_reader_py import convert, generate, read_table
from msgpack_reader_py.spark import MsgpackDataSource, register
from msgpack_reader_py.streaming_reader_bench import write_result

from .one_file import interleaved, measured

GROUPS = 16
RATIOS = {
    "count_over_read_table": ("read_table_count", "spark_msgpack_count"),
    "aggregate_over_read_table": ("read_table_aggregate", "spark_msgpack_aggregate"),
    "count_over_parquet": ("spark_parquet_count", "spark_msgpack_count"),
    "aggregate_over_parquet": ("spark_parquet_aggregate", "spark_msgpack_aggregate"),
}
"""Each ratio: the second way's time over the first's (below 1: the second is faster)."""

Answer = tuple[int, list[tuple[int, int, int, float]]]
"""The record count, and per ``process_id % 16``: the group, its count, sum of ids, mean value."""


@contextlib.contextmanager
def local_spark(cores: int) -> Iterator[SparkSession]:
    """A local Spark of ``cores`` cores, its Python workers this interpreter, the msgpack
    source registered; the active session instead, where there is one (left running)."""
    active = SparkSession.getActiveSession()
    session = active or (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("msgpack-reader-benchmark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .getOrCreate()
    )
    if active is None:
        session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        if active is None:
            session.stop()


def spark_answer(frame: DataFrame) -> Answer:
    grouped = (
        frame.groupBy((f.col("process_id") % GROUPS).alias("group"))
        .agg(f.count("*").alias("n"), f.sum("id").alias("ids"), f.avg("value").alias("mean"))
        .orderBy("group")
        .collect()
    )
    groups = [(row["group"], row["n"], row["ids"], row["mean"]) for row in grouped]
    return sum(n for _, n, _, _ in groups), groups


def table_answer(table: pa.Table) -> Answer:
    keyed = table.append_column("group", pc.bit_wise_and(table["process_id"], GROUPS - 1))
    grouped = (
        keyed.group_by("group")
        .aggregate([("id", "count"), ("id", "sum"), ("value", "mean")])
        .sort_by("group")
    )
    rows = grouped.to_pylist()
    groups = [(r["group"], r["id_count"], r["id_sum"], r["value_mean"]) for r in rows]
    return table.num_rows, groups


def ways(
    spark: SparkSession, path: Path, parquet: Path, answers: dict[str, Any]
) -> dict[str, Callable[[], None]]:
    """Each way, keeping its answer in ``answers`` (checked to agree once timing is over)."""

    def msgpack_frame() -> DataFrame:
        return spark.read.format("msgpack").option("type", "item").load(str(path))

    def parquet_frame() -> DataFrame:
        return spark.read.parquet(str(parquet))

    def keep(name: str, make: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            answers[name] = make()

        return run

    return {
        "spark_msgpack_count": keep("spark_msgpack_count", lambda: msgpack_frame().count()),
        "spark_parquet_count": keep("spark_parquet_count", lambda: parquet_frame().count()),
        "read_table_count": keep("read_table_count", lambda: read_table(path).num_rows),
        "spark_msgpack_aggregate": keep(
            "spark_msgpack_aggregate", lambda: spark_answer(msgpack_frame())
        ),
        "spark_parquet_aggregate": keep(
            "spark_parquet_aggregate", lambda: spark_answer(parquet_frame())
        ),
        "read_table_aggregate": keep(
            "read_table_aggregate", lambda: table_answer(read_table(path))
        ),
    }


def agree(answers: dict[str, Any], records: int) -> None:
    """Fail unless every way counted every record and every aggregate is the same."""
    counts = {name: answers[name] for name in answers if name.endswith("_count")}
    if set(counts.values()) != {records}:
        raise SystemExit(f"the ways counted other than {records} records: {counts}")
    aggregates = [answers[name] for name in answers if name.endswith("_aggregate")]
    first = aggregates[0]
    for other in aggregates[1:]:
        same = other[0] == first[0] and all(
            a[:3] == b[:3] and abs(a[3] - b[3]) <= 1e-9 * max(1.0, abs(a[3]))
            for a, b in zip(first[1], other[1], strict=True)
        )
        if not same:
            raise SystemExit(f"the aggregates disagree: {aggregates}")


def planning(path: Path, parallelism: int) -> dict[str, Any]:
    """How long the planning takes (the proof: the file framed), in this process, and the
    partitions it makes."""
    source_class = type("Source", (MsgpackDataSource,), {"parallelism": parallelism})
    source = source_class(CaseInsensitiveDict({"path": str(path), "type": "item"}))
    reader = source.reader(source.schema())
    reader.partitions()  # the page cache warm, as for the timed ways
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        parts = reader.partitions()
        seconds.append(time.perf_counter() - start)
    return {"partitions": len(parts), "proof_seconds": statistics.median(seconds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-spark-") as scratch:
        path = Path(scratch) / "items.msgpack"
        generate(path, args.records)
        parquet = Path(scratch) / "items.parquet"
        convert(str(path), str(parquet), "parquet")
        started = time.perf_counter()
        with local_spark(args.cores) as spark:
            startup = time.perf_counter() - started
            parallelism = spark.sparkContext.defaultParallelism
            answers: dict[str, Any] = {}
            load_before = os.getloadavg()[0]
            seconds = interleaved(ways(spark, path, parquet, answers), args.repeat)
            load_after = os.getloadavg()[0]
        agree(answers, args.records)
        planned = planning(path, parallelism)
        size, parquet_size = path.stat().st_size, parquet.stat().st_size
    ratios = {
        name: statistics.median(
            later / first for first, later in zip(seconds[a], seconds[b], strict=True)
        )
        for name, (a, b) in RATIOS.items()
    }
    result: dict[str, Any] = {
        "records": args.records,
        "bytes": size,
        "parquet_bytes": parquet_size,
        "cores": args.cores,
        "parallelism": parallelism,
        "repeat": args.repeat,
        "pyspark": pyspark_version,
        "session_start_seconds": startup,
        # The machine's one-minute load average as the timing began and ended: on a shared
        # machine, Spark's tasks compete for the cores with whatever else runs there.
        "load_average": [load_before, load_after],
        **planned,
        "proof_fraction_of_msgpack_count": planned["proof_seconds"]
        / statistics.median(seconds["spark_msgpack_count"]),
        "ratios": ratios,
        "aggregate": json.loads(json.dumps(answers["spark_msgpack_aggregate"])),
        **measured(seconds),
    }
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
