"""Columns of JSON text: where a field's values have no Arrow type of their own (``Any``, a
union of a record and a scalar, ...), its column holds each value's JSON text, as Arrow's JSON
extension type.

NaN and the infinities, which strict JSON writes as null, are ``NaN``, ``Infinity`` and
``-Infinity`` here, as Python's ``json`` writes them and DuckDB reads them: a column keeps
every value.

pyarrow builds no extension type from Python values inside another type, and some of its
functions take none (an empty table, a count of distinct values): each such place goes
through the type's storage, ``string``, here. Needs pyarrow; imported only where Arrow is.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import Any

import msgpack
import msgspec
import pyarrow as pa

__all__ = [
    "JSON",
    "empty_table",
    "is_json",
    "leaves_changed",
    "parsed",
    "storage",
    "storage_type",
    "typed",
]

JSON: pa.DataType = pa.json_(pa.string())
"""The column type of a field whose values have no Arrow type of their own: their JSON text,
as Arrow's JSON extension type (Parquet keeps it, DuckDB reads it as its ``JSON``)."""


def is_json(arrow_type: pa.DataType) -> bool:
    """Whether ``arrow_type`` is Arrow's JSON extension type."""
    return isinstance(arrow_type, pa.BaseExtensionType) and (
        arrow_type.extension_name == "arrow.json"
    )


