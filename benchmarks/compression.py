"""Parquet codecs on reference-shaped data: output size against the MessagePack, the time to
convert and the time to read back (pyperf), which chose ``convert``'s default codec.

    poetry run python benchmarks/compression.py -o doc/compression.result.json

Writes ``--records`` generated Items (the reference fixture's shape and generator; a million
by default, about 56 MB), converts them once with each codec to check that pyarrow reads back
the very table the MessagePack holds, then times, each a pyperf benchmark:

- ``convert/<codec>``: ``convert(path, out, "parquet", compression=codec)``, to a file beside
  the data (page cache), as ``msgpack-reader convert --type item --to parquet`` does it;
- ``read/<codec>``: ``pyarrow.parquet.read_table`` of that codec's file;
- ``read/msgpack``: ``read_table`` of the MessagePack itself (what every conversion reads
  before it encodes: the part of ``convert/<codec>`` no codec changes).

Each benchmark's metadata holds ``records``, ``stream_bytes`` (the MessagePack's size) and, for
a codec, ``codec`` and ``output_bytes``. Every value is one whole pass (``loops`` 1), three
worker processes of three values each after a warm-up, by default: about three minutes on 2
cores. RESULTS.md (``benchmarks/report.py``) gives the sizes and times, and ratios to snappy
(pyarrow's default, and what ``convert`` wrote before it had a choice).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgpack_reader_py import generate
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._output.formats import Codec

CODECS: tuple[Codec, ...] = ("zstd", "lz4", "snappy", "gzip", "none")
RECORDS = 1_000_000
DATA = "items.msgpack"


def written(scratch: Path, codec: str) -> Path:
    """The file of ``codec`` that the benchmarks read back and measure."""
    return scratch / f"items.{codec}.parquet"


def prepare(scratch: Path, records: int) -> None:
    """Write the data and each codec's Parquet file, each checked to read back as the
    MessagePack's own table."""
    import pyarrow.parquet as pq

    from msgpack_reader_py._arrow.reader import read_table

    path = scratch / DATA
    generate(path, records)
    expected = read_table(path)
    for codec in CODECS:
        convert(path, written(scratch, codec), "parquet", compression=codec)
        if not pq.read_table(written(scratch, codec)).equals(expected):
            raise SystemExit(f"{codec}: the Parquet file does not read back as the data")


def runs(scratch: Path) -> dict[str, Callable[[], int]]:
    """Each benchmark's pass, by name; each returns the rows it did."""
    import pyarrow.parquet as pq

    from msgpack_reader_py._arrow.reader import read_table

    path = scratch / DATA

    def converting(codec: Codec) -> Callable[[], int]:
        timed = scratch / f"timed.{codec}.parquet"  # the files read back stay as checked

        def run() -> int:
            return convert(path, timed, "parquet", compression=codec).records

        return run

    def reading(codec: str) -> Callable[[], int]:
        return lambda: pq.read_table(written(scratch, codec)).num_rows

    made: dict[str, Callable[[], int]] = {"read/msgpack": lambda: read_table(path).num_rows}
    for codec in CODECS:
        made[f"convert/{codec}"] = converting(codec)
        made[f"read/{codec}"] = reading(codec)
    return made


def timer(run: Callable[[], int], records: int, name: str) -> Callable[[int], float]:
    """pyperf's time function: ``loops`` whole passes, each checked to do every record."""

    def time_func(loops: int) -> float:
        start = time.perf_counter()
        for _ in range(loops):
            done = run()
            if done != records:
                raise AssertionError(f"{name}: did {done} records, expected {records}")
        return time.perf_counter() - start

    return time_func


def metadata(scratch: Path, name: str, records: int) -> dict[str, Any]:
    made: dict[str, Any] = {"records": records, "stream_bytes": (scratch / DATA).stat().st_size}
    codec = name.split("/", 1)[1]
    if codec in CODECS:
        made.update(codec=codec, output_bytes=written(scratch, codec).stat().st_size)
    return made


def main(argv: list[str] | None = None) -> int:
    import pyperf

    def pass_on(command: list[str], args: Any) -> None:
        command.extend(["--records", str(args.records), "--scratch", args.scratch])

    runner = pyperf.Runner(
        values=3,
        processes=3,
        loops=1,
        # The script itself: a worker runs it as the parent was run, or as pytest imports it.
        program_args=(str(Path(__file__).resolve()),),
        add_cmdline_args=pass_on,
    )
    runner.argparser.add_argument("--records", type=int, default=RECORDS)
    runner.argparser.add_argument(
        "--scratch", default=None, help="where the data and the Parquet files go (made for you)"
    )
    args = runner.parse_args(argv)
    made = None
    if args.scratch is None:
        made = args.scratch = tempfile.mkdtemp(prefix="msgpack-reader-compression-")
    scratch = Path(args.scratch)
    try:
        if not args.worker:
            prepare(scratch, args.records)
        for name, run in runs(scratch).items():
            runner.bench_time_func(
                name,
                timer(run, args.records, name),
                metadata=metadata(scratch, name, args.records),
            )
    finally:
        if made is not None and not args.worker:
            shutil.rmtree(made, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
