"""What every command shares: exit statuses, argument types, the reading options as flags,
``--type``, and turning the library's failures into one line for the user."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import io
import os
import stat
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from .._analysis.inferred import spool_limit_text
from .._base.errors import ReaderError, RecordError, RecordTooLargeError
from .._base.ext import fluentd_event_time
from .._base.extras import OLDEST, MissingExtraError, check_version, require
from .._base.options import DEFAULT_MAX_RECORD_SIZE, DEFAULT_READ_SIZE, ReadOptions
from .._output.progress import MODES, Mode, ProgressUnavailable, Update, progress_bar
from .._readers.streaming_reader import RowBatches, SourceReader, StreamingReader
from .._readers.values import ValueReader
from .._reference.model import Item
from .._split.parallel import worker_count
from .._split.ranges import splittable
from .._stream.delivery import FORCE
from .._stream.sources import Source
from .._types.decoding import record_decoder
from .._types.names import TypeNotFound, record_type_named
from .._types.record_type import type_label

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

DEFAULT_MESSAGES = 10000


EXIT_DATA_ERROR = 1


EXIT_USAGE = 2


EXIT_INTERRUPTED = 130


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a Unix tool killed by a closed pipe reports


STDIO = "-"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``error: ...`` line like every other failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


class Failure(Exception):
    """A failure already phrased for the user: ``error: <source>: <message>``."""

    status = EXIT_DATA_ERROR


class UsageFailure(Failure):
    """A bad argument found after parsing (a ``--type`` that names no record type)."""

    status = EXIT_USAGE


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def paragraph(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=78)


EXIT_STATUSES = """\
exit status:
  0    success
  1    bad data or an I/O error: one line, error: <source>: <what and where>
  2    a usage error (a bad option or argument)
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM); as on Ctrl-C, no half-written output file is left
  129  hung up (SIGHUP: the terminal closed); as on SIGTERM
  141  stdout was closed early (e.g. piped into head); nothing more is printed"""


SOURCES_HELP = (
    "one or more files, or - for stdin, read in turn; gzip, bzip2, xz (and zstd, with the "
    "'zstd' extra) are decompressed on the fly"
)


TYPE_HELP = (
    "the record type: item (the built-in Item), any (no type: every value as it is), or "
    "MODULE:NAME, MODULE an importable module or the path of a .py file and NAME a "
    "dataclass, attrs class, NamedTuple, TypedDict or msgspec.Struct in it, or a union of "
    "them (Event = Click | Key)"
)


def command(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A command's parser, its help and exit statuses laid out as every command's are."""
    made: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=paragraph(description),
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return made


def reader_options(sub: argparse.ArgumentParser, default_type: str | None) -> None:
    """The SOURCE arguments and the reading options (:class:`~..options.ReadOptions`), and
    ``--type`` with ``default_type`` (``None``: the command takes no record type)."""
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
            "--forbid-unknown-keys",
            action="store_true",
            help="refuse a map-shaped record (at any depth) with a key that names no field "
            "(default: off, such keys are ignored)",
        )
        sub.add_argument(
            "--forbid-repeated-keys",
            action="store_true",
            help="refuse a record with a map (at any depth) that names a key twice (default: "
            "off, the key's last value is read and the earlier lost, as every MessagePack "
            "decoder reads such a map; records made of maps take about half as long again to "
            "read, three times as long untyped)",
        )
    else:
        sub.set_defaults(forbid_unknown_keys=False, forbid_repeated_keys=False)
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
        type=positive_int,
        default=DEFAULT_MAX_RECORD_SIZE,
        metavar="BYTES",
        help="refuse any record larger than this many bytes (default: %(default)s, 100 MiB)",
    )
    sub.add_argument(
        "--read-size",
        type=positive_int,
        default=DEFAULT_READ_SIZE,
        metavar="BYTES",
        help="the most bytes asked of a source in one read (default: %(default)s, 64 KiB)",
    )
    sub.add_argument(
        "--no-decompress",
        action="store_true",
        help="read compressed input as it is (default: gzip, bzip2, xz and, with the 'zstd' "
        "extra, zstd are decompressed on the fly)",
    )


def infer_from(text: str) -> int | Literal["all"]:
    """``--infer-from``'s value: a positive integer, or ``all``."""
    if text == "all":
        return "all"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer or all, got {text!r}"
        ) from None


def infer_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--infer-from",
        type=infer_from,
        default=None,
        metavar="N|all",
        help="which records the record type is inferred from: N, the first N only (a later "
        "record that does not fit it is an error naming it); all, every record, stdin kept "
        "whole in a temporary file (default: every record of each file; of stdin, which is "
        f"read once, the records of its first {spool_limit_text()}, kept in a "
        "temporary file, and a later record that does not fit is an error naming it). "
        "Nothing is ever dropped: the types refuse any key, element or value they do not "
        "hold",
    )
    command.add_argument(
        "--flat",
        action="store_true",
        help="one record type for every record, where records of several kinds (told apart "
        "by a key such as type, kind or event) would each get their own type, Record being "
        "their union (default: off)",
    )