def storage_type(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with every extension type in it its storage (JSON: ``string``)."""
    return leaves_changed(arrow_type, _same)


def _same(arrow_type: pa.DataType) -> pa.DataType:
    return arrow_type


def leaves_changed(
    arrow_type: pa.DataType, change: Callable[[pa.DataType], pa.DataType]
) -> pa.DataType:
    """``arrow_type`` with every extension type in it its storage, and each type in it that
    holds no other (not a struct, a list or a map) ``change`` of it."""
    nested: Any = arrow_type
    if isinstance(arrow_type, pa.BaseExtensionType):
        return leaves_changed(nested.storage_type, change)
    if pa.types.is_struct(arrow_type):
        return pa.struct([_changed(nested.field(i), change) for i in range(nested.num_fields)])
    if pa.types.is_list(arrow_type):
        return pa.list_(_changed(nested.value_field, change))
    if pa.types.is_map(arrow_type):
        item: Any = _changed(nested.item_field, change)
        return pa.map_(leaves_changed(nested.key_type, change), item)
    return change(arrow_type)


def _changed(field: pa.Field[Any], change: Callable[[pa.DataType], pa.DataType]) -> pa.Field[Any]:
    return field.with_type(leaves_changed(field.type, change))


def storage(column: pa.ChunkedArray[Any]) -> pa.ChunkedArray[Any]:
    """A column of JSON text as its text (a column of any other type as it is)."""
    if not isinstance(column.type, pa.BaseExtensionType):
        return column
    chunks: Any = column.chunks
    stored: pa.ChunkedArray[Any] = pa.chunked_array(
        [chunk.storage for chunk in chunks], typing.cast(Any, column.type.storage_type)
    )
    return stored


def typed(array: pa.Array[Any], arrow_type: pa.DataType) -> pa.Array[Any]:
    """``array`` as ``arrow_type``, which differs from its type at most in its leaves: the
    same buffers, an extension type wrapped around its storage or taken off it, and only a
    leaf of another type cast.

    Not a cast of the whole: a cast imports ``pyarrow.compute`` (50-70 ms of a conversion's
    start), and pyarrow 26 casts a list of structs of ``null`` fields, even to its own type,
    to an invalid array (the struct's children keep the list's length, not its values'),
    which fails later, far from here.
    """
    if array.type == arrow_type:
        return array
    nested: Any = arrow_type
    if isinstance(arrow_type, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(nested, typed(array, nested.storage_type))
    if isinstance(array, pa.ExtensionArray):
        return typed(array.storage, arrow_type)
    children = _children(array, arrow_type)
    if children is None:
        return array.cast(arrow_type)
    if array.offset:
        # A struct's children are read with its offset applied: start from zero.
        return typed(pa.concat_arrays([array]), arrow_type)
    return pa.Array.from_buffers(
        arrow_type,
        len(array),
        array.buffers()[: arrow_type.num_buffers],
        array.null_count,
        children=children,
    )


def _children(array: pa.Array[Any], arrow_type: pa.DataType) -> list[pa.Array[Any]] | None:
    """The children of ``array`` as those of ``arrow_type``, where both are structs of as
    many fields, lists or maps; else None."""
    raw: Any = array
    nested: Any = arrow_type
    kind = array.type
    if pa.types.is_struct(kind) and pa.types.is_struct(arrow_type):
        if kind.num_fields != nested.num_fields:
            return None
        return [typed(raw.field(i), nested.field(i).type) for i in range(nested.num_fields)]
    if pa.types.is_map(kind) and pa.types.is_map(arrow_type):  # values: keys and items
        return [typed(raw.values, pa.struct([nested.key_field, nested.item_field]))]
    if pa.types.is_list(kind) and pa.types.is_list(arrow_type):
        return [typed(raw.values, nested.value_type)]
    return None


def _empty(arrow_type: pa.DataType) -> pa.Array[Any]:
    """An empty array of ``arrow_type``."""
    return typed(pa.array([], storage_type(arrow_type)), arrow_type)


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` with no rows (``Schema.empty_table`` refuses an extension type
    inside another type)."""
    arrays = [_empty(f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _json_value(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:  # NaN or an infinity, which strict JSON has no word for
        return json.loads(text)


def parsed(arrow_type: pa.DataType) -> Callable[[Any], Any] | None:
    """What turns a value of ``arrow_type`` as pyarrow gives it back into the value it holds,
    every JSON text in it parsed, so that JSON Lines and a CSV cell hold the value, as a
    typed record's would, not its text; ``None``: nothing to parse. A timestamp of
    nanoseconds is given as its int64 (:func:`nanoseconds_as_ints`: Python's ``datetime``
    holds microseconds), and made a ``msgpack.Timestamp``."""
    nested: Any = arrow_type
    if is_json(arrow_type):
        return _json_value
    if is_nanoseconds(arrow_type):
        return _timestamp
    if pa.types.is_struct(arrow_type):
        children = [(f.name, parsed(f.type)) for f in nested]
        wanted = [(name, parse) for name, parse in children if parse is not None]
        if not wanted:
            return None
        return lambda row: None if row is None else {**row, **{n: p(row[n]) for n, p in wanted}}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = parsed(nested.value_type)
        if item is None:
            return None
        return lambda items: None if items is None else [*map(item, items)]
    if pa.types.is_map(arrow_type):
        value = parsed(nested.item_type)
        if value is None:
            return None
        return lambda pairs: None if pairs is None else {k: value(v) for k, v in pairs.items()}
    return None


def nanoseconds_as_ints(schema: pa.Schema) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """What makes a batch of ``schema`` one with each timestamp of nanoseconds in it, at any
    depth, its int64: what pyarrow gives back as Python values without rounding them
    (:func:`parsed` makes them timestamps again). Worked out once, for every batch."""
    struct = pa.struct(list(schema))
    if not holds_nanoseconds(struct):
        return lambda batch: batch
    plain = _nanoseconds_as_int64(struct)

    def as_ints(batch: pa.RecordBatch) -> pa.RecordBatch:
        whole = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
        return pa.RecordBatch.from_struct_array(typing.cast(pa.StructArray, typed(whole, plain)))

    return as_ints


def holds_nanoseconds(arrow_type: pa.DataType) -> bool:
    """Whether a timestamp of nanoseconds is in ``arrow_type``, at any depth."""
    return _nanoseconds_as_int64(arrow_type) != arrow_type


def _nanoseconds_as_int64(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with each timestamp of nanoseconds in it int64, and every other type as
    it is: an extension type too (DuckDB gives a bool as ``arrow.bool8``, whose storage,
    ``int8``, pyarrow gives back as ints)."""
    nested: Any = arrow_type
    if is_nanoseconds(arrow_type):
        return pa.int64()
    if pa.types.is_struct(arrow_type):
        return pa.struct([_int64_field(nested.field(i)) for i in range(nested.num_fields)])
    if pa.types.is_list(arrow_type):
        return pa.list_(_int64_field(nested.value_field))
    if pa.types.is_map(arrow_type):
        item: Any = _int64_field(nested.item_field)
        return pa.map_(nested.key_type, item)
    return arrow_type


def _int64_field(field: pa.Field[Any]) -> pa.Field[Any]:
    return field.with_type(_nanoseconds_as_int64(field.type))


def is_nanoseconds(arrow_type: pa.DataType) -> bool:
    """Whether ``arrow_type`` is a timestamp of nanoseconds (a ``msgpack.Timestamp``'s)."""
    return pa.types.is_timestamp(arrow_type) and typing.cast(Any, arrow_type).unit == "ns"


def _timestamp(value: int | None) -> msgpack.Timestamp | None:
    return None if value is None else msgpack.Timestamp.from_unix_nano(value)
