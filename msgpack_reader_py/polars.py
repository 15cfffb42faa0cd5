"""Records as a Polars ``LazyFrame``: :func:`scan_msgpack`, and :func:`read_msgpack` its eager
form.

Needs the ``polars`` extra (``pip install '.[polars]'`` in the project's clone): Polars 2,
through its IO-plugin API (``polars.io.plugins``). (Polars 1 reports an error raised in a scan
as its own ``ComputeError``, the reader's error only in its message.)

>>> import polars as pl
>>> from msgpack_reader_py.polars import scan_msgpack
>>> frame = scan_msgpack("telemetry-*.msgpack")  # doctest: +SKIP
>>> frame.filter(pl.col("value") > 100).group_by("process_id").len().collect()  # doctest: +SKIP

The scan is a plugin of Polars' query optimiser: only the columns a query uses are built (the
other fields are still decoded and checked, as :func:`~msgpack_reader_py.read_batches`
checks them), the filter Polars pushes into the scan is applied to each batch as it is read,
and a ``head(n)`` or ``limit(n)`` stops reading once ``n`` rows are out. Records are read
through :func:`~msgpack_reader_py.read_batches`: a record that is not a record of the
type raises the reader's :class:`~msgpack_reader_py.ReaderError`, its record index, byte
offset, field and file named, out of ``collect()``. Nested records become ``Struct`` columns,
lists ``List`` columns and maps Polars' ``Map`` columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ._base.checks import positive
from ._base.extras import missing_extra

try:
    import polars as pl
    import pyarrow as pa
    from polars.io.plugins import register_io_source
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "polars", feature="msgpack_reader_py.polars") from None

from ._analysis.inferred import files_type
from ._arrow.json_columns import empty_table
from ._arrow.reader import DEFAULT_BATCH_SIZE, files_batches
from ._arrow.schema import arrow_schema
from ._base.options import ReadKeywords, ReadOptions
from ._stream.files import Paths, local_files

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["polars_schema", "read_msgpack", "scan_msgpack"]


def polars_schema(record_type: Any) -> pl.Schema:
    """The Polars schema of ``record_type``'s columns: its Arrow schema
    (:func:`~msgpack_reader_py.arrow_schema`) as Polars takes it on."""
    frame = pl.from_arrow(empty_table(arrow_schema(record_type)))
    assert isinstance(frame, pl.DataFrame)
    return frame.schema


def scan_msgpack(
    source: Paths,
    record_type: Any = None,
    *,
    batch_size: int | None = None,
    workers: int | None = None,
    blocksize: int | None = None,
    infer_from: int | None = None,
    include_file_paths: str | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> pl.LazyFrame:
    """A ``polars.LazyFrame`` of the records of the files ``source`` names, in order.

    Args:
        source: a path, a glob (``*``, ``?``, ``[...]``, ``**``) or a list of them; a glob
            that matches no file raises ``FileNotFoundError`` now.
        record_type: the type of every record (a ``msgspec.Struct``, dataclass, ... as
            :class:`~msgpack_reader_py.StreamingReader` takes it), its fields the columns.
            ``None``: a record type is inferred now, from every record of the files, as
            ``msgpack-reader convert`` infers it for Parquet (a column whose values do not mix
            holds their JSON text), refusing any record it does not fit.
        batch_size: the most rows per ``DataFrame`` the scan hands Polars (default: what
            Polars asks for, else 65536).
        workers: read each file on that many processes (``0``: one per core) in byte
            ranges, as :func:`~msgpack_reader_py.read_batches` does: the same rows, in the
            same order, and the same errors. Only with a ``record_type`` (an inferred type
            lives in this process only) and not for a scan with a row limit, which stops early
            instead. Default ``None``: this process alone.
        blocksize: the size of the byte ranges ``workers`` read, in bytes (default: eight
            ranges per worker, 1 to 64 MiB each).
        infer_from: infer the record type from the first N records only; a later record that
            does not fit it then fails the scan (default: every record).
        include_file_paths: the name of a ``String`` column, after the fields, holding the
            path of the file each row was read from, as Polars' own scans take it.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options (:class:`~msgpack_reader_py.ReadOptions`:
            ``ext_hook``, ``on_error``, ``max_record_size``, ...; not ``follow``).
    """
    read = ReadOptions.of(options, dict(keywords), "scan_msgpack()", to_the_end=True)
    if batch_size is not None:
        positive("batch_size", batch_size)
    files = local_files(source)
    if record_type is None:
        record_type = files_type(files, infer_from, read)
        workers = None  # an inferred type lives in this process only
    names = tuple(arrow_schema(record_type).names)
    schema = polars_schema(record_type)
    if include_file_paths is not None:
        if include_file_paths in names:
            raise ValueError(
                f"include_file_paths={include_file_paths!r} names a field of the records: "
                "choose another name for the column of file paths"
            )
        schema = pl.Schema([*schema.items(), (include_file_paths, pl.String())])
    scan = _Scan(
        tuple(files), record_type, names, read, batch_size, workers, blocksize, include_file_paths
    )
    return register_io_source(scan, schema=schema, is_pure=True)


def read_msgpack(
    source: Paths,
    record_type: Any = None,
    *,
    batch_size: int | None = None,
    workers: int | None = None,
    blocksize: int | None = None,
    infer_from: int | None = None,
    include_file_paths: str | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> pl.DataFrame:
    """The records of the files ``source`` names as a ``polars.DataFrame``:
    :func:`scan_msgpack` with the same arguments, collected.

    Args:
        source: a path, a glob or a list of them, as :func:`scan_msgpack` takes it.
        record_type: the type of every record, its fields the columns; ``None``: inferred
            from every record of the files.
        batch_size: the most rows per batch read (default: 65536).
        workers: read each file on that many processes in byte ranges (``0``: one per core).
        blocksize: the size of the byte ranges ``workers`` read, in bytes.
        infer_from: infer the record type from the first N records only.
        include_file_paths: the name of a column holding each row's file.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`; not ``follow``).

    Raises:
        ReaderError: the first broken record, naming its file, index, offset and field.
        FileNotFoundError: a glob that matches no file, at the call.
        TypeError: a record type the reader cannot read, at the call.
        ValueError: a bad argument (``follow=True`` among them), at the call.

    Example:
        >>> frame = read_msgpack("telemetry/*.msgpack", Item)  # doctest: +SKIP
        >>> frame.group_by("process_id").len()  # doctest: +SKIP
    """
    read = ReadOptions.of(options, dict(keywords), "read_msgpack()")
    return scan_msgpack(
        source,
        record_type,
        batch_size=batch_size,
        workers=workers,
        blocksize=blocksize,
        infer_from=infer_from,
        include_file_paths=include_file_paths,
        options=read,
    ).collect()


@dataclasses.dataclass(frozen=True)
class _Scan:
    """What Polars calls to run the scan (``io_source``): the batches of the files, with the
    columns, filter and row limit Polars pushed into it."""

    files: tuple[str, ...]
    record_type: Any
    names: tuple[str, ...]
    options: ReadOptions
    batch_size: int | None
    workers: int | None
    blocksize: int | None
    path_column: str | None = None

    def __call__(
        self,
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        every = [*self.names, *([self.path_column] if self.path_column else [])]
        # No column at all still needs the rows: Polars itself asks for one to count them.
        wanted = every if with_columns is None else list(with_columns) or every[:1]
        # Polars applies no filter it handed the scan again: every row out must pass it,
        # so the columns it reads are built too, then dropped.
        needed = list(wanted)
        if predicate is not None:
            needed += [c for c in predicate.meta.root_names() if c not in needed]
        read = [c for c in needed if c != self.path_column] or list(self.names[:1])
        size = self.batch_size or batch_size or DEFAULT_BATCH_SIZE
        if n_rows is not None and predicate is None:
            size = max(1, min(size, n_rows))
        left = n_rows
        for name in self.files:
            if left == 0:
                return
            for frame in self._file(name, read, size, parallel=left is None):
                if self.path_column in needed:
                    frame = frame.with_columns(pl.lit(name, pl.String).alias(self.path_column))
                if predicate is not None:
                    frame = frame.filter(predicate)
                if frame.columns != wanted:
                    frame = frame.select(wanted)
                if left is not None:
                    if frame.height >= left:
                        yield frame.head(left)
                        return
                    left -= frame.height
                yield frame

    def _file(
        self, name: str, columns: Sequence[str], size: int, *, parallel: bool
    ) -> Iterator[pl.DataFrame]:
        # No process pool for a scan with a row limit: it stops in milliseconds instead.
        workers = self.workers if parallel else None
        batches = files_batches(
            [name],
            self.record_type,
            batch_size=size,
            columns=columns,
            workers=workers,
            blocksize=self.blocksize,
            options=self.options,
        )
        for batch in batches:
            yield _frame(batch)


def _frame(batch: pa.RecordBatch) -> pl.DataFrame:
    frame = pl.from_arrow(batch, rechunk=False)
    assert isinstance(frame, pl.DataFrame)
    return frame