def inference(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--infer-from`` and ``--flat`` ask of an inference."""
    return {"infer_from": args.infer_from, "flat": args.flat}


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


def jobs_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "-j",
        "--jobs",
        type=non_negative_int,
        default=1,
        metavar="N",
        help="read each file on N processes (0: one per core), in byte ranges whose first "
        "records are guessed from --type and then proved, so that the result is exactly that "
        "of one process, errors included; stdin, compressed files (but zstd files of frames "
        "that declare their sizes) and --type any are read on one process, with a note "
        "(default: %(default)s)",
    )


def split_or_note(name: str, target: Source, typed: Typing, options: ReadOptions, jobs: int) -> int:
    """How many processes read ``target``: ``jobs`` where it can be split, else 1, with a
    note on stderr saying why not."""
    if jobs == 1:
        return 1
    why = splittable(target, typed.record_type, options)
    if why is None:
        return worker_count(jobs)
    print(f"note: {name}: read on one process: {why}", file=sys.stderr)
    return 1


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


def sources_of(arguments: Sequence[str]) -> list[tuple[str, Source]]:
    """The name to show and the thing to read for each SOURCE argument (``-`` is stdin)."""
    return [("<stdin>", sys.stdin.buffer) if a == STDIO else (a, a) for a in arguments]


def data_error(name: str, exc: ReaderError, hint: str = "") -> Failure:
    """The error line for a data error: its source (once), location and reason."""
    return Failure(str(for_the_command_line(exc, exc.source or name)) + hint)


def for_the_command_line(exc: ReaderError, source: str | None) -> ReaderError:
    """``exc`` naming ``source``, and the flag where the library's message names its keyword."""
    reason = exc.reason.replace(FORCE, "--force").replace("decompress=False", "--no-decompress")
    reason = reason.replace("infer_from='all'", "--infer-from all")
    reason = reason.replace("(forbid_repeated_keys)", "(--forbid-repeated-keys)")
    if isinstance(exc, RecordTooLargeError):
        reason = reason.replace("max_record_size", "--max-record-size")
    return type(exc)(reason, index=exc.index, offset=exc.offset, source=source)


def io_error(name: str, exc: OSError) -> Failure:
    where = exc.filename if exc.filename is not None else name
    return Failure(f"{where}: {exc.strerror or exc}")


@dataclasses.dataclass(frozen=True)
class Typing:
    """What ``--type`` and ``--fluentd`` ask of a command's readers."""

    name: str
    record_type: Any  # None: untyped (any)
    fluentd: bool = False
    force: bool = False  # untyped: read what looks foreign

    @property
    def label(self) -> str:
        """How messages name the records: ``Item``, ``Record``, ``record``."""
        return "record" if self.record_type is None else type_label(self.record_type)

    def hint(self, exc: ReaderError) -> str:
        """What to try when records are not Items: most streams are not."""
        if isinstance(exc, RecordError) and self.record_type is Item:
            return (
                "; if the stream does not hold Items, look at it with --type any, or get a "
                "record type for it from: msgpack-reader schema SOURCE"
            )
        return ""

    def reader(
        self, target: Source, options: ReadOptions, *, rows: bool = False
    ) -> SourceReader[Any]:
        """A reader of ``target``'s records; with ``rows``, of batches of them: checked rows
        (:class:`~.._readers.streaming_reader.RowBatches`), or untyped values."""
        if self.record_type is None:
            return ValueReader(target, batches=rows, force=self.force, options=options)
        if rows:
            return RowBatches(target, self.record_type, options)
        return StreamingReader(target, self.record_type, options=options)


ITEM = Typing("item", Item)


def typing_of(args: argparse.Namespace) -> Typing:
    name = getattr(args, "type", "any")
    try:
        record_type = record_type_named(name)
        if record_type is not None:
            record_decoder(record_type)  # refuses field types no record can hold
    except (TypeNotFound, TypeError) as exc:
        raise UsageFailure(f"--type {name}: {exc}") from None
    return Typing(name, record_type, args.fluentd, args.force)


@contextmanager
def phrased(name: str, hint: Callable[[ReaderError], str] = lambda _: "") -> Iterator[None]:
    """Bad data and I/O errors while reading ``name`` as one line for the user; ``hint``
    says what to try for a data error."""
    try:
        yield
    except ReaderError as exc:
        raise data_error(name, exc, hint(exc)) from exc
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise io_error(name, exc) from exc


@contextmanager
def reading(
    name: str, target: Source, options: ReadOptions, typed: Typing = ITEM, *, rows: bool = False
) -> Iterator[SourceReader[Any]]:
    """Read ``target`` (shown as ``name``), its records or (``rows``) batches of them; phrase
    any failure for the user."""
    with phrased(name, typed.hint), typed.reader(target, options, rows=rows) as reader:
        yield reader


class Skips:
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
                raise Failure(f"{where}: {skipped_text(count, first, named=False)}")
            where = f"no record of type {self._label} found in {', '.join(names)}"
            raise Failure(f"{where}: {skipped_text(count, first, named=True)}")
        for name, count, first in self._sources:
            print(
                f"{name}: {skipped_text(count, first, named=name != first.source)}", file=sys.stderr
            )


def skipped_text(count: int, first: ReaderError, *, named: bool) -> str:
    """``skipped N invalid records; the first: <located error>``, its source ``named`` or not."""
    plural = "s" if count != 1 else ""
    error = for_the_command_line(first, first.source if named else None)
    return f"skipped {count} invalid record{plural}; the first: {error}"


def read_options(args: argparse.Namespace) -> ReadOptions:
    """The reading options the command line's flags ask for (:func:`reader_options`)."""
    return ReadOptions(
        ext_hook=fluentd_event_time if args.fluentd else None,
        forbid_unknown_keys=args.forbid_unknown_keys,
        forbid_repeated_keys=args.forbid_repeated_keys,
        max_record_size=args.max_record_size,
        read_size=args.read_size,
        on_error="skip" if getattr(args, "skip_invalid", False) else "raise",
        decompress=not args.no_decompress,
        follow=getattr(args, "follow", False),
    )


_NEEDS = {"arrow": ("pyarrow",), "duckdb": ("duckdb", "pyarrow")}
"""What the command line's features of an extra import (the rest of it, tqdm and pandas,
only lends them a progress bar and DataFrames)."""


def require_extra(feature: str, extra: str) -> None:
    """Fail at once, naming every package ``feature`` (of the ``extra`` extra) needs that is
    not installed, or installed in a release too old to give right answers."""
    try:
        require(feature, extra, *_NEEDS[extra])
        if PROCESS.is_command:
            _start_arrow()
        for name in _NEEDS[extra]:
            if name in OLDEST:
                module = importlib.import_module(name)
                check_version(name, module.__version__, feature, extra)
    except MissingExtraError as exc:
        raise Failure(str(exc)) from None


@dataclasses.dataclass
class _Process:
    """Whether this process is the program's (:func:`~msgpack_reader_py.cli.program`: the
    console script, ``python -m``), not a program of its own that calls
    :func:`~msgpack_reader_py.cli.main`: only then is the process's pyarrow the command
    line's to set up, as the process ends with the command."""

    is_command: bool = False


PROCESS = _Process()


def _start_arrow() -> None:
    """Start pyarrow in this process as if numpy and pandas were not installed (where the
    process is the program's: :data:`PROCESS`); none of the command line's work gives pyarrow
    an array of numpy's or asks it for one.

    pyarrow imports numpy as it starts (0.06-0.1 s, more than pyarrow itself takes), and
    pandas on the first array it builds (0.3-0.4 s: to ask whether the values are a pandas
    Series), on every command that writes Arrow or Parquet or runs a query, and in each of
    its workers, which start with this process's state. pyarrow 18 and later take numpy as
    optional: without it they build, write and read every column the command line does;
    what needs numpy (``to_numpy``, ``to_pandas``, which then crashes the process) the
    program, which ends with the command, never asks for. numpy and pandas stay importable:
    DuckDB imports numpy when it runs a query, and its OpenBLAS is then asked for one thread,
    not a thread per core spinning for 0.1 s of CPU time taken from the conversion's own
    threads and workers (``OPENBLAS_NUM_THREADS``, unless set). Should numpy come first, with
    a user's module, pyarrow takes it as it is.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Where pyarrow is imported already (by a user's module), pandas may still be spared.
    hidden = _Absent(*(name for name in ("numpy", "pandas") if name not in sys.modules))
    sys.meta_path.insert(0, hidden)
    try:
        import pyarrow as pa

        pa.array([], pa.null())
    finally:
        sys.meta_path.remove(hidden)


class _Absent:
    """Imports of some packages fail as they do where they are not installed: a finder of
    :data:`sys.meta_path` (by its ``find_spec``; ``importlib.abc``, 13 ms to import, is not
    needed for that)."""

    def __init__(self, *names: str) -> None:
        self._names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if fullname.partition(".")[0] in self._names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None  # the other finders look for it


GIVE_A_TYPE = "give a record type with --type (msgpack-reader schema SOURCE prints one to edit)"


def flush_stdout() -> None:
    """Flush what is still buffered for stdout, naming stdout if that fails (a full disk)."""
    try:
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        exc.filename = exc.filename or "<stdout>"
        raise


def size_of(source: Source) -> int | None:
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
def progress_of(
    mode: Mode, label: str, total: int | None, *, unit: Literal["bytes", "records"]
) -> Iterator[Update | None]:
    """:func:`progress_bar`, with a missing tqdm under ``always`` as one error line."""
    try:
        with progress_bar(mode, label, total, unit=unit) as update:
            yield update
    except ProgressUnavailable as exc:
        raise Failure(f"--progress {mode}: {exc}") from None
