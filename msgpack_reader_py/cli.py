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
import logging
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
from .convert import FORMATS, Format, convert, replacing
from .decoder import FORCE, logger
from .engine import record_decoder
from .errors import ReaderError, RecordError, RecordTooLargeError
from .ext import fluentd_event_time
from .follow import check_followable
from .generator import DEFAULT_SEED, get_iter, pack_items, write_items
from .infer import DEFAULT_SAMPLE, InferenceError
from .inferred import infer_sources
from .model import Item
from .record_type import type_label
from .streaming_reader import DEFAULT_MAX_RECORD_SIZE, Source, SourceReader, StreamingReader
from .type_names import TypeNotFound, record_type_named
from .values import ValueReader

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

    status = EXIT_DATA_ERROR


class _UsageFailure(_Failure):
    """A bad argument found after parsing (a ``--type`` that names no record type)."""

    status = EXIT_USAGE


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

    def reader_options(sub: argparse.ArgumentParser, default_type: str | None) -> None:
        sub.add_argument("sources", nargs="+", metavar="SOURCE", help=SOURCES_HELP)
        if default_type is not None:
            sub.add_argument(
                "--type",
                default=default_type,
                metavar="TYPE",
                help=TYPE_HELP + " (default: %(default)s)",
            )
            sub.add_argument(
                "--skip-invalid",
                action="store_true",
                help="pass over records that are not records of the type (wrong shape or field "
                "types) and report how many on stderr; corrupt or truncated data still fails, "
                "and so does a run that finds no record of the type at all (default: off, the "
                "first bad record is an error)",
            )
        sub.add_argument(
            "--force",
            action="store_true",
            help="read bytes that look like something other than MessagePack (JSON, text, "
            "Parquet, ...) anyway: read untyped, they would pass for values, so such input is "
            "refused (default: off; typed reads fail at their first record instead)",
        )
        sub.add_argument(
            "--fluentd",
            action="store_true",
            help="read extension type 0 as Fluentd's EventTime: a timestamp (default: off, an "
            "extension like any other)",
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
        "Read every record of each SOURCE as a record of --type (the built-in Item unless "
        "told otherwise), checking every field, and print how many there were (and, for "
        "Items, the sum of their ids), how many bytes, and how long it took: one line for a "
        "single SOURCE; for several, a line for each and a total line. A bad record stops the "
        "run with one error line naming its source, record index and byte offset.",
    )
    reader_options(read, "item")
    read.add_argument(
        "--json",
        action="store_true",
        help="print each summary as a JSON object on a line of its own "
        "(source, records, sum_of_ids, bytes, seconds, skipped); with several SOURCEs a last "
        'line totals them, with "sources" listing them (default: text)',
    )
    follow_option(read, "print the summary of what was read")
    read.set_defaults(run=_run_read)

    dump = command(
        "dump",
        "write the records as JSON Lines or CSV",
        "Write the records of each SOURCE, in turn, to stdout: JSON Lines (one value per "
        "record; a typed record is an object keyed by field name) or CSV (a header row, then "
        "one row per record). Any stream dumps: with the default --type any, each record is "
        "written as it is. With a record type every field is checked first; on bad data, "
        "every record before it has been written when the error line appears. This is "
        "convert to stdout, with --limit.",
    )
    reader_options(dump, "any")
    dump.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        default="jsonl",
        help="the output format; CSV needs columns: untyped, they are inferred from every "
        "record as convert does (default: %(default)s)",
    )
    output_options(dump)
    dump.add_argument(
        "--limit",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="stop after N records in all (default: no limit)",
    )
    follow_option(dump, "stop")
    dump.set_defaults(run=_run_dump)

    conv = command(
        "convert",
        "convert streams to Parquet, Arrow, CSV or JSON Lines",
        "Convert the records of each SOURCE, in turn, into one output. A file named by -o "
        "appears only once every SOURCE has converted: on any failure (bad data, a full disk, "
        "Ctrl-C) nothing is left under its name and a file already there is untouched. "
        "Parquet and Arrow need the 'arrow' extra. Without --type, records are read untyped: "
        "JSON Lines takes them as they are; for Parquet, Arrow and CSV a record type is "
        "inferred from every record of each file (see schema), so no value is dropped; stdin, "
        "read once, from its first records, and a later record with a key or a type they never "
        "showed is an error naming it.",
    )
    reader_options(conv, "any")
    conv.add_argument("--to", required=True, choices=FORMATS, help="the output format (required)")
    conv.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the file to write, or - for stdout (required)",
    )
    output_options(conv)
    progress_option(conv, "bytes read, records and records per second")
    conv.set_defaults(run=_run_convert)

    schema = command(
        "schema",
        "print a record type for a stream's records",
        "Infer a record type from every record of the SOURCEs (a file: its first records, then "
        "a check of the rest, widened by any record that does not fit; stdin: its first "
        "records) and print it as Python source: a dataclass named Record, with a class of its "
        "own for each nested record; records of several kinds, told apart by a tag such as "
        "type, get a class each, and Record is their union. Save it to a file and read the "
        "stream with it, checked: --type FILE.py:Record. Map keys become fields; arrays become "
        "fields f0, f1, ...",
    )
    reader_options(schema, None)
    schema.add_argument(
        "--format",
        choices=("dataclass", "struct"),
        default="dataclass",
        help="a dataclass or a msgspec.Struct (default: %(default)s)",
    )
    infer_option(schema)
    schema.set_defaults(run=_run_schema)

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


