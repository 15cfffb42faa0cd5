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
import json
import operator
import os
import secrets
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import IO, TYPE_CHECKING, Any, Literal, Protocol

from .decoder import KEPT_ERRORS, Plan
from .errors import RecordError
from .model import Item
from .schema import RecordSchema
from .streaming_reader import (
    DEFAULT_MAX_RECORD_SIZE,
    DEFAULT_READ_SIZE,
    OnError,
    Source,
    SourceReader,
    check_on_error,
)

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = [
    "FORMATS",
    "Conversion",
    "CsvRows",
    "Format",
    "JsonRows",
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


class JsonRows:
    """JSON Lines: one object per record, keyed by field name, non-ASCII kept as is."""

    def __init__(self, out: IO[str], names: Sequence[str]) -> None:
        self._write = out.write
        self._names = tuple(names)
        self._encode = json.JSONEncoder(ensure_ascii=False).encode

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        """Write each row of field values, in field order."""
        names, encode, write = self._names, self._encode, self._write
        for values in rows:
            write(encode(dict(zip(names, values, strict=True))) + "\n")


class _Rows(Protocol):
    def write(self, rows: Iterable[Sequence[Any]]) -> None: ...


@dataclasses.dataclass(frozen=True)
class Conversion:
    """What :func:`convert` wrote and passed over."""

    records: int
    """Records written."""
    skipped: int = 0
    """Records ``on_error="skip"`` passed over."""
    errors: list[RecordError] = dataclasses.field(default_factory=list)
    """The first 100 of them, in order, each naming its source where the reader knew one."""


def convert(
    source: Source | list[Source] | tuple[Source, ...],
    destination: str | os.PathLike[str] | IO[bytes] | io.RawIOBase,
    to: Format,
    *,
    record_type: type[Any] = Item,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    on_error: OnError = "raise",
    progress: Progress | None = None,
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

    Formats: ``parquet`` (one row group per batch of up to 65536 records), ``arrow`` (the
    Arrow IPC file format, also known as Feather v2), ``csv`` (a header row, then one row per
    record), ``jsonl`` (one JSON object per line). CSV and JSON Lines cannot hold ``bytes``
    fields: such a record type raises ``TypeError``.
    """
    if to not in FORMATS:
        raise ValueError(f"to must be one of {', '.join(FORMATS)}; got {to!r}")
    check_on_error(on_error)
    schema = RecordSchema(record_type)
    if to in ("csv", "jsonl") and schema.holds_bytes():
        raise TypeError(f"{to} cannot hold the bytes fields of {record_type!r}; use parquet")
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    job = _Job(sources, to, schema, max_record_size, on_error, progress)
    if isinstance(destination, (str, os.PathLike)):
        with replacing(destination) as out:
            return job.run(out)
    return job.run(_Named(destination, str(getattr(destination, "name", "<output>"))))


@dataclasses.dataclass(frozen=True)
class _Job:
    """One conversion: every source in turn, through one writer, counted and reported."""

    sources: list[Source]
    to: Format
    schema: RecordSchema
    max_record_size: int
    on_error: OnError
    progress: Progress | None

    def _batches(self, source: Source) -> SourceReader[Any]:
        """Batches of one source: Arrow columns, or the checked tuples for the text formats."""
        if self.to in ("parquet", "arrow"):
            from .arrow import BatchReader

            return BatchReader(
                source,
                self.schema.record_type,
                max_record_size=self.max_record_size,
                on_error=self.on_error,
            )
        return _TextBatches(source, self.schema.record_type, self.max_record_size, self.on_error)

    def run(self, out: _Named) -> Conversion:
        output: AbstractContextManager[Callable[[Any], None]]
        if self.to in ("parquet", "arrow"):
            from .arrow import arrow_schema

            output = _columns_out(out, self.to, arrow_schema(self.schema.record_type))
        else:
            output = _text_out(out, self.to, self.schema)
        written = skipped = read_before = 0
        errors: list[RecordError] = []
        with output as write:
            for source in self.sources:
                with self._batches(source) as batches:
                    for batch in batches:
                        write(batch)
                        written += len(batch)
                        if self.progress is not None:
                            self.progress(written, read_before + batches.source_bytes_read)
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
        self, source: Source, record_type: Any, max_record_size: int, on_error: OnError
    ) -> None:
        self._records = self._start(
            source,
            record_type,
            Plan(record_type, convert=_Tuples()),
            on_error=on_error,
            max_record_size=max_record_size,
            read_size=DEFAULT_READ_SIZE,
            decompress=True,
        )


class _Tuples:
    """The reader's batch converter for the text path: the checked tuples as they are."""

    refusals: tuple[type[Exception], ...] = ()

    def __call__(self, values: list[Any], /) -> list[Any]:
        return values

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:  # pragma: no cover
        return None  # refuses nothing: never asked


@contextmanager
def _text_out(out: _Named, to: Format, schema: RecordSchema) -> Iterator[Callable[[Any], None]]:
    """Write batches of field values (lists of tuples) as CSV or JSON Lines."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    try:
        names = schema.names
        rows: _Rows = (
            CsvRows(text, names, schema.text_fields()) if to == "csv" else JsonRows(text, names)
        )
        yield rows.write
        text.flush()
    finally:
        text.detach()  # the stream is the caller's (or replacing's) to close


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
