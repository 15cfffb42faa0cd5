"""Record types compiled into msgspec decoders for both wire shapes, runs of records decoded
in one call, and msgspec's errors phrased as the reader's own.

A record (and every record nested in it) reaches the wire as an array of its fields by position
or as a map of its fields by name, in any mix. msgspec decodes each type in one shape only (a
dataclass from a map, a NamedTuple or an ``array_like`` Struct from an array), and a union may
hold one array-like and one map-like type but at most one Struct. So a record type is decoded
through a union of two *wire forms*:

- the array form: the type itself when it decodes from arrays (an ``array_like`` Struct, a
  NamedTuple) and nothing in it had to change; for a flat dataclass without defaults a plain
  ``tuple[...]`` of its field types (built afterwards with ``starmap``, in C); otherwise a
  generated NamedTuple with the same fields, defaults and rewritten field types (msgspec
  refuses an array with more values than it has fields);
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

A *union* record type (``Click | Key``, see :func:`~.record_type.record_kinds`) is decoded by
:class:`KindsDecoder`: msgspec tells tagged Structs apart in C, but holds in one union either
array-like or map-like Structs, not both. So each kind gets a tagged map form and a tagged
array form, and a run is decoded through the union of its first record's shape (streams keep
to one shape; a run that mixes them is decoded record by record). A tag that is not first in
an array is read by a probe that skips the values before it. A union of kinds inside a record
is decoded as raw bytes, then as its kind.

The reader's loop (:mod:`.decoder`) frames records with ``msgpack.Unpacker``, which keeps the
error contract (truncation, sizes, hostile headers), and decodes each chunk's complete records
with one :meth:`RecordDecoder.decode_run`; only when that fails does it decode them one by one
(:meth:`RecordDecoder.decode_one`) to name the first bad record and its field path.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import itertools
import operator
import re
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec
from msgspec.msgpack import Ext

from ._shared import shared
from .errors import describe
from .locate import locate
from .record_type import (
    ABSENT,
    FieldSpec,
    Kind,
    Kinds,
    is_fixed_tuple,
    record_fields,
    record_kind,
    record_kinds,
    type_label,
    union_fields,
    union_members,
)

__all__ = [
    "INVALID_TIMESTAMP",
    "ExtHook",
    "HookFailure",
    "KindsDecoder",
    "RecordDecoder",
    "RecordFailure",
    "guarded_hook",
    "invalid_utf8",
    "plain_values",
    "record_decoder",
]

ExtHook = Callable[[int, memoryview], Any]
Converter = Callable[[Any], Any]

_SHAPE = re.compile(r"^Expected `(array|object|array \| object|object \| array)`")
_GOT = re.compile(r"^(?P<expected>Expected `[^`]*`), got `[^`]*`$")
_MISSING_KEY = re.compile(r"^Object missing required field `(?P<name>[^`]*)`$")
_UNKNOWN_KEY = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$")
_EXPECTED = re.compile(r"^Expected `([^`]*)`")
_NAMES = {"null": "None", "object": "map"}
_BAD_TIMESTAMP = "Invalid MessagePack timestamp"
_UNKNOWN: Any = object()
_FACTORY: Any = type("DefaultFactory", (), {"__repr__": lambda self: "<default factory>"})()
_PATH_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[(\.\.\.)\]")
_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_KEY_IN = re.compile(r"^(?P<message>.*) - at `key` in `\$(?P<path>[^`]*)`$", re.DOTALL)


class RecordFailure(Exception):
    """A record that is not a record of the type: ``reason`` names the field path.

    ``decodable`` is ``False`` when the bytes cannot be decoded at all (invalid UTF-8, nesting
    too deep), whatever the type.
    """

    def __init__(self, reason: str, *, decodable: bool = True, field: str = "") -> None:
        super().__init__(f"field `{field}` {reason}" if field else reason)
        self.reason = str(self)
        self.bare = reason
        self.decodable = decodable
        self.field = field

    def within(self, name: str) -> RecordFailure:
        """The same failure, for the field ``name`` of the record that holds this one."""
        field = f"{name}.{self.field}" if self.field else name
        return RecordFailure(self.bare, decodable=self.decodable, field=field)


class HookFailure(Exception):
    """What an ``ext_hook`` raised, wrapped so that it is told apart from a bug of ours."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def guarded_hook(hook: ExtHook) -> ExtHook:
    """``hook``, raising :class:`HookFailure` (naming the hook and the extension type) for
    whatever it raises."""

    def guarded(code: int, data: memoryview) -> Any:
        try:
            return hook(code, data)
        except Exception as exc:
            name = getattr(hook, "__qualname__", "ext_hook")
            raise HookFailure(
                f"{name} refused extension type {code}: {type(exc).__name__}: {exc}"
            ) from exc

    return guarded


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


def _is_record_class(tp: Any) -> bool:
    """Whether ``tp`` is a class of records (not a ``tuple[...]`` type, which is a container
    where it is a field's type)."""
    return record_kind(tp) not in (None, "tuple")


def _hides_fields(tp: Any) -> bool:
    """Whether ``tp`` is a dataclass with fields that ``__init__`` does not take."""
    return record_kind(tp) == "dataclass" and any(not f.init for f in dataclasses.fields(tp))


def _identity(value: Any) -> Any:
    return value


Wired = list[tuple[FieldSpec, Any, Converter | None]]
"""A record type's fields, each with the type msgspec decodes it as and its converter."""