TYPE_HELP = (
    "the record type: item (the built-in Item), any (no type: every value as it is), or "
    "MODULE:CLASS, MODULE an importable module or the path of a .py file and CLASS a "
    "dataclass, NamedTuple or msgspec.Struct in it"
)


def infer_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--infer-from",
        type=_positive_int,
        default=None,
        metavar="N",
        help="infer the record type from the first N records only; a later record that does "
        "not fit it is an error (default: every record: inferred from the first "
        f"{DEFAULT_SAMPLE}, then checked against the rest of each file and widened by any that "
        f"does not fit; stdin, read once, from its first {DEFAULT_SAMPLE})",
    )
    command.add_argument(
        "--flat",
        action="store_true",
        help="one record type for every record, where records of several kinds (told apart "
        "by a key such as type, kind or event) would each get their own type, Record being "
        "their union (default: off)",
    )


def _inference(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--infer-from`` and ``--flat`` ask of an inference."""
    return {
        "sample": args.infer_from,
        "whole": args.infer_from is None,
        "kinds": not args.flat,
    }


def follow_option(command: argparse.ArgumentParser, on_ctrl_c: str) -> None:
    command.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep reading the file (one SOURCE, a path) as it grows, like tail -F: wait for "
        "more at its end, and read it again from its start, with a note on stderr, when it is "
        f"truncated or replaced (log rotation); Ctrl-C ends it: {on_ctrl_c} and exit with 130 "
        "(default: off, the end of the file ends the run)",
    )


def output_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--allow-nan",
        action="store_true",
        help="write NaN and infinite floats as NaN, Infinity and -Infinity, as JavaScript and "
        "Python read them (default: null, as strict JSON wants)",
    )
    infer_option(command)


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
    with _notes():
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            sources = getattr(args, "sources", [])
            if sources.count(STDIO) > 1:
                parser.error("stdin (-) can be read only once")
            if getattr(args, "follow", False):
                _check_followed(parser, sources)
            run: Callable[[argparse.Namespace], int] = args.run
            return run(args)
        except _Failure as exc:
            return _fail(str(exc), exc.status)
        except BrokenPipeError:
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        except KeyboardInterrupt:
            return _interrupted()


def _check_followed(parser: argparse.ArgumentParser, sources: Sequence[str]) -> None:
    if len(sources) != 1 or STDIO in sources:
        parser.error(
            "--follow follows one file: give one SOURCE, a path (stdin needs no --follow: it "
            "is read until it ends)"
        )
    try:
        check_followable(sources[0])
    except ValueError as exc:
        parser.error(f"--follow: {exc}")


def _interrupted() -> int:
    """Ctrl-C: what was written is flushed, and the exit is quiet."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        _silence_stdout()  # a closed or broken stdout: the user asked to stop, quietly
    return EXIT_INTERRUPTED


@contextmanager
def _notes() -> Iterator[None]:
    """The library's notes (a followed file read again from its start) as ``note: ...`` lines
    on stderr, while a command runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("note: %(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _fail(message: str, status: int = EXIT_DATA_ERROR) -> int:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    print(f"error: {message}", file=sys.stderr)
    return status


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


def _data_error(name: str, exc: ReaderError, hint: str = "") -> _Failure:
    """The error line for a data error: its source (once), location and reason."""
    return _Failure(str(_for_the_command_line(exc, exc.source or name)) + hint)


def _for_the_command_line(exc: ReaderError, source: str | None) -> ReaderError:
    """``exc`` naming ``source``, and the flag where the library's message names its keyword."""
    reason = exc.reason.replace(FORCE, "--force")
    if isinstance(exc, RecordTooLargeError):
        reason = reason.replace("max_record_size", "--max-record-size")
    return type(exc)(reason, index=exc.index, offset=exc.offset, source=source)


def _io_error(name: str, exc: OSError) -> _Failure:
    where = exc.filename if exc.filename is not None else name
    return _Failure(f"{where}: {exc.strerror or exc}")


@dataclasses.dataclass(frozen=True)
class _Typing:
    """What ``--type`` and ``--fluentd`` ask of a command's readers."""

    name: str
    record_type: Any  # None: untyped (any)
    fluentd: bool = False
    force: bool = False  # untyped: read what looks foreign

    @property
    def label(self) -> str:
        """How messages name the records: ``Item``, ``Record``, ``record``."""
        return "record" if self.record_type is None else type_label(self.record_type)

    @property
    def ext_hook(self) -> Any:
        """The typed readers' ``ext_hook``."""
        return fluentd_event_time if self.fluentd else None

    def hint(self, exc: ReaderError) -> str:
        """What to try when records are not Items: most streams are not."""
        if isinstance(exc, RecordError) and self.record_type is Item:
            return (
                "; if the stream does not hold Items, look at it with --type any, or get a "
                "record type for it from: msgpack-reader schema SOURCE"
            )
        return ""

    def reader(self, target: Source, **options: Any) -> SourceReader[Any]:
        if self.record_type is None:
            return ValueReader(target, ext_hook=self.ext_hook, force=self.force, **options)
        return StreamingReader(target, self.record_type, ext_hook=self.ext_hook, **options)


ITEM = _Typing("item", Item)


def _typing(args: argparse.Namespace) -> _Typing:
    name = getattr(args, "type", "any")
    try:
        record_type = record_type_named(name)
        if record_type is not None:
            record_decoder(record_type)  # refuses field types no record can hold
    except (TypeNotFound, TypeError) as exc:
        raise _UsageFailure(f"--type {name}: {exc}") from None
    return _Typing(name, record_type, args.fluentd, args.force)


@contextmanager
def _phrased(name: str, hint: Callable[[ReaderError], str] = lambda _: "") -> Iterator[None]:
    """Bad data and I/O errors while reading ``name`` as one line for the user; ``hint``
    says what to try for a data error."""
    try:
        yield
    except ReaderError as exc:
        raise _data_error(name, exc, hint(exc)) from exc
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _io_error(name, exc) from exc


@contextmanager
def _reading(
    name: str, target: Source, typing: _Typing = ITEM, **options: Any
) -> Iterator[SourceReader[Any]]:
    """Read ``target`` (shown as ``name``); phrase any failure for the user."""
    with _phrased(name, typing.hint), typing.reader(target, **options) as reader:
        yield reader


class _Skips:
    """What ``--skip-invalid`` passed over, source by source, in one run."""

    def __init__(self, label: str = "Item") -> None:
        self._sources: list[tuple[str, int, ReaderError]] = []
        self._label = label

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
                where = f"{names[0]}: no record of type {self._label} found"
                raise _Failure(f"{where}: {_skipped(count, first, named=False)}")
            where = f"no record of type {self._label} found in {', '.join(names)}"
            raise _Failure(f"{where}: {_skipped(count, first, named=True)}")
        for name, count, first in self._sources:
            print(f"{name}: {_skipped(count, first, named=name != first.source)}", file=sys.stderr)


def _skipped(count: int, first: ReaderError, *, named: bool) -> str:
    """``skipped N invalid records; the first: <located error>``, its source ``named`` or not."""
    plural = "s" if count != 1 else ""
    error = _for_the_command_line(first, first.source if named else None)
    return f"skipped {count} invalid record{plural}; the first: {error}"


def _summarise(reader: SourceReader[Any], *, following: bool = False) -> _Summary:
    """Count the records (and sum the ids of Items). Following, Ctrl-C ends the count: the
    summary says it was interrupted."""
    count = 0
    sum_of_ids: int | None = None
    interrupted = False
    start = time.perf_counter()
    try:
        if reader.record_type is Item:
            sum_of_ids = 0
            for item in reader:
                count += 1
                sum_of_ids += item.id
        else:
            for _record in reader:
                count += 1
    except KeyboardInterrupt:
        if not following:
            raise
        interrupted = True
    summary = _Summary(count, sum_of_ids, seconds=time.perf_counter() - start)
    summary.interrupted = interrupted
    return summary


def _run_default(args: argparse.Namespace) -> int:
    data = pack_items(get_iter(DEFAULT_MESSAGES, DEFAULT_SEED))
    with _reading("<built-in reference stream>", data) as reader:
        print(_summarise(reader).line())
    return 0


def _reader_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "max_record_size": args.max_record_size,
        "on_error": "skip" if args.skip_invalid else "raise",
        "follow": getattr(args, "follow", False),
    }


