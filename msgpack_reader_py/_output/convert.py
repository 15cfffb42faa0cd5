"""Convert a record stream to Parquet, Arrow IPC, CSV or JSON Lines, without half-written files.

Parquet and Arrow need the ``arrow`` extra; CSV and JSON Lines need nothing beyond the core.
A destination path is written through a temporary file beside it, renamed into place only
when the whole stream has been converted: a failure leaves nothing under the final name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import os
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import IO, TYPE_CHECKING, Any

from .._analysis.infer import Inferred
from .._analysis.inferred import InferFrom, check_infer_from, infer_sources, table_type, unseen
from .._base.atomic import NamedOutput, is_directory, replacing, replacing_parts
from .._base.checks import count_of
from .._base.errors import RecordError
from .._base.options import ReadKeywords, ReadOptions
from .._readers.streaming_reader import (
    PieceReader,
    RowBatches,
    SourceReader,
    check_start,
    rows_plan,
)
from .._readers.values import ValueReader
from .._reference.model import Item
from .._split.parallel import Splitting
from .._stream.delivery import KEPT_ERRORS, Plan
from .._stream.sources import Source
from .columnar import columns_out
from .formats import COLUMNAR, FORMATS, Codec, OutputFormat, output_settings
from .parts import Part, PartsJob, name_parts, parts_of
from .query import Query
from .text import Encoded, text_encoder, text_out

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Conversion", "convert"]

Progress = Callable[[int, int], None]
"""Called as ``progress(records_written, source_bytes_read)`` after each batch."""


@dataclasses.dataclass(frozen=True)
class Conversion:
    """What :func:`convert` wrote and passed over."""

    records: int
    """Records written."""
    skipped: int = 0
    """Records ``on_error="skip"`` passed over."""
    errors: list[RecordError] = dataclasses.field(default_factory=list)
    """The first 100 of them, in order, each naming its source where the reader knew one."""
    inferred: Inferred | None = None
    """The record types inferred for an untyped conversion to a table format."""


def convert(
    source: Source | list[Source] | tuple[Source, ...],
    destination: str | os.PathLike[str] | IO[bytes] | io.RawIOBase | None,
    to: OutputFormat,
    *,
    record_type: Any = Item,
    limit: int | None = None,
    from_end: bool = False,
    allow_nan: bool = False,
    infer_from: InferFrom = None,
    flat: bool = False,
    progress: Progress | None = None,
    force: bool = False,
    start: int = 0,
    workers: int | None = None,
    blocksize: int | None = None,
    compression: Codec | None = None,
    row_group_size: int | None = None,
    select: Sequence[str] | None = None,
    where: str | None = None,
    replace: bool = False,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> Conversion:
    """Convert the records of ``source`` to the format ``to``; say how many were written.

    ``source`` is anything :class:`~msgpack_reader_py.StreamingReader` reads, or a list or
    tuple of such sources, read in turn into the one output. ``destination`` is a path,
    written atomically (see the module's docstring), a binary stream, written as records
    arrive and left open, or ``None``: nothing is written, and the result counts the records
    that would be (those ``where`` keeps, every one checked). Records are checked against
    ``record_type`` as :class:`~msgpack_reader_py.StreamingReader` checks them; broken data
    raises the reader's :class:`~msgpack_reader_py.ReaderError` (its ``source`` naming
    the source, where the reader knows a name), after every record before it was written to a
    stream.
    ``on_error="skip"`` passes over records that are not records of the type instead, and
    counts them in the result. ``progress``, if given, is called with the records written and
    the bytes taken from the sources so far (compressed bytes, for a compressed source: what a
    file's size counts) after each batch.

    ``options`` and the keyword arguments are the reading options of
    :class:`~msgpack_reader_py.ReadOptions`, for every source (``follow`` follows the
    last one, until ``KeyboardInterrupt`` or ``limit``; the records to infer a type from are
    those the file holds when it starts).

    ``record_type=None`` reads records untyped (:class:`~msgpack_reader_py.ValueReader`): JSON Lines
    writes each as the value it is; CSV, Parquet and Arrow need columns, so a record type is
    inferred (:func:`~msgpack_reader_py.infer_sources`) and
    :attr:`Conversion.inferred` holds it: by default from every record, so that no value is
    ever dropped (a stream, which cannot be read twice, is kept in a temporary file up to
    :data:`~msgpack_reader_py._analysis.inferred.SPOOL_LIMIT` bytes, all of it with
    ``infer_from="all"``); ``infer_from=N`` infers it from the first N records. The types refuse
    what they never saw, at any depth: a record past what they were inferred from with a key,
    a value or a type they do not hold is a located ``RecordError`` naming it, never a record
    written short. ``flat=True`` merges records of several kinds into one type. A field
    whose values do not mix is a column of JSON text. ``ext_hook`` is the reader's; untyped,
    :func:`~msgpack_reader_py.fluentd_event_time` keeps EventTime's nanoseconds.
    Read untyped, a source whose first bytes look like something other than MessagePack (JSON,
    text, Parquet, ...) is refused, as :class:`~msgpack_reader_py.ValueReader` says;
    ``force=True`` reads it anyway.
    ``limit`` stops after that many records, reading no further. ``start`` passes over the
    first ``start`` records of the sources, in all, framed but not decoded (as
    :class:`~msgpack_reader_py.StreamingReader`'s ``start``).
    ``workers`` reads each file in byte ranges on that many processes (``0``: one per core),
    as :func:`~msgpack_reader_py.read_batches` does: the output is byte for byte what
    one process writes; a source that cannot be split (stdin, a compressed file, untyped
    records), and any conversion with ``start`` or ``limit``, is read in this process;
    ``blocksize`` is the size of the byte ranges in bytes (default: eight per worker, 1 to
    64 MiB each).
    A stream destination is flushed after each batch, so that what was read is there to see.

    ``select`` (paths of fields, ``b.c`` a field of a nested record) and ``where`` (an SQL
    expression) keep the records that satisfy ``where``, with the ``select`` fields, as
    :class:`~.query.Query` says (the ``duckdb`` extra): the records are read
    as Arrow columns, and untyped records get a record type inferred as for Parquet. ``start``
    counts the records of the sources, ``limit`` the records written. ``from_end`` writes
    the last ``limit`` records instead (of those ``where`` keeps), holding that many in memory until
    the sources end.

    Formats: ``parquet`` (one row group per batch of up to 65536 records, or exactly
    ``row_group_size`` records in each row group but the last, cut at the same records with
    any ``workers``), ``arrow`` (the Arrow IPC file format, also known as Feather v2),
    ``csv`` (a header row, then one row per record; text as it is, anything else as its JSON
    text, as :class:`~msgpack_reader_py._output.text.CsvRows` writes it),
    ``jsonl`` (one JSON value per line: a record is an object keyed by field
    name), ``table`` (aligned columns for a person to read, as
    :class:`~msgpack_reader_py._output.text.TableRows` lays them out). JSON is written as
    :mod:`~msgpack_reader_py._output.writers` describes; ``allow_nan`` writes NaN and the infinities
    as Python's ``json`` does instead of ``null``.

    ``compression`` is the codec of Parquet (``zstd``, ``lz4``, ``snappy``, ``gzip`` or
    ``none``; by default ``zstd``: on the reference data it wrote the smallest file of them,
    at about the speed of snappy, pyarrow's own default, as ``benchmarks/compression.py``
    measures) or of Arrow (``zstd``, ``lz4`` or, the default, ``none``: an uncompressed file
    can be mapped into memory and read without a copy). An option that does not apply to
    ``to`` (``row_group_size`` but for Parquet, ``compression`` for a text format, snappy or
    gzip for Arrow) is a ``ValueError``, as a bad value is.
    """
    if to not in (*FORMATS, "table"):
        raise ValueError(f"to must be one of {', '.join(FORMATS)} or table; got {to!r}")
    output_settings(to, compression, row_group_size)  # refused at the call
    read = ReadOptions.of(options, dict(keywords), "convert()")
    count_of("limit", limit, allowed=(None,))
    if from_end and limit is None:
        raise ValueError("from_end writes the last limit records: give limit too")
    check_start(start)
    splitting = Splitting(workers, blocksize)  # refused at the call
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    inferred = None
    queried = select is not None or where is not None
    check_infer_from(infer_from)
    parts = is_directory(destination)
    if parts and to == "table":
        raise ValueError("a directory of parts takes a file format, not table")
    if parts and (queried or limit is not None or start or read.follow):
        raise ValueError(
            "a directory of parts holds every record of the sources: convert with where, "
            "select, limit, start or follow to one file"
        )
    if record_type is None and (to in COLUMNAR or queried):
        sources, inferred = infer_sources(sources, infer_from, flat=flat, force=force, options=read)
        record_type = table_type(inferred)
    query = None
    if queried:
        from .._arrow.reader import arrow_schema
        from .query import Query

        query = Query(arrow_schema(record_type), tuple(select) if select else None, where)
    if start or limit is not None or inferred is not None or to == "table":
        # Read in this process: from a record other than the first, or a few records only;
        # an inferred type is made in this process only, it cannot be sent to workers; and a
        # table's columns are as wide as the batches before need, batches a split read cuts
        # elsewhere.
        splitting = Splitting()
    job = _Job(
        sources,
        to,
        record_type,
        read,
        force=force,
        limit=limit,
        from_end=from_end,
        allow_nan=allow_nan,
        progress=progress,
        start=start,
        query=query,
        splitting=splitting,
        compression=compression,
        row_group_size=row_group_size,
    )
    try:
        if destination is None:
            done = job.run(None)
        elif parts:
            assert isinstance(destination, (str, os.PathLike))
            with replacing_parts(destination, replace=replace) as directory:
                done = job.run_parts(directory)
        elif isinstance(destination, (str, os.PathLike)):
            with replacing(destination) as out:
                done = job.run(out)
        else:
            named = NamedOutput(destination, str(getattr(destination, "name", "<output>")))
            done = job.run(named)
    except RecordError as exc:
        if inferred is None or inferred.every or inferred.error is not None:
            raise
        # A record the types were not inferred from, and that they do not hold: say how to
        # have them inferred from it too.
        raise exc.amended(unseen(infer_from)) from exc
    return dataclasses.replace(done, inferred=inferred)


@dataclasses.dataclass(frozen=True)
class _Job:
    """One conversion: every source in turn, through one writer, counted and reported."""

    sources: list[Source]
    to: OutputFormat
    record_type: Any  # None: untyped values (JSON Lines only)
    options: ReadOptions  # follow: the last source's
    force: bool
    limit: int | None
    from_end: bool
    allow_nan: bool
    progress: Progress | None
    start: int
    query: Query | None
    splitting: Splitting
    compression: Codec | None
    row_group_size: int | None

    def _batches(
        self, source: Source, last: bool, start: int, *, counting: bool = False
    ) -> SourceReader[Any]:
        """Batches of one source, from its record ``start`` on: Arrow columns, checked
        tuples, or untyped values (read in ranges to text: that text, unless ``counting``)."""
        options = self.options
        if options.follow and not last:
            options = dataclasses.replace(options, follow=False)
        if self.record_type is None:
            return ValueReader(source, batches=True, force=self.force, start=start, options=options)
        if self.to in ("parquet", "arrow") or self.query is not None:
            from .._arrow.reader import BatchReader

            return BatchReader(
                source,
                self.record_type,
                start=start,
                workers=self.splitting.workers,
                blocksize=self.splitting.blocksize,
                options=options,
            )
        if self.splitting.applies(source, self.record_type, options):
            return PieceReader(
                source,
                self.record_type,
                TextJob(None if counting else self.to, self.record_type, self.allow_nan),
                splitting=self.splitting,
                options=options,
            )
        return RowBatches(source, self.record_type, options, start)

    def run_parts(self, directory: str) -> Conversion:
        """Write the parts of every source in ``directory``, named in file order."""
        job = PartsJob(
            self.to,
            self.record_type,
            directory,
            compression=self.compression,
            row_group_size=self.row_group_size,
            allow_nan=self.allow_nan,
            force=self.force,
        )
        parts: list[Part] = []
        skipped = read_before = written = 0
        errors: list[RecordError] = []
        for source in self.sources:
            with parts_of(source, job, self.options, self.splitting) as reader:
                for part in reader:
                    parts.append(part)
                    written += part.records
                    if self.progress is not None:
                        self.progress(written, read_before + reader.source_bytes_read)
                read_before += reader.source_bytes_read
                skipped += reader.skipped
                errors.extend(reader.errors[: KEPT_ERRORS - len(errors)])
        return Conversion(name_parts(directory, parts, self.to), skipped, errors)

    def run(self, out: NamedOutput | None) -> Conversion:
        output: AbstractContextManager[Callable[[Any], None]]
        if out is None:
            output = contextlib.nullcontext(_nothing)
        elif self.to in ("parquet", "arrow"):
            from .._arrow.reader import arrow_schema

            assert self.record_type is not None
            output = columns_out(
                out,
                self.to,
                arrow_schema(self.record_type) if self.query is None else self.query.schema,
                compression=self.compression,
                row_group_size=self.row_group_size,
            )
        elif self.query is not None:
            output = text_out(out, self.to, None, self.allow_nan, arrow=self.query.schema)
        else:
            output = text_out(out, self.to, self.record_type, self.allow_nan)
        written = skipped = read_before = 0
        errors: list[RecordError] = []
        last = self.limit if self.from_end else None  # the records to keep to the end
        left = None if self.from_end else self.limit
        passing = self.start  # records still to pass over
        kept: deque[Any] = deque()  # with last: the batches that may hold the last records
        with output as write:
            for number, source in enumerate(self.sources, 1):
                if left == 0:
                    break
                with self._batches(
                    source, number == len(self.sources), passing, counting=out is None
                ) as batches:
                    for batch in batches:
                        if self.query is not None:
                            batch = self.query.apply(batch)
                        if left is not None and len(batch) >= left:
                            batch = batch[:left]
                        if last is not None:
                            kept.append(batch)
                            read_rows = sum(map(len, kept))
                            while kept and read_rows - len(kept[0]) >= last:
                                read_rows -= len(kept.popleft())
                        elif len(batch):  # a filter may leave none: no empty row group
                            write(batch)
                            written += len(batch)
                        if self.progress is not None:
                            self.progress(written, read_before + batches.source_bytes_read)
                        if left is not None:
                            left -= len(batch)
                            if left == 0:
                                break
                    passing = max(passing - batches.records_framed, 0)
                    read_before += batches.source_bytes_read
                    skipped += batches.skipped
                    errors.extend(batches.errors[: KEPT_ERRORS - len(errors)])
            if last is not None:
                written = _write_last(last, kept, write)
        return Conversion(written, skipped, errors)


def _write_last(last: int, kept: deque[Any], write: Callable[[Any], None]) -> int:
    """Write the last ``last`` records of the batches ``kept``; how many there were."""
    over = sum(map(len, kept)) - last
    if kept and over > 0:
        kept[0] = kept[0][over:]
    for batch in kept:
        if len(batch):
            write(batch)
    return sum(map(len, kept))


def _nothing(_batch: Any) -> None:
    """Writes nothing: a conversion with no destination counts what it would write."""


@dataclasses.dataclass(frozen=True)
class TextJob:
    """A range job (:class:`~.ranges.RangeJob`) of JSON Lines and CSV: each read's records
    as a batch of checked rows, as :class:`~.streaming_reader.RowBatches` makes them, written
    as text by the worker that read them (:func:`~.text.text_encoder`), so that this process
    only copies bytes out."""

    to: OutputFormat | None  # None: records counted, no text made (a conversion to nowhere)
    record_type: Any
    allow_nan: bool
    spool: str | None = None
    """Where a worker leaves a range's text, in a file that this process has the system copy
    to the output (:meth:`spooled`): sent through a pipe, it would be copied four times more;
    ``None``: sent as it is."""

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return rows_plan(record_type, options)

    def spooled(self, directory: str) -> TextJob:
        """This job, leaving each range's text in a file in ``directory``."""
        return dataclasses.replace(self, spool=directory)

    def collect(self, batches: Iterator[list[Any]]) -> list[Any]:
        # Each run's rows encoded as they come and let go: a range's rows held all at once
        # took fresh memory from the system for every range (ten times the page faults).
        runs = itertools.chain.from_iterable(batches)
        if self.to is None:
            return [Encoded(len(rows), b"") for rows in runs]
        encode = text_encoder(self.to, self.record_type, self.allow_nan)
        if self.spool is None:
            return [Encoded(len(rows), encode(rows)) for rows in runs]
        records = 0
        handle, path = tempfile.mkstemp(suffix=".txt", dir=self.spool)
        with os.fdopen(handle, "wb") as file:
            for rows in runs:
                file.write(encode(rows))
                records += len(rows)
        if not records:
            # No text (a range that holds no whole record): no file for this process to open
            # and then never write, as it writes no batch of no records.
            os.unlink(path)
            return []
        return [_SpooledText(path, records)]

    @staticmethod
    def received(value: list[Any]) -> list[Any]:
        """A range's batches: its text in the file a worker left it in."""
        return [_opened(v) if type(v) is _SpooledText else v for v in value]


@dataclasses.dataclass(frozen=True)
class _SpooledText:
    """Where a worker left a range's text (:class:`TextJob`), and its records."""

    path: str
    records: int


def _opened(spooled: _SpooledText) -> Encoded:
    """The text a worker left, in its file: opened and removed at once (the open file keeps
    it until it is written out, or dropped)."""
    file = open(spooled.path, "rb")  # noqa: SIM115 - closed once written
    os.unlink(spooled.path)
    return Encoded(spooled.records, file)
