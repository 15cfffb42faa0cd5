"""Records as Arrow columns: ``pyarrow.RecordBatch``es and Tables, and through them Parquet.

Needs the ``arrow`` extra (``pip install '.[arrow]'`` in the project's clone).

>>> from msgpack_reader_py._arrow.reader import read_table
>>> table = read_table("items.msgpack")  # doctest: +SKIP
>>> table.to_pandas()  # doctest: +SKIP

No record object is built: the decoded tuples of each chunk the reader reads are checked as a
batch (every field checked, as the reader checks it) and handed to pyarrow in one call, which builds
the columns in C. A record whose values Arrow cannot hold (an int over int64) is located like
any other bad record: it raises a :class:`~msgpack_reader_py._base.errors.RecordError` with its index
and offset, after the batch of records before it. Every field has a column: one whose type has
no Arrow type of its own (``Any``, a union of a record and a scalar, ...) holds each value's
JSON text. Over 500 lines: a record type's Arrow schema, the columns built from it and the
readers that build them change together.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import operator
import os
import tempfile
import typing
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .._base.extras import missing_extra

try:
    import pyarrow as pa
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "arrow", feature="msgpack_reader_py._arrow.reader") from None

from .._base.cache import cached
from .._base.errors import ReaderError, describe
from .._base.log import note_skipped
from .._base.options import ReadKeywords, ReadOptions
from .._output.writers import json_text
from .._readers.streaming_reader import SourceReader, chained, check_start
from .._reference.model import Item
from .._split.parallel import split, worker_count
from .._split.ranges import Flattened
from .._stream.delivery import Plan
from .._stream.sources import Source
from .._types.columns import columns_of, members
from .._types.decoding import plain_values
from .._types.record_type import (
    ABSENT,
    FieldSpec,
    record_fields,
    record_kind,
    union_fields,
    union_members,
)
from .json_columns import JSON, storage_type

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
]

DEFAULT_BATCH_SIZE = 65536
"""Rows per ``RecordBatch`` unless a batch's columns reach ``MAX_BATCH_BYTES`` first."""

MAX_BATCH_BYTES = 256 * 1024 * 1024
"""A batch is cut short at this many bytes of columns: memory stays bounded for large records,
and a string column stays far below Arrow's 2 GiB limit per array. Checked after each read,
so a batch may pass it by what one read completes."""

# Pairs, found by identity, not a dict: an annotation may not be hashable (any one holding
# ``Annotated[int, {"unit": "ms"}]``, at any depth).
_ARROW_TYPES: tuple[tuple[Any, pa.DataType], ...] = (
    (int, pa.int64()),
    (float, pa.float64()),
    (str, pa.string()),
    (bytes, pa.binary()),
    (bool, pa.bool_()),
    (datetime.datetime, pa.timestamp("us", tz="UTC")),
)


@cached(maxsize=256)
def arrow_schema(record_type: Any = Item) -> pa.Schema:
    """The Arrow schema of ``record_type``'s records: one column per field, in order.

    ``int`` becomes ``int64``, ``float`` ``float64``, ``int | float`` ``float64`` (which
    refuses an int it cannot hold exactly), ``str`` ``string``, ``bytes`` ``binary``, ``bool``
    ``bool``, ``datetime`` ``timestamp[us, tz=UTC]``, ``None`` ``null``; an ``Enum`` or
    ``Literal`` becomes ``string`` (or ``int64`` when its values are ints); ``list[T]`` and
    ``tuple[T, ...]`` a list column, ``dict[K, V]`` (``K`` a str or an int) a map column, a
    nested record type a struct column (its children named by their map keys), all to any
    depth. Any other annotation (``Any``, a union of a record and a scalar, of a str and an
    int, a ``tuple[X, Y]``, ...) is a column of each value's JSON text (:data:`JSON`),
    written as :func:`~msgpack_reader_py._output.writers.json_text` writes it (``None`` is null).
    ``X | None`` (or ``Optional[X]``) is the same type, nullable; every other field is not
    nullable. Fields of a ``tuple[...]`` record type are named ``"0"``, ``"1"``, and so on.
    """
    columns = columns_of(record_type)
    fields = []
    for position, spec in enumerate(columns.fields):
        column = str(position) if columns.kind == "tuple" else spec.name
        fields.append(_arrow_field(column, spec.annotation))
    return pa.schema(fields)


