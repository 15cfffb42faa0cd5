"""The command line: ``python -m msgpack_reader_py`` and ``msgpack-reader``.

A thin shell over the library: it parses arguments, runs one command, and turns every failure
into one ``error: ...`` line on stderr with a non-zero status (1 for data and I/O errors, 2 for
usage errors, 130 on Ctrl-C). A closed stdout (``| head``) ends the program quietly (141).
Messages name command-line flags, never the library's keywords.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import itertools
import json
import operator
import os
import stat
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, NoReturn

from ._extras import MissingExtraError
from ._progress import MODES, Mode, ProgressUnavailable, Update, progress_bar
from .convert import FORMATS, CsvRows, JsonRows, convert, replacing
from .errors import ReaderError, RecordTooLargeError
from .generator import DEFAULT_SEED, get_iter, pack_items, write_items
from .model import Item
from .schema import RecordSchema
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


def _paragraph(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=78)


EXIT_STATUSES = """\
exit status:
  0    success
  1    bad data or an I/O error: one line, error: <source>: <what and where>
  2    a usage error (a bad option or argument)
  130  interrupted (Ctrl-C)
  141  stdout was closed early (e.g. piped into head); nothing more is printed"""

SOURCES_HELP = (
    "one or more files, or - for stdin, read in turn; gzip, bzip2, xz (and zstd, with the "
    "'zstd' extra) are decompressed on the fly"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = _Parser(
        prog="msgpack-reader",
        description=_paragraph(
            "Stream typed records out of concatenated MessagePack: files, pipes and sockets "
            "full of records become checked Items, JSON Lines, CSV, Parquet or Arrow. With no "
            f"command, read the built-in {DEFAULT_MESSAGES}-record reference stream and print "
            "a summary (the main job)."
        ),
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.set_defaults(run=_run_default)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=_paragraph(description),
            epilog=EXIT_STATUSES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    def reader_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("sources", nargs="+", metavar="SOURCE", help=SOURCES_HELP)
        sub.add_argument(
            "--skip-invalid",
            action="store_true",
            help="pass over records that are not Items (wrong shape or field types) and report "
            "how many on stderr; corrupt or truncated data still fails, and so does a run that "
            "finds no Item at all (default: off, the first bad record is an error)",
        )
        sub.add_argument(
            "--max-record-size",
            type=_positive_int,
            default=DEFAULT_MAX_RECORD_SIZE,
            metavar="BYTES",
            help="refuse any record larger than this many bytes (default: %(default)s, 100 MiB)",
        )

    read = command(
        "read",
        "read streams and print a summary",
        "Read every record of each SOURCE as an Item, checking every field, and print how "
        "many there were, the sum of their ids, and how long it took: one line for a single "
        "SOURCE; for several, a line for each and a total line. A bad record stops the run "
        "with one error line naming its source, record index and byte offset.",
    )
    reader_options(read)
    read.add_argument(
        "--json",
        action="store_true",
        help="print each summary as a JSON object on a line of its own "
        "(source, records, sum_of_ids, bytes, seconds, skipped); with several SOURCEs a last "
        'line totals them, with "sources" listing them (default: text)',
    )
    read.set_defaults(run=_run_read)

    dump = command(
        "dump",
        "write the records as JSON Lines or CSV",
        "Write the records of each SOURCE, in turn, to stdout: JSON Lines (one object per "
        "record, keyed by field name) or CSV (a header row, then one row per record). Every "
        "field is checked first; on bad data, every record before it has been written when "
        "the error line appears.",
    )
    reader_options(dump)
    dump.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        default="jsonl",
        help="the output format (default: %(default)s)",
    )
    dump.add_argument(
        "--limit",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="stop after N records in all (default: no limit)",
    )
    dump.set_defaults(run=_run_dump)

    conv = command(
        "convert",
        "convert streams to Parquet, Arrow, CSV or JSON Lines",
        "Convert the records of each SOURCE, in turn, into one output. A file named by -o "
        "appears only once every SOURCE has converted: on any failure (bad data, a full disk, "
        "Ctrl-C) nothing is left under its name and a file already there is untouched. "
        "Parquet and Arrow need the 'arrow' extra.",
    )
    reader_options(conv)
    conv.add_argument("--to", required=True, choices=FORMATS, help="the output format (required)")
    conv.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the file to write, or - for stdout (required)",
    )
    progress_option(conv, "bytes read, records and records per second")
    conv.set_defaults(run=_run_convert)

    gen = command(
        "generate",
        "write a reproducible stream of items",
        "Write N pseudo-random Items as concatenated MessagePack, reproducibly from a seed. "
        f"The defaults write the {DEFAULT_MESSAGES}-record reference stream byte for byte "
        "(559,439 bytes).",
    )
    gen.add_argument("--path", required=True, help="the file to write, or - for stdout (required)")
    gen.add_argument(
        "--messages",
        type=_non_negative_int,
        default=DEFAULT_MESSAGES,
        metavar="N",
        help="how many records to write (default: %(default)s)",
    )
    gen.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="the random seed; the same seed writes the same bytes (default: %(default)s)",
    )
    progress_option(gen, "records written and records per second")
    gen.set_defaults(run=_run_generate)
    return parser


def progress_option(command: argparse.ArgumentParser, shows: str) -> None:
    command.add_argument(
        "--progress",
        choices=MODES,
        default="auto",
        help=f"a progress bar on stderr ({shows}); auto: only on a terminal, and only once "
        "the job has run half a second (default: %(default)s)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "sources", []).count(STDIO) > 1:
            parser.error("stdin (-) can be read only once")
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


def _sources(arguments: Sequence[str]) -> list[tuple[str, Source]]:
    """The name to show and the thing to read for each SOURCE argument (``-`` is stdin)."""
    return [("<stdin>", sys.stdin.buffer) if a == STDIO else (a, a) for a in arguments]


def _data_error(name: str, exc: ReaderError) -> _Failure:
    """The error line for a data error: its source (once), location and reason."""
    return _Failure(str(_for_the_command_line(exc, exc.source or name)))


def _for_the_command_line(exc: ReaderError, source: str | None) -> ReaderError:
    """``exc`` naming ``source``, and the flag where the library's message names its keyword."""
    reason = exc.reason
    if isinstance(exc, RecordTooLargeError):
        reason = reason.replace("max_record_size", "--max-record-size")
    return type(exc)(reason, index=exc.index, offset=exc.offset, source=source)