@dataclasses.dataclass
class _Summary:
    """What ``read`` reports of a source, or of several together."""

    records: int = 0
    sum_of_ids: int | None = None  # of Items only
    bytes: int = 0
    seconds: float = 0.0
    skipped: int = 0
    interrupted = False  # not a field: not reported, not added up

    def add(self, other: _Summary) -> None:
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            setattr(self, field.name, theirs if mine is None else mine + (theirs or 0))

    def line(self) -> str:
        rate = self.records / self.seconds if self.seconds > 0 else float("inf")
        if self.sum_of_ids is not None:
            return (
                f"Read {self.records} messages, sum_of_ids is {self.sum_of_ids} "
                f"in {self.seconds * 1e3:.2f} ms ({rate:,.0f} msg/s)"
            )
        megabytes = self.bytes / self.seconds / 1e6 if self.seconds > 0 else float("inf")
        return (
            f"Read {self.records} records ({self.bytes:,} bytes) in {self.seconds * 1e3:.2f} ms "
            f"({rate:,.0f} records/s, {megabytes:,.1f} MB/s)"
        )


def _run_read(args: argparse.Namespace) -> int:
    typing = _typing(args)
    sources = _sources(args.sources)
    skips = _Skips(typing.label)
    total = _Summary()
    for (name, target), argument in zip(sources, args.sources, strict=True):
        with _reading(name, target, typing, **_reader_options(args)) as reader:
            summary = _summarise(reader, following=args.follow)
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
    return EXIT_INTERRUPTED if summary.interrupted else 0  # only one source is followed


