"""Convert a record stream to Parquet, Arrow IPC, CSV or JSON Lines, without half-written files.

Parquet and Arrow need the ``arrow`` extra; CSV and JSON Lines need nothing beyond the core.
A destination path is written through a temporary file beside it, renamed into place only
when the whole stream has been converted: a failure leaves nothing under the final name.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any, Literal, Protocol

from .model import Item
from .schema import RecordSchema
from .streaming_reader import DEFAULT_MAX_RECORD_SIZE, DEFAULT_READ_SIZE, Source, StreamingReader

__all__ = ["FORMATS", "CsvRows", "Format", "JsonRows", "convert"]

Format = Literal["parquet", "arrow", "csv", "jsonl"]
FORMATS: tuple[Format, ...] = ("parquet", "arrow", "csv", "jsonl")

Progress = Callable[[int, int], None]
"""Called as ``progress(records_written, bytes_read)`` after each batch."""


class CsvRows:
    """CSV with a header row of field names; ``None`` is an empty cell."""

    def __init__(self, out: IO[str], names: Sequence[str]) -> None:
        self._writer = csv.writer(out, lineterminator="\n")
        self._writer.writerow(names)

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        """Write each row of field values, in field order."""
        self._writer.writerows(rows)


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


def convert(
    source: Source,
    destination: str | os.PathLike[str] | IO[bytes],
    to: Format,
    *,
    record_type: type[Any] = Item,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    progress: Progress | None = None,
) -> int:
    """Convert the records of ``source`` to the format ``to``; return how many were written.

    ``destination`` is a path, written atomically (see the module's docstring), or a binary
    stream, written as records arrive and left open. Records are validated against
    ``record_type`` as ``StreamingReader(..., validate=True)`` does; broken data raises the
    reader's :class:`~msgpack_reader_py.errors.ReaderError`. ``progress``, if given, is
    called with the records written and bytes read so far after each batch.

    Formats: ``parquet`` (one row group per batch of up to 65536 records), ``arrow`` (the
    Arrow IPC file format, also known as Feather v2), ``csv`` (a header row, then one row per
    record), ``jsonl`` (one JSON object per line). CSV and JSON Lines cannot hold ``bytes``
    fields: such a record type raises ``TypeError``.
    """
    if to not in FORMATS:
        raise ValueError(f"to must be one of {', '.join(FORMATS)}; got {to!r}")
    if to in ("csv", "jsonl") and _has_bytes(record_type):
        raise TypeError(f"{to} cannot hold the bytes fields of {record_type!r}; use parquet")
    write = _write_columns if to in ("parquet", "arrow") else _write_text
    if isinstance(destination, (str, os.PathLike)):
        with _replacing(destination) as out:
            return write(source, out, to, record_type, max_record_size, progress)
    return write(source, destination, to, record_type, max_record_size, progress)


def _has_bytes(record_type: type[Any]) -> bool:
    return any(bytes in (t or ()) for t in RecordSchema(record_type).allowed_types())


def _write_columns(
    source: Source,
    out: IO[bytes],
    to: Format,
    record_type: type[Any],
    max_record_size: int,
    progress: Progress | None,
) -> int:
    from .arrow import read_batches

    with read_batches(source, record_type, max_record_size=max_record_size) as batches:
        if to == "parquet":
            import pyarrow.parquet as pq

            writer: Any = pq.ParquetWriter(out, batches.schema)
        else:
            import pyarrow as pa

            sink: Any = out  # any binary file object: pyarrow wraps it
            writer = pa.ipc.new_file(sink, batches.schema)
        written = 0
        try:
            for batch in batches:
                writer.write_batch(batch)
                written += batch.num_rows
                if progress is not None:
                    progress(written, batches.bytes_read)
        finally:
            writer.close()
    return written


class _Tuples:
    """The reader's batch converter for the text path: the checked tuples as they are."""

    refusals: tuple[type[Exception], ...] = ()

    def __call__(self, values: list[Any], /) -> list[Any]:
        return values

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:  # pragma: no cover
        return None  # refuses nothing: never asked


def _write_text(
    source: Source,
    out: IO[bytes],
    to: Format,
    record_type: type[Any],
    max_record_size: int,
    progress: Progress | None,
) -> int:
    names = RecordSchema(record_type).names
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    try:
        rows: _Rows = CsvRows(text, names) if to == "csv" else JsonRows(text, names)
        reader = StreamingReader._converting(
            source,
            record_type,
            _Tuples(),
            max_record_size=max_record_size,
            read_size=DEFAULT_READ_SIZE,
        )
        written = 0
        with reader:
            for batch in reader:
                rows.write(batch)
                written += len(batch)
                if progress is not None:
                    progress(written, reader.bytes_read)
        text.flush()
    finally:
        text.detach()  # the stream is the caller's (or _replacing's) to close
    return written


@contextmanager
def _replacing(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A new file that replaces ``path`` when the block succeeds, and vanishes if it fails."""
    target = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(target))
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp's 0600 is not what a new file gets
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
