"""Records as Arrow columns: ``pyarrow.RecordBatch``es and Tables, and through them Parquet.

Needs the ``arrow`` extra.

>>> from msgpack_reader_py import read_table
>>> table = read_table("items.msgpack")  # doctest: +SKIP
>>> table.to_pandas()  # doctest: +SKIP

No record object is built: the decoded tuples of each chunk the reader reads are checked as a
batch (every field checked, as the reader checks it) and handed to pyarrow in one call, which
builds the columns in C (:mod:`.schema`). A record whose values Arrow cannot hold (an int over
int64) is located like any other bad record: it raises a
:class:`~msgpack_reader_py.RecordError` with its index and offset, after the batch of records
before it.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import typing
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._base.checks import positive
from .._base.errors import ReaderError
from .._base.log import note_skipped
from .._base.options import ReadKeywords, ReadOptions
from .._readers.streaming_reader import SourceReader, chained, check_start
from .._reference.model import Item
from .._split.parallel import Splitting
from .._split.ranges import Flattened
from .._stream.delivery import Plan
from .._stream.sources import Source
from .._types.columns import columns_of
from .json_columns import JSON
from .schema import ArrowColumns, arrow_schema

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "JSON",
    "BatchReader",
    "arrow_schema",
    "files_batches",
    "read_batches",
    "read_table",
    "rebatched",
]

DEFAULT_BATCH_SIZE = 65536
"""Rows per ``RecordBatch`` unless a batch's columns reach ``MAX_BATCH_BYTES`` first."""

MAX_BATCH_BYTES = 256 * 1024 * 1024
"""A batch is cut short at this many bytes of columns: memory stays bounded for large records,
and a string column stays far below Arrow's 2 GiB limit per array. Checked after each read,
so a batch may pass it by what one read completes."""


def _positions(schema: pa.Schema, columns: Sequence[str]) -> list[int]:
    names = schema.names
    unknown = [name for name in columns if name not in names]
    if unknown or not columns or len(set(columns)) != len(columns):
        why = f"unknown {unknown}" if unknown else "none" if not columns else "a repeated name"
        raise ValueError(f"columns must name distinct columns of {names}; got {why}")
    return [names.index(name) for name in columns]