def _report(
    as_json: bool, label: str | None, keys: dict[str, Any], summary: _Summary, sources: int = 1
) -> str:
    if as_json:
        return json.dumps({**keys, **dataclasses.asdict(summary)})
    line = summary.line() + (f" from {sources} sources" if sources > 1 else "")
    return f"{label}: {line}" if label else line


def _run_dump(args: argparse.Namespace) -> int:
    _convert(args, args.format, STDIO, args.limit)
    return 0


def _run_convert(args: argparse.Namespace) -> int:
    result = _convert(args, args.to, args.output, None)
    if args.output != STDIO:
        print(f"Wrote {result} records to {args.output} ({args.to})")
    return 0


def _convert(args: argparse.Namespace, to: Format, output: str, limit: int | None) -> int:
    """Convert every SOURCE into ``output`` (``-``: stdout); the records written."""
    typing = _typing(args)
    sources = _sources(args.sources)
    names = [name for name, _ in sources]
    label = names[0] if len(sources) == 1 else f"{len(sources)} sources"
    sizes = [_size(target) for _, target in sources]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    to_stdout = output == STDIO
    if typing.record_type is not None and to in ("parquet", "arrow"):
        _check_columns(typing.name, typing.record_type, to)

    def hint(exc: ReaderError) -> str:
        if typing.record_type is None and to != "jsonl" and isinstance(exc, RecordError):
            if args.infer_from is not None:
                which = f"the first {args.infer_from} records"
            elif STDIO in args.sources:
                which = f"the first {DEFAULT_SAMPLE} records, stdin being read once"
            else:
                which = "every record when it was read before"  # the file changed since
            return f"; the columns were inferred from {which}: {_GIVE_A_TYPE}"
        return typing.hint(exc)

    mode: Mode = getattr(args, "progress", "never")
    with _progress(mode, label, total, unit="bytes") as progress:
        try:
            with (
                _phrased(label, hint),
                contextlib.nullcontext(sys.stdout.buffer)
                if to_stdout
                else replacing(output) as out,
            ):
                result = convert(
                    [target for _, target in sources],
                    out,
                    to,
                    record_type=typing.record_type,
                    ext_hook=typing.ext_hook,
                    limit=limit,
                    allow_nan=args.allow_nan,
                    **_inference(args),
                    max_record_size=args.max_record_size,
                    on_error="skip" if args.skip_invalid else "raise",
                    progress=progress,
                    follow=getattr(args, "follow", False),
                    force=args.force,
                )
                # Inside the block: a run that found no record leaves no output file behind.
                skips = _Skips(typing.label)
                skips.add(label, result.skipped, result.errors)
                skips.report(result.records, names)
                if to_stdout:
                    _flush_stdout()
        except MissingExtraError as exc:
            raise _Failure(f"--to {to}: {exc}") from exc
        except InferenceError as exc:
            raise _Failure(
                f"{label}: cannot infer columns for {to}: {exc}; {_GIVE_A_TYPE}"
            ) from exc
    return result.records


