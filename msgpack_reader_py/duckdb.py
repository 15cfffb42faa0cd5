"""Records in DuckDB: SQL over the records of files, streamed as Arrow batches.

Needs the ``duckdb`` extra (``pip install '.[duckdb]'`` in the project's clone).

>>> import duckdb
>>> from msgpack_reader_py.duckdb import read_msgpack
>>> events = read_msgpack("logs/*.msgpack")  # doctest: +SKIP
>>> duckdb.sql("SELECT level, count(*) FROM events GROUP BY level").show()  # doctest: +SKIP

DuckDB reads any ``pyarrow.RecordBatchReader`` as a table, batch by batch, so SQL runs over
a stream of any size in bounded memory: :func:`read_msgpack` hands it the batches of
:func:`~msgpack_reader_py.read_batches`, file after file, and one stream works the same
way through ``BatchReader.to_pyarrow()`` (a pipe, a socket, stdin). A relation over files
reads them again for each query; one over a stream can be read once: DuckDB 2 refuses a second
query over it, DuckDB 1 answers it with no rows, so make a table of a stream first
(``duckdb.from_arrow(reader).create("events")``). Broken data fails the query with
``duckdb.InvalidInputException``, whose message holds the reader's error (file, record index,
byte offset, field).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._base.checks import positive
from ._base.extras import check_version, missing_extra

try:
    import duckdb
    import pyarrow as pa
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "duckdb", feature="msgpack_reader_py.duckdb") from None

from ._analysis.inferred import files_type
from ._arrow.duckdb_types import refuse_lost_nanoseconds
from ._arrow.reader import DEFAULT_BATCH_SIZE, ArrowJob, files_batches
from ._base.options import ReadKeywords, ReadOptions
from ._stream.files import Paths, local_files

check_version("duckdb", duckdb.__version__, "msgpack_reader_py.duckdb", "duckdb")

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["read_msgpack", "record_batches"]


class _Files:
    """Files of records as an Arrow stream that can be read again: DuckDB asks for a stream
    (``__arrow_c_stream__``) each time it scans a relation, and each one reads the files anew,
    so a relation over them answers every query (a ``RecordBatchReader`` is read once: DuckDB 2
    refuses a second scan of it, DuckDB 1 gives it no rows). What can be refused is refused
    when it is made, not inside a query."""

    def __init__(
        self, source: Paths, record_type: Any, options: ReadOptions, **reading: Any
    ) -> None:
        positive("batch_size", reading["batch_size"])
        infer_from = reading.pop("infer_from")
        self.files = local_files(source)
        if record_type is None:
            record_type = files_type(self.files, infer_from, options)
            reading["workers"] = None  # an inferred type lives in this process only
        self.record_type = record_type
        self.schema = ArrowJob.of(reading["columns"]).schema(record_type)
        self.reading = {**reading, "options": options}

    def reader(self) -> pa.RecordBatchReader:
        """A new stream of the files' batches, read as it is consumed."""
        batches = files_batches(self.files, self.record_type, **self.reading)
        return pa.RecordBatchReader.from_batches(self.schema, batches)

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        stream: Callable[[object], object] = self.reader().__arrow_c_stream__
        return stream(requested_schema)


def record_batches(
    source: Paths,
    record_type: Any = None,
    *,
    columns: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    workers: int | None = None,
    blocksize: int | None = None,
    infer_from: int | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> pa.RecordBatchReader:
    """The records of the files ``source`` names (a path, a glob or a list of them), in
    order, as one ``pyarrow.RecordBatchReader``: what DuckDB, Polars or pyarrow's dataset
    writer take. ``record_type`` ``None``: inferred now from every record of the files, as
    ``msgpack-reader convert`` infers it for Parquet (``infer_from``: from the first N only).
    The other arguments are :func:`~msgpack_reader_py.read_batches`'; ``workers`` only
    with a ``record_type``. A reader's error names the file it was read from. It is read
    once, as it is consumed. Raises what :func:`~msgpack_reader_py.read_batches` raises
    (:class:`~msgpack_reader_py.ReaderError` for broken data, as it is consumed), and
    ``FileNotFoundError`` for a glob that matches nothing."""
    read = ReadOptions.of(options, dict(keywords), "record_batches()", to_the_end=True)
    return _Files(
        source,
        record_type,
        read,
        columns=columns,
        batch_size=batch_size,
        workers=workers,
        blocksize=blocksize,
        infer_from=infer_from,
    ).reader()


def read_msgpack(
    source: Paths,
    record_type: Any = None,
    *,
    connection: duckdb.DuckDBPyConnection | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    workers: int | None = None,
    blocksize: int | None = None,
    infer_from: int | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> duckdb.DuckDBPyRelation:
    """A DuckDB relation of the records of the files ``source`` names: query it with SQL by
    its Python name (``duckdb.sql("SELECT ... FROM events")``) or with the relation's methods.
    Each query reads the files again, as they are then, in bounded memory; for many queries
    over large files, make a table of it once (``relation.create("events")``). ``connection``:
    the DuckDB connection to make it in (default: DuckDB's default one). The other arguments
    are :func:`record_batches`'; the files are listed, and an untyped stream's types
    inferred, now.

    Args:
        source: a path, a glob (``*``, ``?``, ``[...]``, ``**``) or a list of them.
        record_type: the type of every record, its fields the columns; ``None``: inferred
            from every record of the files, now.
        connection: the DuckDB connection to make the relation in (default: DuckDB's own).
        columns: the names of the columns to build (default: every field).
        batch_size: the most rows per Arrow batch DuckDB is handed. Default 65536.
        workers: read each file on that many processes in byte ranges (``0``: one per core).
        blocksize: the size of the byte ranges ``workers`` read, in bytes.
        infer_from: infer the record type from the first N records only.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`; not ``follow``).

    Raises:
        FileNotFoundError: a glob that matches no file, at the call.
        TypeError: a record type the reader cannot read, or one with a ``msgpack.Timestamp``
            field where this DuckDB holds timestamps to the microsecond (DuckDB 1.x; 2.0
            keeps the nanoseconds), at the call.
        ValueError: a bad argument (a column that names no field, ``follow=True``), at
            the call.
        duckdb.InvalidInputException: from a query, on broken data: its message is the
            reader's error (file, record index, byte offset, field).

    Example:
        >>> events = read_msgpack("telemetry/*.msgpack", Item)  # doctest: +SKIP
        >>> duckdb.sql("SELECT count(*) FROM events").fetchall()  # doctest: +SKIP
    """
    read = ReadOptions.of(options, dict(keywords), "read_msgpack()", to_the_end=True)
    files = _Files(
        source,
        record_type,
        read,
        columns=columns,
        batch_size=batch_size,
        workers=workers,
        blocksize=blocksize,
        infer_from=infer_from,
    )
    connection = connection or duckdb.default_connection()
    refuse_lost_nanoseconds(connection, files.schema)
    return connection.from_arrow(files)
