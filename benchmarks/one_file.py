"""One file on every core: a file read in byte ranges against the same file read on one core.

    poetry run python -m benchmarks.one_file -o doc/one_file.result.json

Writes one file of ``--records`` generated records, then times, interleaved ``--repeat``
times so that drift on a shared machine hits each alike, each as a user runs it:

- ``read_jobs_1`` / ``read_jobs_N``: ``msgpack-reader read --jobs 1`` and ``--jobs N`` (every
  record built as an ``Item`` and checked, ids summed), in a process of its own each time;
- ``convert_jobs_1`` / ``convert_jobs_N``: ``convert --to parquet`` with ``--jobs 1`` and
  ``N``; the two outputs must be byte for byte the same;
- ``read_zstd_jobs_1`` / ``read_zstd_jobs_n``: ``read --jobs 1`` and ``--jobs N`` of the same
  records as a zstd file of frames of 4 MiB each (as ``.zst`` files joined with ``cat``
  are), split where frames start;
- ``count``: ``msgpack-reader count`` (framing alone), against ``read_jobs_1``;
- ``tail``: ``msgpack-reader tail -n 10``, against ``read_jobs_1``;
- ``floor``: msgpack's C decoder iterating the file's bytes into plain lists, in this process
  (the floor the Rust reader is measured against in RESULTS.md);
- ``read_in_process_jobs_1`` / ``..._n``: the same ``read`` commands run in this process: the
  work alone, without Python's start-up and imports (about 0.1 s);
- ``values_in_process_jobs_1`` / ``..._n``: ``read --type msgpack_reader_py:ITEM_VALUES``
  with ``--jobs 1`` and ``N``, in this process: every field checked as an ``Item``'s, each
  record the typed tuple msgspec decodes, no object built (the fastest validated read, which
  RESULTS.md also sets against the Rust reader on one core);
- ``read_table`` / ``read_table_workers_n``: ``read_table`` in this process, with
  ``workers=None`` and ``workers=N``: the work alone, no process started per run;
- ``dask_one_partition`` / ``dask_ranges``: an aggregate of every column over
  ``read_dataframe`` of one file of ``--dask-records`` records (the same file when that equals
  ``--records``) on a ``LocalCluster`` of ``--workers`` processes, with ``blocksize=None``
  (one partition) and with ``--blocksize``;
  ``..._two_columns``: an aggregate of two columns, the only ones Dask then asks each
  partition to build, a file's or a range's.

Each ratio is the median of the per-repeat ratios of two ways timed one after the other. The
guesses (how long the slowest took, how many ranges were read again) are counted in a read
of the file in ranges in this process. Needs the ``arrow``, ``dask`` and ``zstd`` extras.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from msgpack_reader_py import Item, generate
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._split.parallel import Splitting, read_ranges
from msgpack_reader_py._split.ranges import RangeStats
from msgpack_reader_py._split.seek import Counting
from msgpack_reader_py.streaming_reader_bench import write_result

from .output_cost import installed_environment
from .scale_out import local_cluster

PAIRS = {
    "read_jobs_n": ("read_jobs_1", "read_jobs_n"),
    "convert_jobs_n": ("convert_jobs_1", "convert_jobs_n"),
    "read_zstd_jobs_n": ("read_zstd_jobs_1", "read_zstd_jobs_n"),
    "count": ("read_jobs_1", "count"),
    "tail": ("read_jobs_1", "tail"),
    "dask_ranges": ("dask_one_partition", "dask_ranges"),
    "dask_ranges_two_columns": ("dask_one_partition_two_columns", "dask_ranges_two_columns"),
    "read_in_process_jobs_n": ("read_in_process_jobs_1", "read_in_process_jobs_n"),
    "values_in_process_jobs_n": ("values_in_process_jobs_1", "values_in_process_jobs_n"),
    "read_table_workers_n": ("read_table", "read_table_workers_n"),
}
"""Each ratio: how many times faster the second way is than the first (for ``tail``, the
first way's time over the second's too: below 1/0.4 = 2.5 means slower than 0.4x a read)."""


def cli(*arguments: str) -> Callable[[], None]:
    """A run of the command line, in a process of its own."""
    command = [sys.executable, "-m", "msgpack_reader_py", *arguments]
    environment = installed_environment()

    def run() -> None:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=environment)

    return run


def zstd_frames(path: Path, frames: Path, size: int = 4 << 20) -> None:
    """``path`` compressed into ``frames``, a zstd frame per ``size`` bytes."""
    import zstandard

    compress = zstandard.ZstdCompressor().compress
    with path.open("rb") as source, frames.open("wb") as out:
        while piece := source.read(size):
            out.write(compress(piece))


def floor(path: Path) -> Callable[[], None]:
    """msgpack's C decoder over the file's bytes (read before timing), into plain lists."""
    data = path.read_bytes()

    def run() -> None:
        unpacker = msgpack.Unpacker(max_buffer_size=len(data) + 1)
        unpacker.feed(data)
        for _ in unpacker:
            pass

    return run


def dask_aggregate(path: Path, blocksize: int | None, *, two_columns: bool) -> Callable[[], None]:
    """An aggregate over ``read_dataframe`` on the active cluster: of every column (the rows
    counted partition by partition), or of ``id`` and ``value`` only (Dask then asks every
    partition for those two columns alone)."""
    from dask.base import compute

    from msgpack_reader_py.dask import read_dataframe

    def run() -> None:
        frame = read_dataframe(str(path), blocksize=blocksize)
        if two_columns:
            compute(frame["id"].sum(), frame["value"].mean())
        else:
            compute(frame.map_partitions(len, meta=(None, "int64")).sum())

    return run


VALUES = "msgpack_reader_py:ITEM_VALUES"
"""``--type`` of the fastest validated read: an ``Item``'s checks, the decoded tuple kept."""