class _Compiler:
    """Wire types and converters for the types of one record type, each made once."""

    def __init__(self, ext_hook: ExtHook | None, forbid_unknown_keys: bool) -> None:
        self.ext_hook = ext_hook
        self.forbid = forbid_unknown_keys
        self.forms: dict[Any, tuple[Any, Converter | None]] = {}
        self._building: set[Any] = set()  # the record types being compiled, outermost first
        self.made: dict[Any, list[int]] = {}
        """For a type decoded from arrays as itself: how many values its generated map form
        has made (a count that only grows), so that a run with none needs no look at each."""

    def wire(self, annotation: Any) -> tuple[Any, Converter | None]:
        """The type msgspec decodes in place of ``annotation``, and the converter from what it
        gives to what the annotation wants (``None``: the same value will do)."""
        if _is_record_class(annotation):
            return self.record(annotation)
        if annotation is datetime.datetime and self.ext_hook is not None:
            return typing.Union[datetime.datetime, Ext], _hooked_datetime(self.ext_hook)  # noqa: UP007
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            inner, convert = self.wire(args[0])
            # Subscripted through operator: Python 3.10's grammar has no `X[a, *rest]`.
            return operator.getitem(typing.Annotated, (inner, *args[1:])), convert
        if origin is typing.Union or origin is types.UnionType:
            if sum(map(_is_record_class, args)) > 1:
                return self.kinds_field(annotation, args)
            members = [self.wire(a) for a in args]
            if all(c is None for _, c in members):
                return annotation, None
            wire_members = tuple(m for m, _ in members)
            return typing.Union[wire_members], _union_converter(members)  # noqa: UP007
        if origin in (list, tuple, dict) and args:
            if origin is tuple and Ellipsis not in args:
                parts = [self.wire(a) for a in args]
                if all(c is None for _, c in parts):
                    return annotation, None
                converters = [c or _identity for _, c in parts]
                wire_args = tuple(p for p, _ in parts)
                return tuple[wire_args], lambda v: tuple(  # type: ignore[valid-type]
                    c(x) for c, x in zip(converters, v, strict=True)
                )
            if origin is dict:
                key, key_convert = self.wire(args[0])
                value, value_convert = self.wire(args[1])
                if key_convert is None and value_convert is None:
                    return annotation, None
                kc, vc = key_convert or _identity, value_convert or _identity
                return dict[key, value], lambda d: {kc(k): vc(v) for k, v in d.items()}  # type: ignore[valid-type]
            element, convert = self.wire(args[0])
            if convert is None:
                return annotation, None
            if origin is list:
                return list[element], lambda v: [convert(x) for x in v]  # type: ignore[valid-type]
            return tuple[element, ...], lambda v: tuple(convert(x) for x in v)  # type: ignore[valid-type]
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
            or _hides_fields(tp)
            or (record_kind(tp) == "dataclass" and any(f.wire_name != f.name for f, _, _ in wired))
        )

    def record(self, tp: Any) -> tuple[Any, Converter | None]:
        if tp in self.forms:
            return self.forms[tp]
        kind = record_kind(tp)
        wired = self.wired(tp)
        fields = [f for f, _, _ in wired]
        changed = self._changed(tp, wired)
        name = tp.__name__
        array_form: Any
        map_form: Any
        if kind in ("array_struct", "namedtuple") and not changed and not self.forbid:
            array_form = tp
        else:
            # A NamedTuple form leaves the union's one Struct for the map form.
            array_form = _namedtuple_form(f"{name}AsArray", wired)
        namespace: dict[str, Any] = {}
        if array_form is tp:
            self.made[tp], namespace = _counter()
        if (
            kind in ("dataclass", "attrs", "typeddict", "struct")
            and not changed
            and not self.forbid
        ):
            map_form = tp
        elif isinstance(array_form, type) and issubclass(array_form, msgspec.Struct):
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
                rename=_positional_rename(fields),
                forbid_unknown_fields=self.forbid,
                namespace=namespace,
                kw_only=True,
            )
        converters = {f.name: c for f, _, c in wired if c is not None}
        makers: dict[Any, Converter] = {}
        for form in (array_form, map_form):
            if form is not tp:
                by_wire_name = dataclasses.is_dataclass(form)
                getters = [
                    operator.attrgetter(f.wire_name if by_wire_name else _slot(i))
                    for i, f in enumerate(fields)
                ]
                makers[form] = _maker(tp, fields, getters, converters)
        form = (typing.Union[array_form, map_form], _by_form(makers))  # noqa: UP007
        self.forms[tp] = form
        return form

    def sides(self, kinds: Kinds) -> _Sides:
        """The tagged wire forms of a union record type's kinds (see the module's docstring)."""
        maps: list[Any] = []
        arrays: list[Any] = []
        by_tag: dict[Any, Any] = {}
        makers: dict[Any, Converter] = {}
        for kind in kinds.kinds:
            tp = kind.record_type
            wired = self.wired(tp)
            fields = [f for f, _, _ in wired]
            changed = self._changed(tp, wired) or self.forbid
            own = [(i, f, t) for i, (f, t, _) in enumerate(wired) if f.name != kind.field]
            converters = {f.name: c for f, _, c in wired if c is not None}
            name = tp.__name__
            native = kind.field is None and not changed
            for tag in kind.tags:
                getters = _tagged_getters(fields, kind.field, tag)
                if native and record_kind(tp) == "struct":
                    maps.append(tp)
                else:
                    form = msgspec.defstruct(
                        f"{name}AsMap",
                        [_struct_field(i, f, t) for i, f, t in own],
                        rename=_positional_rename(fields),
                        tag_field=kinds.key,
                        tag=tag,
                        forbid_unknown_fields=self.forbid,
                        kw_only=True,
                    )
                    maps.append(form)
                    makers[form] = _maker(tp, fields, getters, converters)
                if kinds.position:
                    # The tag is not first: a probe reads it, then the kind's own form.
                    form = _namedtuple_form(f"{name}AsArray", wired)
                    by_tag[tag] = form
                    makers[form] = _maker(
                        tp, fields, [operator.attrgetter(_slot(i)) for i in range(len(fields))],
                        converters,
                    )  # fmt: skip
                elif native and record_kind(tp) == "array_struct":
                    arrays.append(tp)
                else:
                    form = msgspec.defstruct(
                        f"{name}AsArray",
                        _array_fields(own),
                        array_like=True,
                        tag_field=kinds.key,
                        tag=tag,
                        forbid_unknown_fields=True,  # a NamedTuple's rule: no values beyond
                    )
                    arrays.append(form)
                    makers[form] = _maker(tp, fields, getters, converters)
        probe = None
        if kinds.position:
            probe = msgspec.defstruct(
                "TagProbe",
                [*((f"p{i}", msgspec.Raw) for i in range(kinds.position)), ("tag", Any)],
                array_like=True,
            )
        return _Sides(
            typing.Union[tuple(maps)],  # noqa: UP007
            typing.Union[tuple(arrays)] if arrays else None,  # noqa: UP007
            makers,
            probe,
            by_tag,
        )

    def kinds_field(self, annotation: Any, members: tuple[Any, ...]) -> tuple[Any, Converter]:
        """A field of a union of record kinds (``Click | Key``, maybe ``| None``): decoded as
        raw bytes, then as its kind."""
        kinds = [m for m in members if _is_record_class(m)]
        rest = [m for m in members if not _is_record_class(m)]
        if rest not in ([], [type(None)]):
            raise TypeError(
                f"{type_label(annotation)}: a union of record kinds may add None, no other type"
            )
        union: Any = typing.Union[tuple(kinds)]  # noqa: UP007
        inner = KindsDecoder(union, compiler=self)
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
                    f"is no {inner.kinds.label} record: {failure.bare}",
                    decodable=failure.decodable,
                ) from failure

        return msgspec.Raw, convert