def _io_error(name: str, exc: OSError) -> _Failure:
    where = exc.filename if exc.filename is not None else name
    return _Failure(f"{where}: {exc.strerror or exc}")


@contextmanager
def _reading(name: str, target: Source, **options: Any) -> Iterator[StreamingReader[Item]]:
    """Read ``target`` (shown as ``name``); phrase any failure for the user."""
    try:
        with StreamingReader(target, **options) as reader:
            yield reader
    except ReaderError as exc:
        raise _data_error(name, exc) from exc
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _io_error(name, exc) from exc


class _Skips:
    """What ``--skip-invalid`` passed over, source by source, in one run."""

    def __init__(self) -> None:
        self._sources: list[tuple[str, int, ReaderError]] = []

    def add(self, name: str, count: int, errors: Sequence[ReaderError]) -> None:
        if count:
            self._sources.append((name, count, errors[0]))

    def report(self, records: int, names: Sequence[str]) -> None:
        """Say on stderr what each source skipped; fail when that was all there was.

        A run that skipped records and read none did not read data of the type at all (a text
        file is a stream of small ints to a MessagePack decoder): that is an error, not success.
        """
        if self._sources and not records:
            count = sum(count for _, count, _ in self._sources)
            first = self._sources[0][2]
            if len(names) == 1:
                where = f"{names[0]}: no record of type Item found"
                raise _Failure(f"{where}: {_skipped(count, first, named=False)}")
            where = f"no record of type Item found in {', '.join(names)}"
            raise _Failure(f"{where}: {_skipped(count, first, named=True)}")
        for name, count, first in self._sources:
            print(f"{name}: {_skipped(count, first, named=name != first.source)}", file=sys.stderr)


def _skipped(count: int, first: ReaderError, *, named: bool) -> str:
    """``skipped N invalid records; the first: <located error>``, its source ``named`` or not."""
    plural = "s" if count != 1 else ""
    error = _for_the_command_line(first, first.source if named else None)
    return f"skipped {count} invalid record{plural}; the first: {error}"


def _summarise(reader: StreamingReader[Item]) -> _Summary:
    count = 0
    sum_of_ids = 0
    start = time.perf_counter()
    for item in reader:
        count += 1
        sum_of_ids += item.id
    return _Summary(count, sum_of_ids, seconds=time.perf_counter() - start)


def _run_default(args: argparse.Namespace) -> int:
    data = pack_items(get_iter(DEFAULT_MESSAGES, DEFAULT_SEED))
    with _reading("<built-in reference stream>", data) as reader:
        print(_summarise(reader).line())
    return 0


def _reader_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "max_record_size": args.max_record_size,
        "on_error": "skip" if args.skip_invalid else "raise",
    }


@dataclasses.dataclass
class _Summary:
    """What ``read`` reports of a source, or of several together."""

    records: int = 0
    sum_of_ids: int = 0
    bytes: int = 0
    seconds: float = 0.0
    skipped: int = 0

    def add(self, other: _Summary) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def line(self) -> str:
        rate = self.records / self.seconds if self.seconds > 0 else float("inf")
        return (
            f"Read {self.records} messages, sum_of_ids is {self.sum_of_ids} "
            f"in {self.seconds * 1e3:.2f} ms ({rate:,.0f} msg/s)"
        )


