"""What the commands cost, as a user runs them, against the floor of framing the same records.

    poetry run python -m benchmarks.output_cost -o doc/output_cost.result.json

Writes a stream of ``--records`` Item records (``big_file.write_stream``), then
times, each command in a fresh process (``bash -c``, bytecode cached as an installed package's
is), interleaved ``--repeat`` times so that drift on a shared machine hits each alike:

- ``floor``: ``python -m benchmarks.floor FILE``, a plain ``msgpack.Unpacker`` loop that sums
  the ids and checks nothing (``benchmarks/floor.py``): the baseline of every ratio;
- ``cat``: ``cat FILE > /dev/null``, the I/O floor;
- ``read``: ``msgpack-reader read --type item FILE > /dev/null``: every record checked, counted
  and its id summed (its output is one line);
- ``dump_items``, ``dump_items_csv``, ``dump_untyped``: ``dump --type item`` (JSON Lines),
  ``dump --type item --format csv`` and ``dump`` (untyped, JSON Lines), ``--format`` given
  since its default depends on whether stdout is a terminal;
- ``convert_csv_items``, ``convert_parquet_items``, ``convert_arrow_items``: ``convert --type
  item --to csv``, ``--to parquet`` and ``--to arrow``;

each writing command to three destinations: ``> /dev/null`` (the writing alone), ``| cat >
/dev/null`` (a consumer on a pipe: each write waits for room in the pipe's buffer) and a file in
the scratch directory (``> OUT`` for dump; ``-o OUT`` for convert, the atomic path users take: a
temporary file renamed into place), deleted after its run. Each time is a ratio to the floor of
the same round; the median of those ratios is reported, and each target (at most N times the
floor) is judged on the /dev/null figure.

Then the conversions to Parquet and to CSV on many processes, for each ``--jobs N``:
``convert --jobs N -o OUT.parquet`` (one file: the workers decode, this process encodes),
``convert --jobs N -o OUT.csv`` (one file: the workers write the text, this process copies it
out) and ``convert --jobs N -o DIR/`` (a directory of parts, each encoded and written by the
worker that read it), judged on how busy they keep N cores: the CPU time of ``convert --jobs 1``
to one file of the format (the work) over N times the wall time of the run (``1.0``: every
core busy all the time, on the work alone).

Every command's exit status is checked (``pipefail``: the pipe's too); every file written is
counted back (lines of JSON Lines and CSV, Parquet's and Arrow's row counts, the parts' rows)
against the records written, and ``read``'s and the floor's counts and sums of ids in an
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
import shutil
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

FLOOR = "floor"
CAT = "cat"
WORKLOADS: dict[str, tuple[str, ...]] = {
    "read": ("read", "--type", "item"),
    "dump_items": ("dump", "--type", "item", "--format", "jsonl"),
    "dump_items_csv": ("dump", "--type", "item", "--format", "csv"),
    "dump_untyped": ("dump", "--format", "jsonl"),
    "convert_csv_items": ("convert", "--type", "item", "--to", "csv"),
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
    "read": 1.2,
    "dump_items": 1.6,
    "convert_csv_items": 1.8,
    "convert_parquet_items": 2.0,
}
"""Each target: at most this many times the floor, judged on the /dev/null destination."""
TARGET_DESTINATION = "devnull"
SUFFIXES = {
    "dump_items": ".jsonl",
    "dump_items_csv": ".csv",
    "dump_untyped": ".jsonl",
    "convert_csv_items": ".csv",
    "convert_parquet_items": ".parquet",
    "convert_arrow_items": ".arrow",
}
PARALLEL = ("convert", "--type", "item")
PARALLEL_FORMATS = ("parquet", "csv")
"""The conversions run on many processes, to one file and to a directory of parts: Parquet
(to one file, the workers decode and this process encodes) and CSV (the workers write the
text; to one file, this process copies it out)."""
OUTPUTS = ("file", "parts")
BUSY_TARGETS = {("parquet", "parts", 2): 0.85, ("parquet", "file", 2): 0.80}
"""At least this busy (see the module's docstring), for (format, output, jobs)."""


def destinations(name: str) -> tuple[str, ...]:
    """Where ``name`` writes in a round: ``read`` writes one line, to /dev/null only."""
    return ("devnull",) if name == "read" else tuple(DESTINATIONS)


def command_line(name: str, destination: str, *, program: str, source: str, out: str) -> str:
    """The shell command of ``name`` to ``destination``: ``program`` runs msgpack-reader,
    ``source`` is the stream, ``out`` the file a ``file`` destination writes."""
    source, out = shlex.quote(source), shlex.quote(out)
    if name == FLOOR:
        return f"{shlex.quote(sys.executable)} -m benchmarks.floor {source} > /dev/null"
    if name == CAT:
        return f"cat {source} > /dev/null"
    arguments = WORKLOADS[name]
    head = f"{program} {shlex.join(arguments)}"
    convert = arguments[0] == "convert"
    if destination == "file":
        return f"{head} -o {out} {source}" if convert else f"{head} {source} > {out}"
    to_stdout = f"{head} -o - {source}" if convert else f"{head} {source}"
    return f"{to_stdout} {DESTINATIONS[destination]}"


def parallel_line(to: str, jobs: int, output: str, *, program: str, source: str, out: str) -> str:
    """``convert --jobs N`` to ``to``: to the file ``out`` (``output`` ``file``), or to the
    directory ``out`` (``parts``: the path given with a trailing separator)."""
    target = out + os.sep if output == "parts" else out
    arguments = [*PARALLEL, "--to", to, "--jobs", str(jobs), "-o", target, source]
    return f"{program} {shlex.join(arguments)}"


def runs() -> list[tuple[str, str]]:
    """Every (command, destination) of a round, in order: the floor first."""
    return [(FLOOR, "devnull"), (CAT, "devnull")] + [
        (name, destination) for name in WORKLOADS for destination in destinations(name)
    ]


def parallel_runs(jobs: list[int]) -> list[tuple[str, int, str]]:
    """Every (format, jobs, output) of a round: for each format, one process to one file
    first (the work whose CPU time the others are judged against), then each ``jobs`` to a
    file and to parts."""
    return [
        run
        for to in PARALLEL_FORMATS
        for run in [(to, 1, "file")] + [(to, n, output) for n in jobs for output in OUTPUTS]
    ]


def shown(name: str, destination: str) -> str:
    """The command as RESULTS.md shows it: no machine paths."""
    if name == FLOOR:
        return "python -m benchmarks.floor FILE"
    return command_line(name, destination, program="msgpack-reader", source="FILE", out="OUT")


def shown_parallel(to: str, jobs: int, output: str) -> str:
    """A parallel run as RESULTS.md shows it."""
    out = "DIR" if output == "parts" else f"OUT.{to}"
    return parallel_line(to, jobs, output, program="msgpack-reader", source="FILE", out=out)


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


def records_in(path: Path) -> int:
    """How many records the output ``path`` holds: a file, or a directory of parts."""
    if path.is_dir():
        return sum(records_in(part) for part in sorted(path.iterdir()))
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    if path.suffix == ".arrow":
        import pyarrow as pa

        with pa.memory_map(str(path)) as source:
            return int(pa.ipc.open_file(source).read_all().num_rows)
    lines = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines - 1 if path.suffix == ".csv" else lines  # CSV: a header row first


def checked_output_run(line: str, out: Path, records: int) -> tuple[float, float, int]:
    """Run ``line``, which writes ``out`` (a file or a directory): (wall seconds, CPU seconds,
    bytes written), once the output has been counted back and deleted (disk space)."""
    try:
        seconds, cpu, _ = run(line)
        files = sorted(out.iterdir()) if out.is_dir() else [out]
        size = sum(file.stat().st_size for file in files)
        found = records_in(out)
    finally:
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink(missing_ok=True)
    if found != records:
        raise SystemExit(f"output_cost: wrote {found} records of {records}: {line}")
    return seconds, cpu, size


def checked_file_run(
    name: str, program: str, source: Path, out: Path, records: int
) -> tuple[float, float, int]:
    """``name`` to the file ``out``, counted back (:func:`checked_output_run`)."""
    line = command_line(name, "file", program=program, source=str(source), out=str(out))
    return checked_output_run(line, out, records)


def check_counts(program: str, source: Path, records: int, sum_of_ids: int) -> None:
    """An untimed ``read --json`` and floor of ``source``: every record, the right ids."""
    quoted = shlex.quote(str(source))
    lines = {
        "read": f"{program} read --type item --json {quoted}",
        "floor": f"{shlex.quote(sys.executable)} -m benchmarks.floor {quoted}",
    }
    for name, line in lines.items():
        report = json.loads(run(line)[2])
        if (report["records"], report["sum_of_ids"]) != (records, sum_of_ids):
            raise SystemExit(
                f"output_cost: {name} found {report['records']} records (sum of ids "
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


def summarised(
    seconds: dict[str, dict[str, list[float]]],
    cpu: dict[str, dict[str, list[float]]],
    sizes: dict[str, int],
) -> dict[str, dict[str, Any]]:
    """Each command's times, and the median of its per-round ratios to the floor."""
    floors = seconds[FLOOR]["devnull"]
    measurements: dict[str, dict[str, Any]] = {}
    for name, by_destination in seconds.items():
        measurements[name] = {}
        for destination, values in by_destination.items():
            ratios = [value / floor for value, floor in zip(values, floors, strict=True)]
            measured: dict[str, Any] = {
                "command": shown(name, destination),
                "seconds": values,
                "median_seconds": statistics.median(values),
                "cpu_seconds": cpu[name][destination],
                "ratios_to_floor": ratios,
                "ratio_to_floor": statistics.median(ratios),
            }
            if destination == "file":
                measured["output_bytes"] = sizes[name]
            measurements[name][destination] = measured
    return measurements


Parallel = tuple[str, int, str]
"""A parallel run: (format, jobs, output)."""


def busy(
    seconds: dict[Parallel, list[float]], cpu: dict[Parallel, list[float]]
) -> list[dict[str, Any]]:
    """How busy each parallel run kept its cores: per round, the CPU time of ``--jobs 1``
    to the same format over ``jobs`` times the run's wall time; the median of the rounds."""
    judged = []
    for (to, jobs, output), walls in seconds.items():
        if jobs == 1:
            continue
        work = cpu[(to, 1, "file")]
        rounds = [used / (jobs * wall) for used, wall in zip(work, walls, strict=True)]
        one = seconds[(to, 1, "file")]
        figure: dict[str, Any] = {
            "to": to,
            "jobs": jobs,
            "output": output,
            "command": shown_parallel(to, jobs, output),
            "seconds": walls,
            "median_seconds": statistics.median(walls),
            "cpu_seconds": cpu[(to, jobs, output)],
            "busy_rounds": rounds,
            "busy": statistics.median(rounds),
            "speedup": statistics.median([o / wall for o, wall in zip(one, walls, strict=True)]),
        }
        limit = BUSY_TARGETS.get((to, output, jobs))
        if limit is not None:
            figure["at_least"] = limit
            figure["met"] = figure["busy"] >= limit
        judged.append(figure)
    return judged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--jobs",
        type=int,
        action="append",
        help="processes of a parallel conversion (again for more; default: 2)",
    )
    parser.add_argument("--dir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument("-o", "--output", default="-", help="where the JSON goes (- is stdout)")
    args = parser.parse_args(argv)
    jobs: list[int] = args.jobs or [2]
    program = shlex.join([sys.executable, "-m", "msgpack_reader_py"])

    with tempfile.TemporaryDirectory(prefix="msgpack-reader-output-", dir=args.dir) as scratch:
        directory = Path(scratch)
        path = directory / "big.msgpack"
        records, sum_of_ids = write_stream(path, records=args.records)
        # Untimed: each command once on one block (bytecode, imports, a broken command found
        # now), then the file read through (the page cache) and checked.
        small, small_records = path, records
        if records > BLOCK_RECORDS:
            small = directory / "block.msgpack"
            small_records = write_stream(small, records=BLOCK_RECORDS)[0]
        for name in SUFFIXES:
            checked_file_run(
                name, program, small, directory / f"warm{SUFFIXES[name]}", small_records
            )
        if small != path:
            small.unlink()
        run(command_line(CAT, "devnull", program=program, source=str(path), out=""))
        check_counts(program, path, records, sum_of_ids)

        seconds: dict[str, dict[str, list[float]]] = {}
        cpu: dict[str, dict[str, list[float]]] = {}
        sizes: dict[str, int] = {}
        parallel_seconds: dict[Parallel, list[float]] = {}
        parallel_cpu: dict[Parallel, list[float]] = {}
        for _ in range(args.repeat):
            for name, destination in runs():  # the floor first: each ratio is to this round's
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
            for to, n, output in parallel_runs(jobs):
                out = directory / ("parts" if output == "parts" else f"out.{to}")
                line = parallel_line(to, n, output, program=program, source=str(path), out=str(out))
                took, used, _ = checked_output_run(line, out, records)
                parallel_seconds.setdefault((to, n, output), []).append(took)
                parallel_cpu.setdefault((to, n, output), []).append(used)
        file_bytes = path.stat().st_size
        filesystem = _filesystem(directory)

    measurements = summarised(seconds, cpu, sizes)
    targets = {
        name: {
            "at_most": limit,
            "destination": TARGET_DESTINATION,
            "ratio": measurements[name][TARGET_DESTINATION]["ratio_to_floor"],
            "met": measurements[name][TARGET_DESTINATION]["ratio_to_floor"] <= limit,
        }
        for name, limit in TARGETS.items()
    }
    result = {
        "file_bytes": file_bytes,
        "records": records,
        "sum_of_ids": sum_of_ids,
        "repeat": args.repeat,
        "baseline": FLOOR,
        "io_floor": CAT,
        "destinations": DESTINATIONS,
        "output_filesystem": filesystem,
        "measurements": measurements,
        "targets": targets,
        "parallel": busy(parallel_seconds, parallel_cpu),
        "parallel_work": [
            {
                "to": to,
                "command": shown_parallel(to, 1, "file"),
                "seconds": parallel_seconds[(to, 1, "file")],
                "cpu_seconds": parallel_cpu[(to, 1, "file")],
            }
            for to in PARALLEL_FORMATS
        ],
        "python": platform.python_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