def read_in_process(path: Path, jobs: int, record_type: str = "item") -> Callable[[], None]:
    """``msgpack-reader read --jobs N`` run in this process: the work alone, no start-up."""
    from msgpack_reader_py.cli import main

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["read", "--type", record_type, "--jobs", str(jobs), str(path)])

    return run


def read_table_in_process(path: Path, workers: int | None) -> Callable[[], None]:
    from msgpack_reader_py._arrow.reader import read_table

    def run() -> None:
        read_table(path, workers=workers)

    return run


def timed(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def guesses(path: Path) -> dict[str, Any]:
    """How the guesses of a read in ranges went: the slowest, and the ranges read again."""
    stats = RangeStats()
    for _piece in read_ranges(
        path, Item, Counting(), options=ReadOptions(), splitting=Splitting(1, 8 << 20), stats=stats
    ):
        pass
    return {
        "ranges": stats.ranges,
        "rereads": stats.rereads,
        "slowest_seconds": stats.slowest_guess,
    }


def interleaved(ways: dict[str, Callable[[], None]], repeat: int) -> dict[str, list[float]]:
    """Each way run once untimed (the page cache, imports, the workers'), then ``repeat``
    rounds of every way in turn: drift on a shared machine hits each alike."""
    for run in ways.values():
        run()
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(repeat):
        for way, run in ways.items():
            seconds[way].append(timed(run))
    return seconds


def measured(seconds: dict[str, list[float]]) -> dict[str, Any]:
    """A result's measurements (each way's times and their median) and where they were made."""
    return {
        "measurements": {
            way: {"median_seconds": statistics.median(values), "seconds": values}
            for way, values in seconds.items()
        },
        "python": platform.python_version(),
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--dask-records", type=int, default=8_000_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--blocksize", type=int, default=64 << 20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-one-file-") as scratch:
        directory = Path(scratch)
        path = directory / "items.msgpack"
        generate(path, args.records)
        big = directory / "dask.msgpack"
        if args.dask_records == args.records:
            big = path  # one file for every way: generating is the slowest step of a run
        else:
            generate(big, args.dask_records, seed=1)
        framed = directory / "items.msgpack.zst"
        zstd_frames(path, framed)
        outputs = {jobs: directory / f"out-{jobs}.parquet" for jobs in (1, args.jobs)}
        ways: dict[str, Callable[[], None]] = {
            "read_jobs_1": cli("read", "--jobs", "1", str(path)),
            "read_jobs_n": cli("read", "--jobs", str(args.jobs), str(path)),
            "convert_jobs_1": cli(
                "convert", "--type", "item", "--to", "parquet", "-o", str(outputs[1]), str(path)
            ),
            "convert_jobs_n": cli(
                "convert",
                "--type",
                "item",
                "--to",
                "parquet",
                "-o",
                str(outputs[args.jobs]),
                "--jobs",
                str(args.jobs),
                str(path),
            ),
            "read_zstd_jobs_1": cli("read", "--jobs", "1", str(framed)),
            "read_zstd_jobs_n": cli("read", "--jobs", str(args.jobs), str(framed)),
            "count": cli("count", str(path)),
            "tail": cli("tail", "-n", "10", "--type", "item", str(path)),
            "floor": floor(path),
            "read_in_process_jobs_1": read_in_process(path, 1),
            "read_in_process_jobs_n": read_in_process(path, args.jobs),
            "values_in_process_jobs_1": read_in_process(path, 1, VALUES),
            "values_in_process_jobs_n": read_in_process(path, args.jobs, VALUES),
            "read_table": read_table_in_process(path, None),
            "read_table_workers_n": read_table_in_process(path, args.jobs),
        }
        seconds = interleaved(ways, args.repeat)
        if outputs[1].read_bytes() != outputs[args.jobs].read_bytes():
            raise SystemExit("convert --jobs wrote other bytes than --jobs 1")
        # The cluster's own threads would make this process's readers start their workers
        # with a fork server: the ways above are timed before it starts.
        with local_cluster(args.workers):
            dask_ways = {}
            for two in (False, True):
                suffix = "_two_columns" if two else ""
                dask_ways["dask_one_partition" + suffix] = dask_aggregate(
                    big, None, two_columns=two
                )
                dask_ways["dask_ranges" + suffix] = dask_aggregate(
                    big, args.blocksize, two_columns=two
                )
            seconds.update(interleaved(dask_ways, args.repeat))
        guessed = guesses(path)
        size, dask_size = path.stat().st_size, big.stat().st_size
    ratios = {
        name: statistics.median(
            before / after for before, after in zip(seconds[a], seconds[b], strict=True)
        )
        for name, (a, b) in PAIRS.items()
    }
    result = {
        "records": args.records,
        "bytes": size,
        "dask_records": args.dask_records,
        "dask_bytes": dask_size,
        "jobs": args.jobs,
        "workers": args.workers,
        "blocksize": args.blocksize,
        "repeat": args.repeat,
        "ratios": ratios,
        "tail_fraction_of_read": 1 / ratios["tail"],
        **{
            f"{way}_over_floor": statistics.median(
                n / f for n, f in zip(seconds[way], seconds["floor"], strict=True)
            )
            for way in (
                "read_in_process_jobs_n",
                "values_in_process_jobs_1",
                "values_in_process_jobs_n",
            )
        },
        "guesses": guessed,
        **measured(seconds),
    }
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
