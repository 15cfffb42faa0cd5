"""What a record type looks like on the wire, decided once per stream.

A record type is a dataclass; a record is a MessagePack array of its fields, in declaration
order. From the type this module derives the field checks used by ``validate=True`` and the
``msgpack.Unpacker`` limits that make a stream that cannot hold such records fail early.
"""

from __future__ import annotations

import dataclasses
import itertools
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["RecordSchema", "describe", "type_name"]

# A product of allowed field types up to this size is checked with one set lookup per record.
_MAX_ACCEPTED_COMBINATIONS = 4096
_SCALARS: frozenset[type] = frozenset({int, float, str, bytes, bool, type(None)})
_CONTAINER_ORIGINS: dict[Any, tuple[type, ...]] = {
    list: (list, tuple),
    tuple: (list, tuple),
    Sequence: (list, tuple),
    typing.Sequence: (list, tuple),
    dict: (dict,),
}
_REPR_LIMIT = 60


def type_name(tp: type) -> str:
    """Name a type the way a user writes it: ``int``, ``None``, ``Timestamp``."""
    return "None" if tp is type(None) else tp.__name__


def describe(value: object) -> str:
    """Describe a decoded value for an error message, never embedding a huge one."""
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} values"
    if isinstance(value, dict):
        return f"a map of {len(value)} entries"
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[: _REPR_LIMIT - 3] + "..."
    return f"{type_name(type(value))} {text}"


def _allowed_types(annotation: Any, field: str) -> frozenset[type] | None:
    """Return the exact value types a field accepts, or ``None`` when any value is fine."""
    if annotation is Any or annotation is object:
        return None
    if annotation is None or annotation is type(None):
        return frozenset({type(None)})
    if annotation is float:
        # MessagePack writers often encode a whole float as an int; both are numbers here.
        return frozenset({float, int})
    if annotation in _CONTAINER_ORIGINS:
        return frozenset(_CONTAINER_ORIGINS[annotation])
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        allowed: set[type] = set()
        for member in typing.get_args(annotation):
            member_types = _allowed_types(member, field)
            if member_types is None:
                return None
            allowed |= member_types
        return frozenset(allowed)
    if origin in _CONTAINER_ORIGINS:
        return frozenset(_CONTAINER_ORIGINS[origin])
    if isinstance(annotation, type) and origin is None:
        # Exact type, so that a bool is not taken for an int.
        return frozenset({annotation})
    raise TypeError(f"validate=True cannot check field {field!r} annotated {annotation!r}")


def _annotation_text(annotation: Any) -> str:
    # On 3.10 ``list[int]`` passes isinstance(..., type); its origin tells it apart.
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return type_name(annotation)
    return str(annotation).replace("typing.", "").replace("NoneType", "None")


