"""What writing costs, as a user runs it: `dump` and `convert` to /dev/null, a pipe and a file.

    poetry run python -m benchmarks.output_cost -o doc/output_cost.result.json

Writes a stream of Item records of at least ``--size-gib`` GiB (``big_file.write_stream``),
then times, each command in a fresh process (``bash -c``, bytecode cached as an installed
package's is), interleaved ``--repeat`` times so that drift on a shared machine hits each alike:

- ``cat``: ``cat FILE > /dev/null``, the I/O floor;
- ``read``: ``msgpack-reader read --type item FILE > /dev/null``, the baseline: every record an
  ``Item``, checked, counted (its output is one line);
- ``dump_items``, ``dump_items_csv``, ``dump_untyped``: ``dump --type item`` (JSON Lines),
  ``dump --type item --format csv`` and ``dump`` (untyped, JSON Lines), ``--format`` given
  since its default depends on whether stdout is a terminal;
- ``convert_parquet_items``, ``convert_arrow_items``: ``convert --type item --to parquet`` and
  ``--to arrow``;

each workload to three destinations: ``> /dev/null`` (the writing alone), ``| cat > /dev/null``
(a consumer on a pipe: each write waits for room in the pipe's buffer) and a file in the scratch
directory (``> OUT`` for dump; ``-o OUT`` for convert, the atomic path users take: a temporary
file renamed into place), deleted after its run. Each time is a ratio to the ``read`` of the same
round; the median of those ratios is reported, and each target (at most N times ``read``) is
judged on the /dev/null figure. Every command's exit status is checked (``pipefail``: the
pipe's too); every file written is counted back (lines of JSON Lines and CSV, Parquet's and
Arrow's row counts) against the records written, and ``read``'s count and sum of ids in an
untimed run first. Each command also runs once untimed on one block of records before the
rounds (bytecode, imports; a broken command fails there, not an hour in).

``benchmarks/output.py`` measures the same encoders differently: in one process with pyperf,
from the 10000-record reference stream in memory, to /dev/null only; the work alone, without
start-up, the file's reading or the destination. This script is the whole command as a user
runs it on a big file, start-up and destination included. Needs the ``arrow`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack

from msgpack_reader_py.streaming_reader_bench import write_result

from .big_file import BLOCK_RECORDS, write_stream

FLOOR = "cat"
BASELINE = "read"
WORKLOADS: dict[str, tuple[str, ...]] = {
    "dump_items": ("dump", "--type", "item", "--format", "jsonl"),
    "dump_items_csv": ("dump", "--type", "item", "--format", "csv"),
    "dump_untyped": ("dump", "--format", "jsonl"),
    "convert_parquet_items": ("convert", "--type", "item", "--to", "parquet"),
    "convert_arrow_items": ("convert", "--type", "item", "--to", "arrow"),
}
"""Each workload: the command's arguments before its destination and its source."""
DESTINATIONS = {
    "devnull": "> /dev/null",
    "pipe": "| cat > /dev/null",
    "file": "to a file on disk",
}
TARGETS = {
    "dump_items": 1.5,
    "dump_items_csv": 2.0,
    "convert_parquet_items": 1.5,
    "dump_untyped": 1.2,
}
"""Each target: at most this many times ``read``, judged on the /dev/null destination."""
TARGET_DESTINATION = "devnull"
SUFFIXES = {
    "dump_items": ".jsonl",
    "dump_items_csv": ".csv",
    "dump_untyped": ".jsonl",
    "convert_parquet_items": ".parquet",
    "convert_arrow_items": ".arrow",
}


def command_line(name: str, destination: str, *, program: str, source: str, out: str) -> str:
    """The shell command of ``name`` to ``destination``: ``program`` runs msgpack-reader,
    ``source`` is the stream, ``out`` the file a ``file`` destination writes."""
    source, out = shlex.quote(source), shlex.quote(out)
    if name == FLOOR:
        return f"cat {source} > /dev/null"
    if name == BASELINE:
        return f"{program} read --type item {source} > /dev/null"
    arguments = WORKLOADS[name]
    head = f"{program} {shlex.join(arguments)}"
    convert = arguments[0] == "convert"
    if destination == "file":
        return f"{head} -o {out} {source}" if convert else f"{head} {source} > {out}"
    to_stdout = f"{head} -o - {source}" if convert else f"{head} {source}"
    return f"{to_stdout} {DESTINATIONS[destination]}"


def runs() -> list[tuple[str, str]]:
    """Every (command, destination) of a round, in order: ``read`` first."""
    return [(BASELINE, "devnull"), (FLOOR, "devnull")] + [
        (name, destination) for name in WORKLOADS for destination in DESTINATIONS
    ]


def shown(name: str, destination: str) -> str:
    """The command as RESULTS.md shows it: no machine paths."""
    return command_line(name, destination, program="msgpack-reader", source="FILE", out="OUT")


def installed_environment() -> dict[str, str]:
    """This process's environment, for a command run as installed packages are: with their
    bytecode cached (a machine that sets PYTHONDONTWRITEBYTECODE compiles pyarrow's and
    pandas' modules anew in every process)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(line: str) -> tuple[float, float, str]:
    """Run ``line`` in bash, ``pipefail`` set: (wall seconds, CPU seconds of every process it
    started, its stdout). A failure ends the benchmark with the command and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line}"],
        capture_output=True,
        text=True,
        env=installed_environment(),
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"output_cost: exit status {done.returncode} from: {line}\n{done.stderr.strip()}"
        )
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu, done.stdout