@dataclasses.dataclass(frozen=True)
class _Sides:
    """How records of a union record type decode: ``maps`` and ``arrays`` are the unions of
    the kinds' tagged forms; with a ``probe`` (a tag that is not first), arrays are read by it
    and then as ``by_tag``'s form of their tag. ``makers`` turn a generated form into its kind."""

    maps: Any
    arrays: Any | None
    makers: dict[Any, Converter]
    probe: Any | None
    by_tag: dict[Any, Any]


def _slot(position: int) -> str:
    """The attribute a generated form holds the field at ``position`` in: any name a user's
    field has may not suit a NamedTuple or a Struct (``_private``)."""
    return f"f{position}"


def _positional_rename(fields: Sequence[FieldSpec]) -> dict[str, str]:
    return {_slot(i): f.wire_name for i, f in enumerate(fields)}


def _tagged_getters(
    fields: Sequence[FieldSpec], tag_field: str | None, tag: Any
) -> list[Callable[[Any], Any]]:
    """How a kind's fields are read off its tagged form: the tag field (not in the form) is
    the tag the form was made for."""
    return [
        _constant(tag) if f.name == tag_field else operator.attrgetter(_slot(i))
        for i, f in enumerate(fields)
    ]


def _constant(value: Any) -> Callable[[Any], Any]:
    return lambda _record: value


def _trailing_optional(fields: Sequence[FieldSpec]) -> int:
    """How many of the last fields have defaults: only they may be missing from an array."""
    count = 0
    for spec in reversed(fields):
        if spec.required:
            break
        count += 1
    return count


def _array_fields(own: list[tuple[int, FieldSpec, Any]]) -> list[tuple[Any, ...]]:
    first_optional = len(own) - _trailing_optional([f for _, f, _ in own])
    return [
        _struct_field(i, f, t) if n >= first_optional else (_slot(i), t)
        for n, (i, f, t) in enumerate(own)
    ]


def _counter() -> tuple[list[int], dict[str, Any]]:
    """A count that only grows, and the namespace of a generated form whose every value made
    adds one to it (its ``__post_init__``, which msgspec calls as it decodes one)."""
    made = [0]
    return made, {"__post_init__": lambda _: operator.setitem(made, 0, made[0] + 1)}


def _namedtuple_form(name: str, wired: Wired) -> Any:
    """A NamedTuple with the fields and defaults of a record type, to decode its arrays. A
    NamedTuple has no default factories: ``_FACTORY`` stands in, the converter calls them."""
    form = typing.NamedTuple(name, [(_slot(i), t) for i, (_, t, _) in enumerate(wired)])  # type: ignore[misc]
    optional = _trailing_optional([f for f, _, _ in wired])
    defaults = {
        _slot(i): _FACTORY if f.default is msgspec.NODEFAULT else f.default
        for i, (f, _, _) in enumerate(wired)
        if i >= len(wired) - optional
    }
    form.__new__.__defaults__ = tuple(defaults.values())
    form._field_defaults = defaults
    return form


def _struct_field(position: int, spec: FieldSpec, wire_type: Any) -> tuple[Any, ...]:
    slot = _slot(position)
    if spec.default_factory is not msgspec.NODEFAULT:
        return (slot, wire_type, msgspec.field(default_factory=spec.default_factory))
    if spec.default is not msgspec.NODEFAULT:
        return (slot, wire_type, spec.default)
    return (slot, wire_type)


def _dataclass_field(spec: FieldSpec, wire_type: Any) -> tuple[Any, ...]:
    if spec.default_factory is not msgspec.NODEFAULT:
        return (spec.wire_name, wire_type, dataclasses.field(default_factory=spec.default_factory))
    if spec.default is not msgspec.NODEFAULT:
        return (spec.wire_name, wire_type, dataclasses.field(default=spec.default))
    return (spec.wire_name, wire_type)