class BatchReader(SourceReader[pa.RecordBatch]):
    """Read concatenated MessagePack records as Arrow ``RecordBatch``es of ``record_type``.

    An iterator of ``pyarrow.RecordBatch`` and a context manager. Every batch has
    :attr:`schema` (see :func:`arrow_schema`) and ``batch_size`` rows, except the last, and
    except a batch cut short at ``MAX_BATCH_BYTES`` of columns. ``source`` is anything
    :class:`~msgpack_reader_py.StreamingReader` reads; records are checked against
    ``record_type`` exactly as :class:`~msgpack_reader_py.StreamingReader` checks them, in
    either wire shape. Its lifecycle (closing, ``skipped``, ``errors``, ``bytes_read``, ...)
    is :class:`~msgpack_reader_py._readers.streaming_reader.SourceReader`'s.

    Error contract: as the reader's. Broken data raises a
    :class:`~msgpack_reader_py.ReaderError` with the failing record's index and offset,
    after a batch holding every good record not yet delivered. Any other exception from the
    source (``OSError``, ``EOFError`` from a cut-off gzip file) passes through as it is, also
    after that batch.

    Args:
        source: a path, a bytes-like object or a binary stream.
        record_type: any record type :class:`~msgpack_reader_py.StreamingReader` reads whose
            fields have an Arrow type (see :func:`arrow_schema`). Default ``Item``.
        batch_size: the most rows per batch. Default 65536.
        columns: the names of the columns to build, in the order wanted (default: every
            field). The other fields are still decoded and validated, so a projection
            changes no validation error; only Arrow's own refusals (an int over int64) are
            limited to the columns it builds.
        workers: read a file on that many processes (``0``: one per core), in byte ranges
            of ``blocksize`` bytes (default: eight per worker, 1 to 64 MiB each), each range's
            first record guessed and then proved (:mod:`~msgpack_reader_py._split.ranges`): the
            batches, their rows, ``skipped``, ``errors`` and any error (its index and offset
            included) are exactly those of a read on one process. Only a file read with a
            record type is split, uncompressed or zstd frames that declare their sizes (cut
            where frames start); anything else (a stream, bytes, a gzip, bzip2 or xz file,
            ``follow``) is read in this process, as with the default, ``None``.
        blocksize: the size of the byte ranges ``workers`` read, in bytes.
        start: the index of the first record read, as
            :class:`~msgpack_reader_py.StreamingReader` takes it (the records before it framed,
            not decoded); a read from a record other than the first is not split.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options, as
            :class:`~msgpack_reader_py.StreamingReader` takes them
            (:class:`~msgpack_reader_py.ReadOptions`): ``ext_hook`` (for example
            :func:`~msgpack_reader_py.fluentd_event_time`), ``forbid_unknown_keys``,
            ``max_record_size``, ``read_size``, ``decompress``; ``on_error="skip"`` passes
            over records that are not records of the type, and records Arrow cannot hold,
            counting them in :attr:`skipped` and keeping the first 100 in :attr:`errors`, as the
            reader's skip mode does; ``follow`` keeps reading a growing file, its batches still
            ``batch_size`` rows (pass a smaller one to see the rows of a slow file sooner).
    """

    schema: pa.Schema
    """The schema of every batch, known before the first one is read."""

    def __init__(
        self,
        source: Source,
        record_type: Any = Item,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        columns: Sequence[str] | None = None,
        start: int = 0,
        workers: int | None = None,
        blocksize: int | None = None,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None:
        read = ReadOptions.of(options, dict(keywords), "BatchReader()")
        positive("batch_size", batch_size)
        job = ArrowJob.of(columns)
        self.schema = job.schema(record_type)  # bad columns refused at the call
        self.batch_size = batch_size
        check_start(start)
        splitting = Splitting(workers, blocksize)
        if start == 0 and splitting.applies(source, record_type, read):
            batches = self.open_ranges(source, record_type, job, read, splitting)
        else:
            plan = job.plan(record_type, read)
            batches = self.open_batches(source, record_type, plan, read, start=start)
        pieces = chained(batches)
        # A function of the pieces, not a method: a generator bound to self would make a cycle,
        # and a dropped BatchReader would keep its file open until the cycle collector ran.
        self._records = rebatched(pieces, batch_size)

    def to_pyarrow(self) -> pa.RecordBatchReader:
        """This reader as a ``pyarrow.RecordBatchReader``, for pyarrow APIs that take one
        (``pyarrow.dataset.write_dataset``, ``pyarrow.parquet``, DuckDB, Polars)."""
        return pa.RecordBatchReader.from_batches(self.schema, self._records)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<BatchReader {self.name!r} record_type={self.record_type!r}{state}>"


@dataclasses.dataclass(frozen=True)
class ArrowJob(Flattened):
    """The Arrow columns of records (``columns``: those named, in that order), a struct array
    per read: what :class:`BatchReader` makes of each run, in this process or, for a byte
    range (:mod:`.ranges`), in a worker."""

    columns: tuple[str, ...] | None = None
    spool: str | None = None
    """Where a worker leaves a range's columns, as an Arrow IPC file, for the reader to map
    (:meth:`spooled`); ``None``: they are sent back as they are."""

    @classmethod
    def of(cls, columns: Sequence[str] | None) -> ArrowJob:
        """The job building ``columns`` (``None``: every field); a str refused, not taken
        for its letters."""
        if isinstance(columns, str):
            raise TypeError(f"columns must be a sequence of column names, not a str: {columns!r}")
        return cls(None if columns is None else tuple(columns))

    def spooled(self, directory: str) -> ArrowJob:
        """This job, leaving each range's columns in a file in ``directory``."""
        return dataclasses.replace(self, spool=directory)

    def collect(self, batches: Iterator[list[Any]]) -> Any:
        arrays = super().collect(batches)
        if self.spool is None or not arrays:
            return arrays
        schema = pa.schema([pa.field("rows", arrays[0].type)])
        handle, path = tempfile.mkstemp(suffix=".arrow", dir=self.spool)
        with os.fdopen(handle, "wb") as file, pa.ipc.new_file(file, schema) as writer:
            for array in arrays:
                writer.write_batch(pa.RecordBatch.from_arrays([array], schema=schema))
        return _Spooled(path)

    @staticmethod
    def received(value: Any) -> list[pa.StructArray]:
        """A range's columns, mapped from the file a worker left them in (then removed: the
        mapping keeps them)."""
        if not isinstance(value, _Spooled):
            return typing.cast(list[pa.StructArray], value)
        reader = pa.ipc.open_file(pa.memory_map(value.path))
        os.unlink(value.path)
        count = reader.num_record_batches
        return [typing.cast(pa.StructArray, reader.get_batch(i).column(0)) for i in range(count)]

    def schema(self, record_type: Any) -> pa.Schema:
        full = arrow_schema(record_type)
        if self.columns is None:
            return full
        return pa.schema([full.field(p) for p in _positions(full, self.columns)])

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        fields = columns_of(record_type)
        full = arrow_schema(record_type)
        positions = None if self.columns is None else _positions(full, self.columns)
        labels = [fields.names[p] for p in positions or range(len(full))]
        converter = ArrowColumns(self.schema(record_type), positions, labels, fields.annotations)
        return Plan(
            record_type,
            options,
            convert=converter,
        )


@dataclasses.dataclass(frozen=True)
class _Spooled:
    """Where a worker left a range's columns (:class:`ArrowJob`)."""

    path: str


def rebatched(
    pieces: Iterator[pa.StructArray], batch_size: int = DEFAULT_BATCH_SIZE
) -> Generator[pa.RecordBatch, None, None]:
    """Batches of ``batch_size`` rows (or ``MAX_BATCH_BYTES``, checked after each read) cut
    from the pieces the reader converts per read. Whatever ends the pieces early, the rows
    already converted are delivered first."""
    pending: list[pa.StructArray] = []
    rows = size = 0
    try:
        for piece in pieces:
            pending.append(piece)
            rows += len(piece)
            size += piece.nbytes
            while rows >= batch_size or size >= MAX_BATCH_BYTES:
                whole = pa.concat_arrays(pending) if len(pending) > 1 else pending[0]
                take = min(rows, batch_size)
                yield pa.RecordBatch.from_struct_array(whole.slice(0, take))
                rest = whole.slice(take)
                pending = [rest] if len(rest) else []
                rows, size = len(rest), rest.nbytes
    except Exception:
        if pending:
            yield pa.RecordBatch.from_struct_array(pa.concat_arrays(pending))
        raise
    if pending:
        yield pa.RecordBatch.from_struct_array(pa.concat_arrays(pending))


def read_batches(
    source: Source,
    record_type: Any = Item,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    columns: Sequence[str] | None = None,
    start: int = 0,
    workers: int | None = None,
    blocksize: int | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> BatchReader:
    """Read ``source`` as ``pyarrow.RecordBatch``es: a :class:`BatchReader` (an iterator and
    a context manager), every argument as :class:`BatchReader` takes it.

    Args:
        source: a path, a bytes-like object or a binary stream.
        record_type: the type every record is checked against; its fields are the columns
            (:func:`arrow_schema`). Default ``Item``.
        batch_size: the most rows per batch. Default 65536.
        columns: the names of the columns to build, in the order wanted (default: every
            field); the other fields are still decoded and checked.
        start: the index of the first record read; the records before it are framed, not
            decoded.
        workers: read a file on that many processes in byte ranges (``0``: one per core),
            with the rows and errors of a read on one process. Default ``None``: this one.
        blocksize: the size of the byte ranges ``workers`` read, in bytes.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`).

    Raises:
        ReaderError: broken data (a subclass says why), after a batch holding every good
            record not yet delivered.
        TypeError: a record type the reader cannot read, or a field with no Arrow type.
        ValueError: a bad argument (``batch_size=0``, a column that names no field), here,
            before anything is read.
        OSError: the source's own errors, as they are.

    Example:
        >>> with read_batches("items.msgpack", columns=["id", "value"]) as batches:
        ...     for batch in batches:  # doctest: +SKIP
        ...         print(batch.num_rows, batch.schema.names)
    """
    read = ReadOptions.of(options, dict(keywords), "read_batches()")
    return BatchReader(
        source,
        record_type,
        batch_size=batch_size,
        columns=columns,
        start=start,
        workers=workers,
        blocksize=blocksize,
        options=read,
    )


def files_batches(
    files: Sequence[str], record_type: Any, **arguments: Any
) -> Generator[pa.RecordBatch, None, None]:
    """The batches of :func:`read_batches` (with ``arguments``) of each file in turn: what the
    readers of many files (Polars, DuckDB) hand on. A reader's error names its file; what
    ``on_error="skip"`` passed over in a file is said on the package's logger."""
    for name in files:
        try:
            with read_batches(name, record_type, **arguments) as batches:
                yield from batches
        except ReaderError as exc:
            raise exc.in_source(name) from exc
        note_skipped(name, batches.skipped, batches.errors)


def read_table(
    source: Source,
    record_type: Any = Item,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    columns: Sequence[str] | None = None,
    start: int = 0,
    workers: int | None = None,
    blocksize: int | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> pa.Table:
    """Read all of ``source`` into a ``pyarrow.Table`` of :func:`arrow_schema` (empty for an
    empty stream), with :class:`BatchReader`'s arguments. Broken data raises the reader's
    error; to keep the records before it, use :func:`read_batches`. A table is the whole
    stream: ``follow=True``, which never ends it, is refused.

    Args:
        source: a path, a bytes-like object or a binary stream.
        record_type: the type every record is checked against; its fields are the columns.
            Default ``Item``.
        batch_size: the most rows per batch the table is made of. Default 65536.
        columns: the names of the columns to build (default: every field).
        start: the index of the first record read.
        workers: read a file on that many processes in byte ranges (``0``: one per core).
        blocksize: the size of the byte ranges ``workers`` read, in bytes.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`).

    Raises:
        ReaderError: broken data, with the failing record's index, offset and source.
        TypeError: a record type the reader cannot read, or a field with no Arrow type.
        ValueError: a bad argument, ``follow=True`` among them, before anything is read.
        OSError: the source's own errors, as they are.

    Example:
        >>> table = read_table("items.msgpack", columns=["id", "value"])  # doctest: +SKIP
        >>> table.to_pandas()  # doctest: +SKIP
    """
    read = ReadOptions.of(options, dict(keywords), "read_table()", to_the_end=True)
    with read_batches(
        source,
        record_type,
        batch_size=batch_size,
        columns=columns,
        start=start,
        workers=workers,
        blocksize=blocksize,
        options=read,
    ) as batches:
        return pa.Table.from_batches(list(batches), schema=batches.schema)
