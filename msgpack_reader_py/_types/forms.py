"""Wire forms: the types msgspec decodes a record type as, so that every record, and every
record nested in it, may arrive as an array or as a map, and the converters from those forms
to the record type. The type layer's second half (:mod:`.record_type` is its first: what a
type's fields and kinds are).

msgspec decodes each type in one shape only (a dataclass from a map, a NamedTuple or an
``array_like`` Struct from an array), and a union may hold one array-like and one map-like type
but at most one Struct. So a record type is decoded through a union of two *wire forms*:

- the array form: the type itself when it decodes from arrays (an ``array_like`` Struct, a
  NamedTuple) and nothing in it had to change; otherwise a generated NamedTuple with the same
  fields, defaults and rewritten field types (msgspec refuses an array with more values than
  it has fields);
- the map form: the type itself when it decodes from maps (a dataclass, an attrs class, a
  TypedDict, a plain Struct) and nothing in it had to change; otherwise a generated dataclass
  keyed by the wire names (when the array form is a Struct: a union holds one) or a generated
  Struct that renames its fields to the wire names.

A field type is rewritten when it mentions a record type (which becomes the union of its two
forms) or, with an ``ext_hook``, a ``datetime`` (msgspec hands an extension other than the
timestamp to the hook only where any value is accepted: the field takes the timestamp or an
extension, and the hook is called on the extension afterwards). A value decoded into a
generated form is converted to the user's type afterwards by a converter compiled once per
type; subtrees that needed no rewriting are passed through untouched.

A union of kinds gets, per kind, a tagged map form and a tagged array form (:class:`Sides`):
msgspec tells tagged Structs apart in C, but holds in one union either array-like or map-like
Structs, not both. This module is one concern, the forms and their converters, and reads best
whole (it is over 500 lines).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import inspect
import keyword
import operator
import re
import types
import typing
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .._base.ext import ExtHook
from .containers import Converter, elements, entries, positions, union_converter
from .extensions import (
    WHOLE_MICROSECONDS,
    hooked_datetime,
    hooked_timestamp,
    whole_microseconds,
)
from .messages import UNKNOWN, HookFailure, RecordFailure, as_failure, guarded_hook, phrase
from .record_type import (
    ABSENT,
    FieldSpec,
    Kinds,
    forbids_unknown_keys,
    matchable,
    record_fields,
    record_kind,
    type_label,
    wire_form,
)
from .untyped import any_value, is_any_value

__all__ = [
    "Compiler",
    "Converter",
    "Sides",
    "Wired",
    "constant",
    "counter",
    "hides_fields",
    "identity",
    "is_record_class",
    "positional_rename",
    "shaped",
    "slot",
    "trailing_optional",
]


_FACTORY: Any = type("DefaultFactory", (), {"__repr__": lambda self: "<default factory>"})()

_DECODABLE: frozenset[Any] = frozenset(
    {
        type(None), bool, int, float, str, bytes, bytearray, object,
        list, tuple, set, frozenset, dict,
        datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
        uuid.UUID, decimal.Decimal, msgspec.Raw, msgspec.msgpack.Ext,
    }
)  # fmt: skip


def _decodable(cls: type) -> bool:
    """Whether msgspec decodes values of the class ``cls`` without a hook."""
    return cls in _DECODABLE or issubclass(cls, enum.Enum)


def is_record_class(tp: Any) -> bool:
    """Whether ``tp`` is a class of records (not a ``tuple[...]`` type, which is a container
    where it is a field's type)."""
    return record_kind(tp) not in (None, "tuple")


def hides_fields(tp: Any) -> bool:
    """Whether ``tp`` is a dataclass with fields that ``__init__`` does not take."""
    return record_kind(tp) == "dataclass" and any(not f.init for f in dataclasses.fields(tp))


def identity(value: Any) -> Any:
    return value


Wired = list[tuple[FieldSpec, Any, Converter | None]]
"""A record type's fields, each with the type msgspec decodes it as and its converter."""


class Compiler:
    """Wire types and converters for the types of one record type, each made once."""

    def __init__(
        self,
        ext_hook: ExtHook | None,
        forbid_unknown_keys: bool,
        nested: Callable[[Any, Compiler], Any] | None = None,
    ) -> None:
        self.ext_hook = ext_hook
        self.nested = nested
        """Makes the decoder of a union of kinds inside a record (from :mod:`.decoding`): its
        ``decode_one`` reads a raw value as its kind, with this compiler's hook and checks."""
        self.forbid = forbid_unknown_keys
        self.forms: dict[Any, tuple[Any, Converter | None]] = {}
        self._building: set[Any] = set()  # the record types being compiled, outermost first
        self.made: dict[Any, list[int]] = {}
        """For a type decoded from arrays as itself: how many values its generated map form
        has made (a count that only grows), so that a run with none needs no look at each."""

    def wire(self, annotation: Any) -> tuple[Any, Converter | None]:
        """The type msgspec decodes in place of ``annotation``, and the converter from what it
        gives to what the annotation wants (``None``: the same value will do)."""
        if is_record_class(annotation):
            return self.record(annotation)
        if annotation is datetime.datetime and self.ext_hook is not None:
            return typing.Union[datetime.datetime, Ext], hooked_datetime(self.ext_hook)  # noqa: UP007
        if annotation is msgpack.Timestamp:
            return Ext, hooked_timestamp(self.ext_hook)
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            if WHOLE_MICROSECONDS in args[1:] and args[0] is datetime.datetime:
                return Ext, whole_microseconds(self.ext_hook)
            if is_any_value(annotation):
                return msgspec.Raw, any_value(self.ext_hook)
            inner, convert = self.wire(args[0])
            # Subscripted through operator: Python 3.10's grammar has no `X[a, *rest]`.
            return operator.getitem(typing.Annotated, (inner, *args[1:])), convert
        if origin is typing.Union or origin is types.UnionType:
            if sum(map(is_record_class, args)) > 1:
                return self.kinds_field(annotation, args)
            members = [self.wire(a) for a in args]
            if all(c is None for _, c in members):
                return annotation, None
            wire_members = tuple(m for m, _ in members)
            return typing.Union[wire_members], union_converter(members)  # noqa: UP007
        if origin in (list, tuple, dict) and args:
            if origin is tuple and Ellipsis not in args:
                parts = [self.wire(a) for a in args]
                if all(c is None for _, c in parts):
                    return annotation, None
                converters = [c or identity for _, c in parts]
                wire_args = tuple(p for p, _ in parts)
                return tuple[wire_args], positions(converters)  # type: ignore[valid-type]
            if origin is dict:
                key, key_convert = self.wire(args[0])
                value, value_convert = self.wire(args[1])
                if key_convert is None and value_convert is None:
                    return annotation, None
                kc, vc = key_convert or identity, value_convert or identity
                return dict[key, value], entries(kc, vc)  # type: ignore[valid-type]
            element, convert = self.wire(args[0])
            if convert is None:
                return annotation, None
            if origin is list:
                return list[element], elements(convert, list)  # type: ignore[valid-type]
            return tuple[element, ...], elements(convert, tuple)  # type: ignore[valid-type]
        if (
            annotation is not Any
            and origin is None  # a generic alias passes for a type on Python 3.10
            and isinstance(annotation, type)
            and not _decodable(annotation)
        ):
            raise TypeError(
                f"{annotation.__qualname__} is not a type a record can hold (no decoder for it)"
            )
        return annotation, None

    def wired(self, tp: Any) -> Wired:
        """The fields of the record class ``tp``, each with its wire type and converter."""
        if tp in self._building:
            raise TypeError(f"{tp.__qualname__} holds itself: a recursive record type")
        self._building.add(tp)
        try:
            return [(f, *self._field(tp, f)) for f in record_fields(tp)]
        finally:
            self._building.discard(tp)

    def _field(self, tp: Any, spec: FieldSpec) -> tuple[Any, Converter | None]:
        try:
            return self.wire(spec.annotation)
        except TypeError as exc:
            raise TypeError(f"field `{spec.name}` of {tp.__qualname__}: {exc}") from None

    def _changed(self, tp: Any, wired: Wired) -> bool:
        """Whether ``tp`` cannot be decoded as itself: a field's type was rewritten, a field
        is hidden from ``__init__`` (msgspec would set it from a map: a generated form won't),
        or a dataclass field is keyed by another name."""
        return (
            any(c is not None for _, _, c in wired)
            or hides_fields(tp)
            or (record_kind(tp) == "dataclass" and any(f.wire_name != f.name for f, _, _ in wired))
        )

    def record(self, tp: Any) -> tuple[Any, Converter | None]:
        if tp in self.forms:
            return self.forms[tp]
        kind = record_kind(tp)
        wired = self.wired(tp)
        fields = [f for f, _, _ in wired]
        changed = self._changed(tp, wired)
        # What the type refuses of itself travels with it into every form made for it: an
        # inferred type that forbids unknown keys forbids them at every depth, whatever the
        # reader's options.
        forbid = self.forbid or forbids_unknown_keys(tp)
        native_forbid = forbids_unknown_keys(tp) and kind in ("struct", "array_struct")
        matched = all(matchable(f.wire_name) for f in fields)
        name = tp.__name__
        array_form: Any
        map_form: Any
        if not changed and (
            kind == "namedtuple" or (kind == "array_struct" and (native_forbid or not forbid))
        ):
            array_form = tp  # refuses an array of more values than it has fields
        else:
            # A NamedTuple form leaves the union's one Struct for the map form.
            array_form = _namedtuple_form(f"{name}AsArray", wired)
        namespace: dict[str, Any] = {}
        if array_form is tp:
            self.made[tp], namespace = counter()
        struct_array = isinstance(array_form, type) and issubclass(array_form, msgspec.Struct)
        if (
            kind in ("dataclass", "attrs", "typeddict", "struct")
            and not changed
            and (not forbid or native_forbid)
        ):
            map_form = tp
        elif not matched or (struct_array and (forbid or not _identifiers(fields))):
            # A key msgspec cannot match by name, or a union already holding its one Struct
            # while unknown keys must be refused: a map of raw values, each field decoded
            # from its own, the rest refused by key.
            map_form = dict[str, msgspec.Raw]
            self.made.pop(tp, None)  # a map decoded so counts nothing: every run is looked at
        elif struct_array:
            map_form = dataclasses.make_dataclass(
                f"{name}AsMap",
                [_dataclass_field(f, t) for f, t, _ in wired],
                namespace=namespace,
                kw_only=True,
            )
        else:
            map_form = msgspec.defstruct(
                f"{name}AsMap",
                [_struct_field(i, f, t) for i, (f, t, _) in enumerate(wired)],
                rename=positional_rename(fields),
                forbid_unknown_fields=forbid,
                namespace=namespace,
                kw_only=True,
            )
        converters = {f.name: c for f, _, c in wired if c is not None}
        kept = shaped(tp, array_form, map_form)
        makers: dict[Any, Converter] = {}
        for form in kept:
            if form is tp:
                continue
            if form is map_form and typing.get_origin(form) is dict:
                made = _maker(tp, fields, _as_they_are, converters)
                makers[dict] = _keyed(wired, forbid, self.ext_hook, made)
                continue
            by_wire_name = dataclasses.is_dataclass(form)
            read = _attributes(
                [f.wire_name if by_wire_name else slot(i) for i, f in enumerate(fields)]
            )
            makers[form] = _maker(tp, fields, read, converters)
        form = (typing.Union[kept], _by_form(makers))  # noqa: UP007
        self.forms[tp] = form
        return form

    def sides(self, kinds: Kinds) -> Sides:
        """The tagged wire forms of a union record type's kinds (see the module's docstring)."""
        maps: list[Any] = []
        arrays: list[Any] = []
        by_tag: dict[Any, Any] = {}
        makers: dict[Any, Converter] = {}
        for kind in kinds.kinds:
            tp = kind.record_type
            wired = self.wired(tp)
            fields = [f for f, _, _ in wired]
            forbid = self.forbid or forbids_unknown_keys(tp)
            native_forbid = forbids_unknown_keys(tp) and record_kind(tp) in (
                "struct",
                "array_struct",
            )
            changed = self._changed(tp, wired) or (forbid and not native_forbid)
            own = [(i, f, t) for i, (f, t, _) in enumerate(wired) if f.name != kind.field]
            unmatched = [f.wire_name for _, f, _ in own if not matchable(f.wire_name)]
            if unmatched or not matchable(kinds.key):
                key = unmatched[0] if unmatched else kinds.key
                raise TypeError(
                    f"{type_label(tp)}: the map key {key!r} (a quote, a backslash or a control "
                    "character) cannot be matched by name in a kind of a union: read the kinds "
                    "one at a time, or each record as a map"
                )
            converters = {f.name: c for f, _, c in wired if c is not None}
            name = tp.__name__
            native = kind.field is None and not changed
            prefix = _slot_prefix(kinds.key)
            shape = wire_form(tp)
            for tag in kind.tags:
                read = _tagged_reader(fields, kind.field, tag, prefix)
                if shape == "array":
                    pass  # read from arrays only: no map form
                elif native and record_kind(tp) == "struct":
                    maps.append(tp)
                else:
                    form = msgspec.defstruct(
                        f"{name}AsMap",
                        [_struct_field(i, f, t, prefix) for i, f, t in own],
                        rename=positional_rename(fields, prefix),
                        tag_field=kinds.key,
                        tag=tag,
                        forbid_unknown_fields=forbid,
                        kw_only=True,
                    )
                    maps.append(form)
                    makers[form] = _maker(tp, fields, read, converters)
                if shape == "map":
                    pass  # read from maps only: no array form
                elif kinds.position:
                    # The tag is not first: a probe reads it, then the kind's own form.
                    form = _namedtuple_form(f"{name}AsArray", wired)
                    by_tag[tag] = form
                    makers[form] = _maker(tp, fields, list, converters)  # a NamedTuple
                elif native and record_kind(tp) == "array_struct":
                    arrays.append(tp)
                else:
                    form = msgspec.defstruct(
                        f"{name}AsArray",
                        _array_fields(own, prefix),
                        array_like=True,
                        tag_field=kinds.key,
                        tag=tag,
                        forbid_unknown_fields=True,  # a NamedTuple's rule: no values beyond
                    )
                    arrays.append(form)
                    makers[form] = _maker(tp, fields, read, converters)
        probe = None
        if kinds.position:
            probe = msgspec.defstruct(
                "TagProbe",
                [*((f"p{i}", msgspec.Raw) for i in range(kinds.position)), ("tag", Any)],
                array_like=True,
            )
        return Sides(
            typing.Union[tuple(maps)] if maps else None,  # noqa: UP007
            typing.Union[tuple(arrays)] if arrays else None,  # noqa: UP007
            makers,
            probe,
            by_tag,
        )

    def kinds_field(self, annotation: Any, members: tuple[Any, ...]) -> tuple[Any, Converter]:
        """A field of a union of record kinds (``Click | Key``, maybe ``| None``): decoded as
        raw bytes, then as its kind."""
        kinds = [m for m in members if is_record_class(m)]
        rest = [m for m in members if not is_record_class(m)]
        if rest not in ([], [type(None)]):
            raise TypeError(
                f"{type_label(annotation)}: a union of record kinds may add None, no other type"
            )
        union: Any = typing.Union[tuple(kinds)]  # noqa: UP007
        assert self.nested is not None, "a union of kinds inside a record needs nested="
        inner = self.nested(union, self)
        nullable = bool(rest)

        def convert(raw: msgspec.Raw | None) -> Any:
            if raw is None:  # the field's default, where the record left it out
                return None
            data = memoryview(raw)
            if nullable and bytes(data) == b"\xc0":
                return None
            try:
                return inner.decode_one(data)
            except RecordFailure as failure:
                if failure.field:
                    raise
                raise RecordFailure(
                    f"is no {inner.kinds.label} record: {failure.reason}",
                    decodable=failure.decodable,
                ) from failure

        return msgspec.Raw, convert


@dataclasses.dataclass(frozen=True)
class Sides:
    """How records of a union record type decode: ``maps`` and ``arrays`` are the unions of
    the kinds' tagged forms (``None`` where no kind is read from that shape: msgspec then
    refuses every record of it); with a ``probe`` (a tag that is not first), arrays are read by it
    and then as ``by_tag``'s form of their tag. ``makers`` turn a generated form into its kind."""

    maps: Any | None
    arrays: Any | None
    makers: dict[Any, Converter]
    probe: Any | None
    by_tag: dict[Any, Any]


def shaped(tp: Any, array_form: Any, map_form: Any) -> tuple[Any, ...]:
    """The forms a record of ``tp`` decodes through: both, or, for a type read from one shape
    only (:func:`~.record_type.wire_form`), that shape's alone, so that msgspec refuses the
    other as a value of the wrong type."""
    shape = wire_form(tp)
    if shape is None:
        return array_form, map_form
    return (array_form,) if shape == "array" else (map_form,)


def slot(position: int, prefix: str = "f") -> str:
    """The attribute a generated form holds the field at ``position`` in: any name a user's
    field has may not suit a NamedTuple or a Struct (``_private``). A tagged form's slots
    take another ``prefix`` where its tag's key is named like one (``f0``, an array's tag
    in inferred types): msgspec refuses a tag field named as a field."""
    return f"{prefix}{position}"


def _slot_prefix(tag_key: str) -> str:
    return "g" if re.fullmatch(r"f\d+", tag_key) else "f"


def positional_rename(fields: Sequence[FieldSpec], prefix: str = "f") -> dict[str, str]:
    return {slot(i, prefix): f.wire_name for i, f in enumerate(fields)}


def _tagged_reader(
    fields: Sequence[FieldSpec], tag_field: str | None, tag: Any, prefix: str
) -> Callable[[Any], list[Any]]:
    """How a kind's fields are read off its tagged form: the tag field (not in the form) is
    the tag the form was made for."""
    read = _attributes([slot(i, prefix) for i, f in enumerate(fields) if f.name != tag_field])
    position = next((i for i, f in enumerate(fields) if f.name == tag_field), None)
    if position is None:
        return read

    def with_tag(value: Any) -> list[Any]:
        values = read(value)
        values.insert(position, tag)
        return values

    return with_tag


def _attributes(names: Sequence[str]) -> Callable[[Any], list[Any]]:
    """The values of a form's attributes ``names``, in one call: a new list each time."""
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda value: [one(value)]
    if not names:
        return lambda _value: []
    many = operator.attrgetter(*names)
    return lambda value: list(many(value))


def _as_they_are(values: list[Any]) -> list[Any]:
    """A form that is already the list of the field values (:func:`_keyed`'s)."""
    return values


def constant(value: Any) -> Callable[[Any], Any]:
    return lambda _record: value


def trailing_optional(fields: Sequence[FieldSpec]) -> int:
    """How many of the last fields have defaults: only they may be missing from an array."""
    count = 0
    for spec in reversed(fields):
        if spec.required:
            break
        count += 1
    return count


def _array_fields(own: list[tuple[int, FieldSpec, Any]], prefix: str) -> list[tuple[Any, ...]]:
    first_optional = len(own) - trailing_optional([f for _, f, _ in own])
    return [
        _struct_field(i, f, t, prefix) if n >= first_optional else (slot(i, prefix), t)
        for n, (i, f, t) in enumerate(own)
    ]


def counter() -> tuple[list[int], dict[str, Any]]:
    """A count that only grows, and the namespace of a generated form whose every value made
    adds one to it (its ``__post_init__``, which msgspec calls as it decodes one)."""
    made = [0]
    return made, {"__post_init__": lambda _: operator.setitem(made, 0, made[0] + 1)}


def _identifiers(fields: Sequence[FieldSpec]) -> bool:
    """Whether every field's map key can name a dataclass field (a generated map form)."""
    return all(f.wire_name.isidentifier() and not keyword.iskeyword(f.wire_name) for f in fields)


_NOT_THERE: Any = object()


def _keyed(wired: Wired, forbid: bool, hook: ExtHook | None, make: Converter) -> Converter:
    """Makes a record of a map decoded as raw values by key (``dict[str, msgspec.Raw]``):
    each field decoded from its own value, as its wire type, a missing one given its default;
    with ``forbid``, a key that names no field refused. ``make`` builds the record from the
    list of field values, in field order."""
    guarded = None if hook is None else guarded_hook(hook)
    fields = [
        (spec, msgspec.msgpack.Decoder(wire_type, ext_hook=guarded).decode)
        for spec, wire_type, _ in wired
    ]
    keys = {spec.wire_name for spec, _ in fields}

    def convert(value: dict[str, msgspec.Raw]) -> Any:
        if forbid:
            unknown = next((key for key in value if key not in keys), None)
            if unknown is not None:
                raise RecordFailure(f"map has key {unknown!r}, which names no field")
        values = []
        for spec, decode in fields:
            raw = value.get(spec.wire_name, _NOT_THERE)
            if raw is _NOT_THERE:
                if spec.required:
                    raise RecordFailure(
                        "is missing (a map without its key, and no default)", field=spec.name
                    )
                factory = spec.default_factory is not msgspec.NODEFAULT
                values.append(_FACTORY if factory else spec.default)
                continue
            try:
                values.append(decode(raw))
            except HookFailure:
                raise
            except msgspec.ValidationError as exc:
                text = phrase(Any, (), str(exc), UNKNOWN, UNKNOWN)
                raise as_failure(text).within(spec.name) from exc
        return make(values)

    return convert


def _namedtuple_form(name: str, wired: Wired) -> Any:
    """A NamedTuple with the fields and defaults of a record type, to decode its arrays. A
    NamedTuple has no default factories: ``_FACTORY`` stands in, the converter calls them."""
    form = typing.NamedTuple(name, [(slot(i), t) for i, (_, t, _) in enumerate(wired)])  # type: ignore[misc]
    optional = trailing_optional([f for f, _, _ in wired])
    defaults = {
        slot(i): _FACTORY if f.default is msgspec.NODEFAULT else f.default
        for i, (f, _, _) in enumerate(wired)
        if i >= len(wired) - optional
    }
    form.__new__.__defaults__ = tuple(defaults.values())
    form._field_defaults = defaults
    return form


def _struct_field(
    position: int, spec: FieldSpec, wire_type: Any, prefix: str = "f"
) -> tuple[Any, ...]:
    name = slot(position, prefix)
    if spec.default_factory is not msgspec.NODEFAULT:
        return (name, wire_type, msgspec.field(default_factory=spec.default_factory))
    if spec.default is not msgspec.NODEFAULT:
        return (name, wire_type, spec.default)
    return (name, wire_type)


def _dataclass_field(spec: FieldSpec, wire_type: Any) -> tuple[Any, ...]:
    if spec.default_factory is not msgspec.NODEFAULT:
        return (spec.wire_name, wire_type, dataclasses.field(default_factory=spec.default_factory))
    if spec.default is not msgspec.NODEFAULT:
        return (spec.wire_name, wire_type, dataclasses.field(default=spec.default))
    return (spec.wire_name, wire_type)


def _or_made(convert: Converter, factory: Callable[[], Any]) -> Converter:
    """``convert``, or a value from ``factory`` where the array form left ``_FACTORY``."""
    return lambda value: factory() if value is _FACTORY else convert(value)


def _maker(
    tp: Any,
    fields: Sequence[FieldSpec],
    read: Callable[[Any], list[Any]],
    converters: dict[str, Converter],
) -> Converter:
    """Makes a ``tp`` of a value of one of its generated forms, whose field values ``read``
    gives as a new list (in ``fields``' order), each converted by its converter."""
    names = [f.name for f in fields]
    arguments = [f.argument for f in fields]
    # Only the fields that need it are converted, in place: most fields of most records need
    # nothing, and a call each would cost more than the record's making.
    converting = [
        (i, converters.get(f.name, identity))
        if f.default_factory is msgspec.NODEFAULT
        else (i, _or_made(converters.get(f.name, identity), f.default_factory))
        for i, f in enumerate(fields)
        if f.name in converters or f.default_factory is not msgspec.NODEFAULT
    ]
    # A class whose __init__ takes the fields by position, in their order, is made with them
    # so: six times as fast as by keyword, which needs a dict per record.
    may_be_absent = any(f.default is ABSENT for f in fields)
    positional = record_kind(tp) == "namedtuple" or (
        not may_be_absent and _takes_in_order(tp, arguments)
    )

    def make(value: Any) -> Any:
        values = read(value)
        position = 0
        try:
            for position, convert in converting:
                values[position] = convert(values[position])
        except RecordFailure as failure:
            raise failure.within(names[position]) from None
        if positional:
            return tp(*values)
        if may_be_absent:  # a TypedDict's key that was not there is left out
            return tp(**{a: v for a, v in zip(arguments, values, strict=True) if v is not ABSENT})
        return tp(**dict(zip(arguments, values, strict=True)))

    return make


def _takes_in_order(tp: Any, arguments: Sequence[str]) -> bool:
    """Whether ``tp(*values)`` is ``tp(**dict(zip(arguments, values)))``: its parameters are
    ``arguments``, in that order, each taken by position."""
    try:
        parameters = list(inspect.signature(tp).parameters.values())
    except (TypeError, ValueError):  # no signature to read: by keyword
        return False
    return [p.name for p in parameters] == list(arguments) and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters
    )


def _by_form(makers: dict[Any, Converter]) -> Converter | None:
    """Converts a value by the generated form it was decoded as; one of the type itself (or
    of no form here) is passed on as it is."""
    if not makers:  # the type itself is the one form
        return None

    def convert(value: Any) -> Any:
        make = makers.get(type(value))
        return value if make is None else make(value)

    return convert
