"""The engines' readers against ``read_table``: Polars' scan, DuckDB's relation, Ray's dataset.

    poetry run python -m benchmarks.engines -o doc/engines.result.json

Writes one file of ``--records`` generated records and one of ``--ray-records``, then times,
interleaved ``--repeat`` times so that drift on a shared machine hits each alike:

- ``read_table``: :func:`~msgpack_reader_py.read_table` of the file, the baseline;
- ``polars_collect``: ``scan_msgpack(path, Item).collect()``: the same rows as a Polars
  ``DataFrame``;
- ``polars_head``: ``scan_msgpack(path, Item).head(5).collect()``: the scan stops early;
- ``duckdb_sum``: ``SELECT count(*), sum(id), avg(value)`` over ``duckdb.read_msgpack``;
- on a local Ray of ``--cpus`` CPUs, over the larger file: ``ray_one_block`` (the file read
  by one task, ``blocksize`` over its size) and ``ray_ranges`` (byte ranges of the default
  ``blocksize``, read by as many tasks), each ``read_msgpack(...).count()``.

Each ratio is the median of the per-repeat ratios of the two ways it compares. Needs the
``polars``, ``duckdb`` and ``ray`` extras.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgpack_reader_py import Item, generate
from msgpack_reader_py.streaming_reader_bench import write_result

from .one_file import interleaved, measured

RATIOS = {
    "polars_over_read_table": ("read_table", "polars_collect"),
    "duckdb_over_read_table": ("read_table", "duckdb_sum"),
    "ray_ranges_speedup": ("ray_ranges", "ray_one_block"),
}
"""Each ratio: the second way's time over the first's (for ``ray_ranges_speedup``, how many
times faster ranges are than one block)."""


def ways(path: Path) -> dict[str, Callable[[], None]]:
    import duckdb

    from msgpack_reader_py import duckdb as on_duckdb
    from msgpack_reader_py._arrow.reader import read_table
    from msgpack_reader_py.polars import scan_msgpack

    def table() -> None:
        read_table(path, Item)

    def collect() -> None:
        scan_msgpack(path, Item).collect()

    def head() -> None:
        scan_msgpack(path, Item).head(5).collect()

    def summed() -> None:
        connection = duckdb.connect()
        relation = on_duckdb.read_msgpack(path, Item, connection=connection)
        relation.aggregate("count(*), sum(id), avg(value)").fetchall()

    return {
        "read_table": table,
        "polars_collect": collect,
        "polars_head": head,
        "duckdb_sum": summed,
    }


def ray_ways(path: Path) -> dict[str, Callable[[], None]]:
    from msgpack_reader_py.ray import read_msgpack

    size = path.stat().st_size

    def one_block() -> None:
        read_msgpack(path, Item, blocksize=size + 1).count()

    def ranges() -> None:
        read_msgpack(path, Item).count()

    return {"ray_one_block": one_block, "ray_ranges": ranges}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--ray-records", type=int, default=8_000_000)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-engines-") as scratch:
        path = Path(scratch) / "items.msgpack"
        generate(path, args.records)
        seconds = interleaved(ways(path), args.repeat)
        path.unlink()
        big = Path(scratch) / "ray.msgpack"
        generate(big, args.ray_records, seed=1)
        import ray

        # A Ray of its own (never one a `ray start` left running), quiet.
        ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        try:
            seconds.update(interleaved(ray_ways(big), args.repeat))
        finally:
            ray.shutdown()
        ray_bytes = big.stat().st_size
    ratios = {
        name: statistics.median(
            later / first for first, later in zip(seconds[a], seconds[b], strict=True)
        )
        for name, (a, b) in RATIOS.items()
    }
    result: dict[str, Any] = {
        "records": args.records,
        "ray_records": args.ray_records,
        "ray_bytes": ray_bytes,
        "cpus": args.cpus,
        "repeat": args.repeat,
        "ratios": ratios,
        **measured(seconds),
    }
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
