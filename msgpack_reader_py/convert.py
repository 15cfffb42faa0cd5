"""Convert a record stream to Parquet, Arrow IPC, CSV or JSON Lines, without half-written files.

Parquet and Arrow need the ``arrow`` extra; CSV and JSON Lines need nothing beyond the core.
A destination path is written through a temporary file beside it, renamed into place only
when the whole stream has been converted: a failure leaves nothing under the final name.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import operator
import os
import secrets
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import IO, TYPE_CHECKING, Any, Literal

from .decoder import KEPT_ERRORS, Batches, Plan
from .engine import ExtHook
from .errors import RecordError
from .infer import InferenceError, Schema
from .inferred import infer_sources
from .model import Item
from .schema import RecordSchema, members, record_schema
from .streaming_reader import (
    DEFAULT_MAX_RECORD_SIZE,
    DEFAULT_READ_SIZE,
    OnError,
    Source,
    SourceReader,
    chained,
    check_on_error,
)
from .values import JsonLines, ValueReader, text_cell

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = [
    "FORMATS",
    "Conversion",
    "CsvRows",
    "Format",
    "convert",
    "replacing",
]

Format = Literal["parquet", "arrow", "csv", "jsonl"]
FORMATS: tuple[Format, ...] = ("parquet", "arrow", "csv", "jsonl")

Progress = Callable[[int, int], None]
"""Called as ``progress(records_written, source_bytes_read)`` after each batch."""


class CsvRows:
    """CSV with a header row of field names; ``None`` is an empty cell.

    ``text_fields`` are the positions of ``str`` fields. Before Python 3.13 the csv module
    quotes a value for a line break only if it holds a character of the line terminator
    (``"\n"`` here), so a value with a lone ``"\r"`` would end the row early for every CSV
    reader; there, such rows are written fully quoted. Checking costs a few C-level passes over
    each 4096 rows.
    """

    _CHECKED = 4096

    def __init__(self, out: IO[str], names: Sequence[str], text_fields: Sequence[int] = ()) -> None:
        self._writer = csv.writer(out, lineterminator="\n")
        self._quote_all = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
        self._text = [operator.itemgetter(i) for i in text_fields]
        if sys.version_info >= (3, 13):
            self._text = []
        self._writer.writerow(names)

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        """Write each row of field values, in field order."""
        if not self._text:
            self._writer.writerows(rows)
            return
        rows = iter(rows)
        while True:
            batch: list[Sequence[Any]] = []
            try:
                batch.extend(itertools.islice(rows, self._CHECKED))
            finally:  # the rows before a failing one are written, as writerows would
                self._write_checked(batch)
            if len(batch) < self._CHECKED:
                return

    def _write_checked(self, batch: list[Sequence[Any]]) -> None:
        if not any("\r" in "".join(filter(None, map(get, batch))) for get in self._text):
            self._writer.writerows(batch)
            return
        for row in batch:
            carriage = any(isinstance(value, str) and "\r" in value for value in row)
            (self._quote_all if carriage else self._writer).writerow(row)


@dataclasses.dataclass(frozen=True)
class Conversion:
    """What :func:`convert` wrote and passed over."""

    records: int
    """Records written."""
    skipped: int = 0
    """Records ``on_error="skip"`` passed over."""
    errors: list[RecordError] = dataclasses.field(default_factory=list)
    """The first 100 of them, in order, each naming its source where the reader knew one."""
    inferred: Schema | None = None
    """The record types inferred for an untyped conversion to a table format."""


def convert(
    source: Source | list[Source] | tuple[Source, ...],
    destination: str | os.PathLike[str] | IO[bytes] | io.RawIOBase,
    to: Format,
    *,
    record_type: Any = Item,
    ext_hook: ExtHook | None = None,
    limit: int | None = None,
    allow_nan: bool = False,
    sample: int | None = None,
    whole: bool = True,
    kinds: bool = True,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    on_error: OnError = "raise",
    progress: Progress | None = None,
    follow: bool = False,
    force: bool = False,
) -> Conversion:
    """Convert the records of ``source`` to the format ``to``; say how many were written.

    ``source`` is anything :class:`~msgpack_reader_py.StreamingReader` reads, or a list or
    tuple of such sources, read in turn into the one output. ``destination`` is a path,
    written atomically (see the module's docstring), or a binary stream, written as records
    arrive and left open. Records are checked against ``record_type`` as
    :class:`~msgpack_reader_py.StreamingReader` checks them; broken data raises the reader's
    :class:`~msgpack_reader_py.errors.ReaderError` (its ``source`` naming the source, where
    the reader knows a name), after every record before it was written to a stream.
    ``on_error="skip"`` passes over records that are not records of the type instead, and
    counts them in the result. ``progress``, if given, is called with the records written and
    the bytes taken from the sources so far (compressed bytes, for a compressed source: what a
    file's size counts) after each batch.

    ``record_type=None`` reads records untyped (:mod:`~msgpack_reader_py.values`): JSON Lines
    writes each as the value it is; CSV, Parquet and Arrow need columns, so a record type is
    inferred (:func:`~msgpack_reader_py.inferred.infer_sources`) and
    :attr:`Conversion.inferred` holds it: from the first ``sample`` records (by default a
    hundred where the rest is checked, else a thousand), then, with
    ``whole`` (the default) and sources that can be read again (paths, bytes), checked against
    every record and widened by any that does not fit, so that no value is ever dropped;
    ``kinds=False`` merges records of several kinds into one type. The sources are read again
    from their start, a stream from the bytes kept while sampling. The types refuse what they
    never saw: in a stream read once (stdin), a later record with a key or a type the first
    records did not show is a located ``RecordError`` naming it. ``ext_hook`` is the reader's;
    untyped,
    :func:`~msgpack_reader_py.ext.fluentd_event_time` keeps EventTime's nanoseconds.
    Read untyped, a source whose first bytes look like something other than MessagePack (JSON,
    text, Parquet, ...) is refused, as :class:`~msgpack_reader_py.values.ValueReader` says;
    ``force=True`` reads it anyway.
    ``limit`` stops after that many records, reading no further. ``follow`` follows the
    (last) source as the reader's ``follow=True`` does, until ``KeyboardInterrupt`` or
    ``limit``; the records to infer a type from are those the file holds when it starts.
    A stream destination is flushed after each batch, so that what was read is there to see.

    Formats: ``parquet`` (one row group per batch of up to 65536 records), ``arrow`` (the
    Arrow IPC file format, also known as Feather v2), ``csv`` (a header row, then one row per
    record; a value that is not a number or text is its JSON text), ``jsonl`` (one JSON value
    per line: a record is an object keyed by field name). JSON is written as
    :mod:`~msgpack_reader_py.values` describes; ``allow_nan`` writes NaN and the infinities
    as Python's ``json`` does instead of ``null``.
    """
    if to not in FORMATS:
        raise ValueError(f"to must be one of {', '.join(FORMATS)}; got {to!r}")
    check_on_error(on_error)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    options = _Options(max_record_size, on_error, ext_hook, force)
    inferred = None
    if record_type is None and to != "jsonl":
        sources, inferred = infer_sources(
            sources,
            sample,
            whole=whole,
            kinds=kinds,
            ext_hook=ext_hook,
            max_record_size=max_record_size,
            on_error=on_error,
            force=force,
        )
        mixed = [*inferred.mixed, *inferred.conflicts]
        if to in ("parquet", "arrow") and mixed:
            raise InferenceError(
                f"{to} needs one type per column, and in {_which(inferred)} "
                f"{'; '.join(mixed)} hold values of types that do not mix"
            )
        # Structs that refuse unknown keys: a record the inference never saw is no record.
        record_type = inferred.record_type("struct", checked=True, columns=True)
    job = _Job(sources, to, record_type, options, limit, allow_nan, progress, follow)
    if isinstance(destination, (str, os.PathLike)):
        with replacing(destination) as out:
            done = job.run(out)
    else:
        done = job.run(_Named(destination, str(getattr(destination, "name", "<output>"))))
    return dataclasses.replace(done, inferred=inferred)


def _which(inferred: Schema) -> str:
    """Which records a record type was inferred from, for a message."""
    if inferred.checked is not None:
        return f"the {inferred.checked} records"
    return f"the first {inferred.records} records"


@dataclasses.dataclass(frozen=True)
class _Options:
    """The reader options every source of a conversion is read with."""

    max_record_size: int
    on_error: OnError
    ext_hook: ExtHook | None
    force: bool = False

    def values(self, source: Source, *, batches: bool, follow: bool = False) -> ValueReader:
        """An untyped reader of ``source``."""
        return ValueReader(
            source,
            ext_hook=self.ext_hook,
            batches=batches,
            max_record_size=self.max_record_size,
            on_error=self.on_error,
            follow=follow,
            force=self.force,
        )


@dataclasses.dataclass(frozen=True)
class _Job:
    """One conversion: every source in turn, through one writer, counted and reported."""

    sources: list[Source]
    to: Format
    record_type: Any  # None: untyped values (JSON Lines only)
    options: _Options
    limit: int | None
    allow_nan: bool
    progress: Progress | None
    follow: bool = False  # the last source

    def _batches(self, source: Source, follow: bool) -> SourceReader[Any]:
        """Batches of one source: Arrow columns, checked tuples, or untyped values."""
        options = self.options
        if self.record_type is None:
            return options.values(source, batches=True, follow=follow)
        if self.to in ("parquet", "arrow"):
            from .arrow import BatchReader

            return BatchReader(
                source,
                self.record_type,
                ext_hook=options.ext_hook,
                max_record_size=options.max_record_size,
                on_error=options.on_error,
                follow=follow,
            )
        return _TextBatches(source, self.record_type, options, follow)

    def run(self, out: _Named) -> Conversion:
        output: AbstractContextManager[Callable[[Any], None]]
        if self.to in ("parquet", "arrow"):
            from .arrow import arrow_schema

            assert self.record_type is not None
            output = _columns_out(out, self.to, arrow_schema(self.record_type))
        else:
            output = _text_out(out, self.to, self.record_type, self.allow_nan)
        written = skipped = read_before = 0
        errors: list[RecordError] = []
        left = self.limit
        with output as write:
            for number, source in enumerate(self.sources, 1):
                if left == 0:
                    break
                follow = self.follow and number == len(self.sources)
                with self._batches(source, follow) as batches:
                    for batch in batches:
                        if left is not None and len(batch) >= left:
                            batch = batch[:left]
                        write(batch)
                        written += len(batch)
                        if self.progress is not None:
                            self.progress(written, read_before + batches.source_bytes_read)
                        if left is not None:
                            left -= len(batch)
                            if left == 0:
                                break
                    read_before += batches.source_bytes_read
                    skipped += batches.skipped
                    errors.extend(batches.errors[: KEPT_ERRORS - len(errors)])
        return Conversion(written, skipped, errors)


@contextmanager
def _columns_out(out: _Named, to: Format, schema: pa.Schema) -> Iterator[Callable[[Any], None]]:
    """Write Arrow batches as Parquet (a row group each) or as an Arrow IPC file."""
    sink: Any = out  # any binary file object: pyarrow wraps it
    if to == "parquet":
        import pyarrow.parquet as pq

        writer: Any = pq.ParquetWriter(sink, schema)
    else:
        import pyarrow as pa

        writer = pa.ipc.new_file(sink, schema)
    try:
        yield writer.write_batch
    finally:
        writer.close()


class _TextBatches(SourceReader[list[Any]]):
    """The text formats' reader: its items are batches of checked records, each a tuple of
    field values."""

    def __init__(
        self, source: Source, record_type: Any, options: _Options, follow: bool = False
    ) -> None:
        self._records = chained(
            self._open(
                source,
                record_type,
                Plan(record_type, convert=Batches(), ext_hook=options.ext_hook),
                on_error=options.on_error,
                max_record_size=options.max_record_size,
                read_size=DEFAULT_READ_SIZE,
                decompress=True,
                follow=follow,
            )
        )


@contextmanager
def _text_out(
    out: _Named, to: Format, record_type: Any, allow_nan: bool
) -> Iterator[Callable[[Any], None]]:
    """Write batches of records (tuples of field values, or untyped values) as text, each
    batch flushed: a batch is a read's records, and a reader of the output (a pipe, a
    terminal) sees them as they are read, not when a buffer fills."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    write: Callable[[Any], None]
    try:
        if record_type is None:
            write = JsonLines(text, allow_nan=allow_nan).write
        else:
            schema = record_schema(record_type)
            if to == "jsonl":
                kinds = schema.own_columns()
                write = JsonLines(text, schema.names, allow_nan=allow_nan, kinds=kinds).write
            else:
                write = _cells(schema, CsvRows(text, schema.names, schema.text_fields()).write)

        def flushed(batch: Any) -> None:
            write(batch)
            text.flush()

        yield flushed
        text.flush()
    finally:
        text.detach()  # the stream is the caller's (or replacing's) to close


def _cells(schema: RecordSchema, write: Callable[[Any], None]) -> Callable[[Any], None]:
    """``write`` of CSV rows, with each field that is not text, a number or a bool as the text
    JSON gives it (``bytes`` as base64)."""
    plain = (str, int, float, bool, type(None))
    rendered = [p for p, a in enumerate(schema.annotations) if members(a)[0] not in plain]
    if not rendered:
        return write

    def write_cells(rows: list[Sequence[Any]]) -> None:
        cells = [list(row) for row in rows]
        for row in cells:
            for position in rendered:
                row[position] = text_cell(row[position])
        write(cells)

    return write_cells


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[_Named]:
    """A new binary file that replaces ``path`` when the block succeeds, and vanishes if it
    fails (an exception, ``KeyboardInterrupt`` included, leaves ``path`` as it was).

    It is written beside ``path`` under a temporary name and renamed into place at the end. An
    ``OSError`` from it names ``path``, never the temporary file the user has not heard of.
    """
    target = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(target))
    try:
        handle, temporary = _create_beside(directory, name)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, target) from exc
    try:
        with os.fdopen(handle, "wb") as out:
            yield _Named(out, target)
        try:
            os.replace(temporary, target)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, target) from exc
    except BaseException:
        os.unlink(temporary)
        raise