class RecordSchema:
    """The wire layout of a record type: field names, annotations, checks.

    A record type is a dataclass, a ``typing.NamedTuple``, or a fixed-length ``tuple[...]``
    type such as ``tuple[int, str]`` (records are then the decoded tuples themselves, fields
    named by position). Its fields, in order, are the record's array elements. Built once per
    reader.
    """

    record_type: Any
    names: tuple[str, ...]
    expected: tuple[str, ...]
    flat: bool
    uses_lists: bool
    has_defaults: bool
    kind: str  # "dataclass", "namedtuple" or "tuple"
    annotations: list[Any]  # per field, in order

    def __init__(self, record_type: Any) -> None:
        self.has_defaults = False
        if is_named_tuple(record_type):
            self.kind = "namedtuple"
            names = tuple(record_type._fields)
            self.has_defaults = bool(record_type._field_defaults)
            hints = typing.get_type_hints(record_type)
            annotations = [hints.get(name, Any) for name in names]
        elif isinstance(record_type, type) and dataclasses.is_dataclass(record_type):
            self.kind = "dataclass"
            fields = [f for f in dataclasses.fields(record_type) if f.init]
            names = tuple(f.name for f in fields)
            self.has_defaults = any(
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
                for f in fields
            )
            hints = typing.get_type_hints(record_type)
            annotations = [hints.get(name, Any) for name in names]
        elif _is_fixed_tuple(record_type):
            self.kind = "tuple"
            annotations = list(typing.get_args(record_type))
            names = tuple(f"[{position}]" for position in range(len(annotations)))
        else:
            raise TypeError(
                "record_type must be a dataclass, a NamedTuple or a tuple[...] type, "
                f"got {record_type!r}"
            )
        self.record_type = record_type
        self.names = names
        self.expected = tuple(_annotation_text(a) for a in annotations)
        self.annotations = annotations
        self.uses_lists = self.kind != "tuple" and any(_mentions_list(a) for a in annotations)
        self.flat = all(_is_scalar_annotation(a) for a in annotations)

    def __len__(self) -> int:
        return len(self.names)

    def allowed_types(self) -> tuple[frozenset[type] | None, ...]:
        """Per field, the exact value types it accepts (``None``: anything).

        Raises ``TypeError`` for an annotation that cannot be checked.
        """
        return tuple(
            _allowed_types(a, n) for a, n in zip(self.annotations, self.names, strict=True)
        )

    def _accepted_types(self) -> frozenset[tuple[type, ...]] | None:
        """Every tuple of value types a valid record can have, if there are few enough."""
        allowed = self.allowed_types()
        combinations = 1
        for types_ in allowed:
            combinations *= len(types_) if types_ is not None else _MAX_ACCEPTED_COMBINATIONS + 1
        if combinations > _MAX_ACCEPTED_COMBINATIONS:
            return None
        return frozenset(itertools.product(*(t or () for t in allowed)))

    def _usual_types(self) -> tuple[type, ...] | None:
        """Per field, the type a valid value most often has (float for float, X for X | None).

        ``None`` when a field takes anything. A batch whose values all have their field's usual
        type passes with one flat comparison of types.
        """
        usual = []
        for types_ in self.allowed_types():
            if types_ is None:
                return None
            narrowed = types_ - {type(None)} or types_
            if float in narrowed:
                narrowed = frozenset({float})
            usual.append(min(narrowed, key=repr))
        return tuple(usual)

    def shape_error(self, value: object) -> str:
        """The reason a decoded value is not a record of this type (assuming it is not)."""
        return f"expected an array of {len(self.names)} fields, found {describe(value)}"

    def build_batch_checker(
        self, sequence: type | None, *, validate: bool
    ) -> Callable[[Sequence[Any]], tuple[int, str] | None] | None:
        """Return ``first_invalid(values) -> None | (position, reason)`` for a batch of records.

        ``sequence`` is the type every record must decode to (``None``: anything, for a mapper
        without validation). The checks run as C-level passes over the whole batch
        (``set(map(type, values))``); only a batch that fails one is walked record by record
        to find the first culprit. Returns ``None`` when there is nothing to check.
        """
        per_record = self._per_record_checker(sequence, validate)
        if sequence is None and per_record is None:
            return None
        accepted = self._accepted_types() if validate else None
        usual = self._usual_types() if validate else None
        size = len(self.names)
        shapes = {sequence}
        shape_error = self.shape_error

        def first_invalid(values: Sequence[Any]) -> tuple[int, str] | None:
            count = len(values)
            if sequence is not None and set(map(type, values)) != shapes:
                count = next(k for k, v in enumerate(values) if type(v) is not sequence)
            if per_record is not None and not _batch_passes(
                values, count, size, accepted, usual, validate
            ):
                for position in range(count):
                    reason = per_record(values[position])
                    if reason is not None:
                        return position, reason
            if count < len(values):
                return count, shape_error(values[count])
            return None

        return first_invalid

    def build_record_checker(
        self, sequence: type | None, *, validate: bool
    ) -> Callable[[Any], str | None]:
        """Return ``check(value) -> None | reason`` for one decoded value: the per-record form
        of ``build_batch_checker``, for the slow paths."""
        per_record = self._per_record_checker(sequence, validate)
        shape_error = self.shape_error

        def check(value: Any) -> str | None:
            if sequence is not None and type(value) is not sequence:
                return shape_error(value)
            return per_record(value) if per_record is not None else None

        return check

    def _per_record_checker(
        self, sequence: type | None, validate: bool
    ) -> Callable[[Sequence[Any]], str | None] | None:
        if validate:
            return self.build_checker()
        if (self.has_defaults or self.kind != "dataclass") and sequence is not None:
            # record_type(*values) would quietly fill a short array from the defaults, a
            # NamedTuple is built without the __new__ that checks the count, and a tuple
            # record is not built at all.
            return self.build_length_checker()
        return None

    def build_length_checker(self) -> Callable[[Sequence[Any]], str | None]:
        """Return ``check(values) -> None | reason`` that checks only the number of fields."""
        size = len(self.names)

        def check(values: Sequence[Any]) -> str | None:
            if len(values) == size:
                return None
            return self.shape_error(values)

        return check

    def build_checker(self) -> Callable[[Sequence[Any]], str | None]:
        """Return ``check(values) -> None | reason``: ``None`` when the values fit the fields.

        The common case costs one ``tuple(map(type, values))`` and one set lookup.
        """
        allowed = self.allowed_types()
        size = len(allowed)
        accepted = self._accepted_types()
        names = self.names
        expected = self.expected
        shape_error = self.shape_error

        def explain(values: Sequence[Any]) -> str | None:
            if len(values) != size:
                return shape_error(values)
            for name, want, types_, value in zip(names, expected, allowed, values, strict=True):
                if types_ is not None and type(value) not in types_:
                    return f"field `{name}` expected {want}, got {describe(value)}"
            return None

        if accepted is None:
            return explain

        def check(values: Sequence[Any]) -> str | None:
            if tuple(map(type, values)) in accepted:
                return None
            return explain(values)

        return check


