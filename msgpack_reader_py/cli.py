"""The command line: ``python -m msgpack_reader_py`` and ``msgpack-reader``.

A thin shell over the library: it parses arguments, runs one command, and turns every failure
into one ``error: ...`` line on stderr with a non-zero status (1 for data and I/O errors, 2 for
usage errors, 130 on Ctrl-C). A closed stdout (``| head``) ends the program quietly.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import itertools
import json
import operator
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any, NoReturn

from ._extras import MissingExtraError, missing_extra
from .convert import FORMATS, CsvRows, JsonRows, Progress, convert, text_fields
from .errors import ReaderError
from .generator import DEFAULT_SEED, generate, get_iter, pack_items, write_items
from .model import Item
from .streaming_reader import DEFAULT_MAX_RECORD_SIZE, Source, StreamingReader

__all__ = ["main"]

DEFAULT_MESSAGES = 10000
EXIT_DATA_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a Unix tool killed by a closed pipe reports
STDIO = "-"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``error: ...`` line like every other failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


class _Failure(Exception):
    """A failure already phrased for the user: ``error: <source>: <message>``."""


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = _Parser(
        prog="msgpack-reader",
        description=(
            "Stream typed records out of concatenated MessagePack. With no command, read the "
            f"built-in {DEFAULT_MESSAGES}-record reference stream and print a summary."
        ),
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.set_defaults(run=_run_default)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)

    def reader_options(command: argparse.ArgumentParser, *, skip: bool = True) -> None:
        command.add_argument("source", metavar="SOURCE", help="a file, or - for stdin")
        if skip:
            command.add_argument(
                "--skip-invalid",
                action="store_true",
                help="skip records that are not items (wrong shape or field types) and report "
                "how many on stderr; corrupt or truncated data still fails",
            )
        command.add_argument(
            "--max-record-size",
            type=_positive_int,
            default=DEFAULT_MAX_RECORD_SIZE,
            metavar="BYTES",
            help="refuse records larger than this (default: %(default)s)",
        )

    read = commands.add_parser("read", help="read a stream and print a summary")
    reader_options(read)
    read.add_argument("--json", action="store_true", help="print the summary as JSON")
    read.set_defaults(run=_run_read)

    dump = commands.add_parser("dump", help="write the records as JSON Lines or CSV")
    reader_options(dump)
    dump.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    dump.add_argument(
        "--limit", type=_non_negative_int, default=None, metavar="N", help="stop after N records"
    )
    dump.set_defaults(run=_run_dump)

    conv = commands.add_parser(
        "convert",
        help="convert a stream to Parquet, Arrow, CSV or JSON Lines",
        description="Convert a stream of items to another format. A file named by -o appears "
        "only once the whole stream is converted; on any failure nothing is left under its "
        "name. Parquet and Arrow need the 'arrow' extra.",
    )
    reader_options(conv, skip=False)
    conv.add_argument("--to", required=True, choices=FORMATS, help="the output format")
    conv.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="the file to write, or - for stdout"
    )
    conv.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="a progress bar on stderr (bytes and records per second); auto: when stderr is "
        "a terminal and the conversion takes more than a moment (default: %(default)s)",
    )
    conv.set_defaults(run=_run_convert)

    gen = commands.add_parser("generate", help="write a reproducible stream of items")
    gen.add_argument("--path", required=True, help="the file to write, or - for stdout")
    gen.add_argument("--messages", type=_non_negative_int, default=DEFAULT_MESSAGES, metavar="N")
    gen.add_argument("--seed", type=int, default=DEFAULT_SEED)
    gen.set_defaults(run=_run_generate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        args = build_parser().parse_args(argv)
        run: Callable[[argparse.Namespace], int] = args.run
        return run(args)
    except _Failure as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _fail(message: str) -> int:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    print(f"error: {message}", file=sys.stderr)
    return EXIT_DATA_ERROR


def _silence_stdout() -> None:
    # Python flushes stdout again at exit; point it at devnull so that flush cannot fail loudly.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _source(source: str) -> tuple[str, Source]:
    """The name to show and the thing to read for a SOURCE argument (``-`` is stdin)."""
    if source == STDIO:
        return "<stdin>", sys.stdin.buffer
    return source, source


@contextmanager
def _reading(name: str, target: Source, **options: Any) -> Iterator[StreamingReader[Item]]:
    """Read ``target`` (shown as ``name``); phrase any failure for the user."""
    try:
        with StreamingReader(target, **options) as reader:
            yield reader
            if reader.skipped:
                first = reader.errors[0]
                print(
                    f"{name}: skipped {reader.skipped} invalid record"
                    f"{'s' if reader.skipped != 1 else ''}; the first: {first.in_source('')}",
                    file=sys.stderr,
                )
    except ReaderError as exc:
        raise _Failure(str(exc) if exc.source else f"{name}: {exc}") from exc
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _Failure(f"{name}: {exc.strerror or exc}") from exc


def _summarise(reader: StreamingReader[Item]) -> tuple[int, int, float]:
    count = 0
    sum_of_ids = 0
    start = time.perf_counter()
    for item in reader:
        count += 1
        sum_of_ids += item.id
    return count, sum_of_ids, time.perf_counter() - start


def _summary_line(count: int, sum_of_ids: int, seconds: float) -> str:
    rate = count / seconds if seconds > 0 else float("inf")
    return (
        f"Read {count} messages, sum_of_ids is {sum_of_ids} "
        f"in {seconds * 1e3:.2f} ms ({rate:,.0f} msg/s)"
    )


def _run_default(args: argparse.Namespace) -> int:
    data = pack_items(get_iter(DEFAULT_MESSAGES, DEFAULT_SEED))
    with _reading("<built-in reference stream>", data) as reader:
        print(_summary_line(*_summarise(reader)))
    return 0


def _reader_options(args: argparse.Namespace) -> dict[str, Any]:
    # Always validated: a summary or a dump of values that are not what Item says they are
    # would be wrong output (or a crash in sum() or json), not an error line.
    return {
        "validate": True,
        "max_record_size": args.max_record_size,
        "on_error": "skip" if args.skip_invalid else "raise",
    }


def _run_read(args: argparse.Namespace) -> int:
    with _reading(*_source(args.source), **_reader_options(args)) as reader:
        count, sum_of_ids, seconds = _summarise(reader)
        size = reader.bytes_read
    if args.json:
        summary = {
            "source": args.source,
            "records": count,
            "sum_of_ids": sum_of_ids,
            "bytes": size,
            "seconds": seconds,
            "skipped": reader.skipped,
        }
        print(json.dumps(summary))
    else:
        print(_summary_line(count, sum_of_ids, seconds))
    return 0


def _run_dump(args: argparse.Namespace) -> int:
    names = [field.name for field in dataclasses.fields(Item)]
    values: Callable[[Item], tuple[Any, ...]] = operator.attrgetter(*names)
    out = sys.stdout
    with _reading(*_source(args.source), **_reader_options(args)) as reader:
        records: Iterator[Item] = iter(reader)
        if args.limit is not None:
            records = itertools.islice(records, args.limit)
        rows = (
            CsvRows(out, names, text_fields(Item)) if args.format == "csv" else JsonRows(out, names)
        )
        rows.write(map(values, records))
    out.flush()
    return 0


def _run_convert(args: argparse.Namespace) -> int:
    name, source = _source(args.source)
    to_stdout = args.output == STDIO
    destination = sys.stdout.buffer if to_stdout else args.output
    with _progress(args.progress, name, _size(source)) as progress:
        try:
            written = convert(
                source,
                destination,
                args.to,
                max_record_size=args.max_record_size,
                progress=progress,
            )
        except MissingExtraError as exc:
            raise _Failure(f"--to {args.to}: {exc}") from exc
        except ReaderError as exc:
            raise _Failure(str(exc) if exc.source else f"{name}: {exc}") from exc
        except BrokenPipeError:
            raise
        except OSError as exc:
            where = exc.filename if exc.filename is not None else name
            raise _Failure(f"{where}: {exc.strerror or exc}") from exc
    if to_stdout:
        sys.stdout.buffer.flush()
    else:
        print(f"Wrote {written} records to {args.output} ({args.to})")
    return 0


def _size(source: Source) -> int | None:
    """The size of a file, or of stdin redirected from one; ``None`` for a pipe or socket."""
    try:
        if isinstance(source, str):
            return os.path.getsize(source)
        status = os.fstat(source.fileno()) if isinstance(source, io.IOBase) else None
    except (OSError, ValueError):
        return None
    if status is None:
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


@contextmanager
def _progress(mode: str, name: str, total: int | None) -> Iterator[Progress | None]:
    """A progress callback drawing a bar on stderr, or ``None`` when there is to be no bar.

    In ``auto`` mode the bar is drawn only on a terminal, and only once the work has taken
    half a second: a small input finishes before any bar would appear.
    """
    if mode == "never" or (mode == "auto" and not sys.stderr.isatty()):
        yield None
        return
    try:
        from tqdm import tqdm
    except ModuleNotFoundError as exc:
        if mode == "always":
            message = missing_extra(exc, "arrow", feature="--progress")
            raise _Failure(f"--progress: {message}") from exc
        yield None
        return
    with tqdm(
        total=total,
        desc=name,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        delay=0.5 if mode == "auto" else 0,
        file=sys.stderr,
        dynamic_ncols=True,
    ) as bar:

        def update(records: int, bytes_read: int) -> None:
            elapsed = bar.format_dict["elapsed"]
            rate = f", {records / elapsed:,.0f} records/s" if elapsed > 0 else ""
            bar.set_postfix_str(f"{records:,} records{rate}", refresh=False)
            bar.update(bytes_read - bar.n)

        yield update


def _run_generate(args: argparse.Namespace) -> int:
    if args.path == STDIO:
        out: IO[bytes] = sys.stdout.buffer
        write_items(out, get_iter(args.messages, args.seed))
        out.flush()
        return 0
    try:
        written = generate(args.path, args.messages, args.seed)
    except OSError as exc:
        raise _Failure(f"{args.path}: {exc.strerror or exc}") from exc
    print(f"Wrote {args.messages} messages ({written} bytes) to {args.path}")
    return 0
