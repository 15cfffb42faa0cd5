"""Scale-out benchmark: an aggregate over many files, on a 2-worker Dask cluster and in one process.

    poetry run python benchmarks/scale_out.py -o doc/scale_out.result.json

Writes ``--files`` files of ``--records`` generated records each (different seeds), then
computes the same aggregate (count of records, sum of ``id``, mean of ``value``) three ways,
interleaved ``--repeat`` times so that drift on a shared machine hits each alike:

- ``single_process_dataframe``: the same ``read_dataframe`` aggregate on Dask's synchronous
  scheduler: one process reads the files in turn, each exactly as a partition is read;
- ``single_process_reader``: one process reads the files in turn with ``StreamingReader``
  (every record validated, as ``read_dataframe`` validates) and keeps running sums;
- ``dask_local_cluster``: ``read_dataframe`` on a ``distributed.LocalCluster`` of
  ``--workers`` worker processes, one thread each, started once before timing (as a real
  cluster is); its start-up time is reported apart.

The speed-up is the median of the faster single-process way over the cluster's median. All
three must agree on the aggregate, or the script fails. Needs the ``dask`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgpack
import pyarrow
from dask.base import compute

from msgpack_reader_py import StreamingReader, generate
from msgpack_reader_py.dask import open_files, read_dataframe
from msgpack_reader_py.streaming_reader_bench import write_result

WAYS = ("single_process_dataframe", "single_process_reader", "dask_local_cluster")
Aggregate = tuple[int, int, float]


def write_files(directory: Path, files: int, records: int) -> list[Path]:
    """``files`` streams of ``records`` items each, seeds 0, 1, ...; their paths."""
    paths = []
    for seed in range(files):
        path = directory / f"part-{seed:03d}.msgpack"
        generate(path, records, seed=seed)
        paths.append(path)
    return paths


def single_process_dataframe(pattern: str) -> Aggregate:
    """The cluster's work, done by this process alone, one file after the other."""
    return dask_aggregate(pattern, scheduler="sync")


def single_process_reader(pattern: str) -> Aggregate:
    """The plain reader over each file in turn, running sums in a Python loop."""
    count = sum_of_ids = 0
    sum_of_values = 0.0
    for file in open_files(pattern):
        with file as stream, StreamingReader(stream) as reader:
            for item in reader:
                count += 1
                sum_of_ids += item.id
                sum_of_values += item.value
    return count, sum_of_ids, sum_of_values / count


def dask_aggregate(pattern: str, scheduler: str | None = None) -> Aggregate:
    """``read_dataframe``'s aggregate on ``scheduler`` (default: the active client's cluster)."""
    frame = read_dataframe(pattern)
    count, sum_of_ids, mean = compute(
        frame["id"].count(), frame["id"].sum(), frame["value"].mean(), scheduler=scheduler
    )
    return int(count), int(sum_of_ids), float(mean)


def _timed(run: Callable[[str], Aggregate], pattern: str) -> tuple[float, Aggregate]:
    start = time.perf_counter()
    result = run(pattern)
    return time.perf_counter() - start, result


def _agree(results: dict[str, Aggregate]) -> None:
    (count, ids, mean), *others = results.values()
    for other_count, other_ids, other_mean in others:
        if (other_count, other_ids) != (count, ids) or not math.isclose(
            other_mean, mean, rel_tol=1e-9
        ):
            raise SystemExit(f"the ways disagree on the aggregate: {results}")


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator[None]:
    """A ``LocalCluster`` of ``workers`` processes, one thread each, with a client that is the
    default while the block runs."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # The scheduler still serves HTTP (health, metrics) when its dashboard is off;
            # any free port, not 8787, which another cluster on the machine may hold.
            scheduler_kwargs={"dashboard_address": ":0"},
        ) as cluster,
        Client(cluster),
    ):
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--records", type=int, default=1_000_000, help="records per file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", help="where the files go (default: a temporary directory)")
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-scale-") as scratch:
        directory = Path(args.dir or scratch)
        directory.mkdir(parents=True, exist_ok=True)
        paths = write_files(directory, args.files, args.records)
        pattern = str(directory / "part-*.msgpack")
        total_bytes = sum(path.stat().st_size for path in paths)
        start = time.perf_counter()
        with local_cluster(args.workers):
            startup = time.perf_counter() - start
            ways: dict[str, Callable[[str], Aggregate]] = {
                "single_process_dataframe": single_process_dataframe,
                "single_process_reader": single_process_reader,
                "dask_local_cluster": dask_aggregate,
            }
            dask_aggregate(pattern)  # warms the page cache and the workers' imports
            seconds: dict[str, list[float]] = {way: [] for way in WAYS}
            for _ in range(args.repeat):
                results = {}
                for way in WAYS:
                    elapsed, results[way] = _timed(ways[way], pattern)
                    seconds[way].append(elapsed)
                _agree(results)
    medians = {way: statistics.median(values) for way, values in seconds.items()}
    baseline = min(("single_process_dataframe", "single_process_reader"), key=medians.__getitem__)
    records = args.files * args.records
    result = {
        "files": args.files,
        "records_per_file": args.records,
        "records": records,
        "bytes": total_bytes,
        "workers": args.workers,
        "threads_per_worker": 1,
        "repeat": args.repeat,
        "cluster_startup_seconds": startup,
        "aggregate": dict(zip(("count", "sum_of_ids", "mean"), results[baseline], strict=True)),
        "baseline": baseline,
        "speedup": medians[baseline] / medians["dask_local_cluster"],
        "measurements": {
            way: {
                "median_seconds": medians[way],
                "seconds": seconds[way],
                "records_per_second": records / medians[way],
            }
            for way in WAYS
        },
        "python": platform.python_version(),
        "versions": {
            "msgpack": ".".join(map(str, msgpack.version)),
            "pyarrow": pyarrow.__version__,
            "dask": _version("dask"),
            "pandas": _version("pandas"),
            "distributed": _version("distributed"),
        },
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    write_result(result, args.output)
    return 0


def _version(module: str) -> str:
    from importlib.metadata import version

    return version(module)


if __name__ == "__main__":
    raise SystemExit(main())