def _is_scalar_annotation(annotation: Any) -> bool:
    try:
        allowed = _allowed_types(annotation, "")
    except TypeError:
        return False
    return allowed is not None and allowed <= _SCALARS


def _mentions_list(annotation: Any) -> bool:
    if annotation is list or typing.get_origin(annotation) is list:
        return True
    return any(_mentions_list(arg) for arg in typing.get_args(annotation))


def _batch_passes(
    values: Sequence[Any],
    count: int,
    size: int,
    accepted: frozenset[tuple[type, ...]] | None,
    usual: tuple[type, ...] | None,
    validate: bool,
) -> bool:
    """Whether every record surely passes, from C-level passes; ``False``: walk them."""
    if count != len(values) or set(map(len, values)) != {size}:
        return False
    if not validate:
        return True
    if usual is not None:
        flat = tuple(map(type, itertools.chain.from_iterable(values)))
        if flat == usual * len(values):
            return True
    if accepted is None:
        return False
    return set(map(tuple, map(map, itertools.repeat(type), values))) <= accepted


def is_named_tuple(record_type: object) -> bool:
    """Whether ``record_type`` is a ``typing.NamedTuple`` (or ``collections.namedtuple``) class."""
    return (
        isinstance(record_type, type)
        and issubclass(record_type, tuple)
        and isinstance(getattr(record_type, "_fields", None), tuple)
    )


def _is_fixed_tuple(record_type: object) -> bool:
    """Whether ``record_type`` is ``tuple[X, Y, ...]`` with a fixed number of elements."""
    arguments = typing.get_args(record_type)
    return (
        typing.get_origin(record_type) is tuple
        and bool(arguments)
        and Ellipsis not in arguments
        and arguments != ((),)
    )
