"""Big-file benchmark: read a stream of at least 1 GiB the way the CLI does, next to the I/O floor.

    poetry run python benchmarks/big_file.py --size-gib 1 -o doc/big_file.result.json

The file is written once (one block of reference-style records, repeated), read once to warm
the page cache, then each measurement runs in a fresh process so that its peak RSS (``VmHWM``)
is its own: the I/O floor (a plain ``read(1 << 20)`` loop) and the reader with default options,
which is also how ``msgpack-reader read`` runs it (every record validated; there is no other
mode). Each is repeated and the median kept; the JSON feeds ``benchmarks/report.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack

from msgpack_reader_py import StreamingReader, get_iter, pack_items
from msgpack_reader_py.streaming_reader_bench import write_result

BLOCK_RECORDS = 100_000
MEASUREMENTS = ("io_floor", "read")


def write_stream(path: Path, size: int = 0, *, records: int | None = None) -> tuple[int, int]:
    """Write at least ``size`` bytes of records to ``path``, or exactly ``records`` records;
    return (records, sum of ids).

    One block of generated records is written again and again: the reader's work per byte is
    what is measured, and the block is large enough to defeat any caching of decoded values.
    """
    items = list(get_iter(BLOCK_RECORDS, seed=7))
    block = pack_items(items)
    copies, rest = (
        (-(-size // len(block)), 0) if records is None else divmod(records, BLOCK_RECORDS)
    )
    with path.open("wb") as stream:
        for _ in range(copies):
            stream.write(block)
        stream.write(pack_items(items[:rest]))
    return copies * BLOCK_RECORDS + rest, copies * sum(range(BLOCK_RECORDS)) + sum(range(rest))


def measure(kind: str, path: str) -> dict[str, Any]:
    """One measurement, in this process: seconds, what was read, and peak RSS."""
    start = time.perf_counter()
    records = sum_of_ids = size = 0
    if kind == "io_floor":
        with open(path, "rb") as stream:
            while chunk := stream.read(1 << 20):
                size += len(chunk)
    else:
        with StreamingReader(path) as reader:
            for item in reader:
                records += 1
                sum_of_ids += item.id
            size = reader.bytes_read
    seconds = time.perf_counter() - start
    peak_kib = _peak_rss_kib()
    return {
        "kind": kind,
        "seconds": seconds,
        "records": records,
        "sum_of_ids": sum_of_ids,
        "bytes": size,
        "peak_rss_bytes": peak_kib * 1024,
    }


def _peak_rss_kib() -> int:
    """This process's peak RSS. On Linux ``ru_maxrss`` survives ``exec`` (it would report the
    parent's peak), so the per-process ``VmHWM`` is read instead where there is one."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover


def run_in_subprocess(kind: str, path: Path) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, "--measure", kind, "--path", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(output)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--path", help="the stream to use (default: a temporary file)")
    parser.add_argument("--measure", choices=MEASUREMENTS, help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.path)))
        return 0

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-big-") as scratch:
        path = Path(args.path) if args.path else Path(scratch) / "big.msgpack"
        size = int(args.size_gib * (1 << 30))
        records, sum_of_ids = write_stream(path, size)
        run_in_subprocess("io_floor", path)  # warms the page cache
        runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in MEASUREMENTS}
        for _ in range(args.repeat):
            for kind in MEASUREMENTS:  # interleaved, so drift hits every kind alike
                runs[kind].append(run_in_subprocess(kind, path))
        for run in runs["read"]:
            if (run["records"], run["sum_of_ids"]) != (records, sum_of_ids):
                raise SystemExit(f"read: read {run['records']} records, wrote {records}")
        result = {
            "file_bytes": path.stat().st_size,
            "records": records,
            "sum_of_ids": sum_of_ids,
            "repeat": args.repeat,
            "python": platform.python_version(),
            "msgpack": ".".join(map(str, msgpack.version)),
            "machine": platform.platform(),
            "cpu_count": os.cpu_count(),
            "measurements": {
                kind: {
                    "median_seconds": statistics.median(r["seconds"] for r in kind_runs),
                    "seconds": [r["seconds"] for r in kind_runs],
                    "peak_rss_bytes": max(r["peak_rss_bytes"] for r in kind_runs),
                }
                for kind, kind_runs in runs.items()
            },
        }
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