def _create_beside(directory: str, name: str) -> tuple[int, str]:
    """A new, empty file in ``directory``: its descriptor and path.

    Created with mode 0666 so that the process's umask decides its permissions, as for any
    new file (``tempfile.mkstemp`` would make it 0600); the random name makes it exclusive.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    while True:
        temporary = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.part")
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:  # pragma: no cover - 2**32 names: a collision is a fluke
            continue


class _Named(io.RawIOBase):
    """A binary output whose ``OSError``s name it: a full disk is blamed on the output, not on
    the source being read."""

    def __init__(self, out: IO[bytes] | io.RawIOBase, name: str) -> None:
        super().__init__()
        self._out = out
        self._closing = False
        self.name = name

    def writable(self) -> bool:
        return True

    def write(self, data: Any, /) -> int:
        try:
            written = self._out.write(data)
        except OSError as exc:
            self._name(exc)
            raise
        return len(data) if written is None else written

    def flush(self) -> None:
        if self._closing:
            return  # the wrapped stream is its owner's to flush and close
        try:
            self._out.flush()
        except OSError as exc:
            self._name(exc)
            raise

    def close(self) -> None:
        self._closing = True
        super().close()

    def _name(self, exc: OSError) -> None:
        if exc.filename is None:
            exc.filename = self.name
