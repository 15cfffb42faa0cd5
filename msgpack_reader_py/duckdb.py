"""Records in DuckDB: SQL over the records of files, streamed as Arrow batches.

Needs the ``duckdb`` extra (``pip install '.[duckdb]'`` in the project's clone).

>>> import duckdb
>>> from msgpack_reader_py.duckdb import read_msgpack
>>> events = read_msgpack("logs/*.msgpack")  # doctest: +SKIP
>>> duckdb.sql("SELECT level, count(*) FROM events GROUP BY level").show()  # doctest: +SKIP

DuckDB reads any ``pyarrow.RecordBatchReader`` as a table, batch by batch, so SQL runs over
a stream of any size in bounded memory: :func:`read_msgpack` hands it the batches of
:func:`~msgpack_reader_py.arrow.read_batches`, file after file, and one stream works the same
way through ``BatchReader.to_pyarrow()`` (a pipe, a socket, stdin). A stream is read once:
the relation answers one query; for more, make a table of it first
(``relation.create("events")``) or call :func:`read_msgpack` again. Broken data fails the
query with ``duckdb.InvalidInputException``, whose message holds the reader's error (file,
record index, byte offset, field).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._extras import missing_extra

try:
    import duckdb
    import pyarrow as pa
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "duckdb", feature="msgpack_reader_py.duckdb") from None

from .arrow import DEFAULT_BATCH_SIZE, ArrowPieces, files_batches
from .files import Paths, local_files
from .inferred import files_type
from .options import ReadKeywords, ReadOptions, refuse_follow

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["read_msgpack", "record_batches"]


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
    The other arguments are :func:`~msgpack_reader_py.arrow.read_batches`'; ``workers`` only
    with a ``record_type``. A reader's error names the file it was read from."""
    read = ReadOptions.of(options, dict(keywords), "record_batches()")
    refuse_follow(read, "record_batches()")
    files = local_files(source)
    if record_type is None:
        record_type = files_type(files, infer_from, read, "a DuckDB column")
        workers = None  # an inferred type lives in this process only
    schema = ArrowPieces.of(columns).schema(record_type)
    arguments = {
        "batch_size": batch_size,
        "columns": columns,
        "workers": workers,
        "blocksize": blocksize,
        "options": read,
    }
    return pa.RecordBatchReader.from_batches(schema, files_batches(files, record_type, **arguments))


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
    """A DuckDB relation of the records of the files ``source`` names, streamed: query it
    with SQL by its Python name (``duckdb.sql("SELECT ... FROM events")``) or with the
    relation's methods; it answers one query (see the module's docstring). ``connection``:
    the DuckDB connection to make it in (default: DuckDB's default one). The other arguments
    are :func:`record_batches`'."""
    read = ReadOptions.of(options, dict(keywords), "read_msgpack()")
    batches = record_batches(
        source,
        record_type,
        columns=columns,
        batch_size=batch_size,
        workers=workers,
        blocksize=blocksize,
        infer_from=infer_from,
        options=read,
    )
    return (connection or duckdb.default_connection()).from_arrow(batches)