def _arrow_field(name: str, annotation: Any) -> pa.Field[Any]:
    if annotation is None or annotation is type(None):
        return pa.field(name, pa.null())  # a field that holds only None
    inner, nullable = members(annotation)
    arrow_type = _arrow_type(inner)
    return pa.field(name, arrow_type, nullable=nullable or arrow_type == JSON)


def _arrow_type(annotation: Any) -> pa.DataType:
    """The Arrow type of a (non-null) annotation: :data:`JSON` where it has none of its own."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    for python_type, arrow_type in _ARROW_TYPES:
        if annotation is python_type:
            return arrow_type
    if origin is typing.Annotated:
        return _arrow_type(args[0])
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _of_values([member.value for member in annotation])
    if origin is typing.Literal:
        return _of_values(list(args))
    if origin in (list, tuple) and args and (origin is list or args[-1] is Ellipsis):
        return pa.list_(_arrow_field("item", args[0]))
    if origin is dict and args and members(args[0])[0] in (str, int):
        # A Field as the item type carries its nullability (pyarrow takes one; its stubs not).
        item: Any = _arrow_field("value", args[1])
        return pa.map_(_arrow_type(members(args[0])[0]), item)
    if _is_number(annotation):
        return pa.float64()
    if _is_kinds(annotation):  # the tag, then every kind's fields
        return pa.struct([_child(f) for f in union_fields(annotation)])
    if record_kind(annotation) not in (None, "tuple"):
        return pa.struct([_child(f) for f in record_fields(annotation)])
    return JSON


def _is_number(annotation: Any) -> bool:
    """Whether ``annotation`` is ``int | float``."""
    found = union_members(annotation)
    return found is not None and set(found) == {int, float}


def _is_kinds(annotation: Any) -> bool:
    found = union_members(annotation)
    return found is not None and all(record_kind(m) not in (None, "tuple") for m in found)


def _child(spec: FieldSpec) -> pa.Field[Any]:
    """A nested record's field as a struct column's child, named by its map key (a
    ``TypedDict``'s key that may be missing is nullable)."""
    child = _arrow_field(spec.wire_name, spec.annotation)
    return child.with_nullable(True) if spec.default is ABSENT else child


def _of_values(values: list[Any]) -> pa.DataType:
    """``string`` for str values, ``int64`` for ints: the column of an Enum or a Literal
    (:data:`JSON` for one that mixes them)."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return pa.string()
    if kinds == {int}:
        return pa.int64()
    return JSON


Prepare = Callable[[Any], Any]


def _preparer(annotation: Any) -> Prepare | None:
    """What makes a typed value of ``annotation`` one pyarrow builds its column from, where
    ``msgspec.to_builtins`` alone does not (:func:`~.decoding.plain_values` runs after it):
    a value of a :data:`JSON` column becomes its JSON text, a record a dict keyed by its map
    keys where its class does not name its fields so (a dataclass's ``msgpack_key``).
    ``None``: nothing to do, at any depth."""
    if annotation is None or annotation is type(None):
        return None
    inner, _ = members(annotation)
    while typing.get_origin(inner) is typing.Annotated:
        inner = typing.get_args(inner)[0]
    if _arrow_type(inner) == JSON:
        return _json_cell
    origin = typing.get_origin(inner)
    args = typing.get_args(inner)
    if origin in (list, tuple) and args:
        item = _preparer(args[0])
        return None if item is None else _each(item)
    if origin is dict and args:
        value = _preparer(args[1])
        return None if value is None else _each_value(value)
    kinds = union_members(inner)
    if kinds is not None and _is_kinds(inner):
        by_kind = {kind: _record_preparer(kind) for kind in kinds}
        if all(made is None for made in by_kind.values()):
            return None
        return _by_kind({k: made or _kept for k, made in by_kind.items()})
    if record_kind(inner) not in (None, "tuple"):
        return _record_preparer(inner)
    return None


def _json_cell(value: Any) -> str | None:
    return None if value is None else json_text(value)


def _kept(value: Any) -> Any:
    return value


def _each(item: Prepare) -> Prepare:
    return lambda values: None if values is None else [item(v) for v in values]


def _each_value(prepare: Prepare) -> Prepare:
    return lambda values: None if values is None else {k: prepare(v) for k, v in values.items()}


def _by_kind(preparers: dict[Any, Prepare]) -> Prepare:
    return lambda value: None if value is None else preparers[type(value)](value)


def _record_preparer(tp: Any) -> Prepare | None:
    fields = record_fields(tp)
    children = [(spec, _preparer(spec.annotation)) for spec in fields]
    kind = record_kind(tp)
    # msgspec.to_builtins makes a positional record (an array_like Struct, a NamedTuple) a
    # list, a dataclass a dict keyed by its attributes: a struct column takes a dict by keys.
    keyed = kind in ("array_struct", "namedtuple") or (
        kind in ("dataclass", "attrs") and any(spec.wire_name != spec.name for spec in fields)
    )
    if not keyed and all(prepare is None for _, prepare in children):
        return None
    read = operator.methodcaller if kind == "typeddict" else None
    getters = [
        (spec.wire_name, read("get", spec.name) if read else operator.attrgetter(spec.name), made)
        for spec, made in children
    ]
    config = getattr(tp, "__struct_config__", None)
    tag = None if config is None or config.tag is None else (config.tag_field, config.tag)

    def prepare(record: Any) -> Any:
        if record is None:
            return None
        made = {
            key: get(record) if child is None else child(get(record)) for key, get, child in getters
        }
        if tag is not None:
            made[tag[0]] = tag[1]
        return made

    return prepare


class _ArrowColumns:
    """The reader's batch converter: checked tuples in, one ``StructArray`` out.

    With a projection (``positions`` of the wanted fields, in the wanted order), only those
    fields are taken out of each tuple (``map(itemgetter(...))``, in C) and converted. Fields
    whose values pyarrow cannot take as they are (:func:`_preparer`) are prepared first; a
    struct of :data:`JSON` columns is built as text and cast to it.
    """

    refusals: tuple[type[Exception], ...] = (
        pa.ArrowException,
        OverflowError,
        ValueError,
        TypeError,
    )

    def __init__(
        self,
        schema: pa.Schema,
        positions: Sequence[int] | None,
        labels: Sequence[str],
        annotations: Sequence[Any],
        *,
        plain: bool = False,
    ) -> None:
        # Records with nested records, enums or containers are made plain values first.
        self.plain = plain
        self.fields = [field.with_type(storage_type(field.type)) for field in schema]
        self.labels = labels  # as the reader's own messages name the fields
        self.struct = pa.struct(self.fields)
        self.typed = pa.struct(list(schema))
        self.positions = positions
        self.pick: Callable[[Any], Any] | None = None
        if positions is not None:
            self.pick = operator.itemgetter(*positions)
        # Indexed by a row's field position: a projection's rows are still whole.
        preparers = [_preparer(annotation) for annotation in annotations]
        self.prepared = [(p, made) for p, made in enumerate(preparers) if made is not None]

    def __call__(self, values: list[Any], /) -> pa.StructArray:
        values = self._plain(values)
        if self.pick is None:
            built = pa.array(values, type=self.struct)
        elif len(self.fields) == 1:  # itemgetter of one position returns the value itself
            column = pa.array(list(map(self.pick, values)), type=self.fields[0].type)
            built = pa.StructArray.from_arrays([column], fields=self.fields)
        else:
            built = pa.array(list(map(self.pick, values)), self.struct)
        if self.struct != self.typed:
            built = built.cast(self.typed)
        return typing.cast(pa.StructArray, built)

    def _plain(self, values: list[Any]) -> list[Any]:
        if self.prepared:
            values = [self._prepare(row) for row in values]
        return plain_values(values) if self.plain else values

    def _prepare(self, row: Any) -> tuple[Any, ...]:
        prepared = list(row)
        for position, prepare in self.prepared:
            prepared[position] = prepare(prepared[position])
        return tuple(prepared)

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:
        values = self._plain(values)
        positions = self.positions or range(len(self.fields))
        checks = list(zip(self.fields, self.labels, strict=True))
        for position, record in enumerate(values):
            for (field, label), value in zip(
                checks, map(record.__getitem__, positions), strict=True
            ):
                refusal = self._refusal(field, label, value)
                if refusal is not None:
                    return position, refusal
        return None

    def _refusal(self, field: pa.Field[Any], label: str, value: object) -> str | None:
        try:
            pa.array([value], type=field.type)
        except self.refusals as exc:
            what = f"field `{label}`: {describe(value)} does not fit Arrow {field.type}"
            return f"{what} ({exc})"
        return None


def check_batch_size(batch_size: int) -> None:
    """Refuse a ``batch_size`` that is not a positive int (``ValueError``)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


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
    :class:`~msgpack_reader_py._base.errors.ReaderError` with the failing record's index and offset,
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
        options, **keywords: the reading options, as
            :class:`~msgpack_reader_py.StreamingReader` takes them
            (:class:`~msgpack_reader_py._base.options.ReadOptions`): ``ext_hook`` (for example
            :func:`~msgpack_reader_py._base.ext.fluentd_event_time`), ``forbid_unknown_keys``,
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
        check_batch_size(batch_size)
        job = ArrowPieces.of(columns)
        self.schema = job.schema(record_type)  # bad columns refused at the call
        self.batch_size = batch_size
        check_start(start)
        if start == 0 and split(source, record_type, read, workers):
            count = worker_count(workers)
            batches = self.open_ranges(
                source, record_type, job, read, workers=count, blocksize=blocksize
            )
        else:
            plan = job.plan(record_type, read)
            batches = self.open_batches(source, record_type, plan, read, start=start)
        pieces = chained(batches)
        # A function of the pieces, not a method: a generator bound to self would make a cycle,
        # and a dropped BatchReader would keep its file open until the cycle collector ran.
        self._records = _rebatched(pieces, batch_size)

    def to_pyarrow(self) -> pa.RecordBatchReader:
        """This reader as a ``pyarrow.RecordBatchReader``, for pyarrow APIs that take one
        (``pyarrow.dataset.write_dataset``, ``pyarrow.parquet``, DuckDB, Polars)."""
        return pa.RecordBatchReader.from_batches(self.schema, self._records)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<BatchReader {self.name!r} record_type={self.record_type!r}{state}>"


@dataclasses.dataclass(frozen=True)
class ArrowPieces(Flattened):
    """The Arrow columns of records (``columns``: those named, in that order), a struct array
    per read: what :class:`BatchReader` makes of each run, in this process or, for a byte
    range (:mod:`.ranges`), in a worker."""

    columns: tuple[str, ...] | None = None
    spool: str | None = None
    """Where a worker leaves a range's columns, as an Arrow IPC file, for the reader to map
    (:meth:`spooled`); ``None``: they are sent back as they are."""

    @classmethod
    def of(cls, columns: Sequence[str] | None) -> ArrowPieces:
        """The job building ``columns`` (``None``: every field); a str refused, not taken
        for its letters."""
        if isinstance(columns, str):
            raise TypeError(f"columns must be a sequence of column names, not a str: {columns!r}")
        return cls(None if columns is None else tuple(columns))

    def spooled(self, directory: str) -> ArrowPieces:
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
        converter = _ArrowColumns(
            self.schema(record_type), positions, labels, fields.annotations, plain=not fields.flat
        )
        return Plan(
            record_type,
            convert=converter,
            ext_hook=options.ext_hook,
            forbid_unknown_keys=options.forbid_unknown_keys,
        )


@dataclasses.dataclass(frozen=True)
class _Spooled:
    """Where a worker left a range's columns (:class:`ArrowPieces`)."""

    path: str


def _rebatched(
    pieces: Iterator[pa.StructArray], batch_size: int
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
    """Read ``source`` as ``pyarrow.RecordBatch``es; see :class:`BatchReader`.

    >>> for batch in read_batches("items.msgpack"):  # doctest: +SKIP
    ...     print(batch.num_rows, batch.schema.names)
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
    stream: ``follow=True``, which never ends it, is refused."""
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