def _hooked_datetime(hook: ExtHook) -> Converter:
    """A ``datetime`` field decoded as the timestamp or an extension: ``hook`` makes the
    datetime of an extension (Fluentd's EventTime)."""
    name = getattr(hook, "__qualname__", "ext_hook")

    def convert(value: Any) -> Any:
        if type(value) is not Ext:
            return value
        try:
            made = hook(value.code, memoryview(value.data))
        except Exception as exc:
            raise RecordFailure(
                f"{name} refused extension type {value.code}: {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(made, datetime.datetime):
            return made
        raise RecordFailure(f"expected datetime, got {describe(made)}")

    return convert


def _union_converter(members: list[tuple[Any, Converter | None]]) -> Converter:
    """Convert a value decoded for a union by the member it was decoded as: its type tells
    (a record's wire forms, ``list``, ``dict``, ``tuple``, an extension for a ``datetime``)."""
    by_type: dict[Any, Converter] = {}
    for wire_type, member_convert in members:
        if member_convert is None:
            continue
        for decoded in _decoded_types(wire_type):
            by_type[decoded] = member_convert

    def convert(value: Any) -> Any:
        member_convert = by_type.get(type(value))
        return value if member_convert is None else member_convert(value)

    return convert


def _decoded_types(wire_type: Any) -> set[Any]:
    """The Python types msgspec gives for values of ``wire_type``."""
    origin = typing.get_origin(wire_type)
    if origin is typing.Union or origin is types.UnionType:
        return set().union(*map(_decoded_types, typing.get_args(wire_type)))
    if origin is typing.Annotated:
        return _decoded_types(typing.get_args(wire_type)[0])
    if origin in (list, tuple, dict):
        return {origin}
    return {wire_type} if isinstance(wire_type, type) else set()


def _or_made(convert: Converter, factory: Callable[[], Any]) -> Converter:
    """``convert``, or a value from ``factory`` where the array form left ``_FACTORY``."""
    return lambda value: factory() if value is _FACTORY else convert(value)


def _failed_field(
    value: Any, fields: Iterable[tuple[str, Callable[[Any], Any], Converter]]
) -> RecordFailure:
    """The failure of the first field of ``value`` its converter refuses, with its name."""
    for name, get, field_convert in fields:
        try:
            field_convert(get(value))
        except RecordFailure as failure:  # noqa: PERF203 - the error path only
            return failure.within(name)
    raise AssertionError("no field of the record fails")  # pragma: no cover


def _maker(
    tp: Any,
    fields: Sequence[FieldSpec],
    getters: Sequence[Callable[[Any], Any]],
    converters: dict[str, Converter],
) -> Converter:
    """Makes a ``tp`` of a value of one of its generated forms, whose fields ``getters`` read
    (in ``fields``' order), each converted by its converter."""
    names = [f.name for f in fields]
    arguments = [f.argument for f in fields]
    per_field = [
        converters.get(f.name, _identity)
        if f.default_factory is msgspec.NODEFAULT
        else _or_made(converters.get(f.name, _identity), f.default_factory)
        for f in fields
    ]
    positional = record_kind(tp) == "namedtuple"
    may_be_absent = any(f.default is ABSENT for f in fields)

    def make(value: Any) -> Any:
        try:
            values = [c(get(value)) for c, get in zip(per_field, getters, strict=True)]
        except RecordFailure:
            raise _failed_field(value, zip(names, getters, per_field, strict=True)) from None
        if positional:
            return tp(*values)
        if may_be_absent:  # a TypedDict's key that was not there is left out
            return tp(**{a: v for a, v in zip(arguments, values, strict=True) if v is not ABSENT})
        return tp(**dict(zip(arguments, values, strict=True)))

    return make


def _by_form(makers: dict[Any, Converter]) -> Converter | None:
    """Converts a value by the generated form it was decoded as; one of the type itself (or
    of no form here) is passed on as it is."""
    if not makers:  # pragma: no cover - one form never decodes both shapes
        return None

    def convert(value: Any) -> Any:
        make = makers.get(type(value))
        return value if make is None else make(value)

    return convert


INVALID_TIMESTAMP = "an invalid timestamp extension (wrong length, or nanoseconds >= 10**9)"


def invalid_utf8(exc: UnicodeDecodeError) -> str:
    """How a record with a str that is not UTF-8 is described."""
    return f"invalid UTF-8 in a str ({exc.reason} at position {exc.start})"


def _undecodable(decode: Callable[[Any], Any], data: Any) -> RecordFailure | None:
    """Why ``data`` is not valid MessagePack, if it is not: decoded untyped, it fails."""
    try:
        decode(data)
    except UnicodeDecodeError as exc:
        reason = invalid_utf8(exc)
        cause: BaseException = exc
    except RecursionError as exc:
        reason, cause = "nesting deeper than the decoder allows", exc
    except msgspec.ValidationError as exc:
        if not str(exc).startswith(_BAD_TIMESTAMP):  # pragma: no cover - untyped: only that
            return None
        reason, cause = INVALID_TIMESTAMP, exc
    except msgspec.DecodeError as exc:
        # Framing took bytes for a whole record that the decoder finds cut off or broken.
        reason, cause = f"not valid MessagePack ({exc})", exc
    except (ValueError, TypeError):
        return None  # valid MessagePack, only not hashable where a map key is, or a value
        # (a timestamp past year 9999) only a typed decode refuses
    else:
        return None
    failure = RecordFailure(reason, decodable=False)
    failure.__cause__ = cause
    return failure


_FAILURES = (
    msgspec.MsgspecError,
    ValueError,
    TypeError,
    RecursionError,
    RecordFailure,
    HookFailure,
)


class _Decoding:
    """What decoding one record shares between a record type and a union of kinds: turning
    each failure into a :class:`RecordFailure` that says where in the record it is."""

    record_type: Any
    _hook: ExtHook | None
    _plain: Callable[[Any], Any]

    def _one(self, data: Any) -> Any:
        raise NotImplementedError

    def _failure(self, message: str, data: Any) -> RecordFailure:
        """What msgspec's ``ValidationError`` (``message``) says, in the reader's words."""
        raise NotImplementedError

    def decode_one(self, data: Any) -> Any:
        """One record from its bytes; ``RecordFailure`` names the field path and the value.

        A record that is not valid MessagePack (invalid UTF-8, a broken timestamp, nesting too
        deep) fails as such (``decodable=False``) wherever that is in it, even when the typed
        decode would have stopped at a field of the wrong type first: what is reported does
        not depend on the order in which msgspec looks at things.
        """
        try:
            return self._one(data)
        except RecordFailure:
            raise
        except HookFailure as exc:
            raise self._located(data, exc.reason) from exc.__cause__
        except (msgspec.MsgspecError, ValueError, TypeError, RecursionError) as exc:
            broken = _undecodable(self._plain, data)
            if broken is not None:
                cause = broken.__cause__
                found = locate(self.record_type, data, None)
                if found is not None and isinstance(cause, UnicodeDecodeError) and found[0]:
                    broken = RecordFailure(f"{broken.bare}, in field `{found[0]}`", decodable=False)
                raise broken from cause
            if isinstance(exc, msgspec.ValidationError):
                raise self._failure(str(exc), data) from exc
            raise self._located(data, f"{type(exc).__name__}: {exc}") from exc

    def _located(self, data: Any, reason: str) -> RecordFailure:
        """A failure msgspec raised with no path (``reason``), at the value it is about."""
        found = locate(self.record_type, data, self._hook)
        if found is None:
            return RecordFailure(reason)
        return RecordFailure(found[1], field=found[0])

    def _raw(self, data: Any) -> Any:
        """The record decoded without a type, to show what was found; ``_UNKNOWN`` when it
        cannot be (the record also holds invalid UTF-8, or nests too deeply)."""
        try:
            return self._plain(data)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            return _UNKNOWN


class RecordDecoder(_Decoding):
    """Decodes runs of whole records of ``record_type`` (array- or map-shaped) in one call.

    ``record_type=Any`` decodes each record as the value it is (lists, dicts, ``datetime`` for
    the timestamp extension, :class:`msgspec.msgpack.Ext` for others), for a ``mapper``. With
    ``values=True`` each record is given as the tuple of its field values, in field order (the
    rows of :mod:`.arrow`). A ``dict[str, T]`` record type takes map-shaped records only.
    """

    def __init__(
        self,
        record_type: Any,
        *,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        values: bool = False,
    ) -> None:
        self.record_type = record_type
        self._hook = ext_hook
        hook = None if ext_hook is None else guarded_hook(ext_hook)
        self._plain = msgspec.msgpack.Decoder().decode  # for error messages: no hook to fail
        self._finish: Callable[[list[Any]], list[Any]]
        self._made: list[int] | None = None
        self._make: Callable[[list[Any]], list[Any]] = _identity
        self.build: Callable[[list[Any]], list[Any]] | None = None
        """Makes records of what :meth:`decode_run` returned when that is not records yet;
        ``RecordFailure`` if the record type's own ``__init__`` refuses one. A reader calls it
        on a slice of a run at a time, as its loop takes them (see :mod:`.decoder`)."""
        self.fields: Sequence[FieldSpec] = ()
        if record_type is Any:
            wire: Any = Any
            self._finish = _identity
        elif _is_mapping(record_type):  # no columns: RecordSchema refuses it for rows
            wire, convert = _Compiler(ext_hook, forbid_unknown_keys).wire(record_type)
            self._finish = _identity if convert is None else lambda d: list(map(convert, d))
        else:
            self.fields = record_fields(record_type)
            wire, self._finish = self._compile(record_type, ext_hook, forbid_unknown_keys, values)
        try:
            self._run = msgspec.msgpack.Decoder(list[wire], ext_hook=hook).decode
            self._single = msgspec.msgpack.Decoder(wire, ext_hook=hook).decode
        except TypeError as exc:
            raise TypeError(
                f"cannot read records of type {type_label(record_type)}: {exc}"
            ) from None

    def _compile(
        self, record_type: Any, ext_hook: ExtHook | None, forbid: bool, values: bool
    ) -> tuple[Any, Callable[[list[Any]], list[Any]]]:
        compiler = _Compiler(ext_hook, forbid)
        names = [f.name for f in self.fields]
        kind = record_kind(record_type)
        if kind == "tuple":
            wire, convert = compiler.wire(record_type)
            return wire, _finisher(record_type, convert)
        flat = all(f.required for f in self.fields) and all(
            compiler._field(record_type, f)[1] is None for f in self.fields
        )
        field_types: Any = tuple(f.annotation for f in self.fields)
        as_tuple: Any = tuple[field_types]
        if values and flat and _rows_as_tuples(record_type, forbid):
            # Rows, not records: an array decodes to its row. A map decodes to a generated
            # Struct that counts those it makes, so that a run of arrays only is passed on
            # without a look at each row (that look cost a twelfth of a raw decode).
            config = getattr(record_type, "__struct_config__", None)
            self._made, counting = _counter()
            map_form = msgspec.defstruct(
                f"{record_type.__name__}AsMap",
                [(_slot(i), f.annotation) for i, f in enumerate(self.fields)],
                rename=_positional_rename(self.fields),
                forbid_unknown_fields=forbid or bool(config and config.forbid_unknown_fields),
                namespace=counting,
                gc=False,
            )
            slots = [_slot(i) for i in range(len(self.fields))]
            return typing.Union[as_tuple, map_form], _flat_rows(slots)  # noqa: UP007
        if (
            kind == "dataclass"
            and flat
            and not forbid
            and not _hides_fields(record_type)
            and all(f.wire_name == f.name for f in self.fields)
        ):
            # The common flat record: arrays decode to tuples, built with starmap in C.
            wire = typing.Union[as_tuple, record_type]  # noqa: UP007
            if values:
                # The type's own __post_init__ checks each record, as a reader's are checked:
                # the records are built, then taken apart.
                return wire, _taken_apart(_row_of(kind, names), _flat_finisher(record_type))
            # The records are built later (``build``), a few hundred at a time: the garbage
            # collector tracks each, and a whole run of them made it scan them all.
            self._make = _flat_finisher(record_type)
            self.build = self._build
            return wire, _identity
        wire, convert = compiler.record(record_type)
        # A run decoded straight into the type needs no finishing, unless rows are wanted.
        self._made = None if values else compiler.made.get(record_type)
        finish = _finisher(record_type, convert)
        if values and kind != "namedtuple":
            return wire, _taken_apart(_row_of(kind, names), finish)
        return wire, finish

    def decode_run(self, data: Any) -> list[Any]:
        """The records of ``data``: an array header for their count, then the records.

        Raises ``RecordFailure`` without saying which record (see :meth:`decode_one`).
        """
        try:
            made = self._made
            if made is None:
                return self._finish(self._run(data))
            before = made[0]
            decoded = self._run(data)
            # Decoded from arrays only, the run holds nothing but records already.
            return decoded if made[0] == before else self._finish(decoded)
        except _FAILURES as exc:
            raise RecordFailure(str(exc)) from exc

    def _build(self, decoded: list[Any]) -> list[Any]:
        try:
            return self._make(decoded)
        except _FAILURES as exc:
            raise RecordFailure(str(exc)) from exc

    def _one(self, data: Any) -> Any:
        return self._make(self._finish([self._single(data)]))[0]

    def _failure(self, message: str, data: Any) -> RecordFailure:
        return _as_failure(
            _phrase(self.record_type, self.fields, message, self._raw(data), _UNKNOWN)
        )


_FIELD_FIRST = re.compile(r"^field `(?P<field>[^`]*)` (?P<rest>.*)$", re.DOTALL)


def _as_failure(text: str, suffix: str = "") -> RecordFailure:
    """A phrased failure, its field path apart (so that a record holding it can lengthen it)."""
    match = _FIELD_FIRST.match(text)
    if match is None:
        return RecordFailure(text + suffix)
    return RecordFailure(match.group("rest") + suffix, field=match.group("field"))


def _phrase(
    record_type: Any, fields: Sequence[FieldSpec], message: str, raw: Any, unknown: Any
) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$[2][1]``` as ``field `tags[1]`
    expected int, got str 'x'``, for a record of ``record_type`` (``raw``: the record
    decoded untyped, ``unknown`` if it could not be)."""
    key = _KEY_IN.match(message)
    match = key or _AT.match(message)
    assert match is not None
    text, path = match.group("message"), match.group("path") or ""
    if _SHAPE.match(text) is not None and not path:
        return _shape_error(record_type, fields, text, raw, unknown)
    missing = _MISSING_KEY.match(text)
    if missing is not None:
        name = _field_path(record_type, f"{path}.{missing.group('name')}")
        return f"field `{name}` is missing (a map without its key, and no default)"
    unknown_key = _UNKNOWN_KEY.match(text)
    if unknown_key is not None:
        where = _field_path(record_type, path) if path else ""
        owner = f"field `{where}`: " if where else ""
        return f"{owner}map has key {unknown_key.group('name')!r}, which names no field"
    got = _GOT.match(text)
    if got is not None and not key and raw is not unknown:
        found = _found(raw, path)
        if found is not _UNKNOWN:
            expected = got.group("expected")
            annotation = _field_annotation(record_type, path) if fields else None
            if annotation is not None and _holds_records(annotation):
                # msgspec names the wire forms (``map | array``): name the field's own type
                expected = f"Expected `{type_label(annotation)}`"
            text = f"{expected}, got {describe(found)}"
    field = _field_path(record_type, path) if fields else path
    text = _EXPECTED.sub(_our_names, text)
    text = (text[:1].lower() + text[1:]).replace("`", "")
    if key:
        owner = f"field `{field}`: " if field else ""
        return f"{owner}a map key {text}"
    return f"field `{field}` {text}" if field else text


def _shape_error(
    record_type: Any, fields: Sequence[FieldSpec], message: str, raw: Any, unknown: Any
) -> str:
    """The record itself has the wrong shape: say what a record is and what was found."""
    if _is_mapping(record_type):
        want = f"a map ({type_label(record_type)})"
    else:
        size = len(fields)
        required = sum(f.required for f in fields)
        count = f"{required} to {size}" if required < size else f"{size}"
        maps = not is_fixed_tuple(record_type)
        want = f"an array{' or a map' if maps else ''} of {count} fields"
    found = message.rsplit("got ", 1)[-1].replace("`", "") if raw is unknown else None
    return f"expected {want}, found {found or describe(raw)}"


def _our_names(match: re.Match[str]) -> str:
    """msgspec's ``Expected `int | null``` in Python's words: ``Expected `int | None```; an
    extension beside ``datetime`` is how an ``ext_hook`` makes one, not a type to name."""
    names = [_NAMES.get(name, name) for name in match.group(1).split(" | ")]
    if "datetime" in names and "ext" in names:
        names.remove("ext")
    return f"Expected `{' | '.join(names)}`"


def _field_path(record_type: Any, path: str) -> str:
    """msgspec's path (``[2][1]``, ``.inner.level``) in field names (``tags[1]``)."""
    return _walked(record_type, path)[0]


def _field_annotation(record_type: Any, path: str) -> Any:
    """The annotation of the value at msgspec's ``path``."""
    return _walked(record_type, path)[1]


def _holds_records(annotation: Any) -> bool:
    """Whether a union annotation has a record class among its members."""
    members = union_members(_unwrap_annotated(annotation))
    return members is not None and any(map(_is_record_class, members))


def _unwrap_annotated(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _walked(record_type: Any, path: str) -> tuple[str, Any]:
    """msgspec's ``path`` in field names, and the annotation of the value there."""
    parts: list[str] = []
    current: Any = record_type
    for name, index, _ in _PATH_SEGMENT.findall(path):
        current = _unwrap(current)
        fields = record_fields(current) if _is_record(current) else None
        if fields is not None and index:
            spec = fields[int(index)] if int(index) < len(fields) else None
            label = spec.name if spec is not None else f"[{index}]"
            current = spec.annotation if spec is not None else Any
        elif fields is not None and name:
            spec = next((f for f in fields if name in (f.wire_name, f.name)), None)
            label = spec.name if spec is not None else name
            current = spec.annotation if spec is not None else Any
        else:
            label = f"[{index or '...'}]"
            args = typing.get_args(current)
            current = args[-1] if args else Any
        parts.append(label if label.startswith("[") or not parts else f".{label}")
    return "".join(parts), current


def _is_record(tp: Any) -> bool:
    return record_kind(tp) is not None


def _is_mapping(tp: Any) -> bool:
    """Whether ``tp`` is a ``dict[K, V]`` record type: maps of any keys."""
    return typing.get_origin(tp) is dict


def _unwrap(tp: Any) -> Any:
    """The record or container inside ``Optional[...]`` / ``Annotated[...]``."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        structured = [m for m in members if _is_record(m) or typing.get_origin(m)]
        return _unwrap(structured[0]) if structured else tp
    return tp


class KindsDecoder(_Decoding):
    """Decodes runs of records of a union record type (``Click | Key``): each is the kind its
    tag names (:func:`~.record_type.record_kinds`), in either shape; see the module's
    docstring. With ``values=True`` each record is the tuple of its columns
    (:func:`~.record_type.union_fields`): its tag, then every kind's fields, ``None`` where its
    kind has no such field."""

    build: Callable[[list[Any]], list[Any]] | None = None  # the values are the records

    def __init__(
        self,
        record_type: Any,
        *,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        values: bool = False,
        compiler: _Compiler | None = None,
    ) -> None:
        self.record_type = record_type
        self.kinds = record_kinds(record_type)
        if compiler is None:
            compiler = _Compiler(ext_hook, forbid_unknown_keys)
        else:  # a field of a record being compiled: its hook, limits and recursion checks
            ext_hook = compiler.ext_hook
        self._hook = ext_hook
        hook = None if ext_hook is None else guarded_hook(ext_hook)
        self._plain = msgspec.msgpack.Decoder().decode
        sides = compiler.sides(self.kinds)
        kinds = _kinds_finisher(sides.makers)
        rows = _union_rows(self.kinds) if values else _identity
        maps: Any = sides.maps
        arrays: Any = sides.arrays
        try:
            maps_run = msgspec.msgpack.Decoder(list[maps], ext_hook=hook).decode
            maps_one = msgspec.msgpack.Decoder(maps, ext_hook=hook).decode
            if sides.probe is None:
                arrays_run = msgspec.msgpack.Decoder(list[arrays], ext_hook=hook).decode
                arrays_one = msgspec.msgpack.Decoder(arrays, ext_hook=hook).decode
            else:
                arrays_run, arrays_one = self._probed(sides, hook)
        except TypeError as exc:
            raise TypeError(f"cannot read records of type {self.kinds.label}: {exc}") from None

        def finish(decoded: list[Any]) -> list[Any]:
            rows_of: list[Any] = rows(kinds(decoded))
            return rows_of

        self._runs: tuple[Callable[[Any], list[Any]], ...] = (
            lambda data: finish(maps_run(data)),
            lambda data: finish(arrays_run(data)),
        )
        self._ones: tuple[Callable[[Any], Any], ...] = (
            lambda data: finish([maps_one(data)])[0],
            lambda data: finish([arrays_one(data)])[0],
        )

    @staticmethod
    def _probed(
        sides: _Sides, hook: ExtHook | None
    ) -> tuple[Callable[[Any], list[Any]], Callable[[Any], Any]]:
        """Decoders of arrays whose tag is not first: the probe reads each record's tag, then
        the record is decoded as its tag's kind."""
        probe = msgspec.msgpack.Decoder(sides.probe).decode
        raws = msgspec.msgpack.Decoder(list[msgspec.Raw]).decode
        forms = {
            (type(tag), tag): msgspec.msgpack.Decoder(form, ext_hook=hook).decode
            for tag, form in sides.by_tag.items()
        }

        def one(data: Any) -> Any:
            tag = probe(data).tag
            decode = forms.get((type(tag), tag))  # by type too: True is no tag 1
            if decode is None:
                raise msgspec.ValidationError("the tag names no kind")  # phrased from the bytes
            return decode(data)

        def run(data: Any) -> list[Any]:
            return [one(raw) for raw in raws(data)]

        return run, one

    def decode_run(self, data: Any) -> list[Any]:
        """The records of ``data``: an array header for their count, then the records.

        Decoded in the shape of the first record; raises ``RecordFailure`` without saying
        which record when any is not of its shape or not a record of any kind.
        """
        try:
            return self._runs[_starts_array(data, _array_header_size(data))](data)
        except _FAILURES as exc:
            raise RecordFailure(str(exc)) from exc

    def _one(self, data: Any) -> Any:
        return self._ones[_starts_array(data, 0)](data)

    def _failure(self, message: str, data: Any) -> RecordFailure:
        kinds = self.kinds
        raw = self._raw(data)
        if isinstance(raw, dict):
            tag, shape = raw.get(kinds.key, _UNKNOWN), "map"
        elif isinstance(raw, list):
            tag = raw[kinds.position] if len(raw) > kinds.position else _UNKNOWN
            shape = "array"
        else:
            found = describe(raw) if raw is not _UNKNOWN else "a value that is not a record"
            return RecordFailure(
                f"expected a record of {kinds.label} (an array or a map, with its tag), found "
                f"{found}"
            )
        where = f"`{kinds.key}`" if shape == "map" else f"at position {kinds.position}"
        if tag is _UNKNOWN:
            return RecordFailure(
                f"the tag {where} is missing: a record of {kinds.label} names its kind there "
                f"({kinds.expected()})"
            )
        kind = kinds.kind_of(tag)
        if kind is None:
            found = repr(tag) if type(tag) in (str, int) else describe(tag)
            return RecordFailure(
                f"the tag {where} is {found}, which names no kind of {kinds.label} "
                f"({kinds.expected()})"
            )
        text = self._kind_phrase(kind, message, raw, shape)
        return _as_failure(text, f" (in a {type_label(kind.record_type)} record)")

    def _kind_phrase(self, kind: Kind, message: str, raw: Any, shape: str) -> str:
        tp = kind.record_type
        fields = record_fields(tp)
        match = _AT.match(message)
        assert match is not None
        path = match.group("path") or ""
        if shape == "array" and not path and _SHAPE.match(match.group("message")):
            tags = int(kind.field is None)
            required = tags + len(fields) - _trailing_optional(fields)
            size = tags + len(fields)
            count = f"{required} to {size}" if required < size else f"{size}"
            what = "its tag and fields" if tags else "its fields"
            return f"expected an array of {count} values ({what}), found {describe(raw)}"
        if shape == "array" and kind.field is None and not self.kinds.position:
            # A tagged Struct's array holds its tag first: the fields start at position 1.
            index = re.match(r"^\[(\d+)\]", path)
            if index is not None:
                position = int(index.group(1))
                path = f"[{position - 1}]{path[index.end() :]}" if position else path
                raw = raw[1:]
        message = match.group("message") + (f" - at `${path}`" if path else "")
        return _phrase(tp, fields, message, raw, _UNKNOWN)


def _rows_as_tuples(tp: Any, forbid: bool) -> bool:
    """Whether the rows of a flat record type may be decoded straight from arrays as tuples
    (and from maps as a generated Struct): no check of its own (``__post_init__``), no hidden
    or tagged field, and an array of more values than fields refused, as a tuple refuses it
    (an ``array_like`` Struct passes over extra values unless it forbids unknown fields)."""
    kind = record_kind(tp)
    if kind == "dataclass":
        return not hasattr(tp, "__post_init__") and not _hides_fields(tp)
    if kind not in ("struct", "array_struct"):
        return False
    config = tp.__struct_config__
    return (
        not hasattr(tp, "__post_init__")
        and config.tag is None
        and (kind == "struct" or forbid or config.forbid_unknown_fields)
    )


def _starts_array(data: Any, at: int) -> bool:
    """Whether the MessagePack value at ``data[at]`` is an array."""
    if len(data) <= at:
        return False
    first = data[at]
    return 0x90 <= first <= 0x9F or first in (0xDC, 0xDD)


def _array_header_size(data: Any) -> int:
    """The size of the array header ``data`` starts with (a run's records follow it)."""
    first = data[0] if len(data) else 0x90
    return 1 if first <= 0x9F else 3 if first == 0xDC else 5


def _kinds_finisher(makers: dict[Any, Converter]) -> Callable[[list[Any]], list[Any]]:
    """Records of the kinds from what the tagged forms decode: a run decoded straight into
    the kinds' own types (tagged Structs) is passed on as it is."""
    if not makers:
        return _identity
    forms = set(makers)

    def finish(decoded: list[Any]) -> list[Any]:
        if forms.isdisjoint(map(type, decoded)):
            return decoded
        return [makers[type(v)](v) if type(v) in forms else v for v in decoded]

    return finish


def _union_rows(kinds: Kinds) -> Callable[[list[Any]], list[Any]]:
    """The rows of records of ``kinds``: a tuple of :func:`~.record_type.union_fields`' columns
    each, ``None`` for a field the record's kind does not have."""
    columns = [spec.name for spec in union_fields(kinds.union)]
    rows: dict[Any, Callable[[Any], tuple[Any, ...]]] = {}
    for kind in kinds.kinds:
        own = {f.name for f in record_fields(kind.record_type)}
        read = _reader(record_kind(kind.record_type))
        getters: list[Callable[[Any], Any]] = [
            read(kind.field) if kind.field is not None else _constant(kind.tags[0])
        ]
        getters.extend(read(name) if name in own else _none for name in columns[1:])
        rows[kind.record_type] = _row_by(getters)

    def make(records: list[Any]) -> list[Any]:
        return [rows[type(r)](r) for r in records]

    return make


def _none(_record: Any) -> None:
    return None


def _row_by(getters: list[Callable[[Any], Any]]) -> Callable[[Any], tuple[Any, ...]]:
    return lambda record: tuple(get(record) for get in getters)


def _reader(kind: str | None) -> Callable[[str], Callable[[Any], Any]]:
    """How a field of a record of ``kind`` is read: by attribute, or by key (a TypedDict)."""
    if kind == "typeddict":
        return lambda name: operator.methodcaller("get", name)
    return operator.attrgetter


@shared(maxsize=64)
def record_decoder(
    record_type: Any,
    *,
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    values: bool = False,
) -> RecordDecoder | KindsDecoder:
    """A decoder of records of ``record_type`` (a :class:`KindsDecoder` for a union of
    kinds), made once per set of arguments and then shared (a decoder holds no state between
    calls). Raises ``TypeError`` for a type no record can be read as, saying why."""
    if union_members(record_type) is not None:
        return KindsDecoder(
            record_type, ext_hook=ext_hook, forbid_unknown_keys=forbid_unknown_keys, values=values
        )
    return RecordDecoder(
        record_type, ext_hook=ext_hook, forbid_unknown_keys=forbid_unknown_keys, values=values
    )


_KEPT_AS_THEY_ARE = (datetime.datetime, bytes, bytearray, memoryview)


def plain_values(rows: list[Any]) -> list[Any]:
    """``rows`` with every nested record made a dict keyed by its map keys, every ``Enum`` its
    value, every NamedTuple a tuple: what pyarrow builds struct, list and map columns from.
    Datetimes and bytes are kept as they are."""
    plain: list[Any] = msgspec.to_builtins(rows, builtin_types=_KEPT_AS_THEY_ARE)
    return plain


def _finisher(record_type: Any, convert: Converter | None) -> Callable[[list[Any]], list[Any]]:
    """Records from what the wire forms decode: a run decoded straight into ``record_type``
    (the common case) is passed on as it is, without a call per record."""
    if convert is None:
        return _identity
    plain = {record_type}

    def finish(decoded: list[Any]) -> list[Any]:
        if set(map(type, decoded)) <= plain:
            return decoded
        return list(map(convert, decoded))

    return finish


def _row_of(kind: str | None, names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of a record's field values: by attribute name, or by key (a TypedDict)."""
    if kind == "typeddict":
        return lambda record: tuple(map(record.get, names))
    get = operator.attrgetter(*names)
    if len(names) == 1:  # attrgetter of one name returns the value itself
        return lambda record: (get(record),)
    return get


def _taken_apart(
    row: Callable[[Any], tuple[Any, ...]], finish: Callable[[list[Any]], list[Any]]
) -> Callable[[list[Any]], list[Any]]:
    """The tuples of field values (``row``) of the records ``finish`` makes."""
    return lambda decoded: list(map(row, finish(decoded)))


def _flat_rows(slots: list[str]) -> Callable[[list[Any]], list[Any]]:
    """The tuples of field values of flat records decoded as tuples (arrays, kept as they
    are) and as generated Structs (maps, taken apart)."""
    row = _row_of(None, slots)
    return lambda decoded: [v if type(v) is tuple else row(v) for v in decoded]


def _flat_finisher(record_type: type) -> Callable[[list[Any]], list[Any]]:
    """Records from what the flat form decodes: tuples (arrays) and instances (maps)."""
    # An iterable record type could be unpacked by starmap: never tried on one.
    iterable = hasattr(record_type, "__iter__")

    def finish(decoded: list[Any]) -> list[Any]:
        if not decoded or type(decoded[0]) is not tuple or iterable:
            if set(map(type, decoded)) <= {record_type}:
                return decoded
            return [record_type(*v) if type(v) is tuple else v for v in decoded]
        # Arrays, most likely all of them: starmap goes on until a record decoded from a map,
        # which it cannot unpack (the type is not iterable), and which is taken as it is.
        records: list[Any] = []
        pending = iter(decoded)
        while True:
            try:
                records.extend(itertools.starmap(record_type, pending))
            except TypeError:
                if type(decoded[len(records)]) is tuple:
                    raise  # from the type's own __init__
                records.append(decoded[len(records)])
                continue
            return records

    return finish


def _found(value: Any, path: str) -> Any:
    """The value at msgspec's ``path`` in a record decoded as it is; ``_UNKNOWN`` if lost."""
    for name, index, _ in _PATH_SEGMENT.findall(path):
        if name and isinstance(value, dict) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return _UNKNOWN
    return value