def records_in(name: str, path: Path) -> int:
    """How many records the output file of workload ``name`` holds."""
    suffix = SUFFIXES[name]
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    if suffix == ".arrow":
        import pyarrow as pa

        with pa.memory_map(str(path)) as source:
            return int(pa.ipc.open_file(source).read_all().num_rows)
    lines = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines - 1 if suffix == ".csv" else lines  # CSV: a header row first


def checked_file_run(
    name: str, program: str, source: Path, out: Path, records: int
) -> tuple[float, float, int]:
    """``name`` to the file ``out``: (wall seconds, CPU seconds, bytes written), once the
    output has been counted back and deleted (disk space)."""
    line = command_line(name, "file", program=program, source=str(source), out=str(out))
    try:
        seconds, cpu, _ = run(line)
        size = out.stat().st_size
        found = records_in(name, out)
    finally:
        out.unlink(missing_ok=True)
    if found != records:
        raise SystemExit(f"output_cost: {name} wrote {found} records of {records}: {line}")
    return seconds, cpu, size


def check_read(program: str, source: Path, records: int, sum_of_ids: int) -> None:
    """An untimed ``read --json`` of ``source``: every record, the right ids."""
    line = f"{program} read --type item --json {shlex.quote(str(source))}"
    report = json.loads(run(line)[2])
    if (report["records"], report["sum_of_ids"]) != (records, sum_of_ids):
        raise SystemExit(
            f"output_cost: read found {report['records']} records (sum of ids "
            f"{report['sum_of_ids']}), {records} written (sum {sum_of_ids})"
        )


def _filesystem(directory: Path) -> str:
    """The type of the file system ``directory`` is on (Linux; else ``unknown``)."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts") as mounts:
            for entry in mounts:
                fields = entry.split()
                point = fields[1]
                inside = str(directory.resolve()).startswith(point.rstrip("/") + "/")
                if (inside or str(directory.resolve()) == point) and len(point) > len(best):
                    best, kind = point, fields[2]
    except OSError:  # pragma: no cover - not Linux
        pass
    return kind


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)
    program = shlex.join([sys.executable, "-m", "msgpack_reader_py"])

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-output-", dir=args.dir) as scratch:
        directory = Path(scratch)
        path = directory / "big.msgpack"
        records, sum_of_ids = write_stream(path, int(args.size_gib * (1 << 30)))
        # Untimed: each command once on one block (bytecode, imports, a broken command found
        # now), then the file read through (the page cache) and checked.
        small, small_records = path, records
        if records > BLOCK_RECORDS:
            small = directory / "block.msgpack"
            small_records = write_stream(small, 1)[0]
        for name in WORKLOADS:
            checked_file_run(
                name, program, small, directory / f"warm{SUFFIXES[name]}", small_records
            )
        if small != path:
            small.unlink()
        run(command_line(FLOOR, "devnull", program=program, source=str(path), out=""))
        check_read(program, path, records, sum_of_ids)

        seconds: dict[str, dict[str, list[float]]] = {}
        cpu: dict[str, dict[str, list[float]]] = {}
        sizes: dict[str, int] = {}
        for _ in range(args.repeat):
            for name, destination in runs():  # read first: each ratio is to this round's
                if destination == "file":
                    out = directory / f"out{SUFFIXES[name]}"
                    took, used, sizes[name] = checked_file_run(name, program, path, out, records)
                else:
                    line = command_line(
                        name, destination, program=program, source=str(path), out=""
                    )
                    took, used, _ = run(line)
                seconds.setdefault(name, {}).setdefault(destination, []).append(took)
                cpu.setdefault(name, {}).setdefault(destination, []).append(used)
        file_bytes = path.stat().st_size
        filesystem = _filesystem(directory)

    reads = seconds[BASELINE]["devnull"]
    measurements: dict[str, dict[str, Any]] = {}
    for name, by_destination in seconds.items():
        measurements[name] = {}
        for destination, values in by_destination.items():
            ratios = [value / read for value, read in zip(values, reads, strict=True)]
            measured: dict[str, Any] = {
                "command": shown(name, destination),
                "seconds": values,
                "median_seconds": statistics.median(values),
                "cpu_seconds": cpu[name][destination],
                "ratios_to_read": ratios,
                "ratio_to_read": statistics.median(ratios),
            }
            if destination == "file":
                measured["output_bytes"] = sizes[name]
            measurements[name][destination] = measured
    targets = {
        name: {
            "at_most": limit,
            "destination": TARGET_DESTINATION,
            "ratio": measurements[name][TARGET_DESTINATION]["ratio_to_read"],
            "met": measurements[name][TARGET_DESTINATION]["ratio_to_read"] <= limit,
        }
        for name, limit in TARGETS.items()
    }
    result = {
        "file_bytes": file_bytes,
        "records": records,
        "sum_of_ids": sum_of_ids,
        "repeat": args.repeat,
        "baseline": BASELINE,
        "floor": FLOOR,
        "destinations": DESTINATIONS,
        "output_filesystem": filesystem,
        "measurements": measurements,
        "targets": targets,
        "python": platform.python_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