def _check_columns(name: str, record_type: Any, to: Format) -> None:
    """Refuse a record type with fields Arrow has no column type for, as a usage error."""
    try:
        from .arrow import arrow_schema

        arrow_schema(record_type)
    except MissingExtraError as exc:
        raise _Failure(f"--to {to}: {exc}") from exc
    except TypeError as exc:
        raise _UsageFailure(f"--type {name}: {exc}") from None


_GIVE_A_TYPE = "give a record type with --type (msgpack-reader schema SOURCE prints one to edit)"


def _run_schema(args: argparse.Namespace) -> int:
    sources = _sources(args.sources)
    names = [name for name, _ in sources]
    label = names[0] if len(sources) == 1 else ", ".join(names)
    try:
        with _phrased(label):
            _, schema = infer_sources(
                [target for _, target in sources],
                ext_hook=fluentd_event_time if args.fluentd else None,
                max_record_size=args.max_record_size,
                force=args.force,
                **_inference(args),
            )
    except InferenceError as exc:
        raise _Failure(f"{label}: cannot infer a record type: {exc}") from exc
    if schema.checked is not None:
        note = f" from the {schema.checked} records of {label}"
    else:
        note = f" from the first {schema.records} records of {label}"
    if args.fluentd:
        note += " (read it with --fluentd)"
    sys.stdout.write(schema.source(args.format, note=note))
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
