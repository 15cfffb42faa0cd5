"""A record type's columns in Arrow: its schema (:func:`arrow_schema`), and what turns a
batch of its rows (checked tuples of field values) into one ``pyarrow.StructArray``.

Every field has a column: one whose type has no Arrow type of its own (``Any``, a union of a
record and a scalar, ...) holds each value's JSON text (:data:`~.json_columns.JSON`).
Needs the ``arrow`` extra.
"""

from __future__ import annotations

import datetime
import enum
import operator
import typing
from collections.abc import Callable, Sequence
from typing import Any

import msgpack
import pyarrow as pa

from .._base.cache import cached
from .._base.errors import describe
from .._base.json_text import json_text_kept
from .._reference.model import Item
from .._types.columns import columns_of, is_scalar, members
from .._types.decoding import plain_values
from .._types.ints import is_unsigned
from .._types.record_type import (
    ABSENT,
    FieldSpec,
    record_fields,
    record_kind,
    unannotated,
    union_fields,
    union_members,
)
from .json_columns import JSON, storage_type, typed

__all__ = ["ArrowColumns", "arrow_schema"]


# Pairs, found by identity, not a dict: an annotation may not be hashable (any one holding
# ``Annotated[int, {"unit": "ms"}]``, at any depth).
_ARROW_TYPES: tuple[tuple[Any, pa.DataType], ...] = (
    (int, pa.int64()),
    (float, pa.float64()),
    (str, pa.string()),
    (bytes, pa.binary()),
    (bool, pa.bool_()),
    (datetime.datetime, pa.timestamp("us", tz="UTC")),
    (msgpack.Timestamp, pa.timestamp("ns", tz="UTC")),
)


@cached(maxsize=256)
def arrow_schema(record_type: Any = Item) -> pa.Schema:
    """The Arrow schema of ``record_type``'s records: one column per field, in order.

    ``int`` becomes ``int64`` (:data:`~msgpack_reader_py.UInt64`: ``uint64``), ``float``
    ``float64``, ``int | float`` ``float64`` (which refuses an int it cannot hold exactly),
    ``str`` ``string``, ``bytes`` ``binary``, ``bool`` ``bool``, ``datetime``
    ``timestamp[us, tz=UTC]``, ``msgpack.Timestamp`` ``timestamp[ns, tz=UTC]``, ``None``
    ``null``; an ``Enum`` or ``Literal`` becomes
    ``string`` (or ``int64`` when its values are ints); ``list[T]`` and ``tuple[T, ...]`` a
    list column, ``dict[K, V]`` (``K`` a str or an int) a map column, a nested record type a
    struct column (its children named by their map keys), all to any depth. Any other
    annotation (``Any``, a union of a record and a scalar, of a str and an int, a
    ``tuple[X, Y]``, ...) is a column of each value's JSON text (:data:`JSON`), written as
    :func:`~msgpack_reader_py._output.text.json_text` writes it (``None`` is null; NaN and
    the infinities ``NaN``, ``Infinity`` and ``-Infinity``, which DuckDB reads too).
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
        return pa.uint64() if is_unsigned(annotation) else _arrow_type(args[0])
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _of_values([member.value for member in annotation])
    if origin is typing.Literal:
        return _of_values(list(args))
    if origin in (list, tuple) and args and (origin is list or args[-1] is Ellipsis):
        return pa.list_(_arrow_field("item", args[0]))
    if origin is dict and args and unannotated(members(args[0])[0]) in (str, int):
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
    return found is not None and {unannotated(m) for m in found} == {int, float}


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
    (:data:`JSON` for one that mixes them). msgspec reads no such value over int64's most."""
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
    inner = unannotated(members(annotation)[0])
    if _arrow_type(inner) == JSON:
        return _json_cell
    if inner is msgpack.Timestamp:
        return _nanoseconds
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
    # Strict JSON writes NaN and the infinities as null: a column keeps them, as Python's
    # json and DuckDB write and read them (NaN, Infinity).
    return None if value is None else json_text_kept(value)


_TAKEN_AS_THEY_ARE = (datetime.datetime, msgpack.Timestamp)
"""Field types whose values pyarrow takes as the reader gives them, besides the scalars: a
``msgpack.Timestamp``'s are made int64 nanoseconds by its preparer first."""


def _taken_as_it_is(annotation: Any) -> bool:
    return is_scalar(annotation) or unannotated(members(annotation)[0]) in _TAKEN_AS_THEY_ARE


def _nanoseconds(value: msgpack.Timestamp | None) -> int | None:
    return None if value is None else value.to_unix_nano()


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


class ArrowColumns:
    """The reader's batch converter: checked tuples in, one ``StructArray`` out.

    With a projection (``positions`` of the wanted fields, in the wanted order), only those
    fields are taken out of each tuple (``map(itemgetter(...))``, in C) and converted. Fields
    whose values pyarrow cannot take as they are (:func:`_preparer`) are prepared first; a
    struct of :data:`JSON` columns is built as text and its text wrapped as JSON.
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
    ) -> None:
        # Records with nested records, enums or containers are made plain values first: a
        # call over every value of a batch, which rows of plain fields do without.
        self.plain = not all(map(_taken_as_it_is, annotations))
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
        return typing.cast(pa.StructArray, typed(built, self.typed))

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
            if pa.types.is_timestamp(field.type) and type(value) is int:  # a Timestamp's
                return (
                    f"field `{label}`: Timestamp of {value} ns from the epoch does not fit "
                    f"Arrow {field.type}, which holds the years 1677 to 2262"
                )
            what = f"field `{label}`: {describe(value)} does not fit Arrow {field.type}"
            return f"{what} ({exc}){_WIDER if _too_large(exc) else ''}"
        return None


# pyarrow's words for an int over int64's most: C's long is int64 where pyarrow builds.
_WIDER = (
    "; a field of unsigned 64-bit ints (up to 2**64 - 1) is declared "
    "msgpack_reader_py.UInt64, a uint64 column"
)


def _too_large(exc: Exception) -> bool:
    return isinstance(exc, OverflowError) and "too large to convert to C long" in str(exc)