def _run_read(args: argparse.Namespace) -> int:
    sources = _sources(args.sources)
    skips = _Skips()
    total = _Summary()
    for (name, target), argument in zip(sources, args.sources, strict=True):
        with _reading(name, target, **_reader_options(args)) as reader:
            summary = _summarise(reader)
        summary.bytes = reader.bytes_read
        summary.skipped = reader.skipped
        skips.add(name, reader.skipped, reader.errors)
        total.add(summary)
        if len(sources) > 1:
            # Each source is reported as it is done, before a later one can fail.
            print(_report(args.json, name, {"source": argument}, summary), flush=True)
    skips.report(total.records, [name for name, _ in sources])
    if len(sources) == 1:
        print(_report(args.json, None, {"source": args.sources[0]}, total))
    else:
        print(_report(args.json, "total", {"sources": list(args.sources)}, total, len(sources)))
    return 0


def _report(
    as_json: bool, label: str | None, keys: dict[str, Any], summary: _Summary, sources: int = 1
) -> str:
    if as_json:
        return json.dumps({**keys, **dataclasses.asdict(summary)})
    line = summary.line() + (f" from {sources} sources" if sources > 1 else "")
    return f"{label}: {line}" if label else line


def _run_dump(args: argparse.Namespace) -> int:
    names = [field.name for field in dataclasses.fields(Item)]
    values: Callable[[Item], tuple[Any, ...]] = operator.attrgetter(*names)
    out = sys.stdout
    rows: CsvRows | JsonRows | None = None  # made once the first source is open: no header
    sources = _sources(args.sources)  # is written for a file that cannot be read
    skips = _Skips()
    left = args.limit
    written = 0
    for name, target in sources:
        if left == 0 and rows is not None:
            break
        with _reading(name, target, **_reader_options(args)) as reader:
            if rows is None:
                csv = args.format == "csv"
                rows = (
                    CsvRows(out, names, RecordSchema(Item).text_fields())
                    if csv
                    else JsonRows(out, names)
                )
            records: Iterator[Item] = iter(reader)
            if left is not None:
                records = itertools.islice(records, left)
            # Counted in C: zip takes a row before the counter, so the counter's next value is
            # the number of rows written.
            counter = itertools.count()
            rows.write(
                map(operator.itemgetter(0), zip(map(values, records), counter, strict=False))
            )
            count = next(counter)
        skips.add(name, reader.skipped, reader.errors)
        written += count
        if left is not None:
            left -= count
    out.flush()
    skips.report(written, [name for name, _ in sources])
    return 0


def _run_convert(args: argparse.Namespace) -> int:
    sources = _sources(args.sources)
    names = [name for name, _ in sources]
    label = names[0] if len(sources) == 1 else f"{len(sources)} sources"
    sizes = [_size(target) for _, target in sources]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    to_stdout = args.output == STDIO
    with _progress(args.progress, label, total, unit="bytes") as progress:
        try:
            with (
                contextlib.nullcontext(sys.stdout.buffer) if to_stdout else replacing(args.output)
            ) as out:
                result = convert(
                    [target for _, target in sources],
                    out,
                    args.to,
                    max_record_size=args.max_record_size,
                    on_error="skip" if args.skip_invalid else "raise",
                    progress=progress,
                )
                # Inside the block: a run that found no record leaves no output file behind.
                skips = _Skips()
                skips.add(label, result.skipped, result.errors)
                skips.report(result.records, names)
                if to_stdout:
                    _flush_stdout()
        except MissingExtraError as exc:
            raise _Failure(f"--to {args.to}: {exc}") from exc
        except ReaderError as exc:
            raise _data_error(label, exc) from exc
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _io_error(label, exc) from exc
    if not to_stdout:
        print(f"Wrote {result.records} records to {args.output} ({args.to})")
    return 0


def _flush_stdout() -> None:
    """Flush what is still buffered for stdout, naming stdout if that fails (a full disk)."""
    try:
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        exc.filename = exc.filename or "<stdout>"
        raise


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
def _progress(
    mode: Mode, label: str, total: int | None, *, unit: Literal["bytes", "records"]
) -> Iterator[Update | None]:
    """:func:`progress_bar`, with a missing tqdm under ``always`` as one error line."""
    try:
        with progress_bar(mode, label, total, unit=unit) as update:
            yield update
    except ProgressUnavailable as exc:
        raise _Failure(f"--progress {mode}: {exc}") from None


_GENERATE_CHUNK = 8192  # records written between two updates of generate's bar


def _run_generate(args: argparse.Namespace) -> int:
    to_stdout = args.path == STDIO
    items = get_iter(args.messages, args.seed)
    label = "<stdout>" if to_stdout else args.path
    try:
        with (
            _progress(args.progress, label, args.messages, unit="records") as progress,
            contextlib.nullcontext(sys.stdout.buffer)
            if to_stdout
            else open(args.path, "wb") as out,
        ):
            written = 0
            records = 0
            while chunk := list(itertools.islice(items, _GENERATE_CHUNK)):
                written += write_items(out, chunk)
                records += len(chunk)
                if progress is not None:
                    progress(records, records)
            out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _io_error(args.path, exc) from exc
    if not to_stdout:
        print(f"Wrote {args.messages} messages ({written} bytes) to {args.path}")
    return 0
