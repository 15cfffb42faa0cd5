"""Many files at once: a Dask Bag or DataFrame of their records, a partition per file or, for
a file larger than ``blocksize``, per byte range of it.

Needs the ``dask`` extra (``pip install '.[dask]'`` in the project's clone).

>>> from msgpack_reader_py.dask import read_dataframe
>>> df = read_dataframe("s3://bucket/telemetry/*.msgpack")  # doctest: +SKIP
>>> df.groupby("process_id").value.mean().compute()  # doctest: +SKIP

Files are opened through fsspec, so any filesystem it knows works: local paths, ``memory://``,
``s3://`` (with s3fs), ``gs://`` (with gcsfs), and so on; ``storage_options`` go to it. Each
file or range is read by one task, with the reader's checks and error contract (a range's
first record proved by a chain of small tasks, :mod:`.ranges`: the result is exactly the
sequential one); a bad record fails the computation with the reader's error, its
:attr:`~.ReaderError.source` set to the file's name (a path, or a URL off the local
filesystem).

The record type travels to the workers as :mod:`~msgpack_reader_py._types.shipping` sends it: by
reference where they can import it, by value where they cannot (a type defined in a notebook
or a script), whichever scheduler runs the graph; and Dask's token of it is the same however
often it was used.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ._base.checks import positive
from ._base.extras import missing_extra

try:
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
    from dask._task_spec import Alias, Task
    from dask.dataframe.dask_expr._expr import Expr, PartitionsFiltered
    from dask.dataframe.dask_expr.io import BlockwiseIO
    from dask.dataframe.io.csv import AUTO_BLOCKSIZE
    from dask.delayed import Delayed, delayed
    from dask.sizeof import sizeof
    from fsspec.core import OpenFile, url_to_fs
    from fsspec.implementations.local import LocalFileSystem
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "dask", feature="msgpack_reader_py.dask") from None

from ._arrow.json_columns import JSON, empty_table, storage
from ._arrow.reader import ArrowJob, arrow_schema, read_batches
from ._base.errors import ReaderError
from ._base.log import note_skipped
from ._base.options import ReadKeywords, ReadOptions
from ._readers.streaming_reader import StreamingReader
from ._reference.model import Item
from ._split.ranges import (
    ByteRange,
    Piece,
    Proof,
    RangeArguments,
    Records,
    cut_file,
    local_path,
    read_range,
    size_of,
    splittable,
)
from ._stream.delivery import Plan
from ._stream.files import is_glob
from ._types.record_type import type_label
from ._types.shipping import Shipped, shipped_values

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["open_files", "pandas_dtypes", "read_bag", "read_dataframe"]

UrlPath = str | Sequence[str]
_E = typing.TypeVar("_E")


def open_files(urlpath: UrlPath, storage_options: dict[str, Any] | None = None) -> list[OpenFile]:
    """The files ``urlpath`` names: a path or URL, a glob, or a list of them, in order.

    A glob (``*``, ``?``, ``[...]``) gives its matching files, not directories, sorted. Raises
    ``FileNotFoundError`` when a glob, alone or in a list, matches nothing: a mistyped pattern
    must not quietly leave its files out. A plain path is not checked here: a missing file
    fails when it is read, naming it. ``storage_options`` go to the filesystem of each path
    (fsspec's ``url_to_fs``): credentials, endpoints, caching.
    """
    patterns = [urlpath] if isinstance(urlpath, str) else list(urlpath)
    files: list[OpenFile] = []
    for pattern in patterns:
        fs, path = url_to_fs(pattern, **(storage_options or {}))
        if is_glob(path):
            found = fs.glob(path, detail=True)
            paths = sorted(name for name, info in found.items() if info["type"] != "directory")
            if not paths:
                raise FileNotFoundError(f"no files match {pattern!r}")
        else:
            paths = [path]
        files.extend(OpenFile(fs, path, mode="rb") for path in paths)
    return files


def _name(file: OpenFile) -> str:
    return str(file.path) if isinstance(file.fs, LocalFileSystem) else str(file.full_name)


def _ranges(
    file: OpenFile, record_type: Any, options: ReadOptions, blocksize: int | None
) -> list[ByteRange] | None:
    """The byte ranges of ``blocksize`` bytes one file is split into; ``None`` for a file read
    whole (``blocksize=None``, one range, or a file that cannot be split: compressed other
    than in zstd frames on a local disk, or untyped records)."""
    if blocksize is None:
        return None
    try:
        # A file on a local disk may be zstd frames, larger decompressed than it is.
        if size_of(file) <= blocksize and local_path(file) is None:
            return None
        if splittable(file, record_type, options) is not None:
            return None
    except FileNotFoundError:
        return None  # fails when read, naming the file
    ranges = cut_file(file, blocksize, decompress=options.decompress)
    return ranges if len(ranges) > 1 else None


def _pieces(
    file: OpenFile,
    ranges: list[ByteRange],
    arguments: RangeArguments,
    partition: Callable[..., Any],
    *extra: Any,
) -> list[Delayed]:
    """The delayed partitions of one file split into ``ranges``: ``partition(piece, proof,
    file, arguments, *extra)`` of each range's piece, read by a task of its own, and the proof
    of where its records start, made by a chain of small tasks (:meth:`~.ranges.Proof.settle`
    on where each range says its records run)."""
    proof: Any = Proof()
    partitions = []
    for byte_range in ranges:
        read = delayed(_read, pure=True)(file, byte_range, *arguments)
        partitions.append(delayed(partition, pure=True)(read, proof, file, arguments, *extra))
        proof = delayed(_proof_after, pure=True)(
            delayed(Piece.where, pure=True)(read), proof, file, arguments
        )
    return partitions


def _read(file: OpenFile, byte_range: ByteRange, *arguments: Any) -> Piece:
    """One range's piece (:func:`~.ranges.read_range`), read by a task of this module's: a
    worker that unpickles it imports this module, and with it :func:`_piece_size`, before it
    weighs what the task returns."""
    return read_range(file, byte_range, *shipped_values(arguments))


def _piece_size(piece: Piece) -> int:
    """The bytes a range's piece holds, as Dask weighs it. Left to Dask, a piece weighs what
    the object alone does, a hundred bytes: the scheduler then ran the task that proves it
    on whichever worker was free and copied its rows there (on two workers, half as long
    again as the reading itself)."""
    return int(sizeof(piece.value)) + 1000


sizeof.register(Piece)(_piece_size)


def _proof_after(piece: Piece, proof: Proof, file: OpenFile, arguments: RangeArguments) -> Proof:
    return proof.settle(piece, file, _arguments(arguments))[1]


def _arguments(arguments: RangeArguments) -> RangeArguments:
    """A range's arguments as a task received them, its record type no longer shipped."""
    record_type, options, job = shipped_values(arguments)
    return record_type, options, job


def _shipped(record_type: Any) -> Shipped:
    """``record_type`` as the graph holds it (see the module's docstring)."""
    return Shipped(record_type, type_label(record_type))


def _settled(piece: Piece, proof: Proof, file: OpenFile, arguments: RangeArguments) -> Piece:
    """``piece`` as the sequential read has it (read again, in this task, from the proved
    start where the guess was wrong), its skipped records told and its error raised, naming
    the file. Done in the task that makes the partition of it: a task of its own would hand
    the piece on, and Dask may run the next one on another worker, copying every row."""
    piece = proof.settle(piece, file, _arguments(arguments))[0]
    note_skipped(_name(file), piece.skipped, piece.errors)
    if piece.error is not None:
        raise piece.error.in_source(_name(file)) from None
    return piece


def _records(file: OpenFile, record_type: Any, options: ReadOptions) -> list[Any]:
    """One partition of :func:`read_bag`: the records of one file."""
    (record_type,) = shipped_values((record_type,))
    with file as stream:
        reader = StreamingReader(stream, record_type, options=options)
        try:
            records = list(reader)
        except ReaderError as exc:
            raise exc.in_source(_name(file)) from exc
    note_skipped(_name(file), reader.skipped, reader.errors)
    return records


def _frame(
    file: OpenFile,
    record_type: Any,
    options: ReadOptions,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """One partition of :func:`read_dataframe`: the records of one file, as columns.

    ``columns`` is Dask's projection (the columns a computation uses): only those are built
    (:func:`_built`).
    """
    (record_type,) = shipped_values((record_type,))
    with file as stream:
        try:
            with read_batches(
                stream, record_type, columns=_built(record_type, columns), options=options
            ) as batches:
                table = pa.Table.from_batches(list(batches), schema=batches.schema)
        except ReaderError as exc:
            raise exc.in_source(_name(file)) from exc
    note_skipped(_name(file), batches.skipped, batches.errors)
    return _shown(_to_pandas(table), columns)


def _piece_records(
    piece: Piece, proof: Proof, file: OpenFile, arguments: RangeArguments
) -> list[Any]:
    """One partition of :func:`read_bag` for a byte range: its proved records."""
    records: list[Any] = _settled(piece, proof, file, arguments).value
    return records


@dataclasses.dataclass(frozen=True)
class _FrameRows:
    """A range job (:class:`~.ranges.RangeJob`): a range's rows as one pandas DataFrame of the
    columns ``arrow`` builds (``schema``), made in the task that reads the range.

    The task that makes its partition then only settles the proof, so cheaply that Dask's work
    stealing leaves it beside the rows. A partition task that did the converting was worth
    stealing, and a stolen one had the range's rows copied to its worker: on two workers, up
    to 2 s of copying in a 5 s read."""

    arrow: ArrowJob
    schema: pa.Schema

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return self.arrow.plan(record_type, options)

    def collect(self, batches: Iterator[list[Any]]) -> pd.DataFrame:
        rows = [pa.RecordBatch.from_struct_array(array) for array in self.arrow.collect(batches)]
        return _to_pandas(pa.Table.from_batches(rows, schema=self.schema))


def _piece_frame(
    piece: Piece,
    proof: Proof,
    file: OpenFile,
    arguments: RangeArguments,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """One partition of :func:`read_dataframe` for a byte range: its proved rows (none of its
    columns where Dask asked for no ``columns``)."""
    return _shown(_settled(piece, proof, file, arguments).value, columns)


def _expression(kind: type[_E], *operands: Any) -> _E:
    """A Dask expression of this module made of its ``operands`` (Dask leaves its expressions'
    constructor unannotated)."""
    made: Any = kind
    return typing.cast(_E, made(*operands))


def _projection(expr: Any) -> list[str] | None:
    """The columns Dask's projection left an expression of this module (``None``: all)."""
    return typing.cast("list[str] | None", expr.operand("columns"))


class _Part(NamedTuple):
    """One partition of :func:`read_dataframe`: a file read whole, or one byte range of it."""

    file: OpenFile
    byte_range: ByteRange | None


def _built(record_type: Any, columns: list[str] | None) -> list[str] | None:
    """The columns a partition builds for Dask's projection ``columns``: no column at all
    (``df[[]]``) still needs the row count, so one column is read for it (and dropped by
    :func:`_shown`)."""
    if columns is None or columns:
        return columns
    return [_first_column(record_type)]


def _shown(frame: pd.DataFrame, columns: list[str] | None) -> pd.DataFrame:
    """A partition's frame as Dask's projection ``columns`` asked for it (see :func:`_built`)."""
    return frame[[]] if columns == [] else frame


class _Frames(PartitionsFiltered, BlockwiseIO):
    """The expression :func:`read_dataframe` gives Dask: a partition per :class:`_Part`.

    Its ``columns`` are Dask's projection (the columns a computation uses): Dask sets them
    as it optimizes, and every partition, a file's or a range's, builds only those. A range's
    partition is made by :class:`_RangeReads`, whose tasks prove where it starts. Its
    ``record_type`` is :class:`~msgpack_reader_py._types.shipping.Shipped`."""

    # Dask's declarations, as its own expressions make them:
    _parameters = ["parts", "record_type", "options", "columns", "_partitions"]  # noqa: RUF012
    _defaults = {"columns": None, "_partitions": None}  # noqa: RUF012
    _absorb_projections = True

    @property
    def _funcname(self) -> str:  # what Dask names its tasks after
        return "read-msgpack"

    @functools.cached_property
    def _meta(self) -> pd.DataFrame:
        meta = _to_pandas(empty_table(arrow_schema(self.record_type.value)))
        columns = _projection(self)
        return meta if columns is None else meta[columns]

    @property
    def columns(self) -> list[str]:
        return list(self._meta.columns)

    def _divisions(self) -> tuple[None, ...]:
        return (None,) * (len(self.parts) + 1)

    @functools.cached_property
    def _reads(self) -> _RangeReads | None:
        if all(part.byte_range is None for part in self.parts):
            return None
        return _expression(
            _RangeReads, self.parts, self.record_type, self.options, _projection(self)
        )

    def dependencies(self) -> list[Any]:
        return [] if self._reads is None else [self._reads]

    def _filtered_task(self, name: Any, index: int) -> Any:
        part = self.parts[index]
        if self._reads is not None and part.byte_range is not None:
            return Alias(name, (self._reads._name, index))
        columns = _projection(self)
        return Task(
            name, _frame, part.file, self.record_type, self.options, columns, _data_producer=True
        )


class _RangeReads(Expr):
    """The tasks of the split files' partitions of :class:`_Frames`, one key per partition
    (its index among all the partitions): each range read by a task of its own, building the
    projected columns, and proved by the chain of :func:`_pieces`."""

    _parameters = ["parts", "record_type", "options", "columns"]  # noqa: RUF012

    @property
    def _funcname(self) -> str:
        return "read-msgpack-ranges"

    def _layer(self) -> dict[Any, Any]:
        shipped, columns = self.record_type, _projection(self)
        built = ArrowJob.of(_built(shipped.value, columns))
        job = _FrameRows(built, built.schema(shipped.value))
        arguments: RangeArguments = (shipped, self.options, job)
        runs: list[list[int]] = []  # each split file's partitions
        for index, part in enumerate(self.parts):
            if part.byte_range is not None:
                if part.byte_range.number == 0:
                    runs.append([])
                runs[-1].append(index)
        graph: dict[Any, Any] = {}
        for run in runs:
            file = self.parts[run[0]].file
            ranges = [self.parts[index].byte_range for index in run]
            pieces = _pieces(file, ranges, arguments, _piece_frame, columns)
            for index, piece in zip(run, pieces, strict=True):
                graph.update(piece.__dask_graph__())
                graph[(self._name, index)] = Alias((self._name, index), piece.key)
        return graph


def _blocksize(blocksize: int | str | None) -> int | None:
    """The byte ranges' size ``blocksize`` asks for: ``"default"`` is what
    ``dask.dataframe.read_csv`` takes by default (a tenth of the memory per core, at most
    64 MB), ``None`` one partition per file."""
    if blocksize == "default":
        return int(AUTO_BLOCKSIZE)
    if blocksize is None:
        return None
    return int(positive("blocksize", blocksize, allowed=("default", None)))


def _first_column(record_type: Any) -> str:
    return str(arrow_schema(record_type).names[0])


def pandas_dtypes(record_type: Any = Item) -> dict[str, Any]:
    """The pandas dtype of each column :func:`read_dataframe` gives ``record_type``.

    ``int64``, ``uint64`` (:data:`~msgpack_reader_py.UInt64`), ``float64`` and ``bool`` for
    plain fields, their nullable forms (``Int64``, ``UInt64``, ``Float64``, ``boolean``) for
    ``X | None`` fields (a ``Float64`` column holds NaN apart from ``<NA>``),
    ``string[pyarrow]`` for ``str`` (and
    string enums and literals) and for a column of JSON text (a field of no one type:
    :data:`~msgpack_reader_py.JSON`), ``object`` for ``bytes`` and ``None``,
    ``datetime64[us, UTC]`` for ``datetime``, and ``pandas.ArrowDtype`` of the Arrow type for
    nested records (struct), lists and maps.
    """
    return {field.name: _dtype(field) for field in arrow_schema(record_type)}


def _dtype(field: pa.Field[Any]) -> Any:
    if pa.types.is_string(field.type) or field.type == JSON:
        return pd.StringDtype("pyarrow")  # JSON text too: a column of values of no one type
    if pa.types.is_null(field.type):
        return object
    if pa.types.is_binary(field.type):
        return object
    if pa.types.is_nested(field.type):
        return pd.ArrowDtype(field.type)
    if pa.types.is_timestamp(field.type):
        return pd.DatetimeTZDtype(field.type.unit, field.type.tz)
    nullable = {
        "int64": pd.Int64Dtype(),
        "uint64": pd.UInt64Dtype(),
        "double": pd.Float64Dtype(),
        "bool": pd.BooleanDtype(),
    }
    if field.nullable:
        return nullable[str(field.type)]
    return field.type.to_pandas_dtype()


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    columns: dict[str, Any] = {}
    for field, column in zip(table.schema, table.columns, strict=True):
        dtype = _dtype(field)
        if field.type == JSON:  # its text
            column = storage(column)
            field = field.with_type(column.type)
        if isinstance(dtype, pd.ArrowDtype):
            # Wrapped as it is: pandas 2's ArrowDtype casts a column to its own type, and
            # pyarrow casts a list of structs of null fields to an invalid array.
            columns[field.name] = pd.Series(pd.arrays.ArrowExtensionArray(column))
        elif isinstance(dtype, pd.Float64Dtype):
            columns[field.name] = pd.Series(_floating(column), copy=False)
        elif isinstance(dtype, pd.api.extensions.ExtensionDtype):
            columns[field.name] = column.to_pandas(types_mapper={field.type: dtype}.get)
        else:
            columns[field.name] = column.to_pandas()
    frame: pd.DataFrame = pd.DataFrame(columns)
    return frame


def _floating(column: pa.ChunkedArray[Any]) -> pd.arrays.FloatingArray:
    """A nullable float column with NaN kept apart from null: pyarrow's own conversion to
    ``Float64`` masks every NaN as missing, and the value was lost."""
    values = column.to_numpy()  # a null's value is NaN, masked below
    if not values.flags.writeable:
        values = values.copy()  # pandas writes to its arrays' values (fillna, ...)
    return pd.arrays.FloatingArray(values, column.is_null().to_numpy())


def read_bag(
    urlpath: UrlPath,
    record_type: Any = Item,
    *,
    blocksize: int | str | None = "default",
    storage_options: dict[str, Any] | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> db.Bag:
    """A ``dask.bag.Bag`` of the records of every file ``urlpath`` names: a partition per file,
    or per byte range of ``blocksize`` bytes of a larger one (``"default"``: as
    ``dask.dataframe.read_csv`` chooses; ``None``: a partition per file).

    Records are ``record_type`` objects, built as :class:`~msgpack_reader_py.StreamingReader`
    builds them (``Item`` by default), with the reading options
    (:class:`~msgpack_reader_py.ReadOptions`: ``ext_hook``, ``on_error``, ...; not
    ``follow``), which travel to the workers. With ``on_error="skip"``, each file's skipped
    records are counted on the ``msgpack_reader_py`` logger where it is read. The files are
    listed now and read when the bag is computed.

    Args:
        urlpath: a path or URL, a glob, or a list of them, opened through fsspec.
        record_type: the type each record becomes, every field checked. Default ``Item``.
        blocksize: the size of the byte ranges a large file is read in, in bytes;
            ``"default"`` as ``dask.dataframe.read_csv`` chooses, ``None`` a partition per file.
        storage_options: passed to fsspec to open the files (credentials, ``anon``, ...).
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`; not ``follow``).

    Raises:
        FileNotFoundError: a glob that matches no file, at the call.
        ReaderError: from ``compute()``, on broken data: the reader's own error, its
            ``source`` the file, with its index and offset.

    Example:
        >>> items = read_bag("telemetry/*.msgpack")  # doctest: +SKIP
        >>> items.filter(lambda item: item.line > 100).count().compute()  # doctest: +SKIP
    """
    read = ReadOptions.of(options, dict(keywords), "read_bag()", to_the_end=True)
    size = _blocksize(blocksize)
    parts = []
    shipped = _shipped(record_type)
    for file in open_files(urlpath, storage_options):
        ranges = _ranges(file, record_type, read, size)
        if ranges is None:
            parts.append(delayed(_records, pure=True)(file, shipped, read))
        else:
            parts.extend(_pieces(file, ranges, (shipped, read, Records()), _piece_records))
    return typing.cast(db.Bag, db.from_delayed(parts))


def read_dataframe(
    urlpath: UrlPath,
    record_type: Any = Item,
    *,
    blocksize: int | str | None = "default",
    storage_options: dict[str, Any] | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> dd.DataFrame:
    """A ``dask.dataframe.DataFrame`` of the records of every file ``urlpath`` names.

    Partitions as :func:`read_bag` cuts them, one column per field of ``record_type``, with the
    dtypes of :func:`pandas_dtypes`; each file or range is read as
    :func:`~msgpack_reader_py.read_batches` reads (records validated, no record object
    built) with the reading options, as :func:`read_bag` takes them, building only the columns
    a computation uses (Dask's projection). The files are listed (and sized) now and read when
    the frame is computed, on whatever scheduler is active: a ``distributed.Client`` sends the
    work to its cluster.

    Args:
        urlpath: a path or URL, a glob, or a list of them, opened through fsspec.
        record_type: the type of every record, its fields the columns. Default ``Item``.
        blocksize: the size of the byte ranges a large file is read in, in bytes;
            ``"default"`` as ``dask.dataframe.read_csv`` chooses, ``None`` a partition per file.
        storage_options: passed to fsspec to open the files (credentials, ``anon``, ...).
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options one by one (``ext_hook``, ``on_error``,
            ``max_record_size``, ...: :class:`~msgpack_reader_py.ReadOptions`; not ``follow``).

    Raises:
        FileNotFoundError: a glob that matches no file, at the call.
        TypeError: a record type with a field that has no column type, at the call.
        ReaderError: from ``compute()``, on broken data: the reader's own error, its
            ``source`` the file, with its index and offset.

    Example:
        >>> df = read_dataframe("telemetry/*.msgpack")  # doctest: +SKIP
        >>> df.groupby("process_id").value.mean().compute()  # doctest: +SKIP
    """
    read = ReadOptions.of(options, dict(keywords), "read_dataframe()", to_the_end=True)
    size = _blocksize(blocksize)
    parts: list[_Part] = []
    for file in open_files(urlpath, storage_options):
        ranges = _ranges(file, record_type, read, size)
        parts.extend([_Part(file, None)] if ranges is None else [_Part(file, r) for r in ranges])
    return dd.DataFrame(_expression(_Frames, tuple(parts), _shipped(record_type), read))
